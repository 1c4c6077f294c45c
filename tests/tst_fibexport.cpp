#include "testmain.h"
#include "testsupport.h"

#include <session/fibexport.h>
#include <session/fibworkloads.h>
#include <task/abiheader.h>
#include <task/inputgenerator.h>
#include <task/safetensors.h>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>

using namespace ks;
namespace fs = std::filesystem;

// FlashInfer-Bench's formats out of ksearch: the Solution's generated torch binding compiles and,
// run on the host against a stand-in for PyTorch's extension header with the task's own host
// kernel, computes the task's answer (axes read from the tensors, scalars and outputs passed in
// FlashInfer-Bench's destination-passing order); definitions the binding cannot serve are refused
// with the reason. The Trace lines of a whole search are checked in tst_runcommand.

class TestFibExport : public QObject
{
    Q_OBJECT
private slots:
    void solutionHasTheBinding();
    void pythonSolutionIsItsOwnEntryPoint_data();
    void pythonSolutionIsItsOwnEntryPoint();
    void bindingRunsTheHostKernel();
    void unbindableDefinitionsAreRefused_data();
    void unbindableDefinitionsAreRefused();
    void workloadsBecomeFlashInferInputs();
};

static Definition loadDefinition(const std::string& task)
{
    auto loaded = loadTask(test::tasksDir() / task);
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    return loaded.task->definition;
}

void TestFibExport::solutionHasTheBinding()
{
    const Definition def = loadDefinition("gqa_paged_decode_h32_kv4_d128_ps1");
    std::string error;
    const auto solution = fibSolution(def, {"gqa_ksearch_abc", "test", "// kernel\n", true, "NVIDIA H200"}, error);
    QVERIFY2(solution, error.c_str());
    const auto& spec = (*solution)["spec"];
    QCOMPARE(spec["language"].get<std::string>(), std::string("cuda"));
    QCOMPARE(spec["entry_point"].get<std::string>(), std::string("main.cpp::run"));
    QCOMPARE(spec["binding"].get<std::string>(), std::string("torch"));
    QVERIFY(spec["destination_passing_style"].get<bool>());
    QCOMPARE((*solution)["definition"].get<std::string>(), def.name);
    std::vector<std::string> paths;
    for (const auto& s : (*solution)["sources"])
        paths.push_back(s["path"].get<std::string>());
    QVERIFY(paths == (std::vector<std::string> {"kernel.cu", "ks_task.h", "main.cpp"}));
    const std::string binding = (*solution)["sources"][2]["content"].get<std::string>();
    // Inputs in definition order, then the outputs; the scalar by value; axes from the tensors.
    QVERIFY2(
        binding.find("void run(torch::Tensor q, torch::Tensor k_cache, torch::Tensor v_cache, torch::Tensor "
                     "kv_indptr, torch::Tensor kv_indices, double sm_scale, torch::Tensor output, torch::Tensor lse)")
            != std::string::npos,
        binding.c_str());
    QVERIFY2(binding.find("a.batch_size = q.size(0);") != std::string::npos, binding.c_str());
    QVERIFY2(binding.find("at::cuda::getCurrentCUDAStream") != std::string::npos, binding.c_str());
}

