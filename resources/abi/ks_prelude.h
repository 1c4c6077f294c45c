/* ---- K-Search kernel ABI prelude (same for every task) ------------------------------------
 * One source text serves both backends: nvcc sees CUDA's own element types, a host compiler
 * gets storage-compatible stand-ins of the same size with float conversions.  Use the ks_*
 * aliases (or ks_to_float / ks_from_float_*) so a kernel compiles under either backend.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#define KS_BACKEND_CUDA 1
#define KS_HD __host__ __device__ __forceinline__
typedef cudaStream_t ks_stream_t;
typedef __half ks_f16_t;
typedef __nv_bfloat16 ks_bf16_t;
typedef __nv_fp8_e4m3 ks_f8e4m3_t;
typedef __nv_fp8_e5m2 ks_f8e5m2_t;
KS_HD float ks_to_float(ks_f16_t v) { return __half2float(v); }
KS_HD float ks_to_float(ks_bf16_t v) { return __bfloat162float(v); }
KS_HD float ks_to_float(ks_f8e4m3_t v) { return static_cast<float>(v); }
KS_HD float ks_to_float(ks_f8e5m2_t v) { return static_cast<float>(v); }
KS_HD ks_f16_t ks_from_float_f16(float f) { return __float2half_rn(f); }
KS_HD ks_bf16_t ks_from_float_bf16(float f) { return __float2bfloat16_rn(f); }
KS_HD ks_f8e4m3_t ks_from_float_f8e4m3(float f) { return ks_f8e4m3_t(f); }
KS_HD ks_f8e5m2_t ks_from_float_f8e5m2(float f) { return ks_f8e5m2_t(f); }
/* For the harness, which calls it after every ks_run: this library's CUDA runtime is its own, so
 * a launch it refused is known here alone.  The last error, cleared, as text; NULL when none. */
extern "C" __attribute__((weak, visibility("default"))) const char* ks_launch_error(void)
{
    static char text[256];
    const cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) return NULL;
    snprintf(text, sizeof text, "%s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
    return text;
}
#else
#define KS_BACKEND_HOST 1
#define KS_HD inline
typedef void* ks_stream_t;

