// `ksearch tasks import`: FlashInfer-Bench definitions and workloads (the copies in
// tests/data/fib are in its format, with references written for this project) become task
// folders that load and check; what the task format cannot carry is named. The round trip
// imports, searches with PyTorch candidates (the reference.py as ground truth and baseline) and
// exports a FlashInfer-Bench solution.

#include "testmain.h"
#include "testsupport.h"

#include <task/fibimport.h>
#include <task/strictjson.h>
#include <task/task.h>

#include <QProcess>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace ks;
namespace fs = std::filesystem;

namespace {

fs::path fibData(const std::string& name)
{
    return test::sourceDir() / "tests" / "data" / "fib" / name;
}

const char* kGqa = "gqa_paged_decode_h32_kv4_d128_ps1";

// A FlashInfer-Bench dataset in miniature: workloads/<op>/<def>.jsonl whose index tensors live in
// blob/workloads/<op>/<def>_w.safetensors, paths relative to the root.
fs::path writeGqaDataset(const fs::path& root)
{
    test::writeSafetensors(root / "blob" / "workloads" / "gqa_paged" / "w0.safetensors",
        {{"kv_indptr", {0, 3, 3, 8}}, {"kv_indices", {4, 1, 0, 7, 2, 9, 5, 3}}});
    const std::string blob = "./blob/workloads/gqa_paged/w0.safetensors";
    const fs::path jsonl = root / "workloads" / "gqa_paged" / (std::string(kGqa) + ".jsonl");
    test::writeText(jsonl,
        std::string(R"({"definition": ")") + kGqa
            + R"(", "solution": null, "evaluation": null, "workload": {"uuid": "w0", "axes": {"batch_size": 3, "num_pages": 10, "len_indptr": 4, "num_kv_indices": 8}, "inputs": {"q": {"type": "random"}, "k_cache": {"type": "random"}, "v_cache": {"type": "random"}, "kv_indptr": {"type": "safetensors", "path": ")"
            + blob + R"(", "tensor_key": "kv_indptr"}, "kv_indices": {"type": "safetensors", "path": ")" + blob
            + R"(", "tensor_key": "kv_indices"}, "sm_scale": {"type": "scalar", "value": 0.08838834764831843}}}})"
            + "\n");
    return jsonl;
}

} // namespace

class TestFibImport : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void importsADefinitionWithItsWorkloads_data();
    void importsADefinitionWithItsWorkloads();
    void importsEachPaperDefinition_data();
    void importsEachPaperDefinition();
    void namesWhatItCannotCarry_data();
    void namesWhatItCannotCarry();
    void importSearchExport();

private:
    QTemporaryDir m_dir;
    fs::path m_root;
};

void TestFibImport::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
}

void TestFibImport::importsADefinitionWithItsWorkloads_data()
{
    QTest::addColumn<bool>("giveBlobs");
    QTest::newRow("blobs found above the workloads") << false;
    QTest::newRow("--blobs") << true;
}

void TestFibImport::importsADefinitionWithItsWorkloads()
{
    QFETCH(bool, giveBlobs);
    const fs::path dataset = m_root / (giveBlobs ? "dataset-b" : "dataset-a");
    FibImportOptions o;
    o.definition = fibData(std::string(kGqa) + ".json");
    o.workloads = writeGqaDataset(dataset);
    if (giveBlobs)
        o.blobs = dataset;
    o.out = m_root / (giveBlobs ? "out-b" : "out-a") / kGqa;
    const FibImportResult r = importFibTask(o);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());

    // The definition keeps FlashInfer-Bench's order and fields, without the reference, plus a tolerance.
    std::string why;
    const auto source = parseStrictJson(*readTextFile(o.definition.string()), why);
    const auto written = parseStrictJson(*readTextFile((o.out / "definition.json").string()), why);
    QVERIFY(source && written);
    QVERIFY(!written->contains("reference"));
    QCOMPARE((*written)["inputs"].dump(), (*source)["inputs"].dump());
    QCOMPARE((*written)["outputs"].dump(), (*source)["outputs"].dump());
    QCOMPARE((*written)["tolerance"]["required_matched_ratio"].get<double>(), 1.0);
    QCOMPARE(test::readText(o.out / "reference.py"), (*source)["reference"].get<std::string>());
    // The blob is inside the task folder now, at the same relative path.
    QVERIFY(fs::exists(o.out / "blob" / "workloads" / "gqa_paged" / "w0.safetensors"));

    const TaskLoadResult loaded = loadTask(o.out);
    QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
    QVERIFY(loaded.task->files.referencePy && !loaded.task->files.referenceCpp);
    QCOMPARE(loaded.task->workloads.size(), std::size_t {1});
    QCOMPARE(loaded.task->definition.inputs.front().name, std::string("q"));
}

