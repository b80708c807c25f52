/*
** t_adam.c — CPU Adam/AdamW (zr_adam.h).
**   1. Steps 1..50 against a double-precision reference written here from the formulas
**      (DeepSpeed's update: bias correction, decoupled or L2 decay, gradient scale), for
**      fp32/bf16/fp16 gradients and 16-bit parameter copies.
**   2. Every SIMD path this CPU has gives the same bits as the scalar path (the design
**      promise: offload choices never change numerics), on sizes that are no multiple of any
**      vector width, single-threaded and with OpenMP chunks.
**   3. Argument checks, path forcing, NaN propagation.
**   4. The fused norm's squares (zr_adam_step_sq) against the order written out here, fed in
**      ascending calls with gaps, and a 16-bit -0 gradient read as +0, on every path.
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "zr_adam.h"
#include "zr_half.h"
#include "zt.h"

static uint64_t rs = 88172645463325252ull;
static double urand(void)            /* [0, 1) */
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (double)(rs >> 11) * 0x1p-53;
}
static float nrand(void) { return (float)((urand() + urand() + urand() - 1.5) * 2.0); }

/* Gradient array of n elements in dtype dt from floats, with zeros, tiny and large values. */
static void *make_grad(const float *src, int64_t n, ZrDtype dt)
{
    void *g = malloc((size_t)n * 4 + 64);
    for (int64_t i = 0; i < n; i++) {
        if (dt == ZR_DT_FP32) ((float *)g)[i] = src[i];
        else if (dt == ZR_DT_BF16) ((uint16_t *)g)[i] = zr_f32_to_bf16(src[i]);
        else ((uint16_t *)g)[i] = zr_f32_to_fp16(src[i]);
    }
    return g;
}
static double grad_at(const void *g, ZrDtype dt, int64_t i)
{
    if (dt == ZR_DT_FP32) return ((const float *)g)[i];
    if (dt == ZR_DT_BF16) return zr_bf16_to_f32(((const uint16_t *)g)[i]);
    return zr_fp16_to_f32(((const uint16_t *)g)[i]);
}
static void fill_grads(float *src, int64_t n, int step)
{
    for (int64_t i = 0; i < n; i++) {
        float x = nrand() * 0.5f;
        if ((i + step) % 11 == 0) x = 0.0f;
        if ((i + step) % 13 == 0) x *= 1e-4f;
        if ((i + step) % 17 == 0) x *= 60.0f;
        src[i] = x;
    }
}

/* {===================================================================== double reference */
typedef struct Ref { double *p, *m, *v; } Ref;

static void ref_step(Ref *r, const ZrAdamCfg *c, const void *g, ZrDtype dt, int64_t n)
{
    double b1 = c->beta1, b2 = c->beta2, t = (double)c->step;
    double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
    for (int64_t i = 0; i < n; i++) {
        double gi = grad_at(g, dt, i) * (double)c->grad_scale, p = r->p[i];
        if (c->weight_decay != 0.0f) {
            if (c->adamw) p -= (double)c->lr * c->weight_decay * p;
            else gi += (double)c->weight_decay * p;
        }
        r->m[i] = b1 * r->m[i] + (1.0 - b1) * gi;
        r->v[i] = b2 * r->v[i] + (1.0 - b2) * gi * gi;
        double denom = sqrt(r->v[i]) / sqrt(bc2) + c->eps;
        r->p[i] = p - (c->lr / bc1) * r->m[i] / denom;
    }
}
/* }===================================================================== */

