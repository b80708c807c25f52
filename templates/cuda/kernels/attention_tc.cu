/*
** attention_tc.cu — causal self-attention on tensor cores (WMMA m16n16k16, 16-bit operands, fp32
** accumulation), FlashAttention-2's scheme: online softmax, no T x T matrix in memory, backward
** recomputing the probabilities from the saved log-sum-exp. The same contract as attention.cu:
** qkv is (N = B*T, 3C): q | k | v, head h at columns h*HS, HS = C/NH; y is (N, C); lse (B, NH, T)
** fp32; dqkv (N, 3C) is overwritten; Dbuf (B, NH, T) fp32 scratch. Storage zk_io is bf16 or fp16
** (fp32 storage also works: values are rounded to bf16 when staged).
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
** (key > query or key >= T), update the running max m and sum l, write P (16-bit) and rescale their
** part of the output O (fp32, in shared memory); then O += P V by WMMA on O loaded as an accumulator.
** Key tiles above the diagonal are never loaded; 16 x 16 sub-tiles above it are skipped.
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
** dq 79 KiB, dkv 88.5 KiB; HS 128: forward 110 KiB, dq 111 KiB, dkv 120.5 KiB (ZK_ATC_*_SMEM below),
** within sm_80's 163 KiB and sm_90's 227 KiB opt-in limits.
** Rows are padded by 16 bytes so that consecutive rows start in different banks.
*/
#include "zk_common.cuh"
#include "zk_wmma.cuh"

#define ZK_ATC_HS (ZK_C / ZK_NH)
#define ZK_ATC_HP (CEIL_DIV(ZK_ATC_HS, 16) * 16)  /* head size padded to the WMMA tile */
#define ZK_ATC_BQ 64                              /* query rows per tile */
#define ZK_ATC_BK 64                              /* keys per tile */
#define ZK_ATC_NW 8                               /* warps per block */
#define ZK_ATC_NT (32 * ZK_ATC_NW)
/* Row pitches in elements: 16-bit tiles (head dims or keys) and fp32 tiles (keys, head dims). WMMA
** wants multiples of 8 (16-bit) and 4 (fp32) elements, and 32-byte aligned tile starts. */
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
/* The head sizes this tiling serves: the backward kernels store their fp32 results through the two
** score tiles (so HS <= 132), and dkv's tiles must fit an sm_90 block. Every kernel source is compiled
** for every spec, and no trainer launches these kernels yet, so a model outside that range (gpt-1t,
** HS 160) gets an empty module rather than a failed generation; the emitted table then lists none of
** them, and a trainer that wires this kernel in must fall back to attention.cu there. */
#if 2 * ZK_ATC_TS >= ZK_ATC_TO && ZK_ATC_DKV_SMEM <= 227 * 1024
#define ZK_ATC_ON 1
#else
#define ZK_ATC_ON 0
#endif
#if ZK_ATC_ON

/* The emulation has no dynamic shared memory: a __shared__ block of the size the launch asks for. */
#ifdef ZR_SIMT_H
template <int N> struct alignas(128) zk_atc_smem_t { unsigned char b[N]; };
#define ZK_ATC_SMEM(name, bytes)                                                                           \
    __shared__ zk_atc_smem_t<bytes> name##_block;                                                         \
    unsigned char *name = name##_block.b
#else
#define ZK_ATC_SMEM(name, bytes) extern __shared__ __align__(128) unsigned char name[]
#endif

/* ------------------------------------------------------------------ helpers */
namespace wm = nvcuda::wmma;
typedef wm::fragment<wm::accumulator, 16, 16, 16, float> zk_atc_acc;
typedef wm::fragment<wm::matrix_a, 16, 16, 16, zk_wt, wm::row_major> zk_atc_a;
typedef wm::fragment<wm::matrix_b, 16, 16, 16, zk_wt, wm::row_major> zk_atc_brow;
typedef wm::fragment<wm::matrix_b, 16, 16, 16, zk_wt, wm::col_major> zk_atc_bcol;

ZK_DEV void zk_atc_st16(zk_wt *p, float v)
{
#if ZK_IO == 2
    zk_st(reinterpret_cast<zk_fp16 *>(p), v);
#else
    zk_st(reinterpret_cast<zk_bf16 *>(p), v);
#endif
}

