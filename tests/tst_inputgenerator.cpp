#include "testmain.h"
#include "testsupport.h"

#include <task/inputgenerator.h>
#include <task/task.h>

#include <algorithm>
#include <cmath>

using namespace ks;

class TestInputGenerator : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void sameSeedSameInputs();
    void trialAndSeedChangeInputs();
    void normalStatistics();
    void trimulInputs();
    void scalarsAndOutputs();

private:
    std::optional<Task> m_task;
};

void TestInputGenerator::initTestCase()
{
    m_task = loadTask(test::tasksDir() / "rmsnorm").task;
    QVERIFY(m_task);
}

void TestInputGenerator::sameSeedSameInputs()
{
    const auto& w = m_task->workloads[2];
    const auto a = InputGenerator(m_task->definition, w, 99).generateInputs();
    const auto b = InputGenerator(m_task->definition, w, 99).generateInputs();
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        QVERIFY(a[i].data == b[i].data);
}

void TestInputGenerator::trialAndSeedChangeInputs()
{
    const auto& w = m_task->workloads[2];
    const auto base = InputGenerator(m_task->definition, w, 99).generateInputs(0)[0];
    const auto trial = InputGenerator(m_task->definition, w, 99).generateInputs(1)[0];
    const auto seed = InputGenerator(m_task->definition, w, 100).generateInputs(0)[0];
    QVERIFY(base.data != trial.data);
    QVERIFY(base.data != seed.data);
    // Different inputs of one call differ too (weight is not a copy of hidden_states).
    const auto weight = InputGenerator(m_task->definition, w, 99).generateInputs(0)[1];
    QVERIFY(std::memcmp(base.data.data(), weight.data.data(), weight.data.size()) != 0);
}

void TestInputGenerator::normalStatistics()
{
    const auto& w = m_task->workloads[4]; // 333 x 4096
    const auto x = InputGenerator(m_task->definition, w, 7).generateInputs()[0];
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < x.elements(); ++i) {
        sum += x.at(i);
        sq += x.at(i) * x.at(i);
    }
    const double n = static_cast<double>(x.elements());
    const double mean = sum / n, var = sq / n - mean * mean;
    QVERIFY2(std::fabs(mean) < 0.01, std::to_string(mean).c_str());
    QVERIFY2(std::fabs(var - 1.0) < 0.02, std::to_string(var).c_str());
}

// TriMul's Cauchy(0, 2) inputs: median 0 and quartiles at -2 and +2 (the mean does not exist);
// its Bernoulli mask is half ones; its nomask workloads' mask is all ones.
void TestInputGenerator::trimulInputs()
{
    const auto trimul = loadTask(test::tasksDir() / "trimul");
    QVERIFY2(trimul.task, trimul.diagnostics.formatAll().c_str());
    const Task& t = *trimul.task;
    int cauchy = 0, masked = 0;
    for (const auto& w : t.workloads) {
        if (w.axes.at("seq_len") > 64)
            continue;
        const auto in = InputGenerator(t.definition, w, 5).generateInputs();
        std::vector<double> x(in[0].elements());
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = in[0].at(i);
        std::sort(x.begin(), x.end());
        auto quantile = [&](double q) { return x[static_cast<std::size_t>(q * static_cast<double>(x.size() - 1))]; };
        double ones = 0;
        for (std::size_t i = 0; i < in[1].elements(); ++i)
            ones += in[1].at(i);
        const double onesShare = ones / static_cast<double>(in[1].elements());
        if (w.inputs.at("input").distribution == "cauchy") {
            ++cauchy;
            QVERIFY2(std::fabs(quantile(0.5)) < 0.1, std::to_string(quantile(0.5)).c_str());
            QVERIFY2(std::fabs(quantile(0.25) + 2.0) < 0.15 && std::fabs(quantile(0.75) - 2.0) < 0.15,
                (std::to_string(quantile(0.25)) + " " + std::to_string(quantile(0.75))).c_str());
            QVERIFY(x.back() > 1000.0); // heavy tails: among ~100K draws some exceed 1000
        }
        if (w.inputs.at("mask").kind == InputSource::Kind::Random) {
            ++masked;
            QVERIFY2(std::fabs(onesShare - 0.5) < 0.02, std::to_string(onesShare).c_str());
        } else {
            QCOMPARE(onesShare, 1.0);
        }
    }
    QVERIFY(cauchy >= 1 && masked >= 1);
}

void TestInputGenerator::scalarsAndOutputs()
{
    const auto& w = m_task->workloads[0];
    InputGenerator gen(m_task->definition, w, 1);
    const auto inputs = gen.generateInputs();
    QVERIFY(inputs[2].scalar);
    QCOMPARE(inputs[2].data.size(), std::size_t {4});
    QCOMPARE(inputs[2].at(0), static_cast<double>(1e-6f));
    const auto outputs = gen.describeOutputs();
    QCOMPARE(outputs.size(), std::size_t {1});
    QCOMPARE(outputs[0].shape, (std::vector<std::int64_t> {1, 4096}));
    QCOMPARE(outputs[0].dtype, DType::BFloat16);
    QVERIFY(outputs[0].data.empty());
    QCOMPARE(gen.workspaceBytes(), std::int64_t {0});
}

KS_TEST_MAIN_CORE(TestInputGenerator)
#include "tst_inputgenerator.moc"
