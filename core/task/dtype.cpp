#include "dtype.h"

#include <util/saturate.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ks {
namespace {

struct DTypeInfo {
    DType type;
    std::string_view name;
    std::size_t size;
    std::string_view abiType;
};

constexpr std::array<DTypeInfo, 10> kTypes {{
    {DType::Float32, "float32", 4, "float"},
    {DType::Float16, "float16", 2, "ks_f16_t"},
    {DType::BFloat16, "bfloat16", 2, "ks_bf16_t"},
    {DType::Float8E4M3, "float8_e4m3fn", 1, "ks_f8e4m3_t"},
    {DType::Float8E5M2, "float8_e5m2", 1, "ks_f8e5m2_t"},
    {DType::Int64, "int64", 8, "int64_t"},
    {DType::Int32, "int32", 4, "int32_t"},
    {DType::Int16, "int16", 2, "int16_t"},
    {DType::Int8, "int8", 1, "int8_t"},
    {DType::Bool, "bool", 1, "bool"},
}};

const DTypeInfo& info(DType t)
{
    return kTypes[static_cast<std::size_t>(t)];
}

float bitsToFloat(std::uint32_t u)
{
    return std::bit_cast<float>(u);
}

std::uint16_t floatToBf16(float f)
{
    auto u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffU) > 0x7f800000U)
        return static_cast<std::uint16_t>((u >> 16) | 0x40U);
    u += 0x7fffU + ((u >> 16) & 1U);
    return static_cast<std::uint16_t>(u >> 16);
}

std::uint16_t floatToHalf(float f)
{
    const auto u = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000U);
    const std::uint32_t mag = u & 0x7fffffffU;
    if (mag > 0x7f800000U)
        return static_cast<std::uint16_t>(sign | 0x7e00U);
    if (mag >= 0x477ff000U) // rounds to 65520 or more: infinity
        return static_cast<std::uint16_t>(sign | 0x7c00U);
    if (mag < 0x38800000U) { // below 2^-14: a subnormal half, i.e. a multiple of 2^-24
        const double scaled = static_cast<double>(bitsToFloat(mag)) * 16777216.0;
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
    }
    std::uint32_t h = (((mag >> 23) - 112U) << 10) | ((mag >> 13) & 0x3ffU);
    const std::uint32_t rest = mag & 0x1fffU;
    if (rest > 0x1000U || (rest == 0x1000U && (h & 1U)))
        ++h;
    return static_cast<std::uint16_t>(sign | h);
}

double halfToDouble(std::uint16_t h)
{
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0)
        return sign * std::ldexp(mant, -24);
    if (exp == 31)
        return mant ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    return sign * std::ldexp(1024 + mant, exp - 25);
}

// Round to nearest, ties to the even code, by a binary search over the format's positive finite
// values in code order (fp8 codes grow with their magnitude). A linear scan of the codes took
// about a microsecond an element: minutes for the 1.4 GB of an FP8 MoE's weights.
struct Fp8Codes {
    std::array<double, 128> value {};
    int count = 0;
};

std::uint16_t encodeNearest(double v, const Fp8Codes& codes, std::uint16_t nanCode, double maxFinite)
{
    if (std::isnan(v))
        return nanCode;
    const bool negative = std::signbit(v);
    const double a = std::min(std::fabs(v), maxFinite); // saturate, as CUDA's __NV_SATFINITE does
    const double* first = codes.value.data();
    const auto above = static_cast<int>(std::lower_bound(first, first + codes.count, a) - first);
    int best = std::min(above, codes.count - 1);
    if (above > 0 && above < codes.count) {
        const double below = a - codes.value[static_cast<std::size_t>(above - 1)];
        const double over = codes.value[static_cast<std::size_t>(above)] - a;
        if (below < over || (below == over && ((above - 1) & 1) == 0))
            best = above - 1;
    } else if (above == codes.count) {
        best = codes.count - 1;
    }
    return static_cast<std::uint16_t>(best | (negative ? 0x80 : 0));
}

double fp8Decode(std::uint8_t v, int expBits, int mantBits, int bias, bool e4m3)
{
    const int exp = (v >> mantBits) & ((1 << expBits) - 1);
    const int mant = v & ((1 << mantBits) - 1);
    const double sign = (v & 0x80) ? -1.0 : 1.0;
    const int maxExp = (1 << expBits) - 1;
    if (e4m3 && exp == maxExp && mant == (1 << mantBits) - 1)
        return std::numeric_limits<double>::quiet_NaN();
    if (!e4m3 && exp == maxExp)
        return mant ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    if (exp == 0)
        return sign * std::ldexp(mant, 1 - bias - mantBits);
    return sign * std::ldexp((1 << mantBits) + mant, exp - bias - mantBits);
}

