/*
** cuda_model.c — GPT-2 module by module on the device, on the compute stream: the zd_* kernels of
** cuda/kernels/ launched by name with the grids docs/CUDA.md states, and every matmul a row-major
** gemm. Biases of linear layers are one more gemm against a vector of ones (forward: ones(N,1) @ b;
** backward: db += ones(1,N) @ dy), so no extra kernel is needed. The math is the host kernels'
** (gpt2_host.h): same layouts ([in, out] weights), parameter gradients accumulate, dresidual carries
** dL/d(residual stream) backwards. Attention keeps lse (B, NH, T) instead of the T x T
** probabilities, so the device layout is smaller than the host's; the plan's "acts" / "scratch"
** regions are sized for it (gen/cuda_dec.c), the host's layout lives in the host backend's buffer.
** Precision is gen's decision (cuda/kernels/zk_shapes.h, gen/cuda_dec.c):
**   ZK_IO 0  fp32 activations, every matmul an fp32 sgemm (cuBLAS pedantic): the host's arithmetic;
**   ZK_IO 1  bf16 plans, ZK_IO 2 fp16 plans: activations in the plan's 16-bit dtype (the kernels'
**            zk_io), parameters read as the 16-bit working copy itself, every matmul zr_gpu_gemm_ex
**            on tensor cores (16-bit operands, fp32 compute, a 16-bit result rounded once, or an
**            fp32 result for parameter gradients, which accumulate
**            in the fp32 module gradient area); LayerNorm statistics, lse, D and the per-token losses
**            stay fp32 (docs/CUDA_TRAINER.md, the precision table). ZK_ATT_TC picks attention_tc.cu.
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
** CUDA graphs (docs/CUDA_TRAINER.md, CUDA graphs): a block's forward or backward is one graph launch
** on the compute stream once it has been seen twice with the same arguments (layer, parameter and
** gradient pointers, the epilogues in use): the first call runs uncaptured (cuBLASLt chooses its
** algorithms and allocates its workspace then), the second is captured and launched, later ones
** launch the cached graph. ZR_CUDA_GRAPHS=0 and sync-debug run every call uncaptured.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"
#include "../kernels/zk_shapes.h"
#include "../kernels/zk_colsum.h"
#include "zr_half.h"

#define N_ROWS (ZG_MICRO_BATCH * ZG_SEQ_LEN)
#define HS (ZG_D_MODEL / ZG_N_HEADS)
#define ATT_QT (4 * (HS > 128 ? 1 : 2))      /* attention.cu's ZK_ATT_QT */
/* Activation checkpointing (the plan's ZG_ACT_CKPT): one block area, which the forward and each
** recompute fill for the block at hand, and every block's output kept apart (CzDevActs.kept), which
** is the next block's input; without it, one area per block and the output is the area's residual3. */
#define N_AREAS (ZG_ACT_CKPT ? 1 : ZG_N_LAYERS)
#define CEIL(a, b) (((a) + (b) - 1) / (b))
#if ZK_IO == 1
#define ACT_DT ZR_DT_BF16
#define AB 2                                  /* bytes of an activation */
#elif ZK_IO == 2
#define ACT_DT ZR_DT_FP16
#define AB 2
#else
#define ACT_DT ZR_DT_FP32
#define AB 4
#endif
#if ZK_GEMM_EPI && (!ZK_IO || !ZG_MIXED)
#error "ZK_GEMM_EPI needs 16-bit activations and a module gradient area zeroed per BACKWARD (gen/cuda_dec.c)"
#endif

static void *take(char **cur, size_t n, size_t es)
{
    void *p = *cur;
    *cur += (n * es + 255) & ~(size_t)255;   /* 256-byte alignment for every array */
    return p;
}

