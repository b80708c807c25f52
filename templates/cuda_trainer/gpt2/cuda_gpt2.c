/*
** cuda_gpt2.c — GPT-2's model adapter on the device (cuda_train.h's cz_* module calls; zgen emits it
** as the arch table's cuda_adapter): module by module on the compute stream, the zd_* kernels of
** cuda/kernels/ launched by name with the grids docs/CUDA.md states, and every matmul a row-major
** gemm (cuda_model.h has what the archs share: the head, the carving, launches, graphs). Biases of
** linear layers are one more gemm against a vector of ones (forward: ones(N,1) @ b; backward:
** db += ones(1,N) @ dy), so no extra kernel is needed. The math is the host kernels'
** (zk_host.h): same layouts ([in, out] weights), parameter gradients accumulate, dresidual carries
** dL/d(residual stream) backwards. Attention keeps lse (B, NH, T) instead of the T x T
** probabilities, so the device layout is smaller than the host's; the plan's "acts" / "scratch"
** regions are sized for it (gen/arch_gpt2.c's dev_* lists, gen/cuda_dec.c), the host's layout lives
** in the host backend's buffer. Precision is gen's decision (cuda_model.c's head comment);
** ZK_ATT_TC picks attention_tc.cu.
** ZK_GEMM_EPI (gen's decision: 16-bit plans whose d_ff is a multiple of 8) folds the biases, the
** residual adds and the GELU into the gemms (zr_gpu_gemm_lt; cuBLASLt epilogues on a GPU): forward
** y = x @ w + res + b is one gemm (C = the residual, D = the stream), the MLP's first layer writes
** gelu(x @ w + b) and keeps x @ w + b as the epilogue's aux; backward dW = x^T dy also writes the
** bias gradient (the column sums of dy: the area is zeroed before each BACKWARD, and the epilogue
** writes it), and the MLP projection's dx is dy @ w^T times gelu'(aux) in one gemm. Without it,
** each bias is a gemm against the ones vector, the residual a D2D copy plus beta 1, GELU a kernel.
** An epilogue that the GPU's cuBLASLt has no algorithm for (-ENOTSUP at its first call, in the
** first micro-step) is dropped for the rest of the run, said once: its call sites take the unfused
** sequence, which stays within the same error bounds (docs/CUDA_TRAINER.md, Fused GEMM epilogues).
** A block's calls go through cuda_model.c's graph cache with the epilogues in use as the variant.
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_model.h"
#include "../kernels/zk_attn_tiles.h"
#include "../kernels/zk_colsum.h"
#include "zr_half.h"

#define HS (ZG_D_MODEL / ZG_N_HEADS)
#define ATT_QT ZK_ATT_QT_OF(HS)               /* attention.cu's query rows per block */
#if ZK_GEMM_EPI && (!ZK_IO || !ZG_MIXED)
#error "ZK_GEMM_EPI needs 16-bit activations and a module gradient area zeroed per BACKWARD (gen/cuda_dec.c)"
#endif

#if ZK_ATT_TC
const char cz_attention_kernels[] = "attention_tc";
#else
const char cz_attention_kernels[] = "attention";
#endif

/* GPT-2's own arrays beside CzDevActs (gen/arch_gpt2.c dev_*). */
typedef struct {
    void *layers;               /* N_AREAS block areas of layer_bytes() */
    size_t layer_bytes;
    float *lnf_mean, *lnf_rstd;
    void *dqkv, *datty, *dfch, *dfch_gelu, *ones;
    float *dbuf;
} G2Acts;
static G2Acts G2;

typedef struct CzLayer {
    void *ln1, *qkv, *atty, *residual2, *ln2, *fch, *fch_gelu, *residual3;
    float *ln1_mean, *ln1_rstd, *lse, *ln2_mean, *ln2_rstd;
} CzLayer;

