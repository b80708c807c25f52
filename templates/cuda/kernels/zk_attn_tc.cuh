/*
** zk_attn_tc.cuh — the tensor-core causal attention (FlashAttention-2's scheme on WMMA m16n16k16,
** 16-bit operands, fp32 accumulation) as layout-free bodies, shared by attention_tc.cu (gpt2: q, k, v
** side by side in one (N, 3C) tensor, one key/value head per query head) and attention_gqa_tc.cu
** (llama: q, k, v apart, grouped-query). The design (tiles, the 4-threads-per-row softmax through
** fp32 tiles in shared memory, the two deterministic backward kernels) is described at the head of
** attention_tc.cu; this file holds the code both use.
**
** A body sees one head of one sequence: a base pointer and a row pitch (in elements) per tensor, so
** the caller's layout (interleaved qkv, separate tensors, which key/value head a query head reads)
** stays in the kernel file. The dkv body sums over REP query heads (the heads of a key/value
** group, head r at q + r * HS, dy + r * HS, lse + r * T) in order 0..REP-1 and, within a head, over
** the query tiles in order, accumulating in the same fragments: deterministic, no atomics.
** The bodies are templates on the head size, the sequence length and the element types rather than
** code over the shape macros, because a test includes the kernel files once per shape set (each in
** its own namespace) while this header, guarded, is included once (a test includes it at global
** scope before the sets; NVRTC and nvcc see one set).
** Documents (zk_doc.cuh; pos: the sequence's T positions, NULL for plain causal): query i sees keys
** lo_i = i - pos[i] .. i. Every score of a key it does not see is -inf before the softmax (P = 0,
** dS = 0), element by element in the tile. Whole tiles are skipped where no row sees them: forward
** and dq start at the key tile of the query tile's first document start (its first row's) and leave
** out the 16-key sub-tiles before it; dkv stops at the end of its last key's document and leaves out
** the 16-query sub-tiles past it. What is skipped only ever added zeros, so with one document per
** row (pos[i] = i or NULL) the results are those of the causal bounds, bit for bit.
** The tile macros below are shape-free, except those in ZK_ATC_HS, which expand where they are used.
*/
#ifndef ZK_ATTN_TC_CUH
#define ZK_ATTN_TC_CUH

#include "zk_doc.cuh"   /* zk_doc_lo, zk_doc_end */

#define ZK_ATC_HS (ZK_C / ZK_NH)
#define ZK_ATC_HP (CEIL_DIV(ZK_ATC_HS, 16) * 16)  /* head size padded to the WMMA tile */
#define ZK_ATC_BQ 64                              /* query rows per tile */
#define ZK_ATC_BK 64                              /* keys per tile */
#define ZK_ATC_NW 8                               /* warps per block */
#define ZK_ATC_NT (32 * ZK_ATC_NW)
/* Row pitches in elements: 16-bit tiles (head dims or keys) and fp32 tiles (keys, head dims). WMMA
** wants multiples of 8 (16-bit) and 4 (fp32) elements, and 32-byte aligned tile starts. Rows are
** padded by 16 bytes so that consecutive rows start in different banks. */
#define ZK_ATC_P16 (ZK_ATC_HP + 8)
#define ZK_ATC_PP (ZK_ATC_BK + 8)
#define ZK_ATC_SP (ZK_ATC_BK + 4)
#define ZK_ATC_OP (ZK_ATC_HP + 4)
#define ZK_ATC_T16 (ZK_ATC_BQ * ZK_ATC_P16 * 2)  /* bytes of a 64-row 16-bit head tile */
#define ZK_ATC_TP (ZK_ATC_BQ * ZK_ATC_PP * 2)    /* bytes of a 64 x 64 16-bit tile */
#define ZK_ATC_TS (ZK_ATC_BQ * ZK_ATC_SP * 4)    /* bytes of a 64 x 64 fp32 tile */
#define ZK_ATC_TO (ZK_ATC_BQ * ZK_ATC_OP * 4)    /* bytes of a 64-row fp32 head tile */
#define ZK_ATC_FWD_SMEM (3 * ZK_ATC_T16 + ZK_ATC_TS + ZK_ATC_TP + ZK_ATC_TO)
#define ZK_ATC_DQ_SMEM (4 * ZK_ATC_T16 + 2 * ZK_ATC_TS + ZK_ATC_TP)
#define ZK_ATC_DKV_SMEM (4 * ZK_ATC_T16 + 2 * ZK_ATC_TS + 2 * ZK_ATC_TP + 2 * ZK_ATC_BQ * 4)
/* The head sizes this tiling serves: the backward bodies store their fp32 results through the two
** score tiles (so HS <= 132), and dkv's tiles must fit an sm_90 block (227 KiB). */
#define ZK_ATC_FITS (2 * ZK_ATC_TS >= ZK_ATC_TO && ZK_ATC_DKV_SMEM <= 227 * 1024)

