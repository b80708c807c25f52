/*
** zk_attn.cuh — the SIMT causal attention (fp32 arithmetic on CUDA cores, FlashAttention's tiling
** with an online softmax) as layout-free bodies, shared by attention.cu (gpt2: q, k, v side by side
** in one (N, 3C) tensor) and attention_gqa.cu (llama: q, k, v apart, grouped-query). The design
** (tiles, lanes, the two deterministic backward kernels) is described at the head of attention.cu.
**
** A body sees one head of one sequence: a pointer at the head's first column of row 0 and a row
** pitch (in elements) per tensor, so the caller's layout (interleaved qkv, separate tensors, which
** key/value head a query head reads) stays in the kernel file. The dkv body sums over REP query
** heads (a key/value group: head r at q + r * HS, dy + r * HS, lse + r * T, D + r * T) in order
** 0..REP-1 and, within a head, over the query rows in order, into the same registers:
** deterministic, no atomics.
** Documents (zk_doc.cuh; pos: the sequence's T positions, NULL for plain causal): query i sees keys
** lo_i = i - pos[i] .. i. Forward and dq start at the key tile of their first row's document start
** and a row skips the tiles wholly before its own (so its first tile holds a key it sees, and the
** running max is finite from the start); dkv stops at the first query tile past its last key's
** document. Masked keys get p = 0 and ds = 0. With one document per row (pos[i] = i or NULL) every
** bound is the causal one: the same operations in the same order as without documents.
** The bodies are templates on the head size, the sequence length and the storage type, since a
** test includes the kernel files once per shape set (each in its own namespace) while this header,
** guarded, is included once (a test includes it at global scope before the sets). The kernels
** declare the shared tiles (the *_smem structs) and pass them in.
*/
#ifndef ZK_ATTN_CUH
#define ZK_ATTN_CUH

#include "zk_attn_tiles.h"   /* ZK_ATT_KT, ZK_ATT_NW, ZK_ATT_R_OF, ZK_ATT_QT_OF */
#include "zk_doc.cuh"        /* zk_doc_lo, zk_doc_end */

