/*
** cuda_llama.c — LLaMA's model adapter on the device (cuda_train.h's cz_* module calls; zgen emits it
** as the arch table's cuda_adapter): module by module on the compute stream, llama's kernels
** (rmsnorm.cu, rope.cu, swiglu.cu, attention_gqa_tc.cu or attention_gqa.cu; the token table through
** encoder.cu) and every matmul a row-major gemm; cuda_model.h has the rest (the head, the carving,
** launches, graphs).
** The math and its order are the host adapter's (templates/host/llama/llama_host.c): nn.Linear
** weights [out, in] (y = x W^T, no biases but qwen2's on q, k, v: ZG_QKV_BIAS), RMSNorm, RoPE in
** the rotate-half convention applied to q and k after their projections and biases (kept rotated;
** backward rotates the gradients back), grouped-query attention, SwiGLU, an untied or tied lm_head.
** Attention keeps lse (B, NH, T) instead of the T x T probabilities (FlashAttention's scheme), so
** the device layout is smaller than the host's; the plan's "acts" / "scratch" regions are sized for
** it (the arch file's dev_* lists, gen/arch_llama.c and arch_qwen2.c; gen/cuda_dec.c). Which attention runs is gen's decision, ZK_ATT_TC: on tensor cores
** (attention_gqa_tc.cu, WMMA) in 16-bit plans whose head size its tiling serves, else on CUDA cores
** in fp32 arithmetic (attention_gqa.cu: fp32 plans, and 16-bit ones with larger heads). The
** activations are the plan's dtype (16-bit, or fp32 in fp32 plans), the statistics and lse fp32,
** parameter gradients fp32 (cuda_model.c's precision comment). The linear layers use no cuBLASLt
** epilogue: without GELU, the residual adds are a D2D copy and beta 1, and the q, k, v biases one
** more gemm against a vector of ones as gpt2's unfused path (forward ones(N,1) @ b, backward
** db += ones(1,N) @ dy).
*/
#include <string.h>

#include "cuda_model.h"
#include "../kernels/zk_attn_tiles.h"
#include "../kernels/zk_colsum.h"
#include "zr_half.h"

#define HS (ZG_D_MODEL / ZG_N_HEADS)
#define KV (ZG_N_KV_HEADS * HS)                 /* width of k and v */
#define HALF (HS / 2)                           /* RoPE pairs per head */
#define BTKV_B ((size_t)N_ROWS * KV * AB)
#define BTF_B ((size_t)N_ROWS * ZG_D_FF * AB)
#define LSE_N ((size_t)ZG_MICRO_BATCH * ZG_N_HEADS * ZG_SEQ_LEN)
/* Elements per thread of rope.cu and swiglu.cu (their ZK_ROPE_EPT, ZK_SWIGLU_EPT): 8 with 16-bit
** storage where the row splits into 16-byte groups, else 1. */
#define ROPE_EPT (ZK_IO && HALF % 8 == 0 ? 8 : 1)
#define SWIGLU_EPT (ZK_IO && ZG_D_FF % 8 == 0 ? 8 : 1)
#define ATT_QT ZK_ATT_QT_OF(HS)                 /* attention_gqa.cu's query rows per block */

#if ZK_ATT_TC
const char cz_attention_kernels[] = "attention_gqa_tc";
#else
const char cz_attention_kernels[] = "attention_gqa";
#endif

/* llama's own arrays beside CzDevActs (gen/arch_llama.c dev_*). */
typedef struct {
    void *layers;               /* N_AREAS block areas of layer_bytes() */
    size_t layer_bytes;
    float *lnf_rstd;
    void *dq, *dk, *dv, *datty, *dgate, *dup, *dh;
    float *dbuf, *rope_cos, *rope_sin;
    void *ones;                 /* (N_ROWS) ones for the bias gemms (ZG_QKV_BIAS) */
} LlActs;
static LlActs LL;

typedef struct {
    void *ln1, *q, *k, *v, *atty, *residual2, *ln2, *gate, *up, *h, *residual3;
    float *ln1_rstd, *lse, *ln2_rstd;
} LlLayer;

