/*
** llama_host.c — LLaMA forward and backward on the CPU (llama_host.h is the contract): the module
** functions, RMSNorm, RoPE, grouped-query attention, SwiGLU and the head.
**
** Built from the same pieces as the gpt2 kernels: every matmul is zk_sgemm (cut into parts run by
** the OpenMP threads, each a single-threaded cblas_sgemm), attention calls cblas_sgemm per task
** inside its parallel loop, exponentials are zk_exp. nn.Linear's [out, in] weights go to sgemm as
** stored: forward x W^T, backward dx = dy W and dW += dy^T x, no transposed copies; the q, k, v
** biases of an arch that has them (qwen2) are added before RoPE, their gradients taken after
** backward rotates dq and dk back.
** Determinism: partitions depend on shapes and the thread count only; attention tasks (one per
** sequence and key/value head, so the heads sharing k and v accumulate their gradients in one task
** without atomics), RMSNorm gain gradients (split by column) and the embedding gradient (serial) do
** not depend on the thread count at all.
*/
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "zk_host.h"
#include "zk_host_math.h"
#include "llama_host.h"

/* ---------------------------------------------------------------------- memory */
static size_t kvdim(const ZlDims *d) { return (size_t)d->NKV * (size_t)(d->C / d->NH); }

size_t zl_layer_floats(const ZlDims *d)
{
    size_t BT = (size_t)d->B * d->T, C = (size_t)d->C, F = (size_t)d->F, KV = kvdim(d);
    size_t S = (size_t)d->B * d->NH * d->T * d->T;
    return 5 * BT * C + 2 * BT + 2 * BT * KV + S + 3 * BT * F + BT * C;
}

size_t zl_acts_floats(const ZlDims *d)
{
    size_t BT = (size_t)d->B * d->T, C = (size_t)d->C;
    return BT * C + (size_t)d->L * zl_layer_floats(d) + BT * C + BT + BT * (size_t)d->V + BT;
}

size_t zl_scratch_floats(const ZlDims *d)
{
    size_t BT = (size_t)d->B * d->T, C = (size_t)d->C, F = (size_t)d->F, KV = kvdim(d);
    size_t S = (size_t)d->B * d->NH * d->T * d->T;
    return 4 * BT * C + 2 * BT * KV + S + 3 * BT * F + (size_t)d->T * (size_t)(d->C / d->NH);
}

void zl_rope_inv_freq(const ZlDims *d, double *inv_freq)
{
    int hs = d->C / d->NH, half = hs / 2;
    for (int i = 0; i < half; i++) {
        /* in fp32 as Hugging Face: 1 / base^(2i/hs) */
        float f = (float)(1.0 / pow(d->rope_theta, (double)(float)(2 * i) / (double)(float)hs));
        if (d->rope_llama3) {
            double old = d->rope_original_context, lo = d->rope_low_freq_factor, hi = d->rope_high_freq_factor;
            double wavelen = 2 * M_PI / f, scaled = wavelen > old / lo ? f / d->rope_factor : f;
            if (!(wavelen < old / hi) && !(wavelen > old / lo)) {
                double s = (old / wavelen - lo) / (hi - lo);
                scaled = (1 - s) * scaled / d->rope_factor + s * scaled;
            }
            f = (float)scaled;
        }
        inv_freq[i] = f;
    }
}

void zl_acts_carve(const ZlDims *d, float *acts, float *scratch, ZlActs *o)
{
    size_t BT = (size_t)d->B * d->T, C = (size_t)d->C, F = (size_t)d->F, KV = kvdim(d);
    size_t S = (size_t)d->B * d->NH * d->T * d->T;
    memset(o, 0, sizeof *o);
    o->encoded = acts;
    o->layers = acts + BT * C;
    o->layer_floats = zl_layer_floats(d);
    float *p = o->layers + (size_t)d->L * o->layer_floats;
    o->lnf = p, p += BT * C;
    o->lnf_rstd = p, p += BT;
    o->logits = p, p += BT * (size_t)d->V;
    o->losses = p;
    p = scratch;
    o->dresidual = p, p += BT * C;
    o->dln = p, p += BT * C;
    o->dq = p, p += BT * C;
    o->dk = p, p += BT * KV;
    o->dv = p, p += BT * KV;
    o->datty = p, p += BT * C;
    o->datt = p, p += S;
    o->dgate = p, p += BT * F;
    o->dup = p, p += BT * F;
    o->dh = p, p += BT * F;
    int half = d->C / d->NH / 2;
    o->rope_cos = p, p += (size_t)d->T * half;
    o->rope_sin = p;
    double inv[half > 0 ? half : 1];
    zl_rope_inv_freq(d, inv);
    for (int t = 0; t < d->T; t++)
        for (int i = 0; i < half; i++) {
            float ang = (float)inv[i] * (float)t;     /* fp32 product, as HF's position @ inv_freq */
            o->rope_cos[(size_t)t * half + i] = (float)cos((double)ang);
            o->rope_sin[(size_t)t * half + i] = (float)sin((double)ang);
        }
}