static size_t layer_bytes(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF, al = 256;
    size_t lse = (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN;
    return 8 * (BTC * AB + al) + 4 * (BT * 4 + al) + (lse * 4 + al) + 2 * (BTF * AB + al) + 256;
}

static CzLayer layer(int l)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    char *cur = (char *)CZ.a.layers + (size_t)(ZG_ACT_CKPT ? 0 : l) * CZ.a.layer_bytes;
    CzLayer v;
    v.ln1 = take(&cur, BTC, AB); v.ln1_mean = take(&cur, BT, 4); v.ln1_rstd = take(&cur, BT, 4);
    v.qkv = take(&cur, 3 * BTC, AB); v.atty = take(&cur, BTC, AB);
    v.lse = take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN, 4);
    v.residual2 = take(&cur, BTC, AB);
    v.ln2 = take(&cur, BTC, AB); v.ln2_mean = take(&cur, BT, 4); v.ln2_rstd = take(&cur, BT, 4);
    v.fch = take(&cur, BTF, AB); v.fch_gelu = take(&cur, BTF, AB); v.residual3 = take(&cur, BTC, AB);
    if (ZG_ACT_CKPT) v.residual3 = (char *)CZ.a.kept + (size_t)l * CZ.a.kept_stride;
    return v;
}

/* Carves the device activations from the plan's regions (device addresses) and uploads the ones
** vector. Dies when the regions are too small (a plan from another zgen). */
void cz_acts_init(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    CzDevActs *a = &CZ.a;
    /* the plan's device regions, which gen sized for this carving (ZG_ACTS_BYTES, ZG_SCRATCH_BYTES) */
    char *acts = cz_dev(tr_region_named("acts")), *scratch = cz_dev(tr_region_named("scratch")), *cur = acts;
    a->encoded = take(&cur, BTC, AB);
    a->layer_bytes = layer_bytes();
    a->layers = take(&cur, N_AREAS * a->layer_bytes, 1);
    a->lnf = take(&cur, BTC, AB); a->lnf_mean = take(&cur, BT, 4); a->lnf_rstd = take(&cur, BT, 4);
    a->logits = take(&cur, BT * ZG_VOCAB_SIZE, AB);
    a->losses = take(&cur, BT, 4);
    a->kept_stride = (BTC * AB + 255) & ~(size_t)255;
    a->kept = ZG_ACT_CKPT ? take(&cur, ZG_N_LAYERS * a->kept_stride, 1) : NULL;
    a->acts_bytes = (size_t)(cur - acts);
    cur = scratch;
    a->dresidual = take(&cur, BTC, AB); a->dln = take(&cur, BTC, AB); a->dqkv = take(&cur, 3 * BTC, AB);
    a->datty = take(&cur, BTC, AB);
    a->dbuf = take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN, 4);
    a->dfch = take(&cur, BTF, AB); a->dfch_gelu = take(&cur, BTF, AB);
    a->ones = take(&cur, BT, AB);
    a->tokens = take(&cur, BT, 4);
    a->targets = take(&cur, BT, 4);
    a->colsum = take(&cur, (size_t)ZK_COLSUM_FLOATS(N_ROWS, ZG_D_MODEL, ZG_D_FF), 4);
    a->tok_buckets = take(&cur, ZK_TOKBUCKET_INTS(N_ROWS), 4);
    a->scratch_bytes = (size_t)(cur - scratch);
    if (a->acts_bytes != (size_t)ZG_ACTS_BYTES || a->scratch_bytes != (size_t)ZG_SCRATCH_BYTES)
        tr_die("device activations carved %zu/%zu bytes, but the plan's acts/scratch regions are %lld/%lld "
               "(gen/cuda_dec.c): regenerate with a matching zgen", a->acts_bytes, a->scratch_bytes,
               (long long)ZG_ACTS_BYTES, (long long)ZG_SCRATCH_BYTES);
    static float ones[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones[i] = 1.0f;
#if ZK_IO
    static uint16_t ones16[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones16[i] = ZK_IO == 1 ? zr_f32_to_bf16(ones[i]) : zr_f32_to_fp16(ones[i]);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, a->ones, ones16, sizeof ones16));
#else
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, a->ones, ones, sizeof ones));
#endif
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
}

/* ---------------------------------------------------------------------- launch helpers */
static void launch_sh(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, unsigned shmem,
                      void **args)
{
    const unsigned grid[3] = {gx, gy, gz}, blk[3] = {block, 1, 1};
    CZ_CHECK(zr_gpu_launch(CZ.compute, k, grid, blk, shmem, args));
}

static void launch(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args)
{
    launch_sh(k, gx, gy, gz, block, 0, args);
}

