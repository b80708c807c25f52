/*
** attention_tc.cu — causal self-attention on tensor cores (WMMA m16n16k16, 16-bit operands, fp32
** accumulation), FlashAttention-2's scheme: online softmax, no T x T matrix in memory, backward
** recomputing the probabilities from the saved log-sum-exp. The same contract as attention.cu:
** qkv is (N = B*T, 3C): q | k | v, head h at columns h*HS, HS = C/NH; y is (N, C); lse (B, NH, T)
** fp32; dqkv (N, 3C) is overwritten; Dbuf (B, NH, T) fp32 scratch; pos (N) int32, each token's
** position in its document (docs/DATA.md; NULL: one document per row), the query at t attending keys
** t - pos[t] .. t. Storage zk_io is bf16 or fp16 (fp32 storage also works: values are rounded to bf16
** when staged).
**
** Tiles: 64 query rows x 64 keys per step, 8 warps (256 threads). Every product goes through WMMA
** 16 x 16 x 16 tiles with operands in shared memory; the head size is padded to a multiple of 16
** (HP) with zeros, so any HS works (64 and 128 are GPT-2's and the common ones). The fragment layout
** is opaque (zk_wmma.cuh), so nothing here reads a fragment element by its position: row-wise work
** (softmax, masking, the rescaling of the output) goes through fp32 tiles in shared memory written
** with store_matrix_sync, and 4 threads own each row (lanes 4r..4r+3 of a warp, column c = q + 4k,
** so a warp's 32 reads of a row-major tile fall in 32 banks). The only element-wise fragment code,
** multiplying every element by the softmax scale, is correct for any layout.
** Forward (block: query tile, head, sequence): S = Q K^T (fp32) -> shared; each row's threads mask
** (key > query, key before the query's document, or key >= T), update the running max m and sum l,
** write P (16-bit) and rescale their part of the output O (fp32, in shared memory); then O += P V by
** WMMA on O loaded as an accumulator. Key tiles above the diagonal or wholly before the query tile's
** first document are never loaded; 16 x 16 sub-tiles above the diagonal or before that document are
** skipped (zk_attn_tc.cuh, documents).
** Backward, deterministic (no atomics; each output element is written by one block, summed in a
** fixed order), two kernels as attention.cu's:
**   dq  (block: query tile): D_i = dy_i . y_i (saved to Dbuf), then per key tile S = Q K^T and
**       dP = dY V^T, dS = P (dP - D) with P = exp(scale S - lse), dQ += dS K with dQ in fragments
**       (registers) across the whole loop;
**   dkv (block: key tile): per query tile from the diagonal on, S^T = K Q^T and dP^T = V dY^T,
**       dV += P^T dY and dK += dS^T Q, dK and dV in fragments across the loop.
** dQ by a separate kernel rather than atomics from dkv: the score tiles are computed twice more in
** all, in exchange for bit-reproducible gradients and no fp32 atomic traffic.
** Shared memory is dynamic (above the 48 KiB a block may declare statically; the launcher must
** raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to ZK_ATC_*_SMEM): HS 64: forward 70 KiB,
** dq 79 KiB, dkv 88.5 KiB; HS 128: forward 110 KiB, dq 111 KiB, dkv 120.5 KiB (ZK_ATC_*_SMEM in zk_attn_tc.cuh),
** within sm_80's 163 KiB and sm_90's 227 KiB opt-in limits.
** Rows are padded by 16 bytes so that consecutive rows start in different banks.
** The bodies (staging, the products, forward, dq, dkv) are in zk_attn_tc.cuh, shared with
** attention_gqa_tc.cu (llama's grouped-query layout); this file gives them gpt2's qkv layout.
*/
#include "zk_common.cuh"
#include "zk_wmma.cuh"
#include "zk_attn_tc.cuh"

/* Every kernel source is compiled for every spec, and no trainer launches these kernels yet, so a
** model outside the head sizes the tiling serves (ZK_ATC_FITS; gpt-1t, HS 160) gets an empty module
** rather than a failed generation; the emitted table then lists none of them, and a trainer that
** wires this kernel in must fall back to attention.cu there. */
#if ZK_ATC_FITS
#define ZK_ATC_ON 1
#else
#define ZK_ATC_ON 0
#endif
#if ZK_ATC_ON