/* Rows [r0, r0 + 64) of part (0 q, 1 k, 2 v) of qkv, or of a (N, C) tensor when part < 0, for head
** h, into a 16-bit tile of pitch ZK_ATC_P16; rows past T and columns past HS are zero (never
** garbage: 0 * NaN would poison the products). Every thread of the block takes part.
** 16-bit storage with HS a multiple of 8 moves 16 bytes at a time (the bits are the same in zk_io
** and zk_wt); this needs the tensors 16-byte aligned, as cudaMalloc and zgen's arenas (64) give. */
struct alignas(16) zk_atc_v16 { unsigned w[4]; };
ZK_DEV void zk_atc_stage(zk_wt *dst, const zk_io *seq, int part, int h, int r0)
{
    const int pitch = part < 0 ? ZK_C : 3 * ZK_C, col = (part < 0 ? 0 : part * ZK_C) + h * ZK_ATC_HS;
#if ZK_IO != 0 && ZK_ATC_HS % 8 == 0
    for (int e = threadIdx.x; e < ZK_ATC_BQ * ZK_ATC_HP / 8; e += ZK_ATC_NT) {
        int r = e / (ZK_ATC_HP / 8), d = e % (ZK_ATC_HP / 8) * 8, i = r0 + r;
        zk_atc_v16 v = {{0u, 0u, 0u, 0u}};
#ifdef ZR_SIMT_H
        if (i < ZK_T && d < ZK_ATC_HS) memcpy(&v, seq + (long)i * pitch + col + d, sizeof v);
        memcpy(dst + r * ZK_ATC_P16 + d, &v, sizeof v);
#else
        if (i < ZK_T && d < ZK_ATC_HS) v = *reinterpret_cast<const zk_atc_v16 *>(seq + (long)i * pitch + col + d);
        *reinterpret_cast<zk_atc_v16 *>(dst + r * ZK_ATC_P16 + d) = v;
#endif
    }
#else
    for (int e = threadIdx.x; e < ZK_ATC_BQ * ZK_ATC_HP; e += ZK_ATC_NT) {
        int r = e / ZK_ATC_HP, d = e % ZK_ATC_HP, i = r0 + r;
        float v = i < ZK_T && d < ZK_ATC_HS ? zk_ld(seq + (long)i * pitch + col + d) : 0.0f;
        zk_atc_st16(dst + r * ZK_ATC_P16 + d, v);
    }
#endif
}

/* C (16 x 16 at row tile tr, column tile tc of a 64-wide fp32 tile) = A B^T over the head dims,
** A and B 16-bit head tiles (rows = queries or keys); stored to out, pitch ZK_ATC_SP. */
ZK_DEV void zk_atc_abt(float *out, const zk_wt *A, const zk_wt *B, int tr, int tc)
{
    zk_atc_acc acc;
    zk_atc_a fa;
    zk_atc_bcol fb;
    wm::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < ZK_ATC_HP; kk += 16) {
        wm::load_matrix_sync(fa, A + tr * 16 * ZK_ATC_P16 + kk, ZK_ATC_P16);
        wm::load_matrix_sync(fb, B + tc * 16 * ZK_ATC_P16 + kk, ZK_ATC_P16);
        wm::mma_sync(acc, fa, fb, acc);
    }
    wm::store_matrix_sync(out + tr * 16 * ZK_ATC_SP + tc * 16, acc, ZK_ATC_SP, wm::mem_row_major);
}

/* acc += P[tr rows, key tiles < kend] H[those keys, head tile tc]; P pitch ZK_ATC_PP, H ZK_ATC_P16. */
ZK_DEV void zk_atc_ph(zk_atc_acc &acc, const zk_wt *P, const zk_wt *H, int tr, int tc, int kend)
{
    zk_atc_a fa;
    zk_atc_brow fb;
    for (int kk = 0; kk < kend; kk++) {
        wm::load_matrix_sync(fa, P + tr * 16 * ZK_ATC_PP + kk * 16, ZK_ATC_PP);
        wm::load_matrix_sync(fb, H + kk * 16 * ZK_ATC_P16 + tc * 16, ZK_ATC_P16);
        wm::mma_sync(acc, fa, fb, acc);
    }
}

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

