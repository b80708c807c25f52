/*
** rope.cu — rotary position embeddings in Hugging Face's rotate-half convention, in place on q and
** k, forward and inverse (the backward: the transpose of a rotation is the rotation by -angle), and
** the cos/sin tables, as the host's zl_rope and zl_acts_carve (templates/host/llama/).
** Layout: q (N = B*T, NH*HS), k (N, NKV*HS), zk_io, the row's position pos[row] (its position in its
** document, docs/DATA.md; pos NULL: row % ZK_T); head h of a row at h*HS, its pairs (i, i + HS/2),
** i < HS/2. Tables cos_t, sin_t (ZK_T, HS/2) fp32, indexed by position.
**
** Tables: zd_rope_tables computes them once per run (T * HS/2 entries: 512K for LLaMA 3 8B at 8K
** tokens) from the inverse frequencies with zl_rope_inv_freq's arithmetic, LLaMA 3's frequency
** scaling included: base^(-2i/HS) in double rounded to fp32 as Hugging Face, the scaling in double,
** the angle t * inv_freq as an fp32 product (HF's position @ inv_freq), cos and sin in double rounded
** to fp32. So the tables are the host's to the last bit under the emulation (same libm) and within an
** ulp of fp32 on the GPU (CUDA's double cos/sin/pow are within 2 ulp of double). The constants come
** from the spec through zk_shapes.h: ZK_ROPE_THETA, ZK_ROPE_LLAMA3 and, when it is 1, ZK_ROPE_FACTOR,
** ZK_ROPE_LOW, ZK_ROPE_HIGH (the low/high frequency factors), ZK_ROPE_OLD (original context).
** Apply: one thread per pair (row, head of q or k, i), or per 8 consecutive pairs (ZK_ROPE_EPT:
** 16-byte accesses to both halves, for 16-bit storage with HS/2 a multiple of 8): q and k in one
** launch, each pair read and written once by one thread (in place is race-free); consecutive threads
** take consecutive i, so a warp reads contiguous runs of both halves of a head. fp32 math, one
** rounding to zk_io per element; the sine is negated for the inverse (sign * sin, as the host).
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV and the
** RoPE constants for them, from the arch's file, gen/arch_*.c); for the others this is an empty module.
*/
#include "zk_common.cuh"
#ifdef ZK_NKV

#define ZK_ROPE_HS (ZK_C / ZK_NH)
#define ZK_ROPE_HALF (ZK_ROPE_HS / 2)
#define ZK_ROPE_BLOCK 256
/* Pairs per thread: 8 (16-byte accesses to both halves) for 16-bit storage with HS/2 a multiple of 8
** (HS 64 and 128), else 1. */
#undef ZK_ROPE_EPT  /* a test includes this file once per shape set */
#if ZK_IO != 0 && ZK_ROPE_HALF % 8 == 0
#define ZK_ROPE_EPT 8
#else
#define ZK_ROPE_EPT 1
#endif

/* ------------------------------------------------------------------ kernels */
/* inv_freq[i] as zl_rope_inv_freq. */
ZK_DEV float zk_rope_inv_freq(int i)
{
    float f = (float)(1.0 / pow((double)ZK_ROPE_THETA, (double)(float)(2 * i) / (double)(float)ZK_ROPE_HS));
#if ZK_ROPE_LLAMA3
    const double old = (double)ZK_ROPE_OLD, lo = (double)ZK_ROPE_LOW, hi = (double)ZK_ROPE_HIGH;
    const double factor = (double)ZK_ROPE_FACTOR;
    double wavelen = 2 * 3.14159265358979323846 / f, scaled = wavelen > old / lo ? f / factor : f;
    if (!(wavelen < old / hi) && !(wavelen > old / lo)) {
        double s = (old / wavelen - lo) / (hi - lo);
        scaled = (1 - s) * scaled / factor + s * scaled;
    }
    f = (float)scaled;
#endif
    return f;
}

