/*
** zk_common.cuh — what every zgen CUDA kernel shares: the baked-in shapes, the 16-bit storage type
** with fp32 math, warp/block reductions, and the launch macro.
**
** One source, three compilers:
**   - NVRTC (zgen, at generation time): __CUDACC_RTC__; no system headers, so nothing here includes
**     any, and the 16-bit types are our own bit containers, not cuda_fp16.h/cuda_bf16.h (which would
**     tie generation to the toolkit's include folder);
**   - nvcc, for a trainer that launches with <<<>>> (the launchers at the end of each kernel file);
**   - g++ with zr_simt.h first (the CPU emulation tests): ZR_SIMT_H is defined.
** Shapes: ZK_C, ZK_NH, ZK_T, ZK_V, ZK_F are compile-time constants. zgen emits them into
** zk_shapes.h from the plan; a test defines them itself (several shape sets per test binary, each
** kernel file included once per set inside its own namespace, so nothing here may be defined twice
** in one translation unit except under this header's guard).
** ZK_IO selects the storage type of activations and 16-bit parameters: 0 fp32, 1 bf16, 2 fp16.
** Kernels always load through zk_ld and store through zk_st, and do their math in fp32.
*/
#ifndef ZK_COMMON_CUH
#define ZK_COMMON_CUH

#if !defined(ZK_C) && !defined(ZK_NO_SHAPES)
#include "zk_shapes.h"
#endif

/* Kernels keep C linkage on the device (cuModuleGetFunction finds them by their plain name); the
** emulation includes each file several times in namespaces, where C linkage would merge them. */
#ifdef ZR_SIMT_H
#define ZK_KERNEL __global__
#else
#define ZK_KERNEL extern "C" __global__
#endif
#define ZK_DEV static __device__ __forceinline__
/* Loops over per-thread accumulator arrays are unrolled, or nvcc may put the arrays on the stack
** (it did in attention_tc's dkv at HS 128 with 16-bit storage, 256 bytes, and in attention's forward
** and dq at HS 128, 48 bytes). g++ (the emulation) has no such pragma. */
#ifdef ZR_SIMT_H
#define ZK_UNROLL
#else
#define ZK_UNROLL _Pragma("unroll")
#endif
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* ------------------------------------------------------------------ bit casts and constants */
#ifdef __CUDA_ARCH__
ZK_DEV unsigned zk_f2u(float f) { return __float_as_uint(f); }
ZK_DEV float zk_u2f(unsigned u) { return __uint_as_float(u); }
#else
ZK_DEV unsigned zk_f2u(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
ZK_DEV float zk_u2f(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
#endif
ZK_DEV float zk_neg_inf(void) { return zk_u2f(0xff800000u); }
ZK_DEV bool zk_finite(float f) { return (zk_f2u(f) & 0x7f800000u) != 0x7f800000u; }
ZK_DEV float zk_maxf(float a, float b) { return a > b ? a : b; }
ZK_DEV int zk_mini(int a, int b) { return a < b ? a : b; }

/* ------------------------------------------------------------------ 16-bit storage */
/* Distinct structs, so a bf16 buffer can never be passed where an fp16 one is expected. */
struct zk_bf16 { unsigned short bits; };
struct zk_fp16 { unsigned short bits; };

ZK_DEV float zk_ld(const float *p) { return *p; }
ZK_DEV void zk_st(float *p, float v) { *p = v; }

/* bf16 = the high half of an fp32; round to nearest even, NaN stays NaN (quiet). */
ZK_DEV float zk_ld(const zk_bf16 *p) { return zk_u2f((unsigned)p->bits << 16); }
ZK_DEV void zk_st(zk_bf16 *p, float v)
{
    unsigned u = zk_f2u(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) { p->bits = (unsigned short)((u >> 16) | 0x40u); return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    p->bits = (unsigned short)(u >> 16);
}

#ifdef __CUDA_ARCH__
ZK_DEV float zk_ld(const zk_fp16 *p)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p->bits));
    return f;
}
ZK_DEV void zk_st(zk_fp16 *p, float v)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p->bits = h;
}
#else
/* The CPU's conversions, exact as the PTX cvt instructions (round to nearest even, subnormals,
** overflow to inf, NaN kept). */
ZK_DEV float zk_ld(const zk_fp16 *p)
{
    unsigned h = p->bits, s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return zk_u2f(s | 0x7f800000u | (m << 13));
    if (e) return zk_u2f(s | ((e + 112) << 23) | (m << 13));
    return (s ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f;   /* m * 2^-24 */
}
ZK_DEV void zk_st(zk_fp16 *p, float v)
{
    unsigned u = zk_f2u(v), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    unsigned short h;
    if (a > 0x7f800000u) h = (unsigned short)(s | 0x7e00u);
    else if (a >= 0x477ff000u) h = (unsigned short)(s | 0x7c00u);       /* rounds to >= 65520 */
    else if (a >= 0x38800000u) {                                        /* normal half */
        unsigned r = a - 0x38000000u;                                    /* rebias 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);
        h = (unsigned short)(s | (r >> 13));
    } else {                                                             /* subnormal or zero */
        float f = zk_u2f(a) * 16777216.0f;                               /* units of 2^-24 */
        h = (unsigned short)(s | (unsigned)nearbyintf(f));
    }
    p->bits = h;
}
#endif


/* Eight consecutive 16-bit elements (zk_bf16 or zk_fp16) as one 16-byte access, to and from fp32:
** the memory-bound kernels move a row in a quarter of the instructions. p must be 16-byte aligned. */
struct alignas(16) zk_v8 { unsigned short h[8]; };
template <typename T> ZK_DEV void zk_ld8(const T *p, float *f)
{
    zk_v8 v;
#ifdef ZR_SIMT_H
    memcpy(&v, p, sizeof v);
#else
    v = *reinterpret_cast<const zk_v8 *>(p);
#endif
    for (int e = 0; e < 8; e++) { T t; t.bits = v.h[e]; f[e] = zk_ld(&t); }
}
template <typename T> ZK_DEV void zk_st8(T *p, const float *f)
{
    zk_v8 v;
    for (int e = 0; e < 8; e++) { T t; zk_st(&t, f[e]); v.h[e] = t.bits; }
#ifdef ZR_SIMT_H
    memcpy(p, &v, sizeof v);
#else
    *reinterpret_cast<zk_v8 *>(p) = v;
#endif
}

/* ------------------------------------------------------------------ reductions */
ZK_DEV float zk_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
ZK_DEV float zk_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = zk_maxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Block-wide sum/max for blocks of whole warps (<= 1024 threads); every thread gets the result.
** scratch: 32 floats of shared memory; the barrier at the start lets callers reuse it back to back. */
ZK_DEV float zk_block_sum(float v, float *scratch)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = zk_warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : 0.0f;
    return zk_warp_sum(v);
}
ZK_DEV float zk_block_max(float v, float *scratch)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = zk_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : zk_neg_inf();
    return zk_warp_max(v);
}

