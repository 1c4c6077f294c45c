#include "llmconfig.h"

namespace ks {

QStringList knownProviders()
{
    return {u"openai"_qs, u"anthropic"_qs, u"gemini"_qs, u"command"_qs, u"manual"_qs, u"replay"_qs};
}

QString defaultBaseUrl(const QString& provider)
{
    if (provider == u"openai")
        return QStringLiteral("https://api.openai.com/v1");
    if (provider == u"anthropic")
        return QStringLiteral("https://api.anthropic.com/v1");
    if (provider == u"gemini")
        return QStringLiteral("https://generativelanguage.googleapis.com/v1beta");
    return {};
}

QJsonObject LlmRoleConfig::toJson() const
{
    QJsonObject o {{u"provider"_qs, provider}, {u"model"_qs, model}, {u"timeout_s"_qs, timeoutSeconds},
        {u"max_retries"_qs, maxRetries}};
    if (!baseUrl.isEmpty())
        o.insert(u"base_url"_qs, baseUrl);
    if (temperature)
        o.insert(u"temperature"_qs, *temperature);
    if (maxTokens > 0)
        o.insert(u"max_tokens"_qs, maxTokens);
    if (!reasoningEffort.isEmpty())
        o.insert(u"reasoning_effort"_qs, reasoningEffort);
    if (!command.isEmpty())
        o.insert(u"command"_qs, command);
    if (!replayFile.isEmpty()) {
        o.insert(u"replay_file"_qs, replayFile);
        o.insert(u"replay_in_order"_qs, replayInOrder);
    }
    if (!recordFile.isEmpty())
        o.insert(u"record_file"_qs, recordFile);
    return o;
}

std::optional<LlmRoleConfig> LlmRoleConfig::fromJson(const QJsonObject& o, const QString& where, QString* error)
{
    const auto fail = [&](const QString& field, const QString& what) {
        *error = QStringLiteral("%1.%2: %3").arg(where, field, what);
        return std::nullopt;
    };
    LlmRoleConfig c;
    if (!o.value(u"provider").isString())
        return fail(u"provider"_qs, u"missing or not a string"_qs);
    c.provider = o.value(u"provider").toString();
    if (!knownProviders().contains(c.provider))
        return fail(
            u"provider"_qs, QStringLiteral("'%1' is not one of %2").arg(c.provider, knownProviders().join(u", ")));
    c.model = o.value(u"model").toString();
    c.baseUrl = o.value(u"base_url").toString();
    if (o.contains(u"temperature")) {
        if (!o.value(u"temperature").isDouble())
            return fail(u"temperature"_qs, u"not a number"_qs);
        c.temperature = o.value(u"temperature").toDouble();
    }
    c.maxTokens = o.value(u"max_tokens").toInt(0);
    c.reasoningEffort = o.value(u"reasoning_effort").toString();
    c.command = o.value(u"command").toString();
    c.replayFile = o.value(u"replay_file").toString();
    c.replayInOrder = o.value(u"replay_in_order").toBool(true);
    c.recordFile = o.value(u"record_file").toString();
    c.timeoutSeconds = o.value(u"timeout_s").toInt(900);
    if (c.timeoutSeconds <= 0)
        return fail(u"timeout_s"_qs, u"must be a positive number of seconds"_qs);
    c.maxRetries = o.value(u"max_retries").toInt(4);
    if (c.maxRetries < 0)
        return fail(u"max_retries"_qs, u"must be 0 or more"_qs);
    return c;
}

QStringList LlmRoleConfig::problems() const
{
    QStringList p;
    if (!knownProviders().contains(provider))
        p << QStringLiteral("provider '%1' is not one of %2").arg(provider, knownProviders().join(u", "));
    const bool http = provider == u"openai" || provider == u"anthropic" || provider == u"gemini";
    if (http && model.isEmpty())
        p << QStringLiteral("the %1 provider needs a model name").arg(provider);
    if (provider == u"command" && command.trimmed().isEmpty())
        p << QStringLiteral("the command provider needs a command");
    if (provider == u"replay" && replayFile.isEmpty())
        p << QStringLiteral("the replay provider needs a replay file");
    if (temperature && (*temperature < 0 || *temperature > 2))
        p << QStringLiteral("temperature %1 is outside 0..2").arg(*temperature);
    return p;
}

QString LlmRoleConfig::describe() const
{
    QString s = provider;
    if (!model.isEmpty())
        s += u' ' + model;
    if (provider == u"command")
        s += QStringLiteral(" `%1`").arg(command);
    else if (provider == u"replay")
        s += u' ' + replayFile;
    else if (!baseUrl.isEmpty())
        s += QStringLiteral(" at %1").arg(baseUrl);
    return s;
}

} // namespace ks
