#include "providerfactory.h"

#include "anthropicprovider.h"
#include "apikeys.h"
#include "commandprovider.h"
#include "geminiprovider.h"
#include "manualprovider.h"
#include "openaiprovider.h"
#include "replayprovider.h"

namespace ks {

namespace {

std::unique_ptr<LlmProvider> makeHttpProvider(const QString& name, const ProviderSettings& settings)
{
    if (name == u"openai")
        return std::make_unique<OpenAiProvider>(settings);
    if (name == u"anthropic")
        return std::make_unique<AnthropicProvider>(settings);
    return std::make_unique<GeminiProvider>(settings);
}

} // namespace

ProviderBuild makeProvider(const LlmRoleConfig& config)
{
    ProviderBuild b;
    if (const QStringList problems = config.problems(); !problems.isEmpty()) {
        b.error = problems.join(u"; ");
        return b;
    }
    const QString& name = config.provider;
    if (name == u"openai" || name == u"anthropic" || name == u"gemini") {
        ProviderSettings s;
        s.baseUrl = config.baseUrl.isEmpty() ? defaultBaseUrl(name) : config.baseUrl;
        s.totalTimeoutMs = config.timeoutSeconds * 1000;
        s.maxRetries = config.maxRetries;
        if (const auto key = findApiKey(name)) {
            s.apiKey = key->value;
            b.keySource = key->source;
        } else if (config.baseUrl.isEmpty() || config.baseUrl == defaultBaseUrl(name)) {
            b.error = QStringLiteral("no API key for %1: set %2 or store a key in the keychain (ksearch settings)")
                          .arg(name, apiKeyVariable(name));
            return b;
        }
        b.provider = makeHttpProvider(name, s);
    } else if (name == u"command") {
        b.provider = std::make_unique<CommandProvider>(config.command, config.timeoutSeconds * 1000);
    } else if (name == u"manual") {
        b.provider = std::make_unique<ManualProvider>();
    } else if (name == u"replay") {
        QString error;
        auto exchanges = loadReplayFile(config.replayFile, &error);
        if (!exchanges) {
            b.error = error;
            return b;
        }
        b.provider = std::make_unique<ReplayProvider>(std::move(*exchanges), config.replayInOrder);
    }
    if (!config.recordFile.isEmpty())
        b.provider = std::make_unique<RecordingProvider>(std::move(b.provider), config.recordFile);
    return b;
}

LlmRequest makeRequest(const LlmRoleConfig& config, const QString& role, QList<ChatMessage> messages)
{
    LlmRequest r;
    r.role = role;
    r.messages = std::move(messages);
    r.model = config.model;
    r.temperature = config.temperature;
    r.maxTokens = config.maxTokens;
    r.reasoningEffort = config.reasoningEffort;
    return r;
}

} // namespace ks
