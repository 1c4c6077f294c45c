#include "testmain.h"
#include "testsupport.h"

#include <search/taskbrief.h>
#include <task/inputgenerator.h>
#include <task/task.h>

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <tuple>

using namespace ks;
namespace fs = std::filesystem;

// A small paged-attention-like task: index tensors from generators, and a constraint that reads
// a generated tensor (FlashInfer-Bench style).
static const char* kPagedDefinition = R"JSON({
  "name": "paged", "op_type": "gqa_paged",
  "axes": {"batch_size": {"type": "var"}, "head_dim": {"type": "const", "value": 8},
           "num_pages": {"type": "var"}, "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"}},
  "inputs": {"q": {"shape": ["batch_size", "head_dim"], "dtype": "bfloat16"},
             "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
             "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"},
             "sm_scale": {"shape": null, "dtype": "float32"}},
  "outputs": {"out": {"shape": ["batch_size", "head_dim"], "dtype": "bfloat16"}},
  "constraints": ["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()",
                  "all(b, 0, batch_size, kv_indptr[b] <= kv_indptr[b + 1])",
                  "max(i, 0, num_kv_indices, kv_indices[i]) < num_pages", "kv_indptr[0].item() == 0"]
})JSON";

static std::string pagedWorkload(const std::string& uuid, const std::string& lengths, int numKv, int pages = 64,
    const std::string& high = "num_pages")
{
    return R"({"definition": "paged", "workload": {"uuid": ")" + uuid + R"(", "axes": {"batch_size": 3, "num_pages": )"
        + std::to_string(pages) + R"(, "len_indptr": 4, "num_kv_indices": )" + std::to_string(numKv)
        + R"(}, "inputs": {"q": {"type": "random"}, "kv_indptr": {"type": "indptr", "lengths": )" + lengths
        + R"(}, "kv_indices": {"type": "unique_indices", "high": ")" + high
        + R"("}, "sm_scale": {"type": "scalar", "value": 0.35}}}})";
}

using test::BlobTensor;
using test::writeSafetensors;

static std::string blobWorkload(
    const std::string& indptrKey = "kv_indptr", const std::string& file = "blob/w.safetensors")
{
    return R"({"definition": "paged", "workload": {"uuid": "w", "axes": {"batch_size": 3, "num_pages": 64, )"
           R"("len_indptr": 4, "num_kv_indices": 12}, "inputs": {"q": {"type": "random"}, )"
           R"("kv_indptr": {"type": "safetensors", "path": ")"
        + file + R"(", "tensor_key": ")" + indptrKey + R"("}, )" + R"("kv_indices": {"type": "safetensors", "path": ")"
        + file + R"(", "tensor_key": "kv_indices"}, )" + R"("sm_scale": {"type": "scalar", "value": 0.35}}}})";
}

static const std::vector<std::int32_t> kBlobIndices = {3, 17, 42, 8, 63, 0, 21, 9, 55, 30, 11, 7};

// The task in `root` is refused, its first error on workloads.jsonl line 1, at `field`.
static void expectRefusal(const fs::path& root, const QString& field, const QString& fragment)
{
    const auto result = loadTask(root);
    QVERIFY(!result.task.has_value());
    const auto errors = result.diagnostics.errors();
    QVERIFY(!errors.empty());
    const TaskIssue& e = errors.front();
    QVERIFY2(QString::fromStdString(e.file).endsWith(u"workloads.jsonl:1"), e.format().c_str());
    QCOMPARE(QString::fromStdString(e.field), field);
    QVERIFY2(QString::fromStdString(e.message).contains(fragment), e.format().c_str());
}

class TestTaskLoader : public QObject
{
    Q_OBJECT
private slots:
    void loadsRmsnorm();
    void generatorsSatisfyConstraints();
    void costModelsReadIndexTensors();
    void loadsTheMlaTasks();
    void loadsTheMoeTask();
    void loadsTheTrimulTask();
    void rejectsWorkloads_data();
    void rejectsWorkloads();
    void readsSafetensorsInputs();
    void rejectsBadSafetensors_data();
    void rejectsBadSafetensors();
    void reportsEveryErrorAtOnce();
    void precisionRule_data();
    void precisionRule();
    void shippedTasksHoldShapesOut();
    void warnsOnFolderNameMismatch();
    void prefixLookup();

private:
    fs::path makePagedTask(const QTemporaryDir& dir, const std::string& workloads);
};

