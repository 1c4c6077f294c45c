#pragma once

#include "steering.h"

#include <llm/manualprovider.h>
#include <search/engine.h>
#include <session/sessionconfig.h>

#include <QObject>

#include <filesystem>
#include <memory>
#include <vector>

namespace ks {
class SearchRun;
struct RunOptions;
} // namespace ks

namespace ks::ui {

class SearchDocument;

// Connects the window to a search: starts a new one or resumes a session in a worker thread and
// feeds its events to the document, opens a finished session read-only, and carries a person's
// commands to the engine.
class RunController : public QObject, public Steering
{
    Q_OBJECT
public:
    RunController(SearchDocument& document, QObject* parent = nullptr);
    ~RunController() override;

    // A new session; `seedSource` (when not empty) is stored as the seed program named in `config`.
    bool startNew(const std::filesystem::path& dir, SessionConfig config, const QString& seedSource,
        const RunOptions& options, QString* error);
    // Continues a session, finished or not; `first` reaches the engine before its first step (a
    // budget raised so that a search that used its budget can go on).
    bool resume(const std::filesystem::path& dir, const RunOptions& options, QString* error,
        const std::vector<HumanCommand>& first = {});
    // Shows a session without running anything (a finished run, or one to look at first).
    bool openReadOnly(const std::filesystem::path& dir, QString* error);
    void close();

    bool isRunning() const { return m_run != nullptr && !m_finished; }
    bool canSteer() const override { return isRunning(); }
    void send(const HumanCommand& command) override;

signals:
    void finished(const QString& reason);
    void halted(const QString& error);
    void commandRejected(const QString& command, const QString& why);
    void manualQuestion(ks::ManualCall* call); // a manual provider waits for a person's answer
    void llmText(const QString& role, const QString& delta);
    // What the running search's evaluators and LLM calls do now; an empty activity once it stops.
    void activityChanged(const ks::EngineActivity& activity);

private:
    bool startRun(std::unique_ptr<SearchRun> run, QString* error);

    SearchDocument& m_document;
    std::unique_ptr<SearchRun> m_run;
    bool m_finished = false;
};

} // namespace ks::ui
