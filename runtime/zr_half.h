/*
** zr_half.h — bf16 / fp16 <-> fp32 conversions, header only, pure C (no F16C needed).
**
** Narrowing rounds to nearest, ties to even (RNE), as PyTorch and the GPUs do. NaN stays NaN
** (a quiet NaN, sign kept; never rounds into Inf), +-Inf stays Inf, values beyond the range
** round to Inf (fp16 above 65504 + half an ulp), fp16 subnormals are produced and read exactly.
** Widening is exact for both formats. The bit patterns are uint16_t so that no compiler
** _Float16 / __bf16 support is required; the SIMD Adam paths use the same rules and are
** tested bit-for-bit against these functions.
*/
#ifndef ZR_HALF_H
#define ZR_HALF_H
#include <stdint.h>
#include <string.h>

static inline uint32_t zr_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float zr_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- bf16: the top 16 bits of an fp32 */
static inline float zr_bf16_to_f32(uint16_t h) { return zr_bits_f32((uint32_t)h << 16); }

static inline uint16_t zr_f32_to_bf16(float f)
{
    uint32_t u = zr_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)            /* NaN: keep sign, force quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);                /* RNE; overflow carries into Inf */
    return (uint16_t)(u >> 16);
}

/* ---- TF32 (additive): fp32's sign and 8 exponent bits, 10 explicit mantissa bits (11
** significant), what a TF32 tensor core reads of an fp32 operand. Rounded to nearest even, as
** above; the result is an fp32 value with its 13 low mantissa bits zero. The stand-in and the stub
** cuBLAS use it to give TF32's numerics (docs/CUDA_TRAINER.md "TF32"). */
static inline float zr_f32_round_tf32(float f)
{
    uint32_t u = zr_f32_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;  /* Inf and NaN unchanged */
    u += 0xfffu + ((u >> 13) & 1u);                 /* RNE; overflow carries into Inf */
    return zr_bits_f32(u & ~0x1fffu);
}

/* ---- fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits */
static inline float zr_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)                                 /* Inf / NaN (payload kept, quiet bit set) */
        return zr_bits_f32(sign | 0x7f800000u | (man ? (0x00400000u | (man << 13)) : 0));
    if (exp == 0) {                                  /* zero or subnormal: man * 2^-24, exact */
        float r = (float)man * 5.9604644775390625e-8f;
        return sign ? -r : r;
    }
    return zr_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t zr_f32_to_fp16(float f)
{
    uint32_t u = zr_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));   /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* >= 65520 (incl. Inf): Inf */
    if (a < 0x38800000u) {                           /* below 2^-14: fp16 subnormal or zero */
        /* The magic-number add rounds to a multiple of 2^-24 with the FPU's RNE. */
        float r = zr_bits_f32(a) + 0.5f;             /* 0.5 = 2^-1: ulp is 2^-24 */
        return (uint16_t)(sign | (uint16_t)(zr_f32_bits(r) - 0x3f000000u));
    }
    /* normal: rebias 127 -> 15, round the 13 dropped mantissa bits to nearest even */
    a += 0xc8000fffu + ((a >> 13) & 1u);             /* -(112 << 23) + 0xfff + lsb, mod 2^32 */
    return (uint16_t)(sign | (uint16_t)(a >> 13));
}

/* ---- bulk helpers (scalar loops; compilers vectorise the widening ones) */
static inline void zr_bf16_to_f32_n(float *dst, const uint16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = zr_bf16_to_f32(src[i]);
}
static inline void zr_f32_to_bf16_n(uint16_t *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = zr_f32_to_bf16(src[i]);
}
static inline void zr_fp16_to_f32_n(float *dst, const uint16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = zr_fp16_to_f32(src[i]);
}
static inline void zr_f32_to_fp16_n(uint16_t *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = zr_f32_to_fp16(src[i]);
}
#endif