typedef zk_atc<ZK_ATC_HS, ZK_T, zk_wt, zk_io> zk_atc_qkv;

/* ------------------------------------------------------------------ forward */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_forward(zk_io *y, float *lse, const zk_io *qkv, const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_FWD_SMEM);
    const int h = blockIdx.y, b = blockIdx.z;
    const zk_io *q = qkv + (long)b * ZK_T * 3 * ZK_C + h * ZK_ATC_HS;
    zk_atc_qkv::forward(smem, blockIdx.x * ZK_ATC_BQ, y + (long)b * ZK_T * ZK_C + h * ZK_ATC_HS, ZK_C,
                        lse + ((long)b * ZK_NH + h) * ZK_T, q, 3 * ZK_C, q + ZK_C, 3 * ZK_C, q + 2 * ZK_C, 3 * ZK_C,
                        zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ backward */
/* The dq part of dqkv and Dbuf = rowsum(dy * y). */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_backward_dq(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y, const zk_io *dy,
                            const float *lse, const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DQ_SMEM);
    const int h = blockIdx.y, b = blockIdx.z;
    const long o3 = (long)b * ZK_T * 3 * ZK_C + h * ZK_ATC_HS, o1 = (long)b * ZK_T * ZK_C + h * ZK_ATC_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    zk_atc_qkv::dq(smem, blockIdx.x * ZK_ATC_BQ, dqkv + o3, 3 * ZK_C, Dbuf + ol, qkv + o3, 3 * ZK_C,
                   qkv + o3 + ZK_C, 3 * ZK_C, qkv + o3 + 2 * ZK_C, 3 * ZK_C, y + o1, dy + o1, ZK_C, lse + ol,
                   zk_doc_row(pos, b, ZK_T));
}

/* The dk and dv parts of dqkv; needs Dbuf from zd_attention_tc_backward_dq. */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_backward_dkv(zk_io *dqkv, const zk_io *qkv, const zk_io *dy, const float *lse, const float *Dbuf,
                             const int *pos)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DKV_SMEM);
    const int h = blockIdx.y, b = blockIdx.z;
    const long o3 = (long)b * ZK_T * 3 * ZK_C + h * ZK_ATC_HS, o1 = (long)b * ZK_T * ZK_C + h * ZK_ATC_HS;
    const long ol = ((long)b * ZK_NH + h) * ZK_T;
    zk_atc_qkv::dkv<1>(smem, blockIdx.x * ZK_ATC_BK, dqkv + o3 + ZK_C, 3 * ZK_C, dqkv + o3 + 2 * ZK_C, 3 * ZK_C,
                    qkv + o3 + ZK_C, 3 * ZK_C, qkv + o3 + 2 * ZK_C, 3 * ZK_C, qkv + o3, 3 * ZK_C, dy + o1, ZK_C,
                    lse + ol, Dbuf + ol, zk_doc_row(pos, b, ZK_T));
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens; lse (B, NH, T) fp32; pos (B, T) document positions, or NULL. Dynamic
** shared memory above 48 KiB: the caller has raised the kernels' limit (cudaFuncSetAttribute /
** cuFuncSetAttribute) to ZK_ATC_*_SMEM. */
inline int zd_attention_tc_forward_launch(zk_io *y, float *lse, const zk_io *qkv, const int *pos, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_tc_forward, grid, ZK_ATC_NT, ZK_ATC_FWD_SMEM, y, lse, qkv, pos);
}
inline int zd_attention_tc_backward_launch(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y,
                                           const zk_io *dy, const float *lse, const int *pos, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BK), (unsigned)ZK_NH, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_tc_backward_dq, g1, ZK_ATC_NT, ZK_ATC_DQ_SMEM, dqkv, Dbuf, qkv, y, dy, lse, pos);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_tc_backward_dkv, g2, ZK_ATC_NT, ZK_ATC_DKV_SMEM, dqkv, qkv, dy, lse, Dbuf, pos);
}
#endif
#endif /* ZK_ATC_ON */
