#pragma once

#include "llmtypes.h"

#include <QList>
#include <QString>

#include <optional>

namespace ks {

struct ModelPrice {
    QString pattern; // a model name, or a prefix ending in '*'
    double inputPerMTok = 0.0; // dollars per million prompt tokens
    double outputPerMTok = 0.0; // dollars per million completion tokens (reasoning included)
};

// Dollars per million tokens by model: the built-in table (resources/llm/prices.json) with a
// user's override file on top. A model matches its exact name first, then the longest pattern
// ending in '*' that is a prefix of it ("claude-sonnet-4-5*" covers dated snapshots).
class PriceTable
{
public:
    static PriceTable builtIn();
    // Adds or replaces entries from a file of the same format. On failure the table is unchanged
    // and `error` names the file and the field.
    bool merge(const QString& path, QString* error);
    // The override file a user edits: <config>/ksearch/prices.json.
    static QString userOverridePath();

    std::optional<ModelPrice> find(const QString& model) const;
    static double cost(const ModelPrice& price, const LlmUsage& usage);
    const QList<ModelPrice>& entries() const { return m_entries; }
    QString asOf() const { return m_asOf; }

private:
    bool mergeJson(const QByteArray& json, const QString& source, QString* error);

    QList<ModelPrice> m_entries;
    QString m_asOf;
};

} // namespace ks
