#include "runcontroller.h"

#include "searchdocument.h"

#include <llm/manualprovider.h>

#include <searchrun.h>

namespace ks::ui {

namespace {

// A journal's lines as typed events; nullopt with `error` naming the first line that is not one.
std::optional<std::vector<SearchEvent>> typedEvents(std::vector<nlohmann::json>& lines, std::string& error)
{
    std::vector<SearchEvent> events;
    events.reserve(lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
        auto e = journalEventFromJson(lines[i], error);
        if (!e) {
            error = "journal.jsonl:" + std::to_string(i + 1) + ": " + error;
            return std::nullopt;
        }
        events.push_back(std::make_shared<const JournalEvent>(std::move(*e)));
    }
    return events;
}

} // namespace

RunController::RunController(SearchDocument& document, QObject* parent)
    : QObject(parent)
    , m_document(document)
{
}

RunController::~RunController()
{
    close();
}

void RunController::close()
{
    if (m_run) { // the journal holds everything: the run can be resumed later from its folder
        m_run->shutdown();
        m_run.reset();
        emit activityChanged({});
    }
    m_finished = false;
}

bool RunController::startNew(const std::filesystem::path& dir, SessionConfig config, const QString& seedSource,
    const RunOptions& options, QString* error)
{
    close();
    std::string e;
    if (!seedSource.isEmpty())
        config.seedProgram = programHash(seedSource.toStdString());
    auto run = SearchRun::create(dir, config, options, e);
    if (!run || (!seedSource.isEmpty() && run->session().storeProgram(seedSource.toStdString(), e).empty())) {
        *error = QString::fromStdString(e);
        return false;
    }
    m_document.clear();
    m_document.setSession(run->session().config(), run->session().dir(), true);
    return startRun(std::move(run), error);
}

bool RunController::resume(
    const std::filesystem::path& dir, const RunOptions& options, QString* error, const std::vector<HumanCommand>& first)
{
    close();
    std::string e;
    auto run = SearchRun::resume(dir, options, e);
    if (!run) {
        *error = QString::fromStdString(e);
        return false;
    }
    auto events = run->session().readJournal(e);
    if (!events) {
        *error = QString::fromStdString(e);
        return false;
    }
    auto shared = typedEvents(*events, e);
    if (!shared) {
        *error = QString::fromStdString(e);
        return false;
    }
    m_document.setSession(run->session().config(), run->session().dir(), true);
    m_document.load(std::move(*shared));
    for (const HumanCommand& c : first) // queued: the engine takes them before its first step
        run->engine().submit(c);
    return startRun(std::move(run), error);
}

bool RunController::startRun(std::unique_ptr<SearchRun> run, QString* error)
{
    if (const auto problem = run->environmentProblem()) {
        *error = tr("The %1 backend is not available here: %2")
                     .arg(QString::fromStdString(run->session().config().backend), QString::fromStdString(*problem));
        return false;
    }
    m_run = std::move(run);
    m_finished = false;
    SearchEngine* engine = &m_run->engine();
    // The engine lives in its own thread: these connections are queued, and the document is
    // touched only here, in the window's thread.
    connect(engine, &SearchEngine::eventRecorded, &m_document, &SearchDocument::append);
    connect(engine, &SearchEngine::finished, this, [this](const QString& reason) {
        m_finished = true;
        emit finished(reason);
    });
    connect(engine, &SearchEngine::halted, this, [this](const QString& why) {
        m_finished = true;
        emit halted(why);
    });
    connect(engine, &SearchEngine::commandRejected, this, &RunController::commandRejected);
    connect(engine, &SearchEngine::llmText, this, &RunController::llmText);
    connect(engine, &SearchEngine::activityChanged, this, &RunController::activityChanged);
    for (LlmProvider* p : {m_run->plannerProvider(), m_run->coderProvider()})
        if (auto* manual = dynamic_cast<ManualProvider*>(p))
            connect(manual, &ManualProvider::questionAsked, this, &RunController::manualQuestion);
    m_run->start(true);
    (void)error;
    return true;
}

bool RunController::openReadOnly(const std::filesystem::path& dir, QString* error)
{
    close();
    std::string e;
    auto session = Session::open(dir, e);
    if (!session) {
        *error = QString::fromStdString(e);
        return false;
    }
    auto events = session->readJournal(e);
    if (!events) {
        *error = QString::fromStdString(e);
        return false;
    }
    auto shared = typedEvents(*events, e);
    if (!shared) {
        *error = QString::fromStdString(e);
        return false;
    }
    m_document.setSession(session->config(), session->dir(), false);
    try {
        m_document.load(std::move(*shared));
    } catch (const std::exception& ex) {
        *error = tr("%1: the journal does not replay: %2")
                     .arg(QString::fromStdString((dir / "journal.jsonl").string()), QString::fromUtf8(ex.what()));
        m_document.clear();
        return false;
    }
    return true;
}

void RunController::send(const HumanCommand& command)
{
    if (m_run && !m_finished)
        m_run->engine().submit(command);
}

} // namespace ks::ui