/* An area's arrays each with 256 bytes of slack, plus 256 (gen/cuda_dec.c's bound). */
static size_t layer_bytes(void)
{
    size_t BT = N_ROWS, al = 256;
    return 6 * (BTC_B + al) + 2 * (BT * 4 + al) + 2 * (BTKV_B + al) + (LSE_N * 4 + al) + 3 * (BTF_B + al) + 256;
}

static LlLayer layer(int l)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF, BTKV = BT * KV;
    char *cur = (char *)LL.layers + (size_t)(ZG_ACT_CKPT ? 0 : l) * LL.layer_bytes;
    LlLayer v;
    v.ln1 = cz_take(&cur, BTC, AB); v.ln1_rstd = cz_take(&cur, BT, 4);
    v.q = cz_take(&cur, BTC, AB); v.k = cz_take(&cur, BTKV, AB); v.v = cz_take(&cur, BTKV, AB);
    v.atty = cz_take(&cur, BTC, AB); v.lse = cz_take(&cur, LSE_N, 4); v.residual2 = cz_take(&cur, BTC, AB);
    v.ln2 = cz_take(&cur, BTC, AB); v.ln2_rstd = cz_take(&cur, BT, 4);
    v.gate = cz_take(&cur, BTF, AB); v.up = cz_take(&cur, BTF, AB); v.h = cz_take(&cur, BTF, AB);
    v.residual3 = cz_take(&cur, BTC, AB);
    if (ZG_ACT_CKPT) v.residual3 = (char *)CZ.a.kept + (size_t)l * CZ.a.kept_stride;
    return v;
}

/* Carves the device activations from the plan's regions and computes the RoPE tables once. */
void cz_acts_init(void)
{
    size_t BT = N_ROWS, BTC = BT * ZG_D_MODEL, BTF = BT * ZG_D_FF, BTKV = BT * KV;
    CzDevActs *a = &CZ.a;
    char *acts, *scratch, *cur;
    LL.layer_bytes = layer_bytes();
    LL.layers = cz_carve_begin(&acts, &scratch, &cur, LL.layer_bytes);
    a->lnf = cz_take(&cur, BTC, AB); LL.lnf_rstd = cz_take(&cur, BT, 4);
    a->logits = cz_take(&cur, BT * ZG_VOCAB_SIZE, AB);
    a->losses = cz_take(&cur, BT, 4);
    cz_carve_kept(&cur);
    char *acts_end = cur;
    cur = scratch;
    a->dresidual = cz_take(&cur, BTC, AB); a->dln = cz_take(&cur, BTC, AB);
    LL.dq = cz_take(&cur, BTC, AB); LL.dk = cz_take(&cur, BTKV, AB); LL.dv = cz_take(&cur, BTKV, AB);
    LL.datty = cz_take(&cur, BTC, AB); LL.dbuf = cz_take(&cur, LSE_N, 4);
    LL.dgate = cz_take(&cur, BTF, AB); LL.dup = cz_take(&cur, BTF, AB); LL.dh = cz_take(&cur, BTF, AB);
    LL.rope_cos = cz_take(&cur, (size_t)ZG_SEQ_LEN * HALF, 4);
    LL.rope_sin = cz_take(&cur, (size_t)ZG_SEQ_LEN * HALF, 4);
#if ZG_QKV_BIAS
    LL.ones = cz_take(&cur, BT, AB);
#endif
    cz_carve_end(acts, acts_end, scratch, cur);
#if ZG_QKV_BIAS
    static float ones[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones[i] = 1.0f;
#if ZK_IO
    static uint16_t ones16[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) ones16[i] = ZK_IO == 1 ? zr_f32_to_bf16(ones[i]) : zr_f32_to_fp16(ones[i]);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, LL.ones, ones16, sizeof ones16));
#else
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, LL.ones, ones, sizeof ones));
#endif
#endif
    float *c = LL.rope_cos, *s = LL.rope_sin;
    void *args[] = {&c, &s, NULL};
    cz_fp(c, (size_t)ZG_SEQ_LEN * HALF * 4, 1); cz_fp(s, (size_t)ZG_SEQ_LEN * HALF * 4, 1);
    cz_launch("zd_rope_tables", CEIL(ZG_SEQ_LEN * HALF, 256), 1, 1, 256, args);
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
}

