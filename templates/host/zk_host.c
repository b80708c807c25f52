/*
** zk_host.c — GPT-2's modules on the host (zk_host.h): memory layout of the activations, thread
** pools, and the per-module forward and backward (embedding, block, final LayerNorm, tied head with
** a fused softmax cross-entropy). The building blocks are in zk_host_ops.c and zk_host_attn.c.
**
** Each block writes its outputs where the next one reads them (encoded -> residual3 of block 0 ->
** ... -> lnf), in the one acts buffer whose layout zk_host.h fixes; backward walks the same
** modules in reverse, carrying dL/d(residual stream) in scratch.dresidual. Residual adds and biases
** are folded into the matmul that makes the branch (each part of it first writes stream + bias,
** then sgemm adds with beta = 1), and GELU and its gradient into the matmul next to them, so
** neither direction has a separate elementwise pass outside LayerNorm and attention.
*/
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "zk_host.h"
#include "zk_host_math.h"

/* ---------------------------------------------------------------------- memory */
size_t zk_layer_floats(const ZkDims *d)
{
    size_t BT = (size_t)d->B * d->T, BTC = BT * d->C, BTF = BT * d->F;
    size_t att = (size_t)d->B * d->NH * d->T * d->T;
    /* ln1, qkv(3), atty, residual2, ln2, residual3 = 8 BTC; 4 statistics rows; att; fch, fch_gelu */
    return 8 * BTC + 4 * BT + att + 2 * BTF;
}

size_t zk_acts_floats(const ZkDims *d)
{
    size_t BT = (size_t)d->B * d->T, BTC = BT * d->C;
    return BTC + (size_t)d->L * zk_layer_floats(d) + BTC + 2 * BT + BT * d->V + BT;
}

size_t zk_scratch_floats(const ZkDims *d)
{
    size_t BT = (size_t)d->B * d->T, BTC = BT * d->C;
    return 6 * BTC + (size_t)d->B * d->NH * d->T * d->T + 2 * BT * d->F;
}

/* Hands out consecutive pieces of a buffer. */
static float *take(float **cur, size_t n)
{
    float *p = *cur;
    *cur += n;
    return p;
}

void zk_acts_carve(const ZkDims *d, float *acts, float *scratch, ZkActs *a)
{
    size_t BT = (size_t)d->B * d->T, BTC = BT * d->C, BTF = BT * d->F;
    float *cur = acts;
    a->encoded = take(&cur, BTC);
    a->layer_floats = zk_layer_floats(d);
    a->layers = take(&cur, (size_t)d->L * a->layer_floats);
    a->lnf = take(&cur, BTC);
    a->lnf_mean = take(&cur, BT);
    a->lnf_rstd = take(&cur, BT);
    a->logits = take(&cur, BT * d->V);
    a->losses = take(&cur, BT);
    cur = scratch;
    a->dresidual = take(&cur, BTC);
    a->dln = take(&cur, BTC);
    a->dqkv = take(&cur, 3 * BTC);
    a->datty = take(&cur, BTC);
    a->datt = take(&cur, (size_t)d->B * d->NH * d->T * d->T);
    a->dfch = take(&cur, BTF);
    a->dfch_gelu = take(&cur, BTF);
}

ZkLayerActs zk_layer_acts(const ZkDims *d, const ZkActs *a, int l)
{
    size_t BT = (size_t)d->B * d->T, BTC = BT * d->C, BTF = BT * d->F;
    float *cur = a->layers + (size_t)l * a->layer_floats;
    ZkLayerActs v;
    v.ln1 = take(&cur, BTC);
    v.ln1_mean = take(&cur, BT);
    v.ln1_rstd = take(&cur, BT);
    v.qkv = take(&cur, 3 * BTC);
    v.atty = take(&cur, BTC);
    v.att = take(&cur, (size_t)d->B * d->NH * d->T * d->T);
    v.residual2 = take(&cur, BTC);
    v.ln2 = take(&cur, BTC);
    v.ln2_mean = take(&cur, BT);
    v.ln2_rstd = take(&cur, BT);
    v.fch = take(&cur, BTF);
    v.fch_gelu = take(&cur, BTF);
    v.residual3 = take(&cur, BTC);
    return v;
}

/* The residual stream entering block l (l == L: entering the final norm). */
static float *stream_in(const ZkDims *d, const ZkActs *a, int l)
{
    return l == 0 ? a->encoded : zk_layer_acts(d, a, l - 1).residual3;
}

