/*
** cuda_model.c — GPT-2 module by module on the device, on the compute stream: the zd_* kernels of
** cuda/kernels/ launched by name with the grids docs/CUDA.md states, and every matmul a row-major
** sgemm (cuBLAS on a GPU). Biases of linear layers are one more gemm against a vector of ones
** (forward: ones(N,1) @ b; backward: db += ones(1,N) @ dy), so no extra kernel is needed.
** The math is the host kernels' (gpt2_host.h): same layouts ([in, out] weights), parameter
** gradients accumulate, dresidual carries dL/d(residual stream) backwards. Activations are fp32
** (ZK_IO 0); attention keeps lse (B, NH, T) instead of the T x T probabilities, so the device
** layout is smaller than the host's and fits the plan's "acts" / "scratch" regions.
*/
#include <math.h>
#include <string.h>

#include "cuda_train.h"

#define N_ROWS (ZG_MICRO_BATCH * ZG_SEQ_LEN)
#define HS (ZG_D_MODEL / ZG_N_HEADS)
#define ATT_QT (4 * (HS > 128 ? 1 : 2))      /* attention.cu's ZK_ATT_QT */
#define CEIL(a, b) (((a) + (b) - 1) / (b))

static float *take(float **cur, size_t n)
{
    float *p = *cur;
    *cur += (n + 63) & ~(size_t)63;          /* 256-byte alignment for every array */
    return p;
}

static size_t layer_floats(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF, al = 64;
    size_t lse = (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN;
    return 8 * (BTC + al) + 4 * (BT + al) + (lse + al) + 2 * (BTF + al) + 64;
}

static CzLayer layer(int l)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    float *cur = CZ.a.layers + (size_t)l * CZ.a.layer_floats;
    CzLayer v;
    v.ln1 = take(&cur, BTC); v.ln1_mean = take(&cur, BT); v.ln1_rstd = take(&cur, BT);
    v.qkv = take(&cur, 3 * BTC); v.atty = take(&cur, BTC);
    v.lse = take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN);
    v.residual2 = take(&cur, BTC);
    v.ln2 = take(&cur, BTC); v.ln2_mean = take(&cur, BT); v.ln2_rstd = take(&cur, BT);
    v.fch = take(&cur, BTF); v.fch_gelu = take(&cur, BTF); v.residual3 = take(&cur, BTC);
    return v;
}

/* Carves the device activations from the plan's regions (device addresses) and uploads the ones
** vector. Dies when the regions are too small (a plan from another zgen). */
void cz_acts_init(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF;
    CzDevActs *a = &CZ.a;
    float *acts = cz_dev(T.acts), *scratch = cz_dev(T.scratch), *cur = acts;
    a->encoded = take(&cur, BTC);
    a->layer_floats = layer_floats();
    a->layers = take(&cur, ZG_N_LAYERS * a->layer_floats);
    a->lnf = take(&cur, BTC); a->lnf_mean = take(&cur, BT); a->lnf_rstd = take(&cur, BT);
    a->logits = take(&cur, BT * ZG_VOCAB_SIZE);
    a->losses = take(&cur, BT);
    a->acts_floats = (size_t)(cur - acts);
    cur = scratch;
    a->dresidual = take(&cur, BTC); a->dln = take(&cur, BTC); a->dqkv = take(&cur, 3 * BTC);
    a->datty = take(&cur, BTC);
    a->dbuf = take(&cur, (size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN);
    a->dfch = take(&cur, BTF); a->dfch_gelu = take(&cur, BTF);
    a->ones = take(&cur, BT);
    a->tokens = (int *)take(&cur, BT);
    a->targets = (int *)take(&cur, BT);
    a->scratch_floats = (size_t)(cur - scratch);
    if (a->acts_floats * 4 > (size_t)tr_model_acts_floats(ZG_N_LAYERS) * 4 ||
        a->scratch_floats * 4 > (size_t)tr_model_scratch_floats() * 4)
        tr_die("device activations (%zu/%zu bytes) exceed the plan's acts/scratch regions",
               a->acts_floats * 4, a->scratch_floats * 4);
    static float ones[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones[i] = 1.0f;
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, a->ones, ones, sizeof ones));
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
}