static size_t layer_bytes(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF, al = 256;
    size_t lse = (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN;
    /* each array with 256 bytes of slack, plus 256 (gen/cuda_dec.c's bound over gen/arch_gpt2.c's
    ** gpt2_dev_layer): five BTC arrays and qkv's one of 3 BTC */
    return 5 * (BTC * AB + al) + (3 * BTC * AB + al) + 4 * (BT * 4 + al) + (lse * 4 + al) + 2 * (BTF * AB + al) + 256;
}

static CzLayer layer(int l)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    char *cur = (char *)G2.layers + (size_t)(ZG_ACT_CKPT ? 0 : l) * G2.layer_bytes;
    CzLayer v;
    v.ln1 = cz_take(&cur, BTC, AB); v.ln1_mean = cz_take(&cur, BT, 4); v.ln1_rstd = cz_take(&cur, BT, 4);
    v.qkv = cz_take(&cur, 3 * BTC, AB); v.atty = cz_take(&cur, BTC, AB);
    v.lse = cz_take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN, 4);
    v.residual2 = cz_take(&cur, BTC, AB);
    v.ln2 = cz_take(&cur, BTC, AB); v.ln2_mean = cz_take(&cur, BT, 4); v.ln2_rstd = cz_take(&cur, BT, 4);
    v.fch = cz_take(&cur, BTF, AB); v.fch_gelu = cz_take(&cur, BTF, AB); v.residual3 = cz_take(&cur, BTC, AB);
    if (ZG_ACT_CKPT) v.residual3 = (char *)CZ.a.kept + (size_t)l * CZ.a.kept_stride;
    return v;
}

/* Carves the device activations from the plan's regions (device addresses) and uploads the ones
** vector. Dies when the regions are too small (a plan from another zgen). */
void cz_acts_init(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    CzDevActs *a = &CZ.a;
    char *acts, *scratch, *cur;
    G2.layer_bytes = layer_bytes();
    G2.layers = cz_carve_begin(&acts, &scratch, &cur, G2.layer_bytes);
    a->lnf = cz_take(&cur, BTC, AB); G2.lnf_mean = cz_take(&cur, BT, 4); G2.lnf_rstd = cz_take(&cur, BT, 4);
    a->logits = cz_take(&cur, BT * ZG_VOCAB_SIZE, AB);
    a->losses = cz_take(&cur, BT, 4);
    cz_carve_kept(&cur);
    char *acts_end = cur;
    cur = scratch;
    a->dresidual = cz_take(&cur, BTC, AB); a->dln = cz_take(&cur, BTC, AB); G2.dqkv = cz_take(&cur, 3 * BTC, AB);
    G2.datty = cz_take(&cur, BTC, AB);
    G2.dbuf = cz_take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN, 4);
    G2.dfch = cz_take(&cur, BTF, AB); G2.dfch_gelu = cz_take(&cur, BTF, AB);
    G2.ones = cz_take(&cur, BT, AB);
    a->pos_buckets = cz_take(&cur, ZK_TOKBUCKET_INTS(N_ROWS), 4);
    cz_carve_end(acts, acts_end, scratch, cur);
    static float ones[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones[i] = 1.0f;
#if ZK_IO
    static uint16_t ones16[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones16[i] = ZK_IO == 1 ? zr_f32_to_bf16(ones[i]) : zr_f32_to_fp16(ones[i]);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, G2.ones, ones16, sizeof ones16));
#else
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, G2.ones, ones, sizeof ones));
#endif
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
}