/* Footprints for the stand-in's race checker: what the next launch reads (w 0) or writes (w 1). The
** parameters are zk_io (AB bytes an element), gradients fp32. */
static void fp(const void *p, size_t bytes, int w)
{
    CZ_CHECK(zr_gpu_footprint(CZ.compute, p, bytes, w));
}
#define BTC_B ((size_t)N_ROWS * ZG_D_MODEL * AB)

/* The attention kernels' footprints: forward reads qkv and writes y (out) and lse (stat); backward
** reads qkv, y (dq only: NULL for dkv), dy, lse and writes dqkv (out) and reads/writes D (stat: dq
** writes, dkv reads). */
static void att_footprint(const void *qkv, int bwd, const void *y, const void *dy, void *out, float *stat)
{
    size_t btc = (size_t)N_ROWS * ZG_D_MODEL, nl = (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN * 4;
    CZ_CHECK(zr_gpu_footprint(CZ.compute, qkv, 3 * btc * AB, 0));
    if (y) CZ_CHECK(zr_gpu_footprint(CZ.compute, y, btc * AB, 0));
    if (dy) CZ_CHECK(zr_gpu_footprint(CZ.compute, dy, btc * AB, 0));
    CZ_CHECK(zr_gpu_footprint(CZ.compute, out, (bwd ? 3 : 1) * btc * AB, 1));
    CZ_CHECK(zr_gpu_footprint(CZ.compute, stat, nl, y || !bwd));
}

/* C = op(A) op(B) + beta C; A, B activations or parameters (the plan's working dtype with 16-bit
** activations), C an activation, or fp32 when c32 (parameter gradients). */
static void gemm(int ta, int tb, int M, int N, int K, const void *A, int lda, const void *B,
                 int ldb, float beta, void *C, int c32, int ldc)
{
#if ZK_IO
    CZ_CHECK(zr_gpu_gemm_ex(CZ.compute, ta, tb, M, N, K, 1.0f, A, ACT_DT, lda, B, ACT_DT, ldb, beta, C,
                            c32 ? ZR_DT_FP32 : ACT_DT, ldc, ZR_GPU_COMPUTE_32F));
#else
    (void)c32;
    CZ_CHECK(zr_gpu_sgemm(CZ.compute, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc));
#endif
}

/* gelu.cu's kernels, rows of d_ff: out = gelu(pre = pre + b) in place; dpre = dy * gelu'(pre);
** dbias += column sums of dpre. */
static void bias_gelu_fwd(void *out, void *pre, const void *b)
{
    const void *xx = pre;
    int n = N_ROWS;
    void *args[] = {&out, &pre, &xx, &b, &n, NULL};
    fp(xx, (size_t)N_ROWS * ZG_D_FF * AB, 0); fp(b, (size_t)ZG_D_FF * AB, 0);
    fp(pre, (size_t)N_ROWS * ZG_D_FF * AB, 1); fp(out, (size_t)N_ROWS * ZG_D_FF * AB, 1);
    launch("zd_bias_gelu_forward", CEIL((long)N_ROWS * ZG_D_FF, 256), 1, 1, 256, args);
}

static void gelu_bwd(void *dpre, const void *pre, const void *dy)
{
    int n = N_ROWS;
    void *a1[] = {&dpre, &pre, &dy, &n, NULL};
    fp(pre, (size_t)N_ROWS * ZG_D_FF * AB, 0); fp(dy, (size_t)N_ROWS * ZG_D_FF * AB, 0);
    fp(dpre, (size_t)N_ROWS * ZG_D_FF * AB, 1);
    launch("zd_gelu_backward", CEIL((long)N_ROWS * ZG_D_FF, 256), 1, 1, 256, a1);
}

#if !ZK_GEMM_EPI
static void bias_bwd(float *dbias, const void *dp)
{
    int n = N_ROWS;
    float *part = CZ.a.colsum;
    size_t part_b = (size_t)ZK_COL_CHUNKS(N_ROWS) * ZG_D_FF * 4;
    void *a2[] = {&part, &dp, &n, NULL};
    fp(dp, (size_t)N_ROWS * ZG_D_FF * AB, 0); fp(part, part_b, 1);
    launch("zd_bias_backward_part", CEIL(ZG_D_FF, ZK_COL_BLOCK), ZK_COL_CHUNKS(N_ROWS), 1, ZK_COL_BLOCK, a2);
    void *a3[] = {&dbias, &part, &n, NULL};
    fp(part, part_b, 0); fp(dbias, (size_t)ZG_D_FF * 4, 1);
    launch("zd_bias_backward_sum", CEIL(ZG_D_FF, ZK_COL_BLOCK), 1, 1, ZK_COL_BLOCK, a3);
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
    if (b) { gemm(0, 0, N_ROWS, out, 1, CZ.a.ones, 1, b, out, beta, y, 0, out); beta = 1.0f; }
    gemm(0, 0, N_ROWS, out, in, x, in, w, out, beta, y, 0, out);
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
        gemm(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, 1, out);
        if (db) gemm(0, 0, 1, out, N_ROWS, CZ.a.ones, N_ROWS, dy, out, 1.0f, db, 1, out);
    }
    if (pre && !gemm_lt(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, NULL, dx, in, ACT_DT, ZR_GPU_EPI_DGELU,
                        NULL, pre, in)) {
        /* unfused: dy @ w^T into dfch_gelu, then zd_gelu_backward into dx */
        void *g = CZ.a.dfch_gelu;
        gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, g, 0, in);
        gelu_bwd(dx, pre, g);
    } else if (!pre && dx) {
        gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, dx, 0, in);
    }
