#pragma once

#include <session/sessionconfig.h>

#include <QString>
#include <QStringList>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::test {

std::filesystem::path sourceDir();
std::filesystem::path binDir();
std::filesystem::path tasksDir();

// One "task" data row (a QString folder) per shipped task that has `file`, e.g. "baseline.cu".
void addTaskRowsWith(const char* file);

void writeText(const std::filesystem::path& path, const std::string& text);
std::string readText(const std::filesystem::path& path);
inline bool contains(const std::string& text, std::string_view what) // a prompt or a log says it
{
    return text.find(what) != std::string::npos;
}
void copyTree(const std::filesystem::path& from, const std::filesystem::path& to);
// A copy of the session in `from` at `to`, its session.json saying it searched CUDA kernels (the
// window then offers what it offers CUDA attempts; nothing is run again). `resources`, when not
// empty, becomes every evaluation's ptxas report (the "resources" array of Evaluation's JSON).
void copySessionAsCuda(
    const std::filesystem::path& from, const std::filesystem::path& to, const std::string& resources = {});
// A copy of the session in `from` at `to` (which must not exist) whose journal ends with its
// `evaluations`-th evaluation, as if the run had been killed there; no checkpoint.
void copySessionCutShort(const std::filesystem::path& from, const std::filesystem::path& to, int evaluations);

// definition.json of a small test task, y = alpha * x over float32 [n], with a cost model whose
// byte count is `costBytes` (an expression over n).
std::string scaleDefinition(const std::string& costBytes = "8 * n");

// The "scale" task (y = alpha * x over float32 [n]) in `dir`, with workloads of `sizes` elements
// and a baseline making `baselinePasses` passes over the data (fakellm.h writes candidates).
void writeScaleTask(const std::filesystem::path& dir, const std::vector<long>& sizes, int baselinePasses);

// A safetensors file (8-byte header length, JSON header, data) of int32 tensors; `dtype` and
// `shape` let a test write a header that lies about them, `truncate` one that runs past the data.
struct BlobTensor {
    std::string key;
    std::vector<std::int32_t> values;
    std::string dtype = "I32";
    std::vector<std::size_t> shape = {}; // empty: {values.size()}
};
void writeSafetensors(
    const std::filesystem::path& path, const std::vector<BlobTensor>& tensors, std::size_t truncate = 0);

// The command that runs the scripted LLM (ks_fake_llm) for the command provider.
QString fakeLlmCommand();

// A search of the bundled example task (host backend) with ks_fake_llm as both roles; its answers
// follow the demo script when KS_FAKE_LLM_MODE=demo.
ks::SessionConfig demoSearchConfig(int budget, double minImprovement);

// A python3 that imports torch: $KSEARCH_PYTHON, python3 on PATH or /usr/bin/python3 (Debian's
// python3-torch, installed by scripts/setup.sh --tests); empty when none does.
std::string pythonWithTorch();

struct ProcessOutput {
    int exitCode = -1;
    bool crashed = false;
    QString out, err;
};
// Runs build/<preset>/bin/<program> with arguments; waits up to timeoutMs.
ProcessOutput runProgram(const QString& program, const QStringList& arguments, int timeoutMs = 120000,
    const QStringList& extraEnvironment = {});

// The persisting window a cheating candidate would set on each input set it reads (`setBytes`),
// from the first device's largest carve-out as `ksearch-runner --probe` reports it: the timing loop rotates `sets`
// resident sets (EvaluatorSettings::timingSets), so a window carried from one call to the call that reads the same set
// again must leave room for the others' windows. `skip` says why a comparison with it could show nothing (no probe, or
// a carve-out whose share covers under 90 % of a set); empty when the window is worth testing.
struct PersistingWindow {
    long long bytes = 0;
    QString skip;
};
PersistingWindow persistingWindowPerSet(long long setBytes, int sets);

} // namespace ks::test
