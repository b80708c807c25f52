/*
** t_gpu_gemm_lt.cpp — the stand-in's GEMM with a fused epilogue (zr_gpu_gemm_lt in
** templates/cuda_trainer/zr_gpu_emu.cpp), at odd shapes, against a float64 reference and against the
** unfused sequence it replaces in cuda_model.c (gemm_ex + bias gemm, zd_bias_gelu_forward,
** zd_gelu_backward, the bias gradient as a gemm against ones).
** Bounds. u = 2^-8 for a bf16 result (one rounding, relative; 2^-9 would do, as in t_gpu_gemm_ex),
** u32 = 2^-24. X = alpha op(A) op(B) + beta C, S = sum_k |a_k b_k| + |beta c| + |bias_j|,
** e32 = 2 (K + 2) u32 S (fp32 sums in any order, Higham's gamma doubled), G1 = 1.2 >= max|gelu'| of
** the tanh form (1.13), ge(x) = 8 u32 (|x| + 1) the fp32 evaluation of gelu, dge(x) = 16 u32 (1 + T)
** that of gelu' (T the sum of its terms' magnitudes):
**   BIAS       |d - (X + b)|              <= u |X + b| + e32
**   GELU_BIAS  |aux - P|, P = X + b       <= u |P| + e32
**              |d - gelu(P)|              <= u |gelu(P)| + G1 e32 + ge(P)
**   DGELU      |d - X gelu'(aux)|         <= u |X g| + |g| e32 + |X| dge(aux)
**   BGRAD      |bias_j - sum_k op(B)kj|   <= 2 K u32 sum_k |op(B)kj|      (fp32 result)
** Against the unfused sequence (which rounds X to bf16 first, then adds the bias or multiplies by
** gelu' and rounds again), with y the fused result and z the unfused one:
**   BIAS       |y - z| <= u (|y| + |z|) + 2 e32                 (both one rounding of X + b)
**   GELU_BIAS  dp = u (1 + u) (2 |X| + |b|) + 2 e32 bounds |pre_unfused - P|;
**              |aux - pre_unfused| <= dp + u (1 + u) |P|;  |y - z| <= u (|y| + |z|) + G1 dp + 2 ge
**   DGELU      |y - z| <= u (|y| + |z|) + |g| (u (1 + u) |X| + 2 e32) + 2 |X| dge
**   BGRAD      |y - z| <= 4 K u32 sum |dy|                       (two fp32 sums in other orders)
** A mutant check proves the bias-gradient comparison can fail: a "sum" of the last row only (or of
** all rows but the first) is rejected by the same test. The stand-in refuses what cuBLASLt refuses
** (aux's leading dimension below N or not a multiple of 8, DGELU with beta) and declares footprints.
*/
#define ZK_C 64                /* the stand-in compiles every kernel: small shapes */
#define ZK_NH 2
#define ZK_T 16
#define ZK_V 64
#define ZK_F 72                /* N of the unfused comparisons (the GELU kernels' row width) */
#define ZK_L 1
#define ZK_IO 1                /* bf16 storage, as a bf16 plan's kernels */
#include "../../templates/cuda_trainer/zr_gpu_emu.cpp"

#include <math.h>
#include "zt.h"

#include "zk_coll_stubs.h"      /* the stand-in's collectives call libzrt; nothing here reaches them */

static const double U = 1.0 / 256, U32 = 1.0 / 16777216, G1 = 1.2;

struct Rig {
    ZrGpu *g = nullptr;
    ZrGpuStream *s = nullptr, *s2 = nullptr;
    char *dev = nullptr;
    size_t used = 0;
    Rig()
    {
        zr_gpu_open(&g, 0, nullptr, 0);
        zr_gpu_stream_create(g, &s, "compute");
        zr_gpu_stream_create(g, &s2, "h2d");
        zr_gpu_malloc(g, (void **)&dev, 4 << 20);
    }
    ~Rig() { zr_gpu_close(g); }
    void *alloc(size_t n) { void *p = dev + used; used += (n + 255) & ~(size_t)255; return p; }
    template <typename T> void *up(const std::vector<T> &v)
    {
        void *p = alloc(v.size() * sizeof(T));
        zr_gpu_copy(s, ZR_GPU_H2D, p, v.data(), v.size() * sizeof(T));
        return p;
    }
    template <typename T> void down(std::vector<T> &v, const void *p)
    {
        zr_gpu_copy(s, ZR_GPU_D2H, v.data(), p, v.size() * sizeof(T));
        zr_gpu_stream_sync(s);
    }
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void)                   /* in [-1, 1) */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static uint16_t bf(float v) { return zr_f32_to_bf16(v); }
static double fb(uint16_t h) { return zr_bf16_to_f32(h); }