#else
    (void)pre;
    gemm(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, 1, out);
    if (db) gemm(0, 0, 1, out, N_ROWS, CZ.a.ones, N_ROWS, dy, out, 1.0f, db, 1, out);
    if (dx) gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, dx, 0, in);
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
    fp(x, BTC_B, 0); fp(w, ZG_D_MODEL * AB, 0); fp(b, ZG_D_MODEL * AB, 0);
    fp(y, BTC_B, 1); fp(mean, N_ROWS * 4, 1); fp(rstd, N_ROWS * 4, 1);
    launch("zd_layernorm_forward", CEIL(N_ROWS, 4), 1, 1, 128, args);
}

/* dx += LN backward; dw, db += */
static void layernorm_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
                          const void *w, const float *mean, const float *rstd)
{
    int n = N_ROWS;
    void *a1[] = {&dx, &dy, &x, &w, &mean, &rstd, &n, NULL};
    fp(dy, BTC_B, 0); fp(x, BTC_B, 0); fp(w, ZG_D_MODEL * AB, 0); fp(mean, N_ROWS * 4, 0);
    fp(rstd, N_ROWS * 4, 0); fp(dx, BTC_B, 1);
    launch("zd_layernorm_backward_dx", CEIL(N_ROWS, 4), 1, 1, 128, a1);
    float *part = CZ.a.colsum;
    size_t part_b = 2 * (size_t)ZK_COL_CHUNKS(N_ROWS) * ZG_D_MODEL * 4;
    void *a2[] = {&part, &dy, &x, &mean, &rstd, &n, NULL};
    fp(dy, BTC_B, 0); fp(x, BTC_B, 0); fp(mean, N_ROWS * 4, 0); fp(rstd, N_ROWS * 4, 0); fp(part, part_b, 1);
    launch("zd_layernorm_backward_dwdb_part", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), ZK_COL_CHUNKS(N_ROWS), 1,
           ZK_COL_BLOCK, a2);
    void *a3[] = {&dw, &db, &part, &n, NULL};
    fp(part, part_b, 0); fp(dw, ZG_D_MODEL * 4, 1); fp(db, ZG_D_MODEL * 4, 1);
    launch("zd_layernorm_backward_dwdb_sum", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), 1, 1, ZK_COL_BLOCK, a3);
}

