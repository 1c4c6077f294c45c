// The compilers run the untrusted source too: a candidate that includes or embeds a file of the
// user's would put it into the compile log, which the code policy reads next (and the LLM
// provider with it), or into its library. compileKernel runs the compiler under
// `ksearch-runner --compile` (gpu/runner/confinedcompile.h), which hides the home folders as a
// candidate's runner does. Each row tries one way in with the compiler confined and with
// confinement turned off: off, the secret reaches the log or the library (the escape is real);
// confined it does not. Skipped, saying why, where the runner could not hide the homes.

#include "confinementsupport.h"
#include "testmain.h"
#include "testsupport.h"

#include <QStandardPaths>
#include <QTemporaryDir>

#include <compiler.h>
#include <optional>

using namespace ks;
namespace fs = std::filesystem;

class TestCompileConfinement : public QObject
{
    Q_OBJECT
private slots:
    void compilerCannotReadTheHomeFolder_data();
    void compilerCannotReadTheHomeFolder();
    void compilerCannotReadTheTaskFolder();
    void legitimateSetupsStillCompile_data();
    void legitimateSetupsStillCompile();
    void compilerConfinementIsReported();
};

namespace {

constexpr const char* kSecret = "sk-must-not-leak-7d41";

const char* const kRun = "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { return 0; }\n";

CompileRequest requestFor(Backend backend, const fs::path& source, const fs::path& workDir, bool confine)
{
    CompileRequest r;
    r.backend = backend;
    r.source = source;
    r.abiHeader = "#pragma once\n#include <cstddef>\n#include <cstdint>\nstruct KsArgs { int64_t n; };\n"
                  "typedef void* ks_stream_t;\n";
    r.workDir = workDir;
    r.confine = confine;
    return r;
}

bool nvccFound()
{
    return fs::exists(nvccPath()) || !QStandardPaths::findExecutable(QString::fromStdString(nvccPath())).isEmpty();
}

// Sets an environment variable for as long as it lives (the compilers' environment is read when
// they start).
class ScopedVariable
{
public:
    ScopedVariable(const char* name, const QByteArray& value)
        : m_name(name)
        , m_wasSet(qEnvironmentVariableIsSet(name))
        , m_before(qgetenv(name))
    {
        qputenv(name, value);
    }
    ~ScopedVariable()
    {
        if (m_wasSet)
            qputenv(m_name, m_before);
        else
            qunsetenv(m_name);
    }
    ScopedVariable(const ScopedVariable&) = delete;
    ScopedVariable& operator=(const ScopedVariable&) = delete;

private:
    const char* m_name;
    bool m_wasSet;
    QByteArray m_before;
};

bool libraryHolds(const fs::path& library, const std::string& text)
{
    return fs::exists(library) && test::readText(library).find(text) != std::string::npos;
}

} // namespace

void TestCompileConfinement::compilerCannotReadTheHomeFolder_data()
{
    QTest::addColumn<int>("backend");
    QTest::addColumn<QString>("source"); // HOME stands for the test's home folder
    QTest::addColumn<bool>("leaksIntoTheLog"); // else: into the library
    QTest::newRow("host: #include of a file in the home folder")
        << static_cast<int>(Backend::Host) << u"#include \"HOME/secret.h\"\n"_qs << true;
    QTest::newRow("host: .incbin of a file in the home folder")
        << static_cast<int>(Backend::Host) << u"asm(\".section .rodata\\n.incbin \\\"HOME/secret.h\\\"\\n.text\");\n"_qs
        << false;
    QTest::newRow("cuda: #include of a file in the home folder")
        << static_cast<int>(Backend::Cuda) << u"#include \"HOME/secret.h\"\n"_qs << true;
}

void TestCompileConfinement::compilerCannotReadTheHomeFolder()
{
    QFETCH(int, backend);
    QFETCH(QString, source);
    QFETCH(bool, leaksIntoTheLog);
    const auto b = static_cast<Backend>(backend);
    if (b == Backend::Cuda && !nvccFound())
        QSKIP("nvcc not found: the CUDA toolkit is not installed");
    const auto home = test::folderOnTheDisk("home");
    QVERIFY(home);
    const fs::path homeDir = home->path().toStdString();
    // Included, it stops the compile with the secret in the message; embedded, it is in the library.
    test::writeText(homeDir / "secret.h", std::string("#error ") + kSecret + "\n");
    const test::HomeFolder homeForCompilers(homeDir);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path file = root / (b == Backend::Cuda ? "candidate.cu" : "candidate.cpp");
    test::writeText(file,
        "#include \"ks_task.h\"\n" + source.replace(u"HOME"_qs, QString::fromStdString(homeDir.string())).toStdString()
            + kRun);

    const CompileResult off = compileKernel(requestFor(b, file, root / "off", false));
    const bool leakedOff =
        leaksIntoTheLog ? off.log.find(kSecret) != std::string::npos : off.ok && libraryHolds(off.library, kSecret);
    QVERIFY2(leakedOff, ("the escape does not work even unconfined: " + off.log).c_str());

    const CompileResult confined = compileKernel(requestFor(b, file, root / "confined", true));
    if (!confined.confinementGaps.empty())
        QSKIP(("the compiler ran without full confinement here: " + confined.confinementGaps.front()).c_str());
    QVERIFY2(confined.log.find(kSecret) == std::string::npos, confined.log.c_str());
    QVERIFY2(!libraryHolds(confined.library, kSecret), confined.log.c_str());
    QVERIFY2(!confined.ok, "the home folder's file was found"); // it is not there for the compiler
    QVERIFY2(confined.log.find("secret.h") != std::string::npos, confined.log.c_str()); // and the log says so
}