/* GELU, tanh form, and its derivative, in float64 (the host kernels' formula). */
static double sig(double v) { return 1.0 / (1.0 + exp(-2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v))); }
static double gelu(double v) { return v * sig(v); }
static void dgelu(double v, double *g, double *terms)
{
    double s = sig(v), du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * v * v), t = 2.0 * v * s * (1.0 - s) * du;
    *g = s + t;
    *terms = fabs(s) + fabs(t);
}
static double ge(double x) { return 8.0 * U32 * (fabs(x) + 1.0); }

/* One problem: bf16 A (M x K, or K x M when ta) and B, padded leading dimensions, a bias, a C. */
struct Prob {
    int ta, tb, M, N, K, lda, ldb, ldd, ldx;
    float beta;
    std::vector<uint16_t> A, B, bias, C;
    Prob(int ta_, int tb_, int M_, int N_, int K_, float beta_)
        : ta(ta_), tb(tb_), M(M_), N(N_), K(K_), beta(beta_)
    {
        lda = (ta ? M : K) + 3; ldb = (tb ? K : N) + 1; ldd = N + 2; ldx = (N + 7) / 8 * 8 + 8;
        A.resize((size_t)(ta ? K : M) * lda); B.resize((size_t)(tb ? N : K) * ldb);
        bias.resize((size_t)N); C.resize((size_t)M * ldd);
        for (auto &x : A) x = bf(urand() * 2.0f);
        for (auto &x : B) x = bf(urand());
        for (auto &x : bias) x = bf(urand());
        for (auto &x : C) x = bf(urand());
    }
    double a(int i, int k) const { return fb(A[ta ? (size_t)k * lda + i : (size_t)i * lda + k]); }
    double b(int k, int j) const { return fb(B[tb ? (size_t)j * ldb + k : (size_t)k * ldb + j]); }
    /* X and S (without the bias) in float64 */
    void x(int i, int j, double *X, double *S) const
    {
        *X = 0; *S = 0;
        for (int k = 0; k < K; k++) { *X += a(i, k) * b(k, j); *S += fabs(a(i, k) * b(k, j)); }
        double c = (double)beta * fb(C[(size_t)i * ldd + j]);
        *X += c; *S += fabs(c);
    }
};

static double worse(double w, double err, double bound)
{
    double e = err / (bound > 0 ? bound : 1e-300);
    return e <= w ? w : e;                  /* NaN stays the worst */
}

/* BIAS and GELU_BIAS against float64; returns the worst err / bound. */
static double run_fwd(const Prob &p, ZrGpuEpilogue epi)
{
    Rig r;
    void *dA = r.up(p.A), *dB = r.up(p.B), *db = r.up(p.bias), *dD = r.up(p.C);
    std::vector<uint16_t> D(p.C.size()), X((size_t)p.M * p.ldx);
    void *dX = r.alloc(X.size() * 2);
    int rc = zr_gpu_gemm_lt(r.s, p.ta, p.tb, p.M, p.N, p.K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, p.beta, dD, dD,
                            p.ldd, ZR_DT_BF16, epi, db, dX, p.ldx);
    if (rc != 0) return 1e30;
    r.down(D, dD);
    r.down(X, dX);
    double w = 0;
    for (int i = 0; i < p.M; i++)
        for (int j = 0; j < p.N; j++) {
            double Xr, S;
            p.x(i, j, &Xr, &S);
            double bj = fb(p.bias[(size_t)j]), P = Xr + bj, e32 = 2.0 * (p.K + 2) * U32 * (S + fabs(bj));
            double d = fb(D[(size_t)i * p.ldd + j]);
            if (epi == ZR_GPU_EPI_BIAS) { w = worse(w, fabs(d - P), U * fabs(P) + e32); continue; }
            w = worse(w, fabs(fb(X[(size_t)i * p.ldx + j]) - P), U * fabs(P) + e32);
            w = worse(w, fabs(d - gelu(P)), U * fabs(gelu(P)) + G1 * e32 + ge(P));
        }
    return w;
}

