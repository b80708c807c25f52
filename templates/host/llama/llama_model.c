/*
** llama_model.c — the model adapter (train_model.h) for archs llama and qwen2: the plan's tensors, in
** the IR's order (gen/arch_llama.c, arch_qwen2.c: embed {model.embed_tokens}, block
** model.layers.{l}.*, model.norm, lm_head, or the token table for a tied head), handed to the llama
** host kernels (llama_host.h); the q, k, v biases where the tables say ZG_QKV_BIAS.
**
** D is the model's dimensions; Dc the carved area's (L = 1 with activation checkpointing). A call
** given the stream `in` runs on a view of the carved activations whose "encoded" is `in`: block l
** of the area then reads it when l == 0, and the final norm does with a zero-block model. The RoPE
** tables sit in the scratch, computed once by the carve; nothing else writes there.
*/
#include <string.h>

#include "zk_host.h"     /* defines: zk_threads_init (the one thread pool the kernels share) */
#include "llama_host.h"    /* defines: the llama host kernels */
#include "train_model.h"   /* defines: the adapter's contract */
#include "zg_tables.h"     /* defines: ZG_* dimensions, ZG_LT_* tensor offsets in a block */

static ZlDims D, Dc;
static ZlActs A;

void tr_model_threads_init(int n) { zk_threads_init(n); }

/* ---------------------------------------------------------------------- activations */
static ZlDims dims(int layers)
{
    ZlDims d;
    memset(&d, 0, sizeof d);
    d.B = ZG_MICRO_BATCH; d.T = ZG_SEQ_LEN;
    d.C = ZG_D_MODEL; d.NH = ZG_N_HEADS; d.NKV = ZG_N_KV_HEADS;
    d.F = ZG_D_FF; d.V = ZG_VOCAB_SIZE; d.L = layers;
    d.eps = (float)ZG_NORM_EPS;
    d.rope_theta = ZG_ROPE_THETA;
    d.rope_llama3 = ZG_ROPE_LLAMA3;
    d.rope_factor = ZG_ROPE_FACTOR;
    d.rope_low_freq_factor = ZG_ROPE_LOW_FREQ_FACTOR;
    d.rope_high_freq_factor = ZG_ROPE_HIGH_FREQ_FACTOR;
    d.rope_original_context = ZG_ROPE_ORIGINAL_CONTEXT;
    return d;
}

int64_t tr_model_acts_floats(int layers)
{
    ZlDims d = dims(layers);
    return (int64_t)zl_acts_floats(&d);
}

int64_t tr_model_scratch_floats(void)
{
    ZlDims d = dims(ZG_N_LAYERS);
    return (int64_t)zl_scratch_floats(&d);
}

void tr_model_carve(float *acts, float *scratch, int layers)
{
    D = dims(ZG_N_LAYERS);
    Dc = dims(layers);
    zl_acts_carve(&Dc, acts, scratch, &A);
}

float *tr_model_stream0(void) { return A.encoded; }
float *tr_model_block_out(int l) { return zl_layer_acts(&Dc, &A, l).residual3; }

static ZlActs view(const float *in)
{
    ZlActs v = A;
    if (in) v.encoded = (float *)in;
    return v;
}

