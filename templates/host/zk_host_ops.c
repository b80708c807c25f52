/*
** zk_host_ops.c — the building blocks of the host kernels: LayerNorm, tanh-GELU and the linear
** layer (cblas_sgemm on Hugging Face's [in, out] weights, no transposed copies).
**
** Reductions across rows (LayerNorm weight/bias gradients, bias gradients) are split by blocks of
** columns, each summed over rows in row order: the result does not depend on the thread count,
** which keeps runs with different OpenMP settings bit-identical. Matmuls go through zk_sgemm, which
** cuts the output into parts run by the OpenMP threads, each a single-threaded OpenBLAS call: one
** thread pool in all (zk_host.h); bit-identical runs for a given thread count.
*/
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "zk_host.h"
#include "zk_host_math.h"

enum { COLS = 64 };             /* column block of the cross-row reductions */

/* ---------------------------------------------------------------------- LayerNorm */
void zk_layernorm_forward(int n, int c, float eps, const float *x, const float *w, const float *b,
                          float *y, float *mean, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * c;
        float *yr = y + (size_t)r * c;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int i = 0; i < c; i++) s += xr[i];
        float m = s / (float)c;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int i = 0; i < c; i++) v += (xr[i] - m) * (xr[i] - m);
        float rs = 1.0f / sqrtf(v / (float)c + eps);
#pragma omp simd
        for (int i = 0; i < c; i++) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
        mean[r] = m;
        rstd[r] = rs;
    }
}

void zk_layernorm_backward(int n, int c, const float *x, const float *w, const float *mean,
                           const float *rstd, const float *dy, float *dx, float *dw, float *db)
{
    /* dx: row by row. With xh = (x - mean) * rstd and g = dy * w,
    ** dx = rstd * (g - mean(g) - xh * mean(g * xh)). */
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * c, *dyr = dy + (size_t)r * c;
        float *dxr = dx + (size_t)r * c;
        float m = mean[r], rs = rstd[r], sg = 0.0f, sgx = 0.0f;
#pragma omp simd reduction(+ : sg, sgx)
        for (int i = 0; i < c; i++) {
            float g = dyr[i] * w[i];
            sg += g;
            sgx += g * (xr[i] - m) * rs;
        }
        sg /= (float)c;
        sgx /= (float)c;
#pragma omp simd
        for (int i = 0; i < c; i++) {
            float xh = (xr[i] - m) * rs;
            dxr[i] += rs * (dyr[i] * w[i] - sg - xh * sgx);
        }
    }
    if (!dw && !db) return;
    /* dw, db: by column blocks, each summed over rows in order. */
    int nblk = (c + COLS - 1) / COLS;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nblk; k++) {
        int c0 = k * COLS, c1 = c0 + COLS < c ? c0 + COLS : c;
        float aw[COLS] = {0}, ab[COLS] = {0};
        for (int r = 0; r < n; r++) {
            const float *xr = x + (size_t)r * c, *dyr = dy + (size_t)r * c;
            float m = mean[r], rs = rstd[r];
#pragma omp simd
            for (int i = c0; i < c1; i++) {
                aw[i - c0] += dyr[i] * (xr[i] - m) * rs;
                ab[i - c0] += dyr[i];
            }
        }
        for (int i = c0; i < c1; i++) {
            if (dw) dw[i] += aw[i - c0];
            if (db) db[i] += ab[i - c0];
        }
    }
}

/* ---------------------------------------------------------------------- GELU (tanh form) */
/* Written without tanh, which also avoids the cancellation of 1 + tanh(u) for negative x:
**     0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) = s,   gelu(x) = x s,
**     gelu'(x) = s + 2 x s (1 - s) du/dx,           u = k (x + a x^3),
** with the vectorisable zk_exp (zk_host_math.h). */
#define GELU_K 0.7978845608028654f   /* sqrt(2/pi) */
#define GELU_A 0.044715f

ZK_VECTOR_BEGIN
static inline float gelu(float v)
{
    return v / (1.0f + zk_exp(-2.0f * GELU_K * (v + GELU_A * v * v * v)));
}

static inline float gelu_grad(float v)
{
    float s = 1.0f / (1.0f + zk_exp(-2.0f * GELU_K * (v + GELU_A * v * v * v)));
    return s + 2.0f * v * s * (1.0f - s) * GELU_K * (1.0f + 3.0f * GELU_A * v * v);
}