/* DGELU (aux given, beta 0) against float64. */
static double run_dgelu(const Prob &p)
{
    Rig r;
    std::vector<uint16_t> aux((size_t)p.M * p.ldx), D(p.C.size());
    for (auto &x : aux) x = bf(urand() * 3.0f);
    void *dA = r.up(p.A), *dB = r.up(p.B), *dX = r.up(aux), *dD = r.alloc(D.size() * 2);
    if (zr_gpu_gemm_lt(r.s, p.ta, p.tb, p.M, p.N, p.K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, 0.0f, nullptr, dD,
                       p.ldd, ZR_DT_BF16, ZR_GPU_EPI_DGELU, nullptr, dX, p.ldx) != 0)
        return 1e30;
    r.down(D, dD);
    double w = 0;
    for (int i = 0; i < p.M; i++)
        for (int j = 0; j < p.N; j++) {
            double Xr = 0, S = 0;
            for (int k = 0; k < p.K; k++) { Xr += p.a(i, k) * p.b(k, j); S += fabs(p.a(i, k) * p.b(k, j)); }
            double g, T;
            dgelu(fb(aux[(size_t)i * p.ldx + j]), &g, &T);
            double e32 = 2.0 * (p.K + 2) * U32 * S, ref = Xr * g;
            w = worse(w, fabs(fb(D[(size_t)i * p.ldd + j]) - ref),
                      U * fabs(ref) + fabs(g) * e32 + fabs(Xr) * 16.0 * U32 * (1.0 + T));
        }
    return w;
}

/* BGRAD into fp32: D (fp32, beta 1 onto C) and the bias gradient; *mutant gets the worst ratio of
** the same comparison against a wrong reference (last row of op(B) only; all rows but the first). */
static double run_bgrad(const Prob &p, double *mutant_last, double *mutant_skip)
{
    Rig r;
    std::vector<float> C32((size_t)p.M * p.ldd), db((size_t)p.N, 123.0f);
    for (auto &x : C32) x = urand();
    void *dA = r.up(p.A), *dB = r.up(p.B), *dD = r.up(C32), *ddb = r.up(db);
    std::vector<float> D(C32.size());
    if (zr_gpu_gemm_lt(r.s, p.ta, p.tb, p.M, p.N, p.K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, 1.0f, dD, dD, p.ldd,
                       ZR_DT_FP32, ZR_GPU_EPI_BGRAD, ddb, nullptr, 0) != 0)
        return 1e30;
    r.down(D, dD);
    r.down(db, ddb);
    double w = 0, ml = 0, ms = 0;
    for (int i = 0; i < p.M; i++)
        for (int j = 0; j < p.N; j++) {
            double Xr = 0, S = 0;
            for (int k = 0; k < p.K; k++) { Xr += p.a(i, k) * p.b(k, j); S += fabs(p.a(i, k) * p.b(k, j)); }
            double c = C32[(size_t)i * p.ldd + j];
            w = worse(w, fabs(D[(size_t)i * p.ldd + j] - (Xr + c)), 2.0 * (p.K + 1) * U32 * (S + fabs(c)));
        }
    for (int j = 0; j < p.N; j++) {
        double ref = 0, S = 0, last = p.b(p.K - 1, j), skip = 0;
        for (int k = 0; k < p.K; k++) { ref += p.b(k, j); S += fabs(p.b(k, j)); if (k) skip += p.b(k, j); }
        double bound = 2.0 * p.K * U32 * S;
        w = worse(w, fabs(db[(size_t)j] - ref), bound);
        ml = worse(ml, fabs(db[(size_t)j] - last), bound);
        ms = worse(ms, fabs(db[(size_t)j] - skip), bound);
    }
    *mutant_last = ml;
    *mutant_skip = ms;
    return w;
}

static void t_bias_within_bound(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            ZT_CHECK(run_fwd(Prob(ta, tb, 13, 37, 29, 0.0f), ZR_GPU_EPI_BIAS) <= 1.0);
            ZT_CHECK(run_fwd(Prob(ta, tb, 7, 21, 45, 1.0f), ZR_GPU_EPI_BIAS) <= 1.0);    /* residual: C + X + b */
        }
}

static void t_gelu_bias_within_bound(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) ZT_CHECK(run_fwd(Prob(ta, tb, 11, 37, 33, 0.0f), ZR_GPU_EPI_GELU_BIAS) <= 1.0);
}

static void t_dgelu_within_bound(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) ZT_CHECK(run_dgelu(Prob(ta, tb, 9, 43, 31, 0.0f)) <= 1.0);
}

static void t_bgrad_sums_every_row(void)
{
    for (int tb = 0; tb < 2; tb++) {
        double ml, ms;
        ZT_CHECK(run_bgrad(Prob(1, tb, 19, 23, 41, 1.0f), &ml, &ms) <= 1.0);     /* dW = x^T dy, db = colsum dy */
        ZT_CHECK(ml > 1.0);                    /* the comparison rejects a gradient of the last row only */
        ZT_CHECK(ms > 1.0);                    /* ... and one that skips the first row */
    }
}

