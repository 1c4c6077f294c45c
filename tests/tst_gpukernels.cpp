#include "testmain.h"
#include "testsupport.h"

#include <task/task.h>

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <runnerclient.h>
#include <subprocess.h>
#include <taskcheck.h>

using namespace ks;
namespace fs = std::filesystem;

// On a machine with a CUDA device: every task's reference.cu and baseline.cu agree with
// reference.cpp, on small workloads and on the largest one. Skips cleanly without a device.
class TestGpuKernels : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void tasksAgreeOnTheGpu_data();
    void tasksAgreeOnTheGpu();

private:
    nlohmann::json m_probe;
};

void TestGpuKernels::initTestCase()
{
    SubprocessRequest req;
    req.argv = {runnerPath().string(), "--probe"};
    req.environment = scrubbedEnvironment();
    const auto r = runSubprocess(req);
    QVERIFY2(r.succeeded(), r.describeExit().c_str());
    m_probe = nlohmann::json::parse(r.out);
    if (m_probe["devices"].empty())
        QSKIP(qPrintable(
            u"no CUDA device: "_qs + QString::fromStdString(m_probe.value("error", std::string("none found")))));
    qInfo("device: %s", m_probe["devices"][0].dump().c_str());
}

void TestGpuKernels::tasksAgreeOnTheGpu_data()
{
    test::addTaskRowsWith("baseline.cu");
}

void TestGpuKernels::tasksAgreeOnTheGpu()
{
    QFETCH(QString, task);
    const auto loaded = loadTask(task.toStdString());
    QVERIFY(loaded.task);
    // The smallest three plus the largest workload (the one a tiling bug shows up on).
    std::vector<std::string> ids;
    const auto& all = loaded.task->workloads;
    for (std::size_t i = 0; i < all.size() && i < 3; ++i)
        ids.push_back(all[i].uuid);
    ids.push_back(all.back().uuid);
    QTemporaryDir dir;
    TaskCheckOptions options;
    options.cuda = true;
    options.workloadIds = ids;
    options.workDir = dir.path().toStdString();
    options.progress = [](const std::string& line) { qInfo("%s", line.c_str()); };
    const auto report = checkTask(*loaded.task, options);
    QCOMPARE(static_cast<int>(report.outcome), static_cast<int>(TaskCheckReport::Outcome::Passed));
}

KS_TEST_MAIN_CORE(TestGpuKernels)
#include "tst_gpukernels.moc"
