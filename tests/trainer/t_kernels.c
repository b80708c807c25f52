/*
** t_kernels.c — the host GPT-2 kernels (templates/host/) against naive double-precision references
** written here, and their gradients against central finite differences of those references.
**
** Sizes are small and deliberately not powers of two (C = 12 with 3 heads, F = 20, T = 7), so a
** wrong stride or an off-by-one in the causal triangle shows. Every gradient check accumulates
** into a non-zero buffer, so "+= not =" is checked along the way.
*/
#include <omp.h>
#include <stdint.h>

#include "zt.h"

#include "../../templates/host/zk_host.c"
#include "../../templates/host/zk_host_attn.c"
#include "../../templates/host/zk_host_ops.c"

/* ---------------------------------------------------------------------- helpers */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float urand(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 8388608.0) - 1.0);
}
static void fill(float *x, size_t n, float scale, float shift)
{
    for (size_t i = 0; i < n; i++) x[i] = shift + scale * urand();
}
static float *fnew(size_t n) { return calloc(n ? n : 1, sizeof(float)); }
static double *dnew(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* max |a - b| over n, relative to max |b| (plus a floor for all-zero references) */
static double relerr(const float *a, const double *b, size_t n)
{
    double m = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs(b[i]));
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / (m + 1e-12);
}

/* ---------------------------------------------------------------------- double references */
static void ref_layernorm(int n, int c, double eps, const double *x, const double *w,
                          const double *b, double *y)
{
    for (int r = 0; r < n; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < c; i++) m += x[r * c + i];
        m /= c;
        for (int i = 0; i < c; i++) v += (x[r * c + i] - m) * (x[r * c + i] - m);
        v /= c;
        for (int i = 0; i < c; i++) y[r * c + i] = (x[r * c + i] - m) / sqrt(v + eps) * w[i] + b[i];
    }
}

static double ref_gelu(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* Causal attention with an explicit -inf mask over the full T x T score matrix. */
static void ref_attention(int B, int T, int C, int NH, const double *qkv, double *y)
{
    int hs = C / NH;
    double *s = dnew((size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * 3 * C + h * hs;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    const double *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    double dot = 0;
                    for (int e = 0; e < hs; e++) dot += q[e] * k[e];
                    s[j] = j <= i ? dot / sqrt((double)hs) : -INFINITY;
                    mx = fmax(mx, s[j]);
                }
                for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                double *yo = y + ((size_t)b * T + i) * C + h * hs;
                for (int e = 0; e < hs; e++) {
                    double acc = 0;
                    for (int j = 0; j < T; j++)
                        acc += s[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + e];
                    yo[e] = acc;
                }
            }
    free(s);
}

/* y (n,out) = x (n,in) @ w (in,out) + b */
static void ref_linear(int n, int in, int out, const double *x, const double *w, const double *b,
                       double *y)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double acc = b ? b[o] : 0;
            for (int i = 0; i < in; i++) acc += x[(size_t)r * in + i] * w[(size_t)i * out + o];
            y[(size_t)r * out + o] = acc;
        }
}

static void to_double(const float *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i];
}