// The paper's four FlashInfer-Bench definitions (in its form, with references written for this
// project), each with the workloads of the matching shipped task: the import loads as a task with
// the definition's tensors in order and FlashInfer-Bench's tolerance, and its reference parses.
void TestFibImport::importsEachPaperDefinition_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("matchedRatio");
    for (const char* name : {"gqa_paged_decode_h32_kv4_d128_ps1", "mla_paged_decode_h16_ckv512_kpe64_ps1",
             "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"})
        QTest::newRow(name) << QString::fromLatin1(name) << 1.0;
    QTest::newRow("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048")
        << u"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"_qs << 0.95;
}

void TestFibImport::importsEachPaperDefinition()
{
    QFETCH(QString, name);
    QFETCH(double, matchedRatio);
    FibImportOptions o;
    o.definition = fibData(name.toStdString() + ".json");
    o.workloads = test::tasksDir() / name.toStdString() / "workloads.jsonl";
    o.out = m_root / "paper" / name.toStdString();
    const FibImportResult r = importFibTask(o);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());
    const TaskLoadResult imported = loadTask(o.out);
    QVERIFY2(imported.task, imported.diagnostics.formatAll().c_str());
    const TaskLoadResult shipped = loadTask(test::tasksDir() / name.toStdString());
    QVERIFY(shipped.task);
    QCOMPARE(imported.task->workloads.size(), shipped.task->workloads.size());
    const auto names = [](const std::vector<TensorSpec>& specs) {
        std::vector<std::string> out;
        for (const auto& t : specs)
            out.push_back(t.name + ":" + std::string(dtypeName(t.dtype)));
        return out;
    };
    QCOMPARE(names(imported.task->definition.inputs), names(shipped.task->definition.inputs));
    QCOMPARE(names(imported.task->definition.outputs), names(shipped.task->definition.outputs));
    QCOMPARE(imported.task->definition.tolerance.requiredMatchedRatio, matchedRatio);
    QProcess parse;
    parse.start(u"python3"_qs,
        {u"-c"_qs, u"import ast, sys; ast.parse(open(sys.argv[1]).read())"_qs,
            QString::fromStdString((o.out / "reference.py").string())});
    QVERIFY(parse.waitForFinished(60000));
    QVERIFY2(parse.exitCode() == 0, parse.readAllStandardError().constData());
}

void TestFibImport::namesWhatItCannotCarry_data()
{
    QTest::addColumn<QString>("edit"); // what is changed in the definition or the workloads
    QTest::addColumn<QString>("mentions");
    QTest::newRow("unknown field") << u"field"_qs << u": extra: not supported by ksearch's task format"_qs;
    QTest::newRow("unsupported dtype") << u"dtype"_qs << u": inputs.q.dtype: 'float4_e2m1' is not supported"_qs;
    QTest::newRow("no reference") << u"reference"_qs << u": reference: missing, or without a run function"_qs;
    QTest::newRow("no workloads") << u"noworkloads"_qs << u"no workloads: a task needs them"_qs;
    QTest::newRow("another definition's workload") << u"definition"_qs << u".jsonl:1: definition:"_qs;
    QTest::newRow("missing blob") << u"blob"_qs << u"not found above the workloads file: give the dataset root"_qs;
    QTest::newRow("folder in the way") << u"out"_qs << u"exists and is not empty: choose another --out"_qs;
}

