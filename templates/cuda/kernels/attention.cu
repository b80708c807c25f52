/*
** attention.cu — causal self-attention, tiled with an online softmax (FlashAttention's scheme): no
** T x T matrix is ever stored; backward recomputes the probabilities from the saved log-sum-exp.
**
** qkv is (N = B*T, 3C): q | k | v, head h at columns h*HS, HS = C/NH. y is (N, C).
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
** Head sizes above 170 would need dynamic shared memory (not done): the #error below says so.
*/
#include "zk_common.cuh"

#define ZK_HS (ZK_C / ZK_NH)
#define ZK_ATT_KT 32                    /* keys per tile = lanes */
#define ZK_ATT_NW 4                     /* warps per block (forward, dq) */
/* Query rows per warp, and per staged tile in dkv: halved beyond HS = 128 so that the shared tiles
** of HS up to 170 stay under the 48 KiB a block may declare statically. */
#define ZK_ATT_R (ZK_HS > 128 ? 1 : 2)
#define ZK_ATT_QT (ZK_ATT_NW * ZK_ATT_R) /* query rows per block */
#define ZK_ATT_DPL CEIL_DIV(ZK_HS, 32)  /* head dimensions per lane */
#define ZK_ATT_QT2 (ZK_HS > 128 ? 4 : 8) /* query rows per staged tile (dkv) */
/* head dimensions accumulated per pass in dkv: at most 64, so that 2 x ZK_ATT_DC accumulators per
** lane fit the 255 registers a thread may have (ptxas: 168 registers at 64, no spills) */
#define ZK_ATT_DC CEIL_DIV(ZK_HS, CEIL_DIV(ZK_HS, 64))
/* zd_attention_backward_dq declares the most: */
#if 4 * (2 * ZK_ATT_QT * ZK_HS + 2 * ZK_ATT_KT * (ZK_HS + 1) + ZK_ATT_NW * ZK_ATT_KT) > 48 * 1024
#error "attention.cu: this head size (d_model / n_heads) needs more than 48 KiB of static shared memory per block"
#endif

/* ------------------------------------------------------------------ kernels */
/* Stages rows [j0, j0 + rows) of one third of qkv (part 0 q, 1 k, 2 v) for head h into dst
** (row pitch `pitch`), times `mul`; rows past T read as 0. Every thread of the block takes part. */
ZK_DEV void zk_att_stage(float *dst, int pitch, const zk_io *seq, int part, int h, int j0, int rows, float mul)
{
    int nthreads = blockDim.x * blockDim.y;
    for (int e = threadIdx.x; e < rows * ZK_HS; e += nthreads) {
        int r = e / ZK_HS, d = e % ZK_HS, j = j0 + r;
        dst[r * pitch + d] = j < ZK_T ? zk_ld(seq + (long)j * 3 * ZK_C + part * ZK_C + h * ZK_HS + d) * mul : 0.0f;
    }
}

ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_forward(zk_io *y, float *lse, const zk_io *qkv)
{
    __shared__ float Qs[ZK_ATT_QT][ZK_HS];
    __shared__ float Ks[ZK_ATT_KT][ZK_HS + 1];
    __shared__ float Vs[ZK_ATT_KT][ZK_HS];
    __shared__ float Ps[ZK_ATT_NW][ZK_ATT_KT];
    int q0 = blockIdx.x * ZK_ATT_QT, h = blockIdx.y, b = blockIdx.z;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    float scale = rsqrtf((float)ZK_HS);
    float m[ZK_ATT_R], l[ZK_ATT_R], o[ZK_ATT_R][ZK_ATT_DPL];
    for (int rr = 0; rr < ZK_ATT_R; rr++) {
        m[rr] = zk_neg_inf();
        l[rr] = 0.0f;
        for (int k = 0; k < ZK_ATT_DPL; k++) o[rr][k] = 0.0f;
    }
    zk_att_stage(&Qs[0][0], ZK_HS, seq, 0, h, q0, ZK_ATT_QT, scale);
    int last = zk_mini(q0 + ZK_ATT_QT, ZK_T) - 1;
    for (int k0 = 0; k0 <= last; k0 += ZK_ATT_KT) {
        __syncthreads();                        /* the previous tile is no longer read */
        zk_att_stage(&Ks[0][0], ZK_HS + 1, seq, 1, h, k0, ZK_ATT_KT, 1.0f);
        zk_att_stage(&Vs[0][0], ZK_HS, seq, 2, h, k0, ZK_ATT_KT, 1.0f);
        __syncthreads();
        for (int rr = 0; rr < ZK_ATT_R; rr++) {
            int r = warp * ZK_ATT_R + rr, i = q0 + r, j = k0 + lane;
            if (i >= ZK_T || k0 > i) continue;  /* uniform across the warp */
            float s = zk_neg_inf();
            if (j <= i) {
                s = 0.0f;
                for (int d = 0; d < ZK_HS; d++) s += Qs[r][d] * Ks[lane][d];
            }
            float mn = zk_maxf(m[rr], zk_warp_max(s));   /* finite: key k0 <= i is in the tile */
            float p = j <= i ? expf(s - mn) : 0.0f, corr = expf(m[rr] - mn);
            l[rr] = l[rr] * corr + zk_warp_sum(p);
            m[rr] = mn;
            Ps[warp][lane] = p;
            __syncwarp();
            for (int k = 0; k < ZK_ATT_DPL; k++) {
                int d = lane + 32 * k;
                if (d >= ZK_HS) break;
                float acc = 0.0f;
                for (int jj = 0; jj < ZK_ATT_KT; jj++) acc += Ps[warp][jj] * Vs[jj][d];
                o[rr][k] = o[rr][k] * corr + acc;
            }
            __syncwarp();                       /* Ps is rewritten by the next row */
        }
    }
    for (int rr = 0; rr < ZK_ATT_R; rr++) {
        int i = q0 + warp * ZK_ATT_R + rr;
        if (i >= ZK_T) continue;
        for (int k = 0; k < ZK_ATT_DPL; k++) {
            int d = lane + 32 * k;
            if (d < ZK_HS) zk_st(y + ((long)b * ZK_T + i) * ZK_C + h * ZK_HS + d, o[rr][k] / l[rr]);
        }
        if (lane == 0) lse[((long)b * ZK_NH + h) * ZK_T + i] = m[rr] + logf(l[rr]);
    }
}