template <int HS, int T, typename IO> struct zk_att {
    enum {
        KT = ZK_ATT_KT, NW = ZK_ATT_NW, R = ZK_ATT_R_OF(HS), QT = ZK_ATT_QT_OF(HS),
        DPL = CEIL_DIV(HS, 32),                 /* head dimensions per lane */
        QT2 = ZK_ATT_QT2_OF(HS),                /* query rows per staged tile (dkv) */
        /* head dimensions accumulated per pass in dkv: at most 64, so that 2 x DC accumulators per
        ** lane fit the 255 registers a thread may have (ptxas: 168 registers at 64, no spills) */
        DC = CEIL_DIV(HS, CEIL_DIV(HS, 64))
    };
    struct fwd_smem { float Qs[QT][HS]; float Ks[KT][HS + 1]; float Vs[KT][HS]; float Ps[NW][KT]; };
    struct dq_smem {
        float Qs[QT][HS]; float dYs[QT][HS]; float Ks[KT][HS + 1]; float Vs[KT][HS + 1]; float Ps[NW][KT];
    };
    struct dkv_smem {
        float Ks[KT][HS + 1]; float Vs[KT][HS + 1]; float Qs[QT2][HS]; float dYs[QT2][HS]; float Ls[QT2], Ds[QT2];
    };
    static_assert(sizeof(fwd_smem) == ZK_ATT_FWD_SMEM_OF(HS) && sizeof(dq_smem) == ZK_ATT_DQ_SMEM_OF(HS) &&
                      sizeof(dkv_smem) == ZK_ATT_DKV_SMEM_OF(HS),
                  "zk_attn_tiles.h's shared-memory figures (gen's decision) differ from the tiles");
    static_assert(sizeof(dq_smem) <= ZK_ATT_SMEM_MAX && sizeof(fwd_smem) <= ZK_ATT_SMEM_MAX &&
                      sizeof(dkv_smem) <= ZK_ATT_SMEM_MAX,
                  "zk_attn.cuh: this head size (d_model / n_heads) needs more than 48 KiB of static shared "
                  "memory per block (gen/cuda_dec.c emits no train-cuda for it)");

    /* Rows [j0, j0 + rows) of one head (src: row 0, rows sp elements apart) into dst (row pitch
    ** `pitch`), times mul; rows past T read as 0. Every thread of the block takes part. */
    static __device__ __forceinline__ void stage(float *dst, int pitch, const IO *src, long sp, int j0, int rows,
                                                 float mul)
    {
        int nthreads = blockDim.x * blockDim.y;
        for (int e = threadIdx.x; e < rows * HS; e += nthreads) {
            int r = e / HS, d = e % HS, j = j0 + r;
            dst[r * pitch + d] = j < T ? zk_ld(src + (long)j * sp + d) * mul : 0.0f;
        }
    }

    /* y (pitch py) and lse (the head's T floats) from q (pitch pq) and k, v (pitch pk). */
    static __device__ __forceinline__ void forward(fwd_smem &S, int q0, IO *y, long py, float *lse, const IO *q,
                                                   long pq, const IO *k, const IO *v, long pk, const int *pos)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        float scale = rsqrtf((float)HS);
        float m[R], l[R], o[R][DPL];
        int lo[R];
        ZK_UNROLL
        for (int rr = 0; rr < R; rr++) {
            m[rr] = zk_neg_inf();
            l[rr] = 0.0f;
            int i = q0 + warp * R + rr;
            lo[rr] = i < T ? zk_doc_lo(pos, i) : 0;
            ZK_UNROLL
            for (int c = 0; c < DPL; c++) o[rr][c] = 0.0f;
        }
        stage(&S.Qs[0][0], HS, q, pq, q0, QT, scale);
        int last = zk_mini(q0 + QT, T) - 1;
        for (int k0 = zk_doc_lo(pos, q0) / KT * KT; k0 <= last; k0 += KT) {
            __syncthreads();                        /* the previous tile is no longer read */
            stage(&S.Ks[0][0], HS + 1, k, pk, k0, KT, 1.0f);
            stage(&S.Vs[0][0], HS, v, pk, k0, KT, 1.0f);
            __syncthreads();
            ZK_UNROLL
            for (int rr = 0; rr < R; rr++) {
                int r = warp * R + rr, i = q0 + r, j = k0 + lane;
                if (i >= T || k0 > i || k0 + KT <= lo[rr]) continue;     /* uniform across the warp */
                bool seen = lo[rr] <= j && j <= i;
                float s = zk_neg_inf();
                if (seen) {
                    s = 0.0f;
                    for (int d = 0; d < HS; d++) s += S.Qs[r][d] * S.Ks[lane][d];
                }
                /* finite: key max(k0, lo) <= i is in the tile */
                float mn = zk_maxf(m[rr], zk_warp_max(s));
                float p = seen ? expf(s - mn) : 0.0f, corr = expf(m[rr] - mn);
                l[rr] = l[rr] * corr + zk_warp_sum(p);
                m[rr] = mn;
                S.Ps[warp][lane] = p;
                __syncwarp();
                ZK_UNROLL
                for (int c = 0; c < DPL; c++) {
                    int d = lane + 32 * c;
                    if (d >= HS) break;
                    float acc = 0.0f;
                    for (int jj = 0; jj < KT; jj++) acc += S.Ps[warp][jj] * S.Vs[jj][d];
                    o[rr][c] = o[rr][c] * corr + acc;
                }
                __syncwarp();                       /* Ps is rewritten by the next row */
            }
        }
        ZK_UNROLL
        for (int rr = 0; rr < R; rr++) {
            int i = q0 + warp * R + rr;
            if (i >= T) continue;
            ZK_UNROLL
            for (int c = 0; c < DPL; c++) {
                int d = lane + 32 * c;
                if (d < HS) zk_st(y + (long)i * py + d, o[rr][c] / l[rr]);
            }
            if (lane == 0) lse[i] = m[rr] + logf(l[rr]);
        }
    }

    /* dq (pitch pdq, overwritten) and D = rowsum(dy * y) into the head's T floats of Dbuf; y, dy
    ** at pitch py. */
    static __device__ __forceinline__ void dq(dq_smem &S, int q0, IO *dqo, long pdq, float *Dbuf, const IO *q,
                                              long pq, const IO *k, const IO *v, long pk, const IO *y,
                                              const IO *dy, long py, const float *lse, const int *pos)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        float scale = rsqrtf((float)HS);
        float Drow[R], L[R], acc_q[R][DPL];
        int lo[R];
        stage(&S.Qs[0][0], HS, q, pq, q0, QT, scale);
        for (int e = threadIdx.x; e < QT * HS; e += blockDim.x) {
            int r = e / HS, d = e % HS, i = q0 + r;
            S.dYs[r][d] = i < T ? zk_ld(dy + (long)i * py + d) : 0.0f;
        }
        __syncthreads();
        ZK_UNROLL
        for (int rr = 0; rr < R; rr++) {
            int r = warp * R + rr, i = q0 + r;
            float s = 0.0f;
            ZK_UNROLL
            for (int c = 0; c < DPL; c++) acc_q[rr][c] = 0.0f;
            for (int d = lane; d < HS && i < T; d += 32) s += S.dYs[r][d] * zk_ld(y + (long)i * py + d);
            Drow[rr] = zk_warp_sum(s);
            L[rr] = i < T ? lse[i] : 0.0f;
            lo[rr] = i < T ? zk_doc_lo(pos, i) : 0;
            if (lane == 0 && i < T) Dbuf[i] = Drow[rr];
        }
        int last = zk_mini(q0 + QT, T) - 1;
        for (int k0 = zk_doc_lo(pos, q0) / KT * KT; k0 <= last; k0 += KT) {
            __syncthreads();
            stage(&S.Ks[0][0], HS + 1, k, pk, k0, KT, 1.0f);
            stage(&S.Vs[0][0], HS + 1, v, pk, k0, KT, 1.0f);
            __syncthreads();
            ZK_UNROLL
            for (int rr = 0; rr < R; rr++) {
                int r = warp * R + rr, i = q0 + r, j = k0 + lane;
                if (i >= T || k0 > i || k0 + KT <= lo[rr]) continue;
                float ds = 0.0f;
                if (lo[rr] <= j && j <= i) {
                    float s = 0.0f, dp = 0.0f;
                    for (int d = 0; d < HS; d++) { s += S.Qs[r][d] * S.Ks[lane][d]; dp += S.dYs[r][d] * S.Vs[lane][d]; }
                    ds = expf(s - L[rr]) * (dp - Drow[rr]);
                }
                S.Ps[warp][lane] = ds;
                __syncwarp();
                ZK_UNROLL
                for (int c = 0; c < DPL; c++) {
                    int d = lane + 32 * c;
                    if (d >= HS) break;
                    float acc = 0.0f;
                    for (int jj = 0; jj < KT; jj++) acc += S.Ps[warp][jj] * S.Ks[jj][d];
                    acc_q[rr][c] += acc;
                }
                __syncwarp();
            }
        }
        ZK_UNROLL
        for (int rr = 0; rr < R; rr++) {
            int i = q0 + warp * R + rr;
            if (i >= T) continue;
            ZK_UNROLL
            for (int c = 0; c < DPL; c++) {
                int d = lane + 32 * c;
                if (d < HS) zk_st(dqo + (long)i * pdq + d, acc_q[rr][c] * scale);
            }
        }
    }

    /* dk, dv (pitch pdk, overwritten) of the 32 keys from k0, summed over the REP query heads of
    ** their group; one warp. Lane j keeps dk_j and dv_j for DC head dimensions at a time in
    ** registers: beyond HS = 64 the query rows stream through once per chunk of dimensions (the
    ** scores are recomputed, identically), so that the accumulators never spill. Every dk/dv element
    ** sums the same terms in the same order whatever the chunking, so the result does not depend on it.
    ** Key j is seen by the queries j .. jend - 1 (its document); the query tiles stop at the end of the
    ** last key's document, qend. Needs D from dq. */
    template <int REP>
    static __device__ __forceinline__ void dkv(dkv_smem &S, int k0, IO *dko, IO *dvo, long pdk, const IO *k,
                                               const IO *v, long pk, const IO *q, long pq, const IO *dy, long py,
                                               const float *lse, const float *Dbuf, const int *pos)
    {
        int lane = threadIdx.x, j = k0 + lane;
        float scale = rsqrtf((float)HS);
        const int jend = j < T ? zk_doc_end(pos, j, T) : 0, qend = zk_doc_end(pos, zk_mini(k0 + KT, T) - 1, T);
        stage(&S.Ks[0][0], HS + 1, k, pk, k0, KT, 1.0f);
        stage(&S.Vs[0][0], HS + 1, v, pk, k0, KT, 1.0f);
        for (int c0 = 0; c0 < HS; c0 += DC) {
            float dk[DC], dv[DC];
            for (int d = 0; d < DC; d++) dk[d] = dv[d] = 0.0f;
            for (int g = 0; g < REP; g++) {
                const IO *qg = q + g * HS, *dyg = dy + g * HS;
                const float *lg = lse + (long)g * T, *Dg = Dbuf + (long)g * T;
                for (int i0 = k0; i0 < qend; i0 += QT2) {
                    __syncthreads();
                    stage(&S.Qs[0][0], HS, qg, pq, i0, QT2, scale);
                    for (int e = lane; e < QT2 * HS; e += 32) {
                        int r = e / HS, d = e % HS, i = i0 + r;
                        S.dYs[r][d] = i < T ? zk_ld(dyg + (long)i * py + d) : 0.0f;
                    }
                    if (lane < QT2 && i0 + lane < T) {
                        S.Ls[lane] = lg[i0 + lane];
                        S.Ds[lane] = Dg[i0 + lane];
                    }
                    __syncthreads();
                    for (int r = 0; r < QT2 && i0 + r < qend; r++) {
                        if (j > i0 + r || i0 + r >= jend) continue;
                        float s = 0.0f, dp = 0.0f;
                        for (int d = 0; d < HS; d++) { s += S.Qs[r][d] * S.Ks[lane][d]; dp += S.dYs[r][d] * S.Vs[lane][d]; }
                        float p = expf(s - S.Ls[r]), ds = p * (dp - S.Ds[r]);
                        for (int d = 0; d < DC; d++)
                            if (c0 + d < HS) { dv[d] += p * S.dYs[r][c0 + d]; dk[d] += ds * S.Qs[r][c0 + d]; }
                    }
                }
            }
            /* Qs held q * scale, so dk = sum ds q scale is already complete. */
            if (j >= T) continue;               /* no return: the next chunk has barriers */
            for (int d = 0; d < DC; d++)
                if (c0 + d < HS) {
                    zk_st(dko + (long)j * pdk + c0 + d, dk[d]);
                    zk_st(dvo + (long)j * pdk + c0 + d, dv[d]);
                }
        }
    }
};

#endif /* ZK_ATTN_CUH */
