// `ksearch run`: a whole search, headless, with one progress line per evaluation.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"
#include "llmoptions.h"
#include "resumecheck.h"
#include "runflags.h"
#include "runprinter.h"

#include <session/runsummary.h>
#include <session/session.h>
#include <task/language.h>
#include <task/sanitizerreport.h>
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
        f.parallel, f.slurm, f.slurmWorkers, f.slurmKsearch, f.unconfined, f.sanitizeFailures});
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
    options.confineCandidates = !parser.isSet(f.unconfined);
    if (parser.isSet(f.sanitizeFailures)) {
        options.sanitizeFailures = parseSanitizerTool(parser.value(f.sanitizeFailures).toStdString());
        if (!options.sanitizeFailures)
            return usage(u"--sanitize-failures: '"_qs + parser.value(f.sanitizeFailures) + u"' is not a tool ("_qs
                + QString::fromStdString(sanitizerToolList()) + u')');
    }
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
        // The command line that started the session may be given again: only a setting that
        // differs is refused. Without a readable session, resume() below says why.
        if (std::string openError; const auto existing = Session::open(dir, openError))
            if (const auto clash = resumeConflict(parser, f, planner, coder, existing->config()))
                return usage(*clash);
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
                const SearchSettings& now = run->engine().state().settings;
                if (*v == (kind == HumanCommand::Kind::SetBudget ? now.budget : now.stagnation))
                    continue; // the command line restates it: nothing to change
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
