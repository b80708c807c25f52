/*
** gpt2_model.c — the model adapter (train_model.h) for arch gpt2: the plan's tensors, in the IR's
** order (gen/arch_gpt2.c: embed {wte, wpe}, block h.{l}.*, ln_f {weight, bias}, the head tied to wte),
** handed to the gpt2 host kernels (zk_host.h).
**
** D is the model's dimensions; Dc the carved area's (L = 1 with activation checkpointing). A call
** given the stream `in` runs on a view of the carved activations whose "encoded" is `in`: block l
** of the area then reads it when l == 0, and the final norm does with a zero-block model.
*/
#include <string.h>

#include "zk_host.h"     /* defines: the gpt2 host kernels */
#include "train_model.h"   /* defines: the adapter's contract */
#include "zg_tables.h"     /* defines: ZG_* dimensions, ZG_LT_* / ZG_T_* tensor indices */

static ZkDims D, Dc;
static ZkActs A;

void tr_model_threads_init(int n) { zk_threads_init(n); }

/* ---------------------------------------------------------------------- activations */
static ZkDims dims(int layers)
{
    ZkDims d = {ZG_MICRO_BATCH, ZG_SEQ_LEN, ZG_D_MODEL, ZG_N_HEADS, ZG_D_FF, ZG_VOCAB_SIZE, layers,
                (float)ZG_NORM_EPS, NULL};
    return d;
}

int64_t tr_model_acts_floats(int layers)
{
    ZkDims d = dims(layers);
    return (int64_t)zk_acts_floats(&d);
}

int64_t tr_model_scratch_floats(void)
{
    ZkDims d = dims(ZG_N_LAYERS);
    return (int64_t)zk_scratch_floats(&d);
}

void tr_model_carve(float *acts, float *scratch, int layers)
{
    D = dims(ZG_N_LAYERS);
    Dc = dims(layers);
    zk_acts_carve(&Dc, acts, scratch, &A);
}

float *tr_model_stream0(void) { return A.encoded; }
float *tr_model_block_out(int l) { return zk_layer_acts(&Dc, &A, l).residual3; }

static ZkActs view(const float *in)
{
    ZkActs v = A;
    if (in) v.encoded = (float *)in;
    return v;
}

/* ---------------------------------------------------------------------- modules */
/* One block's tensors, p = P + the block's first tensor (ZG_LT_*: offsets within a block). */
static void block_views(const float *const *q, float *const *d, ZkBlockParams *p, ZkBlockGrads *g)
{
    p->ln1_w = q[ZG_LT_LN_1_WEIGHT]; p->ln1_b = q[ZG_LT_LN_1_BIAS];
    p->qkv_w = q[ZG_LT_ATTN_C_ATTN_WEIGHT]; p->qkv_b = q[ZG_LT_ATTN_C_ATTN_BIAS];
    p->attproj_w = q[ZG_LT_ATTN_C_PROJ_WEIGHT]; p->attproj_b = q[ZG_LT_ATTN_C_PROJ_BIAS];
    p->ln2_w = q[ZG_LT_LN_2_WEIGHT]; p->ln2_b = q[ZG_LT_LN_2_BIAS];
    p->fc_w = q[ZG_LT_MLP_C_FC_WEIGHT]; p->fc_b = q[ZG_LT_MLP_C_FC_BIAS];
    p->fcproj_w = q[ZG_LT_MLP_C_PROJ_WEIGHT]; p->fcproj_b = q[ZG_LT_MLP_C_PROJ_BIAS];
    if (!g) return;
    g->ln1_w = d[ZG_LT_LN_1_WEIGHT]; g->ln1_b = d[ZG_LT_LN_1_BIAS];
    g->qkv_w = d[ZG_LT_ATTN_C_ATTN_WEIGHT]; g->qkv_b = d[ZG_LT_ATTN_C_ATTN_BIAS];
    g->attproj_w = d[ZG_LT_ATTN_C_PROJ_WEIGHT]; g->attproj_b = d[ZG_LT_ATTN_C_PROJ_BIAS];
    g->ln2_w = d[ZG_LT_LN_2_WEIGHT]; g->ln2_b = d[ZG_LT_LN_2_BIAS];
    g->fc_w = d[ZG_LT_MLP_C_FC_WEIGHT]; g->fc_b = d[ZG_LT_MLP_C_FC_BIAS];
    g->fcproj_w = d[ZG_LT_MLP_C_PROJ_WEIGHT]; g->fcproj_b = d[ZG_LT_MLP_C_PROJ_BIAS];
}

/* offsets within the embedding and final-norm modules */
enum { WTE = 0, WPE = ZG_T_WPE_WEIGHT - ZG_T_WTE_WEIGHT, LNF_W = 0, LNF_B = ZG_T_LN_F_BIAS - ZG_T_LN_F_WEIGHT };

void tr_model_embed_forward(const int *tokens, const int *pos, const float *const *p)
{
    D.pos = Dc.pos = pos;
    zk_embed_forward(&D, tokens, p[WTE], p[WPE], &A);
}

void tr_model_block_forward(int l, const float *in, const float *const *p)
{
    ZkBlockParams bp;
    block_views(p, NULL, &bp, NULL);
    ZkActs v = view(in);
    zk_block_forward(&Dc, l, &bp, &v);
}

void tr_model_block_recompute(int l, const float *in, const float *const *p)
{
    ZkBlockParams bp;
    block_views(p, NULL, &bp, NULL);
    ZkActs v = view(in);
    zk_block_recompute(&Dc, l, &bp, &v);
}

void tr_model_final_norm_forward(const float *in, const float *const *p)
{
    if (!in) {
        zk_final_norm_forward(&Dc, p[LNF_W], p[LNF_B], &A);
        return;
    }
    ZkDims d0 = D;
    d0.L = 0;
    ZkActs v = view(in);
    zk_final_norm_forward(&d0, p[LNF_W], p[LNF_B], &v);
}

float tr_model_head_forward(const int *targets, const float *const *p, int *count)
{
    return zk_head_forward(&D, p[0], targets, &A, count);
}

void tr_model_head_backward(const int *targets, const float *const *p, float *const *g, float dloss)
{
    zk_head_backward(&D, p[0], g[0], targets, &A, dloss);
}

void tr_model_final_norm_backward(const float *in, const float *const *p, float *const *g)
{
    if (!in) {
        zk_final_norm_backward(&Dc, p[LNF_W], g[LNF_W], g[LNF_B], &A);
        return;
    }
    ZkDims d0 = D;
    d0.L = 0;
    ZkActs v = view(in);
    zk_final_norm_backward(&d0, p[LNF_W], g[LNF_W], g[LNF_B], &v);
}

void tr_model_block_backward(int l, const float *in, const float *const *p, float *const *g)
{
    ZkBlockParams bp;
    ZkBlockGrads bg;
    block_views(p, g, &bp, &bg);
    ZkActs v = view(in);
    zk_block_backward(&Dc, l, &bp, &bg, &v);
}

void tr_model_embed_backward(const int *tokens, const int *pos, float *const *g)
{
    D.pos = Dc.pos = pos;
    zk_embed_backward(&D, tokens, g[WTE], g[WPE], &A);
}
