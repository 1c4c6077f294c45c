#include "settings.h"

#include <QJsonDocument>

namespace ks::ui {

QSettings& Settings::store()
{
    static QSettings s(
        QSettings::IniFormat, QSettings::UserScope, QStringLiteral("K-Search Studio"), QStringLiteral("ksearch"));
    return s;
}

LlmRoleConfig Settings::role(const QString& role)
{
    const QByteArray json = store().value(QStringLiteral("llm/%1").arg(role)).toByteArray();
    QString error;
    const auto parsed = LlmRoleConfig::fromJson(QJsonDocument::fromJson(json).object(), role, &error);
    if (parsed)
        return *parsed;
    LlmRoleConfig c;
    c.provider = QStringLiteral("openai");
    return c;
}

void Settings::setRole(const QString& role, const LlmRoleConfig& config)
{
    store().setValue(QStringLiteral("llm/%1").arg(role), QJsonDocument(config.toJson()).toJson(QJsonDocument::Compact));
}

bool Settings::llmConfigured()
{
    return store().contains(QStringLiteral("llm/planner"));
}

void Settings::addRecentSession(const QString& dir)
{
    QStringList recent = get(settings::recentSessions);
    recent.removeAll(dir);
    recent.prepend(dir);
    while (recent.size() > 10)
        recent.removeLast();
    set(settings::recentSessions, recent);
}

} // namespace ks::ui
