/*
** rmsnorm.cu — LLaMA's RMSNorm, y = w * (x * rstd), rstd = 1 / sqrt(mean(x^2) + eps), forward
** (saving rstd) and backward, as the host's zl_rmsnorm_forward/backward (templates/host/llama/).
** Layout: x, y, dy, dx (N, ZK_C) rows in zk_io (bf16 in training), w (ZK_C) zk_io, rstd (N) fp32,
** dw (ZK_C) fp32; the statistics and all math are fp32.
**
** Forward: one warp per row, 4 rows per 128-thread block, as layernorm.cu (ZK_C is 2048 to 8192 for
** LLaMA: a warp's lanes stride the row; the second read of the row hits L1/L2). One pass fewer than
** LayerNorm: no mean.
** Backward dx: one warp per row, dx += rstd * (dy w - x rstd * mean(dy w x rstd)), ACCUMULATED into
** dx, the residual stream's gradient (the residual add's backward for free, as layernorm.cu).
** Backward dw (+= sum_n dy x rstd), deterministic without atomics and with enough parallelism for
** LLaMA's shapes: zk_colsum.h's two stages, as layernorm.cu's dw/db. A first kernel sums fixed chunks
** of ZK_COL_ROWS rows per column into partials part (ceil(N / ZK_COL_ROWS), ZK_C) fp32, rows in order,
** one thread per column (a warp reads 32 consecutive columns: coalesced); a second adds each column's
** partials in chunk order. The order is fixed by N alone, never by the launch or the GPU.
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them,
** from the arch's file, gen/arch_*.c); for the others this is an empty module.
*/
#include "zk_common.cuh"
#include "zk_colsum.h"
#ifdef ZK_NKV

#define ZK_RMS_WARPS 4              /* rows per block */
/* 16-bit rows whose length is a multiple of 8 (every LLaMA's) move 8 elements (16 bytes) per lane
** access: lane l takes columns 8l..8l+7, then 256 on; the rows are 16-byte aligned as C is. */
#undef ZK_RMS_VEC  /* a test includes this file once per shape set */
#if ZK_IO != 0 && ZK_C % 8 == 0
#define ZK_RMS_VEC 1
#else
#define ZK_RMS_VEC 0
#endif

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(32 * ZK_RMS_WARPS)
zd_rmsnorm_forward(zk_io *y, float *rstd, const zk_io *x, const zk_io *w, float eps, int N)
{
    int row = blockIdx.x * ZK_RMS_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;                       /* whole warps leave together */
    const zk_io *xr = x + (long)row * ZK_C;
    zk_io *yr = y + (long)row * ZK_C;
    float ss = 0.0f;
#if ZK_RMS_VEC
    for (int c = 8 * lane; c < ZK_C; c += 256) {
        float v[8];
        zk_ld8(xr + c, v);
        for (int e = 0; e < 8; e++) ss += v[e] * v[e];
    }
    float s = rsqrtf(zk_warp_sum(ss) / ZK_C + eps);
    for (int c = 8 * lane; c < ZK_C; c += 256) {
        float v[8], g[8];
        zk_ld8(xr + c, v);
        zk_ld8(w + c, g);
        for (int e = 0; e < 8; e++) v[e] = g[e] * (v[e] * s);
        zk_st8(yr + c, v);
    }
#else
    for (int c = lane; c < ZK_C; c += 32) { float v = zk_ld(xr + c); ss += v * v; }
    float s = rsqrtf(zk_warp_sum(ss) / ZK_C + eps);
    for (int c = lane; c < ZK_C; c += 32) zk_st(yr + c, zk_ld(w + c) * (zk_ld(xr + c) * s));
#endif
    if (lane == 0) rstd[row] = s;
}

