/*
** adamw.cu — Adam on a device-resident optimizer shard, DeepSpeed's semantics: with g = g * gs,
**     p = p - (lr wd) p                     (AdamW, adam_w_mode: decoupled decay, first, wd != 0)
**     g = g + wd p                          (Adam, adam_w_mode false: L2 decay into the gradient)
**     m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
**     p = p - step_size (m / (sqrt(v) rbc2 + eps)),  step_size = lr / (1 - b1^t), rbc2 = 1 / sqrt(1 - b2^t)
** which is p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps); without bias correction the
** host passes t so large that b^t is 0 (zr_adam.c does the same), so step_size = lr and rbc2 = 1.
** One elementwise pass over the shard: fp32 master p, m, v, fp32 gradients; gs folds the loss-scale
** inverse and the clipping coefficient in (1 when the gradients are already unscaled). When p16 is not NULL
** the updated parameter is also stored as the 16-bit working copy, so no cast kernel runs before the
** all-gather.
** Same bits as the CPU optimizer (runtime/zr_adam.c), so moving a shard between the device and CPU
** offload never changes the numerics: the same operations in the same order, each rounded on its own
** (the __f*_rn intrinsics are never contracted into FMAs, whatever --fmad says), IEEE sqrt and
** division, and the per-step constants computed on the host exactly as the runtime does (double,
** rounded once to float).
*/
#include "zk_common.cuh"

#define ZK_ADAM_BLOCK 256

/* The per-call constants (zr_adam.c's ZrAdamK). Passed by value. */
struct ZdAdamK {
    float gs, b1, b2, omb1, omb2, eps, lrwd, step_size, rbc2, wd;
    int decay, adamw;
};

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void zd_adamw(float *p, zk_io *p16, const float *g, float *m, float *v, long n, ZdAdamK k)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = __fmul_rn(g[i], k.gs), pi = p[i];
    if (k.decay && k.adamw) pi = __fsub_rn(pi, __fmul_rn(k.lrwd, pi));
    else if (k.decay) gi = __fadd_rn(gi, __fmul_rn(k.wd, pi));
    float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(k.omb1, gi));
    float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(k.omb2, __fmul_rn(gi, gi)));
    float den = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), k.rbc2), k.eps);
    pi = __fsub_rn(pi, __fmul_rn(k.step_size, __fdiv_rn(mi, den)));
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (p16) zk_st(p16 + i, pi);
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* The constants for step t >= 1 (DeepSpeed counts from 1), as runtime/zr_adam.c computes them. */
inline ZdAdamK zd_adamw_consts(float lr, float b1, float b2, float eps, float wd, float gs, long t, int adamw)
{
    ZdAdamK k;
    k.gs = gs;
    k.b1 = b1;
    k.b2 = b2;
    k.omb1 = 1.0f - b1;
    k.omb2 = 1.0f - b2;
    k.eps = eps;
    k.lrwd = lr * wd;
    k.step_size = (float)((double)lr / (1.0 - pow((double)b1, (double)t)));
    k.rbc2 = (float)(1.0 / sqrt(1.0 - pow((double)b2, (double)t)));
    k.wd = wd;
    k.decay = wd != 0.0f;
    k.adamw = adamw;
    return k;
}
inline int zd_adamw_launch(float *p, zk_io *p16, const float *g, float *m, float *v, long n, ZdAdamK k)
{
    return ZK_LAUNCH(zd_adamw, (unsigned)CEIL_DIV(n, ZK_ADAM_BLOCK), ZK_ADAM_BLOCK, 0, p, p16, g, m, v, n, k);
}
#endif