void TestFibExport::bindingRunsTheHostKernel()
{
    const Definition def = loadDefinition("rmsnorm");
    std::string error;
    const auto binding = torchBinding(def, false, error);
    QVERIFY2(binding, error.c_str());
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    test::writeText(root / "main.cpp", *binding);
    test::writeText(root / "ks_task.h", generateAbiHeader(def));
    // The driver: what FlashInfer-Bench's runner does with the module, on host buffers.
    test::writeText(root / "driver.cpp", R"(#include "main.cpp"
#include <cmath>
#include <cstdio>
int main()
{
    const int rows = 3, cols = 40;
    std::vector<ks_bf16_t> x(rows * cols), w(cols), y(rows * cols);
    for (int i = 0; i < rows * cols; ++i) x[i] = ks_from_float_bf16(0.25f * float((i * 7) % 11) - 1.0f);
    for (int j = 0; j < cols; ++j) w[j] = ks_from_float_bf16(0.5f + 0.03f * float(j));
    run(torch::Tensor(x.data(), {rows, cols}), torch::Tensor(w.data(), {cols}), 1e-6, torch::Tensor(y.data(), {rows, cols}));
    double worst = 0;
    for (int r = 0; r < rows; ++r) {
        double ss = 0;
        for (int j = 0; j < cols; ++j) ss += double(ks_to_float(x[r * cols + j])) * ks_to_float(x[r * cols + j]);
        const double inv = 1.0 / std::sqrt(ss / cols + 1e-6);
        for (int j = 0; j < cols; ++j) {
            const double want = ks_to_float(x[r * cols + j]) * inv * ks_to_float(w[j]);
            worst = std::fmax(worst, std::fabs(ks_to_float(y[r * cols + j]) - want) / (std::fabs(want) + 1e-3));
        }
    }
    std::printf("worst relative error %g\n", worst);
    return worst < 1e-2 ? 0 : 1;
}
)");
    const QString stub = QString::fromStdString((test::sourceDir() / "tests/data/torch_extension_stub").string());
    QProcess cxx;
    cxx.start(u"g++"_qs,
        {u"-std=c++17"_qs, u"-O1"_qs, u"-fopenmp-simd"_qs, u"-Wall"_qs, u"-Wextra"_qs, u"-Werror"_qs, u"-I"_qs, stub,
            u"-I"_qs, QString::fromStdString(root.string()), QString::fromStdString((root / "driver.cpp").string()),
            QString::fromStdString((test::tasksDir() / "rmsnorm/baseline.cpp").string()), u"-o"_qs,
            QString::fromStdString((root / "driver").string())});
    QVERIFY(cxx.waitForFinished(120000));
    QVERIFY2(cxx.exitCode() == 0, cxx.readAllStandardError().constData());
    QProcess driver;
    driver.start(QString::fromStdString((root / "driver").string()), {});
    QVERIFY(driver.waitForFinished(30000));
    const QByteArray printed = driver.readAllStandardOutput();
    QVERIFY2(driver.exitCode() == 0, printed.constData());
    QVERIFY(printed.contains("worst relative error"));
}

void TestFibExport::unbindableDefinitionsAreRefused_data()
{
    QTest::addColumn<QString>("workspace");
    QTest::addColumn<bool>("hideAxis");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("workspace with a function") << "max(batch_size, 4)" << false << "not plain arithmetic";
    QTest::newRow("axis in no tensor") << "0" << true << "var axis 'hidden_size' is in no tensor's shape";
}

void TestFibExport::unbindableDefinitionsAreRefused()
{
    QFETCH(QString, workspace);
    QFETCH(bool, hideAxis);
    QFETCH(QString, fragment);
    Definition def = loadDefinition("rmsnorm");
    def.workspaceBytes = workspace.toStdString();
    if (hideAxis) { // a definition whose hidden_size no tensor names
        def.inputs[0].shape = std::vector<std::string> {"batch_size"};
        def.inputs[1].shape = std::vector<std::string> {"batch_size"};
        def.outputs[0].shape = std::vector<std::string> {"batch_size"};
    }
    std::string error;
    QVERIFY(!fibSolution(def, {"x", "", "", true, ""}, error));
    QVERIFY2(QString::fromStdString(error).contains(fragment), error.c_str());
}

void TestFibExport::pythonSolutionIsItsOwnEntryPoint_data()
{
    QTest::addColumn<QString>("source");
    QTest::addColumn<int>("language");
    QTest::addColumn<bool>("destinationPassing");
    const int triton = static_cast<int>(Language::Triton), python = static_cast<int>(Language::Python);
    QTest::newRow("fills its outputs") << u"import triton\ndef run(hidden_states, weight, eps, output):\n    pass\n"_qs
                                       << triton << true;
    QTest::newRow("returns its outputs") << u"def run(hidden_states, weight, eps):\n    return hidden_states\n"_qs
                                         << python << false;
    QTest::newRow("over several lines, a default with a comma")
        << u"def run(\n    hidden_states,\n    weight,\n    eps=(1e-6, 0)[0],\n):\n    return hidden_states\n"_qs
        << python << false;
    QTest::newRow("*args") << u"def run(*tensors):\n    pass\n"_qs << python << true;
    // **kwargs takes no positional argument: the inputs alone, so it returns its outputs (as the
    // Python runner calls it, and as FlashInfer-Bench's own Triton example is written).
    QTest::newRow("**kwargs") << u"def run(hidden_states, weight, eps, **kwargs):\n    return hidden_states\n"_qs
                              << python << false;
}

