#pragma once

// ksearch-runner's view of one job: plain C++ and nlohmann/json only (no Qt), so the runner
// builds and runs on a bare GPU server.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ksr {

struct Field {
    enum class Role { Input, Scalar, Output, Axis };
    std::string name;
    Role role = Role::Input;
    std::size_t offset = 0;
    std::size_t size = 0;
};

struct Buffer {
    int fd = -1; // shared memory inherited from the parent: raw little-endian bytes (inputs are sealed)
    std::size_t bytes = 0;
};

using BufferSet = std::map<std::string, Buffer>; // by field name

struct Call {
    std::string id; // workload uuid
    BufferSet inputs; // the correctness set, scalars included
    BufferSet outputs;
    // Benchmark only: further input sets the timing loop rotates through (all resident, so
    // pointers differ), and where the outputs of the last timed call on each set go.
    std::vector<BufferSet> timingInputs;
    std::vector<BufferSet> timingOutputs;
    // Outputs of the final round's second pass, where set k's buffers hold the next set's inputs.
    std::vector<BufferSet> swappedOutputs;
    std::map<std::string, std::int64_t> axes;
    std::size_t workspaceBytes = 0;
    std::uint64_t poisonSeed = 0; // outputs and workspace are filled with noise from this
};

struct BenchSettings {
    bool enabled = false;
    int minSamples = 10;
    int maxSamples = 1000;
    double maxNoise = 0.005; // stop when the relative standard error of the mean is below
    double maxSeconds = 1.0; // per call: wall time of the timed loop
    double warmupSeconds = 0.025; // at least 3 calls
};

struct Job {
    std::string dir;
    std::string backend; // "host" or "cuda"
    std::string library;
    std::string symbol = "ks_run";
    std::size_t argsSize = 0;
    std::vector<Field> fields;
    std::vector<Call> calls;
    BenchSettings bench;
    bool measureDevice = false; // measure copy bandwidth (and warm the clocks) before the calls
};

// Throws std::runtime_error naming the field on malformed input.
Job readJob(const std::string& dir);

} // namespace ksr
