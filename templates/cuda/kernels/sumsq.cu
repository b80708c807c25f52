/*
** sumsq.cu — the sum of squares of a gradient shard on the device, for the optimizer step's global
** norm and its inf/NaN check (train_optim.c's tr_step_rule), so that with Adam on the device the
** gradients never cross to the host: only the 8-byte result does.
**
** Two deterministic stages, no atomics, so the result depends on the data and the element count
** only (zk_sumsq.h's grid is a function of n), never on scheduling or the GPU:
**   zd_sumsq_partial  a fixed grid; block b sums the contiguous range [b * chunk, (b+1) * chunk),
**                     thread t the elements t, t + 256, ... of it in ascending order, then a fixed
**                     pairwise tree over the block's 256 values; partials[b] = the block's sum;
**   zd_sumsq_finish   one block adds partials[0..nblocks) the same way into result[0], or adds them
**                     to it (accumulate), so several ranges of one shard sum into one result.
** Every square and sum is in fp64: a float's square is exact in a double, and a double sum of
** squares of floats can neither overflow nor lose the small terms that matter for the norm; this is
** the host trainer's arithmetic (double accumulation of (double)g * g), in another order: both are
** rounded to fp32 for the norm's all-reduce, where they agree except when the two double sums
** straddle an fp32 rounding boundary (then by one fp32 ulp, 2^-23 relative; docs/CUDA_TRAINER.md).
** inf/NaN need no separate check: a non-finite gradient makes its square, and so the sum, inf or
** NaN, and the step rule's isfinite() on the all-reduced sum is the fp16 overflow decision, as on the
** host. The input is fp32 (grad32) or the plan's 16-bit gradients (fmt 1 bf16, 2 fp16: ZrDtype, as
** convert.cu), widened exactly. Unscaling is not a pass here: Adam multiplies each gradient by
** 1/(loss scale x clip coefficient) as it reads it (adamw.cu's gs), as the host's zr_adam_step does.
*/
#include "zk_common.cuh"
#include "zk_sumsq.h"

ZK_DEV float zk_sq_ld(const void *g, int fmt, long i)
{
    if (fmt == 1) return zk_ld((const zk_bf16 *)g + i);
    if (fmt == 2) return zk_ld((const zk_fp16 *)g + i);
    return ((const float *)g)[i];
}

/* The block's ZK_SQ_BLOCK values added pairwise in a fixed tree; the total is in red[0]. */
ZK_DEV double zk_sq_tree(double v, double *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int w = ZK_SQ_BLOCK / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    return red[0];
}

/* ------------------------------------------------------------------ kernels */
/* partials[blockIdx.x] = sum of g[i]^2 over the block's range of [0, n); launched with
** ZK_SQ_BLOCKS(n) blocks of ZK_SQ_BLOCK threads and chunk = ZK_SQ_CHUNK(n, blocks). */
ZK_KERNEL void __launch_bounds__(ZK_SQ_BLOCK)
zd_sumsq_partial(double *partials, const void *g, long n, long chunk, int fmt)
{
    __shared__ double red[ZK_SQ_BLOCK];
    long lo = (long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    double s = 0.0;
    for (long i = lo + (long)threadIdx.x; i < hi; i += ZK_SQ_BLOCK) {
        double x = (double)zk_sq_ld(g, fmt, i);
        s += x * x;
    }
    s = zk_sq_tree(s, red);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

/* result[0] = (accumulate ? result[0] : 0) + the partials' sum; one block of ZK_SQ_BLOCK threads. */
ZK_KERNEL void __launch_bounds__(ZK_SQ_BLOCK)
zd_sumsq_finish(double *result, const double *partials, int nblocks, int accumulate)
{
    __shared__ double red[ZK_SQ_BLOCK];
    double s = 0.0;
    for (int b = (int)threadIdx.x; b < nblocks; b += ZK_SQ_BLOCK) s += partials[b];
    s = zk_sq_tree(s, red);
    if (threadIdx.x == 0) result[0] = accumulate ? result[0] + s : s;
}

/* The fused norm's lanes (the host trainer's order, train.h TrSq) of n elements at shard offsets
** [a, a + n), g pointing at the first: the norm blocks are the multiples of `block` (a multiple of
** 8) in shard offsets; lane set s is the (a / block + s)-th block's part in the range, and its lane
** j the double sum, in ascending order from 0, of the squares of its elements whose offset is j
** modulo 8. Each lane is one thread's loop, so its sum is the host's to the bit (a float's square is
** exact in a double, so a fused multiply-add rounds as the separate add does). The host adds each
** set's lanes into its running sum of the bucket (tr_sq_lanes), so only 64 B per block cross.
** nsets = (a + n - 1) / block - a / block + 1 sets, 8 threads each. */
ZK_KERNEL void __launch_bounds__(ZK_SQ_BLOCK)
zd_sumsq_lanes(double *lanes, const void *g, long a, long n, long block, long nsets, int fmt)
{
    long t = (long)blockIdx.x * ZK_SQ_BLOCK + (long)threadIdx.x, set = t / 8;
    int lane = (int)(t % 8);
    if (set >= nsets) return;
    long b0 = (a / block + set) * block, lo = b0 > a ? b0 : a, hi = b0 + block < a + n ? b0 + block : a + n;
    double s = 0.0;
    for (long o = lo + (lane - lo % 8 + 8) % 8; o < hi; o += 8) {
        double x = (double)zk_sq_ld(g, fmt, o - a);
        s += x * x;
    }
    lanes[t] = s;
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* partials: ZK_SQ_MAX_BLOCKS doubles of scratch. */
inline int zd_sumsq_launch(double *result, double *partials, const void *g, long n, int fmt,
                           int accumulate)
{
    int blocks = ZK_SQ_BLOCKS(n);
    long chunk = ZK_SQ_CHUNK(n, (long)blocks);
    int rc = ZK_LAUNCH(zd_sumsq_partial, (unsigned)blocks, ZK_SQ_BLOCK, 0, partials, g, n, chunk, fmt);
    if (rc) return rc;
    return ZK_LAUNCH(zd_sumsq_finish, 1u, ZK_SQ_BLOCK, 0, result, (const double *)partials, blocks, accumulate);
}

/* lanes: ZK_SQ_LANE_SETS(a, n, block) x 8 doubles. */
inline int zd_sumsq_lanes_launch(double *lanes, const void *g, long a, long n, long block, int fmt)
{
    long nsets = ZK_SQ_LANE_SETS(a, n, block);
    return ZK_LAUNCH(zd_sumsq_lanes, ZK_SQ_LANE_GRID(nsets), ZK_SQ_BLOCK, 0, lanes, g, a, n, block, nsets, fmt);
}
#endif