void TestFibExport::pythonSolutionIsItsOwnEntryPoint()
{
    QFETCH(QString, source);
    QFETCH(int, language);
    QFETCH(bool, destinationPassing);
    const Definition def = loadDefinition("rmsnorm");
    std::string error;
    FibSolutionInput in {"rmsnorm_ksearch_abc", "test", source.toStdString(), true, "NVIDIA H200"};
    in.language = static_cast<Language>(language);
    const auto solution = fibSolution(def, in, error);
    QVERIFY2(solution, error.c_str());
    const auto& spec = (*solution)["spec"];
    QCOMPARE(spec["language"].get<std::string>(), std::string(languageName(in.language)));
    QCOMPARE(spec["entry_point"].get<std::string>(), std::string("main.py::run"));
    QVERIFY(!spec.contains("binding")); // FlashInfer-Bench imports main.py itself
    QCOMPARE(spec["destination_passing_style"].get<bool>(), destinationPassing);
    QCOMPARE((*solution)["sources"].size(), std::size_t {1});
    QCOMPARE((*solution)["sources"][0]["content"].get<std::string>(), source.toStdString());
    const bool wantsTriton = in.language == Language::Triton;
    QCOMPARE(spec["dependencies"].size(), std::size_t {wantsTriton ? 2u : 1u});
}

void TestFibExport::workloadsBecomeFlashInferInputs()
{
    // GQA decode's index tensors come from this project's generators (indptr, unique indices),
    // which FlashInfer-Bench does not know: each becomes a safetensors blob of the dataset,
    // holding exactly what the generator makes; random inputs stay random.
    const auto loaded = loadTask(test::tasksDir() / "gqa_paged_decode_h32_kv4_d128_ps1");
    QVERIFY(loaded.task);
    const Task& task = *loaded.task;
    QTemporaryDir root;
    std::string error;
    const auto workloads = fibWorkloads(task, root.path().toStdString(), error);
    QVERIFY2(workloads, error.c_str());
    QCOMPARE(workloads->size(), task.workloads.size());
    int blobs = 0;
    for (const Workload& w : task.workloads) {
        const nlohmann::json& line = workloads->at(w.uuid);
        QCOMPARE(line["uuid"].get<std::string>(), w.uuid);
        const InputGenerator generator(task.definition, w, kFibExportSeed);
        for (const TensorSpec& spec : task.definition.inputs) {
            const nlohmann::json& input = line["inputs"][spec.name];
            const std::string type = input["type"].get<std::string>();
            QVERIFY2(type == "random" || type == "scalar" || type == "safetensors", (spec.name + ": " + type).c_str());
            if (w.inputs.at(spec.name).kind == InputSource::Kind::Random) {
                QCOMPARE(type, std::string("random"));
                continue;
            }
            if (type != "safetensors")
                continue;
            ++blobs;
            const std::string path = input["path"].get<std::string>();
            QVERIFY2(path.rfind("blob/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/", 0) == 0, path.c_str());
            const fs::path file = fs::path(root.path().toStdString()) / path;
            const auto index = readSafetensorsIndex(file, error);
            QVERIFY2(index, error.c_str());
            const SafetensorsTensor& stored = index->at(input["tensor_key"].get<std::string>());
            const HostTensor expected = generator.generate(spec);
            QCOMPARE(stored.shape, expected.shape);
            std::vector<std::byte> bytes(stored.bytes);
            QVERIFY2(readSafetensorsData(file, stored, bytes, error), error.c_str());
            QVERIFY2(bytes == expected.data, (w.uuid + ": " + spec.name).c_str());
        }
    }
    QVERIFY(blobs >= 2 * static_cast<int>(task.workloads.size())); // kv_indptr and kv_indices of each
}

KS_TEST_MAIN_CORE(TestFibExport)
#include "tst_fibexport.moc"