/* ---------------------------------------------------------------------- op tests */
static void t_layernorm(void)
{
    int n = 10, c = 37;
    float *x = fnew(n * c), *w = fnew(c), *b = fnew(c), *y = fnew(n * c), *mean = fnew(n),
          *rstd = fnew(n), *dy = fnew(n * c), *dx = fnew(n * c), *dw = fnew(c), *db = fnew(c);
    double *X = dnew(n * c), *W = dnew(c), *Bb = dnew(c), *Y = dnew(n * c), *DY = dnew(n * c);
    fill(x, n * c, 2.0f, 0.5f);
    fill(w, c, 0.5f, 1.0f);
    fill(b, c, 0.5f, 0.0f);
    fill(dy, n * c, 1.0f, 0.0f);
    to_double(x, X, n * c), to_double(w, W, c), to_double(b, Bb, c), to_double(dy, DY, n * c);
    zk_layernorm_forward(n, c, 1e-5f, x, w, b, y, mean, rstd);
    ref_layernorm(n, c, 1e-5, X, W, Bb, Y);
    ZT_CHECKM(relerr(y, Y, n * c) < 1e-6, "forward rel err %g", relerr(y, Y, n * c));
    /* backward against central differences of J = sum(dy * LN(x)) */
    for (int i = 0; i < n * c; i++) dx[i] = 0.25f;
    for (int i = 0; i < c; i++) dw[i] = db[i] = -0.5f;
    zk_layernorm_backward(n, c, x, w, mean, rstd, dy, dx, dw, db);
    double h = 1e-5;
    double *gx = dnew(n * c), *gw = dnew(c), *gb = dnew(c);
    struct { double *p, *g; int len; float base; } v[3] = {{X, gx, n * c, 0.25f},
                                                          {W, gw, c, -0.5f}, {Bb, gb, c, -0.5f}};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < v[k].len; i++) {
            double save = v[k].p[i], jp = 0, jm = 0;
            v[k].p[i] = save + h;
            ref_layernorm(n, c, 1e-5, X, W, Bb, Y);
            for (int e = 0; e < n * c; e++) jp += DY[e] * Y[e];
            v[k].p[i] = save - h;
            ref_layernorm(n, c, 1e-5, X, W, Bb, Y);
            for (int e = 0; e < n * c; e++) jm += DY[e] * Y[e];
            v[k].p[i] = save;
            v[k].g[i] = v[k].base + (jp - jm) / (2 * h);
        }
    ZT_CHECKM(relerr(dx, gx, n * c) < 1e-5, "dx rel err %g", relerr(dx, gx, n * c));
    ZT_CHECKM(relerr(dw, gw, c) < 1e-5, "dw rel err %g", relerr(dw, gw, c));
    ZT_CHECKM(relerr(db, gb, c) < 1e-5, "db rel err %g", relerr(db, gb, c));
    free(x), free(w), free(b), free(y), free(mean), free(rstd), free(dy), free(dx), free(dw);
    free(db), free(X), free(W), free(Bb), free(Y), free(DY), free(gx), free(gw), free(gb);
}

static void t_gelu(void)
{
    size_t n = 301;
    float *x = fnew(n), *y = fnew(n), *dy = fnew(n), *dx = fnew(n);
    double *ry = dnew(n), *rg = dnew(n);
    fill(x, n, 5.0f, 0.0f);
    fill(dy, n, 1.0f, 0.0f);
    zk_gelu_forward(n, x, y);
    zk_gelu_backward(n, x, dy, dx);
    for (size_t i = 0; i < n; i++) {
        ry[i] = ref_gelu(x[i]);
        double h = 1e-6;
        rg[i] = dy[i] * (ref_gelu((double)x[i] + h) - ref_gelu((double)x[i] - h)) / (2 * h);
    }
    ZT_CHECKM(relerr(y, ry, n) < 1e-6, "forward rel err %g", relerr(y, ry, n));
    ZT_CHECKM(relerr(dx, rg, n) < 1e-5, "backward rel err %g", relerr(dx, rg, n));
    free(x), free(y), free(dy), free(dx), free(ry), free(rg);
}

/* Element by element over a wide range, including inputs where exp over/underflows. */
static void t_gelu_range(void)
{
    float xs[] = {-1000.0f, -90.0f, -12.0f, -5.5f, -1e-3f, 0.0f, 1e-7f, 0.3f, 3.0f, 9.5f, 50.0f,
                  1000.0f, 3e5f};
    size_t n = sizeof xs / sizeof *xs;
    float y[16], dy[16], dx[16];
    for (size_t i = 0; i < n; i++) dy[i] = 1.0f;
    zk_gelu_forward(n, xs, y);
    zk_gelu_backward(n, xs, dy, dx);
    for (size_t i = 0; i < n; i++) {
        double x = xs[i], h = fmax(1e-6, 1e-6 * fabs(x));
        double g = ref_gelu(x), dg = (ref_gelu(x + h) - ref_gelu(x - h)) / (2 * h);
        ZT_CHECKM(isfinite(y[i]) && fabs(y[i] - g) <= 1e-6 * fabs(g) + 1e-30,
                  "gelu(%g) = %.9g, want %.9g", x, y[i], g);
        ZT_CHECKM(isfinite(dx[i]) && fabs(dx[i] - dg) <= 1e-5 * fabs(dg) + 1e-6,
                  "gelu'(%g) = %.9g, want %.9g", x, dx[i], dg);
    }
}