static void run_vs_reference(int adamw, ZrDtype gdt, ZrDtype p16dt, int64_t n)
{
    float *p = malloc((size_t)n * 4), *m = calloc((size_t)n, 4), *v = calloc((size_t)n, 4);
    float *gsrc = malloc((size_t)n * 4);
    uint16_t *p16 = malloc((size_t)n * 2);
    Ref r = {malloc((size_t)n * 8), calloc((size_t)n, 8), calloc((size_t)n, 8)};
    for (int64_t i = 0; i < n; i++) r.p[i] = p[i] = nrand();
    ZrAdamCfg c = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                   .weight_decay = 0.1f, .adamw = adamw, .grad_scale = 0.25f};
    double worst = 0;
    int64_t worst_i = 0, worst_step = 0;
    for (int step = 1; step <= 50; step++) {
        c.step = step;
        c.grad_scale = step % 2 ? 0.25f : 1.5f;      /* loss-scale / clip factor varies */
        fill_grads(gsrc, n, step);
        void *g = make_grad(gsrc, n, gdt);
        ZT_EQ_INT(zr_adam_step(&c, p, m, v, g, gdt, p16dt == ZR_DT_FP32 ? NULL : p16, p16dt, n), 0);
        ref_step(&r, &c, g, gdt, n);
        for (int64_t i = 0; i < n; i++) {
            /* fp32 state against double. p: absolute error on the scale of the initial
            ** weights (~1), which is where float rounding of p accumulates; m on its natural
            ** scale sqrt(v) (m cancels through zero); v relative. Observed: p <= ~1e-7,
            ** m, v <= ~5e-6 after 50 steps; a wrong bias correction, decay or scale is >= 1e-3. */
            double ep = fabs(p[i] - r.p[i]) / (1.0 + fabs(r.p[i]));
            double em = fabs(m[i] - r.m[i]) / (1e-6 + sqrt(r.v[i]));
            double ev = fabs(v[i] - r.v[i]) / (1e-12 + r.v[i]);
            double e = ep * 20 > em ? ep * 20 : em;    /* one figure: p is held 20x tighter */
            if (ev > e) e = ev;
            if (e > worst) { worst = e; worst_i = i; worst_step = step; }
        }
        if (p16dt != ZR_DT_FP32)
            for (int64_t i = 0; i < n; i++) {
                uint16_t want = p16dt == ZR_DT_BF16 ? zr_f32_to_bf16(p[i]) : zr_f32_to_fp16(p[i]);
                if (p16[i] != want) {
                    ZT_CHECKM(0, "p16[%lld] = %04x, want %04x", (long long)i, p16[i], want);
                    break;
                }
            }
        free(g);
    }
    ZT_CHECKM(worst < 2e-5, "adamw=%d gdt=%d n=%lld: worst relative error %.3g at i=%lld step %lld",
              adamw, gdt, (long long)n, worst, (long long)worst_i, (long long)worst_step);
    free(p); free(m); free(v); free(gsrc); free(p16); free(r.p); free(r.m); free(r.v);
}

static void t_reference_adamw_fp32(void) { run_vs_reference(1, ZR_DT_FP32, ZR_DT_FP32, 1000); }
static void t_reference_adam_l2_fp32(void) { run_vs_reference(0, ZR_DT_FP32, ZR_DT_FP32, 1000); }
static void t_reference_bf16_grad(void) { run_vs_reference(1, ZR_DT_BF16, ZR_DT_BF16, 777); }
static void t_reference_fp16_grad(void) { run_vs_reference(0, ZR_DT_FP16, ZR_DT_FP16, 777); }
static void t_reference_threads(void)
{
    /* large enough for the OpenMP chunks (the size is odd) */
    omp_set_num_threads(2);
    run_vs_reference(1, ZR_DT_FP32, ZR_DT_BF16, 100003);
}

/* Known first step by hand: t=1, m=v=0, g=2, scale 0.5 -> g=1; m=0.1, v=0.001;
** bias-corrected m^=1, v^=1; update = lr * 1/(1+eps) ~= lr. AdamW decay first: p*(1-lr*wd). */
static void t_first_step_by_hand(void)
{
    float p = 1.0f, m = 0, v = 0, g = 2.0f;
    ZrAdamCfg c = {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                   .weight_decay = 0.5f, .adamw = 1, .step = 1, .grad_scale = 0.5f};
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, ZR_DT_FP32, NULL, ZR_DT_FP32, 1), 0);
    ZT_NEAR(p, 1.0 - 0.01 * 0.5 - 0.01, 1e-6, 0);
    ZT_NEAR(m, 0.1, 1e-7, 0);
    ZT_NEAR(v, 0.001, 1e-7, 0);
    /* L2 mode: g = 1 + 0.5*1 = 1.5 enters m and v; the update is still ~lr */
    p = 1.0f; m = v = 0; c.adamw = 0;
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, ZR_DT_FP32, NULL, ZR_DT_FP32, 1), 0);
    ZT_NEAR(m, 0.15, 1e-7, 0);
    ZT_NEAR(p, 1.0 - 0.01, 1e-6, 0);
}