/* The unfused sequence of cuda_model.c on the same stand-in, N = ZK_F (the GELU kernels' width). */
static void t_matches_unfused_sequence(void)
{
    const int M = 13, N = ZK_F, K = 37;
    Prob p(0, 0, M, N, K, 0.0f);
    Rig r;
    std::vector<uint16_t> ones((size_t)M, bf(1.0f));
    void *dA = r.up(p.A), *dB = r.up(p.B), *db = r.up(p.bias), *d1 = r.up(ones);
    size_t n = (size_t)M * N;
    void *yf = r.alloc(n * 2), *xf = r.alloc(n * 2), *yu = r.alloc(n * 2), *xu = r.alloc(n * 2), *t = r.alloc(n * 2);
    int nn = M;
    unsigned grid[3] = {(unsigned)((n + 255) / 256), 1, 1}, blk[3] = {256, 1, 1};
    /* BIAS: fused vs ones(M,1) @ b then the gemm with beta 1 */
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, M, N, K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, 0.0f, nullptr, yf, N,
                             ZR_DT_BF16, ZR_GPU_EPI_BIAS, db, nullptr, 0), 0);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, M, N, 1, 1.0f, d1, ZR_DT_BF16, 1, db, ZR_DT_BF16, N, 0.0f, yu, ZR_DT_BF16, N,
                             ZR_GPU_COMPUTE_32F), 0);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, M, N, K, 1.0f, dA, ZR_DT_BF16, p.lda, dB, ZR_DT_BF16, p.ldb, 1.0f, yu,
                             ZR_DT_BF16, N, ZR_GPU_COMPUTE_32F), 0);
    std::vector<uint16_t> Yf(n), Yu(n), Xf(n), Xu(n);
    r.down(Yf, yf);
    r.down(Yu, yu);
    double w = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double X, S, bj = fb(p.bias[(size_t)j]);
            p.x(i, j, &X, &S);
            double y = fb(Yf[(size_t)i * N + j]), z = fb(Yu[(size_t)i * N + j]);
            w = worse(w, fabs(y - z), U * (fabs(y) + fabs(z)) + 4.0 * (K + 2) * U32 * (S + fabs(bj)));
        }
    ZT_CHECK(w <= 1.0);
    /* GELU_BIAS: fused vs gemm (no bias) then zd_bias_gelu_forward(out, pre, x, bias) */
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, M, N, K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, 0.0f, nullptr, yf, N,
                             ZR_DT_BF16, ZR_GPU_EPI_GELU_BIAS, db, xf, N), 0);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, M, N, K, 1.0f, dA, ZR_DT_BF16, p.lda, dB, ZR_DT_BF16, p.ldb, 0.0f, t,
                             ZR_DT_BF16, N, ZR_GPU_COMPUTE_32F), 0);
    {
        const void *tc = t, *bc = db;
        void *args[] = {&yu, &xu, &tc, &bc, &nn, nullptr};
        ZT_EQ_INT(zr_gpu_launch(r.s, "zd_bias_gelu_forward", grid, blk, 0, args), 0);
    }
    r.down(Yf, yf); r.down(Yu, yu); r.down(Xf, xf); r.down(Xu, xu);
    w = 0;
    double wa = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double X, S, bj = fb(p.bias[(size_t)j]);
            p.x(i, j, &X, &S);
            double e32 = 2.0 * (K + 2) * U32 * (S + fabs(bj)), P = X + bj;
            double dp = U * (1 + U) * (2 * fabs(X) + fabs(bj)) + 2 * e32;
            size_t o = (size_t)i * N + j;
            wa = worse(wa, fabs(fb(Xf[o]) - fb(Xu[o])), dp + U * (1 + U) * fabs(P));
            double y = fb(Yf[o]), z = fb(Yu[o]);
            w = worse(w, fabs(y - z), U * (fabs(y) + fabs(z)) + G1 * dp + 2 * ge(P));
        }
    ZT_CHECK(wa <= 1.0);
    ZT_CHECK(w <= 1.0);
    /* DGELU: fused (aux = the saved pre-activation) vs gemm then zd_gelu_backward(dpre, pre, dy) */
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, M, N, K, 1.0f, dA, p.lda, dB, p.ldb, ZR_DT_BF16, 0.0f, nullptr, yf, N,
                             ZR_DT_BF16, ZR_GPU_EPI_DGELU, nullptr, xf, N), 0);
    {
        const void *pc = xf, *tc = t;
        void *args[] = {&yu, &pc, &tc, &nn, nullptr};
        ZT_EQ_INT(zr_gpu_launch(r.s, "zd_gelu_backward", grid, blk, 0, args), 0);
    }
    r.down(Yf, yf); r.down(Yu, yu); r.down(Xf, xf);
    w = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double X, S, g, T;
            p.x(i, j, &X, &S);
            size_t o = (size_t)i * N + j;
            dgelu(fb(Xf[o]), &g, &T);
            double e32 = 2.0 * (K + 2) * U32 * S, y = fb(Yf[o]), z = fb(Yu[o]);
            w = worse(w, fabs(y - z), U * (fabs(y) + fabs(z)) + fabs(g) * (U * (1 + U) * fabs(X) + 2 * e32) +
                                      2 * fabs(X) * 16.0 * U32 * (1.0 + T));
        }
    ZT_CHECK(w <= 1.0);
    /* BGRAD: fused vs db += ones(1,M) @ dy (fp32 C), dy = the bf16 B (M x N here: K = M rows) */
    Prob q(1, 0, 17, N, M, 0.0f);              /* dW (17 x N) = x^T dy, dy = q.B (M x N) */
    void *qa = r.up(q.A), *qb = r.up(q.B);
    std::vector<float> dbf((size_t)N, 7.0f), dbu((size_t)N, 0.0f), dw((size_t)17 * q.ldd);
    void *ddbf = r.up(dbf), *ddbu = r.up(dbu), *ddw = r.alloc(dw.size() * 4);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 1, 0, 17, N, M, 1.0f, qa, q.lda, qb, q.ldb, ZR_DT_BF16, 0.0f, nullptr, ddw, q.ldd,
                             ZR_DT_FP32, ZR_GPU_EPI_BGRAD, ddbf, nullptr, 0), 0);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, 1, N, M, 1.0f, d1, ZR_DT_BF16, M, qb, ZR_DT_BF16, q.ldb, 1.0f, ddbu,
                             ZR_DT_FP32, N, ZR_GPU_COMPUTE_32F), 0);
    r.down(dbf, ddbf);
    r.down(dbu, ddbu);
    w = 0;
    for (int j = 0; j < N; j++) {
        double S = 0;
        for (int k = 0; k < M; k++) S += fabs(q.b(k, j));
        w = worse(w, fabs((double)dbf[(size_t)j] - dbu[(size_t)j]), 4.0 * M * U32 * S);
    }
    ZT_CHECK(w <= 1.0);
}

