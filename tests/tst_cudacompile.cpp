#include "testmain.h"
#include "testsupport.h"

#include <task/abiheader.h>
#include <task/evaluation.h>
#include <task/task.h>
#include <task/taskcatalog.h>

#include <QTemporaryDir>

#include <compiler.h>

using namespace ks;
namespace fs = std::filesystem;

// Every .cu file shipped in tasks/ must build for the target GPU with warnings as errors:
// no GPU is needed for that, so CI checks it.
class TestCudaCompile : public QObject
{
    Q_OBJECT
private slots:
    void compiles_data();
    void compiles();
    void parsesPtxasReport();
    void kernelNamesForPeople_data();
    void kernelNamesForPeople();
    void trimsLogs();
};

void TestCudaCompile::compiles_data()
{
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("file");
    for (const auto& entry : fs::directory_iterator(test::tasksDir()))
        for (const auto& f : fs::directory_iterator(entry.path()))
            if (f.path().extension() == ".cu")
                QTest::addRow("%s/%s", entry.path().filename().c_str(), f.path().filename().c_str())
                    << QString::fromStdString(entry.path().string()) << QString::fromStdString(f.path().string());
}

void TestCudaCompile::compiles()
{
    QFETCH(QString, task);
    QFETCH(QString, file);
    if (!fs::exists(nvccPath()))
        QSKIP("nvcc not found: the CUDA toolkit is not installed");
    const auto loaded = loadTask(task.toStdString());
    QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
    QTemporaryDir dir;
    CompileRequest req;
    req.backend = Backend::Cuda;
    req.source = file.toStdString();
    req.abiHeader = generateAbiHeader(loaded.task->definition);
    req.workDir = dir.path().toStdString();
    req.extraFlags = {"-Werror", "all-warnings"};
    const CompileResult r = compileKernel(req);
    QVERIFY2(r.ok, (r.command + "\n" + r.log).c_str());
    QVERIFY(!r.resources.empty());
    for (const auto& k : r.resources) {
        QVERIFY2(k.registers > 0, k.kernel.c_str());
        QVERIFY2(k.spillStoreBytes == 0, (k.kernel + " spills registers").c_str());
    }
}

void TestCudaCompile::parsesPtxasReport()
{
    const std::string log = "ptxas info    : 0 bytes gmem\n"
                            "ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90a'\n"
                            "ptxas info    : Function properties for _Z6kernelPf\n"
                            "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                            "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 352 bytes cmem[0]\n";
    const auto k = parsePtxasInfo(log);
    QCOMPARE(k.size(), std::size_t {1});
    QCOMPARE(k[0].kernel, std::string("_Z6kernelPf"));
    QCOMPARE(k[0].registers, 40);
    QCOMPARE(k[0].sharedBytes, 2048L);
    QCOMPARE(k[0].stackBytes, 16L);
    QCOMPARE(k[0].spillStoreBytes, 8L);
    QCOMPARE(k[0].spillLoadBytes, 12L);
}

void TestCudaCompile::kernelNamesForPeople_data()
{
    QTest::addColumn<QString>("mangled");
    QTest::addColumn<QString>("shown");
    // Names as ptxas printed them for this project's own kernels.
    QTest::newRow("plain function") << "_Z6kernelPf"
                                    << "kernel";
    QTest::newRow("template in an anonymous namespace")
        << "_ZN42_GLOBAL__N__b4f10139_11_baseline_cu_ks_run13output_kernelILi64EEEv6KsArgsPKfPK6__halfS5_i"
        << "output_kernel<64>";
    QTest::newRow("several template arguments")
        << "_ZN42_GLOBAL__N__b4f10139_11_baseline_cu_ks_run23project_resident_kernelILi5ELi128ELb1EEEv6KsArgsPK6__"
           "halfS4_iPS2_S5_S5_"
        << "project_resident_kernel<5, 128, true>";
    QTest::newRow("namespace kept") << "_ZN2ks5scaleEPfi"
                                    << "ks::scale";
    QTest::newRow("extern C, not mangled") << "ks_scale_kernel"
                                           << "ks_scale_kernel";
    QTest::newRow("not a valid mangling") << "_Zxyz"
                                          << "_Zxyz";
}

void TestCudaCompile::kernelNamesForPeople()
{
    QFETCH(QString, mangled);
    QFETCH(QString, shown);
    QCOMPARE(QString::fromStdString(kernelDisplayName(mangled.toStdString())), shown);
}

void TestCudaCompile::trimsLogs()
{
    std::string log;
    for (int i = 0; i < 500; ++i)
        log += "k.cu(" + std::to_string(i) + "): warning #177-D: variable \"x\" was declared but never referenced\n";
    log += "k.cu(900): error: identifier \"undefined_thing\" is undefined\n";
    const std::string trimmed = trimCompilerLog(log, 2000);
    QVERIFY(trimmed.size() <= 2100);
    QVERIFY(trimmed.rfind("k.cu(900): error", 0) == 0); // the error comes first
}

KS_TEST_MAIN_CORE(TestCudaCompile)
#include "tst_cudacompile.moc"