/* {===================================================================== bit-exact paths */
static int same_bits(const void *a, const void *b, size_t bytes, const char *what, const char *impl,
                     int64_t n)
{
    if (memcmp(a, b, bytes) == 0) return 1;
    ZT_CHECKM(0, "%s differs between %s and scalar (n=%lld)", what, impl, (long long)n);
    return 0;
}

static void bitexact_case(const char *impl, int64_t n, ZrDtype gdt, ZrDtype p16dt, int adamw,
                          float wd)
{
    size_t fb = (size_t)n * 4;
    /* +1 element offsets make the arrays unaligned on purpose */
    float *buf = malloc(fb * 6 + 64);
    float *p = buf + 1, *m = p + n, *v = m + n, *p2 = v + n, *m2 = p2 + n, *v2 = m2 + n;
    float *gsrc = malloc(fb);
    uint16_t *h1 = malloc((size_t)n * 2 + 4), *h2 = malloc((size_t)n * 2 + 4);
    for (int64_t i = 0; i < n; i++) {
        p[i] = p2[i] = nrand();
        m[i] = m2[i] = nrand() * 0.01f;
        v[i] = v2[i] = (float)urand() * 1e-3f;
    }
    ZrAdamCfg c = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-6f,
                   .weight_decay = wd, .adamw = adamw, .grad_scale = 0.7f};
    void *want16 = p16dt == ZR_DT_FP32 ? NULL : h1, *got16 = p16dt == ZR_DT_FP32 ? NULL : h2;
    ZT_EQ_INT(zr_adam_force_impl(impl), 0);
    for (int step = 1; step <= 3; step++) {
        c.step = step * 7;
        fill_grads(gsrc, n, step);
        void *g = make_grad(gsrc, n, gdt);
        zr_adam_step_scalar(&c, p, m, v, g, gdt, want16, p16dt, n);
        zr_adam_step(&c, p2, m2, v2, g, gdt, got16, p16dt, n);
        free(g);
    }
    zr_adam_force_impl(NULL);
    int ok = same_bits(p, p2, fb, "p", impl, n) && same_bits(m, m2, fb, "m", impl, n) &&
             same_bits(v, v2, fb, "v", impl, n);
    if (ok && want16) same_bits(h1, h2, (size_t)n * 2, "p16", impl, n);
    free(buf); free(gsrc); free(h1); free(h2);
}

static void bitexact_path(const char *impl)
{
    if (zr_adam_force_impl(impl) == -ENOTSUP) ZT_SKIP("this CPU lacks %s", impl);
    zr_adam_force_impl(NULL);
    static const int64_t sizes[] = {1, 7, 15, 17, 31, 33, 65, 1023};
    static const ZrDtype dts[] = {ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16};
    omp_set_num_threads(2);
    for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int gd = 0; gd < 3; gd++)
            for (int pd = 0; pd < 3; pd++)
                for (int mode = 0; mode < 3; mode++)
                    bitexact_case(impl, sizes[s], dts[gd], dts[pd], mode != 1,
                                  mode == 2 ? 0.0f : 0.05f);
    /* one size past the OpenMP threshold, odd, every gradient type */
    for (int gd = 0; gd < 3; gd++)
        bitexact_case(impl, 1000003, dts[gd], dts[(gd + 1) % 3], gd != 1, 0.01f);
}
static void t_bitexact_avx512(void) { bitexact_path("avx512"); }
static void t_bitexact_avx2(void) { bitexact_path("avx2"); }
static void t_bitexact_scalar_forced(void) { bitexact_path("scalar"); }