/* ---------------------------------------------------------------------- batch */
void cz_upload_batch(int micro)
{
    memcpy(CZ.tok_h[micro], T.inputs, sizeof CZ.tok_h[micro]);
    memcpy(CZ.tgt_h[micro], T.targets, sizeof CZ.tgt_h[micro]);
    /* the wte gradient's grouping by token (encoder.cu): the data were checked against the vocabulary
    ** when opened (zr_data_check_vocab), so an id out of range here is this program's fault */
    if (zk_tok_buckets(CZ.tok_h[micro], N_ROWS, ZG_VOCAB_SIZE, CZ.tok_count, CZ.bkt_h[micro]) < 0)
        tr_die("internal: a token id of micro-step %d is outside the vocabulary of %d", micro, ZG_VOCAB_SIZE);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.tokens, CZ.tok_h[micro], sizeof CZ.tok_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.targets, CZ.tgt_h[micro], sizeof CZ.tgt_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.tok_buckets, CZ.bkt_h[micro], sizeof CZ.bkt_h[micro]));
}

/* ---------------------------------------------------------------------- forward */
void cz_embed_forward(int micro, const void *wte, const void *wpe)
{
    (void)micro;
    void *out = CZ.a.encoded;
    const int *tok = CZ.a.tokens;
    int n = N_ROWS;
    void *args[] = {&out, &tok, &wte, &wpe, &n, NULL};
    fp(tok, N_ROWS * 4, 0); fp(wte, (size_t)ZG_VOCAB_SIZE * ZG_D_MODEL * AB, 0);
    fp(wpe, (size_t)ZG_SEQ_LEN * ZG_D_MODEL * AB, 0); fp(out, BTC_B, 1);
    launch("zd_encoder_forward", CEIL((long)N_ROWS * ZG_D_MODEL, 256), 1, 1, 256, args);
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
        void *args[] = {&y, &lse, &qkv, NULL};
        att_footprint(qkv, 0, NULL, 0, y, lse);
#if ZK_ATT_TC
        launch_sh("zd_attention_tc_forward", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_FWD_SMEM, args);
#else
        launch("zd_attention_forward", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 128, args);
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

void cz_final_norm_forward(const void *w, const void *b)
{
    layernorm_fwd(CZ.a.lnf, CZ.a.lnf_mean, CZ.a.lnf_rstd, last_stream(), w, b);
}

/* logits = lnf @ wte^T; fused softmax cross-entropy (dlogits in place when write_grad); the
** per-token losses go to the host for the step's loss. */
void cz_head_forward(int micro, const void *wte, float dloss, int write_grad)
{
    gemm(0, 1, N_ROWS, ZG_VOCAB_SIZE, ZG_D_MODEL, CZ.a.lnf, ZG_D_MODEL, wte, ZG_D_MODEL, 0.0f,
         CZ.a.logits, 0, ZG_VOCAB_SIZE);
    void *lg = CZ.a.logits;
    float *ls = CZ.a.losses;
    const int *tg = CZ.a.targets;
    void *args[] = {&lg, &ls, &tg, &dloss, &write_grad, NULL};
    fp(tg, N_ROWS * 4, 0); fp(lg, (size_t)N_ROWS * ZG_VOCAB_SIZE * AB, 1); fp(ls, N_ROWS * 4, 1);
    launch("zd_crossentropy_fused", N_ROWS, 1, 1, 512, args);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2H, CZ.loss_h[micro], CZ.a.losses, sizeof CZ.loss_h[micro]));
    CZ_CHECK(zr_gpu_record(CZ.ev_loss[micro], CZ.compute));
    CZ.loss_pending[micro] = 1;
}

/* ---------------------------------------------------------------------- backward */
void cz_head_backward(const void *wte, float *dwte)
{
    gemm(0, 0, N_ROWS, ZG_D_MODEL, ZG_VOCAB_SIZE, CZ.a.logits, ZG_VOCAB_SIZE, wte, ZG_D_MODEL, 0.0f,
         CZ.a.dln, 0, ZG_D_MODEL);
    gemm(1, 0, ZG_VOCAB_SIZE, ZG_D_MODEL, N_ROWS, CZ.a.logits, ZG_VOCAB_SIZE, CZ.a.lnf, ZG_D_MODEL,
         1.0f, dwte, 1, ZG_D_MODEL);
}

void cz_final_norm_backward(const void *w, float *dw, float *db)
{
    CZ_CHECK(zr_gpu_memset(CZ.compute, CZ.a.dresidual, 0, (size_t)N_ROWS * ZG_D_MODEL * AB));
    layernorm_bwd(CZ.a.dresidual, dw, db, CZ.a.dln, last_stream(), w, CZ.a.lnf_mean, CZ.a.lnf_rstd);
}