fs::path TestTaskLoader::makePagedTask(const QTemporaryDir& dir, const std::string& workloads)
{
    const fs::path root = fs::path(dir.path().toStdString()) / "paged";
    test::writeText(root / "definition.json", kPagedDefinition);
    test::writeText(root / "workloads.jsonl", workloads);
    test::writeText(root / "reference.cpp", "// not compiled by the loader\n");
    return root;
}

void TestTaskLoader::loadsRmsnorm()
{
    const auto result = loadTask(test::tasksDir() / "rmsnorm");
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    const Task& task = *result.task;
    QCOMPARE(task.definition.name, std::string("rmsnorm"));
    // Order matters: it is the KsArgs field order.
    QCOMPARE(task.definition.inputs.size(), std::size_t {3});
    QCOMPARE(task.definition.inputs[0].name, std::string("hidden_states"));
    QCOMPARE(task.definition.inputs[2].name, std::string("eps"));
    QVERIFY(task.definition.inputs[2].isScalar());
    QVERIFY(task.definition.costModel.has_value());
    QVERIFY(task.workloads.size() >= 5);
    QVERIFY(task.files.referenceCu && task.files.baselineCu && task.files.baselineCpp);
    bool has4096 = false, has7168 = false, has16384 = false;
    for (const auto& w : task.workloads) {
        has4096 |= w.axes.at("hidden_size") == 4096;
        has7168 |= w.axes.at("hidden_size") == 7168;
        has16384 |= w.axes.at("batch_size") == 16384;
        QCOMPARE(w.axes.at("batch_size") >= 1, true);
    }
    QVERIFY(has4096 && has7168 && has16384);
}

void TestTaskLoader::generatorsSatisfyConstraints()
{
    QTemporaryDir dir;
    const auto root = makePagedTask(dir, pagedWorkload("w1", "[5, 0, 7]", 12) + "\n");
    const auto result = loadTask(root);
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    const Task& task = *result.task;
    InputGenerator gen(task.definition, task.workloads[0], 1234);
    const auto indptr = gen.generate(*task.definition.input("kv_indptr"));
    QCOMPARE(indptr.elements(), std::size_t {4});
    QCOMPARE(indptr.at(0), 0.0);
    QCOMPARE(indptr.at(1), 5.0);
    QCOMPARE(indptr.at(2), 5.0);
    QCOMPARE(indptr.at(3), 12.0);
    const auto indices = gen.generate(*task.definition.input("kv_indices"));
    std::set<double> distinct;
    for (std::size_t i = 0; i < indices.elements(); ++i) {
        QVERIFY(indices.at(i) >= 0 && indices.at(i) < 64);
        distinct.insert(indices.at(i));
    }
    QCOMPARE(distinct.size(), std::size_t {12});
}

// FlashInfer-Bench keeps captured index tensors in safetensors files next to the workloads: they
// load with their dtype and shape checked, and inputs hold exactly their bytes.
void TestTaskLoader::readsSafetensorsInputs()
{
    QTemporaryDir dir;
    const auto root = makePagedTask(dir, blobWorkload() + "\n");
    writeSafetensors(root / "blob" / "w.safetensors", {{"kv_indptr", {0, 5, 5, 12}}, {"kv_indices", kBlobIndices}});
    const auto result = loadTask(root);
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    const Task& task = *result.task;
    InputGenerator gen(task.definition, task.workloads[0], 99);
    const auto indptr = gen.generate(*task.definition.input("kv_indptr"));
    const auto indices = gen.generate(*task.definition.input("kv_indices"), 3); // the same every trial
    QCOMPARE(indptr.elements(), std::size_t {4});
    QCOMPARE(indptr.at(2), 5.0);
    QCOMPARE(indptr.at(3), 12.0);
    for (std::size_t i = 0; i < kBlobIndices.size(); ++i)
        QCOMPARE(indices.at(i), static_cast<double>(kBlobIndices[i]));
}

