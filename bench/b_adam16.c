/*
** b_adam16.c — the fused 16-bit CPU Adam of ZeRO-Offload (issue 9): bf16 gradients in, fp32
** master/m/v updated, bf16 parameters out, in ONE pass (zr_adam_step with gdt = ZR_DT_BF16 and a
** bf16 p16: zr_adam_avx512.c widens g, updates and narrows p in the same loop), against a stream
** over the same bytes per parameter measured in the same run: read p, m, v (fp32) and g (bf16),
** write p, m, v and p16 (bf16) = 28 B/param, vectorised and threaded the same way. DeepSpeed makes
** three passes for the same result (widen-add the 16-bit gradients, Adam on fp32, narrow the
** parameters into the copy that goes back to the GPU).
** The speculative step's pass (zr_adam_step_sq: the same, plus the fused norm's squares of the
** gradients it reads, in 4096-element pieces) is measured in the same alternation against the same
** stream: the norm it saves the host a pass for should cost it nothing at memory bandwidth.
** 100M parameters (ZB_ADAM_N), 2 OpenMP threads (OMP_NUM_THREADS); 5 alternating rounds, the
** median of the round-by-round ratios. Aim: ratio >= 0.9. Appends two JSON objects to $ZB_RESULTS.
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
#include "zr_half.h"

/* The bound: x = s*widen(g); p += x, m += x, v += x; p16 = high half of p. 4 reads, 4 writes. */
__attribute__((target("avx512f,avx512bw"))) static void stream512(float *p, float *m, float *v,
                                                                  const uint16_t *g, uint16_t *p16,
                                                                  int64_t n)
{
    const __m512 s = _mm512_set1_ps(1e-7f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(g + i)));
        __m512 x = _mm512_mul_ps(s, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
        __m512 pi = _mm512_add_ps(_mm512_loadu_ps(p + i), x);
        _mm512_storeu_ps(p + i, pi);
        _mm512_storeu_ps(m + i, _mm512_add_ps(_mm512_loadu_ps(m + i), x));
        _mm512_storeu_ps(v + i, _mm512_add_ps(_mm512_loadu_ps(v + i), x));
        _mm256_storeu_si256((__m256i *)(p16 + i),
                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(pi), 16)));
    }
    for (; i < n; i++) {
        float x = 1e-7f * zr_bf16_to_f32(g[i]);
        p[i] += x; m[i] += x; v[i] += x;
        p16[i] = zr_f32_to_bf16(p[i]);
    }
}
static void stream_plain(float *p, float *m, float *v, const uint16_t *g, uint16_t *p16, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = 1e-7f * zr_bf16_to_f32(g[i]);
        p[i] += x; m[i] += x; v[i] += x;
        p16[i] = zr_f32_to_bf16(p[i]);
    }
}

/* Same chunking as zr_adam_step: one contiguous piece per thread. */
static void stream(float *p, float *m, float *v, const uint16_t *g, uint16_t *p16, int64_t n)
{
    int wide = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    #pragma omp parallel
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t per = ((n + nth - 1) / nth + 63) & ~(int64_t)63;
        int64_t lo = per * tid, hi = lo + per < n ? lo + per : n;
        if (lo < hi) {
            if (wide) stream512(p + lo, m + lo, v + lo, g + lo, p16 + lo, hi - lo);
            else stream_plain(p + lo, m + lo, v + lo, g + lo, p16 + lo, hi - lo);
        }
    }
}