/* zr_adam_step_to on every path the CPU has: the in-place step's bits in the outputs, the inputs
** untouched, across the OpenMP threshold and an odd tail. */
static void t_out_of_place(void)
{
    static const char *const impls[] = {"avx512", "avx2", "scalar"};
    int64_t n = 100003;
    size_t fb = (size_t)n * 4;
    float *a = malloc(fb * 9 + 64), *in = a + 1, *out = in + 3 * n, *ref = out + 3 * n;
    float *gsrc = malloc(fb);
    uint16_t *h1 = malloc((size_t)n * 2), *h2 = malloc((size_t)n * 2);
    omp_set_num_threads(2);
    for (int ii = 0; ii < 3; ii++) {
        if (zr_adam_force_impl(impls[ii]) == -ENOTSUP) continue;
        for (int64_t i = 0; i < n; i++) {
            in[i] = ref[i] = nrand();
            in[n + i] = ref[n + i] = nrand() * 0.01f;
            in[2 * n + i] = ref[2 * n + i] = (float)urand() * 1e-3f;
        }
        fill_grads(gsrc, n, ii + 1);
        void *g = make_grad(gsrc, n, ZR_DT_BF16);
        ZrAdamCfg c = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.05f,
                       .adamw = 1, .step = 5, .grad_scale = 0.5f};
        ZT_EQ_INT(zr_adam_step_to(&c, in, in + n, in + 2 * n, out, out + n, out + 2 * n, g, ZR_DT_BF16,
                                  h2, ZR_DT_BF16, n), 0);
        int kept = memcmp(in, ref, fb * 3) == 0;
        ZT_CHECK(kept);
        ZT_EQ_INT(zr_adam_step(&c, ref, ref + n, ref + 2 * n, g, ZR_DT_BF16, h1, ZR_DT_BF16, n), 0);
        ZT_CHECK(same_bits(ref, out, fb * 3, "p,m,v", impls[ii], n));
        ZT_CHECK(memcmp(h1, h2, (size_t)n * 2) == 0);
        ZT_EQ_INT(zr_adam_step_to(&c, NULL, in + n, in + 2 * n, out, out + n, out + 2 * n, g, ZR_DT_BF16,
                                  NULL, ZR_DT_BF16, n), -EINVAL);
        free(g);
    }
    zr_adam_force_impl(NULL);
    free(a); free(gsrc); free(h1); free(h2);
}
/* }===================================================================== */

/* {===================================================================== the norm's squares */
/* The order zr_adam.h defines, element by element: pieces cut at block multiples and at the cuts,
** lane o % 8 ascending within a piece, the piece's lanes added ((0+1)+(2+3))+((4+5)+(6+7)). */
static void squares_by_hand(const void *g, ZrDtype dt, int64_t at, int64_t n, int64_t block,
                            const int64_t *cut, int n_cut, double *piece)
{
    double l[8] = {0};
    int c = 0;
    int64_t id = at / block;
    while (c < n_cut && cut[c] <= at) { c++; id++; }
    for (int64_t i = 0; i < n; i++) {
        int64_t o = at + i;
        double x = grad_at(g, dt, i);
        l[o % 8] += x * x;
        int end = (o + 1) % block == 0 || (c < n_cut && cut[c] == o + 1) || i == n - 1;
        if (!end) continue;
        piece[id++] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        memset(l, 0, sizeof l);
        if (c < n_cut && cut[c] == o + 1) c++;
        else if ((o + 1) % block != 0) id--;            /* the range's end inside a piece */
    }
}