/* Softmax cross-entropy stays finite and exact with logits in the hundreds. */
static void t_head_extreme(void)
{
    ZkDims d = {.B = 1, .T = 3, .C = 4, .NH = 1, .F = 4, .V = 5, .L = 0, .eps = 1e-5f};
    float *acts = fnew(zk_acts_floats(&d)), *scr = fnew(zk_scratch_floats(&d));
    float wte[20], dwte[20] = {0};
    ZkActs a;
    zk_acts_carve(&d, acts, scr, &a);
    for (int i = 0; i < 20; i++) wte[i] = 40.0f * urand();
    for (int i = 0; i < 12; i++) a.lnf[i] = 3.0f * urand();
    int tgt[3] = {1, 4, -1}, count = 0;
    float loss = zk_head_forward(&d, wte, tgt, &a, &count);
    double ref = 0;
    for (int r = 0; r < 2; r++) {
        double z[5], mx = -INFINITY, s = 0;
        for (int v = 0; v < 5; v++) {
            z[v] = 0;
            for (int c = 0; c < 4; c++) z[v] += (double)a.lnf[r * 4 + c] * wte[v * 4 + c];
            mx = fmax(mx, z[v]);
        }
        for (int v = 0; v < 5; v++) s += exp(z[v] - mx);
        ref += (log(s) + mx - z[tgt[r]]) / 2;
    }
    ZT_EQ_INT(count, 2);
    ZT_CHECK(a.losses[2] == 0.0f);
    ZT_NEAR(loss, ref, 1e-5, 1e-6);
    zk_head_backward(&d, wte, dwte, tgt, &a, 0.5f);
    for (int i = 0; i < 20; i++) ZT_CHECKM(isfinite(dwte[i]), "dwte[%d] = %g", i, dwte[i]);
    for (int v = 0; v < 5; v++) ZT_CHECK(a.logits[2 * 5 + v] == 0.0f); /* ignored row */
    free(acts), free(scr);
}

