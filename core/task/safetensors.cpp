#include "safetensors.h"

#include "hosttensor.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace ks {

namespace {

std::size_t elementSize(const std::string& dtype)
{
    if (const auto t = dtypeFromSafetensors(dtype))
        return dtypeSize(*t);
    if (dtype == "U8")
        return 1;
    if (dtype == "F64" || dtype == "U64")
        return 8;
    if (dtype == "U32")
        return 4;
    if (dtype == "U16")
        return 2;
    return 0;
}

} // namespace

namespace {

const std::map<std::string, DType>& safetensorsNames()
{
    static const std::map<std::string, DType> names = {{"F32", DType::Float32}, {"F16", DType::Float16},
        {"BF16", DType::BFloat16}, {"F8_E4M3", DType::Float8E4M3}, {"F8_E5M2", DType::Float8E5M2},
        {"I64", DType::Int64}, {"I32", DType::Int32}, {"I16", DType::Int16}, {"I8", DType::Int8},
        {"BOOL", DType::Bool}};
    return names;
}

} // namespace

std::optional<DType> dtypeFromSafetensors(const std::string& name)
{
    const auto it = safetensorsNames().find(name);
    return it == safetensorsNames().end() ? std::nullopt : std::optional<DType>(it->second);
}

std::optional<std::string> safetensorsDtypeName(DType dtype)
{
    for (const auto& [name, d] : safetensorsNames())
        if (d == dtype)
            return name;
    return std::nullopt;
}

bool writeSafetensors(const std::filesystem::path& file, const std::vector<HostTensor>& tensors, std::string& error)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    std::uint64_t offset = 0;
    for (const HostTensor& t : tensors) {
        const auto dtype = safetensorsDtypeName(t.dtype);
        if (!dtype) {
            error = file.string() + ": tensor " + t.name + ": safetensors has no name for dtype "
                + std::string(dtypeName(t.dtype));
            return false;
        }
        header[t.name] = {{"dtype", *dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' '); // the data starts 8-byte aligned
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    const std::uint64_t length = text.size();
    for (int b = 0; b < 8; ++b)
        out.put(static_cast<char>((length >> (8 * b)) & 0xff));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const HostTensor& t : tensors)
        out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
    if (!out) {
        error = file.string() + ": cannot write";
        return false;
    }
    return true;
}

std::optional<std::map<std::string, SafetensorsTensor>> readSafetensorsIndex(
    const std::filesystem::path& file, std::string& error)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        error = "cannot open " + file.string();
        return std::nullopt;
    }
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(file, ec);
    unsigned char lengthBytes[8] = {};
    if (ec || size < 8 || !in.read(reinterpret_cast<char*>(lengthBytes), 8)) {
        error = file.string() + ": too short for a safetensors file";
        return std::nullopt;
    }
    std::uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i)
        headerBytes = (headerBytes << 8) | lengthBytes[i];
    if (headerBytes > size - 8) {
        error = file.string() + ": the header length (" + std::to_string(headerBytes) + " bytes) runs past the file";
        return std::nullopt;
    }
    std::string header(static_cast<std::size_t>(headerBytes), '\0');
    in.read(header.data(), static_cast<std::streamsize>(headerBytes));
    const auto doc = nlohmann::json::parse(header, nullptr, false);
    if (!in || doc.is_discarded() || !doc.is_object()) {
        error = file.string() + ": the header is not a JSON object";
        return std::nullopt;
    }
    const std::uint64_t dataStart = 8 + headerBytes;
    std::map<std::string, SafetensorsTensor> tensors;
    for (const auto& item : doc.items()) {
        const std::string& key = item.key();
        const auto& entry = item.value();
        if (key == "__metadata__")
            continue;
        const auto bad = [&](const std::string& why) {
            error = file.string() + ": tensor '" + key + "': " + why;
            return std::nullopt;
        };
        if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape")
            || !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array()
            || entry["data_offsets"].size() != 2)
            return bad("needs dtype, shape and data_offsets [begin, end]");
        SafetensorsTensor t;
        t.dtype = entry["dtype"].get<std::string>();
        std::uint64_t elements = 1;
        for (const auto& d : entry["shape"]) {
            if (!d.is_number_unsigned())
                return bad("shape must hold non-negative integers");
            t.shape.push_back(d.get<std::int64_t>());
            elements *= d.get<std::uint64_t>();
        }
        const auto& offsets = entry["data_offsets"];
        if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
            return bad("data_offsets must be non-negative integers");
        const auto begin = offsets[0].get<std::uint64_t>();
        const auto end = offsets[1].get<std::uint64_t>();
        if (begin > end || dataStart + end > size)
            return bad("bytes " + std::to_string(begin) + ".." + std::to_string(end) + " lie outside the data ("
                + std::to_string(size - dataStart) + " bytes)");
        const std::size_t esize = elementSize(t.dtype);
        if (esize == 0)
            return bad("unknown dtype '" + t.dtype + "'");
        if (end - begin != elements * esize)
            return bad("holds " + std::to_string(end - begin) + " bytes, its shape and dtype need "
                + std::to_string(elements * esize));
        t.offset = dataStart + begin;
        t.bytes = end - begin;
        tensors.emplace(key, std::move(t));
    }
    return tensors;
}

bool readSafetensorsData(
    const std::filesystem::path& file, const SafetensorsTensor& tensor, std::span<std::byte> out, std::string& error)
{
    if (out.size() != tensor.bytes) {
        error = file.string() + ": the tensor has " + std::to_string(tensor.bytes) + " bytes, the buffer "
            + std::to_string(out.size());
        return false;
    }
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(tensor.offset));
    if (!in || !in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()))) {
        error = "cannot read " + std::to_string(out.size()) + " bytes at " + std::to_string(tensor.offset) + " of "
            + file.string();
        return false;
    }
    return true;
}

} // namespace ks