/* Stage 2 of a column sum (zk_colsum.h): column c of `chunks` rows of `width` fp32 partials, added
** in chunk order. */
ZK_DEV float zk_col_partials(const float *part, int chunks, int width, int c)
{
    float s = 0.0f;
    for (int k = 0; k < chunks; k++) s += part[(long)k * width + c];
    return s;
}

/* ------------------------------------------------------------------ launches */
/* Launchers (host side) exist outside NVRTC only. Under emulation a launch runs the grid at once
** and returns 0 or -1; with nvcc it is an ordinary <<<>>> launch on the default stream and returns 0
** (the driver-API trainer launches the cubin itself, with the same grid arithmetic). */
#if defined(ZR_SIMT_H)
#define ZK_LAUNCH(kernel, grid, block, shmem, ...) ZR_SIMT_LAUNCH(kernel, grid, block, shmem, __VA_ARGS__)
#define ZK_HOST_LAUNCHERS 1
#elif !defined(__CUDACC_RTC__)
#define ZK_LAUNCH(kernel, grid, block, shmem, ...) (kernel<<<grid, block, shmem>>>(__VA_ARGS__), 0)
#define ZK_HOST_LAUNCHERS 1
#else
#define ZK_HOST_LAUNCHERS 0
#endif

#endif

/* Outside the guard: a test includes kernel files once per namespace, each with its own ZK_IO
** (C++ allows repeating a typedef of the same type in one scope). */
#ifndef ZK_IO
#define ZK_IO 0
#endif
#if ZK_IO == 1
typedef zk_bf16 zk_io;
#elif ZK_IO == 2
typedef zk_fp16 zk_io;
#else
typedef float zk_io;
#endif