/* ------------------------------------------------------------------ forward */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_forward(zk_io *y, float *lse, const zk_io *qkv)
{
    ZK_ATC_SMEM(smem, ZK_ATC_FWD_SMEM);
    zk_wt *Qs = (zk_wt *)smem, *Ks = (zk_wt *)(smem + ZK_ATC_T16), *Vs = (zk_wt *)(smem + 2 * ZK_ATC_T16);
    float *Sf = (float *)(smem + 3 * ZK_ATC_T16);
    zk_wt *Ps = (zk_wt *)(smem + 3 * ZK_ATC_T16 + ZK_ATC_TS);
    float *Of = (float *)(smem + 3 * ZK_ATC_T16 + ZK_ATC_TS + ZK_ATC_TP);
    const int q0 = blockIdx.x * ZK_ATC_BQ, h = blockIdx.y, b = blockIdx.z, warp = threadIdx.x / 32;
    const int r = threadIdx.x / 4, qd = threadIdx.x % 4, i = q0 + r;   /* this thread's row */
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    const float scale = rsqrtf((float)ZK_ATC_HS);
    float m = zk_neg_inf(), l = 0.0f;
    zk_atc_stage(Qs, seq, 0, h, q0);
    for (int d = qd; d < ZK_ATC_HP; d += 4) Of[r * ZK_ATC_OP + d] = 0.0f;
    const int last = zk_mini(q0 + ZK_ATC_BQ, ZK_T) - 1;
    for (int k0 = 0; k0 <= last; k0 += ZK_ATC_BK) {
        __syncthreads();                        /* the previous tile's K, V, P are no longer read */
        zk_atc_stage(Ks, seq, 1, h, k0);
        zk_atc_stage(Vs, seq, 2, h, k0);
        __syncthreads();
        for (int t = warp; t < 16; t += ZK_ATC_NW) {
            int tr = t / 4, tc = t % 4;
            if (k0 + tc * 16 <= q0 + tr * 16 + 15) zk_atc_abt(Sf, Qs, Ks, tr, tc);
        }
        __syncthreads();
        float s[16], mx = zk_neg_inf();
        for (int k = 0; k < 16; k++) {
            int c = qd + 4 * k, j = k0 + c;
            s[k] = j <= i && i < ZK_T ? Sf[r * ZK_ATC_SP + c] * scale : zk_neg_inf();
            mx = zk_maxf(mx, s[k]);
        }
        float mn = zk_maxf(m, zk_atc_max4(mx));
        float mref = zk_finite(mn) ? mn : 0.0f;  /* a row with no key yet (only rows past T) */
        float corr = expf(m - mref), ps = 0.0f;
        for (int k = 0; k < 16; k++) {
            float p = expf(s[k] - mref);
            ps += p;
            zk_atc_st16(Ps + r * ZK_ATC_PP + qd + 4 * k, p);
        }
        l = l * corr + zk_atc_sum4(ps);
        m = mn;
        for (int d = qd; d < ZK_ATC_HP; d += 4) Of[r * ZK_ATC_OP + d] *= corr;
        __syncthreads();
        for (int t = warp; t < 4 * (ZK_ATC_HP / 16); t += ZK_ATC_NW) {
            int tr = t / (ZK_ATC_HP / 16), tc = t % (ZK_ATC_HP / 16);
            int kend = zk_mini(4, (q0 + tr * 16 + 15 - k0) / 16 + 1);   /* key sub-tiles not all masked */
            zk_atc_acc acc;
            wm::load_matrix_sync(acc, Of + tr * 16 * ZK_ATC_OP + tc * 16, ZK_ATC_OP, wm::mem_row_major);
            zk_atc_ph(acc, Ps, Vs, tr, tc, kend);
            wm::store_matrix_sync(Of + tr * 16 * ZK_ATC_OP + tc * 16, acc, ZK_ATC_OP, wm::mem_row_major);
        }
    }
    __syncthreads();
    if (i >= ZK_T) return;
    for (int d = qd; d < ZK_ATC_HS; d += 4)
        zk_st(y + ((long)b * ZK_T + i) * ZK_C + h * ZK_ATC_HS + d, Of[r * ZK_ATC_OP + d] / l);
    if (qd == 0) lse[((long)b * ZK_NH + h) * ZK_T + i] = m + logf(l);
}

/* ------------------------------------------------------------------ backward */
/* Fragments (dq, dk, dv tiles) a warp owns: tiles t = warp + NW u of the 64 x HP output. */
#define ZK_ATC_NOUT (4 * (ZK_ATC_HP / 16))
#define ZK_ATC_NOWN CEIL_DIV(ZK_ATC_NOUT, ZK_ATC_NW)

