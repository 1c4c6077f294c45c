#include "fibworkloads.h"

#include <task/inputgenerator.h>
#include <task/safetensors.h>

namespace ks {

namespace fs = std::filesystem;

namespace {

bool fibKnows(InputSource::Kind kind)
{
    return kind == InputSource::Kind::Random || kind == InputSource::Kind::Scalar
        || kind == InputSource::Kind::Safetensors;
}

} // namespace

std::optional<std::map<std::string, nlohmann::json>> fibWorkloads(
    const Task& task, const fs::path& root, std::string& error)
{
    const Definition& def = task.definition;
    const std::string blobDir =
        "blob/workloads/" + (def.opType.empty() ? std::string("unknown") : def.opType) + "/" + def.name;
    std::map<std::string, nlohmann::json> out;
    for (const Workload& w : task.workloads) {
        nlohmann::json line = w.raw.contains("workload") ? nlohmann::json(w.raw["workload"]) : nlohmann::json(w.raw);
        std::vector<HostTensor> blobs;
        const InputGenerator generator(def, w, kFibExportSeed);
        for (const TensorSpec& spec : def.inputs) {
            const auto it = w.inputs.find(spec.name);
            if (it == w.inputs.end() || fibKnows(it->second.kind))
                continue;
            blobs.push_back(generator.generate(spec));
            blobs.back().name = spec.name;
        }
        if (!blobs.empty()) {
            const std::string file = blobDir + "/" + w.uuid + ".safetensors";
            std::error_code ec;
            fs::create_directories(root / blobDir, ec);
            if (!writeSafetensors(root / file, blobs, error))
                return std::nullopt;
            for (const HostTensor& t : blobs)
                line["inputs"][t.name] = {{"type", "safetensors"}, {"path", file}, {"tensor_key", t.name}};
        }
        out[w.uuid] = std::move(line);
    }
    return out;
}

} // namespace ks
