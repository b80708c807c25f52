/*
** layernorm.cu — LayerNorm forward (optionally fused with the residual add) and backward.
**
** Forward: one warp per row (ZK_C is a few hundred to a few thousand: a warp's 32 lanes stride the
** row, two passes in registers' reach of L1, shuffles for the sums). Two-pass variance (mean first,
** then sum of squared deviations) as the host does, so the results agree to rounding. The fused
** variant first writes residual = a + b (the residual stream) and normalises that, saving one
** read+write of the row. mean and rstd stay fp32 for the backward pass.
** Backward: dx per row, again one warp per row, accumulated (+=) into the residual-stream gradient,
** which is the residual add's backward for free. dw and db are column sums over all rows in two
** stages (zk_colsum.h): fixed chunks of rows into fp32 partials, then the partials in chunk order, so
** the sums are deterministic (no float atomics), depend on N alone, and have enough blocks to fill the
** GPU (one thread per column walking all 8192 rows of GPT-2's micro-batch left a handful of SMs busy
** for about a millisecond per LayerNorm).
*/
#include "zk_common.cuh"
#include "zk_colsum.h"

#define ZK_LN_WARPS 4

/* ------------------------------------------------------------------ kernels */
ZK_DEV void zk_ln_row(const zk_io *x, const zk_io *w, const zk_io *b, float eps, zk_io *y, float *mean,
                      float *rstd)
{
    int lane = threadIdx.x % 32;
    float s = 0.0f;
    for (int c = lane; c < ZK_C; c += 32) s += zk_ld(x + c);
    float m = zk_warp_sum(s) / ZK_C;
    float v = 0.0f;
    for (int c = lane; c < ZK_C; c += 32) { float d = zk_ld(x + c) - m; v += d * d; }
    float rs = rsqrtf(zk_warp_sum(v) / ZK_C + eps);
    for (int c = lane; c < ZK_C; c += 32)
        zk_st(y + c, (zk_ld(x + c) - m) * rs * zk_ld(w + c) + zk_ld(b + c));
    if (lane == 0) { *mean = m; *rstd = rs; }
}

ZK_KERNEL void zd_layernorm_forward(zk_io *y, float *mean, float *rstd, const zk_io *x, const zk_io *w,
                                    const zk_io *b, float eps, int N)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;                       /* whole warps leave together */
    long o = (long)row * ZK_C;
    zk_ln_row(x + o, w, b, eps, y + o, mean + row, rstd + row);
}

/* residual = a + b; y = LayerNorm(residual). */
ZK_KERNEL void zd_residual_layernorm_forward(zk_io *residual, zk_io *y, float *mean, float *rstd,
                                             const zk_io *a, const zk_io *bres, const zk_io *w,
                                             const zk_io *b, float eps, int N)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    long o = (long)row * ZK_C;
    for (int c = threadIdx.x % 32; c < ZK_C; c += 32)
        zk_st(residual + o + c, zk_ld(a + o + c) + zk_ld(bres + o + c));
    /* each lane rereads only the columns it wrote: no barrier needed before the statistics */
    zk_ln_row(residual + o, w, b, eps, y + o, mean + row, rstd + row);
}

/* dx += rstd * (g - mean(g) - xh * mean(g * xh)), g = dy * w, xh = (x - mean) * rstd. */
ZK_KERNEL void zd_layernorm_backward_dx(zk_io *dx, const zk_io *dy, const zk_io *x, const zk_io *w,
                                        const float *mean, const float *rstd, int N)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    long o = (long)row * ZK_C;
    float m = mean[row], rs = rstd[row], sg = 0.0f, sgx = 0.0f;
    for (int c = lane; c < ZK_C; c += 32) {
        float g = zk_ld(dy + o + c) * zk_ld(w + c);
        sg += g;
        sgx += g * (zk_ld(x + o + c) - m) * rs;
    }
    sg = zk_warp_sum(sg) / ZK_C;
    sgx = zk_warp_sum(sgx) / ZK_C;
    for (int c = lane; c < ZK_C; c += 32) {
        float g = zk_ld(dy + o + c) * zk_ld(w + c), xh = (zk_ld(x + o + c) - m) * rs;
        zk_st(dx + o + c, zk_ld(dx + o + c) + rs * (g - sg - xh * sgx));
    }
}