ZlLayerActs zl_layer_acts(const ZlDims *d, const ZlActs *a, int l)
{
    size_t BT = (size_t)d->B * d->T, C = (size_t)d->C, F = (size_t)d->F, KV = kvdim(d);
    size_t S = (size_t)d->B * d->NH * d->T * d->T;
    ZlLayerActs x;
    float *p = a->layers + (size_t)l * a->layer_floats;
    x.ln1 = p, p += BT * C;
    x.ln1_rstd = p, p += BT;
    x.q = p, p += BT * C;
    x.k = p, p += BT * KV;
    x.v = p, p += BT * KV;
    x.att = p, p += S;
    x.atty = p, p += BT * C;
    x.residual2 = p, p += BT * C;
    x.ln2 = p, p += BT * C;
    x.ln2_rstd = p, p += BT;
    x.gate = p, p += BT * F;
    x.up = p, p += BT * F;
    x.h = p, p += BT * F;
    x.residual3 = p;
    return x;
}

/* ---------------------------------------------------------------------- building blocks */
/* nn.Linear, w [out, in]: y = x w^T (+ beta y); dx = dy w (+ beta dx); dw += dy^T x. */
static void lin_fwd(int n, int in, int out, const float *x, const float *w, float beta, float *y)
{
    zk_sgemm(0, 1, n, out, in, 1.0f, x, in, w, in, beta, y, out);
}
static void lin_dx(int n, int in, int out, const float *dy, const float *w, float beta, float *dx)
{
    zk_sgemm(0, 0, n, in, out, 1.0f, dy, out, w, in, beta, dx, in);
}
static void lin_dw(int n, int in, int out, const float *x, const float *dy, float *dw)
{
    zk_sgemm(1, 0, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, in);
}

/* A projection's bias (NULL: the arch has none): y (n, c) += b per row; db += the column sums of dy,
** each column summed over the rows in order, so the result does not depend on the thread count. */
static void bias_fwd(int n, int c, const float *b, float *y)
{
    if (!b) return;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        float *row = y + (size_t)r * c;
        for (int i = 0; i < c; i++) row[i] += b[i];
    }
}
#define BIAS_COLS 64
static void bias_bwd(int n, int c, const float *dy, float *db)
{
    if (!db) return;
#pragma omp parallel for schedule(static)
    for (int i0 = 0; i0 < c; i0 += BIAS_COLS) {
        int w = c - i0 < BIAS_COLS ? c - i0 : BIAS_COLS;
        float sum[BIAS_COLS] = {0};
        for (int r = 0; r < n; r++) {
            const float *row = dy + (size_t)r * c + i0;
            for (int i = 0; i < w; i++) sum[i] += row[i];
        }
        for (int i = 0; i < w; i++) db[i0 + i] += sum[i];
    }
}

void zl_rmsnorm_forward(int n, int c, float eps, const float *x, const float *w, float *y, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * c;
        float *yr = y + (size_t)r * c, ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int i = 0; i < c; i++) ss += xr[i] * xr[i];
        float s = 1.0f / sqrtf(ss / (float)c + eps);
        rstd[r] = s;
#pragma omp simd
        for (int i = 0; i < c; i++) yr[i] = w[i] * (xr[i] * s);
    }
}

void zl_rmsnorm_backward(int n, int c, const float *x, const float *w, const float *rstd, const float *dy,
                         float *dx, float *dw)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * c, *dyr = dy + (size_t)r * c;
        float *dxr = dx + (size_t)r * c, s = rstd[r], dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int i = 0; i < c; i++) dot += dyr[i] * w[i] * xr[i] * s;
        dot /= (float)c;