/* ---------------------------------------------------------------------- launch helpers */
static void launch(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args)
{
    const unsigned grid[3] = {gx, gy, gz}, blk[3] = {block, 1, 1};
    CZ_CHECK(zr_gpu_launch(CZ.compute, k, grid, blk, 0, args));
}

static void gemm(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc)
{
    CZ_CHECK(zr_gpu_sgemm(CZ.compute, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc));
}

/* y (N,out) = [copy of res +] x @ w + b */
static void linear_fwd(int in, int out, const float *x, const float *w, const float *b, float *y,
                       const float *res)
{
    float beta = 0.0f;
    if (res) {
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, y, res, (size_t)N_ROWS * out * 4));
        beta = 1.0f;
    }
    if (b) { gemm(0, 0, N_ROWS, out, 1, CZ.a.ones, 1, b, out, beta, y, out); beta = 1.0f; }
    gemm(0, 0, N_ROWS, out, in, x, in, w, out, beta, y, out);
}

/* dw (in,out) += x^T dy; db += colsum dy; dx (N,in) = dy w^T */
static void linear_bwd(int in, int out, const float *x, const float *w, const float *dy, float *dx,
                       float *dw, float *db)
{
    gemm(1, 0, in, out, N_ROWS, x, in, dy, out, 1.0f, dw, out);
    if (db) gemm(0, 0, 1, out, N_ROWS, CZ.a.ones, N_ROWS, dy, out, 1.0f, db, out);
    if (dx) gemm(0, 1, N_ROWS, in, out, dy, out, w, out, 0.0f, dx, in);
}

static void layernorm_fwd(float *y, float *mean, float *rstd, const float *x, const float *w,
                          const float *b)
{
    float eps = (float)ZG_NORM_EPS;
    int n = N_ROWS;
    void *args[] = {&y, &mean, &rstd, &x, &w, &b, &eps, &n, NULL};
    launch("zd_layernorm_forward", CEIL(N_ROWS, 4), 1, 1, 128, args);
}

/* dx += LN backward; dw, db += */
static void layernorm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x,
                          const float *w, const float *mean, const float *rstd)
{
    int n = N_ROWS;
    void *a1[] = {&dx, &dy, &x, &w, &mean, &rstd, &n, NULL};
    launch("zd_layernorm_backward_dx", CEIL(N_ROWS, 4), 1, 1, 128, a1);
    void *a2[] = {&dw, &db, &dy, &x, &mean, &rstd, &n, NULL};
    launch("zd_layernorm_backward_dwdb", CEIL(ZG_D_MODEL, 64), 1, 1, 64, a2);
}

/* ---------------------------------------------------------------------- batch */
void cz_upload_batch(int micro)
{
    memcpy(CZ.tok_h[micro], T.inputs, sizeof CZ.tok_h[micro]);
    memcpy(CZ.tgt_h[micro], T.targets, sizeof CZ.tgt_h[micro]);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.tokens, CZ.tok_h[micro], sizeof CZ.tok_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.targets, CZ.tgt_h[micro], sizeof CZ.tgt_h[micro]));
}

/* ---------------------------------------------------------------------- forward */
void cz_embed_forward(int micro, const float *wte, const float *wpe)
{
    (void)micro;
    float *out = CZ.a.encoded;
    const int *tok = CZ.a.tokens;
    int n = N_ROWS;
    void *args[] = {&out, &tok, &wte, &wpe, &n, NULL};
    launch("zd_encoder_forward", CEIL((long)N_ROWS * ZG_D_MODEL, 256), 1, 1, 256, args);
}