/* ---------------------------------------------------------------------- kernels */
/* The attention kernels' footprints: forward reads qkv and the positions and writes y (out) and lse
** (stat); backward reads qkv, y (dq only: NULL for dkv), dy, lse, the positions and writes dqkv (out)
** and reads/writes D (stat: dq writes, dkv reads). */
static void att_footprint(const void *qkv, int bwd, const void *y, const void *dy, void *out, float *stat)
{
    size_t btc = (size_t)N_ROWS * ZG_D_MODEL, nl = (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN * 4;
    CZ_CHECK(zr_gpu_footprint(CZ.compute, qkv, 3 * btc * AB, 0));
    CZ_CHECK(zr_gpu_footprint(CZ.compute, CZ.a.pos, N_ROWS * 4, 0));
    if (y) CZ_CHECK(zr_gpu_footprint(CZ.compute, y, btc * AB, 0));
    if (dy) CZ_CHECK(zr_gpu_footprint(CZ.compute, dy, btc * AB, 0));
    CZ_CHECK(zr_gpu_footprint(CZ.compute, out, (bwd ? 3 : 1) * btc * AB, 1));
    CZ_CHECK(zr_gpu_footprint(CZ.compute, stat, nl, y || !bwd));
}

/* gelu.cu's kernels, rows of d_ff: out = gelu(pre = pre + b) in place; dpre = dy * gelu'(pre);
** dbias += column sums of dpre. */
static void bias_gelu_fwd(void *out, void *pre, const void *b)
{
    const void *xx = pre;
    int n = N_ROWS;
    void *args[] = {&out, &pre, &xx, &b, &n, NULL};
    cz_fp(xx, (size_t)N_ROWS * ZG_D_FF * AB, 0); cz_fp(b, (size_t)ZG_D_FF * AB, 0);
    cz_fp(pre, (size_t)N_ROWS * ZG_D_FF * AB, 1); cz_fp(out, (size_t)N_ROWS * ZG_D_FF * AB, 1);
    cz_launch("zd_bias_gelu_forward", CEIL((long)N_ROWS * ZG_D_FF, 256), 1, 1, 256, args);
}

static void gelu_bwd(void *dpre, const void *pre, const void *dy)
{
    int n = N_ROWS;
    void *a1[] = {&dpre, &pre, &dy, &n, NULL};
    cz_fp(pre, (size_t)N_ROWS * ZG_D_FF * AB, 0); cz_fp(dy, (size_t)N_ROWS * ZG_D_FF * AB, 0);
    cz_fp(dpre, (size_t)N_ROWS * ZG_D_FF * AB, 1);
    cz_launch("zd_gelu_backward", CEIL((long)N_ROWS * ZG_D_FF, 256), 1, 1, 256, a1);
}

#if !ZK_GEMM_EPI
static void bias_bwd(float *dbias, const void *dp)
{
    int n = N_ROWS;
    float *part = CZ.a.colsum;
    size_t part_b = (size_t)ZK_COL_CHUNKS(N_ROWS) * ZG_D_FF * 4;
    void *a2[] = {&part, &dp, &n, NULL};
    cz_fp(dp, (size_t)N_ROWS * ZG_D_FF * AB, 0); cz_fp(part, part_b, 1);
    cz_launch("zd_bias_backward_part", CEIL(ZG_D_FF, ZK_COL_BLOCK), ZK_COL_CHUNKS(N_ROWS), 1, ZK_COL_BLOCK, a2);
    void *a3[] = {&dbias, &part, &n, NULL};
    cz_fp(part, part_b, 0); cz_fp(dbias, (size_t)ZG_D_FF * 4, 1);
    cz_launch("zd_bias_backward_sum", CEIL(ZG_D_FF, ZK_COL_BLOCK), 1, 1, ZK_COL_BLOCK, a3);
}
#endif

#if ZK_GEMM_EPI
static int epi_off[ZR_GPU_EPI_BGRAD + 1];     /* epilogues this GPU's cuBLASLt does not serve */

/* zr_gpu_gemm_lt on the compute stream; 0 when the epilogue is off (the caller runs the unfused
** sequence), 1 when done. */
static int gemm_lt(int ta, int tb, int M, int N, int K, const void *A, int lda, const void *B, int ldb,
                   float beta, const void *C, void *D, int ldd, ZrDtype dt, ZrGpuEpilogue epi, const void *bias,
                   void *aux, int ldaux)
{
    if (epi_off[epi]) return 0;
    int rc = zr_gpu_gemm_lt(CZ.compute, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, ACT_DT, beta, C, D, ldd, dt, epi,
                            (void *)bias, aux, ldaux);
    if (rc == -ENOTSUP) {
        epi_off[epi] = 1;
        if (T.rank == 0)
            fprintf(stderr, "train-cuda: warning: %s; that epilogue runs unfused for the rest of the run\n",
                    zr_gpu_strerror(CZ.gpu));
        return 0;
    }
    CZ_CHECK(rc);
    return 1;
}
#endif

/* y (N,out) = [copy of res +] x @ w + b */
static void linear_fwd(int in, int out, const void *x, const void *w, const void *b, void *y,
                       const void *res)
{
#if ZK_GEMM_EPI
    if (b && gemm_lt(0, 0, N_ROWS, out, in, x, in, w, out, res ? 1.0f : 0.0f, res, y, out, ACT_DT, ZR_GPU_EPI_BIAS,
                     b, NULL, 0))
        return;
#endif
    float beta = 0.0f;
    if (res) {
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, y, res, (size_t)N_ROWS * out * AB));
        beta = 1.0f;
    }
    if (b) { cz_gemm(0, 0, N_ROWS, out, 1, G2.ones, 1, b, out, beta, y, 0, out); beta = 1.0f; }
    cz_gemm(0, 0, N_ROWS, out, in, x, in, w, out, beta, y, 0, out);
}