/* ---------------------------------------------------------------------- threads */
int zk_threads_init(int n)
{
    if (n > 0) omp_set_num_threads(n);
    openblas_set_num_threads(1);
    return 0;
}

/* ---------------------------------------------------------------------- forward */
void zk_embed_forward(const ZkDims *d, const int *tokens, const float *wte, const float *wpe,
                      const ZkActs *a)
{
    int BT = d->B * d->T, C = d->C;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++) {
        int t = d->pos ? d->pos[r] : r % d->T;
        const float *e = wte + (size_t)tokens[r] * C, *p = wpe + (size_t)t * C;
        float *o = a->encoded + (size_t)r * C;
#pragma omp simd
        for (int i = 0; i < C; i++) o[i] = e[i] + p[i];
    }
}

/* Everything of block l's forward that its backward reads: all but the MLP projection, whose only
** product is the block's output (residual3), which no backward reads. */
void zk_block_recompute(const ZkDims *d, int l, const ZkBlockParams *p, const ZkActs *a)
{
    int BT = d->B * d->T, C = d->C, F = d->F;
    const float *x = stream_in(d, a, l);
    ZkLayerActs v = zk_layer_acts(d, a, l);
    zk_layernorm_forward(BT, C, d->eps, x, p->ln1_w, p->ln1_b, v.ln1, v.ln1_mean, v.ln1_rstd);
    zk_linear_forward(BT, C, 3 * C, v.ln1, p->qkv_w, p->qkv_b, NULL, v.qkv, NULL);
    zk_attention_forward(d->B, d->T, C, d->NH, d->pos, v.qkv, v.att, v.atty);
    zk_linear_forward(BT, C, C, v.atty, p->attproj_w, p->attproj_b, x, v.residual2, NULL);
    zk_layernorm_forward(BT, C, d->eps, v.residual2, p->ln2_w, p->ln2_b, v.ln2, v.ln2_mean,
                         v.ln2_rstd);
    zk_linear_forward(BT, C, F, v.ln2, p->fc_w, p->fc_b, NULL, v.fch, v.fch_gelu);
}

void zk_block_forward(const ZkDims *d, int l, const ZkBlockParams *p, const ZkActs *a)
{
    zk_block_recompute(d, l, p, a);
    ZkLayerActs v = zk_layer_acts(d, a, l);
    zk_linear_forward(d->B * d->T, d->F, d->C, v.fch_gelu, p->fcproj_w, p->fcproj_b, v.residual2,
                      v.residual3, NULL);
}

void zk_final_norm_forward(const ZkDims *d, const float *lnf_w, const float *lnf_b, const ZkActs *a)
{
    zk_layernorm_forward(d->B * d->T, d->C, d->eps, stream_in(d, a, d->L), lnf_w, lnf_b, a->lnf,
                         a->lnf_mean, a->lnf_rstd);
}

ZK_VECTOR_BEGIN
/* Fused softmax + cross-entropy over BT rows of V logits: loss = log(sum exp(z - max)) - (z_t - max);
** each row becomes its probabilities, which is all backward needs. Rows with target -1 count for
** nothing. Every arch's head calls it, so their losses come from one loop. */
float zk_softmax_xent(int BT, int V, float *logits, const int *targets, float *losses, int *count)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++) {
        float *z = logits + (size_t)r * V;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int i = 0; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        int t = targets[r];
        float zt = t >= 0 ? z[t] - mx : 0.0f;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) {
            z[i] = zk_exp(z[i] - mx);
            sum += z[i];
        }
        losses[r] = t >= 0 ? logf(sum) - zt : 0.0f;
        float inv = 1.0f / sum;
#pragma omp simd
        for (int i = 0; i < V; i++) z[i] *= inv;
    }
    double total = 0.0;
    int n = 0;
    for (int r = 0; r < BT; r++)
        if (targets[r] >= 0) {
            total += losses[r];
            n++;
        }
    if (count) *count = n;
    return n ? (float)(total / n) : 0.0f;
}
ZK_VECTOR_END

float zk_head_forward(const ZkDims *d, const float *wte, const int *targets, const ZkActs *a,
                      int *count)
{
    int BT = d->B * d->T, V = d->V;
    zk_sgemm(0, 1, BT, V, d->C, 1.0f, a->lnf, d->C, wte, d->C, 0.0f, a->logits, V);
    return zk_softmax_xent(BT, V, a->logits, targets, a->losses, count);
}