void TestTaskLoader::rejectsBadSafetensors_data()
{
    QTest::addColumn<QString>("workload");
    QTest::addColumn<int>("variant"); // which file is written
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("fragment");
    const QString normal = QString::fromStdString(blobWorkload());
    QTest::newRow("no such file") << QString::fromStdString(blobWorkload("kv_indptr", "blob/missing.safetensors")) << 0
                                  << "workload.inputs.kv_indptr.path"
                                  << "cannot open";
    QTest::newRow("no such key") << QString::fromStdString(blobWorkload("indptr")) << 0
                                 << "workload.inputs.kv_indptr.tensor_key"
                                 << "no tensor 'indptr'";
    QTest::newRow("wrong dtype") << normal << 1 << "workload.inputs.kv_indptr"
                                 << "is I16 [8], the input is int32 [4]";
    QTest::newRow("wrong shape") << normal << 2 << "workload.inputs.kv_indptr"
                                 << "is I32 [3], the input is int32 [4]";
    QTest::newRow("data cut short") << normal << 3 << "workload.inputs.kv_indptr.path"
                                    << "lie outside the data";
    QTest::newRow("indptr not monotone") << normal << 4 << "constraints[2]"
                                         << "all(b, 0, batch_size, kv_indptr[b] <= kv_indptr[b + 1])";
    QTest::newRow("an index past the pool") << normal << 5 << "constraints[3]"
                                            << "max(i, 0, num_kv_indices, kv_indices[i]) < num_pages";
    // Monotone and ending at num_kv_indices, but the first request does not start at position 0:
    // the paged baselines look each position's request up in kv_indptr from 0.
    QTest::newRow("indptr not from zero") << normal << 6 << "constraints[4]"
                                          << "kv_indptr[0].item() == 0";
}

void TestTaskLoader::rejectsBadSafetensors()
{
    QFETCH(QString, workload);
    QFETCH(int, variant);
    QFETCH(QString, field);
    QFETCH(QString, fragment);
    QTemporaryDir dir;
    const auto root = makePagedTask(dir, workload.toStdString() + "\n");
    std::vector<std::int32_t> indptr = {0, 5, 5, 12}, indices = kBlobIndices;
    BlobTensor first {"kv_indptr", indptr};
    if (variant == 1) // 16 bytes as eight int16
        first.dtype = "I16", first.shape = {8};
    if (variant == 2)
        first.values = {0, 5, 12};
    if (variant == 4)
        first.values = {0, 5, 3, 12};
    if (variant == 5)
        indices[4] = 64;
    if (variant == 6)
        first.values = {2, 5, 5, 12};
    writeSafetensors(root / "blob" / "w.safetensors", {first, {"kv_indices", indices}}, variant == 3 ? 8 : 0);
    expectRefusal(root, field, fragment);
}

void TestTaskLoader::costModelsReadIndexTensors()
{
    // Per-request work: the sum of squared segment lengths of kv_indptr {0, 5, 5, 12} is 74.
    std::string definition = kPagedDefinition;
    const std::string costModel = R"J(,
  "cost_model": {"bytes": "sum(b, 0, batch_size, (kv_indptr[b + 1] - kv_indptr[b]) * (kv_indptr[b + 1] - kv_indptr[b]))",
                 "flops": "FLOPS"})J";
    definition.insert(definition.rfind('}'), costModel);
    QTemporaryDir dir;
    auto write = [&](const std::string& flops) {
        const auto root = makePagedTask(dir, pagedWorkload("w1", "[5, 0, 7]", 12) + "\n");
        std::string text = definition;
        text.replace(text.find("FLOPS"), 5, flops);
        test::writeText(root / "definition.json", text);
        return loadTask(root);
    };
    const auto good = write("2 * kv_indptr[-1]");
    QVERIFY2(good.task.has_value(), good.diagnostics.formatAll().c_str());
    const Task& task = *good.task;
    const InputGenerator gen(task.definition, task.workloads[0], 0);
    QCOMPARE(gen.evaluate(task.definition.costModel->bytes), std::optional<double>(74.0));
    QCOMPARE(gen.evaluate(task.definition.costModel->flops), std::optional<double>(24.0));

    // A sum that runs past the end of kv_indptr has no value for this workload: refused, named.
    const auto bad = write("sum(b, 0, len_indptr, kv_indptr[b + 1])");
    QVERIFY(!bad.task.has_value());
    const auto errors = bad.diagnostics.errors();
    QVERIFY(!errors.empty());
    QCOMPARE(QString::fromStdString(errors.front().field), u"cost_model.flops"_qs);
    QVERIFY2(QString::fromStdString(errors.front().message).contains(u"kv_indptr[4]"), errors.front().format().c_str());
    QVERIFY2(
        QString::fromStdString(errors.front().file).endsWith(u"workloads.jsonl:1"), errors.front().format().c_str());
}