void zk_gelu_forward(size_t n, const float *x, float *y)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = gelu(x[i]);
}

void zk_gelu_backward(size_t n, const float *x, const float *dy, float *dx)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_grad(x[i]);
}

/* ---------------------------------------------------------------------- sgemm on one pool */
int zk_blas_solo(void)
{
    int n = openblas_get_num_threads();
    if (n != 1) openblas_set_num_threads(1);
    return n;
}

void zk_blas_restore(int n)
{
    if (n != 1) openblas_set_num_threads(n);
}

/* What a matmul part does around its sgemm, on its own block of C (same layout as C, ldc):
** before: C = res + bias (either may be NULL; then sgemm accumulates with beta = 1);
** after:  out = gelu(C) (GELU), or out = C * gelu'(aux) (GELU_BACK).
** Doing it per part, right before or after the part's sgemm, saves a parallel region and a pass
** over memory each, and finds the block still in cache. */
enum { EPI_NONE, EPI_GELU, EPI_GELU_BACK };
typedef struct Fuse {
    const float *bias;          /* (N) broadcast over rows, or NULL */
    const float *res;           /* (M, N) at ldc, or NULL; may be C itself (accumulate) */
    int epi;
    const float *aux;           /* (M, N) at ldc: GELU_BACK's input of the GELU */
    float *out;                 /* (M, N) at ldc: the epilogue's output */
} Fuse;

static void prologue(const Fuse *f, float *C, int ldc, int r0, int r1, int c0, int c1)
{
    for (int r = r0; r < r1; r++) {
        float *cr = C + (size_t)r * ldc;
        const float *rr = f->res ? f->res + (size_t)r * ldc : NULL, *b = f->bias;
        if (rr && b) {
#pragma omp simd
            for (int i = c0; i < c1; i++) cr[i] = rr[i] + b[i];
        } else if (rr) {
            if (rr != cr) memcpy(cr + c0, rr + c0, (size_t)(c1 - c0) * sizeof *cr);
        } else {
            memcpy(cr + c0, b + c0, (size_t)(c1 - c0) * sizeof *cr);
        }
    }
}

static void epilogue(const Fuse *f, const float *C, int ldc, int r0, int r1, int c0, int c1)
{
    for (int r = r0; r < r1; r++) {
        const float *cr = C + (size_t)r * ldc;
        float *o = f->out + (size_t)r * ldc;
        if (f->epi == EPI_GELU) {
#pragma omp simd
            for (int i = c0; i < c1; i++) o[i] = gelu(cr[i]);
        } else {
            const float *x = f->aux + (size_t)r * ldc;
#pragma omp simd
            for (int i = c0; i < c1; i++) o[i] = cr[i] * gelu_grad(x[i]);
        }
    }
}

/* One matmul cut into parts (zk_sgemm with a Fuse, NULL: plain). gemm_plan fixes the parts,
** gemm_part runs one; a caller can thus put the parts of several independent matmuls (and other
** work) in one parallel loop, one barrier for all (zk_linear_backward). */
typedef struct Gemm {
    int ta, tb, M, N, K;
    float alpha;
    const float *A;
    int lda;
    const float *B;
    int ldb;
    float beta;
    float *C;
    int ldc;
    const Fuse *f;
    int by_rows, part, nparts;  /* set by gemm_plan */
} Gemm;

static void gemm_plan(Gemm *g)
{
    /* Parts: about PER_THREAD per thread, handed out dynamically, so a thread that the OS
    ** preempts (a shared machine, ranks on the same cores) delays the matmul by a part rather
    ** than by half of it; MIN_PART rows or more, the last part aside (each part repacks the other
    ** operand), and a multiple of GRAIN (the kernels' register tile). The count stays a multiple of the thread
    ** count while it can: 384 rows in 3 parts of 128 on 2 threads left one thread idle for a
    ** third of the matmul (the attention projection's dw); now 2 parts of 192. Part boundaries
    ** depend only on the shape and the thread count, never on which thread runs a part: still
    ** deterministic. */
    enum { GRAIN = 16, MIN_PART = 128, PER_THREAD = 2 };
    g->by_rows = g->M >= g->N;
    int len = g->by_rows ? g->M : g->N, nt = omp_get_max_threads();
    int n = nt * PER_THREAD;
    while (n > 1 && len < n * MIN_PART) n -= n > nt ? nt : 1;
    int part = len > n ? (len + n - 1) / n : 1;     /* len 0: no parts, no division by 0 */
    g->part = (part + GRAIN - 1) / GRAIN * GRAIN;
    g->nparts = (len + g->part - 1) / g->part;
    if (g->f && (g->f->bias || g->f->res)) g->beta = 1.0f;
}