/* Linear layer with its fused parts (residual, bias, GELU and its gradient), in both cut
** directions of zk_sgemm: n >= out cuts by rows, n < out by columns. */
static void linear_case(int n, int in, int out)
{
    float *x = fnew(n * in), *w = fnew(in * out), *b = fnew(out), *res = fnew(n * out),
          *y = fnew(n * out), *yg = fnew(n * out), *dy = fnew(n * out), *dx = fnew(n * in),
          *dw = fnew(in * out), *db = fnew(out), *gx = fnew(n * in), *dg = fnew(n * in);
    double *X = dnew(n * in), *W = dnew(in * out), *Bb = dnew(out), *Y = dnew(n * out),
           *YG = dnew(n * out), *DX = dnew(n * in), *DW = dnew(in * out), *DB = dnew(out),
           *DG = dnew(n * in);
    fill(x, n * in, 1, 0), fill(w, in * out, 1, 0), fill(b, out, 1, 0), fill(dy, n * out, 1, 0);
    fill(res, n * out, 1, 0), fill(gx, n * in, 3, 0);
    to_double(x, X, n * in), to_double(w, W, in * out), to_double(b, Bb, out);
    /* y = x @ w + b, then y = y + x @ w (res = y: accumulate, no bias), then with res and GELU */
    zk_linear_forward(n, in, out, x, w, b, NULL, y, NULL);
    ref_linear(n, in, out, X, W, Bb, Y);
    ZT_CHECKM(relerr(y, Y, n * out) < 1e-6, "%dx%dx%d forward rel err %g", n, in, out,
              relerr(y, Y, n * out));
    zk_linear_forward(n, in, out, x, w, NULL, y, y, NULL);
    ref_linear(n, in, out, X, W, NULL, YG);
    for (int i = 0; i < n * out; i++) Y[i] += YG[i];
    ZT_CHECKM(relerr(y, Y, n * out) < 1e-6, "accumulate rel err %g", relerr(y, Y, n * out));
    zk_linear_forward(n, in, out, x, w, b, res, y, yg);
    ref_linear(n, in, out, X, W, Bb, Y);
    for (int i = 0; i < n * out; i++) Y[i] += res[i], YG[i] = ref_gelu(Y[i]);
    ZT_CHECKM(relerr(y, Y, n * out) < 1e-6, "residual rel err %g", relerr(y, Y, n * out));
    ZT_CHECKM(relerr(yg, YG, n * out) < 1e-6, "gelu rel err %g", relerr(yg, YG, n * out));
    zk_linear_forward(n, in, out, x, w, NULL, res, yg, NULL); /* residual, no bias */
    for (int i = 0; i < n * out; i++) Y[i] -= b[i % out];
    ZT_CHECKM(relerr(yg, Y, n * out) < 1e-6, "residual without bias rel err %g",
              relerr(yg, Y, n * out));
    for (int i = 0; i < in * out; i++) dw[i] = 1.0f;
    for (int i = 0; i < out; i++) db[i] = 2.0f;
    zk_linear_backward(n, in, out, x, w, dy, dx, dw, db, gx, dg);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < in; i++) {
            double acc = 0, g = gx[r * in + i], h = 1e-6;
            for (int o = 0; o < out; o++) acc += (double)dy[r * out + o] * w[i * out + o];
            DX[r * in + i] = acc;
            DG[r * in + i] = acc * (ref_gelu(g + h) - ref_gelu(g - h)) / (2 * h);
        }
    for (int i = 0; i < in; i++)
        for (int o = 0; o < out; o++) {
            double acc = 1.0;
            for (int r = 0; r < n; r++) acc += (double)x[r * in + i] * dy[r * out + o];
            DW[i * out + o] = acc;
        }
    for (int o = 0; o < out; o++) {
        double acc = 2.0;
        for (int r = 0; r < n; r++) acc += dy[r * out + o];
        DB[o] = acc;
    }
    ZT_CHECKM(relerr(dx, DX, n * in) < 1e-6, "dx rel err %g", relerr(dx, DX, n * in));
    ZT_CHECKM(relerr(dg, DG, n * in) < 1e-5, "dgelu rel err %g", relerr(dg, DG, n * in));
    ZT_CHECKM(relerr(dw, DW, in * out) < 1e-6, "dw rel err %g", relerr(dw, DW, in * out));
    ZT_CHECKM(relerr(db, DB, out) < 1e-6, "db rel err %g", relerr(db, DB, out));
    free(x), free(w), free(b), free(res), free(y), free(yg), free(dy), free(dx), free(dw);
    free(db), free(gx), free(dg), free(X), free(W), free(Bb), free(Y), free(YG), free(DX);
    free(DW), free(DB), free(DG);
}

static void t_linear(void)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(3); /* several parts even for these sizes */
    linear_case(13, 19, 23);   /* by columns, one part */
    linear_case(300, 19, 23);  /* by rows, two parts, the last partial */
    linear_case(7, 11, 290);   /* by columns, two parts */
    linear_case(1000, 19, 23); /* by rows, six parts (two per thread), the last partial */
    omp_set_num_threads(saved);
}

static void attention_case(int B, int T, int C, int NH)
{
    size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *qkv = fnew(nq), *att = fnew(na), *y = fnew(ny), *dy = fnew(ny), *datt = fnew(na),
          *dqkv = fnew(nq);
    double *Q = dnew(nq), *Y = dnew(ny), *G = dnew(nq);
    fill(qkv, nq, 1.5f, 0.0f);
    fill(dy, ny, 1.0f, 0.0f);
    to_double(qkv, Q, nq);
    zk_attention_forward(B, T, C, NH, NULL, qkv, att, y);
    ref_attention(B, T, C, NH, Q, Y);
    ZT_CHECKM(relerr(y, Y, ny) < 1e-6, "T=%d forward rel err %g", T, relerr(y, Y, ny));
    /* each probability row sums to 1 over j <= i */
    double worst = 0;
    for (int r = 0; r < B * NH * T; r++) {
        int i = r % T;
        double s = 0;
        for (int j = 0; j <= i; j++) s += att[(size_t)r * T + j];
        worst = fmax(worst, fabs(s - 1));
    }
    ZT_CHECKM(worst < 1e-6, "probability rows off by %g", worst);
    for (size_t i = 0; i < nq; i++) dqkv[i] = 7.0f; /* must be overwritten */
    zk_attention_backward(B, T, C, NH, NULL, qkv, att, dy, datt, dqkv);
    double h = 1e-6;
    for (size_t i = 0; i < nq; i++) {
        double save = Q[i], jp = 0, jm = 0;
        Q[i] = save + h;
        ref_attention(B, T, C, NH, Q, Y);
        for (size_t e = 0; e < ny; e++) jp += dy[e] * Y[e];
        Q[i] = save - h;
        ref_attention(B, T, C, NH, Q, Y);
        for (size_t e = 0; e < ny; e++) jm += dy[e] * Y[e];
        Q[i] = save;
        G[i] = (jp - jm) / (2 * h);
    }
    ZT_CHECKM(relerr(dqkv, G, nq) < 1e-5, "T=%d backward rel err %g", T, relerr(dqkv, G, nq));
    free(qkv), free(att), free(y), free(dy), free(datt), free(dqkv), free(Q), free(Y), free(G);
}

