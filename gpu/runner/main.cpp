// ksearch-runner: runs one job of untrusted kernel calls in a process of its own.
// It only executes and records raw outputs; the parent process (ksearch) owns the expected
// outputs and decides every verdict. No Qt here, so it runs on a bare GPU server.

#include "backend.h"
#include "job.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <sys/resource.h>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitEnvironment = 3;
constexpr int kExitJobFailed = 4;

std::vector<unsigned char> readFile(const std::string& path, std::size_t expected)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error(path + ": cannot open input");
    std::vector<unsigned char> data(expected);
    in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(expected));
    if (static_cast<std::size_t>(in.gcount()) != expected)
        throw std::runtime_error(path + ": shorter than " + std::to_string(expected) + " bytes");
    return data;
}

void writeFile(const std::string& path, const std::vector<unsigned char>& data)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out)
        throw std::runtime_error(path + ": cannot write output");
}

// Noise that no correct kernel output is likely to equal, different for every call.
std::vector<unsigned char> poison(std::size_t bytes, std::uint64_t seed)
{
    std::vector<unsigned char> data(bytes);
    std::uint64_t x = seed | 1;
    for (std::size_t i = 0; i < bytes; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = static_cast<unsigned char>(x >> 56);
    }
    return data;
}

struct DeviceBuffer {
    ksr::Backend* backend = nullptr;
    void* ptr = nullptr;
    DeviceBuffer(ksr::Backend& b, std::size_t bytes)
        : backend(&b)
        , ptr(b.allocate(bytes))
    {
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : backend(o.backend)
        , ptr(o.ptr)
    {
        o.ptr = nullptr;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    ~DeviceBuffer()
    {
        if (ptr)
            backend->release(ptr);
    }
};

nlohmann::json runCall(const ksr::Job& job, const ksr::Call& call, ksr::Backend& backend, ksr::KsRunFn fn)
{
    nlohmann::json result { { "id", call.id } };
    std::vector<unsigned char> args(job.argsSize, 0);
    std::vector<DeviceBuffer> buffers;
    std::vector<std::pair<const DeviceBuffer*, std::vector<unsigned char>>> pristineInputs;
    std::vector<std::pair<const DeviceBuffer*, const ksr::Buffer*>> outputs;

    for (const auto& field : job.fields) {
        unsigned char* slot = args.data() + field.offset;
        switch (field.role) {
        case ksr::Field::Role::Input: {
            const auto& buf = call.inputs.at(field.name);
            auto data = readFile(job.dir + "/" + buf.file, buf.bytes);
            buffers.emplace_back(backend, buf.bytes);
            backend.upload(buffers.back().ptr, data.data(), buf.bytes);
            std::memcpy(slot, &buffers.back().ptr, sizeof(void*));
            pristineInputs.emplace_back(nullptr, std::move(data));
            break;
        }
        case ksr::Field::Role::Scalar: {
            const auto& buf = call.inputs.at(field.name);
            const auto data = readFile(job.dir + "/" + buf.file, buf.bytes);
            if (data.size() != field.size)
                throw std::runtime_error("scalar " + field.name + ": size differs from the field");
            std::memcpy(slot, data.data(), field.size);
            break;
        }
        case ksr::Field::Role::Output: {
            const auto& buf = call.outputs.at(field.name);
            buffers.emplace_back(backend, buf.bytes);
            const auto noise = poison(buf.bytes, call.poisonSeed ^ (buffers.size() * 0x9e3779b97f4a7c15ULL));
            backend.upload(buffers.back().ptr, noise.data(), buf.bytes);
            std::memcpy(slot, &buffers.back().ptr, sizeof(void*));
            outputs.emplace_back(nullptr, &buf);
            break;
        }
        case ksr::Field::Role::Axis: {
            const std::int64_t v = call.axes.at(field.name);
            std::memcpy(slot, &v, sizeof v);
            break;
        }
        }
    }
    // Re-walk the buffers in field order to pair them with their bookkeeping (vector growth
    // moved them, so pointers are taken only now).
    {
        std::size_t bi = 0, ii = 0, oi = 0;
        for (const auto& field : job.fields) {
            if (field.role == ksr::Field::Role::Input)
                pristineInputs[ii++].first = &buffers[bi++];
            else if (field.role == ksr::Field::Role::Output)
                outputs[oi++].first = &buffers[bi++];
        }
    }
    void* workspace = nullptr;
    if (call.workspaceBytes > 0) {
        buffers.emplace_back(backend, call.workspaceBytes);
        workspace = buffers.back().ptr;
        const auto noise = poison(call.workspaceBytes, ~call.poisonSeed);
        backend.upload(workspace, noise.data(), call.workspaceBytes);
    }

    const auto start = std::chrono::steady_clock::now();
    const int rc = backend.run(fn, args.data(), workspace, call.workspaceBytes);
    const auto end = std::chrono::steady_clock::now();
    result["return_code"] = rc;
    result["wall_us"] = std::chrono::duration<double, std::micro>(end - start).count();
    const std::string deviceError = backend.deviceError();
    if (!deviceError.empty()) {
        result["status"] = "device_error";
        result["message"] = deviceError;
        return result;
    }
    for (const auto& [buffer, spec] : outputs) {
        std::vector<unsigned char> host(spec->bytes);
        backend.download(host.data(), buffer->ptr, spec->bytes);
        writeFile(job.dir + "/" + spec->file, host);
    }
    bool unchanged = true;
    for (const auto& [buffer, pristine] : pristineInputs) {
        std::vector<unsigned char> now(pristine.size());
        backend.download(now.data(), buffer->ptr, now.size());
        unchanged = unchanged && now == pristine;
    }
    result["inputs_unchanged"] = unchanged;
    result["status"] = rc == 0 ? "ok" : "error";
    if (rc != 0)
        result["message"] = "ks_run returned " + std::to_string(rc);
    return result;
}

int runJob(const std::string& dir)
{
    const ksr::Job job = ksr::readJob(dir);
    std::unique_ptr<ksr::Backend> backend;
    if (job.backend == "host") {
        backend = ksr::makeHostBackend();
    } else if (job.backend == "cuda") {
        try {
            backend = ksr::makeCudaBackend();
        } catch (const std::exception& e) {
            std::cerr << "ksearch-runner: CUDA unavailable: " << e.what() << "\n";
            return kExitEnvironment;
        }
        if (!backend) {
            std::cerr << "ksearch-runner: built without CUDA\n";
            return kExitEnvironment;
        }
    } else {
        std::cerr << "ksearch-runner: unknown backend '" << job.backend << "'\n";
        return kExitUsage;
    }

    std::FILE* results = std::fopen((dir + "/result.jsonl").c_str(), "w");
    if (!results) {
        std::cerr << "ksearch-runner: cannot write " << dir << "/result.jsonl\n";
        return kExitEnvironment;
    }
    auto emit = [&](const nlohmann::json& line) {
        std::fputs((line.dump() + "\n").c_str(), results);
        std::fflush(results); // each line survives a crash in the next call
    };

    void* lib = dlopen(job.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        emit({ { "id", "" }, { "status", "load_error" }, { "message", std::string("dlopen: ") + dlerror() } });
        std::fclose(results);
        return kExitJobFailed;
    }
    auto fn = reinterpret_cast<ksr::KsRunFn>(dlsym(lib, job.symbol.c_str()));
    if (!fn) {
        emit({ { "id", "" }, { "status", "load_error" }, { "message", "the library does not export " + job.symbol } });
        std::fclose(results);
        return kExitJobFailed;
    }
    int exitCode = kExitOk;
    for (const auto& call : job.calls) {
        emit({ { "id", call.id }, { "status", "started" } });
        nlohmann::json line;
        try {
            line = runCall(job, call, *backend, fn);
        } catch (const std::exception& e) {
            line = { { "id", call.id }, { "status", "harness_error" }, { "message", e.what() } };
        }
        emit(line);
        if (line["status"] == "device_error") {
            exitCode = kExitJobFailed; // a sticky device error poisons the context: stop here
            break;
        }
    }
    std::fclose(results);
    return exitCode;
}

void limitProcess()
{
    const rlimit noCore { 0, 0 };
    setrlimit(RLIMIT_CORE, &noCore); // a crashing candidate must not litter core files
}

} // namespace

int main(int argc, char** argv)
{
    limitProcess();
    const std::string usage = "usage: ksearch-runner --job DIR | --probe | --version\n";
    if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
        std::cout << ksr::probeDevices() << "\n";
        return kExitOk;
    }
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
        std::cout << "ksearch-runner " << KSEARCH_VERSION << "\n";
        return kExitOk;
    }
    if (argc != 3 || std::strcmp(argv[1], "--job") != 0) {
        std::cerr << usage;
        return kExitUsage;
    }
    try {
        return runJob(argv[2]);
    } catch (const std::exception& e) {
        std::cerr << "ksearch-runner: " << e.what() << "\n";
        return kExitUsage;
    }
}
