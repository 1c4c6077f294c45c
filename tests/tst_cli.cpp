#include "testmain.h"
#include "testsupport.h"

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

using namespace ks;
namespace fs = std::filesystem;

class TestCli : public QObject
{
    Q_OBJECT
private slots:
    void version();
    void help();
    void usageErrors_data();
    void usageErrors();
    void tasksList();
    void tasksShow();
    void tasksShowAbi();
    void tasksCheckPasses();
    void malformedTaskCopies_data();
    void malformedTaskCopies();
    void logFileAndVerbose();
    void evalTableAndJson();
    void evalWithoutGpuIsAnEnvironmentProblem();
};

void TestCli::version()
{
    const auto r = test::runProgram(u"ksearch"_qs, {u"--version"_qs});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out.trimmed(), u"ksearch " KSEARCH_VERSION ""_qs);
}

void TestCli::help()
{
    const auto r = test::runProgram(u"ksearch"_qs, {u"--help"_qs});
    QCOMPARE(r.exitCode, 0);
    for (const char* word : {"tasks list", "tasks show", "tasks check", "--verbose", "Exit codes"})
        QVERIFY2(r.out.contains(QLatin1String(word)), word);
    const auto sub = test::runProgram(u"ksearch"_qs, {u"tasks"_qs, u"--help"_qs});
    QCOMPARE(sub.exitCode, 0);
    QVERIFY(sub.out.contains(u"--workloads"));
}

void TestCli::usageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown option") << QStringList {u"--frobnicate"_qs} << "unknown option '--frobnicate'";
    QTest::newRow("unknown command") << QStringList {u"launch"_qs} << "unknown command 'launch'";
    QTest::newRow("tasks without action") << QStringList {u"tasks"_qs} << "expected 'list'";
    QTest::newRow("tasks unknown flag") << QStringList {u"tasks"_qs, u"list"_qs, u"--bogus"_qs}
                                        << "Unknown option 'bogus'";
    QTest::newRow("bad workload count") << QStringList {u"tasks"_qs, u"check"_qs, u"--workloads"_qs, u"zero"_qs,
        u"rmsnorm"_qs} << "--workloads: 'zero'";
    QTest::newRow("unknown task") << QStringList {u"tasks"_qs, u"show"_qs, u"no_such_task"_qs}
                                  << "no task named 'no_such_task'";
    QTest::newRow("missing folder") << QStringList {u"tasks"_qs, u"check"_qs, u"./does/not/exist"_qs}
                                    << "no such task folder";
    QTest::newRow("log file without name") << QStringList {u"--log-file"_qs} << "--log-file needs a file name";
    const QString cu = QString::fromStdString((test::tasksDir() / "rmsnorm" / "baseline.cu").string());
    const QString cpp = QString::fromStdString((test::tasksDir() / "rmsnorm" / "baseline.cpp").string());
    QTest::newRow("sanitize with an unknown tool")
        << QStringList {u"eval"_qs, u"--task"_qs, u"rmsnorm"_qs, u"--sanitize"_qs, u"asan"_qs, cu}
        << "--sanitize: 'asan' is not a tool (memcheck, racecheck, initcheck or synccheck)";
    QTest::newRow("sanitize a host kernel")
        << QStringList {u"eval"_qs, u"--task"_qs, u"rmsnorm"_qs, u"--sanitize"_qs, u"memcheck"_qs, cpp}
        << "--sanitize: compute-sanitizer checks CUDA kernels on the cuda backend, not cpp on host";
}

void TestCli::usageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const auto r = test::runProgram(u"ksearch"_qs, args);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
}

void TestCli::tasksList()
{
    const auto r = test::runProgram(u"ksearch"_qs, {u"tasks"_qs, u"list"_qs});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains(u"NAME"));
    const auto line = r.out.split(u'\n').filter(u"rmsnorm"_qs).value(0);
    QVERIFY2(line.contains(u" ok "), qPrintable(r.out));
}