/* ---------------------------------------------------------------------- backward */
void zk_head_backward(const ZkDims *d, const float *wte, float *dwte, const int *targets,
                      const ZkActs *a, float dloss)
{
    int BT = d->B * d->T, V = d->V, C = d->C;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++) {
        float *z = a->logits + (size_t)r * V;
        int t = targets[r];
        if (t < 0) {
            memset(z, 0, (size_t)V * sizeof *z);
            continue;
        }
#pragma omp simd
        for (int i = 0; i < V; i++) z[i] *= dloss;
        z[t] -= dloss;
    }
    zk_sgemm(0, 0, BT, C, V, 1.0f, a->logits, V, wte, C, 0.0f, a->dln, C);
    zk_sgemm(1, 0, V, C, BT, 1.0f, a->logits, V, a->lnf, C, 1.0f, dwte, C);
}

void zk_final_norm_backward(const ZkDims *d, const float *lnf_w, float *dlnf_w, float *dlnf_b,
                            const ZkActs *a)
{
    int BT = d->B * d->T, C = d->C;
    memset(a->dresidual, 0, (size_t)BT * C * sizeof(float));
    zk_layernorm_backward(BT, C, stream_in(d, a, d->L), lnf_w, a->lnf_mean, a->lnf_rstd, a->dln,
                          a->dresidual, dlnf_w, dlnf_b);
}

void zk_block_backward(const ZkDims *d, int l, const ZkBlockParams *p, const ZkBlockGrads *g,
                       const ZkActs *a)
{
    int BT = d->B * d->T, C = d->C, F = d->F;
    const float *x = stream_in(d, a, l);
    ZkLayerActs v = zk_layer_acts(d, a, l);
    /* MLP branch: residual3 = residual2 + gelu(ln2 @ fc_w + fc_b) @ fcproj_w + fcproj_b */
    zk_linear_backward(BT, F, C, v.fch_gelu, p->fcproj_w, a->dresidual, a->dfch_gelu, g->fcproj_w,
                       g->fcproj_b, v.fch, a->dfch);
    zk_linear_backward(BT, C, F, v.ln2, p->fc_w, a->dfch, a->dln, g->fc_w, g->fc_b, NULL, NULL);
    zk_layernorm_backward(BT, C, v.residual2, p->ln2_w, v.ln2_mean, v.ln2_rstd, a->dln,
                          a->dresidual, g->ln2_w, g->ln2_b);
    /* attention branch: residual2 = x + attention(ln1 @ qkv_w + qkv_b) @ attproj_w + attproj_b */
    zk_linear_backward(BT, C, C, v.atty, p->attproj_w, a->dresidual, a->datty, g->attproj_w,
                       g->attproj_b, NULL, NULL);
    zk_attention_backward(d->B, d->T, C, d->NH, d->pos, v.qkv, v.att, a->datty, a->datt, a->dqkv);
    zk_linear_backward(BT, C, 3 * C, v.ln1, p->qkv_w, a->dqkv, a->dln, g->qkv_w, g->qkv_b, NULL,
                       NULL);
    zk_layernorm_backward(BT, C, x, p->ln1_w, v.ln1_mean, v.ln1_rstd, a->dln, a->dresidual,
                          g->ln1_w, g->ln1_b);
}

void zk_embed_backward(const ZkDims *d, const int *tokens, float *dwte, float *dwpe,
                       const ZkActs *a)
{
    /* Tokens repeat, so rows of dwte collide: split by column blocks instead, each walking the
    ** rows in order (deterministic and independent of the thread count). */
    enum { EMB_COLS = 64 };
    int BT = d->B * d->T, C = d->C, nblk = (C + EMB_COLS - 1) / EMB_COLS;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nblk; k++) {
        int c0 = k * EMB_COLS, c1 = c0 + EMB_COLS < C ? c0 + EMB_COLS : C;
        for (int r = 0; r < BT; r++) {
            const float *g = a->dresidual + (size_t)r * C;
            int t = d->pos ? d->pos[r] : r % d->T;
            float *e = dwte + (size_t)tokens[r] * C, *p = dwpe + (size_t)t * C;
            for (int i = c0; i < c1; i++) { /* e and p may not alias (dwte, dwpe) */
                e[i] += g[i];
                p[i] += g[i];
            }
        }
    }
}