#pragma omp simd
        for (int i = 0; i < c; i++) dxr[i] += s * (dyr[i] * w[i] - xr[i] * s * dot);
    }
    if (!dw) return;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < c; i++) {
        float acc = 0.0f;
        for (int r = 0; r < n; r++) acc += dy[(size_t)r * c + i] * x[(size_t)r * c + i] * rstd[r];
        dw[i] += acc;
    }
}

void zl_rope(int B, int T, int nh, int hs, const int *pos, const float *cos_t, const float *sin_t, float *x,
             int inverse)
{
    int half = hs / 2;
    float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        size_t t = (size_t)(pos ? pos[bt] : bt % T);
        const float *c = cos_t + t * half, *s = sin_t + t * half;
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)bt * nh + h) * hs;
            /* rotate-half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin); the inverse negates sin */
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half], si = sign * s[i];
                v[i] = a * c[i] - b * si;
                v[i + half] = b * c[i] + a * si;
            }
        }
    }
}

ZK_VECTOR_BEGIN
void zl_attention_forward(int B, int T, int NH, int NKV, int hs, const int *pos, const float *q,
                          const float *k, const float *v, float *att, float *y)
{
    int ldq = NH * hs, ldk = NKV * hs, rep = NH / NKV, solo = zk_blas_solo();
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH, g = h / rep;
        const float *qb = q + (size_t)b * T * ldq + (size_t)h * hs;
        const float *kb = k + (size_t)b * T * ldk + (size_t)g * hs, *vb = v + (size_t)b * T * ldk + (size_t)g * hs;
        float *p = att + (size_t)bh * T * T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, qb, ldq, kb, ldk, 0.0f, p, T);
        for (int i = 0; i < T; i++) {
            float *pi = p + (size_t)i * T, mx = -INFINITY, sum = 0.0f;
            int j0 = pos ? i - pos[b * T + i] : 0;   /* the document's first key */
            for (int j = j0; j <= i; j++) mx = pi[j] > mx ? pi[j] : mx;
            for (int j = j0; j <= i; j++) {
                pi[j] = zk_exp(pi[j] - mx);
                sum += pi[j];
            }
            float inv = 1.0f / sum;
            for (int j = j0; j <= i; j++) pi[j] *= inv;
            for (int j = 0; j < j0; j++) pi[j] = 0.0f;
            for (int j = i + 1; j < T; j++) pi[j] = 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, p, T, vb, ldk, 0.0f,
                    y + (size_t)b * T * ldq + (size_t)h * hs, ldq);
    }
    zk_blas_restore(solo);
}