void TestCli::tasksShow()
{
    const auto r = test::runProgram(u"ksearch"_qs, {u"tasks"_qs, u"show"_qs, u"rmsnorm"_qs});
    QCOMPARE(r.exitCode, 0);
    for (const char* text :
        {"hidden_states", "bfloat16", "[batch_size, hidden_size]", "batch_size=16384", "Cost model", "baseline.cu"})
        QVERIFY2(r.out.contains(QLatin1String(text)), text);
    // The task's held-out workloads are marked as such, the shown ones are not.
    const QStringList lines = r.out.split(u'\n');
    const auto lineOf = [&](QLatin1String uuid) {
        for (const QString& line : lines)
            if (line.contains(uuid))
                return line;
        return QString();
    };
    QVERIFY2(lineOf(QLatin1String("933a3f15")).contains(u"(held out)"_qs), qPrintable(r.out));
    QVERIFY2(
        !lineOf(QLatin1String("e316a464")).isEmpty() && !lineOf(QLatin1String("e316a464")).contains(u"held out"_qs),
        qPrintable(r.out));
}

void TestCli::tasksShowAbi()
{
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"tasks"_qs, u"show"_qs, u"--abi"_qs, QString::fromStdString((test::tasksDir() / "rmsnorm").string())});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains(u"const ks_bf16_t* hidden_states;"));
    QVERIFY(r.out.contains(u"int ks_run(const KsArgs* args"));
}

void TestCli::tasksCheckPasses()
{
    const auto r = test::runProgram(u"ksearch"_qs, {u"tasks"_qs, u"check"_qs, u"rmsnorm"_qs});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY(r.out.contains(u"compiled reference.cpp"));
    QVERIFY(r.out.contains(u"compiled baseline.cpp"));
    QCOMPARE(r.out.count(u"baseline.cpp vs reference.cpp: output: ok"), 3);
    QVERIFY(r.out.trimmed().endsWith(u"rmsnorm: ok"));
}

