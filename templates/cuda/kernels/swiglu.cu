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
** One thread per element, or per 8 (ZK_SWIGLU_EPT: 16-byte accesses for 16-bit storage), 256 per
** block: memory-bound, coalesced. Backward may run in place (dgate = gate, dup = up): each thread
** reads its elements of every input before writing.
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them,
** from the arch's file, gen/arch_*.c); for the others this is an empty module.
*/
#include "zk_common.cuh"
#ifdef ZK_NKV

#define ZK_SWIGLU_BLOCK 256
/* Elements per thread: 8 (one 16-byte access per tensor) for 16-bit storage with ZK_F a multiple of
** 8 (every LLaMA's), so no group of 8 straddles a row and every group is 16-byte aligned. */
#undef ZK_SWIGLU_EPT  /* a test includes this file once per shape set */
#if ZK_IO != 0 && ZK_F % 8 == 0
#define ZK_SWIGLU_EPT 8
#else
#define ZK_SWIGLU_EPT 1
#endif

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(ZK_SWIGLU_BLOCK)
zd_swiglu_forward(zk_io *h, const zk_io *gate, const zk_io *up, int N)
{
    long i = ((long)blockIdx.x * ZK_SWIGLU_BLOCK + threadIdx.x) * ZK_SWIGLU_EPT;
    if (i >= (long)N * ZK_F) return;
#if ZK_SWIGLU_EPT == 8
    float g[8], u[8];
    zk_ld8(gate + i, g);
    zk_ld8(up + i, u);
    for (int e = 0; e < 8; e++) g[e] = g[e] / (1.0f + expf(-g[e])) * u[e];
    zk_st8(h + i, g);
#else
    float g = zk_ld(gate + i);
    zk_st(h + i, g / (1.0f + expf(-g)) * zk_ld(up + i));
#endif
}

/* dup = dh silu(gate); dgate = dh up sig (1 + gate (1 - sig)), sig = sigmoid(gate). */
ZK_KERNEL void __launch_bounds__(ZK_SWIGLU_BLOCK)
zd_swiglu_backward(zk_io *dgate, zk_io *dup, const zk_io *gate, const zk_io *up, const zk_io *dh, int N)
{
    long i = ((long)blockIdx.x * ZK_SWIGLU_BLOCK + threadIdx.x) * ZK_SWIGLU_EPT;
    if (i >= (long)N * ZK_F) return;
#if ZK_SWIGLU_EPT == 8
    float x[8], u[8], d[8];
    zk_ld8(gate + i, x);
    zk_ld8(up + i, u);
    zk_ld8(dh + i, d);
    for (int e = 0; e < 8; e++) {
        float sg = 1.0f / (1.0f + expf(-x[e])), dg = d[e] * u[e] * sg * (1.0f + x[e] * (1.0f - sg));
        u[e] = d[e] * x[e] * sg;
        x[e] = dg;
    }
    zk_st8(dup + i, u);
    zk_st8(dgate + i, x);
#else
    float x = zk_ld(gate + i), u = zk_ld(up + i), d = zk_ld(dh + i), sg = 1.0f / (1.0f + expf(-x));
    zk_st(dup + i, d * x * sg);
    zk_st(dgate + i, d * u * sg * (1.0f + x * (1.0f - sg)));
#endif
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_swiglu_forward_launch(zk_io *h, const zk_io *gate, const zk_io *up, int N)
{
    unsigned grid = (unsigned)CEIL_DIV((long)N * ZK_F / ZK_SWIGLU_EPT, ZK_SWIGLU_BLOCK);
    return ZK_LAUNCH(zd_swiglu_forward, grid, ZK_SWIGLU_BLOCK, 0, h, gate, up, N);
}
inline int zd_swiglu_backward_launch(zk_io *dgate, zk_io *dup, const zk_io *gate, const zk_io *up, const zk_io *dh,
                                     int N)
{
    unsigned grid = (unsigned)CEIL_DIV((long)N * ZK_F / ZK_SWIGLU_EPT, ZK_SWIGLU_BLOCK);
    return ZK_LAUNCH(zd_swiglu_backward, grid, ZK_SWIGLU_BLOCK, 0, dgate, dup, gate, up, dh, N);
}
#endif
#endif /* ZK_NKV */