// An honest source compiles confined; the compile reports what it had, and a person's switch
// turns it off and says so.
void TestCompileConfinement::compilerConfinementIsReported()
{
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path file = root / "honest.cpp";
    test::writeText(file, std::string("#include \"ks_task.h\"\n") + kRun);
    const CompileResult confined = compileKernel(requestFor(Backend::Host, file, root / "confined", true));
    QVERIFY2(confined.ok, confined.log.c_str());
    QVERIFY(fs::exists(root / "confined" / "compile-confinement.json"));
    for (const auto& gap : confined.confinementGaps) // what this machine refuses, named
        QVERIFY2(gap == "no network namespace" || gap == "forked processes may outlive the run"
                || gap == "the filesystem is writable",
            gap.c_str());
    const CompileResult off = compileKernel(requestFor(Backend::Host, file, root / "off", false));
    QVERIFY2(off.ok, off.log.c_str());
    QCOMPARE(off.confinementGaps, std::vector<std::string> {"confinement turned off in the settings"});
}

// The task's folder is hidden from the compiler too (CompileRequest::hiddenPaths, which the
// evaluator sets): its workloads.jsonl lists the held-out shapes, and an #include of it would
// show its first line in the compile log the code policy reads.
void TestCompileConfinement::compilerCannotReadTheTaskFolder()
{
    const auto task = test::folderOnTheDisk("task");
    QVERIFY(task);
    const fs::path taskDir = task->path().toStdString();
    test::writeText(taskDir / "workloads.jsonl", std::string("#error ") + kSecret + "\n");
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path file = root / "candidate.cpp";
    test::writeText(
        file, "#include \"ks_task.h\"\n#include \"" + (taskDir / "workloads.jsonl").string() + "\"\n" + kRun);
    auto request = [&](const char* sub, bool confine) {
        CompileRequest r = requestFor(Backend::Host, file, root / sub, confine);
        r.hiddenPaths = {taskDir};
        return r;
    };
    const CompileResult off = compileKernel(request("off", false));
    QVERIFY2(off.log.find(kSecret) != std::string::npos, off.log.c_str()); // the escape is real
    const CompileResult confined = compileKernel(request("confined", true));
    if (!confined.confinementGaps.empty())
        QSKIP(("the compiler ran without full confinement here: " + confined.confinementGaps.front()).c_str());
    QVERIFY2(!confined.ok && confined.log.find(kSecret) == std::string::npos, confined.log.c_str());
    QVERIFY2(confined.log.find("workloads.jsonl") != std::string::npos, confined.log.c_str());
}

// What a confined compile must still reach, where a user keeps it under the hidden home folder:
// a compiler on PATH through a symbolic link (~/.local/bin, a conda environment), a work folder
// reached through a symbolic link, an include folder the flags name.
void TestCompileConfinement::legitimateSetupsStillCompile_data()
{
    QTest::addColumn<QString>("setup");
    QTest::newRow("compiler linked from a PATH folder in the home") << u"compiler"_qs;
    QTest::newRow("work folder through a link in the home") << u"workdir"_qs;
    QTest::newRow("include folder in the home, named by -I") << u"include"_qs;
}

void TestCompileConfinement::legitimateSetupsStillCompile()
{
    QFETCH(QString, setup);
    const auto home = test::folderOnTheDisk("home");
    const auto elsewhere = test::folderOnTheDisk("elsewhere");
    QVERIFY(home && elsewhere);
    const fs::path homeDir = home->path().toStdString(), otherDir = elsewhere->path().toStdString();
    const test::HomeFolder homeForCompilers(homeDir);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path file = root / "honest.cpp";
    std::string source = std::string("#include \"ks_task.h\"\n") + kRun;
    fs::path workDir = root / "work";
    std::vector<std::string> flags;
    std::optional<ScopedVariable> path, compiler;
    if (setup == u"compiler") {
        const QString gxx = QStandardPaths::findExecutable(QString::fromStdString(hostCompiler()));
        QVERIFY(!gxx.isEmpty());
        fs::create_directories(homeDir / "bin");
        fs::create_symlink(fs::canonical(gxx.toStdString()), homeDir / "bin" / "my-cxx");
        path.emplace("PATH", QByteArray::fromStdString((homeDir / "bin").string() + ":") + qgetenv("PATH"));
        compiler.emplace("KSEARCH_CXX", QByteArrayLiteral("my-cxx"));
    } else if (setup == u"workdir") {
        fs::create_symlink(otherDir, homeDir / "link");
        workDir = homeDir / "link" / "work";
    } else {
        test::writeText(homeDir / "inc" / "extra.h", "constexpr int kExtra = 1;\n");
        source = "#include \"extra.h\"\n" + source;
        flags = {"-I", (homeDir / "inc").string()};
    }
    test::writeText(file, source);
    CompileRequest r = requestFor(Backend::Host, file, workDir, true);
    r.extraFlags = flags;
    const CompileResult confined = compileKernel(r);
    QVERIFY2(confined.ok, (confined.command + "\n" + confined.log).c_str());
    if (!confined.confinementGaps.empty())
        QSKIP(("the compiler ran without full confinement here: " + confined.confinementGaps.front()).c_str());
}

KS_TEST_MAIN_CORE(TestCompileConfinement)
#include "tst_compileconfinement.moc"
