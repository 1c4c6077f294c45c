#include "secrets.h"

#include <QMutex>
#include <QStringList>

namespace ks {

namespace {

// Shorter strings are not treated as secrets: redacting them would mangle ordinary text.
constexpr qsizetype kMinSecretLength = 8;

struct Registry {
    QMutex mutex;
    QStringList secrets;
};

Registry& registry()
{
    static Registry r;
    return r;
}

} // namespace

void registerSecret(const QString& secret)
{
    const QString s = secret.trimmed();
    if (s.size() < kMinSecretLength)
        return;
    Registry& r = registry();
    QMutexLocker lock(&r.mutex);
    if (!r.secrets.contains(s))
        r.secrets.append(s);
}

QString redactSecrets(QString text)
{
    Registry& r = registry();
    QMutexLocker lock(&r.mutex);
    for (const QString& s : std::as_const(r.secrets))
        text.replace(s, QLatin1String(kRedacted));
    return text;
}

std::string redactSecrets(const std::string& text)
{
    {
        Registry& r = registry();
        QMutexLocker lock(&r.mutex);
        if (r.secrets.isEmpty())
            return text;
    }
    return redactSecrets(QString::fromStdString(text)).toStdString();
}

} // namespace ks
