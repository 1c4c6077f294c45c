// `ksearch worker`: the trusted evaluation worker (docs/workers.md, gpu/workerprotocol.h). Reads
// requests from stdin, one JSON object a line, and answers each on stdout; logs go to stderr.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"

#include <task/taskcatalog.h>

#include <QCommandLineParser>
#include <QDir>
#include <QTemporaryDir>
#include <QTextStream>

#include <iostream>
#include <worker.h>

namespace ks::cli {

int runWorkerCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Evaluate candidates sent on stdin as JSON lines (the protocol of docs/workers.md) and answer on stdout."));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption scratch(QStringLiteral("scratch"),
        QStringLiteral("folder for runner jobs and candidates (default: a temporary one, removed at exit)"),
        QStringLiteral("DIR"));
    const QCommandLineOption python(QStringLiteral("python"),
        QStringLiteral("the python3 with torch (and triton) for Python candidates and reference.py (default: "
                       "$KSEARCH_PYTHON, else python3)"),
        QStringLiteral("PATH"));
    parser.addOptions({help, scratch, python});
    if (const auto done = parseSubcommand(parser, arguments, QStringLiteral("ksearch worker"), out, err))
        return *done;
    QTemporaryDir temporary(QDir::tempPath() + QStringLiteral("/ksearch-worker-XXXXXX"));
    const std::string scratchDir =
        parser.isSet(scratch) ? parser.value(scratch).toStdString() : temporary.path().toStdString();

    worker::Worker w(KSEARCH_VERSION, scratchDir, [](const std::string& nameOrPath, std::string& error) {
        const auto dir = resolveTask(nameOrPath, error);
        if (!dir)
            return std::optional<Task>();
        auto loaded = loadTask(*dir);
        if (!loaded.task)
            error = loaded.diagnostics.formatAll();
        return std::move(loaded.task);
    });
    if (parser.isSet(python))
        w.setPython(parser.value(python).toStdString());
    // Plain std streams: stdout carries the protocol alone, one flushed line per reply.
    for (std::string line; std::getline(std::cin, line);) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        const worker::Worker::Reply reply = w.handle(line);
        std::cout << reply.line.dump() << "\n" << std::flush;
        if (reply.quit)
            return reply.exitCode;
    }
    return exitcode::Success;
}

} // namespace ks::cli