void zl_attention_backward(int B, int T, int NH, int NKV, int hs, const int *pos, const float *q,
                           const float *k, const float *v, const float *att, const float *dy, float *datt,
                           float *dq, float *dk, float *dv)
{
    int ldq = NH * hs, ldk = NKV * hs, rep = NH / NKV, solo = zk_blas_solo();
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (int bg = 0; bg < B * NKV; bg++) {
        int b = bg / NKV, g = bg % NKV;
        const float *kb = k + (size_t)b * T * ldk + (size_t)g * hs, *vb = v + (size_t)b * T * ldk + (size_t)g * hs;
        float *dkb = dk + (size_t)b * T * ldk + (size_t)g * hs, *dvb = dv + (size_t)b * T * ldk + (size_t)g * hs;
        for (int h = g * rep; h < (g + 1) * rep; h++) {
            size_t plane = ((size_t)b * NH + h) * T * T;
            const float *p = att + plane, *qb = q + (size_t)b * T * ldq + (size_t)h * hs;
            const float *dyb = dy + (size_t)b * T * ldq + (size_t)h * hs;
            float *ds = datt + plane, *dqb = dq + (size_t)b * T * ldq + (size_t)h * hs;
            float beta = h == g * rep ? 0.0f : 1.0f;
            /* dP = dy v^T, then the softmax backward in place: dS = P (dP - rowsum(P dP)) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dyb, ldq, vb, ldk, 0.0f, ds, T);
            for (int i = 0; i < T; i++) {
                const float *pi = p + (size_t)i * T;
                float *di = ds + (size_t)i * T, dot = 0.0f;
                int j0 = pos ? i - pos[b * T + i] : 0;
                for (int j = j0; j <= i; j++) dot += pi[j] * di[j];
                for (int j = j0; j <= i; j++) di[j] = pi[j] * (di[j] - dot);
                for (int j = 0; j < j0; j++) di[j] = 0.0f;
                for (int j = i + 1; j < T; j++) di[j] = 0.0f;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, ds, T, kb, ldk, 0.0f, dqb, ldq);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, ds, T, qb, ldq, beta, dkb, ldk);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, p, T, dyb, ldq, beta, dvb, ldk);
        }
    }
    zk_blas_restore(solo);
}

void zl_swiglu_forward(size_t n, const float *gate, const float *up, float *h)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) h[i] = gate[i] / (1.0f + zk_exp(-gate[i])) * up[i];
}

void zl_swiglu_backward(size_t n, const float *gate, const float *up, const float *dh, float *dgate,
                        float *dup)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = gate[i], sg = 1.0f / (1.0f + zk_exp(-x));
        dup[i] = dh[i] * x * sg;
        dgate[i] = dh[i] * up[i] * sg * (1.0f + x * (1.0f - sg));
    }
}
ZK_VECTOR_END

/* ---------------------------------------------------------------------- modules */
void zl_embed_forward(const ZlDims *d, const int *tokens, const float *embed, const ZlActs *a)
{
    int C = d->C;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < d->B * d->T; r++)
        memcpy(a->encoded + (size_t)r * C, embed + (size_t)tokens[r] * C, (size_t)C * sizeof(float));
}

static const float *block_input(const ZlDims *d, const ZlActs *a, int l)
{
    return l == 0 ? a->encoded : zl_layer_acts(d, a, l - 1).residual3;
}

/* Everything of block l's forward that its backward reads: all but the down projection, whose only
** product is the block's output (residual3), which no backward reads. */
void zl_block_recompute(const ZlDims *d, int l, const ZlBlockParams *p, const ZlActs *a)
{
    int BT = d->B * d->T, C = d->C, F = d->F, hs = C / d->NH, KV = (int)kvdim(d);
    ZlLayerActs x = zl_layer_acts(d, a, l);
    const float *in = block_input(d, a, l);
    zl_rmsnorm_forward(BT, C, d->eps, in, p->ln1_w, x.ln1, x.ln1_rstd);
    lin_fwd(BT, C, C, x.ln1, p->q_w, 0.0f, x.q);
    lin_fwd(BT, C, KV, x.ln1, p->k_w, 0.0f, x.k);
    lin_fwd(BT, C, KV, x.ln1, p->v_w, 0.0f, x.v);
    bias_fwd(BT, C, p->q_b, x.q);
    bias_fwd(BT, KV, p->k_b, x.k);
    bias_fwd(BT, KV, p->v_b, x.v);
    zl_rope(d->B, d->T, d->NH, hs, d->pos, a->rope_cos, a->rope_sin, x.q, 0);
    zl_rope(d->B, d->T, d->NKV, hs, d->pos, a->rope_cos, a->rope_sin, x.k, 0);
    zl_attention_forward(d->B, d->T, d->NH, d->NKV, hs, d->pos, x.q, x.k, x.v, x.att, x.atty);
    memcpy(x.residual2, in, (size_t)BT * C * sizeof(float));
    lin_fwd(BT, C, C, x.atty, p->o_w, 1.0f, x.residual2);
    zl_rmsnorm_forward(BT, C, d->eps, x.residual2, p->ln2_w, x.ln2, x.ln2_rstd);
    lin_fwd(BT, C, F, x.ln2, p->gate_w, 0.0f, x.gate);
    lin_fwd(BT, C, F, x.ln2, p->up_w, 0.0f, x.up);
    zl_swiglu_forward((size_t)BT * F, x.gate, x.up, x.h);
}

void zl_block_forward(const ZlDims *d, int l, const ZlBlockParams *p, const ZlActs *a)
{
    int BT = d->B * d->T, C = d->C, F = d->F;
    zl_block_recompute(d, l, p, a);
    ZlLayerActs x = zl_layer_acts(d, a, l);
    memcpy(x.residual3, x.residual2, (size_t)BT * C * sizeof(float));
    lin_fwd(BT, F, C, x.h, p->down_w, 1.0f, x.residual3);
}

void zl_final_norm_forward(const ZlDims *d, const float *norm_w, const ZlActs *a)
{
    zl_rmsnorm_forward(d->B * d->T, d->C, d->eps, block_input(d, a, d->L), norm_w, a->lnf, a->lnf_rstd);
}

float zl_head_forward(const ZlDims *d, const float *w, const int *targets, const ZlActs *a, int *count)
{
    int BT = d->B * d->T, V = d->V;
    lin_fwd(BT, d->C, V, a->lnf, w, 0.0f, a->logits);
    return zk_softmax_xent(BT, V, a->logits, targets, a->losses, count);
}

void zl_head_backward(const ZlDims *d, const float *w, float *dw, const int *targets, const ZlActs *a,
                      float dloss)
{
    int BT = d->B * d->T, V = d->V;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++) {
        float *z = a->logits + (size_t)r * V;
        int t = targets[r];
        if (t < 0) {
            memset(z, 0, (size_t)V * sizeof(float));
            continue;
        }
        for (int i = 0; i < V; i++) z[i] *= dloss;
        z[t] -= dloss;
    }
    lin_dx(BT, d->C, V, a->logits, w, 0.0f, a->dln);
    lin_dw(BT, d->C, V, a->lnf, a->logits, dw);
}

void zl_final_norm_backward(const ZlDims *d, const float *norm_w, float *dnorm_w, const ZlActs *a)
{
    memset(a->dresidual, 0, (size_t)d->B * d->T * d->C * sizeof(float));
    zl_rmsnorm_backward(d->B * d->T, d->C, block_input(d, a, d->L), norm_w, a->lnf_rstd, a->dln,
                        a->dresidual, dnorm_w);
}

void zl_block_backward(const ZlDims *d, int l, const ZlBlockParams *p, const ZlBlockGrads *g,
                       const ZlActs *a)
{
    int BT = d->B * d->T, C = d->C, F = d->F, hs = C / d->NH, KV = (int)kvdim(d);
    ZlLayerActs x = zl_layer_acts(d, a, l);
    const float *in = block_input(d, a, l);
    /* MLP: residual3 = residual2 + down(silu(gate) * up) */
    lin_dx(BT, F, C, a->dresidual, p->down_w, 0.0f, a->dh);
    lin_dw(BT, F, C, x.h, a->dresidual, g->down_w);
    zl_swiglu_backward((size_t)BT * F, x.gate, x.up, a->dh, a->dgate, a->dup);
    lin_dx(BT, C, F, a->dgate, p->gate_w, 0.0f, a->dln);
    lin_dx(BT, C, F, a->dup, p->up_w, 1.0f, a->dln);
    lin_dw(BT, C, F, x.ln2, a->dgate, g->gate_w);
    lin_dw(BT, C, F, x.ln2, a->dup, g->up_w);
    zl_rmsnorm_backward(BT, C, x.residual2, p->ln2_w, x.ln2_rstd, a->dln, a->dresidual, g->ln2_w);
    /* attention: residual2 = in + o(attention(rope(q), rope(k), v)) */
    lin_dx(BT, C, C, a->dresidual, p->o_w, 0.0f, a->datty);
    lin_dw(BT, C, C, x.atty, a->dresidual, g->o_w);
    zl_attention_backward(d->B, d->T, d->NH, d->NKV, hs, d->pos, x.q, x.k, x.v, x.att, a->datty, a->datt,
                          a->dq, a->dk, a->dv);
    zl_rope(d->B, d->T, d->NH, hs, d->pos, a->rope_cos, a->rope_sin, a->dq, 1);
    zl_rope(d->B, d->T, d->NKV, hs, d->pos, a->rope_cos, a->rope_sin, a->dk, 1);
    lin_dx(BT, C, C, a->dq, p->q_w, 0.0f, a->dln);
    lin_dx(BT, C, KV, a->dk, p->k_w, 1.0f, a->dln);
    lin_dx(BT, C, KV, a->dv, p->v_w, 1.0f, a->dln);
    lin_dw(BT, C, C, x.ln1, a->dq, g->q_w);
    lin_dw(BT, C, KV, x.ln1, a->dk, g->k_w);
    lin_dw(BT, C, KV, x.ln1, a->dv, g->v_w);
    bias_bwd(BT, C, a->dq, g->q_b);
    bias_bwd(BT, KV, a->dk, g->k_b);
    bias_bwd(BT, KV, a->dv, g->v_b);
    zl_rmsnorm_backward(BT, C, in, p->ln1_w, x.ln1_rstd, a->dln, a->dresidual, g->ln1_w);
}

void zl_embed_backward(const ZlDims *d, const int *tokens, float *dembed, const ZlActs *a)
{
    int C = d->C;
    for (int r = 0; r < d->B * d->T; r++) {
        float *dst = dembed + (size_t)tokens[r] * C;
        const float *src = a->dresidual + (size_t)r * C;
        for (int i = 0; i < C; i++) dst[i] += src[i];
    }
}