void cz_block_forward(int l, const float *const *p)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    CzLayer v = layer(l);
    const float *x = l == 0 ? CZ.a.encoded : layer(l - 1).residual3;
    layernorm_fwd(v.ln1, v.ln1_mean, v.ln1_rstd, x, p[ZG_LT_LN_1_WEIGHT], p[ZG_LT_LN_1_BIAS]);
    linear_fwd(C, 3 * C, v.ln1, p[ZG_LT_ATTN_C_ATTN_WEIGHT], p[ZG_LT_ATTN_C_ATTN_BIAS], v.qkv, NULL);
    {
        float *y = v.atty, *lse = v.lse;
        const float *qkv = v.qkv;
        void *args[] = {&y, &lse, &qkv, NULL};
        launch("zd_attention_forward", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 128, args);
    }
    linear_fwd(C, C, v.atty, p[ZG_LT_ATTN_C_PROJ_WEIGHT], p[ZG_LT_ATTN_C_PROJ_BIAS], v.residual2, x);
    layernorm_fwd(v.ln2, v.ln2_mean, v.ln2_rstd, v.residual2, p[ZG_LT_LN_2_WEIGHT], p[ZG_LT_LN_2_BIAS]);
    linear_fwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], NULL, v.fch, NULL);
    {
        float *out = v.fch_gelu, *pre = v.fch;
        const float *xx = v.fch, *b = p[ZG_LT_MLP_C_FC_BIAS];
        int n = N_ROWS;
        void *args[] = {&out, &pre, &xx, &b, &n, NULL};
        launch("zd_bias_gelu_forward", CEIL((long)N_ROWS * F, 256), 1, 1, 256, args);
    }
    linear_fwd(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], p[ZG_LT_MLP_C_PROJ_BIAS], v.residual3,
               v.residual2);
}

static const float *last_stream(void)
{
    return ZG_N_LAYERS ? layer(ZG_N_LAYERS - 1).residual3 : CZ.a.encoded;
}

void cz_final_norm_forward(const float *w, const float *b)
{
    layernorm_fwd(CZ.a.lnf, CZ.a.lnf_mean, CZ.a.lnf_rstd, last_stream(), w, b);
}

/* logits = lnf @ wte^T; fused softmax cross-entropy (dlogits in place when write_grad); the
** per-token losses go to the host for the step's loss. */
void cz_head_forward(int micro, const float *wte, float dloss, int write_grad)
{
    gemm(0, 1, N_ROWS, ZG_VOCAB_SIZE, ZG_D_MODEL, CZ.a.lnf, ZG_D_MODEL, wte, ZG_D_MODEL, 0.0f,
         CZ.a.logits, ZG_VOCAB_SIZE);
    float *lg = CZ.a.logits, *ls = CZ.a.losses;
    const int *tg = CZ.a.targets;
    void *args[] = {&lg, &ls, &tg, &dloss, &write_grad, NULL};
    launch("zd_crossentropy_fused", N_ROWS, 1, 1, 512, args);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2H, CZ.loss_h[micro], CZ.a.losses, sizeof CZ.loss_h[micro]));
    CZ_CHECK(zr_gpu_record(CZ.ev_loss[micro], CZ.compute));
    CZ.loss_pending[micro] = 1;
}

/* ---------------------------------------------------------------------- backward */
void cz_head_backward(const float *wte, float *dwte)
{
    gemm(0, 0, N_ROWS, ZG_D_MODEL, ZG_VOCAB_SIZE, CZ.a.logits, ZG_VOCAB_SIZE, wte, ZG_D_MODEL, 0.0f,
         CZ.a.dln, ZG_D_MODEL);
    gemm(1, 0, ZG_VOCAB_SIZE, ZG_D_MODEL, N_ROWS, CZ.a.logits, ZG_VOCAB_SIZE, CZ.a.lnf, ZG_D_MODEL,
         1.0f, dwte, ZG_D_MODEL);
}

void cz_final_norm_backward(const float *w, float *dw, float *db)
{
    CZ_CHECK(zr_gpu_memset(CZ.compute, CZ.a.dresidual, 0, (size_t)N_ROWS * ZG_D_MODEL * 4));
    layernorm_bwd(CZ.a.dresidual, dw, db, CZ.a.dln, last_stream(), w, CZ.a.lnf_mean, CZ.a.lnf_rstd);
}