/* ---------------------------------------------------------------------- building blocks */
/* y (N,out) = x (N,in) @ w^T + beta y, w (out, in) */
static void lin_fwd(int in, int out, const void *x, const void *w, float beta, void *y)
{
    cz_gemm(0, 1, N_ROWS, out, in, x, in, w, in, beta, y, 0, out);
}

/* dx (N,in) = dy (N,out) @ w + beta dx */
static void lin_dx(int in, int out, const void *dy, const void *w, float beta, void *dx)
{
    cz_gemm(0, 0, N_ROWS, in, out, dy, out, w, in, beta, dx, 0, in);
}

/* dw (out,in) += dy^T x */
static void lin_dw(int in, int out, const void *x, const void *dy, float *dw)
{
    cz_gemm(1, 0, out, in, N_ROWS, dy, out, x, in, 1.0f, dw, 1, in);
}

#if ZG_QKV_BIAS
/* y (N,out) += ones(N,1) @ b; db (out) += ones(1,N) @ dy */
static void bias_fwd(int out, const void *b, void *y)
{
    cz_gemm(0, 0, N_ROWS, out, 1, LL.ones, 1, b, out, 1.0f, y, 0, out);
}
static void bias_bwd(int out, const void *dy, float *db)
{
    cz_gemm(0, 0, 1, out, N_ROWS, LL.ones, N_ROWS, dy, out, 1.0f, db, 1, out);
}
#endif

static void rmsnorm_fwd(void *y, float *rstd, const void *x, const void *w)
{
    float eps = (float)ZG_NORM_EPS;
    int n = N_ROWS;
    void *args[] = {&y, &rstd, &x, &w, &eps, &n, NULL};
    cz_fp(x, BTC_B, 0); cz_fp(w, ZG_D_MODEL * AB, 0); cz_fp(y, BTC_B, 1); cz_fp(rstd, N_ROWS * 4, 1);
    cz_launch("zd_rmsnorm_forward", CEIL(N_ROWS, 4), 1, 1, 128, args);
}

/* dx += RMSNorm backward of dy; dw += */
static void rmsnorm_bwd(void *dx, float *dw, const void *dy, const void *x, const void *w, const float *rstd)
{
    int n = N_ROWS;
    void *a1[] = {&dx, &dy, &x, &w, &rstd, &n, NULL};
    cz_fp(dy, BTC_B, 0); cz_fp(x, BTC_B, 0); cz_fp(w, ZG_D_MODEL * AB, 0); cz_fp(rstd, N_ROWS * 4, 0);
    cz_fp(dx, BTC_B, 1);
    cz_launch("zd_rmsnorm_backward_dx", CEIL(N_ROWS, 4), 1, 1, 128, a1);
    float *part = CZ.a.colsum;
    size_t part_b = (size_t)ZK_COL_CHUNKS(N_ROWS) * ZG_D_MODEL * 4;
    void *a2[] = {&part, &dy, &x, &rstd, &n, NULL};
    cz_fp(dy, BTC_B, 0); cz_fp(x, BTC_B, 0); cz_fp(rstd, N_ROWS * 4, 0); cz_fp(part, part_b, 1);
    cz_launch("zd_rmsnorm_backward_dw_part", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), ZK_COL_CHUNKS(N_ROWS), 1, ZK_COL_BLOCK,
              a2);
    void *a3[] = {&dw, &part, &n, NULL};
    cz_fp(part, part_b, 0); cz_fp(dw, ZG_D_MODEL * 4, 1);
    cz_launch("zd_rmsnorm_backward_dw_sum", CEIL(ZG_D_MODEL, ZK_COL_BLOCK), 1, 1, ZK_COL_BLOCK, a3);
}

/* q (N, NH*HS) and k (N, NKV*HS) rotated in place by each token's position in its document
** (inverse: back) */
static void rope(void *q, void *k, int inverse)
{
    const float *c = LL.rope_cos, *s = LL.rope_sin;
    const int *pos = CZ.a.pos;
    int n = N_ROWS;
    void *args[] = {&q, &k, &c, &s, &pos, &n, &inverse, NULL};
    cz_fp(c, (size_t)ZG_SEQ_LEN * HALF * 4, 0); cz_fp(s, (size_t)ZG_SEQ_LEN * HALF * 4, 0); cz_fp(pos, N_ROWS * 4, 0);
    cz_fp(q, BTC_B, 0); cz_fp(k, BTKV_B, 0); cz_fp(q, BTC_B, 1); cz_fp(k, BTKV_B, 1);
    cz_launch("zd_rope", CEIL((long)N_ROWS * (ZG_N_HEADS + ZG_N_KV_HEADS) * HALF / ROPE_EPT, 256), 1, 1, 256, args);
}

