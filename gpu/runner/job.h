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
    std::string file; // raw little-endian bytes (inputs: read; outputs: written)
    std::size_t bytes = 0;
};

struct Call {
    std::string id; // workload uuid
    std::map<std::string, Buffer> inputs; // by field name, scalars included
    std::map<std::string, Buffer> outputs;
    std::map<std::string, std::int64_t> axes;
    std::size_t workspaceBytes = 0;
    std::uint64_t poisonSeed = 0; // outputs and workspace are filled with noise from this
};

struct Job {
    std::string dir;
    std::string backend; // "host" or "cuda"
    std::string library;
    std::string symbol = "ks_run";
    std::size_t argsSize = 0;
    std::vector<Field> fields;
    std::vector<Call> calls;
};

// Throws std::runtime_error naming the field on malformed input.
Job readJob(const std::string& dir);

} // namespace ksr