/* dq part of dqkv (overwritten) and D = rowsum(dy * y) into Dbuf (B, NH, T). */
ZK_KERNEL void __launch_bounds__(32 * ZK_ATT_NW)
zd_attention_backward_dq(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y, const zk_io *dy,
                         const float *lse)
{
    __shared__ float Qs[ZK_ATT_QT][ZK_HS];
    __shared__ float dYs[ZK_ATT_QT][ZK_HS];
    __shared__ float Ks[ZK_ATT_KT][ZK_HS + 1];
    __shared__ float Vs[ZK_ATT_KT][ZK_HS + 1];
    __shared__ float Ps[ZK_ATT_NW][ZK_ATT_KT];
    int q0 = blockIdx.x * ZK_ATT_QT, h = blockIdx.y, b = blockIdx.z;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    float scale = rsqrtf((float)ZK_HS);
    float Drow[ZK_ATT_R], L[ZK_ATT_R], dq[ZK_ATT_R][ZK_ATT_DPL];
    zk_att_stage(&Qs[0][0], ZK_HS, seq, 0, h, q0, ZK_ATT_QT, scale);
    for (int e = threadIdx.x; e < ZK_ATT_QT * ZK_HS; e += blockDim.x) {
        int r = e / ZK_HS, d = e % ZK_HS, i = q0 + r;
        dYs[r][d] = i < ZK_T ? zk_ld(dy + ((long)b * ZK_T + i) * ZK_C + h * ZK_HS + d) : 0.0f;
    }
    __syncthreads();
    for (int rr = 0; rr < ZK_ATT_R; rr++) {
        int r = warp * ZK_ATT_R + rr, i = q0 + r;
        float s = 0.0f;
        for (int k = 0; k < ZK_ATT_DPL; k++) dq[rr][k] = 0.0f;
        for (int d = lane; d < ZK_HS && i < ZK_T; d += 32)
            s += dYs[r][d] * zk_ld(y + ((long)b * ZK_T + i) * ZK_C + h * ZK_HS + d);
        Drow[rr] = zk_warp_sum(s);
        L[rr] = i < ZK_T ? lse[((long)b * ZK_NH + h) * ZK_T + i] : 0.0f;
        if (lane == 0 && i < ZK_T) Dbuf[((long)b * ZK_NH + h) * ZK_T + i] = Drow[rr];
    }
    int last = zk_mini(q0 + ZK_ATT_QT, ZK_T) - 1;
    for (int k0 = 0; k0 <= last; k0 += ZK_ATT_KT) {
        __syncthreads();
        zk_att_stage(&Ks[0][0], ZK_HS + 1, seq, 1, h, k0, ZK_ATT_KT, 1.0f);
        zk_att_stage(&Vs[0][0], ZK_HS + 1, seq, 2, h, k0, ZK_ATT_KT, 1.0f);
        __syncthreads();
        for (int rr = 0; rr < ZK_ATT_R; rr++) {
            int r = warp * ZK_ATT_R + rr, i = q0 + r, j = k0 + lane;
            if (i >= ZK_T || k0 > i) continue;
            float ds = 0.0f;
            if (j <= i) {
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < ZK_HS; d++) { s += Qs[r][d] * Ks[lane][d]; dp += dYs[r][d] * Vs[lane][d]; }
                ds = expf(s - L[rr]) * (dp - Drow[rr]);
            }
            Ps[warp][lane] = ds;
            __syncwarp();
            for (int k = 0; k < ZK_ATT_DPL; k++) {
                int d = lane + 32 * k;
                if (d >= ZK_HS) break;
                float acc = 0.0f;
                for (int jj = 0; jj < ZK_ATT_KT; jj++) acc += Ps[warp][jj] * Ks[jj][d];
                dq[rr][k] += acc;
            }
            __syncwarp();
        }
    }
    for (int rr = 0; rr < ZK_ATT_R; rr++) {
        int i = q0 + warp * ZK_ATT_R + rr;
        if (i >= ZK_T) continue;
        for (int k = 0; k < ZK_ATT_DPL; k++) {
            int d = lane + 32 * k;
            if (d < ZK_HS) zk_st(dqkv + ((long)b * ZK_T + i) * 3 * ZK_C + h * ZK_HS + d, dq[rr][k] * scale);
        }
    }
}

