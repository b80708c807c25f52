/*
** crossentropy.cu — the final softmax, the cross-entropy loss and its gradient in one kernel.
**
** One block per token row of ZK_V logits (vocabulary sizes are tens of thousands: a block of 512
** threads strides the row). Pass 1: block max; pass 2: block sum of exp(x - max); then the loss
** log(sum) - (x[target] - max) and, in the same launch, dlogits = (softmax - onehot) * dloss written
** over the logits in place. The probabilities are never stored, so the logits are read three times
** and written once, against five passes for softmax, loss and gradient kernels apart.
** A target < 0 is ignored: loss 0 and a zero gradient row, as the host's head does. dloss is
** d(total loss)/d(one token's loss) = 1/(counted targets of the global batch) (times a loss scale).
** write_grad = 0 computes the losses only (evaluation), leaving the logits as they are.
*/
#include "zk_common.cuh"

#define ZK_CE_BLOCK 512

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(ZK_CE_BLOCK)
zd_crossentropy_fused(zk_io *logits, float *losses, const int *targets, float dloss, int write_grad)
{
    __shared__ float red[32];
    zk_io *x = logits + (long)blockIdx.x * ZK_V;
    int t = targets[blockIdx.x];
    float xt = t >= 0 ? zk_ld(x + t) : 0.0f;    /* read before any thread overwrites the row */
    float mx = zk_neg_inf();
    for (int i = threadIdx.x; i < ZK_V; i += blockDim.x) mx = zk_maxf(mx, zk_ld(x + i));
    mx = zk_block_max(mx, red);
    float s = 0.0f;
    for (int i = threadIdx.x; i < ZK_V; i += blockDim.x) s += expf(zk_ld(x + i) - mx);
    s = zk_block_sum(s, red);
    if (threadIdx.x == 0) losses[blockIdx.x] = t >= 0 ? logf(s) - (xt - mx) : 0.0f;
    if (!write_grad) return;
    float inv = 1.0f / s;
    for (int i = threadIdx.x; i < ZK_V; i += blockDim.x) {
        float g = t < 0 ? 0.0f : (expf(zk_ld(x + i) - mx) * inv - (i == t ? 1.0f : 0.0f)) * dloss;
        zk_st(x + i, g);
    }
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_crossentropy_launch(zk_io *logits, float *losses, const int *targets, float dloss,
                                         int write_grad, int N)
{
    return ZK_LAUNCH(zd_crossentropy_fused, (unsigned)N, ZK_CE_BLOCK, 0, logits, losses, targets, dloss, write_grad);
}
#endif
