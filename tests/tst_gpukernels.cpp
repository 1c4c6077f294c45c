#include "testmain.h"
#include "testsupport.h"

#include <task/inputgenerator.h>
#include <task/task.h>

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <runnerclient.h>
#include <subprocess.h>
#include <taskcheck.h>

using namespace ks;
namespace fs = std::filesystem;

namespace {
// About ten seconds of the host reference's double arithmetic on the GPU machine's 16 cores.
constexpr double kHostFlopBudget = 1e11;
} // namespace

// On a machine with a CUDA device: every task's reference.cu and baseline.cu agree with
// reference.cpp on every workload the host can compute. Skips cleanly without a device.
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
    test::addTaskRowsWith("reference.cu"); // baseline.cu too, where the task has one
}

void TestGpuKernels::tasksAgreeOnTheGpu()
{
    QFETCH(QString, task);
    const auto loaded = loadTask(task.toStdString());
    QVERIFY(loaded.task);
    // Every workload the host reference can compute in seconds (the task's host_check, else the
    // cost model's FLOPs); a task with neither: the smallest three plus the largest.
    std::vector<std::string> ids;
    const auto& all = loaded.task->workloads;
    const Definition& def = loaded.task->definition;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const InputGenerator gen(def, all[i], 0);
        const bool fits = !def.hostCheck.empty() ? gen.evaluate(def.hostCheck).value_or(0) != 0
            : def.costModel                      ? gen.evaluate(def.costModel->flops).value_or(0) <= kHostFlopBudget
                                                 : i < 3 || i + 1 == all.size();
        if (fits)
            ids.push_back(all[i].uuid);
    }
    QVERIFY(!ids.empty());
    qInfo("%zu of %zu workloads are checked against reference.cpp", ids.size(), all.size());
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
