// `ksearch tasks list|show|check`.

#include "cli.h"
#include "commandsupport.h"
#include "exitcodes.h"

#include <task/abiheader.h>
#include <task/fibimport.h>
#include <task/inputgenerator.h>
#include <task/taskcatalog.h>
#include <util/qtext.h>

#include <QCommandLineParser>
#include <QTemporaryDir>
#include <QTextStream>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <taskcheck.h>

namespace ks::cli {

namespace {

std::string humanBytes(double bytes)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    std::ostringstream s;
    s << std::setprecision(bytes < 10 ? 2 : 3) << bytes << " " << units[u];
    return s.str();
}

std::string humanCount(double v)
{
    std::ostringstream s;
    if (v >= 1e9)
        s << std::setprecision(3) << v / 1e9 << " G";
    else if (v >= 1e6)
        s << std::setprecision(3) << v / 1e6 << " M";
    else if (v >= 1e3)
        s << std::setprecision(3) << v / 1e3 << " k";
    else
        s << v << " ";
    return s.str();
}

int listTasksCommand(QTextStream& out)
{
    const auto tasks = listTasks();
    if (tasks.empty()) {
        out << "No tasks found. Searched:\n";
        for (const auto& dir : taskSearchPath())
            out << "  " << q(dir.string()) << "\n";
        return exitcode::Success;
    }
    out << qSetFieldWidth(0)
        << QStringLiteral("%1  %2  %3  %4  %5\n")
               .arg(QStringLiteral("NAME"), -40)
               .arg(QStringLiteral("OP"), -12)
               .arg(QStringLiteral("WORKLOADS"), 9)
               .arg(QStringLiteral("STATUS"), -8)
               .arg(QStringLiteral("PATH"));
    for (const auto& entry : tasks) {
        const auto result = loadTask(entry.dir);
        const bool ok = result.task.has_value();
        out << QStringLiteral("%1  %2  %3  %4  %5\n")
                   .arg(q(entry.name), -40)
                   .arg(ok ? q(result.task->definition.opType) : QStringLiteral("?"), -12)
                   .arg(ok ? QString::number(result.task->workloads.size()) : QStringLiteral("-"), 9)
                   .arg(ok ? QStringLiteral("ok") : QStringLiteral("invalid"), -8)
                   .arg(q(entry.dir.string()));
    }
    return exitcode::Success;
}

void showTask(const Task& task, QTextStream& out)
{
    const Definition& d = task.definition;
    out << q(d.name) << " (" << q(d.opType) << ")\n";
    if (!d.description.empty())
        out << "  " << q(d.description) << "\n";
    out << "  folder: " << q(task.dir.string()) << "\n";
    out << "\nAxes:\n";
    for (const auto& a : d.axes)
        out << "  " << QStringLiteral("%1").arg(q(a.name), -20)
            << (a.isConst ? QStringLiteral("const %1").arg(a.value) : QStringLiteral("var")) << "\n";
    auto tensors = [&](const char* title, const std::vector<TensorSpec>& list) {
        out << "\n" << title << ":\n";
        for (const auto& t : list) {
            QString shape = QStringLiteral("scalar");
            if (t.shape) {
                QStringList dims;
                for (const auto& dim : *t.shape)
                    dims << q(dim);
                shape = u'[' + dims.join(QStringLiteral(", ")) + u']';
            }
            out << "  "
                << QStringLiteral("%1 %2 %3")
                       .arg(q(t.name), -20)
                       .arg(q(std::string(dtypeName(t.dtype))), -14)
                       .arg(shape)
                << "\n";
        }
    };
    tensors("Inputs", d.inputs);
    tensors("Outputs", d.outputs);
    if (!d.constraints.empty()) {
        out << "\nConstraints:\n";
        for (const auto& c : d.constraints)
            out << "  " << q(c) << "\n";
    }
    out << "\nTolerance: atol " << d.tolerance.atol << ", rtol " << d.tolerance.rtol << ", required matched ratio "
        << d.tolerance.requiredMatchedRatio << "\n";
    if (d.costModel)
        out << "Cost model: bytes = " << q(d.costModel->bytes) << "; flops = " << q(d.costModel->flops) << "\n";
    else
        out << "Cost model: none (the roofline floor check is off for this task)\n";

    out << "\nWorkloads (" << task.workloads.size() << "):\n";
    for (const auto& w : task.workloads) {
        QStringList axes;
        for (const auto* a : d.varAxes())
            axes << QStringLiteral("%1=%2").arg(q(a->name)).arg(w.axes.at(a->name));
        QString cost;
        if (d.costModel) {
            const InputGenerator gen(d, w, 0);
            const double bytes = gen.evaluate(d.costModel->bytes).value_or(0);
            const double flops = gen.evaluate(d.costModel->flops).value_or(0);
            cost = QStringLiteral("  moves %1, %2FLOP").arg(q(humanBytes(bytes)), q(humanCount(flops)));
        }
        // Held out: verified and timed, never shown to the code policy nor counted in J; scored: J is
        // taken over the scored workloads alone where the task lists any.
        QString role;
        if (d.holdsOut(w.uuid))
            role = QStringLiteral("  (held out)");
        else if (std::find(d.scoredWorkloads.begin(), d.scoredWorkloads.end(), w.uuid) != d.scoredWorkloads.end())
            role = QStringLiteral("  (scored)");
        out << "  " << QStringLiteral("%1").arg(q(w.uuid), -38) << axes.join(u' ') << cost << role << "\n";
    }
    out << "\nFiles:\n";
    auto file = [&](const char* label, const std::optional<std::filesystem::path>& p) {
        out << "  " << QStringLiteral("%1").arg(QLatin1String(label), -18)
            << (p ? q(p->filename().string()) : QStringLiteral("(none)")) << "\n";
    };
    file("reference", task.files.referenceCpp);
    file("PyTorch reference", task.files.referencePy);
    file("GPU reference", task.files.referenceCu);
    file("CUDA baseline", task.files.baselineCu);
    file("host baseline", task.files.baselineCpp);
}

int checkTaskCommand(const QString& name, TaskCheckOptions options, bool keep, QTextStream& out, QTextStream& err)
{
    const auto task = loadNamedTask(name, err);
    if (!task)
        return exitcode::InvalidInput;
    out << q(task->definition.name) << ": definition.json and " << task->workloads.size() << " workloads are valid\n";
    out.flush();
    QTemporaryDir scratch;
    scratch.setAutoRemove(!keep);
    if (!scratch.isValid()) {
        err << "ksearch: cannot create a scratch folder: " << scratch.errorString() << "\n";
        return exitcode::Environment;
    }
    options.workDir = scratch.path().toStdString();
    options.progress = [&](const std::string& line) {
        out << "  " << q(line) << "\n";
        out.flush();
    };
    const auto report = checkTask(*task, options);
    if (keep)
        out << "scratch folder kept: " << scratch.path() << "\n";
    switch (report.outcome) {
    case TaskCheckReport::Outcome::Passed:
        out << q(task->definition.name) << ": ok\n";
        return exitcode::Success;
    case TaskCheckReport::Outcome::TaskInvalid:
        err << "ksearch: " << q(task->dir.string()) << ": check failed\n";
        return exitcode::InvalidInput;
    case TaskCheckReport::Outcome::EnvironmentProblem:
        err << "ksearch: environment problem: " << q(report.lines.empty() ? std::string() : report.lines.back())
            << "\n";
        return exitcode::Environment;
    }
    return exitcode::Failure;
}

} // namespace