static void squares_case(const char *impl, ZrDtype dt, int64_t n, int64_t block, int threads)
{
    int64_t at = 3 * block + 5;                        /* the range starts inside a block */
    int64_t cut[] = {at + 7, at + block + 3, at + 2 * block + 1, at + n / 2 + 1, at + n - 9};
    int n_cut = 5;
    float *gsrc = malloc((size_t)n * 4);
    fill_grads(gsrc, n, 3);
    /* a gap of zeros the calls skip: inside a piece, across a block end and a cut */
    int64_t gap0 = block + 1, gap1 = 2 * block + 20;
    for (int64_t i = gap0; i < gap1; i++) gsrc[i] = 0;
    void *g = make_grad(gsrc, n, dt);
    int64_t npieces = (at + n) / block + n_cut + 2;
    double *want = calloc((size_t)npieces, 8), *got = calloc((size_t)npieces, 8);
    squares_by_hand(g, dt, at, n, block, cut, n_cut, want);
    float *st = malloc((size_t)n * 4 * 6), *p = st, *m = p + n, *v = m + n, *p2 = v + n, *m2 = p2 + n, *v2 = m2 + n;
    for (int64_t i = 0; i < n; i++) {
        p[i] = p2[i] = nrand();
        m[i] = m2[i] = nrand() * 0.01f;
        v[i] = v2[i] = (float)urand() * 1e-3f;
    }
    ZrAdamCfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.02f,
                   .adamw = 1, .step = 4, .grad_scale = 0.25f};
    ZrAdamSq sq = {.block = block, .cut = cut, .n_cut = n_cut, .piece = got, .open = -1};
    ZT_EQ_INT(zr_adam_force_impl(impl), 0);
    omp_set_num_threads(threads);
    size_t gsz = dt == ZR_DT_FP32 ? 4 : 2;
    /* ascending calls of odd lengths, the gap left out */
    int64_t edges[] = {0, 5, 40, gap0, gap1, gap1 + 3, n / 2, n / 2 + 17, n - 1, n};
    for (int e = 0; e + 1 < (int)(sizeof edges / sizeof *edges); e++) {
        int64_t lo = edges[e], len = edges[e + 1] - lo;
        if (lo == gap0) continue;
        ZT_EQ_INT(zr_adam_step_sq(&c, p + lo, m + lo, v + lo, p + lo, m + lo, v + lo, (char *)g + lo * gsz, dt,
                                  NULL, ZR_DT_BF16, len, at + lo, &sq), 0);
    }
    zr_adam_sq_close(&sq);
    ZT_EQ_INT(zr_adam_step(&c, p2, m2, v2, g, dt, NULL, ZR_DT_BF16, gap0), 0);
    ZT_EQ_INT(zr_adam_step(&c, p2 + gap1, m2 + gap1, v2 + gap1, (char *)g + gap1 * gsz, dt, NULL, ZR_DT_BF16,
                           n - gap1), 0);
    zr_adam_force_impl(NULL);
    int64_t bad = -1;
    for (int64_t i = 0; i < npieces && bad < 0; i++)
        if (memcmp(&want[i], &got[i], 8) != 0) bad = i;
    ZT_CHECKM(bad < 0, "%s dtype %d n=%lld block=%lld threads=%d: piece %lld is %.17g, by hand %.17g", impl,
              (int)dt, (long long)n, (long long)block, threads, (long long)bad,
              bad < 0 ? 0 : got[bad], bad < 0 ? 0 : want[bad]);
    ZT_CHECKM(memcmp(p, p2, (size_t)n * 12) == 0, "%s: the update differs with the squares on", impl);
    free(gsrc); free(g); free(want); free(got); free(st);
}

static void t_squares(void)
{
    static const char *const impls[] = {"avx512", "avx2", "scalar"};
    static const ZrDtype dts[] = {ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16};
    for (int ii = 0; ii < 3; ii++) {
        if (zr_adam_force_impl(impls[ii]) == -ENOTSUP) continue;
        for (int d = 0; d < 3; d++) {
            squares_case(impls[ii], dts[d], 1000, 64, 1);
            squares_case(impls[ii], dts[d], 300001, 4096, 2);   /* past the OpenMP threshold */
            squares_case(impls[ii], dts[d], 300001, 4096, 3);
        }
    }
    zr_adam_force_impl(NULL);
}

/* A 16-bit -0 gradient updates as +0 does: with m = -0 in, the two would differ in m's sign. */
static void t_negative_zero(void)
{
    static const char *const impls[] = {"avx512", "avx2", "scalar"};
    enum { N = 37 };
    for (int ii = 0; ii < 3; ii++) {
        if (zr_adam_force_impl(impls[ii]) == -ENOTSUP) continue;
        for (int bf = 0; bf < 2; bf++) {
            float p[2][N], m[2][N], v[2][N];
            uint16_t g[2][N];
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < N; i++) {
                    p[k][i] = 1.0f; m[k][i] = -0.0f; v[k][i] = 0.0f;
                    g[k][i] = k ? 0x8000 : 0x0000;
                }
            ZrAdamCfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 1,
                           .grad_scale = 1};
            for (int k = 0; k < 2; k++)
                ZT_EQ_INT(zr_adam_step(&c, p[k], m[k], v[k], g[k], bf ? ZR_DT_BF16 : ZR_DT_FP16, NULL,
                                       ZR_DT_BF16, N), 0);
            ZT_CHECKM(memcmp(m[0], m[1], sizeof m[0]) == 0 && memcmp(p[0], p[1], sizeof p[0]) == 0,
                      "%s %s: -0 updates differently from +0 (m %g)", impls[ii], bf ? "bf16" : "fp16",
                      (double)m[1][0]);
        }
    }
    zr_adam_force_impl(NULL);
}
/* }===================================================================== */