/* dw (in,out) += x^T dy; db += colsum dy; dx (N,in) = dy w^T. With ZK_GEMM_EPI: db = colsum dy
** (written: the area was zeroed), and dx = (dy w^T) * gelu'(pre) when pre (the GELU's saved input,
** N x in) is given. */
static void linear_bwd_epi(int in, int out, const void *x, const void *w, const void *dy, void *dx,
                           float *dw, float *db, void *pre)
{
#if ZK_GEMM_EPI
    if (!db || !gemm_lt(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, dw, out, ZR_DT_FP32, ZR_GPU_EPI_BGRAD,
                        db, NULL, 0)) {
        cz_gemm(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, 1, out);
        if (db) cz_gemm(0, 0, 1, out, N_ROWS, G2.ones, N_ROWS, dy, out, 1.0f, db, 1, out);
    }
    if (pre && !gemm_lt(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, NULL, dx, in, ACT_DT, ZR_GPU_EPI_DGELU,
                        NULL, pre, in)) {
        /* unfused: dy @ w^T into dfch_gelu, then zd_gelu_backward into dx */
        void *g = G2.dfch_gelu;
        cz_gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, g, 0, in);
        gelu_bwd(dx, pre, g);
    } else if (!pre && dx) {
        cz_gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, dx, 0, in);
    }
#else
    (void)pre;
    cz_gemm(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, 1, out);
    if (db) cz_gemm(0, 0, 1, out, N_ROWS, G2.ones, N_ROWS, dy, out, 1.0f, db, 1, out);
    if (dx) cz_gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, dx, 0, in);
#endif
}

static void linear_bwd(int in, int out, const void *x, const void *w, const void *dy, void *dx,
                       float *dw, float *db)
{
    linear_bwd_epi(in, out, x, w, dy, dx, dw, db, NULL);
}

static void layernorm_fwd(void *y, float *mean, float *rstd, const void *x, const void *w,
                          const void *b)
{
    float eps = (float)ZG_NORM_EPS;
    int n = N_ROWS;
    void *args[] = {&y, &mean, &rstd, &x, &w, &b, &eps, &n, NULL};
    cz_fp(x, BTC_B, 0); cz_fp(w, ZG_D_MODEL * AB, 0); cz_fp(b, ZG_D_MODEL * AB, 0);
    cz_fp(y, BTC_B, 1); cz_fp(mean, N_ROWS * 4, 1); cz_fp(rstd, N_ROWS * 4, 1);
    cz_launch("zd_layernorm_forward", CEIL(N_ROWS, 4), 1, 1, 128, args);
}

