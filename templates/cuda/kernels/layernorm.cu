/*
** layernorm.cu — LayerNorm forward (optionally fused with the residual add) and backward.
**
** Forward: one warp per row (ZK_C is a few hundred to a few thousand: a warp's 32 lanes stride the
** row, two passes in registers' reach of L1, shuffles for the sums). Two-pass variance (mean first,
** then sum of squared deviations) as the host does, so the results agree to rounding. The fused
** variant first writes residual = a + b (the residual stream) and normalises that, saving one
** read+write of the row. mean and rstd stay fp32 for the backward pass.
** Backward: dx per row, again one warp per row, accumulated (+=) into the residual-stream gradient,
** which is the residual add's backward for free. dw and db are column reductions over all rows: a
** second kernel with one thread per column walking the rows in order, so the sums are deterministic
** (no float atomics) and independent of the launch shape.
*/
#include "zk_common.cuh"

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

/* dw[c] += sum_n dy * xh, db[c] += sum_n dy: one thread per column, rows in order. */
ZK_KERNEL void zd_layernorm_backward_dwdb(float *dw, float *db, const zk_io *dy, const zk_io *x,
                                          const float *mean, const float *rstd, int N)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ZK_C) return;
    float sw = 0.0f, sb = 0.0f;
    for (int n = 0; n < N; n++) {
        float d = zk_ld(dy + (long)n * ZK_C + c);
        sw += d * (zk_ld(x + (long)n * ZK_C + c) - mean[n]) * rstd[n];
        sb += d;
    }
    dw[c] += sw;
    db[c] += sb;
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
inline int zd_layernorm_backward_launch(zk_io *dx, float *dw, float *db, const zk_io *dy, const zk_io *x,
                                               const zk_io *w, const float *mean, const float *rstd, int N)
{
    int rc = ZK_LAUNCH(zd_layernorm_backward_dx, (unsigned)CEIL_DIV(N, ZK_LN_WARPS), 32 * ZK_LN_WARPS, 0,
                       dx, dy, x, w, mean, rstd, N);
    if (rc) return rc;
    return ZK_LAUNCH(zd_layernorm_backward_dwdb, (unsigned)CEIL_DIV(ZK_C, 64), 64, 0, dw, db, dy, x, mean, rstd, N);
}
#endif