void TestTaskLoader::loadsTheMlaTasks()
{
    for (const char* name :
        {"mla_paged_decode_h16_ckv512_kpe64_ps1", "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"}) {
        const auto result = loadTask(test::tasksDir() / name);
        QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
        const Task& task = *result.task;
        QVERIFY(task.files.referenceCu && task.files.baselineCu && !task.files.baselineCpp);
        QCOMPARE(task.workloads.size() - task.definition.heldOutWorkloads.size(), std::size_t {12});
        const bool prefill = task.definition.axis("total_q") != nullptr;
        for (const auto& w : task.workloads) {
            QCOMPARE(w.axes.at("num_pages"), std::int64_t {989669}); // the captures' pool: gathers miss in L2
            const InputGenerator gen(task.definition, w, 0);
            // The exact FLOPs: two per multiply-add of Q.K (576 dims) and P.V (512) for each
            // (query, visible KV token) pair and each of the 16 heads.
            const auto qo = prefill ? gen.generate(*task.definition.input("qo_indptr")) : HostTensor {};
            const auto kv = gen.generate(*task.definition.input("kv_indptr"));
            double pairs = 0;
            for (std::size_t b = 0; b + 1 < kv.elements(); ++b) {
                const double q = prefill ? qo.at(b + 1) - qo.at(b) : 1, len = kv.at(b + 1) - kv.at(b);
                pairs += prefill ? q * (len - q) + q * (q + 1) / 2 : len;
            }
            QCOMPARE(gen.evaluate(task.definition.costModel->flops), std::optional<double>(2.0 * 16 * 1088 * pairs));
        }
    }
}

void TestTaskLoader::loadsTheMoeTask()
{
    const auto result = loadTask(test::tasksDir() / "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048");
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    const Task& task = *result.task;
    // FlashInfer-Bench's low-bit rule, with the misses bounded.
    QCOMPARE(task.definition.tolerance.requiredMatchedRatio, 0.95);
    QCOMPARE(task.definition.tolerance.missRmsFraction, 0.5);
    QCOMPARE(task.definition.hostCheck, std::string("seq_len <= 80")); // its cost model is only a floor
    QCOMPARE(task.definition.input("hidden_states_scale")->shape->front(), std::string("num_hidden_blocks"));
    std::set<std::int64_t> lengths;
    for (const auto& w : task.workloads) {
        lengths.insert(w.axes.at("seq_len"));
        const double offset = w.inputs.at("local_expert_offset").value;
        QVERIFY(offset >= 0 && offset <= 224 && std::fmod(offset, 32.0) == 0.0);
        QCOMPARE(w.inputs.at("routed_scaling_factor").value, 2.5);
    }
    for (const std::int64_t n : {1, 7, 14, 16, 32, 901, 14107}) // the feedback set and the extremes
        QVERIFY2(lengths.count(n), std::to_string(n).c_str());
}

void TestTaskLoader::loadsTheTrimulTask()
{
    const auto result = loadTask(test::tasksDir() / "trimul");
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    const Task& task = *result.task;
    QVERIFY(task.files.referenceCu && task.files.baselineCu);
    QCOMPARE(task.workloads.size() - task.definition.heldOutWorkloads.size(), std::size_t {13});
    // J covers GPU MODE's seven benchmark shapes (seq_len, batch, dim), as its ranking does.
    const std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> benchmark = {
        {256, 2, 128}, {768, 1, 128}, {256, 2, 384}, {512, 1, 128}, {1024, 1, 128}, {768, 1, 384}, {1024, 1, 384}};
    std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> scored;
    for (const std::string& id : task.definition.scoredWorkloads) {
        const Workload* w = task.workload(id);
        QVERIFY2(w, id.c_str());
        scored.insert({w->axes.at("seq_len"), w->axes.at("batch_size"), w->axes.at("dim")});
    }
    QCOMPARE(task.definition.scoredWorkloads.size(), std::size_t {7});
    QVERIFY(scored == benchmark);
}

