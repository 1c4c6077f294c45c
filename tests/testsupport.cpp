#include "testsupport.h"

#include "fakellm.h"

#include <QEventLoop>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTest>
#include <QTimer>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ks::test {

namespace fs = std::filesystem;

// Overridable at run time, for a build carried to another machine (the GPU machine).
fs::path sourceDir()
{
    const char* env = std::getenv("KSEARCH_TEST_SOURCE_DIR");
    return env && *env ? fs::path(env) : fs::path(KSEARCH_SOURCE_DIR);
}

fs::path binDir()
{
    const char* env = std::getenv("KSEARCH_TEST_BIN_DIR");
    return env && *env ? fs::path(env) : fs::path(KSEARCH_BIN_DIR);
}

fs::path tasksDir()
{
    return sourceDir() / "tasks";
}

void addTaskRowsWith(const char* file)
{
    QTest::addColumn<QString>("task");
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(tasksDir()))
        if (fs::exists(entry.path() / file))
            folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end()); // stable row order, whatever the file system's
    for (const auto& f : folders)
        QTest::addRow("%s", f.filename().c_str()) << QString::fromStdString(f.string());
}

void writeText(const fs::path& path, const std::string& text)
{
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string readText(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void copyTree(const fs::path& from, const fs::path& to)
{
    fs::create_directories(to);
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

void copySessionCutShort(const fs::path& from, const fs::path& to, int evaluations)
{
    fs::copy(from, to, fs::copy_options::recursive);
    std::ifstream in(from / "journal.jsonl");
    std::ofstream out(to / "journal.jsonl", std::ios::trunc);
    int seen = 0;
    for (std::string line; seen < evaluations && std::getline(in, line);) {
        out << line << "\n";
        seen += line.find("\"type\":\"evaluation\"") != std::string::npos ? 1 : 0;
    }
    fs::remove(to / "tree.json");
}

void copySessionAsCuda(const fs::path& from, const fs::path& to, const std::string& resources)
{
    copyTree(from, to);
    auto config = nlohmann::json::parse(readText(to / "session.json"));
    config["backend"] = "cuda";
    writeText(to / "session.json", config.dump(1));
    if (resources.empty())
        return;
    const std::string compact = nlohmann::json::parse(resources).dump();
    for (const char* file : {"journal.jsonl", "tree.json"}) {
        std::string text = readText(to / file);
        const std::string empty = "\"resources\":[]";
        for (auto at = text.find(empty); at != std::string::npos; at = text.find(empty, at))
            text.replace(at, empty.size(), "\"resources\":" + compact);
        writeText(to / file, text);
    }
}

std::string scaleDefinition(const std::string& costBytes)
{
    return R"JSON({"name": "scale", "op_type": "elementwise",
  "axes": {"n": {"type": "var"}},
  "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "alpha": {"shape": null, "dtype": "float32"}},
  "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
  "tolerance": {"atol": 1e-5, "rtol": 1e-5},
  "cost_model": {"bytes": ")JSON"
        + costBytes + R"JSON(", "flops": "n"}})JSON";
}

void writeScaleTask(const fs::path& dir, const std::vector<long>& sizes, int baselinePasses)
{
    writeText(dir / "definition.json", scaleDefinition());
    std::string workloads;
    for (long n : sizes)
        workloads += R"({"definition": "scale", "workload": {"uuid": "n-)" + std::to_string(n) + R"(", "axes": {"n": )"
            + std::to_string(n)
            + R"(}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 1.5}}}})" + "\n";
    writeText(dir / "workloads.jsonl", workloads);
    writeText(dir / "reference.cpp",
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}\n");
    writeText(dir / "baseline.cpp", scaleKernel(baselinePasses));
}

QString fakeLlmCommand()
{
    return QString::fromStdString((binDir() / "ks_fake_llm").string());
}

ks::SessionConfig demoSearchConfig(int budget, double minImprovement)
{
    ks::SessionConfig c;
    c.taskName = "matmul_host_demo";
    c.taskDir = sourceDir() / "resources" / "examples" / "matmul-demo" / "matmul_host_demo";
    c.backend = "host";
    c.settings.budget = budget;
    c.settings.stagnation = 2;
    c.settings.minImprovement = minImprovement;
    c.planner.provider = QStringLiteral("command");
    c.planner.command = fakeLlmCommand();
    c.planner.model = QStringLiteral("scripted-demo");
    c.coder = c.planner;
    return c;
}

void writeSafetensors(const std::filesystem::path& path, const std::vector<BlobTensor>& tensors, std::size_t truncate)
{
    nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
    std::string data;
    for (const auto& t : tensors) {
        const std::size_t begin = data.size();
        data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
        header[t.key] = {{"dtype", t.dtype},
            {"shape", t.shape.empty() ? std::vector<std::size_t> {t.values.size()} : t.shape},
            {"data_offsets", {begin, data.size()}}};
    }
    const std::string text = header.dump();
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    file += text + data;
    file.resize(file.size() - truncate);
    writeText(path, file);
}

std::string pythonWithTorch()
{
    static const std::string found = [] {
        QStringList candidates {QStringLiteral("python3"), QStringLiteral("/usr/bin/python3")};
        if (const QString env = qEnvironmentVariable("KSEARCH_PYTHON"); !env.isEmpty())
            candidates.prepend(env);
        for (const QString& python : candidates) {
            QProcess p;
            p.start(python, {QStringLiteral("-c"), QStringLiteral("import torch")});
            if (p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0)
                return python.toStdString();
        }
        return std::string();
    }();
    return found;
}

ProcessOutput runProgram(
    const QString& program, const QStringList& arguments, int timeoutMs, const QStringList& extraEnvironment)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& kv : extraEnvironment) {
        const auto eq = kv.indexOf(u'=');
        env.insert(kv.left(eq), kv.mid(eq + 1));
    }
    p.setProcessEnvironment(env);
    p.start(QString::fromStdString((binDir() / program.toStdString()).string()), arguments);
    ProcessOutput out;
    if (!p.waitForStarted(10000))
        return out;
    // Wait with the event loop running: a test's loopback server must go on answering the child.
    QEventLoop loop;
    QObject::connect(&p, &QProcess::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    if (p.state() != QProcess::NotRunning)
        loop.exec();
    if (p.state() != QProcess::NotRunning) {
        p.kill();
        p.waitForFinished();
    }
    out.crashed = p.exitStatus() == QProcess::CrashExit;
    out.exitCode = p.exitCode();
    out.out = QString::fromUtf8(p.readAllStandardOutput());
    out.err = QString::fromUtf8(p.readAllStandardError());
    return out;
}