/* dx += LN backward; dw, db += */
static void layernorm_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
                          const void *w, const float *mean, const float *rstd)
{
    int n = N_ROWS;
    void *a1[] = {&dx, &dy, &x, &w, &mean, &rstd, &n, NULL};
    cz_fp(dy, BTC_B, 0); cz_fp(x, BTC_B, 0); cz_fp(w, ZG_D_MODEL * AB, 0); cz_fp(mean, N_ROWS * 4, 0);
    cz_fp(rstd, N_ROWS * 4, 0); cz_fp(dx, BTC_B, 1);
    cz_launch("zd_layernorm_backward_dx", CEIL(N_ROWS, 4), 1, 1, 128, a1);
    float *part = CZ.a.colsum;
    size_t part_b = 2 * (size_t)ZK_COL_CHUNKS(N_ROWS) * ZG_D_MODEL * 4;
    void *a2[] = {&part, &dy, &x, &mean, &rstd, &n, NULL};
    cz_fp(dy, BTC_B, 0); cz_fp(x, BTC_B, 0); cz_fp(mean, N_ROWS * 4, 0); cz_fp(rstd, N_ROWS * 4, 0); cz_fp(part, part_b, 1);
    cz_launch("zd_layernorm_backward_dwdb_part", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), ZK_COL_CHUNKS(N_ROWS), 1,
           ZK_COL_BLOCK, a2);
    void *a3[] = {&dw, &db, &part, &n, NULL};
    cz_fp(part, part_b, 0); cz_fp(dw, ZG_D_MODEL * 4, 1); cz_fp(db, ZG_D_MODEL * 4, 1);
    cz_launch("zd_layernorm_backward_dwdb_sum", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), 1, 1, ZK_COL_BLOCK, a3);
}

/* ---------------------------------------------------------------------- forward */
/* p: wte, wpe (rows by each token's position in its document) */
void cz_embed_forward(int micro, const void *const *p)
{
    (void)micro;
    const void *wte = p[0], *wpe = p[1];
    void *out = CZ.a.encoded;
    const int *tok = CZ.a.tokens, *pos = CZ.a.pos;
    int n = N_ROWS;
    void *args[] = {&out, &tok, &pos, &wte, &wpe, &n, NULL};
    cz_fp(tok, N_ROWS * 4, 0); cz_fp(pos, N_ROWS * 4, 0); cz_fp(wte, (size_t)ZG_VOCAB_SIZE * ZG_D_MODEL * AB, 0);
    cz_fp(wpe, (size_t)ZG_SEQ_LEN * ZG_D_MODEL * AB, 0); cz_fp(out, BTC_B, 1);
    cz_launch("zd_encoder_forward", CEIL((long)N_ROWS * ZG_D_MODEL, 256), 1, 1, 256, args);
}

/* recompute: activation checkpointing's rebuild before the backward, which stops before the MLP
** projection: its only product is the block's output, kept already and read by no backward. */
static void block_forward(int l, const void *const *p, int recompute)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    CzLayer v = layer(l);
    const void *x = l == 0 ? CZ.a.encoded : layer(l - 1).residual3;
    layernorm_fwd(v.ln1, v.ln1_mean, v.ln1_rstd, x, p[ZG_LT_LN_1_WEIGHT], p[ZG_LT_LN_1_BIAS]);
    linear_fwd(C, 3 * C, v.ln1, p[ZG_LT_ATTN_C_ATTN_WEIGHT], p[ZG_LT_ATTN_C_ATTN_BIAS], v.qkv, NULL);
    {
        void *y = v.atty;
        float *lse = v.lse;
        const void *qkv = v.qkv;
        const int *pos = CZ.a.pos;
        void *args[] = {&y, &lse, &qkv, &pos, NULL};
        att_footprint(qkv, 0, NULL, 0, y, lse);
#if ZK_ATT_TC
        cz_launch_sh("zd_attention_tc_forward", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_FWD_SMEM, args);
#else
        cz_launch("zd_attention_forward", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 32 * ZK_ATT_NW, args);
#endif
    }
    linear_fwd(C, C, v.atty, p[ZG_LT_ATTN_C_PROJ_WEIGHT], p[ZG_LT_ATTN_C_PROJ_BIAS], v.residual2, x);
    layernorm_fwd(v.ln2, v.ln2_mean, v.ln2_rstd, v.residual2, p[ZG_LT_LN_2_WEIGHT], p[ZG_LT_LN_2_BIAS]);