double e4m3Decode(std::uint16_t v)
{
    return fp8Decode(static_cast<std::uint8_t>(v), 4, 3, 7, true);
}
double e5m2Decode(std::uint16_t v)
{
    return fp8Decode(static_cast<std::uint8_t>(v), 5, 2, 15, false);
}

template<typename Decode> Fp8Codes fp8Codes(int codes, Decode decode)
{
    Fp8Codes c;
    for (int code = 0; code < codes; ++code)
        c.value[static_cast<std::size_t>(c.count++)] = decode(static_cast<std::uint16_t>(code));
    return c;
}

const Fp8Codes& e4m3Codes()
{
    static const Fp8Codes codes = fp8Codes(127, e4m3Decode); // 0x7f is NaN
    return codes;
}

const Fp8Codes& e5m2Codes()
{
    static const Fp8Codes codes = fp8Codes(124, e5m2Decode); // 0x7c.. are Inf and NaN
    return codes;
}

template<typename T> T load(const void* p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

template<typename T> void store(void* p, T v)
{
    std::memcpy(p, &v, sizeof(T));
}

} // namespace

std::optional<DType> parseDType(std::string_view name)
{
    for (const auto& t : kTypes)
        if (t.name == name)
            return t.type;
    if (name == "float8_e4m3")
        return DType::Float8E4M3;
    return std::nullopt;
}

std::string_view dtypeName(DType t)
{
    return info(t).name;
}

std::size_t dtypeSize(DType t)
{
    return info(t).size;
}

bool isFloating(DType t)
{
    switch (t) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3:
    case DType::Float8E5M2:
        return true;
    default:
        return false;
    }
}

std::string_view dtypeAbiType(DType t)
{
    return info(t).abiType;
}

std::string dtypeNameList()
{
    std::string out;
    for (const auto& t : kTypes) {
        if (!out.empty())
            out += ", ";
        out += t.name;
    }
    return out;
}

double loadElement(DType t, const void* p)
{
    switch (t) {
    case DType::Float32:
        return load<float>(p);
    case DType::Float16:
        return halfToDouble(load<std::uint16_t>(p));
    case DType::BFloat16:
        return bitsToFloat(static_cast<std::uint32_t>(load<std::uint16_t>(p)) << 16);
    case DType::Float8E4M3:
        return e4m3Decode(load<std::uint8_t>(p));
    case DType::Float8E5M2:
        return e5m2Decode(load<std::uint8_t>(p));
    case DType::Int64:
        return static_cast<double>(load<std::int64_t>(p));
    case DType::Int32:
        return load<std::int32_t>(p);
    case DType::Int16:
        return load<std::int16_t>(p);
    case DType::Int8:
        return load<std::int8_t>(p);
    case DType::Bool:
        return load<std::uint8_t>(p) != 0 ? 1.0 : 0.0;
    }
    return 0.0;
}

void storeElement(DType t, void* p, double v)
{
    switch (t) {
    case DType::Float32:
        store(p, static_cast<float>(v));
        break;
    case DType::Float16:
        store(p, floatToHalf(static_cast<float>(v)));
        break;
    case DType::BFloat16:
        store(p, floatToBf16(static_cast<float>(v)));
        break;
    case DType::Float8E4M3:
        store(p, static_cast<std::uint8_t>(encodeNearest(v, e4m3Codes(), 0x7f, 448.0)));
        break;
    case DType::Float8E5M2:
        store(p, static_cast<std::uint8_t>(encodeNearest(v, e5m2Codes(), 0x7e, 57344.0)));
        break;
    case DType::Int64:
        store(p, saturatingCast<std::int64_t>(v));
        break;
    case DType::Int32:
        store(p, saturatingCast<std::int32_t>(v));
        break;
    case DType::Int16:
        store(p, saturatingCast<std::int16_t>(v));
        break;
    case DType::Int8:
        store(p, saturatingCast<std::int8_t>(v));
        break;
    case DType::Bool:
        store(p, static_cast<std::uint8_t>(v != 0.0));
        break;
    }
}

} // namespace ks