// Each row breaks one thing in a copy of tasks/rmsnorm; `tasks check` must exit 2 and name the
// file and the field (or, for code, the file and what went wrong).
void TestCli::malformedTaskCopies_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("fileInMessage");
    QTest::addColumn<QString>("fieldInMessage");

    const QString def = u"definition.json"_qs, wl = u"workloads.jsonl"_qs;
    QTest::newRow("bad dtype") << def << R"("dtype": "bfloat16", "description": "per-column scale")"
                               << R"("dtype": "bf16", "description": "per-column scale")" << def
                               << "inputs.weight.dtype: unknown dtype 'bf16'";
    QTest::newRow("unknown axis in a shape")
        << def << R"("shape": ["hidden_size"])"
        << R"("shape": ["hidden"])" << def << "inputs.weight.shape[0]: unknown axis 'hidden'";
    QTest::newRow("missing name") << def << R"("name": "rmsnorm",)"
                                  << "" << def << "name: missing";
    QTest::newRow("duplicate key") << def << R"("eps": {)"
                                   << R"("weight": {)" << def << "duplicate key 'weight'";
    QTest::newRow("negative tolerance") << def << R"("rtol": 0.01)"
                                        << R"("rtol": -0.01)" << def << "tolerance.rtol";
    QTest::newRow("bad cost model") << def << R"("flops": "4 * batch_size * hidden_size")"
                                    << R"("flops": "4 * batch_size * seq_len")" << def
                                    << "cost_model.flops: unknown name 'seq_len'";
    QTest::newRow("scored workload unknown") << def << R"("name": "rmsnorm",)"
                                             << R"("name": "rmsnorm", "scored_workloads": ["no-such-workload"],)" << def
                                             << "scored_workloads[0]: 'no-such-workload' is not the uuid of a workload";
    // rmsnorm holds two workloads out (scripts/held_out_workloads.py): the rows change its list.
    QTest::newRow("held-out workload unknown")
        << def << R"("held_out_workloads": [)"
        << R"("held_out_workloads": ["no-such-workload",)" << def
        << "held_out_workloads[0]: 'no-such-workload' is not the uuid of a workload";
    QTest::newRow("held-out workload also scored")
        << def << R"("held_out_workloads": [)"
        << R"("scored_workloads": ["933a3f15-9b39-5573-a348-b2daa4899dae"], "held_out_workloads": [)" << def
        << "held_out_workloads[0]: '933a3f15-9b39-5573-a348-b2daa4899dae' is also in scored_workloads";
    QTest::newRow("missing var axis") << wl << R"("axes": {"batch_size": 7, "hidden_size": 4096})"
                                      << R"("axes": {"batch_size": 7})" << u"workloads.jsonl:3"_qs
                                      << "workload.axes.hidden_size: missing";
    QTest::newRow("unknown axis in a workload") << wl << R"("axes": {"batch_size": 1, "hidden_size": 7168})"
                                                << R"("axes": {"batch_size": 1, "hidden_size": 7168, "seq_len": 3})"
                                                << u"workloads.jsonl:2"_qs << "workload.axes.seq_len: unknown axis";
    QTest::newRow("constraint violated") << wl << R"("batch_size": 333, "hidden_size": 4096)"
                                         << R"("batch_size": 333, "hidden_size": 4100)" << u"workloads.jsonl:5"_qs
                                         << "constraints[0]: constraint 'hidden_size % 8 == 0' does not hold";
    QTest::newRow("duplicate uuid") << wl << "8852bde9-ceb1-5a5d-913c-067cb96e0910"
                                    << "e316a464-ff7c-587e-a608-9c6bd5b1d263" << u"workloads.jsonl:2"_qs
                                    << "workload.uuid: duplicate uuid";
    QTest::newRow("scalar drawn at random")
        << wl << R"("eps": {"type": "scalar", "value": 1e-06}}}})"
        << R"("eps": {"type": "random"}}}})" << u"workloads.jsonl:1"_qs << "workload.inputs.eps.type";
    QTest::newRow("missing reference") << u"reference.cpp"_qs << "*"
                                       << ""
                                       << "reference.cpp"
                                       << "missing";
    QTest::newRow("baseline does not compile") << u"baseline.cpp"_qs << "extern \"C\""
                                               << "this is not C++ extern \"C\""
                                               << "baseline.cpp"
                                               << "does not compile";
    QTest::newRow("baseline is wrong")
        << u"baseline.cpp"_qs << "#include \"ks_task.h\""
        << "#include \"ks_task.h\"\n#define ks_from_float_bf16(v) ks_from_float_bf16(1.5f * (v))"
        << "baseline.cpp"
        << "disagrees with reference.cpp";
}

void TestCli::malformedTaskCopies()
{
    QFETCH(QString, file);
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, fileInMessage);
    QFETCH(QString, fieldInMessage);
    QTemporaryDir dir;
    const fs::path copy = fs::path(dir.path().toStdString()) / "rmsnorm";
    test::copyTree(test::tasksDir() / "rmsnorm", copy);
    const fs::path target = copy / file.toStdString();
    if (from == u"*") {
        fs::remove(target);
    } else {
        std::string text = test::readText(target);
        const auto at = text.find(from.toStdString());
        QVERIFY2(at != std::string::npos, qPrintable(u"the fixture no longer contains: "_qs + from));
        text.replace(at, from.size(), to.toStdString());
        test::writeText(target, text);
    }
    const auto r = test::runProgram(u"ksearch"_qs, {u"tasks"_qs, u"check"_qs, QString::fromStdString(copy.string())});
    QCOMPARE(r.exitCode, 2);
    const QString all = r.out + r.err;
    const QString line = all.split(u'\n').filter(fieldInMessage).value(0);
    QVERIFY2(!line.isEmpty(), qPrintable(all));
    QVERIFY2(all.contains(fileInMessage), qPrintable(all));
}

void TestCli::logFileAndVerbose()
{
    QTemporaryDir dir;
    const QString log = dir.filePath(u"k.log"_qs);
    const auto r = test::runProgram(u"ksearch"_qs, {u"--verbose"_qs, u"--log-file"_qs, log, u"tasks"_qs, u"list"_qs});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.err.contains(u"debug"));
    QVERIFY(
        QString::fromStdString(test::readText(log.toStdString())).contains(u"ksearch " KSEARCH_VERSION " started"_qs));
}

