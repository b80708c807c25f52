/*
** gelu.cu — bias + GELU (tanh form), forward and backward, for the MLP's first linear layer.
**
** The matmul (cuBLAS) leaves x @ W without its bias; forward adds the bias, keeps that
** pre-activation (backward needs it) and writes gelu(pre): one elementwise pass instead of a bias
** epilogue plus a GELU pass. Written as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), like the
** host kernel: no tanh, and no cancellation in 1 + tanh(u) for negative x.
** Backward: dpre = dy * gelu'(pre) elementwise, then the bias gradient is a column sum of dpre over
** rows in zk_colsum.h's two deterministic stages (no atomics), accumulating (+=). The plans whose
** bias gradient rides on the fc layer's dW gemm (ZK_GEMM_EPI) do not use it.
*/
#include "zk_common.cuh"
#include "zk_colsum.h"

#define ZK_GELU_BLOCK 256
#define ZK_GELU_K 0.7978845608028654f
#define ZK_GELU_A 0.044715f

/* ------------------------------------------------------------------ kernels */
ZK_DEV float zk_gelu_sig(float v)
{
    return 1.0f / (1.0f + expf(-2.0f * ZK_GELU_K * (v + ZK_GELU_A * v * v * v)));
}

/* pre = x + bias[col]; out = gelu(pre); rows of ZK_F columns. */
ZK_KERNEL void zd_bias_gelu_forward(zk_io *out, zk_io *pre, const zk_io *x, const zk_io *bias, int N)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)N * ZK_F) return;
    float v = zk_ld(x + i) + zk_ld(bias + i % ZK_F);
    zk_st(pre + i, v);
    v = zk_ld(pre + i);                         /* gelu of the value backward will see */
    zk_st(out + i, v * zk_gelu_sig(v));
}

/* dpre = dy * gelu'(pre). */
ZK_KERNEL void zd_gelu_backward(zk_io *dpre, const zk_io *pre, const zk_io *dy, int N)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)N * ZK_F) return;
    float v = zk_ld(pre + i), s = zk_gelu_sig(v);
    float du = ZK_GELU_K * (1.0f + 3.0f * ZK_GELU_A * v * v);
    zk_st(dpre + i, zk_ld(dy + i) * (s + 2.0f * v * s * (1.0f - s) * du));
}

/* part[chunk, c] = the chunk's sum of dpre[n, c], rows in order; grid (column blocks, chunks). */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_bias_backward_part(float *part, const zk_io *dpre, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x, n0 = blockIdx.y * ZK_COL_ROWS;
    if (c >= ZK_F) return;
    int n1 = zk_mini(n0 + ZK_COL_ROWS, N);
    float s = 0.0f;
    for (int n = n0; n < n1; n++) s += zk_ld(dpre + (long)n * ZK_F + c);
    part[(long)blockIdx.y * ZK_F + c] = s;
}

/* dbias[c] += the partials of column c in chunk order. */
ZK_KERNEL void __launch_bounds__(ZK_COL_BLOCK)
zd_bias_backward_sum(float *dbias, const float *part, int N)
{
    int c = blockIdx.x * ZK_COL_BLOCK + threadIdx.x;
    if (c >= ZK_F) return;
    dbias[c] += zk_col_partials(part, ZK_COL_CHUNKS(N), ZK_F, c);
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_bias_gelu_forward_launch(zk_io *out, zk_io *pre, const zk_io *x, const zk_io *bias, int N)
{
    return ZK_LAUNCH(zd_bias_gelu_forward, (unsigned)CEIL_DIV((long)N * ZK_F, ZK_GELU_BLOCK), ZK_GELU_BLOCK, 0,
                     out, pre, x, bias, N);
}
/* Floats of the bias-gradient partials for N rows. */
inline long zd_bias_part_floats(int N) { return (long)ZK_COL_CHUNKS(N) * ZK_F; }

/* part: zd_bias_part_floats(N) floats of scratch. */
inline int zd_bias_gelu_backward_launch(zk_io *dpre, float *dbias, float *part, const zk_io *pre, const zk_io *dy,
                                        int N)
{
    int rc = ZK_LAUNCH(zd_gelu_backward, (unsigned)CEIL_DIV((long)N * ZK_F, ZK_GELU_BLOCK), ZK_GELU_BLOCK, 0,
                       dpre, pre, dy, N);
    if (rc) return rc;
    dim3 g = {(unsigned)CEIL_DIV(ZK_F, ZK_COL_BLOCK), (unsigned)ZK_COL_CHUNKS(N), 1u};
    rc = ZK_LAUNCH(zd_bias_backward_part, g, ZK_COL_BLOCK, 0, part, dpre, N);
    if (rc) return rc;
    return ZK_LAUNCH(zd_bias_backward_sum, (unsigned)CEIL_DIV(ZK_F, ZK_COL_BLOCK), ZK_COL_BLOCK, 0, dbias, part, N);
}
#endif