void TestFibImport::namesWhatItCannotCarry()
{
    QFETCH(QString, edit);
    QFETCH(QString, mentions);
    const fs::path dir = m_root / ("bad-" + std::to_string(std::rand()));
    auto def = nlohmann::ordered_json::parse(test::readText(fibData(std::string(kGqa) + ".json")));
    if (edit == u"field")
        def["extra"] = 1;
    else if (edit == u"dtype")
        def["inputs"]["q"]["dtype"] = "float4_e2m1";
    else if (edit == u"reference")
        def.erase("reference");
    test::writeText(dir / "def.json", def.dump(2));
    FibImportOptions o;
    o.definition = dir / "def.json";
    if (edit != u"noworkloads")
        o.workloads = writeGqaDataset(dir / "dataset");
    if (edit == u"definition") {
        std::string text = test::readText(*o.workloads);
        text.replace(text.find(kGqa), std::string(kGqa).size(), "gemm_n128_k2048");
        test::writeText(*o.workloads, text);
    }
    if (edit == u"blob")
        fs::remove(dir / "dataset" / "blob" / "workloads" / "gqa_paged" / "w0.safetensors");
    o.out = dir / "out";
    if (edit == u"out")
        test::writeText(o.out / "keep.txt", "someone's file\n");
    const FibImportResult r = importFibTask(o);
    QVERIFY(!r.ok());
    std::string all;
    for (const auto& e : r.errors)
        all += e + "\n";
    QVERIFY2(all.find(mentions.toStdString()) != std::string::npos, all.c_str());
    if (edit == u"out")
        QCOMPARE(test::readText(o.out / "keep.txt"), std::string("someone's file\n")); // nothing lost
}

