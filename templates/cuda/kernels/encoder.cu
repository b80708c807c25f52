/*
** encoder.cu — token + position embedding, forward and backward (llama's token-only forward is
** token_embed.cu; its backward is zd_encoder_backward_wte).
**
** Forward: out[n, c] = wte[tok[n], c] + wpe[pos[n], c], one thread per output element, pos[n] the
** token's position in its document (docs/DATA.md; NULL: n % T); the embedding tables are 16-bit
** parameters (zk_io) and so is the output.
** Backward, deterministic without atomics. dwte is owned by distinct tokens: the host groups the
** micro-batch's positions by token (zk_tokbucket.h, when it uploads the batch), and block (s, column
** block) adds the rows of the s-th distinct token's positions, in position order, onto dwte's value:
** per element, the same fp32 additions in the same order as the host's walk over the tokens, so the
** same bits. (One thread per column walking all N tokens did that too, but as N dependent steps on a
** handful of SMs: milliseconds at 8192 tokens.) The grid has N rows of blocks, an upper bound on the
** distinct tokens; the rest leave at once, so the launch does not depend on the batch. dwpe is owned
** by (position, c) the same way: the host groups the positions too (zk_tok_buckets over pos, with T
** for the vocabulary), and block (s, column block) sums the rows of the s-th distinct position in
** ascending row order from 0, then adds the sum onto dwpe. With pos[n] = n % T the s-th position is s
** and its rows are s, T + s, ..: one sum over the B sequences in order, as before documents. The grid
** has T rows of blocks. Gradients are fp32 and accumulate (+=), as the host kernels' do (gradient
** accumulation over micro-steps).
*/
#include "zk_common.cuh"

#define ZK_ENC_BLOCK 256

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void zd_encoder_forward(zk_io *out, const int *tok, const int *pos, const zk_io *wte, const zk_io *wpe,
                                  int N)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)N * ZK_C) return;
    int n = (int)(i / ZK_C), c = (int)(i % ZK_C), t = pos ? pos[n] : n % ZK_T;
    zk_st(out + i, zk_ld(wte + (long)tok[n] * ZK_C + c) + zk_ld(wpe + (long)t * ZK_C + c));
}

/* dwte: block (s, column block) takes the s-th distinct token; bkt is zk_tokbucket.h's layout for N. */
ZK_KERNEL void __launch_bounds__(ZK_ENC_BLOCK)
zd_encoder_backward_wte(float *dwte, const int *bkt, const zk_io *dout, int N)
{
    int s = blockIdx.x, c = blockIdx.y * ZK_ENC_BLOCK + threadIdx.x;
    if (s >= bkt[3 * N + 1] || c >= ZK_C) return;
    const int *order = bkt, *seg_start = bkt + 2 * N;
    float *d = dwte + (long)bkt[N + s] * ZK_C + c;
    float acc = *d;
    for (int i = seg_start[s]; i < seg_start[s + 1]; i++) acc += zk_ld(dout + (long)order[i] * ZK_C + c);
    *d = acc;
}

/* dwpe: block (s, column block) takes the s-th distinct position; pbkt is zk_tokbucket.h's layout of
** pos for N (positions for tokens, T for the vocabulary). */
ZK_KERNEL void __launch_bounds__(ZK_ENC_BLOCK)
zd_encoder_backward_wpe(float *dwpe, const int *pbkt, const zk_io *dout, int N)
{
    int s = blockIdx.x, c = blockIdx.y * ZK_ENC_BLOCK + threadIdx.x;
    if (s >= pbkt[3 * N + 1] || c >= ZK_C) return;
    const int *order = pbkt, *seg_start = pbkt + 2 * N;
    float acc = 0.0f;
    for (int i = seg_start[s]; i < seg_start[s + 1]; i++) acc += zk_ld(dout + (long)order[i] * ZK_C + c);
    dwpe[(long)pbkt[N + s] * ZK_C + c] += acc;
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* pos: (N) document positions, or NULL (n % T). */
inline int zd_encoder_forward_launch(zk_io *out, const int *tok, const int *pos, const zk_io *wte, const zk_io *wpe,
                                     int N)
{
    unsigned grid = (unsigned)CEIL_DIV((long)N * ZK_C, ZK_ENC_BLOCK);
    return ZK_LAUNCH(zd_encoder_forward, grid, ZK_ENC_BLOCK, 0, out, tok, pos, wte, wpe, N);
}
/* bkt, pbkt: zk_tok_buckets' layouts of the micro-batch's tokens and of its positions (zk_tokbucket.h). */
inline int zd_encoder_backward_launch(float *dwte, float *dwpe, const int *bkt, const int *pbkt, const zk_io *dout,
                                      int N)
{
    dim3 g = {(unsigned)N, (unsigned)CEIL_DIV(ZK_C, ZK_ENC_BLOCK), 1u};
    int rc = ZK_LAUNCH(zd_encoder_backward_wte, g, ZK_ENC_BLOCK, 0, dwte, bkt, dout, N);
    if (rc) return rc;
    dim3 gp = {(unsigned)ZK_T, (unsigned)CEIL_DIV(ZK_C, ZK_ENC_BLOCK), 1u};
    return ZK_LAUNCH(zd_encoder_backward_wpe, gp, ZK_ENC_BLOCK, 0, dwpe, pbkt, dout, N);
}
#endif
