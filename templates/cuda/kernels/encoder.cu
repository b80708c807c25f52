/*
** encoder.cu — token + position embedding, forward and backward.
**
** Forward: out[n, c] = wte[tok[n], c] + wpe[n % T, c], one thread per output element; the
** embedding tables are 16-bit parameters (zk_io) and so is the output.
** Backward, deterministic without atomics: dwte is owned by columns (thread c walks all N tokens in
** order and adds into dwte[tok, c]; two tokens with the same id never race because they are the same
** thread), dwpe by (t, c) (thread sums over the B sequences). That serialises N tokens per column,
** which is a few microseconds at GPT-2 sizes next to the matmuls; llm.c's bucket sort would be
** faster but needs a host-side pass over the tokens. Gradients are fp32 and accumulate (+=), as the
** host kernels' do (gradient accumulation over micro-steps).
*/
#include "zk_common.cuh"

#define ZK_ENC_BLOCK 256

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void zd_encoder_forward(zk_io *out, const int *tok, const zk_io *wte, const zk_io *wpe, int N)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)N * ZK_C) return;
    int n = (int)(i / ZK_C), c = (int)(i % ZK_C), t = n % ZK_T;
    zk_st(out + i, zk_ld(wte + (long)tok[n] * ZK_C + c) + zk_ld(wpe + (long)t * ZK_C + c));
}

/* dwte: one thread per column; N tokens in order. */
ZK_KERNEL void zd_encoder_backward_wte(float *dwte, const int *tok, const zk_io *dout, int N)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ZK_C) return;
    for (int n = 0; n < N; n++) dwte[(long)tok[n] * ZK_C + c] += zk_ld(dout + (long)n * ZK_C + c);
}

/* dwpe: one thread per (t, c); B = N / T sequences in order. */
ZK_KERNEL void zd_encoder_backward_wpe(float *dwpe, const zk_io *dout, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ZK_T * ZK_C) return;
    float s = 0.0f;
    for (int n = i / ZK_C; n < N; n += ZK_T) s += zk_ld(dout + (long)n * ZK_C + i % ZK_C);
    dwpe[i] += s;
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
inline int zd_encoder_forward_launch(zk_io *out, const int *tok, const zk_io *wte, const zk_io *wpe, int N)
{
    unsigned grid = (unsigned)CEIL_DIV((long)N * ZK_C, ZK_ENC_BLOCK);
    return ZK_LAUNCH(zd_encoder_forward, grid, ZK_ENC_BLOCK, 0, out, tok, wte, wpe, N);
}
inline int zd_encoder_backward_launch(float *dwte, float *dwpe, const int *tok, const zk_io *dout, int N)
{
    int rc = ZK_LAUNCH(zd_encoder_backward_wte, (unsigned)CEIL_DIV(ZK_C, 64), 64, 0, dwte, tok, dout, N);
    if (rc) return rc;
    return ZK_LAUNCH(zd_encoder_backward_wpe, (unsigned)CEIL_DIV(ZK_T * ZK_C, ZK_ENC_BLOCK), ZK_ENC_BLOCK, 0,
                     dwpe, dout, N);
}
#endif