// Import, a short search whose coder answers with a PyTorch rmsnorm (the reference.py makes the
// expected outputs and is the baseline), then export: a FlashInfer-Bench solution in Python.
void TestFibImport::importSearchExport()
{
    const std::string python = test::pythonWithTorch();
    if (python.empty())
        QSKIP("no python3 with torch here: scripts/setup.sh --tests installs Debian's python3-torch");
    const fs::path task = m_root / "rmsnorm_h128";
    auto r = test::runProgram(u"ksearch"_qs,
        {u"tasks"_qs, u"import"_qs, QString::fromStdString(fibData("rmsnorm_h128.json").string()), u"--workloads"_qs,
            QString::fromStdString(fibData("rmsnorm_h128.jsonl").string()), u"--out"_qs,
            QString::fromStdString(task.string())});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"every element (FlashInfer-Bench's default)"_qs), qPrintable(r.out));
    r = test::runProgram(u"ksearch"_qs,
        {u"tasks"_qs, u"check"_qs, QString::fromStdString(task.string()), u"--python"_qs,
            QString::fromStdString(python)});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));

    // A compiled C++ candidate against the same task: reference.py still makes the expected
    // outputs and is the baseline, so the task needs Python whatever the candidate's language.
    const fs::path cpp = m_root / "rms.cpp";
    test::writeText(cpp,
        "#include \"ks_task.h\"\n#include <cmath>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t b = 0; b < a->batch_size; ++b) {\n"
        "        const ks_bf16_t* x = a->hidden_states + b * KS_HIDDEN_SIZE;\n"
        "        float ss = 0.0f;\n"
        "        for (int64_t j = 0; j < KS_HIDDEN_SIZE; ++j) ss += ks_to_float(x[j]) * ks_to_float(x[j]);\n"
        "        const float inv = 1.0f / std::sqrt(ss / (float)KS_HIDDEN_SIZE + a->eps);\n"
        "        for (int64_t j = 0; j < KS_HIDDEN_SIZE; ++j)\n"
        "            a->output[b * KS_HIDDEN_SIZE + j] =\n"
        "                ks_from_float_bf16(ks_to_float(x[j]) * inv * ks_to_float(a->weight[j]));\n"
        "    }\n    return 0;\n}\n");
    const QStringList evalCpp {u"eval"_qs, u"--task"_qs, QString::fromStdString(task.string()), u"--backend"_qs,
        u"host"_qs, u"--max-seconds"_qs, u"0.05"_qs, QString::fromStdString(cpp.string()), u"--python"_qs};
    r = test::runProgram(u"ksearch"_qs, evalCpp + QStringList {QString::fromStdString(python)});
    QVERIFY2(r.exitCode == 0 && r.out.contains(u"PASSED: J ="_qs), qPrintable(r.out + r.err));
    r = test::runProgram(u"ksearch"_qs, evalCpp + QStringList {u"/nonexistent/python3"_qs});
    QVERIFY2(r.exitCode == 3, qPrintable(r.err));
    QVERIFY2(r.err.contains(u"the task's PyTorch reference (reference.py) needs Python"_qs), qPrintable(r.err));

    const fs::path candidate = m_root / "rms.py";
    test::writeText(candidate,
        "import torch\n\ndef run(hidden_states, weight, eps, output):\n    x = hidden_states.float()\n"
        "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"
        "    output.copy_(y.to(torch.bfloat16))\n");
    const fs::path session = m_root / "session";
    const QString llm =
        u"python3 "_qs + QString::fromStdString((test::sourceDir() / "bench" / "scripted_llm.py").string());
    r = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, QString::fromStdString(task.string()), u"--session"_qs,
            QString::fromStdString(session.string()), u"--backend"_qs, u"host"_qs, u"--language"_qs, u"python"_qs,
            u"--python"_qs, QString::fromStdString(python), u"--provider"_qs, u"command"_qs, u"--command"_qs, llm,
            u"--model"_qs, u"scripted"_qs, u"--budget"_qs, u"3"_qs, u"-k"_qs, u"1"_qs, u"--bench-seconds"_qs,
            u"0.05"_qs, u"--quiet"_qs},
        300000,
        {u"KS_SCRIPTED_TASK="_qs + QString::fromStdString(task.string()),
            u"KS_SCRIPTED_FILES="_qs + QString::fromStdString(candidate.string())});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"Evaluations: 3 of 3 (PASSED 3)"_qs), qPrintable(r.out)); // the PyTorch candidate, always

    const fs::path exported = m_root / "export";
    r = test::runProgram(u"ksearch"_qs,
        {u"export"_qs, u"--session"_qs, QString::fromStdString(session.string()), u"--out"_qs,
            QString::fromStdString(exported.string())});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    // The solutions are Python, measured on the CPU: the warning says that, not "C++".
    QVERIFY2(r.err.contains(u"measured on the CPU"_qs) && !r.err.contains(u"C++"_qs), qPrintable(r.err));
    QVERIFY2(!r.err.contains(u"definitions/ not written"_qs), qPrintable(r.err));
    QCOMPARE(test::readText(exported / "best_kernel.py").find("def run(hidden_states, weight, eps, output)")
            != std::string::npos,
        true);
    const auto solution = nlohmann::json::parse(test::readText(exported / "solution.json"));
    QCOMPARE(solution["definition"].get<std::string>(), std::string("rmsnorm_h128"));
    QCOMPARE(solution["spec"]["language"].get<std::string>(), std::string("python"));
    QCOMPARE(solution["spec"]["entry_point"].get<std::string>(), std::string("main.py::run"));
    QVERIFY(solution["spec"]["destination_passing_style"].get<bool>());
    QVERIFY(
        fs::exists(exported / "flashinfer-bench" / "traces" / "k-search-studio" / "rmsnorm" / "rmsnorm_h128.jsonl"));
    // The definition goes back into the dataset as FlashInfer-Bench wrote it: the imported task's
    // reference.py as its reference, the same axes, inputs and outputs (FlashInfer-Bench's own
    // loader reading such an export: bench/fib_load_check.py, docs/languages.md).
    const auto original = nlohmann::json::parse(test::readText(fibData("rmsnorm_h128.json")));
    const auto back = nlohmann::json::parse(
        test::readText(exported / "flashinfer-bench" / "definitions" / "rmsnorm" / "rmsnorm_h128.json"));
    QCOMPARE(back["reference"].get<std::string>(), test::readText(task / "reference.py"));
    for (const char* field : {"name", "op_type", "axes", "inputs", "outputs"})
        QVERIFY2(back[field] == original[field], field);
}

KS_TEST_MAIN_CORE(TestFibImport)
#include "tst_fibimport.moc"