static void gemm_part(const Gemm *g, int k)
{
    int len = g->by_rows ? g->M : g->N, s = k * g->part, e = s + g->part < len ? s + g->part : len;
    int r0 = g->by_rows ? s : 0, r1 = g->by_rows ? e : g->M;
    int c0 = g->by_rows ? 0 : s, c1 = g->by_rows ? g->N : e;
    const float *a = g->A, *b = g->B;
    if (g->by_rows) a += g->ta ? (size_t)s : (size_t)s * g->lda;
    else b += g->tb ? (size_t)s * g->ldb : (size_t)s;
    const Fuse *f = g->f;
    if (f && (f->bias || f->res)) prologue(f, g->C, g->ldc, r0, r1, c0, c1);
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                r1 - r0, c1 - c0, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta,
                g->C + (size_t)r0 * g->ldc + c0, g->ldc);
    if (f && f->epi != EPI_NONE) epilogue(f, g->C, g->ldc, r0, r1, c0, c1);
}

static void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc, const Fuse *f)
{
    Gemm g = {ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, f, 0, 0, 0};
    gemm_plan(&g);
    int solo = zk_blas_solo();
#pragma omp parallel for schedule(dynamic, 1) if (g.nparts > 1)
    for (int k = 0; k < g.nparts; k++) gemm_part(&g, k);
    zk_blas_restore(solo);
}
ZK_VECTOR_END

void zk_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

/* ---------------------------------------------------------------------- linear */
void zk_linear_forward(int n, int in, int out, const float *x, const float *w, const float *b,
                       const float *res, float *y, float *y_gelu)
{
    Fuse f = {b, res, y_gelu ? EPI_GELU : EPI_NONE, NULL, y_gelu};
    gemm(0, 0, n, out, in, 1.0f, x, in, w, out, 0.0f, y, out, &f);
}

/* Column block k of db += sum over rows of dy, rows in order (independent of the thread count). */
static void bias_grad_block(int n, int out, const float *dy, float *db, int k)
{
    int c0 = k * COLS, c1 = c0 + COLS < out ? c0 + COLS : out;
    float acc[COLS] = {0};
    for (int r = 0; r < n; r++) {
        const float *dyr = dy + (size_t)r * out;
#pragma omp simd
        for (int i = c0; i < c1; i++) acc[i - c0] += dyr[i];
    }
    for (int i = c0; i < c1; i++) db[i] += acc[i - c0];
}

void zk_linear_backward(int n, int in, int out, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, const float *gelu_x, float *dgelu)
{
    /* dx, dw and db only read dy (and x, w) and write disjoint outputs: all their parts go in
    ** one dynamic loop, so there is one barrier instead of three and the short, memory-bound
    ** bias columns fill the compute-bound matmuls' tail. */
    Fuse f = {NULL, NULL, EPI_GELU_BACK, gelu_x, dgelu};
    Gemm gx = {0, 1, n, in, out, 1.0f, dy, out, w, out, 0.0f, dx, in, gelu_x ? &f : NULL, 0, 0, 0};
    Gemm gw = {1, 0, in, out, n, 1.0f, x, in, dy, out, 1.0f, dw, out, NULL, 0, 0, 0};
    gemm_plan(&gx);
    gemm_plan(&gw);
    int nx = dx ? gx.nparts : 0, nw = dw ? gw.nparts : 0, nb = db ? (out + COLS - 1) / COLS : 0;
    int solo = zk_blas_solo();
#pragma omp parallel for schedule(dynamic, 1) if (nx + nw + nb > 1)
    for (int k = 0; k < nx + nw + nb; k++) {
        if (k < nx) gemm_part(&gx, k);
        else if (k < nx + nw) gemm_part(&gw, k - nx);
        else bias_grad_block(n, out, dy, db, k - nx - nw);
    }
    zk_blas_restore(solo);
}