static void t_refuses_and_declares_footprints(void)
{
    Rig r;
    char *d = r.dev;
    /* aux's leading dimension: below N, or not a multiple of 8 (cuBLASLt's rule) */
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 0.0f, nullptr, d + 4096, 12,
                             ZR_DT_BF16, ZR_GPU_EPI_GELU_BIAS, d + 8192, d + 12288, 12), -EINVAL);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 0.0f, nullptr, d + 4096, 12,
                             ZR_DT_BF16, ZR_GPU_EPI_GELU_BIAS, d + 8192, d + 12288, 8), -EINVAL);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 1.0f, d + 4096, d + 4096, 12,
                             ZR_DT_BF16, ZR_GPU_EPI_DGELU, nullptr, d + 12288, 16), -EINVAL);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 0.0f, nullptr, d + 4096, 12,
                             ZR_DT_BF16, ZR_GPU_EPI_BIAS, nullptr, nullptr, 0), -EINVAL);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 0.0f, nullptr, d + 4096, 12,
                             ZR_DT_FP16, ZR_GPU_EPI_NONE, nullptr, nullptr, 0), -EINVAL);
    /* the bias written by another stream's copy with no wait: the epilogue's read is a race */
    static char host[64];
    zr_gpu_host_register(r.g, host, sizeof host);
    ZT_EQ_INT(zr_gpu_copy(r.s2, ZR_GPU_H2D, d + 8192, host, 8), 0);
    ZT_EQ_INT(zr_gpu_gemm_lt(r.s, 0, 0, 4, 12, 4, 1.0f, d, 4, d, 12, ZR_DT_BF16, 0.0f, nullptr, d + 4096, 12,
                             ZR_DT_BF16, ZR_GPU_EPI_BIAS, d + 8192, nullptr, 0), -EFAULT);
    ZT_CHECK(strstr(zr_gpu_strerror(r.g), "gemm_lt BIAS") != nullptr);
    zr_gpu_stream_sync(r.s2);
}

int main(void)
{
    ZT_RUN(t_bias_within_bound);
    ZT_RUN(t_gelu_bias_within_bound);
    ZT_RUN(t_dgelu_within_bound);
    ZT_RUN(t_bgrad_sums_every_row);
    ZT_RUN(t_matches_unfused_sequence);
    ZT_RUN(t_refuses_and_declares_footprints);
    return zt_end();
}
