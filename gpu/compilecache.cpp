#include "compilecache.h"

#include "subprocess.h"

#include <task/strictjson.h>

#include <QCryptographicHash>

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <mutex>

namespace ks {

namespace fs = std::filesystem;

std::string compilerVersion(Backend backend)
{
    static std::mutex mutex;
    static std::map<std::string, std::string> known;
    const std::string program = backend == Backend::Cuda ? nvccPath() : hostCompiler();
    std::lock_guard lock(mutex);
    if (const auto it = known.find(program); it != known.end())
        return it->second;
    SubprocessRequest req;
    req.argv = {program, "--version"};
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(30);
    const auto r = runSubprocess(req);
    std::string version = r.succeeded() ? r.out : "unknown " + program;
    // c++ puts its version first, nvcc last.
    std::vector<std::string> lines;
    std::string line;
    for (const char c : version) {
        if (c == '\n') {
            if (!line.empty())
                lines.push_back(line);
            line.clear();
        } else {
            line += c;
        }
    }
    if (!line.empty())
        lines.push_back(line);
    version = lines.empty() ? program : (backend == Backend::Cuda ? lines.back() : lines.front());
    known[program] = version;
    return version;
}

fs::path defaultCompileCacheDir()
{
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/tmp") / ".cache";
    return base / "ksearch" / "kernels";
}

namespace {
// Whether this machine confines compilers fully, as the last fresh confined compile found: -1 not
// known yet, 0 no, 1 yes. Decides whether a cached library built with gaps is compiled again.
std::atomic<int> g_compilerConfinable {-1};
} // namespace

CompileCache::CompileCache(fs::path dir)
    : m_dir(std::move(dir))
{
}

CompileCache::Result CompileCache::compile(const CompileRequest& request)
{
    Result result;
    const auto source = readTextFile(request.source.string());
    if (!source) {
        result.compile.log = request.source.string() + ": cannot read";
        return result;
    }
    QCryptographicHash hash(QCryptographicHash::Sha256);
    auto add = [&](const std::string& s) {
        hash.addData(QByteArrayView(s.data(), static_cast<qsizetype>(s.size())));
        hash.addData(QByteArrayView("\0", 1));
    };
    add(*source);
    add(request.abiHeader);
    add(backendName(request.backend));
    add(request.cudaArch);
    for (const auto& f : request.extraFlags)
        add(f);
    add(compilerVersion(request.backend));
    // What an unconfined compiler built may hold what a confined one cannot read (and libraries
    // cached before compilers were confined are not reused: their keys had neither word).
    add(request.confine ? "confined compile" : "unconfined compile");
    result.key = hash.result().toHex().left(32).toStdString();

    const fs::path entry = m_dir / result.key;
    const fs::path library = entry / "kernel.so"; // identical sources share one entry, whatever their names
    const fs::path meta = entry / "compile.json";
    std::error_code ec;
    if (fs::exists(library, ec) && fs::exists(meta, ec)) {
        std::string err;
        if (const auto m = parseStrictJson(readTextFile(meta.string()).value_or(""), err)) {
            result.cached = true;
            result.compile.ok = true;
            result.compile.library = library;
            result.compile.log = m->value("log", std::string());
            result.compile.command = m->value("command", std::string());
            for (const auto& gap : m->value("confinement_gaps", nlohmann::ordered_json::array()))
                if (gap.is_string())
                    result.compile.confinementGaps.push_back(gap.get<std::string>());
            for (const auto& k : m->value("resources", nlohmann::ordered_json::array()))
                result.compile.resources.push_back(
                    {k.value("kernel", std::string()), k.value("registers", 0), k.value("shared", 0L),
                        k.value("stack", 0L), k.value("spill_stores", 0L), k.value("spill_loads", 0L)});
            // Built while the compiler could not be fully confined, on a machine where this
            // process has since seen a compile that was: compiled again rather than trusted.
            if (!request.confine || result.compile.confinementGaps.empty() || g_compilerConfinable.load() != 1)
                return result;
            const std::string key = result.key;
            result = Result {};
            result.key = key;
            fs::remove_all(entry, ec);
        }
    }
    // Build in a private folder, then publish it under the key in one rename, so a concurrent
    // compile of the same key never sees a half-written library.
    CompileRequest req = request;
    const fs::path staging =
        m_dir / (result.key + ".tmp." + std::to_string(std::hash<std::thread::id> {}(std::this_thread::get_id())));
    fs::remove_all(staging, ec);
    req.workDir = staging;
    result.compile = compileKernel(req);
    if (req.confine && result.compile.ok)
        g_compilerConfinable.store(result.compile.confinementGaps.empty() ? 1 : 0);
    if (!result.compile.ok) {
        fs::remove_all(staging, ec);
        return result;
    }
    nlohmann::json m {{"log", result.compile.log}, {"command", result.compile.command},
        {"resources", nlohmann::json::array()}, {"confinement_gaps", result.compile.confinementGaps}};
    for (const auto& k : result.compile.resources)
        m["resources"].push_back({{"kernel", k.kernel}, {"registers", k.registers}, {"shared", k.sharedBytes},
            {"stack", k.stackBytes}, {"spill_stores", k.spillStoreBytes}, {"spill_loads", k.spillLoadBytes}});
    fs::rename(result.compile.library, staging / "kernel.so", ec);
    std::ofstream(staging / "compile.json") << m.dump();
    fs::create_directories(m_dir, ec);
    fs::rename(staging, entry, ec);
    if (ec) { // another thread published the same key first: use theirs
        fs::remove_all(staging, ec);
    }
    result.compile.library = library;
    return result;
}

std::vector<CompileCache::Result> CompileCache::compileAll(const std::vector<CompileRequest>& requests)
{
    std::vector<std::future<Result>> futures;
    for (const auto& r : requests)
        futures.push_back(std::async(std::launch::async, [this, r] { return compile(r); }));
    std::vector<Result> out;
    for (auto& f : futures)
        out.push_back(f.get());
    return out;
}

} // namespace ks