#if ZK_GEMM_EPI
    /* fch = ln2 @ w + b (the aux), fch_gelu = gelu of it: one gemm */
    if (!gemm_lt(0, 0, N_ROWS, F, C, v.ln2, C, p[ZG_LT_MLP_C_FC_WEIGHT], F, 0.0f, NULL, v.fch_gelu, F, ACT_DT,
                 ZR_GPU_EPI_GELU_BIAS, p[ZG_LT_MLP_C_FC_BIAS], v.fch, F))
#endif
    {
        linear_fwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], NULL, v.fch, NULL);
        bias_gelu_fwd(v.fch_gelu, v.fch, p[ZG_LT_MLP_C_FC_BIAS]);
    }
    if (recompute) return;
    linear_fwd(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], p[ZG_LT_MLP_C_PROJ_BIAS], v.residual3,
               v.residual2);
}

static const void *last_stream(void)
{
    return ZG_N_LAYERS ? layer(ZG_N_LAYERS - 1).residual3 : CZ.a.encoded;
}

void cz_final_norm_forward(const void *const *p)
{
    layernorm_fwd(CZ.a.lnf, G2.lnf_mean, G2.lnf_rstd, last_stream(), p[0], p[1]);
}

/* ---------------------------------------------------------------------- backward */
void cz_final_norm_backward(const void *const *p, float *const *g)
{
    CZ_CHECK(zr_gpu_memset(CZ.compute, CZ.a.dresidual, 0, BTC_B));
    layernorm_bwd(CZ.a.dresidual, g[0], g[1], CZ.a.dln, last_stream(), p[0], G2.lnf_mean, G2.lnf_rstd);
}

static void block_backward(int l, const void *const *p, float *const *g)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    CzLayer v = layer(l);
    const void *x = l == 0 ? CZ.a.encoded : layer(l - 1).residual3;
    CzDevActs *a = &CZ.a;
    G2Acts *a2 = &G2;
    void *dres = a->dresidual;
    /* MLP */
#if ZK_GEMM_EPI
    /* dfch = (dres @ w^T) * gelu'(fch) in the projection's dx gemm; the fc bias gradient rides on
    ** the fc layer's dW gemm (BGRAD) */
    linear_bwd_epi(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], dres, a2->dfch, g[ZG_LT_MLP_C_PROJ_WEIGHT],
                   g[ZG_LT_MLP_C_PROJ_BIAS], v.fch);
    linear_bwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], a2->dfch, a->dln, g[ZG_LT_MLP_C_FC_WEIGHT],
               g[ZG_LT_MLP_C_FC_BIAS]);
#else
    linear_bwd(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], dres, a2->dfch_gelu,
               g[ZG_LT_MLP_C_PROJ_WEIGHT], g[ZG_LT_MLP_C_PROJ_BIAS]);
    gelu_bwd(a2->dfch, v.fch, a2->dfch_gelu);
    bias_bwd(g[ZG_LT_MLP_C_FC_BIAS], a2->dfch);
    linear_bwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], a2->dfch, a->dln, g[ZG_LT_MLP_C_FC_WEIGHT], NULL);
