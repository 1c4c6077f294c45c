#include "searchrun.h"

#include <llm/providerfactory.h>

#include <QDir>

#include <spdlog/spdlog.h>

#include <random>

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
    es.confineCandidates = options.confineCandidates;
    es.sanitizeFailures = options.sanitizeFailures;
    es.language = config.candidateLanguage();
    if (!options.python.empty())
        es.python = options.python;
    if (!buildEvaluators(options, es, error))
        return false;
    const std::string compiler =
        m_evaluators.empty() ? std::string("the worker's") : m_evaluators.front()->compilerDescription();

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
    setup.evaluators = m_slots;
    setup.lanes = options.lanes;
    setup.target = {m_slots.front().evaluator->targetDescription(), compiler, es.backend == Backend::Cuda,
        config.candidateLanguage()};
    m_engine = std::make_unique<SearchEngine>(setup, std::move(state));
    return true;
}

bool SearchRun::buildEvaluators(const RunOptions& options, const EvaluatorSettings& local, std::string& error)
{
    const SessionConfig& config = m_session->config();
    const bool cuda = local.backend == Backend::Cuda;
    if (!cuda && !options.gpus.empty()) {
        error = "--gpus: the host backend evaluates on this machine's CPU; use --local-workers N";
        return false;
    }
    // Local devices, and evaluators per device: their runs take turns on the device (one queue
    // each), their compiles overlap with those runs.
    const std::vector<std::string> devices =
        options.gpus.empty() ? std::vector<std::string> {cuda ? options.cudaDevice : std::string()} : options.gpus;
    const bool remote = !options.workerCommands.empty() || !options.slurm.empty();
    const int perDevice = options.localEvaluators >= 0 ? options.localEvaluators
        : (!remote || !options.gpus.empty())           ? 1
                                                       : 0;
    const std::size_t localCount = devices.size() * static_cast<std::size_t>(perDevice);
    const bool named = localCount > 1 || remote;
    // One secret per search: every evaluator, here or on a worker, draws the same inputs from it
    // where it runs, so a verdict never depends on which evaluator a candidate got. It travels to
    // workers inside their requests (ssh or srun carry it) and is never written to the session.
    const std::uint64_t secret = local.seed != 0
        ? local.seed
        : (static_cast<std::uint64_t>(std::random_device {}()) << 32) ^ std::random_device {}();
    for (const std::string& device : devices) {
        // The evaluators of a device prepare the task once between them (inputs, reference
        // outputs, the baseline's timing on that device).
        const auto preparation = perDevice > 1 ? makeSharedPreparation() : nullptr;
        for (int j = 0; j < perDevice; ++j) {
            EvaluatorSettings es = local;
            es.seed = secret;
            es.preparation = preparation;
            if (localCount > 1) // each its own scratch folder: candidates' files never meet
                es.workDir = local.workDir / ("evaluator-" + std::to_string(m_evaluators.size()));
            std::filesystem::create_directories(es.workDir);
            es.cudaVisibleDevices = device;
            m_evaluators.push_back(std::make_unique<Evaluator>(*m_task, es));
            std::string name;
            if (named && cuda)
                name = "gpu" + (device.empty() ? std::string("0") : device)
                    + (perDevice > 1 ? "." + std::to_string(j) : std::string());
            else if (named)
                name = "local" + std::to_string(j);
            m_slots.push_back({name, m_evaluators.back().get()});
        }
    }
    std::vector<std::string> commands = options.workerCommands;
    if (!options.slurm.empty()) {
        std::string why;
        m_allocation = SlurmAllocation::start({options.slurm, options.slurmWorkers}, why);
        if (m_allocation)
            for (int i = 0; i < options.slurmWorkers; ++i)
                commands.push_back(m_allocation->workerCommand(options.slurmKsearch));
        else
            m_unavailable.push_back(why);
    }
    for (const std::string& command : commands) {
        worker::WorkerClient::Options wo;
        wo.command = command;
        wo.task = options.workerTask.empty() ? config.taskName : options.workerTask;
        wo.taskDigest = worker::taskDigest(*m_task);
        wo.settings.backend = config.backend;
        wo.settings.seed = secret;
        if (config.language)
            wo.settings.language = std::string(languageName(*config.language));
        wo.settings.maxSeconds = options.benchSeconds;
        wo.settings.timeoutSeconds = static_cast<double>(options.runTimeout.count()) / 1000.0;
        wo.sourceSuffix = config.programSuffix();
        std::string why;
        auto client = worker::WorkerClient::start(wo, why);
        if (!client) { // the search goes on with the evaluators it has
            m_unavailable.push_back(why);
            continue;
        }
        m_workers.push_back(std::move(client));
        m_slots.push_back({command, m_workers.back().get()});
    }
    if (m_slots.empty()) {
        error = m_unavailable.empty() ? "no evaluator: --local-workers 0 needs --worker CMD or --remote URL"
                                      : m_unavailable.front();
        for (std::size_t i = 1; i < m_unavailable.size(); ++i)
            error += "\n" + m_unavailable[i];
        return false;
    }
    for (const std::string& why : m_unavailable)
        spdlog::warn("left out of this search: {}", why);
    return true;
}

std::optional<std::string> SearchRun::environmentProblem()
{
    // Workers checked their own environment when they were greeted.
    for (const auto& e : m_evaluators)
        if (auto problem = e->environmentProblem())
            return problem;
    return std::nullopt;
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