static void swiglu_fwd(void *h, const void *gate, const void *up)
{
    int n = N_ROWS;
    void *args[] = {&h, &gate, &up, &n, NULL};
    cz_fp(gate, BTF_B, 0); cz_fp(up, BTF_B, 0); cz_fp(h, BTF_B, 1);
    cz_launch("zd_swiglu_forward", CEIL((long)N_ROWS * ZG_D_FF / SWIGLU_EPT, 256), 1, 1, 256, args);
}

static void swiglu_bwd(void *dgate, void *dup, const void *gate, const void *up, const void *dh)
{
    int n = N_ROWS;
    void *args[] = {&dgate, &dup, &gate, &up, &dh, &n, NULL};
    cz_fp(gate, BTF_B, 0); cz_fp(up, BTF_B, 0); cz_fp(dh, BTF_B, 0); cz_fp(dgate, BTF_B, 1); cz_fp(dup, BTF_B, 1);
    cz_launch("zd_swiglu_backward", CEIL((long)N_ROWS * ZG_D_FF / SWIGLU_EPT, 256), 1, 1, 256, args);
}

/* ---------------------------------------------------------------------- modules */
/* p: the token table (V, C) */
void cz_embed_forward(int micro, const void *const *p)
{
    (void)micro;
    void *out = CZ.a.encoded;
    const int *tok = CZ.a.tokens;
    const void *wte = p[0];
    int n = N_ROWS;
    void *args[] = {&out, &tok, &wte, &n, NULL};
    cz_fp(tok, N_ROWS * 4, 0); cz_fp(wte, (size_t)ZG_VOCAB_SIZE * ZG_D_MODEL * AB, 0); cz_fp(out, BTC_B, 1);
    cz_launch("zd_token_embed_forward", CEIL((long)N_ROWS * ZG_D_MODEL, 256), 1, 1, 256, args);
}

static const void *block_in(int l) { return l == 0 ? CZ.a.encoded : layer(l - 1).residual3; }

/* recompute: activation checkpointing's rebuild before the backward, which stops before the down
** projection: its only product is the block's output, kept already and read by no backward. */
static void block_forward(int l, const void *const *p, int recompute)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    LlLayer v = layer(l);
    const void *x = block_in(l);
    rmsnorm_fwd(v.ln1, v.ln1_rstd, x, p[ZG_LT_INPUT_LAYERNORM_WEIGHT]);
    lin_fwd(C, C, v.ln1, p[ZG_LT_SELF_ATTN_Q_PROJ_WEIGHT], 0.0f, v.q);
    lin_fwd(C, KV, v.ln1, p[ZG_LT_SELF_ATTN_K_PROJ_WEIGHT], 0.0f, v.k);
    lin_fwd(C, KV, v.ln1, p[ZG_LT_SELF_ATTN_V_PROJ_WEIGHT], 0.0f, v.v);
#if ZG_QKV_BIAS
    bias_fwd(C, p[ZG_LT_SELF_ATTN_Q_PROJ_BIAS], v.q);
    bias_fwd(KV, p[ZG_LT_SELF_ATTN_K_PROJ_BIAS], v.k);
    bias_fwd(KV, p[ZG_LT_SELF_ATTN_V_PROJ_BIAS], v.v);