/* T = 7: one block of query rows; T = 70: three, the last one partial (zk_host_attn.c). */
static void t_attention(void)
{
    attention_case(2, 7, 12, 3);
    attention_case(1, 70, 8, 2);
}

/* ---------------------------------------------------------------------- whole model */
/* Parameters in Hugging Face order in one flat array; CTX positions (> T: unused rows of wpe must
** get zero gradient). */
enum { LN1W, LN1B, QKVW, QKVB, APW, APB, LN2W, LN2B, FCW, FCB, FPW, FPB, NBT };
typedef struct Model {
    ZkDims d;
    int ctx;
    size_t off_wpe, off_blk, blk_size, off_lnf, total;
    size_t blk_off[NBT];
} Model;

static void model_layout(Model *m)
{
    const ZkDims *d = &m->d;
    size_t C = d->C, F = d->F;
    size_t n[NBT] = {C, C, C * 3 * C, 3 * C, C * C, C, C, C, C * F, F, F * C, C};
    size_t o = 0;
    for (int k = 0; k < NBT; k++) m->blk_off[k] = o, o += n[k];
    m->blk_size = o;
    m->off_wpe = (size_t)d->V * C;
    m->off_blk = m->off_wpe + (size_t)m->ctx * C;
    m->off_lnf = m->off_blk + (size_t)d->L * m->blk_size;
    m->total = m->off_lnf + 2 * C;
}

/* Mean cross-entropy of the model in double; the whole forward written as plainly as possible. */
static double ref_loss(const Model *m, const double *P, const int *tok, const int *tgt)
{
    const ZkDims *d = &m->d;
    int B = d->B, T = d->T, C = d->C, F = d->F, V = d->V, BT = B * T;
    double *x = dnew((size_t)BT * C), *ln = dnew((size_t)BT * C), *qkv = dnew((size_t)BT * 3 * C),
           *ay = dnew((size_t)BT * C), *br = dnew((size_t)BT * C), *h = dnew((size_t)BT * F);
    for (int r = 0; r < BT; r++)
        for (int i = 0; i < C; i++)
            x[r * C + i] = P[(size_t)tok[r] * C + i] + P[m->off_wpe + (size_t)(r % T) * C + i];
    for (int l = 0; l < d->L; l++) {
        const double *p = P + m->off_blk + l * m->blk_size;
        const size_t *o = m->blk_off;
        ref_layernorm(BT, C, d->eps, x, p + o[LN1W], p + o[LN1B], ln);
        ref_linear(BT, C, 3 * C, ln, p + o[QKVW], p + o[QKVB], qkv);
        ref_attention(B, T, C, d->NH, qkv, ay);
        ref_linear(BT, C, C, ay, p + o[APW], p + o[APB], br);
        for (int i = 0; i < BT * C; i++) x[i] += br[i];
        ref_layernorm(BT, C, d->eps, x, p + o[LN2W], p + o[LN2B], ln);
        ref_linear(BT, C, F, ln, p + o[FCW], p + o[FCB], h);
        for (int i = 0; i < BT * F; i++) h[i] = ref_gelu(h[i]);
        ref_linear(BT, F, C, h, p + o[FPW], p + o[FPB], br);
        for (int i = 0; i < BT * C; i++) x[i] += br[i];
    }
    ref_layernorm(BT, C, d->eps, x, P + m->off_lnf, P + m->off_lnf + C, ln);
    double total = 0;
    int n = 0;
    for (int r = 0; r < BT; r++) {
        if (tgt[r] < 0) continue;
        double mx = -INFINITY, s = 0, zt = 0;
        double *z = dnew((size_t)V);
        for (int v = 0; v < V; v++) {
            double acc = 0;
            for (int i = 0; i < C; i++) acc += ln[r * C + i] * P[(size_t)v * C + i];
            z[v] = acc;
            mx = fmax(mx, acc);
        }
        for (int v = 0; v < V; v++) s += exp(z[v] - mx);
        zt = z[tgt[r]];
        total += log(s) + mx - zt;
        n++;
        free(z);
    }
    free(x), free(ln), free(qkv), free(ay), free(br), free(h);
    return total / n;
}

