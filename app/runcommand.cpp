// `ksearch run`: a whole search, headless, with one progress line per evaluation.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"
#include "llmoptions.h"
#include "runprinter.h"

#include <session/runsummary.h>
#include <task/language.h>
#include <task/taskcatalog.h>

#include <QCoreApplication>
#include <QDateTime>
#include <QEventLoop>
#include <QFileInfo>
#include <QTextStream>

#include <fstream>
#include <gpulist.h>
#include <searchrun.h>
#include <sshremote.h>
#include <sstream>

namespace ks::cli {

namespace {

struct RunFlags {
    QCommandLineOption help {{u"h"_qs, u"help"_qs}, u"Show this help."_qs};
    QCommandLineOption task {u"task"_qs, u"task name or folder (a new session)"_qs, u"NAME|PATH"_qs};
    QCommandLineOption session {u"session"_qs, u"the session folder (required)"_qs, u"DIR"_qs};
    QCommandLineOption resume {u"resume"_qs, u"continue the session in --session"_qs};
    QCommandLineOption strategy {u"strategy"_qs, u"ksearch (default), evolve or greedy"_qs, u"NAME"_qs};
    QCommandLineOption budget {u"budget"_qs, u"evaluator calls, compile failures included (default 120)"_qs, u"N"_qs};
    QCommandLineOption k {u"k"_qs, u"attempts without improvement that end an action (default 7)"_qs, u"N"_qs};
    QCommandLineOption backend {u"backend"_qs, u"cuda (default) or host"_qs, u"NAME"_qs, u"cuda"_qs};
    QCommandLineOption language {u"language"_qs,
        u"of the candidates: cuda, cpp, triton or python (default: cuda on the cuda backend, cpp on host)"_qs,
        u"NAME"_qs};
    QCommandLineOption python {
        u"python"_qs, u"the python3 with torch (and triton) for python and triton candidates"_qs, u"PATH"_qs};
    QCommandLineOption seed {
        u"seed"_qs, u"a program to start from (evaluated first, attached to the root)"_qs, u"FILE"_qs};
    QCommandLineOption target {u"target"_qs, u"stop once the best J reaches this"_qs, u"J"_qs};
    QCommandLineOption maxTime {u"max-time"_qs, u"stop after this many seconds of running"_qs, u"S"_qs};
    QCommandLineOption maxDollars {u"max-dollars"_qs, u"dollar cap on LLM calls"_qs, u"D"_qs};
    QCommandLineOption minImprovement {u"min-improvement"_qs,
        u"relative gain that counts as progress for K (default 0.01; raise it on noisy hosts)"_qs, u"F"_qs};
    QCommandLineOption frozen {u"frozen-values"_qs, u"ablation: V never changes after insertion"_qs};
    QCommandLineOption flat {u"flat"_qs, u"ablation: a flat list of intents instead of a tree"_qs};
    QCommandLineOption islands {u"islands"_qs, u"evolve: number of islands (default 3)"_qs, u"N"_qs};
    QCommandLineOption randomSeed {u"random-seed"_qs, u"evolve: seed of its random choices (default 1)"_qs, u"N"_qs};
    QCommandLineOption benchSeconds {
        u"bench-seconds"_qs, u"timing-loop cap per workload (default 1)"_qs, u"S"_qs, u"1"_qs};
    QCommandLineOption label {u"label"_qs, u"a note stored with the session: how and why it was made"_qs, u"TEXT"_qs};
    QCommandLineOption prices {u"prices"_qs, u"price overrides (JSON)"_qs, u"FILE"_qs};
    QCommandLineOption quiet {u"quiet"_qs, u"only the summary"_qs};
    QCommandLineOption worker {u"worker"_qs,
        u"evaluate in a worker started by this shell command, e.g. \"ssh gpu-box ksearch worker\"; repeat it for "
        "several (docs/workers.md)"_qs,
        u"CMD"_qs};
    QCommandLineOption remote {u"remote"_qs,
        u"evaluate on a GPU server over ssh (your ssh config and agent; $KSEARCH_SSH replaces the ssh command): "
        "ssh://[user@]host[:port][/path/to/ksearch]; repeat it for several"_qs,
        u"URL"_qs};
    QCommandLineOption gpus {
        u"gpus"_qs, u"local GPUs, one evaluator each: all, or a list such as 0,2,5"_qs, u"LIST"_qs};
    QCommandLineOption localWorkers {u"local-workers"_qs,
        u"evaluators per local device (the CPU, or each GPU of --gpus): runs take turns on the device, compiles "
        "overlap with them (default 1; 0 with --worker: evaluate only there)"_qs,
        u"N"_qs};
    QCommandLineOption slurm {u"slurm"_qs,
        u"one SLURM allocation for the search, each worker a job step in it: PARTITION[,SALLOC OPTIONS], e.g. "
        "gpu,--gpus-per-task=1,--time=240"_qs,
        u"SPEC"_qs};
    QCommandLineOption slurmWorkers {
        u"slurm-workers"_qs, u"worker steps in the SLURM allocation (default 1)"_qs, u"N"_qs, u"1"_qs};
    QCommandLineOption slurmKsearch {u"slurm-ksearch"_qs,
        u"the ksearch the cluster's nodes run (default: this one's path, for a shared file system)"_qs, u"PATH"_qs};
    QCommandLineOption parallel {u"parallel"_qs,
        u"actions in progress at once (default: one per evaluator; more keeps the LLM writing while all are busy)"_qs,
        u"P"_qs};
    QCommandLineOption workerTask {u"worker-task"_qs,
        u"the task as the worker finds it (default: its name, on the worker's task path)"_qs, u"NAME|PATH"_qs};
};

std::optional<int> positiveInt(const QCommandLineParser& p, const QCommandLineOption& o, QString* error)
{
    bool ok = false;
    const int v = p.value(o).toInt(&ok);
    if (!ok || v < 1) {
        *error = QStringLiteral("--%1: '%2' is not a positive integer").arg(o.names().first(), p.value(o));
        return std::nullopt;
    }
    return v;
}

std::optional<double> nonNegative(const QCommandLineParser& p, const QCommandLineOption& o, QString* error)
{
    bool ok = false;
    const double v = p.value(o).toDouble(&ok);
    if (!ok || v < 0) {
        *error = QStringLiteral("--%1: '%2' is not a number >= 0").arg(o.names().first(), p.value(o));
        return std::nullopt;
    }
    return v;
}

// The settings of a new session from the flags; nullopt with `error` naming the flag.
std::optional<SearchSettings> settingsFrom(const QCommandLineParser& p, const RunFlags& f, QString* error)
{
    SearchSettings s;
    if (p.isSet(f.strategy)) {
        const auto st = parseStrategy(p.value(f.strategy).toStdString());
        if (!st) {
            *error = QStringLiteral("--strategy: '%1' is not ksearch, evolve or greedy").arg(p.value(f.strategy));
            return std::nullopt;
        }
        s.strategy = *st;
    }
    if (p.isSet(f.budget)) {
        const auto v = positiveInt(p, f.budget, error);
        if (!v)
            return std::nullopt;
        s.budget = *v;
    }
    if (p.isSet(f.k)) {
        const auto v = positiveInt(p, f.k, error);
        if (!v)
            return std::nullopt;
        s.stagnation = *v;
    }
    if (p.isSet(f.islands)) {
        const auto v = positiveInt(p, f.islands, error);
        if (!v)
            return std::nullopt;
        s.islands = *v;
    }
    if (p.isSet(f.randomSeed))
        s.randomSeed = p.value(f.randomSeed).toULongLong();
    for (auto [option, target] : {std::pair {&f.target, &s.targetScore}, std::pair {&f.maxTime, &s.maxSeconds},
             std::pair {&f.maxDollars, &s.maxDollars}, std::pair {&f.minImprovement, &s.minImprovement}})
        if (p.isSet(*option)) {
            const auto v = nonNegative(p, *option, error);
            if (!v)
                return std::nullopt;
            *target = *v;
        }
    s.frozenValues = p.isSet(f.frozen);
    s.flat = p.isSet(f.flat);
    return s;
}

} // namespace

int runRunCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        u"Run a search: the world model plans intents, the code policy implements them, every candidate is "
        "compiled, verified and timed, and the session folder records everything (resume it with --resume)."_qs);
    const RunFlags f;
    parser.addOptions({f.help, f.task, f.session, f.resume, f.strategy, f.budget, f.k, f.backend, f.language, f.python,
        f.seed, f.target, f.maxTime, f.maxDollars, f.minImprovement, f.frozen, f.flat, f.islands, f.randomSeed,
        f.benchSeconds, f.label, f.prices, f.quiet, f.worker, f.remote, f.workerTask, f.gpus, f.localWorkers,
        f.parallel, f.slurm, f.slurmWorkers, f.slurmKsearch});
    const LlmOptions planner;
    const LlmOptions coder(u"coder-"_qs, u" for the coder (default: the planner's)"_qs);
    planner.addTo(parser);
    coder.addTo(parser);
    if (const auto done = parseSubcommand(parser, arguments, u"ksearch run"_qs, out, err))
        return *done;
    const auto usage = [&](const QString& message) {
        err << "ksearch run: " << message << "\nTry 'ksearch run --help'.\n";
        return exitcode::InvalidInput;
    };
    if (!parser.isSet(f.session))
        return usage(u"--session DIR is required"_qs);
    const std::filesystem::path dir = parser.value(f.session).toStdString();
    QString error;
    RunOptions options;
    const auto bench = nonNegative(parser, f.benchSeconds, &error);
    if (!bench || *bench <= 0)
        return usage(bench ? u"--bench-seconds: must be above 0"_qs : error);
    options.benchSeconds = *bench;
    options.prices = loadPrices(parser.value(f.prices), &error);
    if (!options.prices)
        return usage(error);
    for (const QString& command : parser.values(f.worker))
        options.workerCommands.push_back(command.toStdString());
    for (const QString& url : parser.values(f.remote)) {
        std::string remoteError;
        const auto command = sshWorkerCommand(url.toStdString(), defaultSshCommand(), remoteError);
        if (!command)
            return usage(u"--remote: "_qs + QString::fromStdString(remoteError));
        options.workerCommands.push_back(*command);
    }
    if (parser.isSet(f.gpus)) {
        std::string gpuError;
        const auto gpus = parseGpuList(parser.value(f.gpus).toStdString(), gpuError);
        if (!gpus)
            return usage(u"--gpus: "_qs + QString::fromStdString(gpuError));
        options.gpus = *gpus;
    }
    if (parser.isSet(f.localWorkers)) {
        bool ok = false;
        options.localEvaluators = parser.value(f.localWorkers).toInt(&ok);
        if (!ok || options.localEvaluators < 0)
            return usage(
                QStringLiteral("--local-workers: '%1' is not a number >= 0").arg(parser.value(f.localWorkers)));
    }
    if (parser.isSet(f.slurm)) {
        options.slurm = parser.value(f.slurm).toStdString();
        const auto n = positiveInt(parser, f.slurmWorkers, &error);
        if (!n)
            return usage(error);
        options.slurmWorkers = *n;
        options.slurmKsearch = parser.isSet(f.slurmKsearch) ? parser.value(f.slurmKsearch).toStdString()
                                                            : QCoreApplication::applicationFilePath().toStdString();
    } else if (parser.isSet(f.slurmWorkers) || parser.isSet(f.slurmKsearch)) {
        return usage(u"--slurm-workers, --slurm-ksearch: need --slurm PARTITION"_qs);
    }
    if (parser.isSet(f.parallel)) {
        const auto v = positiveInt(parser, f.parallel, &error);
        if (!v)
            return usage(error);
        options.lanes = *v;
    }
    options.python = parser.value(f.python).toStdString();
    options.workerTask = parser.value(f.workerTask).toStdString();
    if (parser.isSet(f.workerTask) && options.workerCommands.empty() && !parser.isSet(f.slurm))
        return usage(u"--worker-task: needs --worker CMD, --remote URL or --slurm"_qs);

    std::unique_ptr<SearchRun> run;
    std::string runError;
    if (parser.isSet(f.resume)) {
        for (const auto* o : {&f.task, &f.strategy, &f.seed, &f.backend, &f.language, &f.frozen, &f.flat, &f.islands})
            if (parser.isSet(*o))
                return usage(QStringLiteral("--%1: a resumed session keeps the settings it was started with "
                                            "(session.json)")
                                 .arg(o->names().first()));
        if (planner.isSet(parser) || coder.isSet(parser))
            return usage(u"the provider flags: a resumed session keeps its LLM settings (session.json: llm)"_qs);
        JournalRecovery recovery;
        run = SearchRun::resume(dir, options, runError, &recovery);
        if (!run)
            return usage(QString::fromStdString(runError));
        err << "ksearch run: resuming " << QString::fromStdString(dir.string()) << " after " << recovery.events
            << " events" << (recovery.droppedPartialLine ? " (a partly written last event was dropped)" : "") << "\n";
    } else {
        if (!parser.isSet(f.task))
            return usage(u"--task NAME|PATH is required for a new session (or --resume)"_qs);
        auto settings = settingsFrom(parser, f, &error);
        if (!settings)
            return usage(error);
        const auto b = parseBackend(parser.value(f.backend).toStdString());
        if (!b)
            return usage(QStringLiteral("--backend: '%1' is not cuda or host").arg(parser.value(f.backend)));
        std::optional<Language> language;
        if (parser.isSet(f.language)) {
            language = parseLanguage(parser.value(f.language).toStdString());
            if (!language)
                return usage(QStringLiteral("--language: '%1' is not one of %2")
                                 .arg(parser.value(f.language), QString::fromStdString(languageNameList())));
            if (const std::string p = languageBackendProblem(*language, backendName(*b)); !p.empty())
                return usage(u"--language: "_qs + QString::fromStdString(p));
        }
        auto plannerConfig = planner.read(parser, {}, &error);
        if (!plannerConfig)
            return usage(error);
        auto coderConfig = coder.read(parser, *plannerConfig, &error);
        if (!coderConfig)
            return usage(error);
        auto task = loadNamedTask(parser.value(f.task), err);
        if (!task)
            return exitcode::InvalidInput;
        SessionConfig config;
        config.taskName = task->definition.name;
        config.taskDir = std::filesystem::absolute(task->dir);
        config.backend = backendName(*b);
        config.language = language;
        config.settings = *settings;
        config.planner = *plannerConfig;
        config.coder = *coderConfig;
        config.created = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
        config.version = KSEARCH_VERSION;
        config.label = parser.value(f.label).toStdString();
        std::string seedSource;
        if (parser.isSet(f.seed)) {
            std::ifstream in(parser.value(f.seed).toStdString());
            if (!in)
                return usage(QStringLiteral("--seed: cannot read '%1'").arg(parser.value(f.seed)));
            std::stringstream ss;
            ss << in.rdbuf();
            seedSource = ss.str();
            config.seedProgram = programHash(seedSource);
        }
        run = SearchRun::create(dir, config, options, runError);
        if (!run)
            return usage(QString::fromStdString(runError));
        if (!seedSource.empty() && run->session().storeProgram(seedSource, runError).empty())
            return usage(QString::fromStdString(runError));
    }
    if (const auto problem = run->environmentProblem()) {
        const SessionConfig& c = run->session().config();
        err << "ksearch run: the " << QString::fromStdString(c.backend) << " backend is not available for "
            << QString::fromLatin1(languageName(c.candidateLanguage()).data())
            << " candidates: " << QString::fromStdString(*problem) << "\n";
        return exitcode::Environment;
    }
    if (parser.isSet(f.resume)) { // budget and K may change on resume: recorded as the person's commands
        for (auto [option, kind] :
            {std::pair {&f.budget, HumanCommand::Kind::SetBudget}, std::pair {&f.k, HumanCommand::Kind::SetK}})
            if (parser.isSet(*option)) {
                const auto v = positiveInt(parser, *option, &error);
                if (!v)
                    return usage(error);
                HumanCommand c;
                c.kind = kind;
                c.number = *v;
                c.reason = "ksearch run --resume --" + option->names().first().toStdString() + " " + std::to_string(*v);
                run->engine().submit(c);
            }
    }

    // Named when there is more than the one local evaluator: several, a remote one, or some left out.
    if (run->evaluators().size() > 1 || !run->unavailableEvaluators().empty()
        || (!run->evaluators().empty() && !run->evaluators().front().name.empty())) {
        QStringList names;
        for (const EvaluatorSlot& e : run->evaluators())
            names << QString::fromStdString(e.name);
        err << "ksearch run: " << names.size() << (names.size() == 1 ? " evaluator: " : " evaluators: ")
            << names.join(u", "_qs) << "\n";
        for (const std::string& why : run->unavailableEvaluators())
            err << "ksearch run: left out: " << QString::fromStdString(why) << "\n";
    }
    QObject::connect(
        &run->engine(), &SearchEngine::evaluatorLost, &run->engine(), [&](const QString& name, const QString& why) {
            err << "ksearch run: evaluator " << name << " failed and takes no more candidates: " << why << "\n";
        });
    RunPrinter printer(run->task(), out, parser.isSet(f.quiet));
    QObject::connect(&run->engine(), &SearchEngine::eventRecorded, &run->engine(),
        [&](const SearchEvent& e) { printer.onEvent(run->engine().state(), *e); });
    QObject::connect(&run->engine(), &SearchEngine::commandRejected, &run->engine(),
        [&](const QString& c, const QString& why) { err << "ksearch run: " << c << ": refused: " << why << "\n"; });
    int code = exitcode::Success;
    QEventLoop loop;
    QObject::connect(&run->engine(), &SearchEngine::finished, &loop, &QEventLoop::quit);
    QObject::connect(&run->engine(), &SearchEngine::halted, &loop, [&](const QString& why) {
        err << "ksearch run: halted: " << why << "\n"
            << "The session is intact: continue it with 'ksearch run --resume --session "
            << QString::fromStdString(dir.string()) << "'.\n";
        code = exitcode::Environment;
        loop.quit();
    });
    run->start(false);
    loop.exec();
    printer.printSummary(run->engine().state(), run->session().dir());
    return code;
}

} // namespace ks::cli
