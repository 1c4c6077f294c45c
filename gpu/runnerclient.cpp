#include "runnerclient.h"

#include <task/strictjson.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;

std::string runnerStatusName(RunnerCallOutcome::Status s)
{
    switch (s) {
    case RunnerCallOutcome::Status::Ok:
        return "ok";
    case RunnerCallOutcome::Status::KernelError:
        return "kernel error";
    case RunnerCallOutcome::Status::DeviceError:
        return "device error";
    case RunnerCallOutcome::Status::HarnessError:
        return "harness error";
    case RunnerCallOutcome::Status::Crashed:
        return "crashed";
    case RunnerCallOutcome::Status::TimedOut:
        return "timed out";
    case RunnerCallOutcome::Status::NotRun:
        return "not run";
    }
    return "?";
}

fs::path runnerPath()
{
    if (const char* env = std::getenv("KSEARCH_RUNNER"); env && *env)
        return env;
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    return exe.parent_path() / "ksearch-runner";
}

namespace {

const char* roleName(AbiField::Role r)
{
    switch (r) {
    case AbiField::Role::Input:
        return "input";
    case AbiField::Role::Scalar:
        return "scalar";
    case AbiField::Role::Output:
        return "output";
    case AbiField::Role::Axis:
        return "axis";
    }
    return "";
}

void writeBytes(const fs::path& path, const std::vector<std::byte>& data)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

bool readBytes(const fs::path& path, std::vector<std::byte>& data)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return false;
    in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
    return static_cast<std::size_t>(in.gcount()) == data.size();
}

} // namespace

RunnerJobResult runRunnerJob(const RunnerJob& job)
{
    RunnerJobResult result;
    result.calls.resize(job.calls.size());
    std::error_code ec;
    fs::create_directories(job.jobDir, ec);

    nlohmann::json doc { { "backend", backendName(job.backend) }, { "library", fs::absolute(job.library).string() },
        { "args_size", job.layout.size }, { "fields", nlohmann::json::array() }, { "calls", nlohmann::json::array() } };
    for (const auto& f : job.layout.fields)
        doc["fields"].push_back(
            { { "name", f.name }, { "role", roleName(f.role) }, { "offset", f.offset }, { "size", f.size } });
    for (std::size_t c = 0; c < job.calls.size(); ++c) {
        const auto& call = job.calls[c];
        nlohmann::json j { { "id", call.id }, { "inputs", nlohmann::json::object() },
            { "outputs", nlohmann::json::object() }, { "axes", call.axes }, { "workspace_bytes", call.workspaceBytes },
            { "poison_seed", call.poisonSeed } };
        for (const auto& t : call.inputs) {
            const std::string file = "c" + std::to_string(c) + "_in_" + t.name + ".bin";
            writeBytes(job.jobDir / file, t.data);
            j["inputs"][t.name] = { { "file", file }, { "bytes", t.data.size() } };
        }
        for (const auto& t : call.outputs)
            j["outputs"][t.name] = { { "file", "c" + std::to_string(c) + "_out_" + t.name + ".bin" },
                { "bytes", t.data.size() } };
        doc["calls"].push_back(j);
    }
    {
        std::ofstream out(job.jobDir / "job.json", std::ios::trunc);
        out << doc.dump(1);
    }
    fs::remove(job.jobDir / "result.jsonl", ec);

    SubprocessRequest sub;
    sub.argv = { runnerPath().string(), "--job", job.jobDir.string() };
    sub.environment = scrubbedEnvironment();
    sub.timeout = job.timeout;
    result.process = runSubprocess(sub);

    // Read what the runner recorded; the last "started" without an end is the call that died.
    std::map<std::string, std::size_t> indexOf;
    for (std::size_t c = 0; c < job.calls.size(); ++c)
        indexOf[job.calls[c].id] = c;
    std::optional<std::size_t> running;
    std::ifstream lines(job.jobDir / "result.jsonl");
    std::string line;
    while (std::getline(lines, line)) {
        std::string err;
        const auto j = parseStrictJson(line, err);
        if (!j || !j->contains("status"))
            continue;
        const std::string status = (*j)["status"].get<std::string>();
        const std::string id = j->value("id", std::string());
        if (status == "load_error") {
            result.loadError = j->value("message", std::string());
            continue;
        }
        const auto it = indexOf.find(id);
        if (it == indexOf.end())
            continue;
        auto& outcome = result.calls[it->second];
        if (status == "started") {
            running = it->second;
            continue;
        }
        running.reset();
        outcome.message = j->value("message", std::string());
        outcome.returnCode = j->value("return_code", 0);
        outcome.inputsUnchanged = j->value("inputs_unchanged", true);
        outcome.wallMicros = j->value("wall_us", 0.0);
        if (status == "ok" || status == "error") {
            outcome.status = status == "ok" ? RunnerCallOutcome::Status::Ok : RunnerCallOutcome::Status::KernelError;
            const auto& call = job.calls[it->second];
            for (const auto& t : call.outputs) {
                HostTensor out = t;
                if (!readBytes(job.jobDir / ("c" + std::to_string(it->second) + "_out_" + t.name + ".bin"), out.data)) {
                    outcome.status = RunnerCallOutcome::Status::HarnessError;
                    outcome.message = "output " + t.name + " missing after the call";
                    break;
                }
                outcome.outputs.push_back(std::move(out));
            }
        } else if (status == "device_error") {
            outcome.status = RunnerCallOutcome::Status::DeviceError;
        } else {
            outcome.status = RunnerCallOutcome::Status::HarnessError;
        }
    }
    if (running) {
        auto& outcome = result.calls[*running];
        outcome.status =
            result.process.timedOut ? RunnerCallOutcome::Status::TimedOut : RunnerCallOutcome::Status::Crashed;
        outcome.message = "the runner " + result.process.describeExit() + " during this call";
        const std::string tail = result.process.err.size() > 2000
            ? result.process.err.substr(result.process.err.size() - 2000)
            : result.process.err;
        if (!tail.empty())
            outcome.message += "; stderr: " + tail;
    } else if (result.process.timedOut) {
        for (auto& c : result.calls)
            if (c.status == RunnerCallOutcome::Status::NotRun) {
                c.status = RunnerCallOutcome::Status::TimedOut;
                c.message = "the runner " + result.process.describeExit() + " before this call";
                break;
            }
    }
    return result;
}

} // namespace ks
