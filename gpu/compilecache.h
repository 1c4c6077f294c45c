#pragma once

#include "compiler.h"

#include <filesystem>
#include <string>
#include <vector>

namespace ks {

// Compiles through a cache keyed by the hash of (source, ks_task.h, backend, architecture,
// flags, compiler version): an unchanged candidate, reference or baseline is built once.
// Thread-safe; different keys compile concurrently.
class CompileCache
{
public:
    explicit CompileCache(std::filesystem::path dir);

    struct Result {
        CompileResult compile;
        bool cached = false;
        std::string key;
    };
    Result compile(const CompileRequest& request);
    // Compiles several requests at once, one thread each (the machine's compiler processes
    // run in parallel; results come back in request order).
    std::vector<Result> compileAll(const std::vector<CompileRequest>& requests);

    const std::filesystem::path& dir() const { return m_dir; }

private:
    std::filesystem::path m_dir;
};

// First line of `c++ --version` / last line of `nvcc --version`, remembered per program.
std::string compilerVersion(Backend backend);

// The default cache folder: $XDG_CACHE_HOME/ksearch/kernels (or ~/.cache/ksearch/kernels).
std::filesystem::path defaultCompileCacheDir();

} // namespace ks