static ZkBlockParams block_params(const Model *m, const float *P, int l)
{
    const float *p = P + m->off_blk + l * m->blk_size;
    const size_t *o = m->blk_off;
    return (ZkBlockParams){p + o[LN1W], p + o[LN1B], p + o[QKVW], p + o[QKVB], p + o[APW],
                           p + o[APB], p + o[LN2W], p + o[LN2B], p + o[FCW], p + o[FCB],
                           p + o[FPW], p + o[FPB]};
}

static ZkBlockGrads block_grads(const Model *m, float *G, int l)
{
    float *p = G + m->off_blk + l * m->blk_size;
    const size_t *o = m->blk_off;
    return (ZkBlockGrads){p + o[LN1W], p + o[LN1B], p + o[QKVW], p + o[QKVB], p + o[APW],
                          p + o[APB], p + o[LN2W], p + o[LN2B], p + o[FCW], p + o[FCB],
                          p + o[FPW], p + o[FPB]};
}

/* One forward + backward through the module API, as the trainer calls it; grads accumulate. */
static float run_model(const Model *m, const float *P, float *G, const int *tok, const int *tgt,
                       ZkActs *a, float dloss)
{
    const ZkDims *d = &m->d;
    zk_embed_forward(d, tok, P, P + m->off_wpe, a);
    for (int l = 0; l < d->L; l++) {
        ZkBlockParams bp = block_params(m, P, l);
        zk_block_forward(d, l, &bp, a);
    }
    zk_final_norm_forward(d, P + m->off_lnf, P + m->off_lnf + d->C, a);
    float loss = zk_head_forward(d, P, tgt, a, NULL);
    zk_head_backward(d, P, G, tgt, a, dloss);
    zk_final_norm_backward(d, P + m->off_lnf, G + m->off_lnf, G + m->off_lnf + d->C, a);
    for (int l = d->L - 1; l >= 0; l--) {
        ZkBlockParams bp = block_params(m, P, l);
        ZkBlockGrads bg = block_grads(m, G, l);
        zk_block_backward(d, l, &bp, &bg, a);
    }
    zk_embed_backward(d, tok, G, G + m->off_wpe, a);
    return loss;
}

static void model_init(Model *m, float *P)
{
    fill(P, m->total, 0.3f, 0.0f);
    const ZkDims *d = &m->d;
    for (int l = 0; l < d->L; l++) { /* norm gains near 1 as in a trained model */
        float *p = P + m->off_blk + l * m->blk_size;
        for (int i = 0; i < d->C; i++) p[m->blk_off[LN1W] + i] += 1, p[m->blk_off[LN2W] + i] += 1;
    }
    for (int i = 0; i < d->C; i++) P[m->off_lnf + i] += 1;
}

