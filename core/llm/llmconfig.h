#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace ks {

// How one search role reaches its model. Holds no secret: keys are looked up when the provider
// is made (environment, then the OS keychain), so this can be written into session files.
struct LlmRoleConfig {
    QString provider; // openai | anthropic | gemini | command | manual | replay
    QString baseUrl; // empty: the provider's public endpoint
    QString model;
    std::optional<double> temperature;
    int maxTokens = 0; // 0: the provider's default
    QString reasoningEffort; // low | medium | high (Gemini: a level, or a token budget)
    QString command; // command provider: the shell command
    QString replayFile; // replay provider: the recorded exchanges
    bool replayInOrder = true; // replay: unmatched requests take the next answer of their role
    QString recordFile; // when set, every exchange is appended here (a replay file)
    int timeoutSeconds = 900; // a whole call, retries included
    int maxRetries = 4; // on rate limits, server errors and network errors

    QJsonObject toJson() const;
    // Reads what toJson wrote; an error names the field under `where` (e.g. "session.json: llm.planner").
    static std::optional<LlmRoleConfig> fromJson(const QJsonObject& o, const QString& where, QString* error);
    // What is missing or wrong for this provider, each naming the setting; empty when usable.
    QStringList problems() const;
    QString describe() const; // "openai gpt-5.2 at http://127.0.0.1:8000/v1"
};

QStringList knownProviders();
QString defaultBaseUrl(const QString& provider);

} // namespace ks
