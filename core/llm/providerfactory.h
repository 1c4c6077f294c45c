#pragma once

#include "llmconfig.h"
#include "llmprovider.h"

#include <memory>

namespace ks {

struct ProviderBuild {
    std::unique_ptr<LlmProvider> provider; // null when it cannot be made
    QString error; // why, naming the setting, the variable or the file
    QString keySource; // where the API key came from, if one was used
};

// Makes the provider a role's configuration names, with its API key looked up (environment,
// then keychain). The public endpoints of OpenAI, Anthropic and Gemini need a key; other base
// URLs (local servers, proxies) may go without one. Wrapped in a recorder when record_file is set.
ProviderBuild makeProvider(const LlmRoleConfig& config);

// A request for `role` with the configuration's model parameters.
LlmRequest makeRequest(const LlmRoleConfig& config, const QString& role, QList<ChatMessage> messages);

} // namespace ks