static void block_backward(int l, const void *const *p, float *const *g)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    CzLayer v = layer(l);
    const void *x = l == 0 ? CZ.a.encoded : layer(l - 1).residual3;
    CzDevActs *a = &CZ.a;
    void *dres = a->dresidual;
    /* MLP */
#if ZK_GEMM_EPI
    /* dfch = (dres @ w^T) * gelu'(fch) in the projection's dx gemm; the fc bias gradient rides on
    ** the fc layer's dW gemm (BGRAD) */
    linear_bwd_epi(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], dres, a->dfch, g[ZG_LT_MLP_C_PROJ_WEIGHT],
                   g[ZG_LT_MLP_C_PROJ_BIAS], v.fch);
    linear_bwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], a->dfch, a->dln, g[ZG_LT_MLP_C_FC_WEIGHT],
               g[ZG_LT_MLP_C_FC_BIAS]);
#else
    linear_bwd(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], dres, a->dfch_gelu,
               g[ZG_LT_MLP_C_PROJ_WEIGHT], g[ZG_LT_MLP_C_PROJ_BIAS]);
    gelu_bwd(a->dfch, v.fch, a->dfch_gelu);
    bias_bwd(g[ZG_LT_MLP_C_FC_BIAS], a->dfch);
    linear_bwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], a->dfch, a->dln, g[ZG_LT_MLP_C_FC_WEIGHT], NULL);
#endif
    layernorm_bwd(dres, g[ZG_LT_LN_2_WEIGHT], g[ZG_LT_LN_2_BIAS], a->dln, v.residual2,
                  p[ZG_LT_LN_2_WEIGHT], v.ln2_mean, v.ln2_rstd);
    /* attention */
    linear_bwd(C, C, v.atty, p[ZG_LT_ATTN_C_PROJ_WEIGHT], dres, a->datty, g[ZG_LT_ATTN_C_PROJ_WEIGHT],
               g[ZG_LT_ATTN_C_PROJ_BIAS]);
    {
        void *dqkv = a->dqkv;
        float *D = a->dbuf;
        const void *qkv = v.qkv, *y = v.atty, *dy = a->datty;
        const float *lse = v.lse;
        void *a1[] = {&dqkv, &D, &qkv, &y, &dy, &lse, NULL};
        const float *Dc = a->dbuf;
        void *a2[] = {&dqkv, &qkv, &dy, &lse, &Dc, NULL};
#if ZK_ATT_TC
        att_footprint(qkv, 1, y, dy, dqkv, D);
        launch_sh("zd_attention_tc_backward_dq", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_DQ_SMEM, a1);
        att_footprint(qkv, 1, NULL, dy, dqkv, D);
        launch_sh("zd_attention_tc_backward_dkv", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                  ZK_ATT_TC_DKV_SMEM, a2);
#else
        att_footprint(qkv, 1, y, dy, dqkv, D);
        launch("zd_attention_backward_dq", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 128, a1);
        att_footprint(qkv, 1, NULL, dy, dqkv, D);
        launch("zd_attention_backward_dkv", CEIL(ZG_SEQ_LEN, 32), ZG_N_HEADS, ZG_MICRO_BATCH, 32, a2);
#endif
    }
    linear_bwd(C, 3 * C, v.ln1, p[ZG_LT_ATTN_C_ATTN_WEIGHT], a->dqkv, a->dln,
               g[ZG_LT_ATTN_C_ATTN_WEIGHT], g[ZG_LT_ATTN_C_ATTN_BIAS]);
    layernorm_bwd(dres, g[ZG_LT_LN_1_WEIGHT], g[ZG_LT_LN_1_BIAS], a->dln, x, p[ZG_LT_LN_1_WEIGHT],
                  v.ln1_mean, v.ln1_rstd);
}

