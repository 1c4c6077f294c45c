#include "testmain.h"
#include "testsupport.h"

#include <task/abiheader.h>
#include <task/definitionparser.h>
#include <task/strictjson.h>
#include <task/task.h>

#include <QTemporaryDir>

#include <compiler.h>

using namespace ks;
namespace fs = std::filesystem;

static Definition parse(const std::string& text)
{
    std::string err;
    const auto doc = parseStrictJson(text, err);
    Diagnostics diag;
    auto def = parseDefinition(*doc, "inline.json", diag);
    if (!def)
        qFatal("%s", diag.formatAll().c_str());
    return *def;
}

// Every kind of field, with alignment gaps that a naive layout would get wrong.
static const char* kMixed = R"({"name": "mixed", "op_type": "t",
  "axes": {"n": {"type": "var"}, "d": {"type": "const", "value": 64}, "m": {"type": "var"}},
  "inputs": {"flag": {"shape": null, "dtype": "bool"},
             "x": {"shape": ["n", "d"], "dtype": "float16"},
             "scale": {"shape": null, "dtype": "float32"},
             "bias": {"shape": null, "dtype": "bfloat16"},
             "idx": {"shape": ["m"], "dtype": "int64"},
             "offset": {"shape": null, "dtype": "int64"}},
  "outputs": {"y": {"shape": ["n", "d"], "dtype": "float8_e4m3fn"}, "lse": {"shape": ["n"], "dtype": "float32"}}})";

class TestAbiHeader : public QObject
{
    Q_OBJECT
private slots:
    void layoutOfRmsnorm();
    void layoutWithGaps();
    void headerDeclaresFieldsInOrder();
    void headerCompiles_data();
    void headerCompiles();
};

void TestAbiHeader::layoutOfRmsnorm()
{
    const auto task = loadTask(test::tasksDir() / "rmsnorm");
    QVERIFY(task.task);
    const AbiLayout l = computeAbiLayout(task.task->definition);
    QCOMPARE(l.fields.size(), std::size_t {6});
    QCOMPARE(l.fields[2].name, std::string("eps"));
    QCOMPARE(l.fields[2].offset, std::size_t {16});
    QCOMPARE(l.fields[3].offset, std::size_t {24}); // output pointer realigned after the float
    QCOMPARE(l.fields[5].name, std::string("hidden_size"));
    QCOMPARE(l.size, std::size_t {48});
}

void TestAbiHeader::layoutWithGaps()
{
    const AbiLayout l = computeAbiLayout(parse(kMixed));
    std::vector<std::pair<std::string, std::size_t>> got;
    for (const auto& f : l.fields)
        got.emplace_back(f.name, f.offset);
    const std::vector<std::pair<std::string, std::size_t>> expected {{"flag", 0}, {"x", 8}, {"scale", 16}, {"bias", 20},
        {"idx", 24}, {"offset", 32}, {"y", 40}, {"lse", 48}, {"n", 56}, {"m", 64}};
    QCOMPARE(got, expected);
    QCOMPARE(l.size, std::size_t {72});
}

void TestAbiHeader::headerDeclaresFieldsInOrder()
{
    const std::string h = generateAbiHeader(parse(kMixed));
    const std::vector<std::string> decls {"bool flag;", "const ks_f16_t* x;", "float scale;", "ks_bf16_t bias;",
        "const int64_t* idx;", "int64_t offset;", "ks_f8e4m3_t* y;", "float* lse;", "int64_t n;", "int64_t m;"};
    std::size_t pos = 0;
    for (const auto& d : decls) {
        const auto at = h.find(d, pos);
        QVERIFY2(at != std::string::npos, d.c_str());
        pos = at;
    }
    QVERIFY(h.find("#define KS_D 64LL") != std::string::npos);
    QVERIFY(h.find("extern \"C\"") != std::string::npos);
    QVERIFY(h.find("int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream);")
        != std::string::npos);
}

void TestAbiHeader::headerCompiles_data()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("host") << "host";
    QTest::newRow("cuda") << "cuda";
}

// The static_asserts in the header check the harness's offsets against the real compiler's.
void TestAbiHeader::headerCompiles()
{
    QFETCH(QString, backend);
    const Backend b = *parseBackend(backend.toStdString());
    if (b == Backend::Cuda && !fs::exists(nvccPath()))
        QSKIP("nvcc not found: the CUDA toolkit is not installed");
    QTemporaryDir dir;
    const fs::path src = fs::path(dir.path().toStdString()) / (b == Backend::Cuda ? "k.cu" : "k.cpp");
    test::writeText(src, R"(#include "ks_task.h"
extern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {
    return a->n == KS_D ? 0 : (int)a->scale;
})");
    CompileRequest req;
    req.backend = b;
    req.source = src;
    req.abiHeader = generateAbiHeader(parse(kMixed));
    req.workDir = fs::path(dir.path().toStdString()) / "build";
    req.extraFlags = {"-Werror"};
    if (b == Backend::Cuda)
        req.extraFlags = {"-Werror", "all-warnings"};
    const CompileResult r = compileKernel(req);
    QVERIFY2(r.ok, (r.command + "\n" + r.log).c_str());
    QVERIFY(fs::exists(r.library));
}

KS_TEST_MAIN_CORE(TestAbiHeader)
#include "tst_abiheader.moc"