void TestTaskLoader::rejectsWorkloads_data()
{
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("tensor constraint violated")
        << QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 11)) << "constraints[1]"
        << "does not hold";
    QTest::newRow("indptr segments do not fit")
        << QString::fromStdString(pagedWorkload("w", "[5, 7]", 12)) << "workload.inputs.kv_indptr.lengths"
        << "segments";
    QTest::newRow("indices past the pool") // 12 distinct indices below 64 + 4000: some exceed the pool
        << QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 12, 64, "num_pages + 4000")) << "constraints[3]"
        << "max(i, 0, num_kv_indices, kv_indices[i]) < num_pages";
    QTest::newRow("negative segment (indptr not monotone)")
        << QString::fromStdString(pagedWorkload("w", "[5, -2, 9]", 12)) << "workload.inputs.kv_indptr.lengths[1]"
        << "non-negative";
    QTest::newRow("too few pages for distinct indices")
        << QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 12, 10)) << "workload.inputs.kv_indices.high"
        << "too small";
    QString safetensors = QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 12));
    safetensors.replace(
        uR"({"type": "indptr", "lengths": [5, 0, 7]})"_qs, uR"({"type": "safetensors", "path": "x"})"_qs);
    QTest::newRow("safetensors without a key") << safetensors << "workload.inputs.kv_indptr.tensor_key"
                                               << "missing (a string)";
    QString unknown = QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 12));
    unknown.replace(u"\"type\": \"random\""_qs, u"\"type\": \"gaussian\""_qs);
    QTest::newRow("unknown source") << unknown << "workload.inputs.q.type"
                                    << "unknown source 'gaussian'";
    QString constAxis = QString::fromStdString(pagedWorkload("w", "[5, 0, 7]", 12));
    constAxis.replace(u"\"batch_size\": 3"_qs, u"\"batch_size\": 3, \"head_dim\": 16"_qs);
    QTest::newRow("const axis contradicted") << constAxis << "workload.axes.head_dim"
                                             << "const 8";
    QTest::newRow("not json") << "{\"workload\": "
                              << ""
                              << "invalid JSON";
    // Found by fuzz/fuzz_definition: a number beyond double's range threw past the parser.
    QTest::newRow("number out of range") << "{\"workload\": {\"axes\": {\"batch_size\": 1e999}}}"
                                         << ""
                                         << "invalid JSON";
}

void TestTaskLoader::rejectsWorkloads()
{
    QFETCH(QString, line);
    QFETCH(QString, field);
    QFETCH(QString, fragment);
    QTemporaryDir dir;
    const auto root = makePagedTask(dir, line.toStdString() + "\n");
    expectRefusal(root, field, fragment);
}

void TestTaskLoader::reportsEveryErrorAtOnce()
{
    QTemporaryDir dir;
    const fs::path root = fs::path(dir.path().toStdString()) / "broken";
    test::writeText(root / "definition.json", R"({"name": "broken", "op_type": "x",
        "axes": {"n": {"type": "var"}, "m": {"type": "sometimes"}},
        "inputs": {"a": {"shape": ["n", "k"], "dtype": "float32"}, "b": {"shape": ["n"], "dtype": "fp33"}},
        "outputs": {"a": {"shape": ["n"], "dtype": "float32"}},
        "tolerance": {"atol": -1}})");
    test::writeText(root / "workloads.jsonl", "");
    const auto result = loadTask(root);
    QVERIFY(!result.task.has_value());
    const std::string all = result.diagnostics.formatAll();
    for (const char* field : {"axes.m.type", "inputs.a.shape[1]", "inputs.b.dtype", "tolerance.atol"})
        QVERIFY2(all.find(std::string("definition.json: ") + field) != std::string::npos, all.c_str());
    QVERIFY2(all.find("reference.cpp") != std::string::npos, all.c_str());
}

// A task's precision rule ("precision" in definition.json): read, refused with the field named
// when malformed, and stated in the coder's brief.
void TestTaskLoader::precisionRule_data()
{
    QTest::addColumn<QString>("precision"); // the value given to "precision" in rmsnorm's definition
    QTest::addColumn<QString>("field"); // the field the refusal names; empty: accepted
    QTest::newRow("rule and tf32") << R"({"rule": "fp32 math throughout", "tf32": true})"
                                   << "";
    QTest::newRow("not an object") << "3"
                                   << "precision";
    QTest::newRow("empty rule") << R"({"rule": ""})"
                                << "precision.rule";
    QTest::newRow("tf32 as text") << R"({"tf32": "yes"})"
                                  << "precision.tf32";
    QTest::newRow("unknown field") << R"({"fp16": true})"
                                   << "precision.fp16";
}

