/*
** gradnorm.cu — one pass over a gradient buffer that unscales it (fp16 loss scaling), checks for
** inf/NaN and accumulates the squared norm for gradient clipping.
**
** Stage 1: a fixed grid of at most ZK_GN_BLOCKS blocks strides the buffer; each element is loaded
** (16-bit or fp32), multiplied by inv_scale, stored as fp32 (the optimizer's input; may be the same
** buffer when the gradients are fp32) and its square summed; a non-finite element is counted, not
** squared, so one huge-but-finite value cannot fake an overflow. Each block writes its partial
** (sum, count) pair. Stage 2: one block adds the partials in a fixed order and ACCUMULATES into
** result = {sum of squares, non-finite count}, so several buffers (buckets, the shards of a
** partition) add into one result. No float atomics: the norm is bit-identical run to run, which
** matters because clipping rescales every parameter by it.
*/
#include "zk_common.cuh"

#define ZK_GN_BLOCK 256
#define ZK_GN_BLOCKS 256

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(ZK_GN_BLOCK)
zd_grad_unscale_norm(float *out, const zk_io *g, long n, float inv_scale, float *partials)
{
    __shared__ float red[32];
    float s = 0.0f, bad = 0.0f;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)blockDim.x * gridDim.x) {
        float x = zk_ld(g + i) * inv_scale;
        out[i] = x;
        if (zk_finite(x)) s += x * x;
        else bad += 1.0f;
    }
    s = zk_block_sum(s, red);
    bad = zk_block_sum(bad, red);
    if (threadIdx.x == 0) { partials[2 * blockIdx.x] = s; partials[2 * blockIdx.x + 1] = bad; }
}

/* result[0] += sum of squares, result[1] += non-finite count; one block. */
ZK_KERNEL void __launch_bounds__(ZK_GN_BLOCK)
zd_grad_norm_finish(float *result, const float *partials, int nblocks)
{
    __shared__ float red[32];
    float s = 0.0f, bad = 0.0f;
    for (int b = threadIdx.x; b < nblocks; b += blockDim.x) { s += partials[2 * b]; bad += partials[2 * b + 1]; }
    s = zk_block_sum(s, red);
    bad = zk_block_sum(bad, red);
    if (threadIdx.x == 0) { result[0] += s; result[1] += bad; }
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* partials: 2 * ZK_GN_BLOCKS floats of scratch. */
inline int zd_grad_unscale_norm_launch(float *out, const zk_io *g, long n, float inv_scale, float *partials,
                                              float *result)
{
    long nb = CEIL_DIV(n, ZK_GN_BLOCK);
    int blocks = nb < 1 ? 1 : nb > ZK_GN_BLOCKS ? ZK_GN_BLOCKS : (int)nb;
    int rc = ZK_LAUNCH(zd_grad_unscale_norm, (unsigned)blocks, ZK_GN_BLOCK, 0, out, g, n, inv_scale, partials);
    if (rc) return rc;
    return ZK_LAUNCH(zd_grad_norm_finish, 1u, ZK_GN_BLOCK, 0, result, partials, blocks);
}
#endif