inline uint32_t ks_float_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
inline float ks_bits_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Round-to-nearest-even float -> bfloat16 bits; NaN stays a quiet NaN. */
inline uint16_t ks_float_to_bf16_bits(float f)
{
    uint32_t u = ks_float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* IEEE binary16 with subnormals, round-to-nearest-even. */
inline uint16_t ks_float_to_f16_bits(float f)
{
    uint32_t u = ks_float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (mag < 0x38800000u) {                                    /* below 2^-14: subnormal */
        float a = ks_bits_float(mag) * 16777216.0f;             /* value / 2^-24 */
        uint32_t q = (uint32_t)a;
        float rem = a - (float)q;
        if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
        return (uint16_t)(sign | q);
    }
    uint32_t exp = ((mag >> 23) - 112u) << 10;
    uint32_t mant = (mag >> 13) & 0x3ffu;
    uint32_t rest = mag & 0x1fffu;
    uint32_t h = exp | mant;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return (uint16_t)(sign | h);
}

inline float ks_f16_bits_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        float v = (float)mant * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (exp == 31) return ks_bits_float(sign | 0x7f800000u | (mant << 13));
    return ks_bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Small float formats (fp8) decoded and encoded by value; saturating like CUDA's __NV_SATFINITE. */
inline float ks_small_float_decode(uint8_t v, int exp_bits, int mant_bits, int bias, int nan_rule)
{
    int sign = (v >> 7) & 1;
    int exp = (v >> mant_bits) & ((1 << exp_bits) - 1);
    int mant = v & ((1 << mant_bits) - 1);
    float r;
    if (nan_rule == 0 && exp == (1 << exp_bits) - 1 && mant == (1 << mant_bits) - 1) r = ks_bits_float(0x7fc00000u);
    else if (nan_rule == 1 && exp == (1 << exp_bits) - 1) r = mant ? ks_bits_float(0x7fc00000u) : ks_bits_float(0x7f800000u);
    else if (exp == 0) r = (float)mant / (float)(1 << mant_bits) * ks_bits_float((uint32_t)(127 + 1 - bias) << 23);
    else r = (1.0f + (float)mant / (float)(1 << mant_bits)) * ks_bits_float((uint32_t)(127 + exp - bias) << 23);
    return sign ? -r : r;
}

inline uint8_t ks_small_float_encode(float f, int exp_bits, int mant_bits, int bias, int nan_rule, float max_finite)
{
    if (f != f) return nan_rule == 0 ? 0x7f : (uint8_t)(((1 << exp_bits) - 1) << mant_bits | 1);
    uint8_t best = 0;
    const uint8_t sign = (uint8_t)((ks_float_bits(f) >> 24) & 0x80u); /* keeps -0.0 negative, as CUDA does */
    float a = f < 0 ? -f : f;
    if (a > max_finite) a = max_finite;
    float best_err = 3.4e38f;
    for (int code = 0; code < 128; ++code) {           /* 128 candidates: exact nearest, ties to even */
        float c = ks_small_float_decode((uint8_t)code, exp_bits, mant_bits, bias, nan_rule);
        if (c != c || c > max_finite) continue;
        float err = c > a ? c - a : a - c;
        if (err < best_err || (err == best_err && (code & 1) == 0)) { best_err = err; best = (uint8_t)code; }
    }
    return (uint8_t)(best | sign);
}

struct ks_bf16_t {
    uint16_t bits;
    ks_bf16_t() = default;
    ks_bf16_t(float f) : bits(ks_float_to_bf16_bits(f)) {}
    operator float() const { return ks_bits_float((uint32_t)bits << 16); }
};
struct ks_f16_t {
    uint16_t bits;
    ks_f16_t() = default;
    ks_f16_t(float f) : bits(ks_float_to_f16_bits(f)) {}
    operator float() const { return ks_f16_bits_to_float(bits); }
};
struct ks_f8e4m3_t {
    uint8_t bits;
    ks_f8e4m3_t() = default;
    ks_f8e4m3_t(float f) : bits(ks_small_float_encode(f, 4, 3, 7, 0, 448.0f)) {}
    operator float() const { return ks_small_float_decode(bits, 4, 3, 7, 0); }
};
struct ks_f8e5m2_t {
    uint8_t bits;
    ks_f8e5m2_t() = default;
    ks_f8e5m2_t(float f) : bits(ks_small_float_encode(f, 5, 2, 15, 1, 57344.0f)) {}
    operator float() const { return ks_small_float_decode(bits, 5, 2, 15, 1); }
};
inline float ks_to_float(ks_f16_t v) { return (float)v; }
inline float ks_to_float(ks_bf16_t v) { return (float)v; }
inline float ks_to_float(ks_f8e4m3_t v) { return (float)v; }
inline float ks_to_float(ks_f8e5m2_t v) { return (float)v; }
inline ks_f16_t ks_from_float_f16(float f) { return ks_f16_t(f); }
inline ks_bf16_t ks_from_float_bf16(float f) { return ks_bf16_t(f); }
inline ks_f8e4m3_t ks_from_float_f8e4m3(float f) { return ks_f8e4m3_t(f); }
inline ks_f8e5m2_t ks_from_float_f8e5m2(float f) { return ks_f8e5m2_t(f); }
#endif

#ifdef __cplusplus
static_assert(sizeof(ks_bf16_t) == 2 && sizeof(ks_f16_t) == 2, "16-bit element types must be 2 bytes");
static_assert(sizeof(ks_f8e4m3_t) == 1 && sizeof(ks_f8e5m2_t) == 1, "fp8 element types must be 1 byte");
#endif
/* ---- end of prelude ------------------------------------------------------------------------ */
