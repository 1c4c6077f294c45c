#pragma once

#include <QString>

#include <optional>

namespace ks {

struct ApiKey {
    QString value;
    QString source; // where it came from, for messages: "OPENAI_API_KEY", "the keychain"
};

// The environment variable that holds a provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY); empty for providers that take none.
QString apiKeyVariable(const QString& provider);

// The environment first (GOOGLE_API_KEY is accepted for gemini too), then the OS keychain
// (service "ksearch", account = provider). A found key is registered as a secret.
std::optional<ApiKey> findApiKey(const QString& provider);

// The keychain, through QtKeychain. Without a session bus (a headless server) there is no
// keychain: reads find nothing and writes fail with a message saying so.
std::optional<QString> readKeychainKey(const QString& provider, QString* error = nullptr);
bool writeKeychainKey(const QString& provider, const QString& key, QString* error);
bool deleteKeychainKey(const QString& provider, QString* error);

} // namespace ks