/* The dq part of dqkv and Dbuf = rowsum(dy * y). */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_backward_dq(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y, const zk_io *dy,
                            const float *lse)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DQ_SMEM);
    zk_wt *Qs = (zk_wt *)smem, *dYs = (zk_wt *)(smem + ZK_ATC_T16);
    zk_wt *Ks = (zk_wt *)(smem + 2 * ZK_ATC_T16), *Vs = (zk_wt *)(smem + 3 * ZK_ATC_T16);
    float *Sf = (float *)(smem + 4 * ZK_ATC_T16), *dPf = (float *)(smem + 4 * ZK_ATC_T16 + ZK_ATC_TS);
    zk_wt *dSs = (zk_wt *)(smem + 4 * ZK_ATC_T16 + 2 * ZK_ATC_TS);
    const int q0 = blockIdx.x * ZK_ATC_BQ, h = blockIdx.y, b = blockIdx.z, warp = threadIdx.x / 32;
    const int r = threadIdx.x / 4, qd = threadIdx.x % 4, i = q0 + r;
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    const float scale = rsqrtf((float)ZK_ATC_HS);
    zk_atc_stage(Qs, seq, 0, h, q0);
    zk_atc_stage(dYs, dy + (long)b * ZK_T * ZK_C, -1, h, q0);
    float Drow = 0.0f, L = 0.0f;
    for (int d = qd; d < ZK_ATC_HS && i < ZK_T; d += 4)
        Drow += zk_ld(dy + ((long)b * ZK_T + i) * ZK_C + h * ZK_ATC_HS + d)
              * zk_ld(y + ((long)b * ZK_T + i) * ZK_C + h * ZK_ATC_HS + d);
    Drow = zk_atc_sum4(Drow);
    if (i < ZK_T) {
        L = lse[((long)b * ZK_NH + h) * ZK_T + i];
        if (qd == 0) Dbuf[((long)b * ZK_NH + h) * ZK_T + i] = Drow;
    }
    zk_atc_acc acc[ZK_ATC_NOWN];
    for (int u = 0; u < ZK_ATC_NOWN; u++) wm::fill_fragment(acc[u], 0.0f);
    const int last = zk_mini(q0 + ZK_ATC_BQ, ZK_T) - 1;
    for (int k0 = 0; k0 <= last; k0 += ZK_ATC_BK) {
        __syncthreads();
        zk_atc_stage(Ks, seq, 1, h, k0);
        zk_atc_stage(Vs, seq, 2, h, k0);
        __syncthreads();
        for (int t = warp; t < 32; t += ZK_ATC_NW) {    /* 16 tiles of S, then 16 of dP */
            int tr = (t % 16) / 4, tc = t % 4;
            if (k0 + tc * 16 > q0 + tr * 16 + 15) continue;
            if (t < 16) zk_atc_abt(Sf, Qs, Ks, tr, tc);
            else zk_atc_abt(dPf, dYs, Vs, tr, tc);
        }
        __syncthreads();
        for (int k = 0; k < 16; k++) {
            int c = qd + 4 * k, j = k0 + c;
            float ds = 0.0f;
            if (j <= i && i < ZK_T)
                ds = expf(Sf[r * ZK_ATC_SP + c] * scale - L) * (dPf[r * ZK_ATC_SP + c] - Drow);
            zk_atc_st16(dSs + r * ZK_ATC_PP + c, ds);
        }
        __syncthreads();
        for (int u = 0; u < ZK_ATC_NOWN; u++) {
            int t = warp + ZK_ATC_NW * u, tr = t / (ZK_ATC_HP / 16), tc = t % (ZK_ATC_HP / 16);
            if (t < ZK_ATC_NOUT) zk_atc_ph(acc[u], dSs, Ks, tr, tc, zk_mini(4, (q0 + tr * 16 + 15 - k0) / 16 + 1));
        }
    }
    __syncthreads();                            /* Sf and dPf are free: dq goes out through them */
    float *Of = Sf;
    for (int u = 0; u < ZK_ATC_NOWN; u++) {
        int t = warp + ZK_ATC_NW * u, tr = t / (ZK_ATC_HP / 16), tc = t % (ZK_ATC_HP / 16);
        if (t >= ZK_ATC_NOUT) continue;
        for (int e = 0; e < acc[u].num_elements; e++) acc[u].x[e] *= scale;
        wm::store_matrix_sync(Of + tr * 16 * ZK_ATC_OP + tc * 16, acc[u], ZK_ATC_OP, wm::mem_row_major);
    }
    __syncthreads();
    if (i >= ZK_T) return;
    for (int d = qd; d < ZK_ATC_HS; d += 4)
        zk_st(dqkv + ((long)b * ZK_T + i) * 3 * ZK_C + h * ZK_ATC_HS + d, Of[r * ZK_ATC_OP + d]);
}