void TestTaskLoader::precisionRule()
{
    QFETCH(QString, precision);
    QFETCH(QString, field);
    QTemporaryDir dir;
    const fs::path root = fs::path(dir.path().toStdString()) / "rmsnorm";
    test::copyTree(test::tasksDir() / "rmsnorm", root);
    auto def = nlohmann::json::parse(test::readText(root / "definition.json"));
    def["precision"] = nlohmann::json::parse(precision.toStdString());
    test::writeText(root / "definition.json", def.dump(2));
    const auto result = loadTask(root);
    if (!field.isEmpty()) {
        QVERIFY(!result.task.has_value());
        const auto errors = result.diagnostics.errors();
        QVERIFY(!errors.empty());
        QCOMPARE(QString::fromStdString(errors.front().field), field);
        return;
    }
    QVERIFY2(result.task.has_value(), result.diagnostics.formatAll().c_str());
    QCOMPARE(result.task->definition.precision.text, std::string("fp32 math throughout"));
    QVERIFY(result.task->definition.precision.tf32);
    const std::string brief = describeTask(*result.task, false);
    QVERIFY2(brief.find("Precision rule: fp32 math throughout") != std::string::npos
            && brief.find("TF32 for fp32 matrix products: allowed") != std::string::npos,
        brief.c_str());
    // Every shipped task states its rule (issue #15 point 6), and it reaches the coder's brief;
    // TF32 only where the task allows internals coarser than fp32 (TriMul: bf16 is allowed).
    for (const auto& entry : fs::directory_iterator(test::tasksDir())) {
        if (!fs::exists(entry.path() / "definition.json"))
            continue;
        const auto shipped = loadTask(entry.path());
        QVERIFY2(shipped.task, shipped.diagnostics.formatAll().c_str());
        const PrecisionRule& rule = shipped.task->definition.precision;
        const std::string name = entry.path().filename().string();
        QVERIFY2(!rule.text.empty(), name.c_str());
        QCOMPARE(rule.tf32, name == "trimul");
        const std::string shippedBrief = describeTask(*shipped.task, false);
        QVERIFY2(shippedBrief.find("Precision rule: " + rule.text) != std::string::npos, shippedBrief.c_str());
        QVERIFY2(shippedBrief.find(rule.tf32 ? "TF32 for fp32 matrix products: allowed"
                                             : "TF32 for fp32 matrix products: not "
                                               "allowed")
                != std::string::npos,
            shippedBrief.c_str());
    }
}

// Every shipped task holds two workloads out (scripts/held_out_workloads.py), each in a shape that
// none of the shown workloads has: a program fitted to the shapes in the brief fails one of them,
// and J, over the shown (or scored) workloads alone, stays the paper's.
void TestTaskLoader::shippedTasksHoldShapesOut()
{
    int tasks = 0;
    for (const auto& entry : fs::directory_iterator(test::tasksDir())) {
        if (!fs::exists(entry.path() / "definition.json"))
            continue;
        const auto loaded = loadTask(entry.path());
        QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
        const Task& task = *loaded.task;
        const Definition& d = task.definition;
        const std::string name = entry.path().filename().string();
        QVERIFY2(d.heldOutWorkloads.size() == 2, name.c_str());
        const auto shape = [&](const Workload& w) {
            std::vector<std::int64_t> values;
            for (const auto* axis : d.varAxes())
                values.push_back(w.axes.at(axis->name));
            return values;
        };
        std::set<std::vector<std::int64_t>> shown;
        for (const auto& w : task.workloads)
            if (!d.holdsOut(w.uuid))
                shown.insert(shape(w));
        for (const std::string& id : d.heldOutWorkloads) {
            const Workload* w = task.workload(id);
            QVERIFY2(w, (name + ": " + id).c_str());
            QVERIFY2(!shown.count(shape(*w)), (name + ": held-out " + id + " has a shown workload's shape").c_str());
            QVERIFY2(std::find(d.scoredWorkloads.begin(), d.scoredWorkloads.end(), id) == d.scoredWorkloads.end(),
                (name + ": " + id).c_str());
        }
        ++tasks;
    }
    QVERIFY(tasks >= 6);
}

void TestTaskLoader::warnsOnFolderNameMismatch()
{
    QTemporaryDir dir;
    const fs::path copy = fs::path(dir.path().toStdString()) / "renamed";
    test::copyTree(test::tasksDir() / "rmsnorm", copy);
    const auto result = loadTask(copy);
    QVERIFY(result.task.has_value()); // a warning does not make the task invalid
    QVERIFY(result.diagnostics.formatAll().find("differs from the folder name") != std::string::npos);
}

void TestTaskLoader::prefixLookup()
{
    const auto result = loadTask(test::tasksDir() / "rmsnorm");
    QVERIFY(result.task.has_value());
    const auto& first = result.task->workloads.front();
    QCOMPARE(result.task->workload(first.uuid.substr(0, 8)), &first);
    QCOMPARE(result.task->workload("not-a-workload"), nullptr);
}

KS_TEST_MAIN_CORE(TestTaskLoader)
#include "tst_taskloader.moc"
