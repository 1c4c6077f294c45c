#pragma once

#include <llm/llmconfig.h>
#include <llm/pricetable.h>

#include <QCommandLineOption>
#include <QCommandLineParser>

#include <optional>

namespace ks::cli {

// The command-line options that choose a model for one role: --provider, --model, --base-url,
// --command, --replay, --temperature, --max-tokens, --reasoning-effort, --record, with a prefix
// ("coder-") for the second role.
class LlmOptions
{
public:
    explicit LlmOptions(const QString& prefix = {}, const QString& roleWords = {});
    void addTo(QCommandLineParser& parser) const;
    bool isSet(const QCommandLineParser& parser) const; // any of them
    // The role's configuration on top of `base` (the planner's, for the coder); an error names the flag.
    std::optional<LlmRoleConfig> read(
        const QCommandLineParser& parser, const LlmRoleConfig& base, QString* error) const;

private:
    QString m_prefix;
    QCommandLineOption m_provider, m_model, m_baseUrl, m_command, m_replay, m_temperature, m_maxTokens,
        m_reasoningEffort, m_record;
};

// The built-in price table with the user's override file (if it exists) and --prices on top.
std::optional<PriceTable> loadPrices(const QString& pricesFlag, QString* error);

} // namespace ks::cli