#endif
    rope(v.q, v.k, 0);
    {
        void *y = v.atty;
        float *lse = v.lse;
        const void *q = v.q, *k = v.k, *vv = v.v;
        const int *pos = CZ.a.pos;
        void *args[] = {&y, &lse, &q, &k, &vv, &pos, NULL};
        cz_fp(q, BTC_B, 0); cz_fp(k, BTKV_B, 0); cz_fp(vv, BTKV_B, 0); cz_fp(pos, N_ROWS * 4, 0);
        cz_fp(y, BTC_B, 1); cz_fp(lse, LSE_N * 4, 1);
#if ZK_ATT_TC
        cz_launch_sh("zd_attention_gqa_tc_forward", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                     ZK_ATT_TC_FWD_SMEM, args);
#else
        cz_launch("zd_attention_gqa_forward", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH, 32 * ZK_ATT_NW,
                  args);
#endif
    }
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, v.residual2, x, BTC_B));
    lin_fwd(C, C, v.atty, p[ZG_LT_SELF_ATTN_O_PROJ_WEIGHT], 1.0f, v.residual2);
    rmsnorm_fwd(v.ln2, v.ln2_rstd, v.residual2, p[ZG_LT_POST_ATTENTION_LAYERNORM_WEIGHT]);
    lin_fwd(C, F, v.ln2, p[ZG_LT_MLP_GATE_PROJ_WEIGHT], 0.0f, v.gate);
    lin_fwd(C, F, v.ln2, p[ZG_LT_MLP_UP_PROJ_WEIGHT], 0.0f, v.up);
    swiglu_fwd(v.h, v.gate, v.up);
    if (recompute) return;
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, v.residual3, v.residual2, BTC_B));
    lin_fwd(F, C, v.h, p[ZG_LT_MLP_DOWN_PROJ_WEIGHT], 1.0f, v.residual3);
}

static const void *last_stream(void) { return block_in(ZG_N_LAYERS); }

/* p: model.norm.weight */
void cz_final_norm_forward(const void *const *p)
{
    rmsnorm_fwd(CZ.a.lnf, LL.lnf_rstd, last_stream(), p[0]);
}

void cz_final_norm_backward(const void *const *p, float *const *g)
{
    CZ_CHECK(zr_gpu_memset(CZ.compute, CZ.a.dresidual, 0, BTC_B));
    rmsnorm_bwd(CZ.a.dresidual, g[0], CZ.a.dln, last_stream(), p[0], LL.lnf_rstd);
}

