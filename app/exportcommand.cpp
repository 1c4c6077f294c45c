// `ksearch export`: the results of a session as files to keep or share.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"

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
    parser.addOptions({help, session, outDir});
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
    return exitcode::Success;
}

} // namespace ks::cli