void cz_embed_backward(float *dwte, float *dwpe)
{
    const int *bkt = CZ.a.tok_buckets;
    const void *dout = CZ.a.dresidual;
    int n = N_ROWS;
    void *a1[] = {&dwte, &bkt, &dout, &n, NULL};
    fp(bkt, ZK_TOKBUCKET_INTS(N_ROWS) * 4, 0); fp(dout, BTC_B, 0);
    fp(dwte, (size_t)ZG_VOCAB_SIZE * ZG_D_MODEL * 4, 1);
    launch("zd_encoder_backward_wte", N_ROWS, CEIL(ZG_D_MODEL, 256), 1, 256, a1);
    void *a2[] = {&dwpe, &dout, &n, NULL};
    fp(dout, BTC_B, 0); fp(dwpe, (size_t)ZG_SEQ_LEN * ZG_D_MODEL * 4, 1);
    launch("zd_encoder_backward_wpe", CEIL(ZG_SEQ_LEN * ZG_D_MODEL, 256), 1, 1, 256, a2);
}

/* ---------------------------------------------------------------------- graphs */
/* What a block's launches depend on beyond the compile-time shapes and CZ.a (fixed after
** cz_acts_init): the layer, the parameter and gradient pointers (ZeRO-3 gathers a layer's
** parameters into a slot: one graph per slot it is seen in), and the epilogues cuBLASLt serves. */
#define CZ_LT_N (ZG_LT_COUNT > 0 ? ZG_LT_COUNT : 1)
#define CZ_MAX_GRAPHS (8 * (ZG_N_LAYERS > 0 ? ZG_N_LAYERS : 1))
typedef struct {
    int bwd, l;                 /* bwd: 0 forward, 1 backward, 2 recompute */
    unsigned epi;
    const void *p[CZ_LT_N];
    float *g[CZ_LT_N];
} GraphKey;
typedef struct { GraphKey k; int runs; ZrGpuGraph *graph; } ModGraph;
static ModGraph mod_graphs[CZ_MAX_GRAPHS];
static int n_mod_graphs;

static int graphs_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("ZR_CUDA_GRAPHS");
        on = !(e && strcmp(e, "0") == 0) && !zr_gpu_sync_debug(CZ.gpu);   /* sync-debug: uncaptured */
    }
    return on;
}

static void block_direct(const GraphKey *k)
{
    if (k->bwd == 1) block_backward(k->l, k->p, k->g);
    else block_forward(k->l, k->p, k->bwd == 2);
}

/* The cache entry of k (made on first sight), or NULL when the cache is full (then uncaptured). */
static ModGraph *mod_graph(const GraphKey *k)
{
    for (int i = 0; i < n_mod_graphs; i++)
        if (memcmp(&mod_graphs[i].k, k, sizeof *k) == 0) return &mod_graphs[i];
    if (n_mod_graphs == CZ_MAX_GRAPHS) return NULL;
    ModGraph *m = &mod_graphs[n_mod_graphs++];
    memcpy(&m->k, k, sizeof *k);         /* with its padding, which memcmp compares */
    return m;
}

static void block_run(int bwd, int l, const void *const *p, float *const *g)
{
    GraphKey k;
    memset(&k, 0, sizeof k);             /* padding too: the key is compared as bytes */
    k.bwd = bwd;
    k.l = l;
#if ZK_GEMM_EPI
    for (int e = 0; e <= ZR_GPU_EPI_BGRAD; e++) k.epi |= (unsigned)epi_off[e] << e;
#endif
    for (int t = 0; t < ZG_LT_COUNT; t++) {
        k.p[t] = p[t];
        k.g[t] = g ? g[t] : NULL;
    }
    ModGraph *m = graphs_on() ? mod_graph(&k) : NULL;
    if (m && m->graph) {
        CZ_CHECK(zr_gpu_graph_launch(CZ.compute, m->graph));
        return;
    }
    if (!m || m->runs++ == 0) {          /* first sight: uncaptured */
        block_direct(&k);
        return;
    }
    CZ_CHECK(zr_gpu_capture_begin(CZ.compute));
    block_direct(&k);
    CZ_CHECK(zr_gpu_capture_end(CZ.compute, &m->graph));
    CZ_CHECK(zr_gpu_graph_launch(CZ.compute, m->graph));
}

void cz_block_forward(int l, const void *const *p, int recompute) { block_run(recompute ? 2 : 0, l, p, NULL); }
void cz_block_backward(int l, const void *const *p, float *const *g) { block_run(1, l, p, g); }
