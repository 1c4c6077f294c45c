#include "cli.h"

#include "exitcodes.h"

#include <util/logging.h>

#include <QTextStream>

#include <spdlog/spdlog.h>

namespace ks::cli {

namespace {

const QStringList kCommands {QStringLiteral("gui"), QStringLiteral("tasks"), QStringLiteral("eval"),
    QStringLiteral("llm"), QStringLiteral("run"), QStringLiteral("export"), QStringLiteral("worker")};

struct Split {
    GlobalOptions global;
    QString command;
    QStringList rest;
    QString error;
    bool help = false;
    bool version = false;
};

Split splitArguments(const QStringList& arguments)
{
    Split s;
    int i = 1;
    for (; i < arguments.size(); ++i) {
        const QString& a = arguments[i];
        if (a == u"--verbose" || a == u"-v") {
            s.global.verbose = true;
        } else if (a == u"--help" || a == u"-h") {
            s.help = true;
        } else if (a == u"--version" || a == u"-V") {
            s.version = true;
        } else if (a == u"--log-file") {
            if (i + 1 >= arguments.size()) {
                s.error = QStringLiteral("--log-file needs a file name");
                return s;
            }
            s.global.logFile = arguments[++i];
        } else if (a.startsWith(u"--log-file=")) {
            s.global.logFile = a.mid(11);
        } else if (a.startsWith(u'-')) {
            s.error = QStringLiteral("unknown option '%1'").arg(a);
            return s;
        } else {
            break;
        }
    }
    if (i < arguments.size()) {
        s.command = arguments[i];
        s.rest = QStringList {QStringLiteral("ksearch ") + s.command} + arguments.mid(i + 1);
    }
    return s;
}

} // namespace

QString usageText()
{
    return QStringLiteral(
        "Usage: ksearch [--verbose] [--log-file FILE] [COMMAND [ARGS]]\n"
        "\n"
        "K-Search Studio: an LLM-driven search for fast GPU kernels that you can watch and steer.\n"
        "With no command, opens the desktop window.\n"
        "\n"
        "Commands:\n"
        "  gui                    open the desktop window\n"
        "  tasks list             list the tasks on the search path\n"
        "  tasks show NAME|PATH   show a task's axes, tensors, workloads and files (--abi: its ks_task.h)\n"
        "  tasks check NAME|PATH  validate a task, then compile reference.cpp and baseline.cpp on the host\n"
        "                         and compare them on the smallest workloads (--backend cuda: the .cu too)\n"
        "  eval --task NAME FILE  compile, verify and benchmark a kernel: per-workload table and score J\n"
        "                         (--backend cuda|host, --workloads ID,..., --json, --repeat N)\n"
        "  run --task NAME --session DIR --provider NAME --model NAME\n"
        "                         run a search (--strategy, --budget, --k, --backend, --seed, --coder-*,\n"
        "                         --target, --max-time, --max-dollars; --resume to continue a session)\n"
        "  export --session DIR --out DIR\n"
        "                         best kernel, report, tree (JSON, SVG) and a FlashInfer-Bench solution\n"
        "  worker                 evaluate candidates sent as JSON lines on stdin, answers on stdout\n"
        "                         (the trusted worker of remote and parallel searches; docs/workers.md)\n"
        "  llm ping --provider NAME --model NAME\n"
        "                         one short exchange with a model: answer, latency, tokens, cost\n"
        "                         (--base-url URL, --command CMD, --replay FILE, --prices FILE)\n"
        "\n"
        "Options:\n"
        "  -h, --help             show this help (ksearch COMMAND --help for a command's own)\n"
        "  -V, --version          print the version\n"
        "  -v, --verbose          debug messages on the console\n"
        "      --log-file FILE    log file (default: under the user's data folder; '-' for none)\n"
        "\n"
        "Exit codes: 0 success, 2 usage or invalid input, 3 environment problem (toolkit, GPU).\n");
}

bool wantsGui(const QStringList& arguments)
{
    const Split s = splitArguments(arguments);
    return s.error.isEmpty() && !s.help && !s.version && (s.command.isEmpty() || s.command == u"gui");
}

int dispatch(const QStringList& arguments)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    const Split s = splitArguments(arguments);
    if (!s.error.isEmpty()) {
        err << "ksearch: " << s.error << "\n"
            << "Try 'ksearch --help'.\n";
        return exitcode::InvalidInput;
    }
    if (s.version) {
        out << "ksearch " << KSEARCH_VERSION << "\n";
        return exitcode::Success;
    }
    if (s.help && s.command.isEmpty()) {
        out << usageText();
        return exitcode::Success;
    }
    if (!s.command.isEmpty() && !kCommands.contains(s.command)) {
        err << "ksearch: unknown command '" << s.command << "'\nTry 'ksearch --help'.\n";
        return exitcode::InvalidInput;
    }
    LoggingOptions logging;
    logging.verbose = s.global.verbose;
    logging.logFile = s.global.logFile.toStdString();
    const std::string logPath = setupLogging(logging);
    spdlog::debug("ksearch {} started: {}", KSEARCH_VERSION, arguments.join(u' ').toStdString());
    if (!logPath.empty())
        spdlog::debug("logging to {}", logPath);

    QStringList rest = s.rest;
    if (s.help)
        rest << QStringLiteral("--help");
    if (s.command == u"tasks")
        return runTasksCommand(rest, s.global);
    if (s.command == u"eval")
        return runEvalCommand(rest, s.global);
    if (s.command == u"llm")
        return runLlmCommand(rest, s.global);
    if (s.command == u"run")
        return runRunCommand(rest, s.global);
    if (s.command == u"export")
        return runExportCommand(rest, s.global);
    if (s.command == u"worker")
        return runWorkerCommand(rest, s.global);
    return runGui(rest.isEmpty() ? QStringList {QStringLiteral("ksearch gui")} : rest, s.global);
}

} // namespace ks::cli