static void t_dispatch(void)
{
    const char *want = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                           ? "avx512"
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")
                                 ? "avx2" : "scalar";
    ZT_EQ_STR(zr_adam_impl_name(), want);
    ZT_EQ_INT(zr_adam_force_impl("scalar"), 0);
    ZT_EQ_STR(zr_adam_impl_name(), "scalar");
    ZT_EQ_INT(zr_adam_force_impl("avx9000"), -EINVAL);
    ZT_EQ_INT(zr_adam_force_impl(NULL), 0);
    ZT_EQ_STR(zr_adam_impl_name(), want);
}

static void t_bad_args(void)
{
    float p = 1, m = 0, v = 0, g = 1;
    uint16_t h;
    ZrAdamCfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 0,
                   .grad_scale = 1};
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, ZR_DT_FP32, NULL, ZR_DT_FP32, 1), -EINVAL);
    c.step = 1;
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, (ZrDtype)7, NULL, ZR_DT_FP32, 1), -EINVAL);
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, ZR_DT_FP32, &h, ZR_DT_FP32, 1), -EINVAL);
    ZT_EQ_INT(zr_adam_step(&c, NULL, &m, &v, &g, ZR_DT_FP32, NULL, ZR_DT_FP32, 1), -EINVAL);
    ZT_EQ_INT(zr_adam_step(&c, &p, &m, &v, &g, ZR_DT_FP32, NULL, ZR_DT_FP32, -1), -EINVAL);
    ZT_EQ_INT(zr_adam_step(&c, NULL, NULL, NULL, NULL, ZR_DT_FP32, NULL, ZR_DT_FP32, 0), 0);
    ZT_EQ_INT(p, 1);                                  /* untouched by the failed calls */
}

/* An overflowed gradient (Inf/NaN) must poison the parameter on every path, never vanish. */
static void t_nan_propagates(void)
{
    const char *impls[] = {"scalar", "avx2", "avx512"};
    for (int k = 0; k < 3; k++) {
        if (zr_adam_force_impl(impls[k]) != 0) continue;
        float p[40], m[40] = {0}, v[40] = {0}, g[40];
        for (int i = 0; i < 40; i++) { p[i] = 1; g[i] = 0.1f; }
        g[3] = NAN; g[20] = INFINITY; g[39] = NAN;
        ZrAdamCfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 1,
                       .grad_scale = 1};
        zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_FP32, 40);
        ZT_CHECKM(isnan(p[3]) && isnan(p[20]) && isnan(p[39]) && !isnan(p[4]),
                  "%s: p = %g %g %g %g", impls[k], p[3], p[20], p[39], p[4]);
    }
    zr_adam_force_impl(NULL);
}

int main(void)
{
    ZT_RUN(t_dispatch);
    ZT_RUN(t_bad_args);
    ZT_RUN(t_first_step_by_hand);
    ZT_RUN(t_reference_adamw_fp32);
    ZT_RUN(t_reference_adam_l2_fp32);
    ZT_RUN(t_reference_bf16_grad);
    ZT_RUN(t_reference_fp16_grad);
    ZT_RUN(t_reference_threads);
    ZT_RUN(t_bitexact_avx512);
    ZT_RUN(t_bitexact_avx2);
    ZT_RUN(t_bitexact_scalar_forced);
    ZT_RUN(t_nan_propagates);
    ZT_RUN(t_out_of_place);
    ZT_RUN(t_squares);
    ZT_RUN(t_negative_zero);
    return zt_end();
}
