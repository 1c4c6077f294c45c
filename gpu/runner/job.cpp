#include "job.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace ksr {
namespace {

Buffer readBuffer(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object() || !j.contains("fd") || !j.contains("bytes"))
        throw std::runtime_error(where + ": needs fd and bytes");
    const int fd = j.at("fd").get<int>();
    if (fd < 3)
        throw std::runtime_error(where + ": fd " + std::to_string(fd) + " is not a shared buffer");
    return {fd, j.at("bytes").get<std::size_t>()};
}

Field::Role parseRole(const std::string& role)
{
    if (role == "input")
        return Field::Role::Input;
    if (role == "scalar")
        return Field::Role::Scalar;
    if (role == "output")
        return Field::Role::Output;
    if (role == "axis")
        return Field::Role::Axis;
    throw std::runtime_error("fields: unknown role '" + role + "'");
}

} // namespace

Job readJob(const std::string& dir)
{
    std::ifstream in(dir + "/job.json");
    if (!in)
        throw std::runtime_error(dir + "/job.json: cannot open");
    nlohmann::json j;
    try {
        in >> j;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(dir + "/job.json: " + e.what());
    }
    try {
        Job job;
        job.dir = dir;
        job.backend = j.at("backend").get<std::string>();
        job.library = j.at("library").get<std::string>();
        job.symbol = j.value("symbol", std::string("ks_run"));
        job.argsSize = j.at("args_size").get<std::size_t>();
        for (const auto& f : j.at("fields")) {
            Field field {f.at("name").get<std::string>(), parseRole(f.at("role").get<std::string>()),
                f.at("offset").get<std::size_t>(), f.at("size").get<std::size_t>()};
            if (field.offset + field.size > job.argsSize)
                throw std::runtime_error("fields." + field.name + ": outside args_size");
            job.fields.push_back(field);
        }
        for (const auto& c : j.at("calls")) {
            Call call;
            call.id = c.at("id").get<std::string>();
            for (const auto& [name, b] : c.at("inputs").items())
                call.inputs[name] = readBuffer(b, "calls." + call.id + ".inputs." + name);
            for (const auto& [name, b] : c.at("outputs").items())
                call.outputs[name] = readBuffer(b, "calls." + call.id + ".outputs." + name);
            for (const auto& [name, v] : c.at("axes").items())
                call.axes[name] = v.get<std::int64_t>();
            for (const auto& set : c.value("timing_inputs", nlohmann::json::array())) {
                BufferSet buffers;
                for (const auto& [name, b] : set.items())
                    buffers[name] = readBuffer(b, "calls." + call.id + ".timing_inputs." + name);
                call.timingInputs.push_back(std::move(buffers));
            }
            for (const auto& set : c.value("timing_outputs", nlohmann::json::array())) {
                BufferSet buffers;
                for (const auto& [name, b] : set.items())
                    buffers[name] = readBuffer(b, "calls." + call.id + ".timing_outputs." + name);
                call.timingOutputs.push_back(std::move(buffers));
            }
            for (const auto& set : c.value("swapped_outputs", nlohmann::json::array())) {
                BufferSet buffers;
                for (const auto& [name, b] : set.items())
                    buffers[name] = readBuffer(b, "calls." + call.id + ".swapped_outputs." + name);
                call.swappedOutputs.push_back(std::move(buffers));
            }
            if (!call.swappedOutputs.empty() && call.swappedOutputs.size() != call.timingInputs.size())
                throw std::runtime_error("calls." + call.id + ": swapped_outputs and timing_inputs differ in length");
            if (call.timingInputs.size() != call.timingOutputs.size())
                throw std::runtime_error("calls." + call.id + ": timing_inputs and timing_outputs differ in length");
            call.workspaceBytes = c.value("workspace_bytes", std::size_t {0});
            call.poisonSeed = c.value("poison_seed", std::uint64_t {0});
            job.calls.push_back(std::move(call));
        }
        job.measureDevice = j.value("measure_device", false);
        if (j.contains("bench")) {
            const auto& b = j["bench"];
            job.bench.enabled = b.value("enabled", false);
            job.bench.minSamples = b.value("min_samples", job.bench.minSamples);
            job.bench.maxSamples = b.value("max_samples", job.bench.maxSamples);
            job.bench.maxNoise = b.value("max_noise", job.bench.maxNoise);
            job.bench.maxSeconds = b.value("max_seconds", job.bench.maxSeconds);
            job.bench.warmupSeconds = b.value("warmup_seconds", job.bench.warmupSeconds);
        }
        return job;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(dir + "/job.json: " + e.what());
    }
}

} // namespace ksr