int runTasksCommand(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Inspect and validate kernel tasks."));
    parser.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, show, check or import"));
    parser.addPositionalArgument(QStringLiteral("task"),
        QStringLiteral("a task name or folder (show, check), or a FlashInfer-Bench definition JSON (import)"));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption abi(QStringLiteral("abi"), QStringLiteral("show: print the generated ks_task.h"));
    const QCommandLineOption workloads(QStringLiteral("workloads"),
        QStringLiteral("check: how many of the smallest workloads to compare (default 3); import: the definition's "
                       "workloads (FlashInfer-Bench JSON lines)"),
        QStringLiteral("N|FILE"), QStringLiteral("3"));
    const QCommandLineOption ids(QStringLiteral("ids"),
        QStringLiteral("check: compare these workloads (comma-separated uuids or prefixes)"), QStringLiteral("ID,..."));
    const QCommandLineOption backend(QStringLiteral("backend"),
        QStringLiteral("check: host (default) or cuda, which also runs reference.cu and baseline.cu on the GPU"),
        QStringLiteral("NAME"), QStringLiteral("host"));
    const QCommandLineOption keep(QStringLiteral("keep"), QStringLiteral("check: keep the scratch folder"));
    const QCommandLineOption python(QStringLiteral("python"),
        QStringLiteral("check: the python3 with torch that runs reference.py (default: $KSEARCH_PYTHON, else python3)"),
        QStringLiteral("PATH"));
    const QCommandLineOption blobs(QStringLiteral("blobs"),
        QStringLiteral("import: the dataset root of the workloads' safetensors paths (default: found above the "
                       "workloads file)"),
        QStringLiteral("DIR"));
    const QCommandLineOption outDir(QStringLiteral("out"),
        QStringLiteral("import: the task folder to create (default: ./NAME, after the definition file)"),
        QStringLiteral("DIR"));
    parser.addOptions({help, abi, workloads, ids, backend, keep, python, blobs, outDir});
    if (const auto done = parseSubcommand(parser, arguments, QStringLiteral("ksearch tasks"), out, err))
        return *done;
    const QStringList pos = parser.positionalArguments();
    const QString action = pos.value(0);
    if (action == u"list" && pos.size() == 1)
        return listTasksCommand(out);
    if (action == u"import" && pos.size() == 2) {
        FibImportOptions options;
        options.definition = pos[1].toStdString();
        if (parser.isSet(workloads))
            options.workloads = parser.value(workloads).toStdString();
        if (parser.isSet(blobs))
            options.blobs = parser.value(blobs).toStdString();
        options.out = parser.isSet(outDir) ? std::filesystem::path(parser.value(outDir).toStdString())
                                           : std::filesystem::path(options.definition.stem());
        const FibImportResult r = importFibTask(options);
        for (const auto& e : r.errors)
            err << "ksearch tasks import: " << q(e) << "\n";
        if (!r.ok())
            return exitcode::InvalidInput;
        out << "imported " << q(options.definition.filename().string()) << " into " << q(options.out.string()) << "\n";
        for (const auto& n : r.notes)
            out << "  " << q(n) << "\n";
        out << "check it with: ksearch tasks check " << q(options.out.string()) << "\n";
        return exitcode::Success;
    }
    if ((action == u"show" || action == u"check") && pos.size() == 2) {
        if (action == u"show") {
            const auto task = loadNamedTask(pos[1], err);
            if (!task)
                return exitcode::InvalidInput;
            if (parser.isSet(abi))
                out << q(generateAbiHeader(task->definition));
            else
                showTask(*task, out);
            return exitcode::Success;
        }
        bool ok = false;
        const int n = parser.value(workloads).toInt(&ok);
        if (!ok || n < 1) {
            err << "ksearch tasks: --workloads: '" << parser.value(workloads) << "' is not a positive integer\n";
            return exitcode::InvalidInput;
        }
        TaskCheckOptions options;
        options.maxWorkloads = n;
        for (const QString& id : parser.value(ids).split(u',', Qt::SkipEmptyParts))
            options.workloadIds.push_back(id.trimmed().toStdString());
        const QString b = parser.value(backend);
        if (b != u"host" && b != u"cuda") {
            err << "ksearch tasks: --backend: '" << b << "' is not a backend (host or cuda)\n";
            return exitcode::InvalidInput;
        }
        options.cuda = b == u"cuda";
        options.python = parser.value(python).toStdString();
        return checkTaskCommand(pos[1], options, parser.isSet(keep), out, err);
    }
    err << "ksearch tasks: expected 'list', 'show NAME|PATH', 'check NAME|PATH' or 'import DEFINITION.json'\n"
           "Try 'ksearch tasks --help'.\n";
    return exitcode::InvalidInput;
}

} // namespace ks::cli
