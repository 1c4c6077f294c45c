#include "llmoptions.h"

#include <QFileInfo>

namespace ks::cli {

namespace {

QCommandLineOption option(const QString& prefix, const QString& name, const QString& help, const QString& value)
{
    return QCommandLineOption(prefix + name, help, value);
}

} // namespace

LlmOptions::LlmOptions(const QString& prefix, const QString& roleWords)
    : m_prefix(prefix)
    , m_provider(option(prefix, u"provider"_qs,
          QStringLiteral("LLM provider%1: %2").arg(roleWords, knownProviders().join(u'|')), u"NAME"_qs))
    , m_model(option(prefix, u"model"_qs, QStringLiteral("model name%1").arg(roleWords), u"NAME"_qs))
    , m_baseUrl(option(prefix, u"base-url"_qs,
          QStringLiteral("endpoint%1 (default: the provider's public API)").arg(roleWords), u"URL"_qs))
    , m_command(option(prefix, u"command"_qs,
          QStringLiteral("command provider%1: shell command, request JSON on stdin, answer on stdout").arg(roleWords),
          u"CMD"_qs))
    , m_replay(option(
          prefix, u"replay"_qs, QStringLiteral("replay provider%1: recorded exchanges").arg(roleWords), u"FILE"_qs))
    , m_temperature(option(prefix, u"temperature"_qs, QStringLiteral("sampling temperature%1").arg(roleWords), u"T"_qs))
    , m_maxTokens(option(prefix, u"max-tokens"_qs, QStringLiteral("answer token limit%1").arg(roleWords), u"N"_qs))
    , m_reasoningEffort(option(prefix, u"reasoning-effort"_qs,
          QStringLiteral("low|medium|high for reasoning models%1").arg(roleWords), u"LEVEL"_qs))
    , m_record(option(
          prefix, u"record"_qs, QStringLiteral("append every exchange%1 to a replay file").arg(roleWords), u"FILE"_qs))
{
}

void LlmOptions::addTo(QCommandLineParser& parser) const
{
    parser.addOptions(
        {m_provider, m_model, m_baseUrl, m_command, m_replay, m_temperature, m_maxTokens, m_reasoningEffort, m_record});
}

bool LlmOptions::isSet(const QCommandLineParser& parser) const
{
    for (const auto* o : {&m_provider, &m_model, &m_baseUrl, &m_command, &m_replay, &m_temperature, &m_maxTokens,
             &m_reasoningEffort, &m_record})
        if (parser.isSet(*o))
            return true;
    return false;
}

std::optional<LlmRoleConfig> LlmOptions::read(
    const QCommandLineParser& parser, const LlmRoleConfig& base, QString* error) const
{
    const auto fail = [&](const QCommandLineOption& o, const QString& what) {
        *error = QStringLiteral("--%1: %2").arg(o.names().first(), what);
        return std::nullopt;
    };
    LlmRoleConfig c = base;
    if (parser.isSet(m_provider)) {
        const QString provider = parser.value(m_provider);
        if (!knownProviders().contains(provider))
            return fail(
                m_provider, QStringLiteral("'%1' is not a provider (%2)").arg(provider, knownProviders().join(u", ")));
        if (provider != c.provider) { // another provider: nothing of the base's endpoint carries over
            c = LlmRoleConfig();
            c.provider = provider;
        }
    }
    if (parser.isSet(m_model))
        c.model = parser.value(m_model);
    if (parser.isSet(m_baseUrl)) {
        const QUrl url(parser.value(m_baseUrl));
        if (!url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https"))
            return fail(m_baseUrl, QStringLiteral("'%1' is not an http(s) URL").arg(parser.value(m_baseUrl)));
        c.baseUrl = parser.value(m_baseUrl);
    }
    if (parser.isSet(m_command))
        c.command = parser.value(m_command);
    if (parser.isSet(m_replay)) {
        if (!QFileInfo(parser.value(m_replay)).isFile())
            return fail(m_replay, QStringLiteral("'%1' is not a file").arg(parser.value(m_replay)));
        c.replayFile = QFileInfo(parser.value(m_replay)).absoluteFilePath();
    }
    bool ok = true;
    if (parser.isSet(m_temperature)) {
        c.temperature = parser.value(m_temperature).toDouble(&ok);
        if (!ok || *c.temperature < 0 || *c.temperature > 2)
            return fail(m_temperature, QStringLiteral("'%1' is not a number in 0..2").arg(parser.value(m_temperature)));
    }
    if (parser.isSet(m_maxTokens)) {
        c.maxTokens = parser.value(m_maxTokens).toInt(&ok);
        if (!ok || c.maxTokens <= 0)
            return fail(m_maxTokens, QStringLiteral("'%1' is not a positive integer").arg(parser.value(m_maxTokens)));
    }
    if (parser.isSet(m_reasoningEffort))
        c.reasoningEffort = parser.value(m_reasoningEffort);
    if (parser.isSet(m_record))
        c.recordFile = QFileInfo(parser.value(m_record)).absoluteFilePath();
    if (c.provider.isEmpty())
        return fail(m_provider, QStringLiteral("is required"));
    const bool http = c.provider == u"openai" || c.provider == u"anthropic" || c.provider == u"gemini";
    if (http && c.model.isEmpty())
        return fail(m_model, QStringLiteral("is required for the %1 provider").arg(c.provider));
    if (c.provider == u"command" && c.command.trimmed().isEmpty())
        return fail(m_command, QStringLiteral("is required for the command provider"));
    if (c.provider == u"replay" && c.replayFile.isEmpty())
        return fail(m_replay, QStringLiteral("is required for the replay provider"));
    if (const QStringList problems = c.problems(); !problems.isEmpty())
        return fail(m_provider, problems.join(u"; "));
    return c;
}

std::optional<PriceTable> loadPrices(const QString& pricesFlag, QString* error)
{
    PriceTable t = PriceTable::builtIn();
    if (QFileInfo::exists(PriceTable::userOverridePath()) && !t.merge(PriceTable::userOverridePath(), error))
        return std::nullopt;
    if (!pricesFlag.isEmpty() && !t.merge(pricesFlag, error)) {
        *error = QStringLiteral("--prices: %1").arg(*error);
        return std::nullopt;
    }
    return t;
}

} // namespace ks::cli