static void t_model_fd(void)
{
    Model m = {.d = {.B = 2, .T = 7, .C = 12, .NH = 3, .F = 20, .V = 11, .L = 2, .eps = 1e-5f},
               .ctx = 9};
    model_layout(&m);
    const ZkDims *d = &m.d;
    int BT = d->B * d->T, tok[14], tgt[14];
    for (int i = 0; i < BT; i++) tok[i] = (i * 7 + 3) % d->V, tgt[i] = (i * 5 + 1) % d->V;
    tgt[4] = -1; /* an ignored target */
    float *P = fnew(m.total), *G = fnew(m.total), *acts = fnew(zk_acts_floats(d)),
          *scr = fnew(zk_scratch_floats(d));
    double *PD = dnew(m.total);
    model_init(&m, P);
    to_double(P, PD, m.total);
    ZkActs a;
    zk_acts_carve(d, acts, scr, &a);
    for (size_t i = 0; i < m.total; i++) G[i] = 0.5f; /* accumulated onto */
    float loss = run_model(&m, P, G, tok, tgt, &a, 1.0f / (BT - 1));
    double ref = ref_loss(&m, PD, tok, tgt);
    ZT_NEAR(loss, ref, 0, 1e-6);
    /* every parameter by central differences of the double reference */
    double h = 1e-5, worst = 0, gmax = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < m.total; i++) {
        double save = PD[i];
        PD[i] = save + h;
        double lp = ref_loss(&m, PD, tok, tgt);
        PD[i] = save - h;
        double lm = ref_loss(&m, PD, tok, tgt);
        PD[i] = save;
        double fd = (lp - lm) / (2 * h), got = (double)G[i] - 0.5;
        gmax = fmax(gmax, fabs(fd));
        if (fabs(got - fd) > worst) worst = fabs(got - fd), worst_i = i;
    }
    ZT_CHECKM(worst <= 1e-4 * gmax, "worst |g - fd| %g at param %zu (max |g| %g)", worst, worst_i,
              gmax);
    /* wpe rows at positions >= T get nothing */
    double unused = 0;
    for (size_t i = m.off_wpe + (size_t)d->T * d->C; i < m.off_blk; i++)
        unused = fmax(unused, fabs(G[i] - 0.5f));
    ZT_CHECKM(unused == 0, "wpe rows past T changed by %g", unused);
    free(P), free(G), free(acts), free(scr), free(PD);
}

/* Two micro-steps accumulate to twice one; runs are deterministic (see the thread notes below). */
static void t_accumulate_and_threads(void)
{
    Model m = {.d = {.B = 3, .T = 33, .C = 72, .NH = 6, .F = 288, .V = 97, .L = 2, .eps = 1e-5f},
               .ctx = 40};
    model_layout(&m);
    const ZkDims *d = &m.d;
    int BT = d->B * d->T, *tok = malloc(BT * sizeof(int)), *tgt = malloc(BT * sizeof(int));
    for (int i = 0; i < BT; i++) tok[i] = (i * 31 + 3) % d->V, tgt[i] = (i * 17 + 1) % d->V;
    float *P = fnew(m.total), *G1 = fnew(m.total), *G2 = fnew(m.total),
          *acts = fnew(zk_acts_floats(d)), *scr = fnew(zk_scratch_floats(d));
    model_init(&m, P);
    ZkActs a;
    zk_acts_carve(d, acts, scr, &a);
    float l1 = run_model(&m, P, G1, tok, tgt, &a, 1.0f / BT);
    float l2 = run_model(&m, P, G2, tok, tgt, &a, 1.0f / BT);
    run_model(&m, P, G2, tok, tgt, &a, 1.0f / BT);
    ZT_CHECK(l1 == l2);
    double worst = 0, norm = 0;
    for (size_t i = 0; i < m.total; i++)
        worst = fmax(worst, fabs(G2[i] - 2.0 * G1[i])), norm = fmax(norm, fabs(G1[i]));
    ZT_CHECKM(worst <= 1e-6 * norm, "2 micro-steps vs 2x one: %g (max |g| %g)", worst, norm);

    /* Threads. A fixed thread count gives bit-identical runs (static partitions). Across counts,
    ** attention and the row/column-split reductions are bit-identical too; matmuls agree only
    ** to rounding, because OpenBLAS takes another path for small parts (its small-matrix kernels). */
    int saved = omp_get_max_threads();
    float *G3 = fnew(m.total), *G4 = fnew(m.total);
    omp_set_num_threads(3); /* more threads than cores: uneven parts too */
    float l3 = run_model(&m, P, G3, tok, tgt, &a, 1.0f / BT);
    float l4 = run_model(&m, P, G4, tok, tgt, &a, 1.0f / BT);
    omp_set_num_threads(1);
    float l5 = run_model(&m, P, G1, tok, tgt, &a, 1.0f / BT); /* G1 now holds 2 runs, as G2 */
    ZT_CHECK(l3 == l4);
    ZT_NEAR(l5, l3, 0, 1e-6);
    ZT_CHECK(memcmp(G3, G4, m.total * sizeof(float)) == 0);
    double dmax = 0;
    for (size_t i = 0; i < m.total; i++)
        dmax = fmax(dmax, fabs(2.0 * G3[i] - G1[i]));
    ZT_CHECKM(dmax <= 1e-5 * norm, "1 vs 3 threads: %g (max |g| %g)", dmax, norm);
    ZkLayerActs v = zk_layer_acts(d, &a, 1);
    size_t nq = (size_t)BT * 3 * d->C, nc = (size_t)BT * d->C;
    float *q1 = fnew(nq), *q2 = fnew(nq), *x1 = fnew(nc), *x2 = fnew(nc), *w1 = fnew(2 * d->C),
          *w2 = fnew(2 * d->C);
    for (int pass = 0; pass < 2; pass++) {
        omp_set_num_threads(pass ? 3 : 1);
        float *q = pass ? q2 : q1, *x = pass ? x2 : x1, *w = pass ? w2 : w1;
        zk_attention_forward(d->B, d->T, d->C, d->NH, NULL, v.qkv, v.att, v.atty);
        zk_attention_backward(d->B, d->T, d->C, d->NH, NULL, v.qkv, v.att, v.atty, a.datt, q);
        zk_layernorm_backward(BT, d->C, v.residual2, P, v.ln2_mean, v.ln2_rstd, v.ln2, x, w,
                              w + d->C);
    }
    omp_set_num_threads(saved);
    ZT_CHECK(memcmp(q1, q2, nq * sizeof(float)) == 0);
    ZT_CHECK(memcmp(x1, x2, nc * sizeof(float)) == 0);
    ZT_CHECK(memcmp(w1, w2, 2 * d->C * sizeof(float)) == 0);
    free(q1), free(q2), free(x1), free(x2), free(w1), free(w2), free(G3), free(G4);
    free(tok), free(tgt), free(P), free(G1), free(G2), free(acts), free(scr);
}