static void block_backward(int l, const void *const *p, float *const *g)
{
    const int C = ZG_D_MODEL, F = ZG_D_FF;
    LlLayer v = layer(l);
    const void *x = block_in(l);
    void *dres = CZ.a.dresidual, *dln = CZ.a.dln;
    /* MLP: residual3 = residual2 + down(silu(gate) * up) */
    lin_dx(F, C, dres, p[ZG_LT_MLP_DOWN_PROJ_WEIGHT], 0.0f, LL.dh);
    lin_dw(F, C, v.h, dres, g[ZG_LT_MLP_DOWN_PROJ_WEIGHT]);
    swiglu_bwd(LL.dgate, LL.dup, v.gate, v.up, LL.dh);
    lin_dx(C, F, LL.dgate, p[ZG_LT_MLP_GATE_PROJ_WEIGHT], 0.0f, dln);
    lin_dx(C, F, LL.dup, p[ZG_LT_MLP_UP_PROJ_WEIGHT], 1.0f, dln);
    lin_dw(C, F, v.ln2, LL.dgate, g[ZG_LT_MLP_GATE_PROJ_WEIGHT]);
    lin_dw(C, F, v.ln2, LL.dup, g[ZG_LT_MLP_UP_PROJ_WEIGHT]);
    rmsnorm_bwd(dres, g[ZG_LT_POST_ATTENTION_LAYERNORM_WEIGHT], dln, v.residual2,
                p[ZG_LT_POST_ATTENTION_LAYERNORM_WEIGHT], v.ln2_rstd);
    /* attention: residual2 = in + o(attention(rope(q), rope(k), v)) */
    lin_dx(C, C, dres, p[ZG_LT_SELF_ATTN_O_PROJ_WEIGHT], 0.0f, LL.datty);
    lin_dw(C, C, v.atty, dres, g[ZG_LT_SELF_ATTN_O_PROJ_WEIGHT]);
    {
        void *dq = LL.dq, *dk = LL.dk, *dv = LL.dv;
        float *D = LL.dbuf;
        const float *Dc = LL.dbuf, *lse = v.lse;
        const void *q = v.q, *k = v.k, *vv = v.v, *y = v.atty, *dy = LL.datty;
        const int *pos = CZ.a.pos;
        void *a1[] = {&dq, &D, &q, &k, &vv, &y, &dy, &lse, &pos, NULL};
        cz_fp(q, BTC_B, 0); cz_fp(k, BTKV_B, 0); cz_fp(vv, BTKV_B, 0); cz_fp(y, BTC_B, 0); cz_fp(dy, BTC_B, 0);
        cz_fp(lse, LSE_N * 4, 0); cz_fp(pos, N_ROWS * 4, 0); cz_fp(dq, BTC_B, 1); cz_fp(D, LSE_N * 4, 1);
#if ZK_ATT_TC
        cz_launch_sh("zd_attention_gqa_tc_backward_dq", CEIL(ZG_SEQ_LEN, 64), ZG_N_HEADS, ZG_MICRO_BATCH, 256,
                     ZK_ATT_TC_DQ_SMEM, a1);
#else
        cz_launch("zd_attention_gqa_backward_dq", CEIL(ZG_SEQ_LEN, ATT_QT), ZG_N_HEADS, ZG_MICRO_BATCH,
                  32 * ZK_ATT_NW, a1);
#endif
        void *a2[] = {&dk, &dv, &q, &k, &vv, &dy, &lse, &Dc, &pos, NULL};
        cz_fp(q, BTC_B, 0); cz_fp(k, BTKV_B, 0); cz_fp(vv, BTKV_B, 0); cz_fp(dy, BTC_B, 0);
        cz_fp(lse, LSE_N * 4, 0); cz_fp(Dc, LSE_N * 4, 0); cz_fp(pos, N_ROWS * 4, 0);
        cz_fp(dk, BTKV_B, 1); cz_fp(dv, BTKV_B, 1);
#if ZK_ATT_TC
        cz_launch_sh("zd_attention_gqa_tc_backward_dkv", CEIL(ZG_SEQ_LEN, 64), ZG_N_KV_HEADS, ZG_MICRO_BATCH, 256,
                     ZK_ATT_TC_DKV_SMEM, a2);
#else
        cz_launch("zd_attention_gqa_backward_dkv", CEIL(ZG_SEQ_LEN, ZK_ATT_KT), ZG_N_KV_HEADS, ZG_MICRO_BATCH, 32,
                  a2);
#endif
    }
    rope(LL.dq, LL.dk, 1);
    lin_dx(C, C, LL.dq, p[ZG_LT_SELF_ATTN_Q_PROJ_WEIGHT], 0.0f, dln);
    lin_dx(C, KV, LL.dk, p[ZG_LT_SELF_ATTN_K_PROJ_WEIGHT], 1.0f, dln);
    lin_dx(C, KV, LL.dv, p[ZG_LT_SELF_ATTN_V_PROJ_WEIGHT], 1.0f, dln);
    lin_dw(C, C, v.ln1, LL.dq, g[ZG_LT_SELF_ATTN_Q_PROJ_WEIGHT]);
    lin_dw(C, KV, v.ln1, LL.dk, g[ZG_LT_SELF_ATTN_K_PROJ_WEIGHT]);
    lin_dw(C, KV, v.ln1, LL.dv, g[ZG_LT_SELF_ATTN_V_PROJ_WEIGHT]);
#if ZG_QKV_BIAS
    bias_bwd(C, LL.dq, g[ZG_LT_SELF_ATTN_Q_PROJ_BIAS]);
    bias_bwd(KV, LL.dk, g[ZG_LT_SELF_ATTN_K_PROJ_BIAS]);
    bias_bwd(KV, LL.dv, g[ZG_LT_SELF_ATTN_V_PROJ_BIAS]);
#endif
    rmsnorm_bwd(dres, g[ZG_LT_INPUT_LAYERNORM_WEIGHT], dln, x, p[ZG_LT_INPUT_LAYERNORM_WEIGHT], v.ln1_rstd);
}

/* g: the token table's gradient */
void cz_embed_backward(float *const *g) { cz_token_table_backward(g[0]); }

/* ---------------------------------------------------------------------- graphs */
static void block_direct(int bwd, int l, const void *const *p, float *const *g)
{
    if (bwd == 1) block_backward(l, p, g);
    else block_forward(l, p, bwd == 2);
}

void cz_block_forward(int l, const void *const *p, int recompute)
{
    cz_block_run(recompute ? 2 : 0, l, p, NULL, 0, block_direct);
}
void cz_block_backward(int l, const void *const *p, float *const *g) { cz_block_run(1, l, p, g, 0, block_direct); }