ZK_KERNEL void __launch_bounds__(32 * ZK_RMS_WARPS)
zd_rmsnorm_backward_dx(zk_io *dx, const zk_io *dy, const zk_io *x, const zk_io *w, const float *rstd, int N)
{
    int row = blockIdx.x * ZK_RMS_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    long o = (long)row * ZK_C;
    float s = rstd[row], dot = 0.0f;
#if ZK_RMS_VEC
    for (int c = 8 * lane; c < ZK_C; c += 256) {
        float d[8], g[8], v[8];
        zk_ld8(dy + o + c, d);
        zk_ld8(w + c, g);
        zk_ld8(x + o + c, v);
        for (int e = 0; e < 8; e++) dot += d[e] * g[e] * v[e] * s;
    }
    dot = zk_warp_sum(dot) / ZK_C;
    for (int c = 8 * lane; c < ZK_C; c += 256) {
        float d[8], g[8], v[8], a[8];
        zk_ld8(dy + o + c, d);
        zk_ld8(w + c, g);
        zk_ld8(x + o + c, v);
        zk_ld8(dx + o + c, a);
        for (int e = 0; e < 8; e++) a[e] += s * (d[e] * g[e] - v[e] * s * dot);
        zk_st8(dx + o + c, a);
    }
#else
    for (int c = lane; c < ZK_C; c += 32) dot += zk_ld(dy + o + c) * zk_ld(w + c) * zk_ld(x + o + c) * s;
    dot = zk_warp_sum(dot) / ZK_C;
    for (int c = lane; c < ZK_C; c += 32)
        zk_st(dx + o + c, zk_ld(dx + o + c) + s * (zk_ld(dy + o + c) * zk_ld(w + c) - zk_ld(x + o + c) * s * dot));
#endif
}

/* part[chunk, c] = sum over the chunk's rows, in order, of dy x rstd; grid (columns, chunks). */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_rmsnorm_backward_dw_part(float *part, const zk_io *dy, const zk_io *x, const float *rstd, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x, n0 = blockIdx.y * ZK_COL_ROWS;
    if (c >= ZK_C) return;
    int n1 = zk_mini(n0 + ZK_COL_ROWS, N);
    float acc = 0.0f;
    for (int n = n0; n < n1; n++) acc += zk_ld(dy + (long)n * ZK_C + c) * zk_ld(x + (long)n * ZK_C + c) * rstd[n];
    part[(long)blockIdx.y * ZK_C + c] = acc;
}

/* dw[c] += sum over chunks, in order, of part[chunk, c]. */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_rmsnorm_backward_dw_sum(float *dw, const float *part, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x;
    if (c >= ZK_C) return;
    dw[c] += zk_col_partials(part, ZK_COL_CHUNKS(N), ZK_C, c);
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* Floats of the dw partials for N rows. */
inline long zd_rmsnorm_dw_part_floats(int N) { return (long)ZK_COL_CHUNKS(N) * ZK_C; }

inline int zd_rmsnorm_forward_launch(zk_io *y, float *rstd, const zk_io *x, const zk_io *w, float eps, int N)
{
    return ZK_LAUNCH(zd_rmsnorm_forward, (unsigned)CEIL_DIV(N, ZK_RMS_WARPS), 32 * ZK_RMS_WARPS, 0, y, rstd, x, w,
                     eps, N);
}
/* dx += the gradient; dw += its gradient (fp32); part: zd_rmsnorm_dw_part_floats(N) floats of scratch. */
inline int zd_rmsnorm_backward_launch(zk_io *dx, float *dw, float *part, const zk_io *dy, const zk_io *x,
                                      const zk_io *w, const float *rstd, int N)
{
    int rc = ZK_LAUNCH(zd_rmsnorm_backward_dx, (unsigned)CEIL_DIV(N, ZK_RMS_WARPS), 32 * ZK_RMS_WARPS, 0,
                       dx, dy, x, w, rstd, N);
    if (rc) return rc;
    dim3 g = {(unsigned)CEIL_DIV(ZK_C, ZK_COL_BLOCK), (unsigned)ZK_COL_CHUNKS(N), 1u};
    rc = ZK_LAUNCH(zd_rmsnorm_backward_dw_part, g, ZK_COL_BLOCK, 0, part, dy, x, rstd, N);
    if (rc) return rc;
    return ZK_LAUNCH(zd_rmsnorm_backward_dw_sum, (unsigned)CEIL_DIV(ZK_C, ZK_COL_BLOCK), ZK_COL_BLOCK, 0,
                     dw, part, N);
}
#endif
#endif /* ZK_NKV */