/* The fragment arrays (dq, dk, dv accumulators) must stay in registers: their loops are unrolled
** (zk_common.cuh's ZK_UNROLL). */

/* The emulation has no dynamic shared memory: a __shared__ block of the size the launch asks for. */
#ifdef ZR_SIMT_H
template <int N> struct alignas(128) zk_atc_smem_t { unsigned char b[N]; };
#define ZK_ATC_SMEM(name, bytes)                                                                           \
    __shared__ zk_atc_smem_t<bytes> name##_block;                                                         \
    unsigned char *name = name##_block.b
#else
#define ZK_ATC_SMEM(name, bytes) extern __shared__ __align__(128) unsigned char name[]
#endif

/* 16-bit stores into the staging tiles, whose element type is zk_wt's (bits as zk_io's). */
ZK_DEV void zk_atc_st16(__half *p, float v) { zk_st(reinterpret_cast<zk_fp16 *>(p), v); }
ZK_DEV void zk_atc_st16(__nv_bfloat16 *p, float v) { zk_st(reinterpret_cast<zk_bf16 *>(p), v); }

/* Max and sum over the 4 threads that own a row (consecutive lanes). */
ZK_DEV float zk_atc_max4(float v)
{
    v = zk_maxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return zk_maxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
ZK_DEV float zk_atc_sum4(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

struct alignas(16) zk_atc_v16 { unsigned w[4]; };

/* HS head size, T sequence length, W the WMMA element type (zk_wt), IO the storage type (zk_io). */
template <int HS, int T, typename W, typename IO> struct zk_atc {
    enum {
        HP = CEIL_DIV(HS, 16) * 16, BQ = ZK_ATC_BQ, BK = ZK_ATC_BK, NW = ZK_ATC_NW, NT = ZK_ATC_NT,
        P16 = HP + 8, PP = ZK_ATC_PP, SP = ZK_ATC_SP, OP = HP + 4,
        T16 = BQ * P16 * 2, TP = BQ * PP * 2, TS = BQ * SP * 4, TO = BQ * OP * 4,
        NOUT = 4 * (HP / 16),                   /* 16 x 16 tiles of a 64 x HP output */
        NOWN = CEIL_DIV(NOUT, NW)               /* of which a warp owns tiles warp + NW u */
    };
    typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc_t;
    typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, W, nvcuda::wmma::row_major> a_t;
    typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, W, nvcuda::wmma::row_major> brow_t;
    typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, W, nvcuda::wmma::col_major> bcol_t;

    /* Rows [r0, r0 + 64) of one head (src: row 0 of the head, rows `pitch` elements apart) into a
    ** 16-bit tile of pitch P16; rows past T and columns past HS are zero (never garbage: 0 * NaN
    ** would poison the products). Every thread of the block takes part. 16-bit storage with HS a
    ** multiple of 8 moves 16 bytes at a time (the bits are the same in zk_io and zk_wt); this needs
    ** the tensors 16-byte aligned, as cudaMalloc and zgen's arenas (64) give, and pitch and head
    ** offsets multiples of 8 elements, as they are when HS is. */
    static __device__ __forceinline__ void stage(W *dst, const IO *src, long pitch, int r0)
    {
        if (sizeof(IO) == 2 && HS % 8 == 0) {
            for (int e = threadIdx.x; e < BQ * HP / 8; e += NT) {
                int r = e / (HP / 8), d = e % (HP / 8) * 8, i = r0 + r;
                zk_atc_v16 v = {{0u, 0u, 0u, 0u}};
#ifdef ZR_SIMT_H
                if (i < T && d < HS) memcpy(&v, src + (long)i * pitch + d, sizeof v);
                memcpy(dst + r * P16 + d, &v, sizeof v);
#else
                if (i < T && d < HS) v = *reinterpret_cast<const zk_atc_v16 *>(src + (long)i * pitch + d);
                *reinterpret_cast<zk_atc_v16 *>(dst + r * P16 + d) = v;
#endif
            }
        } else {
            for (int e = threadIdx.x; e < BQ * HP; e += NT) {
                int r = e / HP, d = e % HP, i = r0 + r;
                float v = i < T && d < HS ? zk_ld(src + (long)i * pitch + d) : 0.0f;
                zk_atc_st16(dst + r * P16 + d, v);
            }
        }
    }

    /* C (16 x 16 at row tile tr, column tile tc of a 64-wide fp32 tile) = A B^T over the head dims,
    ** A and B 16-bit head tiles (rows = queries or keys); stored to out, pitch SP. */
    static __device__ __forceinline__ void abt(float *out, const W *A, const W *B, int tr, int tc)
    {
        acc_t acc;
        a_t fa;
        bcol_t fb;
        nvcuda::wmma::fill_fragment(acc, 0.0f);
        for (int kk = 0; kk < HP; kk += 16) {
            nvcuda::wmma::load_matrix_sync(fa, A + tr * 16 * P16 + kk, P16);
            nvcuda::wmma::load_matrix_sync(fb, B + tc * 16 * P16 + kk, P16);
            nvcuda::wmma::mma_sync(acc, fa, fb, acc);
        }
        nvcuda::wmma::store_matrix_sync(out + tr * 16 * SP + tc * 16, acc, SP, nvcuda::wmma::mem_row_major);
    }

    /* acc += P[tr rows, key tiles kbeg..kend-1] H[those keys, head tile tc]; P pitch PP, H P16. */
    static __device__ __forceinline__ void ph(acc_t &acc, const W *P, const W *H, int tr, int tc, int kbeg, int kend)
    {
        a_t fa;
        brow_t fb;
        for (int kk = kbeg; kk < kend; kk++) {
            nvcuda::wmma::load_matrix_sync(fa, P + tr * 16 * PP + kk * 16, PP);
            nvcuda::wmma::load_matrix_sync(fb, H + kk * 16 * P16 + tc * 16, P16);
            nvcuda::wmma::mma_sync(acc, fa, fb, acc);
        }
    }

    /* How many 16-key sub-tiles of the key tile at k0 lie wholly before key lo0. */
    static __device__ __forceinline__ int sub_before(int lo0, int k0) { return lo0 > k0 ? (lo0 - k0) / 16 : 0; }

    /* ---------------------------------------------------------------- forward */
    /* One query tile (rows q0..) of one head: y (pitch py) and lse (T floats) of the head. */
    static __device__ __forceinline__ void forward(unsigned char *smem, int q0, IO *y, long py, float *lse,
                                                   const IO *q, long pq, const IO *k, long pk, const IO *v, long pv,
                                                   const int *pos)
    {
        W *Qs = (W *)smem, *Ks = (W *)(smem + T16), *Vs = (W *)(smem + 2 * T16);
        float *Sf = (float *)(smem + 3 * T16);
        W *Ps = (W *)(smem + 3 * T16 + TS);
        float *Of = (float *)(smem + 3 * T16 + TS + TP);
        const int warp = threadIdx.x / 32, r = threadIdx.x / 4, qd = threadIdx.x % 4, i = q0 + r;
        const int lo = i < T ? zk_doc_lo(pos, i) : 0, lo0 = zk_doc_lo(pos, q0);   /* lo0: the tile's earliest */
        const float scale = rsqrtf((float)HS);
        float m = zk_neg_inf(), l = 0.0f;
        stage(Qs, q, pq, q0);
        for (int d = qd; d < HP; d += 4) Of[r * OP + d] = 0.0f;
        const int last = zk_mini(q0 + BQ, T) - 1;
        for (int k0 = lo0 / BK * BK; k0 <= last; k0 += BK) {
            __syncthreads();                    /* the previous tile's K, V, P are no longer read */
            stage(Ks, k, pk, k0);
            stage(Vs, v, pv, k0);
            __syncthreads();
            const int kbeg = sub_before(lo0, k0);
            for (int t = warp; t < 16; t += NW) {
                int tr = t / 4, tc = t % 4;
                if (k0 + tc * 16 <= q0 + tr * 16 + 15 && tc >= kbeg) abt(Sf, Qs, Ks, tr, tc);
            }
            __syncthreads();
            float s[16], mx = zk_neg_inf();
            for (int kk = 0; kk < 16; kk++) {
                int c = qd + 4 * kk, j = k0 + c;
                s[kk] = lo <= j && j <= i && i < T ? Sf[r * SP + c] * scale : zk_neg_inf();
                mx = zk_maxf(mx, s[kk]);
            }
            float mn = zk_maxf(m, zk_atc_max4(mx));
            float mref = zk_finite(mn) ? mn : 0.0f;   /* a row with no key yet (before its document, past T) */
            float corr = expf(m - mref), ps = 0.0f;
            for (int kk = 0; kk < 16; kk++) {
                float p = expf(s[kk] - mref);
                ps += p;
                zk_atc_st16(Ps + r * PP + qd + 4 * kk, p);
            }
            l = l * corr + zk_atc_sum4(ps);
            m = mn;
            for (int d = qd; d < HP; d += 4) Of[r * OP + d] *= corr;
            __syncthreads();
            for (int t = warp; t < 4 * (HP / 16); t += NW) {
                int tr = t / (HP / 16), tc = t % (HP / 16);
                int kend = zk_mini(4, (q0 + tr * 16 + 15 - k0) / 16 + 1);   /* key sub-tiles not all masked */
                acc_t acc;
                nvcuda::wmma::load_matrix_sync(acc, Of + tr * 16 * OP + tc * 16, OP, nvcuda::wmma::mem_row_major);
                ph(acc, Ps, Vs, tr, tc, kbeg, kend);
                nvcuda::wmma::store_matrix_sync(Of + tr * 16 * OP + tc * 16, acc, OP, nvcuda::wmma::mem_row_major);
            }
        }
        __syncthreads();
        if (i >= T) return;
        for (int d = qd; d < HS; d += 4) zk_st(y + (long)i * py + d, Of[r * OP + d] / l);
        if (qd == 0) lse[i] = m + logf(l);
    }

    /* ---------------------------------------------------------------- backward */
    /* One query tile of one head: dq (pitch pdq) and D = rowsum(dy * y) (T floats of the head). */
    static __device__ __forceinline__ void dq(unsigned char *smem, int q0, IO *dqo, long pdq, float *D,
                                              const IO *q, long pq, const IO *k, long pk, const IO *v, long pv,
                                              const IO *y, const IO *dy, long py, const float *lse, const int *pos)
    {
        W *Qs = (W *)smem, *dYs = (W *)(smem + T16), *Ks = (W *)(smem + 2 * T16), *Vs = (W *)(smem + 3 * T16);
        float *Sf = (float *)(smem + 4 * T16), *dPf = (float *)(smem + 4 * T16 + TS);
        W *dSs = (W *)(smem + 4 * T16 + 2 * TS);
        const int warp = threadIdx.x / 32, r = threadIdx.x / 4, qd = threadIdx.x % 4, i = q0 + r;
        const int lo = i < T ? zk_doc_lo(pos, i) : 0, lo0 = zk_doc_lo(pos, q0);
        const float scale = rsqrtf((float)HS);
        stage(Qs, q, pq, q0);
        stage(dYs, dy, py, q0);
        float Drow = 0.0f, L = 0.0f;
        for (int d = qd; d < HS && i < T; d += 4) Drow += zk_ld(dy + (long)i * py + d) * zk_ld(y + (long)i * py + d);
        Drow = zk_atc_sum4(Drow);
        if (i < T) {
            L = lse[i];
            if (qd == 0) D[i] = Drow;
        }
        acc_t acc[NOWN];
        ZK_UNROLL
        for (int u = 0; u < NOWN; u++) nvcuda::wmma::fill_fragment(acc[u], 0.0f);
        const int last = zk_mini(q0 + BQ, T) - 1;
        for (int k0 = lo0 / BK * BK; k0 <= last; k0 += BK) {
            __syncthreads();
            stage(Ks, k, pk, k0);
            stage(Vs, v, pv, k0);
            __syncthreads();
            const int kbeg = sub_before(lo0, k0);
            for (int t = warp; t < 32; t += NW) {    /* 16 tiles of S, then 16 of dP */
                int tr = (t % 16) / 4, tc = t % 4;
                if (k0 + tc * 16 > q0 + tr * 16 + 15 || tc < kbeg) continue;
                if (t < 16) abt(Sf, Qs, Ks, tr, tc);
                else abt(dPf, dYs, Vs, tr, tc);
            }
            __syncthreads();
            for (int kk = 0; kk < 16; kk++) {
                int c = qd + 4 * kk, j = k0 + c;
                float ds = 0.0f;
                if (lo <= j && j <= i && i < T) ds = expf(Sf[r * SP + c] * scale - L) * (dPf[r * SP + c] - Drow);
                zk_atc_st16(dSs + r * PP + c, ds);
            }
            __syncthreads();
            ZK_UNROLL
            for (int u = 0; u < NOWN; u++) {
                int t = warp + NW * u, tr = t / (HP / 16), tc = t % (HP / 16);
                if (t < NOUT) ph(acc[u], dSs, Ks, tr, tc, kbeg, zk_mini(4, (q0 + tr * 16 + 15 - k0) / 16 + 1));
            }
        }
        __syncthreads();                        /* Sf and dPf are free: dq goes out through them */
        float *Of = Sf;
        ZK_UNROLL
        for (int u = 0; u < NOWN; u++) {
            int t = warp + NW * u, tr = t / (HP / 16), tc = t % (HP / 16);
            if (t >= NOUT) continue;
            for (int e = 0; e < acc[u].num_elements; e++) acc[u].x[e] *= scale;
            nvcuda::wmma::store_matrix_sync(Of + tr * 16 * OP + tc * 16, acc[u], OP, nvcuda::wmma::mem_row_major);
        }
        __syncthreads();
        if (i >= T) return;
        for (int d = qd; d < HS; d += 4) zk_st(dqo + (long)i * pdq + d, Of[r * OP + d]);
    }

    /* One key tile (keys k0..) of one key/value head: dk (pitch pdk) and dv (pitch pdv), summed over
    ** the REP query heads that read it (q, dy: head r at + r * HS; lse, D: head r at + r * T). Key j
    ** is seen by the queries j .. jend - 1 (its document); none from qend on sees the tile. */
    template <int REP>
    static __device__ __forceinline__ void dkv(unsigned char *smem, int k0, IO *dko, long pdk, IO *dvo, long pdv,
                                               const IO *k, long pk, const IO *v, long pv, const IO *q, long pq,
                                               const IO *dy, long pdy, const float *lse, const float *D,
                                               const int *pos)
    {
        W *Ks = (W *)smem, *Vs = (W *)(smem + T16), *Qs = (W *)(smem + 2 * T16), *dYs = (W *)(smem + 3 * T16);
        float *Sf = (float *)(smem + 4 * T16), *dPf = (float *)(smem + 4 * T16 + TS);
        W *Ps = (W *)(smem + 4 * T16 + 2 * TS), *dSs = (W *)(smem + 4 * T16 + 2 * TS + TP);
        float *Ls = (float *)(smem + 4 * T16 + 2 * TS + 2 * TP), *Ds = Ls + BQ;
        const int warp = threadIdx.x / 32, r = threadIdx.x / 4, qd = threadIdx.x % 4, j = k0 + r;   /* this thread's key */
        const int jend = j < T ? zk_doc_end(pos, j, T) : 0, qend = zk_doc_end(pos, zk_mini(k0 + BK, T) - 1, T);
        const float scale = rsqrtf((float)HS);
        stage(Ks, k, pk, k0);
        stage(Vs, v, pv, k0);
        acc_t dk[NOWN], dv[NOWN];
        ZK_UNROLL
        for (int u = 0; u < NOWN; u++) { nvcuda::wmma::fill_fragment(dk[u], 0.0f); nvcuda::wmma::fill_fragment(dv[u], 0.0f); }
        for (int h = 0; h < REP; h++) {
            const IO *qh = q + h * HS, *dyh = dy + h * HS;
            const float *lh = lse + (long)h * T, *Dh = D + (long)h * T;
            for (int q0 = k0; q0 < qend; q0 += BQ) {  /* queries before k0 see none of these keys */
                __syncthreads();
                stage(Qs, qh, pq, q0);
                stage(dYs, dyh, pdy, q0);
                if (threadIdx.x < BQ) {
                    int i = q0 + threadIdx.x;
                    Ls[threadIdx.x] = i < T ? lh[i] : 0.0f;
                    Ds[threadIdx.x] = i < T ? Dh[i] : 0.0f;
                }
                __syncthreads();
                const int kq = zk_mini(4, CEIL_DIV(qend - q0, 16));   /* query sub-tiles before qend */
                for (int t = warp; t < 32; t += NW) {    /* S^T (keys x queries), then dP^T */
                    int tr = (t % 16) / 4, tc = t % 4;
                    if (k0 + tr * 16 > q0 + tc * 16 + 15 || tc >= kq) continue;
                    if (t < 16) abt(Sf, Ks, Qs, tr, tc);
                    else abt(dPf, Vs, dYs, tr, tc);
                }
                __syncthreads();
                for (int kk = 0; kk < 16; kk++) {
                    int c = qd + 4 * kk, i = q0 + c;
                    float p = 0.0f, ds = 0.0f;
                    if (j <= i && i < jend) {
                        p = expf(Sf[r * SP + c] * scale - Ls[c]);
                        ds = p * (dPf[r * SP + c] - Ds[c]);
                    }
                    zk_atc_st16(Ps + r * PP + c, p);
                    zk_atc_st16(dSs + r * PP + c, ds);
                }
                __syncthreads();
                ZK_UNROLL
                for (int u = 0; u < NOWN; u++) {
                    int t = warp + NW * u, tr = t / (HP / 16), tc = t % (HP / 16);
                    if (t >= NOUT) continue;
                    /* on the diagonal, query sub-tiles kk < tr see none of these keys */
                    a_t fa;
                    brow_t fb;
                    for (int kk = q0 == k0 ? tr : 0; kk < kq; kk++) {
                        nvcuda::wmma::load_matrix_sync(fb, dYs + kk * 16 * P16 + tc * 16, P16);
                        nvcuda::wmma::load_matrix_sync(fa, Ps + tr * 16 * PP + kk * 16, PP);
                        nvcuda::wmma::mma_sync(dv[u], fa, fb, dv[u]);
                        nvcuda::wmma::load_matrix_sync(fb, Qs + kk * 16 * P16 + tc * 16, P16);
                        nvcuda::wmma::load_matrix_sync(fa, dSs + tr * 16 * PP + kk * 16, PP);
                        nvcuda::wmma::mma_sync(dk[u], fa, fb, dk[u]);
                    }
                }
            }
        }
        /* out through Sf and dPf: dk, then dv */
        float *Of = Sf;
        ZK_UNROLL
        for (int part = 1; part <= 2; part++) {
            __syncthreads();
            ZK_UNROLL
            for (int u = 0; u < NOWN; u++) {
                int t = warp + NW * u, tr = t / (HP / 16), tc = t % (HP / 16);
                if (t >= NOUT) continue;
                if (part == 1) for (int e = 0; e < dk[u].num_elements; e++) dk[u].x[e] *= scale;
                nvcuda::wmma::store_matrix_sync(Of + tr * 16 * OP + tc * 16, part == 1 ? dk[u] : dv[u], OP,
                                                nvcuda::wmma::mem_row_major);
            }
            __syncthreads();
            if (j >= T) continue;
            IO *o = part == 1 ? dko + (long)j * pdk : dvo + (long)j * pdv;
            for (int d = qd; d < HS; d += 4) zk_st(o + d, Of[r * OP + d]);
        }
    }
};

#endif /* ZK_ATTN_TC_CUH */