namespace {

std::optional<long long> persistingL2MaxBytes()
{
    const ProcessOutput probe = runProgram(QStringLiteral("ksearch-runner"), {QStringLiteral("--probe")}, 60000);
    if (probe.crashed || probe.exitCode != 0)
        return std::nullopt;
    const auto json = nlohmann::json::parse(probe.out.toStdString(), nullptr, false);
    if (json.is_discarded() || !json.contains("devices") || json["devices"].empty())
        return std::nullopt;
    return json["devices"][0].value("persisting_l2_max_bytes", 0LL);
}

} // namespace

PersistingWindow persistingWindowPerSet(long long setBytes, int sets)
{
    const auto most = persistingL2MaxBytes();
    if (!most)
        return {0, QStringLiteral("ksearch-runner --probe did not report the device's persisting-L2 carve-out")};
    PersistingWindow w {std::min(setBytes, *most / sets), {}};
    if (w.bytes < setBytes * 9 / 10)
        w.skip = QStringLiteral("a persisting-L2 carve-out of %1 bytes holds %2 bytes of each of the %3 input sets "
                                "the timing loop rotates, under 90 % of a set's %4: nothing a window could keep")
                     .arg(*most)
                     .arg(*most / sets)
                     .arg(sets)
                     .arg(setBytes);
    return w;
}

} // namespace ks::test
