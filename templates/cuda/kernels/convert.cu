/*
** convert.cu — fp32 <-> bf16/fp16 on the device, the bits of runtime/zr_half.h exactly.
**
** The CUDA trainer computes in fp32, as the host trainer does, and meets 16-bit data only where the
** host trainer does: the working copy (upcast before a module runs), the gradient buckets (rounded
** after a module's backward, widened when they reach grad32) and, at stages 0/1, the 16-bit
** accumulation buffer "grads". Host and device must give the same bits at each of those points, so
** these conversions are integer code written after zr_half.h (round to nearest even, NaN kept quiet
** with its sign and payload, overflow to Inf, fp16 subnormals exact), not `cvt` instructions, whose
** NaN results differ from zr_half.h. The only float operation is the fp16 subnormal rounding, one
** __fadd_rn as zr_half.h's magic-number add.
** The storage format is a run-time argument (1 bf16, 2 fp16) and the 16-bit data is plain
** unsigned short, so these kernels do not depend on the plan's ZK_IO: one cubin serves every plan.
*/
#include "zk_common.cuh"

#ifndef ZK_CVT_BLOCK
#define ZK_CVT_BLOCK 256
#endif

ZK_DEV unsigned short zd_f32_to_bf16_bits(float f)
{
    unsigned u = zk_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

ZK_DEV float zd_bf16_bits_to_f32(unsigned short h) { return zk_u2f((unsigned)h << 16); }

ZK_DEV unsigned short zd_f32_to_fp16_bits(float f)
{
    unsigned u = zk_f2u(f), a = u & 0x7fffffffu;
    unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
    if (a < 0x38800000u) {                       /* subnormal or zero: round at 2^-24 */
        float r = __fadd_rn(zk_u2f(a), 0.5f);
        return (unsigned short)(sign | (unsigned short)(zk_f2u(r) - 0x3f000000u));
    }
    a += 0xc8000fffu + ((a >> 13) & 1u);         /* rebias 127 -> 15 and round, mod 2^32 */
    return (unsigned short)(sign | (unsigned short)(a >> 13));
}

ZK_DEV float zd_fp16_bits_to_f32(unsigned short h)
{
    unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return zk_u2f(sign | 0x7f800000u | (m ? (0x00400000u | (m << 13)) : 0u));
    if (e == 0) {
        float r = __fmul_rn((float)m, 5.9604644775390625e-8f);   /* m * 2^-24, exact */
        return sign ? -r : r;
    }
    return zk_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

ZK_DEV float zd_w_to_f32(unsigned short h, int fmt)
{
    return fmt == 2 ? zd_fp16_bits_to_f32(h) : zd_bf16_bits_to_f32(h);
}
ZK_DEV unsigned short zd_f32_to_w(float f, int fmt)
{
    return fmt == 2 ? zd_f32_to_fp16_bits(f) : zd_f32_to_bf16_bits(f);
}

/* ------------------------------------------------------------------ kernels */
/* dst = round(src): 16-bit copies of fp32 data (gradient buckets). fmt: 1 bf16, 2 fp16. */
ZK_KERNEL void zd_f32_to_16(unsigned short *dst, const float *src, long n, int fmt)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = zd_f32_to_w(src[i], fmt);
}

/* dst = widen(src): the working copy for the fp32 kernels (exact). */
ZK_KERNEL void zd_16_to_f32(float *dst, const unsigned short *src, long n, int fmt)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = zd_w_to_f32(src[i], fmt);
}

/* acc += widen(g): a reduced 16-bit gradient into the fp32 accumulator (grad32). */
ZK_KERNEL void zd_add_16_to_f32(float *acc, const unsigned short *g, long n, int fmt)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = __fadd_rn(acc[i], zd_w_to_f32(g[i], fmt));
}

/* acc16 = round(widen(acc16) + g): stages 0/1 accumulate micro-steps in the 16-bit "grads". */
ZK_KERNEL void zd_add_f32_to_16(unsigned short *acc16, const float *g, long n, int fmt)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc16[i] = zd_f32_to_w(__fadd_rn(zd_w_to_f32(acc16[i], fmt), g[i]), fmt);
}

/* acc += g in fp32 (the same hand-over when the plan is fp32; fmt is unused). */
ZK_KERNEL void zd_add_f32(float *acc, const float *g, long n, int fmt)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    (void)fmt;
    if (i < n) acc[i] = __fadd_rn(acc[i], g[i]);
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_f32_to_16_launch(unsigned short *dst, const float *src, long n, int fmt)
{
    return ZK_LAUNCH(zd_f32_to_16, (unsigned)CEIL_DIV(n, ZK_CVT_BLOCK), ZK_CVT_BLOCK, 0, dst, src, n, fmt);
}
inline int zd_16_to_f32_launch(float *dst, const unsigned short *src, long n, int fmt)
{
    return ZK_LAUNCH(zd_16_to_f32, (unsigned)CEIL_DIV(n, ZK_CVT_BLOCK), ZK_CVT_BLOCK, 0, dst, src, n, fmt);
}
inline int zd_add_16_to_f32_launch(float *acc, const unsigned short *g, long n, int fmt)
{
    return ZK_LAUNCH(zd_add_16_to_f32, (unsigned)CEIL_DIV(n, ZK_CVT_BLOCK), ZK_CVT_BLOCK, 0, acc, g, n, fmt);
}
inline int zd_add_f32_launch(float *acc, const float *g, long n)
{
    return ZK_LAUNCH(zd_add_f32, (unsigned)CEIL_DIV(n, ZK_CVT_BLOCK), ZK_CVT_BLOCK, 0, acc, g, n, 0);
}
inline int zd_add_f32_to_16_launch(unsigned short *acc16, const float *g, long n, int fmt)
{
    return ZK_LAUNCH(zd_add_f32_to_16, (unsigned)CEIL_DIV(n, ZK_CVT_BLOCK), ZK_CVT_BLOCK, 0, acc16, g, n, fmt);
}
#endif
