/*
** attention_gqa_tc.cu — grouped-query causal self-attention on tensor cores (LLaMA: NKV key/value
** heads, each read by REP = NH / NKV query heads; NKV = NH is plain multi-head, NKV = 1 multi-query),
** as the host's zl_attention_forward/backward (templates/host/llama/), which it matches up to the
** 16-bit roundings. The tiling and the FlashAttention-2 scheme are attention_tc.cu's (read its head
** comment: 64 x 64 tiles, 8 warps, WMMA m16n16k16 with 16-bit operands and fp32 accumulation, online
** softmax, nothing T x T in memory, backward from the saved log-sum-exp); the bodies are shared, in
** zk_attn_tc.cuh. What this file adds is llama's layout and the group:
**   q, y, dq (N = B*T, NH*HS), k, v, dk, dv (N, NKV*HS), zk_io (bf16 in training), separate tensors
**   as the q/k/v projections leave them (q and k already rotated, rope.cu); query head h reads
**   key/value head h / REP; lse, Dbuf (B, NH, T) fp32; HS = ZK_C / ZK_NH; scale 1/sqrt(HS); pos (N)
**   int32, each token's position in its document (docs/DATA.md; NULL: one document per row): the
**   query at t attends keys t - pos[t] .. t.
** Kernels: forward, grid (T/64, NH, B); dq (and Dbuf = rowsum(dy * y)), grid (T/64, NH, B); dkv,
** grid (T/64, NKV, B): a block owns a key tile of one key/value head and walks the REP query heads
** of its group in order, each over its query tiles from the diagonal on, accumulating dK and dV in
** the same fragments. So dK and dV are sums over the group in a fixed order, with no atomics and no
** per-query-head copies to reduce afterwards; the price is REP times more work per dkv block with
** NKV times fewer blocks (LLaMA 3 8B at 8K tokens: 128 x 8 = 1024 blocks of 256 threads, enough for
** 132 SMs; MQA at short T has little parallelism, a corner LLaMA does not use).
** Dynamic shared memory (the launcher raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to
** ZK_ATC_*_SMEM): as attention_tc.cu, HS 128: forward 110 KiB, dq 111 KiB, dkv 120.5 KiB.
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them,
** from the arch's file, gen/arch_*.c) and head sizes the tiling serves (ZK_ATC_FITS); otherwise an empty
** module.
*/
#include "zk_common.cuh"
#include "zk_wmma.cuh"
#include "zk_attn_tc.cuh"
#if defined(ZK_NKV) && ZK_ATC_FITS

#define ZK_AGQ_REP (ZK_NH / ZK_NKV)
#define ZK_AGQ_KV (ZK_NKV * ZK_ATC_HS)          /* row pitch of k, v, dk, dv */
#if ZK_NH % ZK_NKV != 0
#error "attention_gqa_tc.cu: n_kv_heads must divide n_heads"
#endif

typedef zk_atc<ZK_ATC_HS, ZK_T, zk_wt, zk_io> zk_agq;

/* ------------------------------------------------------------------ forward */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_gqa_tc_forward(zk_io *y, float *lse, const zk_io *q, const zk_io *k, const zk_io *v, const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_FWD_SMEM);
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * ZK_C + h * ZK_ATC_HS;
    const long ok = (long)b * ZK_T * ZK_AGQ_KV + (h / ZK_AGQ_REP) * ZK_ATC_HS;
    zk_agq::forward(smem, blockIdx.x * ZK_ATC_BQ, y + oq, ZK_C, lse + ((long)b * ZK_NH + h) * ZK_T, q + oq, ZK_C,
                    k + ok, ZK_AGQ_KV, v + ok, ZK_AGQ_KV, zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ backward */
/* dq (overwritten) and Dbuf = rowsum(dy * y). */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_gqa_tc_backward_dq(zk_io *dq, float *Dbuf, const zk_io *q, const zk_io *k, const zk_io *v,
                                const zk_io *y, const zk_io *dy, const float *lse, const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DQ_SMEM);
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * ZK_C + h * ZK_ATC_HS;
    const long ok = (long)b * ZK_T * ZK_AGQ_KV + (h / ZK_AGQ_REP) * ZK_ATC_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    zk_agq::dq(smem, blockIdx.x * ZK_ATC_BQ, dq + oq, ZK_C, Dbuf + ol, q + oq, ZK_C, k + ok, ZK_AGQ_KV, v + ok,
               ZK_AGQ_KV, y + oq, dy + oq, ZK_C, lse + ol, zk_doc_row(pos, b, ZK_T));
}

/* dk, dv (overwritten): each key/value head's sum over its group's query heads, in head order.
** Needs Dbuf from zd_attention_gqa_tc_backward_dq. */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_gqa_tc_backward_dkv(zk_io *dk, zk_io *dv, const zk_io *q, const zk_io *k, const zk_io *v,
                                 const zk_io *dy, const float *lse, const float *Dbuf, const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DKV_SMEM);
    const int g = blockIdx.y, b = blockIdx.z, h0 = g * ZK_AGQ_REP;   /* the group's first query head */
    const long oq = (long)b * ZK_T * ZK_C + h0 * ZK_ATC_HS, ok = (long)b * ZK_T * ZK_AGQ_KV + g * ZK_ATC_HS;
    const long ol = ((long)b * ZK_NH + h0) * ZK_T;
    zk_agq::dkv<ZK_AGQ_REP>(smem, blockIdx.x * ZK_ATC_BK, dk + ok, ZK_AGQ_KV, dv + ok, ZK_AGQ_KV, k + ok, ZK_AGQ_KV, v + ok,
                ZK_AGQ_KV, q + oq, ZK_C, dy + oq, ZK_C, lse + ol, Dbuf + ol, zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens; pos (B, T) document positions, or NULL. Dynamic shared memory above
** 48 KiB: the caller has raised the kernels' limit (cudaFuncSetAttribute / cuFuncSetAttribute) to
** ZK_ATC_*_SMEM. */
inline int zd_attention_gqa_tc_forward_launch(zk_io *y, float *lse, const zk_io *q, const zk_io *k, const zk_io *v,
                                              const int *pos, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_gqa_tc_forward, grid, ZK_ATC_NT, ZK_ATC_FWD_SMEM, y, lse, q, k, v, pos);
}
inline int zd_attention_gqa_tc_backward_launch(zk_io *dq, zk_io *dk, zk_io *dv, float *Dbuf, const zk_io *q,
                                               const zk_io *k, const zk_io *v, const zk_io *y, const zk_io *dy,
                                               const float *lse, const int *pos, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BK), (unsigned)ZK_NKV, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_gqa_tc_backward_dq, g1, ZK_ATC_NT, ZK_ATC_DQ_SMEM, dq, Dbuf, q, k, v, y, dy, lse,
                       pos);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_gqa_tc_backward_dkv, g2, ZK_ATC_NT, ZK_ATC_DKV_SMEM, dk, dv, q, k, v, dy, lse, Dbuf,
                     pos);
}
#endif
#endif /* ZK_NKV && ZK_ATC_FITS */