/* The dk and dv parts of dqkv; needs Dbuf from zd_attention_tc_backward_dq. */
ZK_KERNEL void __launch_bounds__(ZK_ATC_NT)
zd_attention_tc_backward_dkv(zk_io *dqkv, const zk_io *qkv, const zk_io *dy, const float *lse, const float *Dbuf)
{
    ZK_ATC_SMEM(smem, ZK_ATC_DKV_SMEM);
    zk_wt *Ks = (zk_wt *)smem, *Vs = (zk_wt *)(smem + ZK_ATC_T16);
    zk_wt *Qs = (zk_wt *)(smem + 2 * ZK_ATC_T16), *dYs = (zk_wt *)(smem + 3 * ZK_ATC_T16);
    float *Sf = (float *)(smem + 4 * ZK_ATC_T16), *dPf = (float *)(smem + 4 * ZK_ATC_T16 + ZK_ATC_TS);
    zk_wt *Ps = (zk_wt *)(smem + 4 * ZK_ATC_T16 + 2 * ZK_ATC_TS);
    zk_wt *dSs = (zk_wt *)(smem + 4 * ZK_ATC_T16 + 2 * ZK_ATC_TS + ZK_ATC_TP);
    float *Ls = (float *)(smem + 4 * ZK_ATC_T16 + 2 * ZK_ATC_TS + 2 * ZK_ATC_TP), *Ds = Ls + ZK_ATC_BQ;
    const int k0 = blockIdx.x * ZK_ATC_BK, h = blockIdx.y, b = blockIdx.z, warp = threadIdx.x / 32;
    const int r = threadIdx.x / 4, qd = threadIdx.x % 4, j = k0 + r;   /* this thread's key */
    const zk_io *seq = qkv + (long)b * ZK_T * 3 * ZK_C;
    const float scale = rsqrtf((float)ZK_ATC_HS);
    zk_atc_stage(Ks, seq, 1, h, k0);
    zk_atc_stage(Vs, seq, 2, h, k0);
    zk_atc_acc dk[ZK_ATC_NOWN], dv[ZK_ATC_NOWN];
    for (int u = 0; u < ZK_ATC_NOWN; u++) { wm::fill_fragment(dk[u], 0.0f); wm::fill_fragment(dv[u], 0.0f); }
    for (int q0 = k0; q0 < ZK_T; q0 += ZK_ATC_BQ) {   /* queries before k0 see none of these keys */
        __syncthreads();
        zk_atc_stage(Qs, seq, 0, h, q0);
        zk_atc_stage(dYs, dy + (long)b * ZK_T * ZK_C, -1, h, q0);
        if (threadIdx.x < ZK_ATC_BQ) {
            int i = q0 + threadIdx.x;
            Ls[threadIdx.x] = i < ZK_T ? lse[((long)b * ZK_NH + h) * ZK_T + i] : 0.0f;
            Ds[threadIdx.x] = i < ZK_T ? Dbuf[((long)b * ZK_NH + h) * ZK_T + i] : 0.0f;
        }
        __syncthreads();
        for (int t = warp; t < 32; t += ZK_ATC_NW) {    /* S^T (keys x queries), then dP^T */
            int tr = (t % 16) / 4, tc = t % 4;
            if (k0 + tr * 16 > q0 + tc * 16 + 15) continue;
            if (t < 16) zk_atc_abt(Sf, Ks, Qs, tr, tc);
            else zk_atc_abt(dPf, Vs, dYs, tr, tc);
        }
        __syncthreads();
        for (int k = 0; k < 16; k++) {
            int c = qd + 4 * k, i = q0 + c;
            float p = 0.0f, ds = 0.0f;
            if (j <= i && i < ZK_T) {
                p = expf(Sf[r * ZK_ATC_SP + c] * scale - Ls[c]);
                ds = p * (dPf[r * ZK_ATC_SP + c] - Ds[c]);
            }
            zk_atc_st16(Ps + r * ZK_ATC_PP + c, p);
            zk_atc_st16(dSs + r * ZK_ATC_PP + c, ds);
        }
        __syncthreads();
        for (int u = 0; u < ZK_ATC_NOWN; u++) {
            int t = warp + ZK_ATC_NW * u, tr = t / (ZK_ATC_HP / 16), tc = t % (ZK_ATC_HP / 16);
            if (t >= ZK_ATC_NOUT) continue;
            /* on the diagonal, query sub-tiles kk < tr see none of these keys */
            zk_atc_a fa;
            zk_atc_brow fb;
            for (int kk = q0 == k0 ? tr : 0; kk < 4; kk++) {
                wm::load_matrix_sync(fb, dYs + kk * 16 * ZK_ATC_P16 + tc * 16, ZK_ATC_P16);
                wm::load_matrix_sync(fa, Ps + tr * 16 * ZK_ATC_PP + kk * 16, ZK_ATC_PP);
                wm::mma_sync(dv[u], fa, fb, dv[u]);
                wm::load_matrix_sync(fb, Qs + kk * 16 * ZK_ATC_P16 + tc * 16, ZK_ATC_P16);
                wm::load_matrix_sync(fa, dSs + tr * 16 * ZK_ATC_PP + kk * 16, ZK_ATC_PP);
                wm::mma_sync(dk[u], fa, fb, dk[u]);
            }
        }
    }
    /* out through Sf and dPf: dk, then dv */
    float *Of = Sf;
    for (int part = 1; part <= 2; part++) {
        __syncthreads();
        for (int u = 0; u < ZK_ATC_NOWN; u++) {
            int t = warp + ZK_ATC_NW * u, tr = t / (ZK_ATC_HP / 16), tc = t % (ZK_ATC_HP / 16);
            if (t >= ZK_ATC_NOUT) continue;
            if (part == 1) for (int e = 0; e < dk[u].num_elements; e++) dk[u].x[e] *= scale;
            wm::store_matrix_sync(Of + tr * 16 * ZK_ATC_OP + tc * 16, part == 1 ? dk[u] : dv[u], ZK_ATC_OP,
                                  wm::mem_row_major);
        }
        __syncthreads();
        if (j >= ZK_T) continue;
        for (int d = qd; d < ZK_ATC_HS; d += 4)
            zk_st(dqkv + ((long)b * ZK_T + j) * 3 * ZK_C + part * ZK_C + h * ZK_ATC_HS + d, Of[r * ZK_ATC_OP + d]);
    }
}