/* part[chunk, c] = the chunk's sum, rows in order, of dy * xh; part[chunks + chunk, c] of dy.
** grid (column blocks, chunks). */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_layernorm_backward_dwdb_part(float *part, const zk_io *dy, const zk_io *x, const float *mean,
                                const float *rstd, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x, n0 = blockIdx.y * ZK_COL_ROWS;
    if (c >= ZK_C) return;
    int n1 = zk_mini(n0 + ZK_COL_ROWS, N);
    float sw = 0.0f, sb = 0.0f;
    for (int n = n0; n < n1; n++) {
        float d = zk_ld(dy + (long)n * ZK_C + c);
        sw += d * (zk_ld(x + (long)n * ZK_C + c) - mean[n]) * rstd[n];
        sb += d;
    }
    part[(long)blockIdx.y * ZK_C + c] = sw;
    part[((long)ZK_COL_CHUNKS(N) + blockIdx.y) * ZK_C + c] = sb;
}

/* dw[c] += the dw partials of column c in chunk order; db[c] += the db partials. */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_layernorm_backward_dwdb_sum(float *dw, float *db, const float *part, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x;
    if (c >= ZK_C) return;
    int k = ZK_COL_CHUNKS(N);
    dw[c] += zk_col_partials(part, k, ZK_C, c);
    db[c] += zk_col_partials(part + (long)k * ZK_C, k, ZK_C, c);
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_layernorm_forward_launch(zk_io *y, float *mean, float *rstd, const zk_io *x,
                                              const zk_io *w, const zk_io *b, float eps, int N)
{
    return ZK_LAUNCH(zd_layernorm_forward, (unsigned)CEIL_DIV(N, ZK_LN_WARPS), 32 * ZK_LN_WARPS, 0,
                     y, mean, rstd, x, w, b, eps, N);
}
inline int zd_residual_layernorm_forward_launch(zk_io *residual, zk_io *y, float *mean, float *rstd,
                                                       const zk_io *a, const zk_io *bres, const zk_io *w,
                                                       const zk_io *b, float eps, int N)
{
    return ZK_LAUNCH(zd_residual_layernorm_forward, (unsigned)CEIL_DIV(N, ZK_LN_WARPS), 32 * ZK_LN_WARPS, 0,
                     residual, y, mean, rstd, a, bres, w, b, eps, N);
}
/* Floats of the dw/db partials for N rows. */
inline long zd_layernorm_dwdb_part_floats(int N) { return 2L * ZK_COL_CHUNKS(N) * ZK_C; }

/* dx += the gradient; dw, db += theirs (fp32); part: zd_layernorm_dwdb_part_floats(N) floats of scratch. */
inline int zd_layernorm_backward_launch(zk_io *dx, float *dw, float *db, float *part, const zk_io *dy,
                                        const zk_io *x, const zk_io *w, const float *mean, const float *rstd,
                                        int N)
{
    int rc = ZK_LAUNCH(zd_layernorm_backward_dx, (unsigned)CEIL_DIV(N, ZK_LN_WARPS), 32 * ZK_LN_WARPS, 0,
                       dx, dy, x, w, mean, rstd, N);
    if (rc) return rc;
    dim3 g = {(unsigned)CEIL_DIV(ZK_C, ZK_COL_BLOCK), (unsigned)ZK_COL_CHUNKS(N), 1u};
    rc = ZK_LAUNCH(zd_layernorm_backward_dwdb_part, g, ZK_COL_BLOCK, 0, part, dy, x, mean, rstd, N);
    if (rc) return rc;
    return ZK_LAUNCH(zd_layernorm_backward_dwdb_sum, (unsigned)CEIL_DIV(ZK_C, ZK_COL_BLOCK), ZK_COL_BLOCK, 0,
                     dw, db, part, N);
}
#endif