int main(void)
{
    int64_t n = getenv("ZB_ADAM_N") ? atoll(getenv("ZB_ADAM_N")) : 100000000;
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(2);
    int threads = omp_get_max_threads();
    float *p = aligned_alloc(64, (size_t)n * 4), *m = aligned_alloc(64, (size_t)n * 4);
    float *v = aligned_alloc(64, (size_t)n * 4);
    uint16_t *g = aligned_alloc(64, ((size_t)n * 2 + 63) / 64 * 64);
    uint16_t *p16 = aligned_alloc(64, ((size_t)n * 2 + 63) / 64 * 64);
    int64_t npieces = n / 4096 + 2;
    double *pieces = calloc((size_t)npieces, 8);
    if (!p || !m || !v || !g || !p16 || !pieces) {
        fprintf(stderr, "b_adam16: out of memory for %lld params\n", (long long)n);
        return 1;
    }
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        p[i] = (float)(i % 1000) * 1e-3f - 0.5f;
        m[i] = 0;
        v[i] = 0;
        g[i] = zr_f32_to_bf16((float)((i * 7) % 1000) * 2e-4f - 0.1f);
        p16[i] = 0;
    }
    ZrAdamCfg c = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                   .weight_decay = 0.01f, .adamw = 1, .step = 1, .grad_scale = 1.0f};
    zr_adam_step(&c, p, m, v, g, ZR_DT_BF16, p16, ZR_DT_BF16, n);            /* warm-up */
    stream(p, m, v, g, p16, n);
    enum { PAIRS = 5 };
    double ratio[PAIRS], adam[PAIRS], bound[PAIRS], sratio[PAIRS], sadam[PAIRS], sbound[PAIRS];
    for (int r = 0; r < PAIRS; r++) {
        c.step++;
        double t0 = zb_now();
        zr_adam_step(&c, p, m, v, g, ZR_DT_BF16, p16, ZR_DT_BF16, n);
        double ta = zb_now() - t0;
        t0 = zb_now();
        stream(p, m, v, g, p16, n);
        double ts = zb_now() - t0;
        zb_pair(r, n, ta, ts, "fused bf16 adam", 28e-3, adam, bound, ratio);
        ZrAdamSq sq = {.block = 4096, .piece = pieces, .open = -1};
        t0 = zb_now();
        zr_adam_step_sq(&c, p, m, v, p, m, v, g, ZR_DT_BF16, p16, ZR_DT_BF16, n, 0, &sq);
        zr_adam_sq_close(&sq);
        double tq = zb_now() - t0;
        zb_pair(r, n, tq, ts, "fused bf16 adam + norm squares", 28e-3, sadam, sbound, sratio);
    }
    double med = zb_median(ratio, PAIRS), madam = zb_median(adam, PAIRS);
    double mbound = zb_median(bound, PAIRS);
    double smed = zb_median(sratio, PAIRS), msadam = zb_median(sadam, PAIRS);
    printf("fused 16-bit cpu adam (%s, %d threads, %lld params, bf16 g in, bf16 p out): "
           "%.0f Mparam/s, same-bytes stream %.0f Mparam/s, median ratio %.3f\n",
           zr_adam_impl_name(), threads, (long long)n, madam, mbound, med);
    if (zb_append("{\"name\": \"cpu_adam_bf16_fused_%lldM_%dthreads\", \"value\": %.1f, "
                  "\"unit\": \"Mparam/s\", \"peer\": \"stream, same 28 B/param (bf16 g, bf16 p)\", "
                  "\"peer_value\": %.1f, \"ratio\": %.3f, \"note\": \"%s path, one pass; median of "
                  "%d alternating pairs; aim >= 0.9\"}\n", (long long)(n / 1000000), threads,
                  madam, mbound, med, zr_adam_impl_name(), PAIRS))
        return 1;
    printf("the speculative step's pass (the same + the norm's squares in 4096-element pieces): "
           "%.0f Mparam/s, same-bytes stream %.0f Mparam/s, median ratio %.3f\n", msadam, mbound, smed);
    if (zb_append("{\"name\": \"cpu_adam_bf16_fused_norm_%lldM_%dthreads\", \"value\": %.1f, "
                  "\"unit\": \"Mparam/s\", \"peer\": \"stream, same 28 B/param (bf16 g, bf16 p)\", "
                  "\"peer_value\": %.1f, \"ratio\": %.3f, \"note\": \"%s path, one pass with the "
                  "fused norm's squares; median of %d alternating rounds; aim >= 0.9\"}\n",
                  (long long)(n / 1000000), threads, msadam, mbound, smed, zr_adam_impl_name(), PAIRS))
        return 1;
    free(p); free(m); free(v); free(g); free(p16); free(pieces);
    return 0;
}