/* ------------------------------------------------------------------ launchers */
#if ZK_HOST_LAUNCHERS
/* B sequences of ZK_T tokens; lse (B, NH, T) fp32. Dynamic shared memory above 48 KiB: the caller
** has raised the kernels' limit (cudaFuncSetAttribute / cuFuncSetAttribute) to ZK_ATC_*_SMEM. */
inline int zd_attention_tc_forward_launch(zk_io *y, float *lse, const zk_io *qkv, int B)
{
    dim3 grid = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    return ZK_LAUNCH(zd_attention_tc_forward, grid, ZK_ATC_NT, ZK_ATC_FWD_SMEM, y, lse, qkv);
}
inline int zd_attention_tc_backward_launch(zk_io *dqkv, float *Dbuf, const zk_io *qkv, const zk_io *y,
                                           const zk_io *dy, const float *lse, int B)
{
    dim3 g1 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BQ), (unsigned)ZK_NH, (unsigned)B};
    dim3 g2 = {(unsigned)CEIL_DIV(ZK_T, ZK_ATC_BK), (unsigned)ZK_NH, (unsigned)B};
    int rc = ZK_LAUNCH(zd_attention_tc_backward_dq, g1, ZK_ATC_NT, ZK_ATC_DQ_SMEM, dqkv, Dbuf, qkv, y, dy, lse);
    if (rc) return rc;
    return ZK_LAUNCH(zd_attention_tc_backward_dkv, g2, ZK_ATC_NT, ZK_ATC_DKV_SMEM, dqkv, qkv, dy, lse, Dbuf);
}
#endif
#endif /* ZK_ATC_ON */