/* ---------------------------------------------------------------------- modules */
/* One block's tensors, q = P + the block's first tensor (ZG_LT_*: offsets within a block). */
static void block_views(const float *const *q, float *const *d, ZlBlockParams *p, ZlBlockGrads *g)
{
    p->ln1_w = q[ZG_LT_INPUT_LAYERNORM_WEIGHT];
    p->q_w = q[ZG_LT_SELF_ATTN_Q_PROJ_WEIGHT]; p->k_w = q[ZG_LT_SELF_ATTN_K_PROJ_WEIGHT];
    p->v_w = q[ZG_LT_SELF_ATTN_V_PROJ_WEIGHT]; p->o_w = q[ZG_LT_SELF_ATTN_O_PROJ_WEIGHT];
    p->ln2_w = q[ZG_LT_POST_ATTENTION_LAYERNORM_WEIGHT];
    p->gate_w = q[ZG_LT_MLP_GATE_PROJ_WEIGHT]; p->up_w = q[ZG_LT_MLP_UP_PROJ_WEIGHT];
    p->down_w = q[ZG_LT_MLP_DOWN_PROJ_WEIGHT];
#if ZG_QKV_BIAS
    p->q_b = q[ZG_LT_SELF_ATTN_Q_PROJ_BIAS]; p->k_b = q[ZG_LT_SELF_ATTN_K_PROJ_BIAS];
    p->v_b = q[ZG_LT_SELF_ATTN_V_PROJ_BIAS];
#else
    p->q_b = p->k_b = p->v_b = NULL;
#endif
    if (!g) return;
    g->ln1_w = d[ZG_LT_INPUT_LAYERNORM_WEIGHT];
    g->q_w = d[ZG_LT_SELF_ATTN_Q_PROJ_WEIGHT]; g->k_w = d[ZG_LT_SELF_ATTN_K_PROJ_WEIGHT];
    g->v_w = d[ZG_LT_SELF_ATTN_V_PROJ_WEIGHT]; g->o_w = d[ZG_LT_SELF_ATTN_O_PROJ_WEIGHT];
    g->ln2_w = d[ZG_LT_POST_ATTENTION_LAYERNORM_WEIGHT];
    g->gate_w = d[ZG_LT_MLP_GATE_PROJ_WEIGHT]; g->up_w = d[ZG_LT_MLP_UP_PROJ_WEIGHT];
    g->down_w = d[ZG_LT_MLP_DOWN_PROJ_WEIGHT];
#if ZG_QKV_BIAS
    g->q_b = d[ZG_LT_SELF_ATTN_Q_PROJ_BIAS]; g->k_b = d[ZG_LT_SELF_ATTN_K_PROJ_BIAS];
    g->v_b = d[ZG_LT_SELF_ATTN_V_PROJ_BIAS];
#else
    g->q_b = g->k_b = g->v_b = NULL;
#endif
}

/* The embedding, final norm and head modules hold one tensor each: p[0]. */
void tr_model_embed_forward(const int *tokens, const int *pos, const float *const *p)
{
    D.pos = Dc.pos = pos;
    zl_embed_forward(&D, tokens, p[0], &A);
}

void tr_model_block_forward(int l, const float *in, const float *const *p)
{
    ZlBlockParams bp;
    block_views(p, NULL, &bp, NULL);
    ZlActs v = view(in);
    zl_block_forward(&Dc, l, &bp, &v);
}

void tr_model_block_recompute(int l, const float *in, const float *const *p)
{
    ZlBlockParams bp;
    block_views(p, NULL, &bp, NULL);
    ZlActs v = view(in);
    zl_block_recompute(&Dc, l, &bp, &v);
}

void tr_model_final_norm_forward(const float *in, const float *const *p)
{
    if (!in) {
        zl_final_norm_forward(&Dc, p[0], &A);
        return;
    }
    ZlDims d0 = D;
    d0.L = 0;
    ZlActs v = view(in);
    zl_final_norm_forward(&d0, p[0], &v);
}

float tr_model_head_forward(const int *targets, const float *const *p, int *count)
{
    return zl_head_forward(&D, p[0], targets, &A, count);
}

void tr_model_head_backward(const int *targets, const float *const *p, float *const *g, float dloss)
{
    zl_head_backward(&D, p[0], g[0], targets, &A, dloss);
}

void tr_model_final_norm_backward(const float *in, const float *const *p, float *const *g)
{
    if (!in) {
        zl_final_norm_backward(&Dc, p[0], g[0], &A);
        return;
    }
    ZlDims d0 = D;
    d0.L = 0;
    ZlActs v = view(in);
    zl_final_norm_backward(&d0, p[0], g[0], &v);
}

void tr_model_block_backward(int l, const float *in, const float *const *p, float *const *g)
{
    ZlBlockParams bp;
    ZlBlockGrads bg;
    block_views(p, g, &bp, &bg);
    ZlActs v = view(in);
    zl_block_backward(&Dc, l, &bp, &bg, &v);
}

void tr_model_embed_backward(const int *tokens, const int *pos, float *const *g)
{
    D.pos = Dc.pos = pos;
    zl_embed_backward(&D, tokens, g[0], &A);
}