/* cos_t, sin_t (ZK_T, HS/2): one thread per entry. */
ZK_KERNEL void __launch_bounds__(ZK_ROPE_BLOCK)
zd_rope_tables(float *cos_t, float *sin_t)
{
    long e = (long)blockIdx.x * ZK_ROPE_BLOCK + threadIdx.x;
    if (e >= (long)ZK_T * ZK_ROPE_HALF) return;
    int t = (int)(e / ZK_ROPE_HALF), i = (int)(e % ZK_ROPE_HALF);
    float ang = zk_rope_inv_freq(i) * (float)t;
    cos_t[e] = (float)cos((double)ang);
    sin_t[e] = (float)sin((double)ang);
}

/* (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) on q's and k's heads; inverse != 0 rotates back. */
ZK_KERNEL void __launch_bounds__(ZK_ROPE_BLOCK)
zd_rope(zk_io *q, zk_io *k, const float *cos_t, const float *sin_t, const int *pos, int N, int inverse)
{
    const int per_row = (ZK_NH + ZK_NKV) * ZK_ROPE_HALF / ZK_ROPE_EPT;   /* threads per row */
    long e = (long)blockIdx.x * ZK_ROPE_BLOCK + threadIdx.x;
    if (e >= (long)N * per_row) return;
    int row = (int)(e / per_row), r = (int)(e % per_row) * ZK_ROPE_EPT, h = r / ZK_ROPE_HALF, i = r % ZK_ROPE_HALF;
    zk_io *v = h < ZK_NH ? q + (long)row * ZK_NH * ZK_ROPE_HS + h * ZK_ROPE_HS
                         : k + (long)row * ZK_NKV * ZK_ROPE_HS + (h - ZK_NH) * ZK_ROPE_HS;
    const long te = (long)(pos ? pos[row] : row % ZK_T) * ZK_ROPE_HALF + i;   /* the row's position in the tables */
    const float *ct = cos_t + te, *st = sin_t + te;
    const float sign = inverse ? -1.0f : 1.0f;
#if ZK_ROPE_EPT == 8
    float a[8], b[8];
    zk_ld8(v + i, a);
    zk_ld8(v + i + ZK_ROPE_HALF, b);
    for (int p = 0; p < 8; p++) {
        float c = ct[p], s = sign * st[p], x1 = a[p];
        a[p] = x1 * c - b[p] * s;
        b[p] = b[p] * c + x1 * s;
    }
    zk_st8(v + i, a);
    zk_st8(v + i + ZK_ROPE_HALF, b);
#else
    float c = ct[0], s = sign * st[0], a = zk_ld(v + i), b = zk_ld(v + i + ZK_ROPE_HALF);
    zk_st(v + i, a * c - b * s);
    zk_st(v + i + ZK_ROPE_HALF, b * c + a * s);
#endif
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_rope_tables_launch(float *cos_t, float *sin_t)
{
    return ZK_LAUNCH(zd_rope_tables, (unsigned)CEIL_DIV((long)ZK_T * ZK_ROPE_HALF, ZK_ROPE_BLOCK), ZK_ROPE_BLOCK, 0,
                     cos_t, sin_t);
}
/* q and k of N rows (whole sequences of ZK_T), in place; pos (N) document positions, or NULL. */
inline int zd_rope_launch(zk_io *q, zk_io *k, const float *cos_t, const float *sin_t, const int *pos, int N,
                          int inverse)
{
    unsigned grid = (unsigned)CEIL_DIV((long)N * (ZK_NH + ZK_NKV) * ZK_ROPE_HALF / ZK_ROPE_EPT, ZK_ROPE_BLOCK);
    return ZK_LAUNCH(zd_rope, grid, ZK_ROPE_BLOCK, 0, q, k, cos_t, sin_t, pos, N, inverse);
}
#endif
#endif /* ZK_NKV */
