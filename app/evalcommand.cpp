// `ksearch eval`: compile, verify and benchmark one kernel file against a task.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"

#include <task/language.h>
#include <task/taskcatalog.h>

#include <QCommandLineParser>
#include <QDir>
#include <QTemporaryDir>
#include <QTextStream>

#include <chrono>
#include <cmath>
#include <evaluator.h>
#include <sanitizer.h>
#include <thread>

namespace ks::cli {

namespace {

QString num(double v, int precision = 2)
{
    return QString::number(v, 'f', precision);
}

QString sci(double v)
{
    return QString::number(v, 'g', 3);
}

void printTable(const Evaluation& e, QTextStream& out)
{
    out << QStringLiteral("%1  %2  %3  %4  %5  %6  %7  %8\n")
               .arg(QStringLiteral("WORKLOAD"), -8)
               .arg(QStringLiteral("STATUS"), -19)
               .arg(QStringLiteral("MAX_ABS"), 9)
               .arg(QStringLiteral("MAX_REL"), 9)
               .arg(QStringLiteral("LATENCY_US (P25-P75)"), 26)
               .arg(QStringLiteral("BASELINE_US"), 11)
               .arg(QStringLiteral("SPEEDUP"), 7)
               .arg(QStringLiteral("ROOFLINE"), 8);
    for (const auto& w : e.workloads) {
        const bool timed = w.latencyMicros > 0;
        out << QStringLiteral("%1  %2  %3  %4  %5  %6  %7  %8\n")
                   .arg(QString::fromStdString(w.id.substr(0, 8)), -8)
                   .arg(QString::fromLatin1(verdictName(w.status).data()), -19)
                   .arg(sci(w.maxAbsError), 9)
                   .arg(sci(w.maxRelError), 9)
                   .arg(timed
                           ? QStringLiteral("%1 (%2-%3)").arg(num(w.latencyMicros), num(w.p25Micros), num(w.p75Micros))
                           : QStringLiteral("-"),
                       26)
                   .arg(w.baselineLatencyMicros > 0 ? num(w.baselineLatencyMicros) : QStringLiteral("-"), 11)
                   .arg(w.speedup > 0 ? num(w.speedup) + u'x' : QStringLiteral("-"), 7)
                   .arg(w.rooflineFraction > 0 ? num(100 * w.rooflineFraction, 1) + u'%' : QStringLiteral("-"), 8);
    }
    out << "\n"
        << QString::fromLatin1(verdictName(e.status).data()) << ": J = " << num(e.score, 1) << "  (latency geomean "
        << num(e.latencyMicros) << " us, baseline " << num(e.baselineLatencyMicros) << " us";
    if (!e.device.empty())
        out << ", " << QString::fromStdString(e.device);
    out << ")\n";
    out << "time: compile " << num(e.compileSeconds) << " s" << (e.compileCached ? " (cached)" : "") << ", inputs "
        << num(e.inputSeconds) << " s, reference " << num(e.referenceSeconds) << " s, baseline "
        << num(e.baselineSeconds) << " s, candidate " << num(e.candidateSeconds) << " s (timed loop "
        << num(e.timedGpuSeconds) << " s), total " << num(e.totalSeconds) << " s\n";
    if (e.confinement) {
        const auto gaps = confinementGaps(*e.confinement);
        QStringList words;
        for (const auto& g : gaps)
            words << QString::fromStdString(g);
        out << "confinement: " << (gaps.empty() ? QStringLiteral("full") : words.join(u"; ")) << "\n";
    }
    if (e.status != Verdict::Passed)
        out << "\n" << QString::fromStdString(e.log);
}

// Sample standard deviation over the mean; 0 for fewer than two values or a zero mean.
double coefficientOfVariation(const std::vector<double>& v)
{
    if (v.size() < 2)
        return 0.0;
    double mean = 0, sq = 0;
    for (const double x : v)
        mean += x / static_cast<double>(v.size());
    for (const double x : v)
        sq += (x - mean) * (x - mean);
    return mean > 0 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) / mean : 0.0;
}

// --sanitize's answer: the report, and exit 1 when the tool found errors or could not finish.
int printSanitized(const SanitizerReport& r, bool json, QTextStream& out, QTextStream& err)
{
    if (json)
        out << QString::fromStdString(toJson(r).dump(2)) << "\n";
    else
        out << QString::fromStdString(formatSanitizerReport(r));
    if (!r.complete) {
        err << "ksearch eval: --sanitize: " << QString::fromStdString(r.problem) << "\n";
        return exitcode::Failure;
    }
    return r.errors > 0 ? exitcode::Failure : exitcode::Success;
}

} // namespace

int runEvalCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Compile, verify and benchmark a kernel file against a task."));
    parser.addPositionalArgument(
        QStringLiteral("file"), QStringLiteral("the kernel source (.cu, .cpp, or .py for PyTorch and Triton)"));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption task(
        QStringLiteral("task"), QStringLiteral("task name or folder (required)"), QStringLiteral("NAME|PATH"));
    const QCommandLineOption backend(QStringLiteral("backend"),
        QStringLiteral("cuda or host (default: cuda, host for a .cpp file)"), QStringLiteral("NAME"));
    const QCommandLineOption language(QStringLiteral("language"),
        QStringLiteral("cuda, cpp, triton or python (default: from the file: .cu, .cpp, .py; triton if it imports "
                       "triton)"),
        QStringLiteral("NAME"));
    const QCommandLineOption python(QStringLiteral("python"),
        QStringLiteral("the python3 with torch (and triton) for .py kernels (default: $KSEARCH_PYTHON, else python3)"),
        QStringLiteral("PATH"));
    const QCommandLineOption workloads(QStringLiteral("workloads"),
        QStringLiteral("only these workloads (uuids or unique prefixes)"), QStringLiteral("ID,..."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("print one JSON object instead of the table"));
    const QCommandLineOption repeat(QStringLiteral("repeat"),
        QStringLiteral("evaluate N times with one evaluator (spread, overhead)"), QStringLiteral("N"),
        QStringLiteral("1"));
    const QCommandLineOption seed(
        QStringLiteral("seed"), QStringLiteral("input seed (default: a random secret)"), QStringLiteral("N"));
    const QCommandLineOption maxSeconds(QStringLiteral("max-seconds"),
        QStringLiteral("timing-loop cap per workload (default 1)"), QStringLiteral("S"), QStringLiteral("1"));
    const QCommandLineOption timeout(QStringLiteral("timeout"),
        QStringLiteral("hard limit for the candidate's process, seconds"), QStringLiteral("S"));
    const QCommandLineOption keep(
        QStringLiteral("keep"), QStringLiteral("keep the scratch folder (runner jobs, inputs)"));
    const QCommandLineOption gap(QStringLiteral("gap"),
        QStringLiteral("with --repeat: seconds between repeats, as a search waits for its model (default 0); the next "
                       "runner starts during them"),
        QStringLiteral("S"), QStringLiteral("0"));
    const QCommandLineOption coldRunners(QStringLiteral("cold-runners"),
        QStringLiteral("start each runner when its candidate is ready instead of ahead (to measure what starting "
                       "ahead saves)"));
    const QCommandLineOption unconfined(QStringLiteral("unconfined"),
        QStringLiteral("run the candidate without namespaces or limits, to debug it (the result says so)"));
    const QCommandLineOption sanitize(QStringLiteral("sanitize"),
        QStringLiteral("instead of evaluating: run one call (the first workload's) under compute-sanitizer's TOOL "
                       "(memcheck, racecheck, initcheck or synccheck) and print what it found; exit 1 when it found "
                       "errors"),
        QStringLiteral("TOOL"));
    parser.addOptions({help, task, backend, language, python, workloads, json, repeat, gap, coldRunners, seed,
        maxSeconds, timeout, keep, sanitize, unconfined});
    if (const auto done = parseSubcommand(parser, arguments, QStringLiteral("ksearch eval"), out, err))
        return *done;
    const QStringList pos = parser.positionalArguments();
    if (!parser.isSet(task) || pos.size() != 1) {
        err << "ksearch eval: expected --task NAME|PATH and one kernel FILE\nTry 'ksearch eval --help'.\n";
        return exitcode::InvalidInput;
    }
    const std::filesystem::path file = pos[0].toStdString();
    std::optional<Language> lang = languageOfFile(file);
    if (parser.isSet(language)) {
        lang = parseLanguage(parser.value(language).toStdString());
        if (!lang) {
            err << "ksearch eval: --language: '" << parser.value(language) << "' is not a language ("
                << QString::fromStdString(languageNameList()) << ")\n";
            return exitcode::InvalidInput;
        }
    } else if (!lang) {
        err << "ksearch eval: " << pos[0]
            << ": cannot tell the language from the file name (.cu, .cpp or .py); name it with --language\n";
        return exitcode::InvalidInput;
    }
    const QString backendName = parser.isSet(backend) ? parser.value(backend)
        : *lang == Language::Cpp                      ? QStringLiteral("host")
                                                      : QStringLiteral("cuda");
    const auto b = parseBackend(backendName.toStdString());
    if (!b) {
        err << "ksearch eval: --backend: '" << backendName << "' is not a backend (cuda or host)\n";
        return exitcode::InvalidInput;
    }
    if (const std::string p = languageBackendProblem(*lang, backendName.toStdString()); !p.empty()) {
        err << "ksearch eval: " << pos[0] << ": " << QString::fromStdString(p) << "\n";
        return exitcode::InvalidInput;
    }
    std::optional<SanitizerTool> sanitizer;
    if (parser.isSet(sanitize)) {
        sanitizer = parseSanitizerTool(parser.value(sanitize).toStdString());
        if (!sanitizer) {
            err << "ksearch eval: --sanitize: '" << parser.value(sanitize) << "' is not a tool ("
                << QString::fromStdString(sanitizerToolList()) << ")\n";
            return exitcode::InvalidInput;
        }
        if (*lang != Language::Cuda || *b != Backend::Cuda) {
            err << "ksearch eval: --sanitize: compute-sanitizer checks CUDA kernels on the cuda backend, not "
                << QString::fromLatin1(languageName(*lang).data()) << " on " << backendName << "\n";
            return exitcode::InvalidInput;
        }
    }
    bool ok = true;
    const int repeats = parser.value(repeat).toInt(&ok);
    if (!ok || repeats < 1) {
        err << "ksearch eval: --repeat: '" << parser.value(repeat) << "' is not a positive integer\n";
        return exitcode::InvalidInput;
    }
    const double gapSeconds = parser.value(gap).toDouble(&ok);
    if (!ok || !std::isfinite(gapSeconds) || gapSeconds < 0) {
        err << "ksearch eval: --gap: '" << parser.value(gap) << "' is not a number of seconds >= 0\n";
        return exitcode::InvalidInput;
    }
    const double capSeconds = parser.value(maxSeconds).toDouble(&ok);
    if (!ok || capSeconds <= 0) {
        err << "ksearch eval: --max-seconds: '" << parser.value(maxSeconds) << "' is not a positive number\n";
        return exitcode::InvalidInput;
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
        err << "ksearch eval: " << pos[0] << ": no such file\n";
        return exitcode::InvalidInput;
    }
    auto loadedTask = loadNamedTask(parser.value(task), err);
    if (!loadedTask)
        return exitcode::InvalidInput;

    // Runner jobs (job.json, result.jsonl; buffers travel as shared memory, files only with --keep).
    QTemporaryDir scratch(QDir::tempPath() + QStringLiteral("/ksearch-eval-XXXXXX"));
    scratch.setAutoRemove(!parser.isSet(keep));
    EvaluatorSettings settings;
    settings.backend = *b;
    settings.language = lang;
    if (parser.isSet(python))
        settings.python = parser.value(python).toStdString();
    settings.workDir = scratch.path().toStdString();
    settings.writeInputFiles = parser.isSet(keep);
    settings.prestartRunners = !parser.isSet(coldRunners);
    settings.confineCandidates = !parser.isSet(unconfined);
    settings.bench.maxSeconds = capSeconds;
    if (parser.isSet(seed))
        settings.seed = parser.value(seed).toULongLong();
    if (parser.isSet(timeout))
        settings.runTimeout = std::chrono::milliseconds(static_cast<long>(parser.value(timeout).toDouble() * 1000));
    for (const QString& id : parser.value(workloads).split(u',', Qt::SkipEmptyParts))
        settings.workloadIds.push_back(id.trimmed().toStdString());
    for (const auto& id : settings.workloadIds)
        if (!loadedTask->workload(id)) {
            err << "ksearch eval: --workloads: no workload '" << QString::fromStdString(id) << "' in "
                << QString::fromStdString(loadedTask->definition.name) << " (or the prefix is ambiguous)\n";
            return exitcode::InvalidInput;
        }
    Evaluator evaluator(std::move(*loadedTask), settings);
    if (const auto problem = evaluator.environmentProblem()) {
        err << "ksearch eval: the " << backendName << " backend is not available for "
            << QString::fromLatin1(languageName(*lang).data()) << " kernels: " << QString::fromStdString(*problem)
            << "\n";
        return exitcode::Environment;
    }

    if (sanitizer && computeSanitizerPath().empty()) {
        err << "ksearch eval: --sanitize: compute-sanitizer was not found (it ships with the CUDA toolkit: beside "
               "nvcc, in /usr/local/cuda/bin, or on PATH; KSEARCH_COMPUTE_SANITIZER names it)\n";
        return exitcode::Environment;
    }
    if (sanitizer)
        return printSanitized(evaluator.sanitize(file, *sanitizer), parser.isSet(json), out, err);

    std::vector<Evaluation> runs;
    for (int i = 0; i < repeats; ++i) {
        if (i > 0 && gapSeconds > 0) // the model's turn in a search: outside every evaluation's clock
            std::this_thread::sleep_for(std::chrono::duration<double>(gapSeconds));
        runs.push_back(evaluator.evaluate(file));
        if (!parser.isSet(json) && repeats > 1)
            err << "run " << (i + 1) << "/" << repeats << ": "
                << QString::fromLatin1(verdictName(runs.back().status).data()) << " J=" << num(runs.back().score, 1)
                << " latency " << num(runs.back().latencyMicros, 3) << " us, " << num(runs.back().totalSeconds)
                << " s\n";
    }
    const Evaluation& last = runs.back();
    if (last.log.find("the task could not be prepared") != std::string::npos) {
        err << "ksearch eval: " << QString::fromStdString(last.log);
        return exitcode::InvalidInput;
    }
    if (last.status == Verdict::HarnessError) { // says nothing about the kernel
        err << "ksearch eval: the evaluator failed before running the kernel: " << QString::fromStdString(last.log);
        return exitcode::Environment;
    }
    // Repeats after the first reuse the compiled kernel, expected outputs and baseline: their
    // spread is the measurement's, and what they spend beyond the timed loop is the overhead.
    nlohmann::json summary;
    if (repeats > 1) {
        double mean = 0, overhead = 0;
        std::vector<double> latencies;
        for (const auto& r : runs) {
            latencies.push_back(r.latencyMicros);
            mean += r.latencyMicros / repeats;
        }
        const double cv = coefficientOfVariation(latencies);
        for (std::size_t i = 1; i < runs.size(); ++i)
            overhead += runs[i].totalSeconds - runs[i].compileSeconds - runs[i].timedGpuSeconds;
        overhead /= static_cast<double>(runs.size() - 1);
        std::map<std::string, double> phases; // mean over repeats 2..N
        for (std::size_t i = 1; i < runs.size(); ++i)
            for (const auto& [phase, s] : runs[i].phases)
                phases[phase] += s / static_cast<double>(runs.size() - 1);
        // Per workload too: which workloads the aggregate's spread comes from.
        nlohmann::json perWorkload = nlohmann::json::object();
        for (std::size_t w = 0; w < last.workloads.size(); ++w) {
            std::vector<double> v;
            for (const auto& r : runs)
                if (w < r.workloads.size())
                    v.push_back(r.workloads[w].latencyMicros);
            perWorkload[last.workloads[w].id.substr(0, 8)] = coefficientOfVariation(v);
        }
        summary = {{"runs", repeats}, {"latency_mean_us", mean}, {"latency_cv", cv},
            {"workload_latency_cv", perWorkload}, {"overhead_seconds_per_candidate", overhead},
            {"phases_mean_s", phases}};
        if (!parser.isSet(json))
            out << "repeats: " << repeats << ", latency mean " << num(mean, 3) << " us, CV " << num(100 * cv, 3)
                << "%, evaluator overhead per candidate " << num(overhead, 3) << " s (repeats 2.." << repeats << ")\n";
        if (!parser.isSet(json)) {
            out << "phases (mean s):";
            for (const auto& [phase, s] : phases)
                out << " " << QString::fromStdString(phase) << " " << num(s, 3);
            out << "\n";
        }
    }
    if (parser.isSet(json)) {
        nlohmann::json j = toJson(last);
        if (repeats > 1)
            j["repeats"] = summary;
        out << QString::fromStdString(j.dump(2)) << "\n";
    } else {
        printTable(last, out);
    }
    if (parser.isSet(keep))
        err << "scratch folder kept: " << scratch.path() << "\n";
    return exitcode::Success;
}

} // namespace ks::cli
