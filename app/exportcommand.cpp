// `ksearch export`: the results of a session as files to keep or share.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"
#include "exportdispatch.h"

#include <session/exporter.h>

#include <QTextStream>

namespace ks::cli {

int runExportCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        u"Write a session's best kernel, a markdown report, the tree as JSON and SVG, and a FlashInfer-Bench "
        "solution into a folder."_qs);
    const QCommandLineOption help({u"h"_qs, u"help"_qs}, u"Show this help."_qs);
    const QCommandLineOption session(u"session"_qs, u"the session folder"_qs, u"DIR"_qs);
    const QCommandLineOption outDir(u"out"_qs, u"where to write (created)"_qs, u"DIR"_qs);
    const QCommandLineOption dispatch(u"dispatch"_qs,
        u"also write dispatch.cu/.cpp: one kernel that runs each workload shape's fastest attempt, measured next to "
        "the best single kernel before it is written (the session's backend must be available here)"_qs);
    const QCommandLineOption benchSeconds(
        u"bench-seconds"_qs, u"with --dispatch: the timing loop's cap per workload (default 1)"_qs, u"S"_qs, u"1"_qs);
    const QCommandLineOption python(u"python"_qs, u"with --dispatch: the python3 for a reference.py"_qs, u"PATH"_qs);
    const QCommandLineOption unconfined(u"unconfined"_qs,
        u"with --dispatch: measure the kernels without namespaces or limits, to debug them (the record says so)"_qs);
    parser.addOptions({help, session, outDir, dispatch, benchSeconds, python, unconfined});
    if (const auto done = parseSubcommand(parser, arguments, u"ksearch export"_qs, out, err))
        return *done;
    if (!parser.isSet(session) || !parser.isSet(outDir)) {
        err << "ksearch export: --session DIR and --out DIR are required\nTry 'ksearch export --help'.\n";
        return exitcode::InvalidInput;
    }
    std::string error;
    auto s = Session::open(parser.value(session).toStdString(), error);
    if (!s) {
        err << "ksearch export: " << QString::fromStdString(error) << "\n";
        return exitcode::InvalidInput;
    }
    const auto state = s->loadState(error);
    if (!state) {
        err << "ksearch export: " << QString::fromStdString(error) << "\n";
        return exitcode::InvalidInput;
    }
    auto loaded = loadTask(s->config().taskDir);
    if (!loaded.task)
        err << "ksearch export: warning: the task folder " << QString::fromStdString(s->config().taskDir.string())
            << " cannot be loaded; workloads are named by uuid\n";
    const ExportResult r =
        exportSession(*s, *state, loaded.task ? &*loaded.task : nullptr, parser.value(outDir).toStdString());
    if (!r.error.empty()) {
        err << "ksearch export: " << QString::fromStdString(r.error) << "\n";
        return exitcode::Failure;
    }
    for (const auto& f : r.files)
        out << QString::fromStdString(f.string()) << "\n";
    for (const auto& w : r.warnings)
        err << "ksearch export: warning: " << QString::fromStdString(w) << "\n";
    if (!parser.isSet(dispatch))
        return exitcode::Success;
    if (!loaded.task) {
        err << "ksearch export --dispatch: the task folder is needed to measure the dispatching kernel\n";
        return exitcode::InvalidInput;
    }
    bool ok = false;
    DispatchOptions options;
    options.benchSeconds = parser.value(benchSeconds).toDouble(&ok);
    if (!ok || options.benchSeconds <= 0) {
        err << "ksearch export: --bench-seconds: '" << parser.value(benchSeconds) << "' is not a number above 0\n";
        return exitcode::InvalidInput;
    }
    options.python = parser.value(python).toStdString();
    options.confine = !parser.isSet(unconfined);
    const int rc = exportDispatch(*s, *state, *loaded.task, parser.value(outDir).toStdString(), options, out, err);
    return rc == 0 ? exitcode::Success : rc == 3 ? exitcode::Environment : exitcode::Failure;
}

} // namespace ks::cli
