/*
** swiglu.cu — LLaMA's MLP activation, h = silu(gate) * up, forward and backward, each one fused
** element-wise pass, as the host's zl_swiglu_forward/backward (templates/host/llama/).
** Layout: gate, up, h, dh, dgate, dup (N, ZK_F) zk_io, row-major, each contiguous (the gate and up
** projections are two cuBLAS products or one into two halves; these kernels see two tensors).
**
** Forward reads gate and up once and writes h once (2 reads + 1 write of N*F, against 5 for silu then
** a product); backward reads gate, up, dh once and writes dgate and dup: the sigmoid is recomputed
** rather than saved (an exp per element is cheaper than another N*F tensor in memory and traffic).
** silu(x) = x / (1 + exp(-x)) as the host writes it; fp32 math, one rounding to zk_io per output.
** One thread per element, 256 per block: memory-bound, coalesced. Backward may run in place
** (dgate = gate, dup = up): each thread reads its element of every input before writing.
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them,
** from gen/model.c's arch table); for the others this is an empty module.
*/
#include "zk_common.cuh"
#ifdef ZK_NKV

#define ZK_SWIGLU_BLOCK 256

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(ZK_SWIGLU_BLOCK)
zd_swiglu_forward(zk_io *h, const zk_io *gate, const zk_io *up, int N)
{
    long i = (long)blockIdx.x * ZK_SWIGLU_BLOCK + threadIdx.x;
    if (i >= (long)N * ZK_F) return;
    float g = zk_ld(gate + i);
    zk_st(h + i, g / (1.0f + expf(-g)) * zk_ld(up + i));
}

/* dup = dh silu(gate); dgate = dh up sig (1 + gate (1 - sig)), sig = sigmoid(gate). */
ZK_KERNEL void __launch_bounds__(ZK_SWIGLU_BLOCK)
zd_swiglu_backward(zk_io *dgate, zk_io *dup, const zk_io *gate, const zk_io *up, const zk_io *dh, int N)
{
    long i = (long)blockIdx.x * ZK_SWIGLU_BLOCK + threadIdx.x;
    if (i >= (long)N * ZK_F) return;
    float x = zk_ld(gate + i), u = zk_ld(up + i), d = zk_ld(dh + i), sg = 1.0f / (1.0f + expf(-x));
    zk_st(dup + i, d * x * sg);
    zk_st(dgate + i, d * u * sg * (1.0f + x * (1.0f - sg)));
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_swiglu_forward_launch(zk_io *h, const zk_io *gate, const zk_io *up, int N)
{
    return ZK_LAUNCH(zd_swiglu_forward, (unsigned)CEIL_DIV((long)N * ZK_F, ZK_SWIGLU_BLOCK), ZK_SWIGLU_BLOCK, 0,
                     h, gate, up, N);
}
inline int zd_swiglu_backward_launch(zk_io *dgate, zk_io *dup, const zk_io *gate, const zk_io *up, const zk_io *dh,
                                     int N)
{
    return ZK_LAUNCH(zd_swiglu_backward, (unsigned)CEIL_DIV((long)N * ZK_F, ZK_SWIGLU_BLOCK), ZK_SWIGLU_BLOCK, 0,
                     dgate, dup, gate, up, dh, N);
}
#endif
#endif /* ZK_NKV */
