/*
** attention.cu — causal self-attention, tiled with an online softmax (FlashAttention's scheme): no
** T x T matrix is ever stored; backward recomputes the probabilities from the saved log-sum-exp.
**
** qkv is (N = B*T, 3C): q | k | v, head h at columns h*HS, HS = C/NH. y is (N, C). pos (N) int32:
** each token's position in its document (docs/DATA.md; NULL: one document per row): the query at t
** attends keys t - pos[t] .. t, and key tiles wholly outside a query's document are not visited
** (zk_attn.cuh).
** Forward: a block is (query tile of ZK_ATT_QT rows, head, sequence); 4 warps, 2 query rows each.
** Key/value tiles of 32 rows are staged in shared memory (fp32, K rows padded by one float so that
** lane j reading row j hits distinct banks) and shared by the block's 8 query rows. Scores are
** lane-per-key (lane j: q . k_j), the tile's max and sum are warp shuffles, and the probabilities go
** through a warp-private shared row so the output update can be lane-per-dimension
** (o[d] = o[d] * corr + sum_j p_j v_j[d]). Tiles beyond the diagonal are never loaded.
** lse = m + log(l) per row (fp32) is kept for backward.
** Backward, deterministic (no float atomics), in two kernels:
**   dq:  the forward's layout again; per row D = dy . y, then for each key tile
**        ds_j = p_j (dy . v_j - D), dq += ds_j k_j (D is written out for the second kernel);
**   dkv: one warp per tile of 32 keys, lane j owns key j and keeps dk_j, dv_j in registers while
**        query tiles stream through shared memory: dv_j += p_ij dy_i, dk_j += ds_ij q_i.
** The score matrix is thus computed three times in all (forward, dq, dkv) in exchange for no
** atomics and no O(T^2) memory. HS = 64 for every GPT-2 size (168 registers in dkv, no spills on
** sm_90); beyond that dkv accumulates at most 64 dimensions per pass over the query tiles, so its
** accumulators stay in registers (tests/cuda/t_ptxas.sh checks every spec for spills).
** Head sizes above 170 would need dynamic shared memory (not done): zk_attn.cuh's static_assert
** says so. The bodies are in zk_attn.cuh, shared with attention_gqa.cu (llama's grouped-query
** layout); this file gives them gpt2's qkv layout.
*/
#include "zk_common.cuh"
#include "zk_attn.cuh"

#define ZK_HS (ZK_C / ZK_NH)
#define ZK_ATT_QT ZK_ATT_QT_OF(ZK_HS)   /* query rows per block (forward, dq) */

typedef zk_att<ZK_HS, ZK_T, zk_io> zk_att_qkv;

/* ------------------------------------------------------------------ kernels */
ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_forward(zk_io *y, float *lse, const zk_io *qkv, const int *pos)
{
    __shared__ zk_att_qkv::fwd_smem S;
    const int h = blockIdx.y, b = blockIdx.z;
    const zk_io *q = qkv + (long)b * ZK_T * 3 * ZK_C + h * ZK_HS;
    zk_att_qkv::forward(S, blockIdx.x * ZK_ATT_QT, y + (long)b * ZK_T * ZK_C + h * ZK_HS, ZK_C,
                        lse + ((long)b * ZK_NH + h) * ZK_T, q, 3 * ZK_C, q + ZK_C, q + 2 * ZK_C, 3 * ZK_C,
                        zk_doc_row(pos, b, ZK_T));
}

/* dq part of dqkv (overwritten) and D = rowsum(dy * y) into Dbuf (B, NH, T). */
ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_backward_dq(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y, const zk_io *dy,
                         const float *lse, const int *pos)
{
    __shared__ zk_att_qkv::dq_smem S;
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * 3 * ZK_C + h * ZK_HS, oy = (long)b * ZK_T * ZK_C + h * ZK_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    const zk_io *q = qkv + oq;
    zk_att_qkv::dq(S, blockIdx.x * ZK_ATT_QT, dqkv + oq, 3 * ZK_C, Dbuf + ol, q, 3 * ZK_C, q + ZK_C, q + 2 * ZK_C,
                   3 * ZK_C, y + oy, dy + oy, ZK_C, lse + ol, zk_doc_row(pos, b, ZK_T));
}

/* dk and dv parts of dqkv (overwritten); needs Dbuf from zd_attention_backward_dq. One warp per 32
** keys of a head. */
ZK_KERNEL void __launch_bounds__(32)
zd_attention_backward_dkv(zk_io *dqkv, const zk_io *qkv, const zk_io *dy, const float *lse, const float *Dbuf,
                          const int *pos)
{
    __shared__ zk_att_qkv::dkv_smem S;
    const int h = blockIdx.y, b = blockIdx.z;
    const long oq = (long)b * ZK_T * 3 * ZK_C + h * ZK_HS, oy = (long)b * ZK_T * ZK_C + h * ZK_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    const zk_io *q = qkv + oq;
    zk_att_qkv::dkv<1>(S, blockIdx.x * ZK_ATT_KT, dqkv + oq + ZK_C, dqkv + oq + 2 * ZK_C, 3 * ZK_C, q + ZK_C,
                       q + 2 * ZK_C, 3 * ZK_C, q, 3 * ZK_C, dy + oy, ZK_C, lse + ol, Dbuf + ol,
                       zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens. lse: (B, NH, T) fp32. pos: (B, T) document positions, or NULL. */
inline int zd_attention_forward_launch(zk_io *y, float *lse, const zk_io *qkv, const int *pos, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_QT), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_forward, grid, 32 * ZK_ATT_NW, 0, y, lse, qkv, pos);
}
/* Dbuf: (B, NH, T) fp32 scratch. */
inline int zd_attention_backward_launch(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y,
                                        const zk_io *dy, const float *lse, const int *pos, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_QT), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_KT), (unsigned)ZK_NH, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_backward_dq, g1, 32 * ZK_ATT_NW, 0, dqkv, Dbuf, qkv, y, dy, lse, pos);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_backward_dkv, g2, 32, 0, dqkv, qkv, dy, lse, Dbuf, pos);
}
#endif
