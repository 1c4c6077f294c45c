#include "apikeys.h"

#include <util/secrets.h>

#include <QEventLoop>
#include <QTimer>
#include <qt6keychain/keychain.h>

namespace ks {

namespace {

constexpr char kService[] = "ksearch";
constexpr int kKeychainTimeoutMs = 5000;

bool keychainReachable(QString* error)
{
    if (qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")) {
        if (error)
            *error = QStringLiteral("no keychain: there is no D-Bus session (a headless machine?); use the "
                                    "environment variable instead");
        return false;
    }
    return true;
}

// Runs a keychain job to completion with a bounded wait.
bool runJob(QKeychain::Job& job, QString* error)
{
    job.setAutoDelete(false);
    QEventLoop loop;
    QObject::connect(&job, &QKeychain::Job::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(kKeychainTimeoutMs, &loop, &QEventLoop::quit);
    job.start();
    loop.exec();
    if (job.error() != QKeychain::NoError) {
        if (error)
            *error = QStringLiteral("keychain: %1").arg(job.errorString());
        return false;
    }
    return true;
}

} // namespace

QString apiKeyVariable(const QString& provider)
{
    if (provider == u"openai")
        return QStringLiteral("OPENAI_API_KEY");
    if (provider == u"anthropic")
        return QStringLiteral("ANTHROPIC_API_KEY");
    if (provider == u"gemini")
        return QStringLiteral("GEMINI_API_KEY");
    return {};
}

std::optional<ApiKey> findApiKey(const QString& provider)
{
    QStringList variables {apiKeyVariable(provider)};
    if (provider == u"gemini")
        variables << QStringLiteral("GOOGLE_API_KEY");
    for (const QString& v : variables) {
        const QString value = qEnvironmentVariable(v.toLatin1().constData()).trimmed();
        if (!v.isEmpty() && !value.isEmpty()) {
            registerSecret(value);
            return ApiKey {value, v};
        }
    }
    if (variables.first().isEmpty())
        return std::nullopt;
    if (const auto stored = readKeychainKey(provider)) {
        registerSecret(*stored);
        return ApiKey {*stored, QStringLiteral("the keychain")};
    }
    return std::nullopt;
}

std::optional<QString> readKeychainKey(const QString& provider, QString* error)
{
    if (!keychainReachable(error))
        return std::nullopt;
    QKeychain::ReadPasswordJob job {QLatin1String(kService)};
    job.setKey(provider);
    if (!runJob(job, error) || job.textData().isEmpty())
        return std::nullopt;
    return job.textData();
}

bool writeKeychainKey(const QString& provider, const QString& key, QString* error)
{
    if (!keychainReachable(error))
        return false;
    registerSecret(key);
    QKeychain::WritePasswordJob job {QLatin1String(kService)};
    job.setKey(provider);
    job.setTextData(key);
    return runJob(job, error);
}

bool deleteKeychainKey(const QString& provider, QString* error)
{
    if (!keychainReachable(error))
        return false;
    QKeychain::DeletePasswordJob job {QLatin1String(kService)};
    job.setKey(provider);
    return runJob(job, error);
}

} // namespace ks