void cz_block_backward(int l, const float *const *p, float *const *g)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    CzLayer v = layer(l);
    const float *x = l == 0 ? CZ.a.encoded : layer(l - 1).residual3;
    CzDevActs *a = &CZ.a;
    float *dres = a->dresidual;
    /* MLP */
    linear_bwd(F, C, v.fch_gelu, p[ZG_LT_MLP_C_PROJ_WEIGHT], dres, a->dfch_gelu,
               g[ZG_LT_MLP_C_PROJ_WEIGHT], g[ZG_LT_MLP_C_PROJ_BIAS]);
    {
        float *dpre = a->dfch, *dbias = g[ZG_LT_MLP_C_FC_BIAS];
        const float *pre = v.fch, *dy = a->dfch_gelu;
        int n = N_ROWS;
        void *a1[] = {&dpre, &pre, &dy, &n, NULL};
        launch("zd_gelu_backward", CEIL((long)N_ROWS * F, 256), 1, 1, 256, a1);
        const float *dp = a->dfch;
        void *a2[] = {&dbias, &dp, &n, NULL};
        launch("zd_bias_backward", CEIL(F, 64), 1, 1, 64, a2);
    }
    linear_bwd(C, F, v.ln2, p[ZG_LT_MLP_C_FC_WEIGHT], a->dfch, a->dln, g[ZG_LT_MLP_C_FC_WEIGHT], NULL);
    layernorm_bwd(dres, g[ZG_LT_LN_2_WEIGHT], g[ZG_LT_LN_2_BIAS], a->dln, v.residual2,
                  p[ZG_LT_LN_2_WEIGHT], v.ln2_mean, v.ln2_rstd);
    /* attention */
    linear_bwd(C, C, v.atty, p[ZG_LT_ATTN_C_PROJ_WEIGHT], dres, a->datty, g[ZG_LT_ATTN_C_PROJ_WEIGHT],
               g[ZG_LT_ATTN_C_PROJ_BIAS]);
    {
        float *dqkv = a->dqkv, *D = a->dbuf;
        const float *qkv = v.qkv, *y = v.atty, *dy = a->datty, *lse = v.lse;
        void *a1[] = {&dqkv, &D, &qkv, &y, &dy, &lse, NULL};
        launch("zd_attention_backward_dq", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 128, a1);
        const float *Dc = a->dbuf;
        void *a2[] = {&dqkv, &qkv, &dy, &lse, &Dc, NULL};
        launch("zd_attention_backward_dkv", CEIL(ZG_SEQ_LEN, 32), ZG_N_HEADS, ZG_MICRO_BATCH, 32, a2);
    }
    linear_bwd(C, 3 * C, v.ln1, p[ZG_LT_ATTN_C_ATTN_WEIGHT], a->dqkv, a->dln,
               g[ZG_LT_ATTN_C_ATTN_WEIGHT], g[ZG_LT_ATTN_C_ATTN_BIAS]);
    layernorm_bwd(dres, g[ZG_LT_LN_1_WEIGHT], g[ZG_LT_LN_1_BIAS], a->dln, x, p[ZG_LT_LN_1_WEIGHT],
                  v.ln1_mean, v.ln1_rstd);
}

void cz_embed_backward(float *dwte, float *dwpe)
{
    const int *tok = CZ.a.tokens;
    const float *dout = CZ.a.dresidual;
    int n = N_ROWS;
    void *a1[] = {&dwte, &tok, &dout, &n, NULL};
    launch("zd_encoder_backward_wte", CEIL(ZG_D_MODEL, 64), 1, 1, 64, a1);
    void *a2[] = {&dwpe, &dout, &n, NULL};
    launch("zd_encoder_backward_wpe", CEIL(ZG_SEQ_LEN * ZG_D_MODEL, 256), 1, 1, 256, a2);
}