/* dk and dv parts of dqkv (overwritten); needs Dbuf from zd_attention_backward_dq. One warp.
** Lane j keeps dk_j and dv_j for ZK_ATT_DC head dimensions at a time in registers: beyond HS = 64 the
** query tiles stream through once per chunk of dimensions (the scores are recomputed, identically),
** so that the accumulators never spill. Every dk/dv element sums the same terms in the same order
** whatever the chunking, so the result does not depend on it. */
ZK_KERNEL void __launch_bounds__(32)
zd_attention_backward_dkv(zk_io *dqkv, const zk_io *qkv, const zk_io *dy, const float *lse, const float *Dbuf)
{
    __shared__ float Ks[ZK_ATT_KT][ZK_HS + 1];
    __shared__ float Vs[ZK_ATT_KT][ZK_HS + 1];
    __shared__ float Qs[ZK_ATT_QT2][ZK_HS];
    __shared__ float dYs[ZK_ATT_QT2][ZK_HS];
    __shared__ float Ls[ZK_ATT_QT2], Ds[ZK_ATT_QT2];
    int k0 = blockIdx.x * ZK_ATT_KT, h = blockIdx.y, b = blockIdx.z, lane = threadIdx.x, j = k0 + lane;
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    float scale = rsqrtf((float)ZK_HS);
    zk_att_stage(&Ks[0][0], ZK_HS + 1, seq, 1, h, k0, ZK_ATT_KT, 1.0f);
    zk_att_stage(&Vs[0][0], ZK_HS + 1, seq, 2, h, k0, ZK_ATT_KT, 1.0f);
    for (int c0 = 0; c0 < ZK_HS; c0 += ZK_ATT_DC) {
        float dk[ZK_ATT_DC], dv[ZK_ATT_DC];
        for (int d = 0; d < ZK_ATT_DC; d++) dk[d] = dv[d] = 0.0f;
        for (int i0 = k0; i0 < ZK_T; i0 += ZK_ATT_QT2) {
            __syncthreads();
            zk_att_stage(&Qs[0][0], ZK_HS, seq, 0, h, i0, ZK_ATT_QT2, scale);
            for (int e = lane; e < ZK_ATT_QT2 * ZK_HS; e += 32) {
                int r = e / ZK_HS, d = e % ZK_HS, i = i0 + r;
                dYs[r][d] = i < ZK_T ? zk_ld(dy + ((long)b * ZK_T + i) * ZK_C + h * ZK_HS + d) : 0.0f;
            }
            if (lane < ZK_ATT_QT2 && i0 + lane < ZK_T) {
                Ls[lane] = lse[((long)b * ZK_NH + h) * ZK_T + i0 + lane];
                Ds[lane] = Dbuf[((long)b * ZK_NH + h) * ZK_T + i0 + lane];
            }
            __syncthreads();
            for (int r = 0; r < ZK_ATT_QT2 && i0 + r < ZK_T; r++) {
                if (j > i0 + r || j >= ZK_T) continue;
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < ZK_HS; d++) { s += Qs[r][d] * Ks[lane][d]; dp += dYs[r][d] * Vs[lane][d]; }
                float p = expf(s - Ls[r]), ds = p * (dp - Ds[r]);
                for (int d = 0; d < ZK_ATT_DC; d++)
                    if (c0 + d < ZK_HS) { dv[d] += p * dYs[r][c0 + d]; dk[d] += ds * Qs[r][c0 + d]; }
            }
        }
        /* Qs held q * scale, so dk = sum ds q scale is already complete. */
        if (j >= ZK_T) continue;            /* no return: the next chunk has barriers */
        zk_io *row = dqkv + ((long)b * ZK_T + j) * 3 * ZK_C + h * ZK_HS + c0;
        for (int d = 0; d < ZK_ATT_DC; d++)
            if (c0 + d < ZK_HS) { zk_st(row + ZK_C + d, dk[d]); zk_st(row + 2 * ZK_C + d, dv[d]); }
    }
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens. lse: (B, NH, T) fp32. */
inline int zd_attention_forward_launch(zk_io *y, float *lse, const zk_io *qkv, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_QT), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_forward, grid, 32 * ZK_ATT_NW, 0, y, lse, qkv);
}
/* Dbuf: (B, NH, T) fp32 scratch. */
inline int zd_attention_backward_launch(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y,
                                               const zk_io *dy, const float *lse, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_QT), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATT_KT), (unsigned)ZK_NH, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_backward_dq, g1, 32 * ZK_ATT_NW, 0, dqkv, Dbuf, qkv, y, dy, lse);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_backward_dkv, g2, 32, 0, dqkv, qkv, dy, lse, Dbuf);
}
#endif
