#pragma once

#include <QString>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <searchrun.h>
#include <string>
#include <vector>

namespace ks::test {

// Runs searches on the host backend with the scripted LLM (through the command provider), in
// the test's thread, on a small "scale" task written once per fixture.
class EngineFixture
{
public:
    explicit EngineFixture(const std::filesystem::path& root);

    SessionConfig config(SearchSettings settings) const;
    static SearchSettings settings(int budget, int k, StrategyKind strategy = StrategyKind::KSearch);

    struct Outcome {
        SearchState state;
        std::vector<nlohmann::json> events; // the journal
        QString finished; // the reason, when it finished
        QString halted; // the error, when it halted
        bool ok() const { return !finished.isEmpty() && halted.isEmpty(); }
    };
    // A new session in `dir`; `mode` goes to the scripted LLM (KS_FAKE_LLM_MODE).
    Outcome run(const std::filesystem::path& dir, const SearchSettings& settings, const std::string& mode = {});
    Outcome resume(const std::filesystem::path& dir, const std::string& mode = {});
    // Runs an already made SearchRun until it finishes or halts.
    Outcome drive(SearchRun& run);

    RunOptions options() const;
    const std::filesystem::path& taskDir() const { return m_task; }
    // Later runs use this many host evaluators and lanes (0: one per evaluator).
    void setParallel(int evaluators, int lanes = 0)
    {
        m_evaluators = evaluators;
        m_lanes = lanes;
    }

private:
    std::filesystem::path m_root, m_task;
    int m_evaluators = -1, m_lanes = 0;
};

// A stand-in for ksearch-runner (a shell script, for KSEARCH_RUNNER) that behaves as the real
// one, except that while `flag` exists a runner started for a job exits 3 before loading
// anything, as on a machine whose GPU is gone. `once`: the first such runner also removes the
// flag. Probes (--probe) always reach the real runner.
std::filesystem::path writeRunnerWithoutDevice(
    const std::filesystem::path& script, const std::filesystem::path& flag, bool once);

// What a run did, as comparable lines: "action_started n1", "evaluation n1 PASSED", "tree_edit +n4",...
std::vector<std::string> eventSignature(const std::vector<nlohmann::json>& events);

} // namespace ks::test
