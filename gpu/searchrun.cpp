#include "searchrun.h"

#include <llm/providerfactory.h>

#include <QDir>

namespace ks {

namespace fs = std::filesystem;

std::unique_ptr<SearchRun> SearchRun::create(
    const fs::path& dir, const SessionConfig& config, const RunOptions& options, std::string& error)
{
    auto session = Session::create(dir, config, error);
    if (!session)
        return nullptr;
    std::unique_ptr<SearchRun> run(new SearchRun);
    SearchState state;
    state.settings = config.settings;
    if (!run->build(std::move(session), std::move(state), options, error))
        return nullptr;
    return run;
}

std::unique_ptr<SearchRun> SearchRun::resume(
    const fs::path& dir, const RunOptions& options, std::string& error, JournalRecovery* recovery)
{
    auto session = Session::open(dir, error);
    if (!session)
        return nullptr;
    auto state = session->loadState(error, recovery, true);
    if (!state)
        return nullptr;
    std::unique_ptr<SearchRun> run(new SearchRun);
    run->m_resumed = true;
    if (!run->build(std::move(session), std::move(*state), options, error))
        return nullptr;
    return run;
}

SearchRun::~SearchRun()
{
    shutdown();
}

bool SearchRun::build(
    std::unique_ptr<Session> session, SearchState state, const RunOptions& options, std::string& error)
{
    m_session = std::move(session);
    const SessionConfig& config = m_session->config();
    auto loaded = loadTask(config.taskDir);
    if (!loaded.task) {
        error = config.taskDir.string() + ": the task cannot be loaded:\n" + loaded.diagnostics.formatAll();
        return false;
    }
    m_task = std::make_unique<Task>(std::move(*loaded.task));

    // Runner jobs only: buffers travel as shared memory (gpu/sharedmemory.h).
    m_scratch = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/ksearch-run-XXXXXX"));
    EvaluatorSettings es;
    es.backend = config.backend == "host" ? Backend::Host : Backend::Cuda;
    es.workDir = m_scratch->path().toStdString();
    es.cacheDir = options.compileCache;
    es.bench.maxSeconds = options.benchSeconds;
    es.runTimeout = options.runTimeout;
    es.cudaVisibleDevices = options.cudaDevice;
    es.extraFlags = options.extraFlags;
    es.language = config.candidateLanguage();
    if (!options.python.empty())
        es.python = options.python;
    CandidateEvaluator* evaluator = nullptr;
    std::string compiler;
    if (options.workerCommand.empty()) {
        m_evaluator = std::make_unique<Evaluator>(*m_task, es);
        evaluator = m_evaluator.get();
        compiler = m_evaluator->compilerDescription();
    } else {
        worker::WorkerClient::Options wo;
        wo.command = options.workerCommand;
        wo.task = options.workerTask.empty() ? config.taskName : options.workerTask;
        wo.taskDigest = worker::taskDigest(*m_task);
        wo.settings.backend = config.backend;
        if (config.language)
            wo.settings.language = std::string(languageName(*config.language));
        wo.settings.maxSeconds = options.benchSeconds;
        wo.settings.timeoutSeconds = static_cast<double>(options.runTimeout.count()) / 1000.0;
        wo.sourceSuffix = config.programSuffix();
        m_worker = worker::WorkerClient::start(wo, m_workerError);
        if (!m_worker) {
            error = m_workerError;
            return false;
        }
        evaluator = m_worker.get();
        compiler = "the worker's";
    }

    m_prices = options.prices ? *options.prices : PriceTable::builtIn();
    m_ledger.restore(QMap<QString, RoleUsage>());
    QMap<QString, RoleUsage> used;
    for (const auto& [role, u] : state.usage)
        used.insert(QString::fromStdString(role), u);
    m_ledger.restore(used);
    m_ledger.setCapDollars(state.settings.maxDollars);
    for (auto [config_, raw, metered] :
        {std::tuple {&config.planner, &m_plannerRaw, &m_planner}, std::tuple {&config.coder, &m_coderRaw, &m_coder}}) {
        ProviderBuild b = makeProvider(*config_);
        if (!b.provider) {
            error = (config_ == &config.planner ? "planner: " : "coder: ") + b.error.toStdString();
            return false;
        }
        *raw = std::move(b.provider);
        *metered = std::make_unique<MeteredProvider>(**raw, m_prices, m_ledger);
    }
    EngineSetup setup;
    setup.task = m_task.get();
    setup.session = m_session.get();
    setup.plannerConfig = config.planner;
    setup.coderConfig = config.coder;
    setup.planner = m_planner.get();
    setup.coder = m_coder.get();
    setup.ledger = &m_ledger;
    setup.evaluator = evaluator;
    setup.target = {evaluator->targetDescription(), compiler, es.backend == Backend::Cuda, config.candidateLanguage()};
    m_engine = std::make_unique<SearchEngine>(setup, std::move(state));
    return true;
}

std::optional<std::string> SearchRun::environmentProblem()
{
    if (m_worker)
        return std::nullopt; // the worker checked its own environment when it was greeted
    return m_evaluator->environmentProblem();
}

void SearchRun::start(bool ownThread)
{
    const bool resumed = m_resumed;
    if (ownThread) {
        m_thread = std::make_unique<QThread>();
        m_thread->setObjectName(QStringLiteral("ksearch-engine"));
        for (LlmProvider* p : {m_plannerRaw.get(), m_coderRaw.get()})
            if (auto* o = dynamic_cast<QObject*>(p))
                o->moveToThread(m_thread.get());
        m_engine->moveToThread(m_thread.get());
        m_threadContext = std::make_unique<QObject>();
        m_threadContext->moveToThread(m_thread.get());
        m_thread->start();
    }
    QMetaObject::invokeMethod(
        m_engine.get(), [engine = m_engine.get(), resumed] { engine->start(resumed); }, Qt::QueuedConnection);
}

void SearchRun::shutdown()
{
    if (!m_thread)
        return;
    // The engine, its calls and the providers belong to the worker: destroy them there.
    QMetaObject::invokeMethod(
        m_threadContext.get(),
        [this] {
            m_engine.reset();
            m_planner.reset();
            m_coder.reset();
            m_plannerRaw.reset();
            m_coderRaw.reset();
        },
        Qt::BlockingQueuedConnection);
    m_thread->quit();
    m_thread->wait();
    m_thread.reset();
    m_threadContext.reset();
}

} // namespace ks
