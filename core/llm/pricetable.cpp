#include "pricetable.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

namespace ks {

PriceTable PriceTable::builtIn()
{
    PriceTable t;
    QFile f(QStringLiteral(":/llm/prices.json"));
    QString error;
    if (!f.open(QIODevice::ReadOnly) || !t.mergeJson(f.readAll(), f.fileName(), &error))
        qFatal("the built-in price table is unreadable: %s", qPrintable(error)); // a packaging bug
    return t;
}

QString PriceTable::userOverridePath()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation)
        + QStringLiteral("/ksearch/prices.json");
}

bool PriceTable::merge(const QString& path, QString* error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: cannot read: %2").arg(path, f.errorString());
        return false;
    }
    return mergeJson(f.readAll(), path, error);
}

bool PriceTable::mergeJson(const QByteArray& json, const QString& source, QString* error)
{
    QJsonParseError perr {};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &perr);
    if (perr.error != QJsonParseError::NoError || !doc.isObject()) {
        *error =
            QStringLiteral("%1: not a JSON object (%2 at offset %3)").arg(source, perr.errorString()).arg(perr.offset);
        return false;
    }
    const QJsonValue models = doc.object().value(u"models");
    if (!models.isObject()) {
        *error = QStringLiteral("%1: field 'models' must be an object of {\"input\": $, \"output\": $} by model name")
                     .arg(source);
        return false;
    }
    QList<ModelPrice> added;
    const QJsonObject m = models.toObject();
    for (auto it = m.begin(); it != m.end(); ++it) {
        const QJsonObject p = it.value().toObject();
        const QJsonValue in = p.value(u"input"), out = p.value(u"output");
        if (!in.isDouble() || !out.isDouble() || in.toDouble() < 0 || out.toDouble() < 0) {
            *error = QStringLiteral("%1: models.%2: 'input' and 'output' must be dollars per million tokens (numbers "
                                    ">= 0)")
                         .arg(source, it.key());
            return false;
        }
        added.append({it.key(), in.toDouble(), out.toDouble()});
    }
    for (const ModelPrice& p : added) {
        m_entries.removeIf([&](const ModelPrice& e) { return e.pattern == p.pattern; });
        m_entries.append(p);
    }
    if (doc.object().contains(u"as_of"))
        m_asOf = doc.object().value(u"as_of").toString();
    return true;
}

std::optional<ModelPrice> PriceTable::find(const QString& model) const
{
    for (const ModelPrice& e : m_entries)
        if (e.pattern == model)
            return e;
    std::optional<ModelPrice> best;
    for (const ModelPrice& e : m_entries) {
        if (!e.pattern.endsWith(u'*'))
            continue;
        const QString prefix = e.pattern.chopped(1);
        if (model.startsWith(prefix) && (!best || prefix.size() > best->pattern.size() - 1))
            best = e;
    }
    return best;
}

double PriceTable::cost(const ModelPrice& price, const LlmUsage& usage)
{
    return (static_cast<double>(usage.promptTokens) * price.inputPerMTok
               + static_cast<double>(usage.completionTokens) * price.outputPerMTok)
        / 1e6;
}

} // namespace ks