#endif
    layernorm_bwd(dres, g[ZG_LT_LN_2_WEIGHT], g[ZG_LT_LN_2_BIAS], a->dln, v.residual2,
                  p[ZG_LT_LN_2_WEIGHT], v.ln2_mean, v.ln2_rstd);
    /* attention */
    linear_bwd(C, C, v.atty, p[ZG_LT_ATTN_C_PROJ_WEIGHT], dres, a2->datty, g[ZG_LT_ATTN_C_PROJ_WEIGHT],
               g[ZG_LT_ATTN_C_PROJ_BIAS]);
    {
        void *dqkv = a2->dqkv;
        float *D = a2->dbuf;
        const void *qkv = v.qkv, *y = v.atty, *dy = a2->datty;
        const float *lse = v.lse;
        const int *pos = a->pos;
        void *a1[] = {&dqkv, &D, &qkv, &y, &dy, &lse, &pos, NULL};
        const float *Dc = a2->dbuf;
        void *a2[] = {&dqkv, &qkv, &dy, &lse, &Dc, &pos, NULL};
#if ZK_ATT_TC
        att_footprint(qkv, 1, y, dy, dqkv, D);
        cz_launch_sh("zd_attention_tc_backward_dq", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_DQ_SMEM, a1);
        att_footprint(qkv, 1, NULL, dy, dqkv, D);
        cz_launch_sh("zd_attention_tc_backward_dkv", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_DKV_SMEM, a2);
#else
        att_footprint(qkv, 1, y, dy, dqkv, D);
        cz_launch("zd_attention_backward_dq", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 32 * ZK_ATT_NW, a1);
        att_footprint(qkv, 1, NULL, dy, dqkv, D);
        cz_launch("zd_attention_backward_dkv", CEIL(ZG_SEQ_LEN, ZK_ATT_KT), ZG_N_HEADS, ZG_MICRO_BATCH, 32, a2);
#endif
    }
    linear_bwd(C, 3 * C, v.ln1, p[ZG_LT_ATTN_C_ATTN_WEIGHT], a2->dqkv, a->dln,
               g[ZG_LT_ATTN_C_ATTN_WEIGHT], g[ZG_LT_ATTN_C_ATTN_BIAS]);
    layernorm_bwd(dres, g[ZG_LT_LN_1_WEIGHT], g[ZG_LT_LN_1_BIAS], a->dln, x, p[ZG_LT_LN_1_WEIGHT],
                  v.ln1_mean, v.ln1_rstd);
}

/* g: dwte, dwpe (each position's rows grouped at the upload: CZ.a.pos_buckets) */
void cz_embed_backward(float *const *g)
{
    cz_token_table_backward(g[0]);
    float *dwpe = g[1];
    const int *pbkt = CZ.a.pos_buckets;
    const void *dout = CZ.a.dresidual;
    int n = N_ROWS;
    void *a2[] = {&dwpe, &pbkt, &dout, &n, NULL};
    cz_fp(pbkt, ZK_TOKBUCKET_INTS(N_ROWS) * 4, 0); cz_fp(dout, BTC_B, 0);
    cz_fp(dwpe, (size_t)ZG_SEQ_LEN * ZG_D_MODEL * 4, 1);
    cz_launch("zd_encoder_backward_wpe", ZG_SEQ_LEN, CEIL(ZG_D_MODEL, 256), 1, 256, a2);
}

/* ---------------------------------------------------------------------- graphs */
static void block_direct(int bwd, int l, const void *const *p, float *const *g)
{
    if (bwd == 1) block_backward(l, p, g);
    else block_forward(l, p, bwd == 2);
}

/* the epilogues this GPU's cuBLASLt serves: a graph captured with one is not replayed without it */
static unsigned variant(void)
{
    unsigned v = 0;
#if ZK_GEMM_EPI
    for (int e = 0; e <= ZR_GPU_EPI_BGRAD; e++) v |= (unsigned)epi_off[e] << e;
#endif
    return v;
}

void cz_block_forward(int l, const void *const *p, int recompute)
{
    cz_block_run(recompute ? 2 : 0, l, p, NULL, variant(), block_direct);
}
void cz_block_backward(int l, const void *const *p, float *const *g) { cz_block_run(1, l, p, g, variant(), block_direct); }
