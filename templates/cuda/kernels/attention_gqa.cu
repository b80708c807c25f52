/*
** attention_gqa.cu — grouped-query causal self-attention on CUDA cores (LLaMA: NKV key/value heads,
** each read by REP = NH / NKV query heads), fp32 arithmetic, for the plans whose attention cannot
** run on tensor cores: fp32 plans (fp32 activations; WMMA takes 16-bit operands) and head sizes the
** tensor-core tiling does not serve (gen/cuda_dec.c decides ZK_ATT_TC; attention_gqa_tc.cu is the
** other side). It matches the host's zl_attention_forward/backward (templates/host/llama/) up to
** fp32 summation order. The scheme is attention.cu's (read its head comment: 32-key tiles staged in
** shared memory, an online softmax, lse kept for backward, dq and dkv as two deterministic kernels
** without atomics); the bodies are shared, in zk_attn.cuh. What this file adds is llama's layout
** and the group:
**   q, y, dq (N = B*T, NH*HS), k, v, dk, dv (N, NKV*HS), zk_io (fp32 in fp32 plans); q and k already
**   rotated (rope.cu); query head h reads key/value head h / REP; lse, Dbuf (B, NH, T) fp32;
**   HS = ZK_C / ZK_NH; scale 1/sqrt(HS); pos (N) int32, each token's position in its document
**   (docs/DATA.md; NULL: one document per row): the query at t attends keys t - pos[t] .. t.
** Kernels: forward and dq, grid (T / ZK_ATT_QT, NH, B), 4 warps; dkv, grid (T / 32, NKV, B), one
** warp owning 32 keys of one key/value head, which walks the REP query heads of its group in order,
** each over its query rows from the diagonal on, into the same registers: dK and dV are sums over
** the group in a fixed order, with nothing to reduce afterwards.
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them);
** otherwise an empty module.
*/
#include "zk_common.cuh"
#include "zk_attn.cuh"
#if defined(ZK_NKV)

#define ZK_AGS_HS (ZK_C / ZK_NH)
#define ZK_AGS_REP (ZK_NH / ZK_NKV)
#define ZK_AGS_KV (ZK_NKV * ZK_AGS_HS)          /* row pitch of k, v, dk, dv */
#define ZK_AGS_QT ZK_ATT_QT_OF(ZK_AGS_HS)      /* query rows per block (forward, dq) */
#if ZK_NH % ZK_NKV != 0
#error "attention_gqa.cu: n_kv_heads must divide n_heads"
#endif

typedef zk_att<ZK_AGS_HS, ZK_T, zk_io> zk_ags;

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_gqa_forward(zk_io *y, float *lse, const zk_io *q, const zk_io *k, const zk_io *v, const int *pos)
{
    __shared__ zk_ags::fwd_smem S;
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * ZK_C + h * ZK_AGS_HS;
    const long ok = (long)b * ZK_T * ZK_AGS_KV + (h / ZK_AGS_REP) * ZK_AGS_HS;
    zk_ags::forward(S, blockIdx.x * ZK_AGS_QT, y + oq, ZK_C, lse + ((long)b * ZK_NH + h) * ZK_T, q + oq, ZK_C,
                    k + ok, v + ok, ZK_AGS_KV, zk_doc_row(pos, b, ZK_T));
}

/* dq (overwritten) and Dbuf = rowsum(dy * y). */
ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_gqa_backward_dq(zk_io *dq, float *Dbuf, const zk_io *q, const zk_io *k, const zk_io *v,
                             const zk_io *y, const zk_io *dy, const float *lse, const int *pos)
{
    __shared__ zk_ags::dq_smem S;
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * ZK_C + h * ZK_AGS_HS;
    const long ok = (long)b * ZK_T * ZK_AGS_KV + (h / ZK_AGS_REP) * ZK_AGS_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    zk_ags::dq(S, blockIdx.x * ZK_AGS_QT, dq + oq, ZK_C, Dbuf + ol, q + oq, ZK_C, k + ok, v + ok, ZK_AGS_KV, y + oq,
               dy + oq, ZK_C, lse + ol, zk_doc_row(pos, b, ZK_T));
}

/* dk, dv (overwritten): each key/value head's sum over its group's query heads, in head order.
** Needs Dbuf from zd_attention_gqa_backward_dq. */
ZK_KERNEL void __launch_bounds__(32)
zd_attention_gqa_backward_dkv(zk_io *dk, zk_io *dv, const zk_io *q, const zk_io *k, const zk_io *v,
                              const zk_io *dy, const float *lse, const float *Dbuf, const int *pos)
{
    __shared__ zk_ags::dkv_smem S;
    const int g = blockIdx.y, b = blockIdx.z, h0 = g * ZK_AGS_REP;   /* the group's first query head */
    const long oq = (long)b * ZK_T * ZK_C + h0 * ZK_AGS_HS, ok = (long)b * ZK_T * ZK_AGS_KV + g * ZK_AGS_HS;
    const long ol = ((long)b * ZK_NH + h0) * ZK_T;
    zk_ags::dkv<ZK_AGS_REP>(S, blockIdx.x * ZK_ATT_KT, dk + ok, dv + ok, ZK_AGS_KV, k + ok, v + ok, ZK_AGS_KV,
                            q + oq, ZK_C, dy + oq, ZK_C, lse + ol, Dbuf + ol, zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens; pos (B, T) document positions, or NULL. */
inline int zd_attention_gqa_forward_launch(zk_io *y, float *lse, const zk_io *q, const zk_io *k, const zk_io *v,
                                           const int *pos, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_AGS_QT), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_gqa_forward, grid, 32 * ZK_ATT_NW, 0, y, lse, q, k, v, pos);
}
/* Dbuf: (B, NH, T) fp32 scratch. */
inline int zd_attention_gqa_backward_launch(zk_io *dq, zk_io *dk, zk_io *dv, float *Dbuf, const zk_io *q,
                                            const zk_io *k, const zk_io *v, const zk_io *y, const zk_io *dy,
                                            const float *lse, const int *pos, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_AGS_QT), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_KT), (unsigned)ZK_NKV, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_gqa_backward_dq, g1, 32 * ZK_ATT_NW, 0, dq, Dbuf, q, k, v, y, dy, lse, pos);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_gqa_backward_dkv, g2, 32, 0, dk, dv, q, k, v, dy, lse, Dbuf, pos);
}
#endif
#endif /* ZK_NKV */
