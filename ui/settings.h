#pragma once

#include <llm/llmconfig.h>

#include <QSettings>
#include <QString>
#include <QStringList>
#include <QVariant>

namespace ks::ui {

// A setting: its key in the one QSettings of the application, and its value when unset.
template<class T> struct SettingKey {
    const char* key;
    T fallback;
};

// Typed access to the application's settings (~/.config/K-Search Studio/ksearch.conf). No API
// key is ever stored here: keys go to the OS keychain (Settings dialog) or the environment.
class Settings
{
public:
    template<class T> static T get(const SettingKey<T>& k)
    {
        return store().value(QLatin1String(k.key), QVariant::fromValue(k.fallback)).template value<T>();
    }
    template<class T> static void set(const SettingKey<T>& k, const T& value)
    {
        store().setValue(QLatin1String(k.key), QVariant::fromValue(value));
    }

    // The LLM settings of a role ("planner" or "coder").
    static LlmRoleConfig role(const QString& role);
    static void setRole(const QString& role, const LlmRoleConfig& config);
    // True once a provider was chosen for the planner (otherwise the window opens the example).
    static bool llmConfigured();

    static void addRecentSession(const QString& dir);

private:
    static QSettings& store();
};

namespace settings {
inline const SettingKey<QStringList> recentSessions {"sessions/recent", {}};
inline const SettingKey<QString> sessionsFolder {"sessions/folder", {}};
inline const SettingKey<QString> backend {"evaluation/backend", QStringLiteral("cuda")};
inline const SettingKey<QString> language {"evaluation/language", {}}; // empty: the backend's compiled one
inline const SettingKey<QString> python {"evaluation/python", {}}; // empty: $KSEARCH_PYTHON, else python3
inline const SettingKey<QString> cudaDevice {"evaluation/cudaDevice", {}}; // empty: the first device
inline const SettingKey<QString> extraCompilerFlags {"evaluation/extraFlags", {}};
inline const SettingKey<double> benchSeconds {"evaluation/benchSeconds", 1.0};
// Evaluators of a search (docs/workers.md): local GPUs ("" : the GPU setting alone, "all", "0,2"),
// evaluators per local device, workers (each a `ksearch worker` command, or an ssh:// address as
// --remote takes it), a SLURM allocation (PARTITION[,SALLOC OPTIONS]; empty: none) with its worker
// steps and the ksearch its nodes run (empty: this one's path), actions at once (0: one per evaluator).
inline const SettingKey<QString> gpus {"evaluators/gpus", {}};
inline const SettingKey<int> localWorkers {"evaluators/perDevice", 1};
inline const SettingKey<QStringList> workerCommands {"evaluators/workers", {}};
inline const SettingKey<int> parallel {"evaluators/parallel", 0};
inline const SettingKey<QString> slurm {"evaluators/slurm", {}};
inline const SettingKey<int> slurmWorkers {"evaluators/slurmWorkers", 1};
inline const SettingKey<QString> slurmKsearch {"evaluators/slurmKsearch", {}};
inline const SettingKey<QString> pricesFile {"llm/pricesFile", {}};
inline const SettingKey<QByteArray> windowGeometry {"window/geometry", {}};
// A desktop notification (tray message, taskbar alert) when a live search finds a new best or ends.
inline const SettingKey<bool> notifications {"window/notifications", true};
// Candidates run confined (docs/security.md); off only to debug one. Every evaluation records it.
inline const SettingKey<bool> confineCandidates {"evaluation/confineCandidates", true};
// The compute-sanitizer tool a failed CUDA candidate runs under again, for the code policy's debug
// prompt (memcheck, racecheck, initcheck, synccheck; empty: none).
inline const SettingKey<QString> sanitizeFailures {"evaluation/sanitizeFailures", {}};
inline const SettingKey<QByteArray> windowState {"window/state", {}};
} // namespace settings

} // namespace ks::ui
