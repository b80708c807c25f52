/*
** b_adam.c — CPU Adam throughput against the memory-bandwidth bound, measured in the same run.
**
** 100M fp32 parameters, 2 OpenMP threads (or ZB_ADAM_N / OMP_NUM_THREADS). The bound is a
** stream over the same bytes and the same access pattern as Adam (read p, m, v, g; write p, m, v:
** 28 B/param), vectorised and threaded the same way, so the ratio says how close the optimizer
** is to what the memory allows. The two are timed alternately, 5 pairs, and the median of the
** pair-by-pair ratios is reported (this machine's memory is shared and noisy).
**   b_adam              the figure, appended to $ZB_RESULTS as one JSON object
**   b_adam --time K     only zr_adam_step, K timed steps; prints "Mparam/s <x>" (used by
**                       b_adam_torch.sh to compare with torch.optim.AdamW alternately)
*/
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "zr_adam.h"
#include "zb.h"

/* The bound: p += s*g, m += s*g, v += s*g — 4 reads and 3 writes per element, like Adam. */
__attribute__((target("avx512f"))) static void stream512(float *p, float *m, float *v,
                                                         const float *g, int64_t n)
{
    const __m512 s = _mm512_set1_ps(1e-7f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_mul_ps(s, _mm512_loadu_ps(g + i));
        _mm512_storeu_ps(p + i, _mm512_add_ps(_mm512_loadu_ps(p + i), x));
        _mm512_storeu_ps(m + i, _mm512_add_ps(_mm512_loadu_ps(m + i), x));
        _mm512_storeu_ps(v + i, _mm512_add_ps(_mm512_loadu_ps(v + i), x));
    }
    for (; i < n; i++) { float x = 1e-7f * g[i]; p[i] += x; m[i] += x; v[i] += x; }
}
static void stream_plain(float *p, float *m, float *v, const float *g, int64_t n)
{
    for (int64_t i = 0; i < n; i++) { float x = 1e-7f * g[i]; p[i] += x; m[i] += x; v[i] += x; }
}

/* Same chunking as zr_adam_step: one contiguous piece per thread. */
static void stream(float *p, float *m, float *v, const float *g, int64_t n)
{
    int wide = __builtin_cpu_supports("avx512f");
    #pragma omp parallel
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t per = ((n + nth - 1) / nth + 63) & ~(int64_t)63;
        int64_t lo = per * tid, hi = lo + per < n ? lo + per : n;
        if (lo < hi) {
            if (wide) stream512(p + lo, m + lo, v + lo, g + lo, hi - lo);
            else stream_plain(p + lo, m + lo, v + lo, g + lo, hi - lo);
        }
    }
}

int main(int argc, char **argv)
{
    int64_t n = getenv("ZB_ADAM_N") ? atoll(getenv("ZB_ADAM_N")) : 100000000;
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(2);
    int threads = omp_get_max_threads();
    float *p = aligned_alloc(64, (size_t)n * 4), *m = aligned_alloc(64, (size_t)n * 4);
    float *v = aligned_alloc(64, (size_t)n * 4), *g = aligned_alloc(64, (size_t)n * 4);
    if (!p || !m || !v || !g) {
        fprintf(stderr, "b_adam: out of memory for %lld params\n", (long long)n);
        return 1;
    }
    /* first touch in the same thread layout as the timed loops */
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        p[i] = (float)(i % 1000) * 1e-3f - 0.5f;
        m[i] = 0;
        v[i] = 0;
        g[i] = (float)((i * 7) % 1000) * 2e-4f - 0.1f;
    }
    ZrAdamCfg c = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                   .weight_decay = 0.01f, .adamw = 1, .step = 1, .grad_scale = 1.0f};
    zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_FP32, n);          /* warm-up */
    if (argc > 2 && strcmp(argv[1], "--time") == 0) {
        int k = atoi(argv[2]);
        double best = 1e30;
        for (int i = 0; i < k; i++) {
            c.step++;
            double t0 = zb_now();
            zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_FP32, n);
            double t = zb_now() - t0;
            if (t < best) best = t;
        }
        printf("Mparam/s %.1f\n", (double)n / best / 1e6);
        return 0;
    }
    stream(p, m, v, g, n);
    enum { PAIRS = 5 };
    double ratio[PAIRS], adam[PAIRS], bound[PAIRS];
    for (int r = 0; r < PAIRS; r++) {
        c.step++;
        double t0 = zb_now();
        zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_FP32, n);
        double ta = zb_now() - t0;
        t0 = zb_now();
        stream(p, m, v, g, n);
        double ts = zb_now() - t0;
        zb_pair(r, n, ta, ts, "adam", 28e-3, adam, bound, ratio);
    }
    double med = zb_median(ratio, PAIRS), madam = zb_median(adam, PAIRS);
    double mbound = zb_median(bound, PAIRS);
    printf("cpu adam (%s, %d threads, %lld params): %.0f Mparam/s, bound %.0f Mparam/s, "
           "median ratio %.3f\n", zr_adam_impl_name(), threads, (long long)n, madam,
           mbound, med);
    if (zb_append("{\"name\": \"cpu_adam_fp32_%lldM_%dthreads\", \"value\": %.1f, "
                  "\"unit\": \"Mparam/s\", \"peer\": \"memory bound (4R/3W stream, 28 B/param)\", "
                  "\"peer_value\": %.1f, \"ratio\": %.3f, \"note\": \"%s path; median of %d "
                  "alternating pairs; target >= 0.8\"}\n", (long long)(n / 1000000), threads,
                  madam, mbound, med, zr_adam_impl_name(), PAIRS))
        return 1;
    free(p); free(m); free(v); free(g);
    return 0;
}