void TestCli::evalTableAndJson()
{
    const QString baseline = QString::fromStdString((test::tasksDir() / "rmsnorm" / "baseline.cpp").string());
    const QStringList common {u"eval"_qs, u"--task"_qs, u"rmsnorm"_qs, u"--backend"_qs, u"host"_qs, u"--workloads"_qs,
        u"e316,51c3"_qs, u"--max-seconds"_qs, u"0.05"_qs};
    const auto table = test::runProgram(u"ksearch"_qs, common + QStringList {baseline});
    QVERIFY2(table.exitCode == 0, qPrintable(table.out + table.err));
    for (const char* column :
        {"WORKLOAD", "STATUS", "MAX_ABS", "MAX_REL", "LATENCY_US", "BASELINE_US", "SPEEDUP", "ROOFLINE"})
        QVERIFY2(table.out.contains(QLatin1String(column)), column);
    QVERIFY(table.out.contains(u"PASSED: J = "));

    const auto json = test::runProgram(u"ksearch"_qs, common + QStringList {u"--json"_qs, baseline});
    QCOMPARE(json.exitCode, 0);
    const auto doc = nlohmann::json::parse(json.out.toStdString());
    for (const char* key : {"status", "score", "latency_us", "baseline_latency_us", "log", "workloads"})
        QVERIFY2(doc.contains(key), key);
    QCOMPARE(doc["status"].get<std::string>(), std::string("PASSED"));
    QCOMPARE(doc["workloads"].size(), std::size_t {2});
    for (const char* key : {"id", "status", "max_abs_error", "max_rel_error", "matched_ratio", "latency_us",
             "baseline_latency_us", "speedup", "roofline_fraction"})
        QVERIFY2(doc["workloads"][0].contains(key), key);
    QVERIFY(doc["workloads"][0]["latency_us"].get<double>() > 0);
    QCOMPARE(doc["workloads"][0]["matched_ratio"].get<double>(), 1.0); // rmsnorm's honest baseline
    QVERIFY2(doc.contains("confinement"), json.out.left(400).toUtf8().constData());
    QCOMPARE(doc["confinement"]["off"].get<bool>(), false);
    QVERIFY(table.out.contains(u"\nconfinement: "));

    // Confinement turned off to debug: the result and the log say so.
    const auto loose = test::runProgram(u"ksearch"_qs, common + QStringList {u"--unconfined"_qs, baseline});
    QVERIFY2(loose.exitCode == 0, qPrintable(loose.out + loose.err));
    QVERIFY2(loose.out.contains(u"confinement: confinement turned off in the settings"), qPrintable(loose.out));
    QVERIFY2(loose.err.contains(u"run without full confinement"), qPrintable(loose.err));

    // A kernel that fails is still an evaluation: exit 0, with the verdict in the output.
    QTemporaryDir dir;
    const QString broken = dir.filePath(u"broken.cpp"_qs);
    test::writeText(broken.toStdString(),
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { return 3; }\n");
    const auto failed = test::runProgram(u"ksearch"_qs, common + QStringList {u"--json"_qs, broken});
    QCOMPARE(failed.exitCode, 0);
    QCOMPARE(
        nlohmann::json::parse(failed.out.toStdString())["status"].get<std::string>(), std::string("RUNTIME_ERROR"));
}

void TestCli::evalWithoutGpuIsAnEnvironmentProblem()
{
    const auto probe = test::runProgram(u"ksearch-runner"_qs, {u"--probe"_qs});
    if (!nlohmann::json::parse(probe.out.toStdString())["devices"].empty())
        QSKIP("a CUDA device is present: nothing to check here");
    const QString baseline = QString::fromStdString((test::tasksDir() / "rmsnorm" / "baseline.cu").string());
    const auto r = test::runProgram(u"ksearch"_qs, {u"eval"_qs, u"--task"_qs, u"rmsnorm"_qs, baseline});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains(u"cuda backend is not available"), qPrintable(r.err));
}

KS_TEST_MAIN_CORE(TestCli)
#include "tst_cli.moc"
