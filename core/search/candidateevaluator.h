#pragma once

#include <task/evaluation.h>

#include <filesystem>
#include <optional>
#include <string>

namespace ks {

// What the engine needs from an evaluator: compile, verify and benchmark one source file, in
// another process, and say what the code runs on. Blocking; the engine calls it from its worker
// thread. Implemented by gpu/Evaluator (CUDA and host backends).
class CandidateEvaluator
{
public:
    virtual ~CandidateEvaluator() = default;
    virtual Evaluation evaluate(const std::filesystem::path& source) = 0;
    virtual std::string sourceSuffix() const = 0; // ".cu" or ".cpp"
    // For prompts: "NVIDIA H200 (sm_90a, CUDA 13.0)" or "host CPU (g++ -O3 -march=native -fopenmp)".
    virtual std::string targetDescription() const = 0;
    // After an evaluate(): why that result must not count, because the evaluator itself failed
    // (a remote worker that died or went silent), not the candidate. The engine then records
    // nothing and halts with the reason; the candidate is evaluated again when the run resumes.
    virtual std::optional<std::string> unavailable() const { return std::nullopt; }
};

} // namespace ks