/* The acts/scratch layout is the one the generator's memory plan assumes (zk_host.h). */
static void t_layout(void)
{
    ZkDims d = {.B = 3, .T = 33, .C = 72, .NH = 6, .F = 288, .V = 97, .L = 3, .eps = 1e-5f};
    size_t BT = 99, BTC = BT * 72, BTF = BT * 288, att = 3 * 6 * 33 * 33;
    size_t layer = BTC + 2 * BT + 3 * BTC + BTC + att + BTC + BTC + 2 * BT + 2 * BTF + BTC;
    ZT_EQ_INT(zk_layer_floats(&d), layer);
    ZT_EQ_INT(zk_acts_floats(&d), BTC + 3 * layer + BTC + 2 * BT + BT * 97 + BT);
    ZT_EQ_INT(zk_scratch_floats(&d), BTC + BTC + 3 * BTC + BTC + att + 2 * BTF);
    float *acts = fnew(zk_acts_floats(&d)), *scr = fnew(zk_scratch_floats(&d));
    ZkActs a;
    zk_acts_carve(&d, acts, scr, &a);
    ZkLayerActs v = zk_layer_acts(&d, &a, 2);
    ZT_EQ_INT(v.ln1 - acts, BTC + 2 * layer);
    ZT_EQ_INT(v.att - acts, BTC + 2 * layer + BTC + 2 * BT + 4 * BTC);
    ZT_EQ_INT(v.residual3 - acts, BTC + 3 * layer - BTC);
    ZT_EQ_INT(a.losses - acts, zk_acts_floats(&d) - BT);
    ZT_EQ_INT(a.dfch_gelu - scr, zk_scratch_floats(&d) - BTF);
    ZT_EQ_INT(a.datt - scr, 6 * BTC);
    free(acts), free(scr);
}

int main(void)
{
    ZT_RUN(t_layout);
    ZT_RUN(t_layernorm);
    ZT_RUN(t_gelu);
    ZT_RUN(t_gelu_range);
    ZT_RUN(t_head_extreme);
    ZT_RUN(t_linear);
    ZT_RUN(t_attention);
    ZT_RUN(t_model_fd);
    ZT_RUN(t_accumulate_and_threads);
    return zt_end();
}
