/*
** zr_adam_avx512.c — the Adam kernel on 16 lanes (AVX-512F/BW), bit-identical to the scalar one.
**
** The Makefile builds every runtime file with the same flags, so the instruction set is enabled
** per function with a target attribute and the path is only called after cpuid says yes
** (zr_adam.c). Each lane performs the scalar kernel's operations in its order with separate
** multiply and add (no FMA: a fused multiply-add rounds once and would change bits), IEEE
** division and sqrt. bf16 rounding is done on the integer bits (Ice Lake has no AVX512_BF16);
** fp16 conversion uses vcvtps2ph/vcvtph2ps, which round to nearest even like zr_half.h.
** The last n % 16 elements go through the scalar kernel.
*/
#include <immintrin.h>
#include "zr_adam.h"          /* defines: ZrAdamK, zr_adam_kernel_scalar */

#define T512 __attribute__((target("avx512f,avx512bw,avx2,f16c")))

T512 static inline __m512 load_g16(const void *g, int gdt, int64_t i)
{
    if (gdt == ZR_DT_FP32) return _mm512_loadu_ps((const float *)g + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)g + i));
    __m512 x = gdt == ZR_DT_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                 : _mm512_cvtph_ps(h);
    return _mm512_add_ps(x, _mm512_setzero_ps());        /* -0 as +0 (zr_adam.h) */
}

/* sq += the squares of x's lanes 0-7, then of 8-15 (a square of a float is exact in a double) */
T512 static inline __m512d add_squares(__m512d sq, __m512 x)
{
    __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    sq = _mm512_add_pd(sq, _mm512_mul_pd(a, a));
    return _mm512_add_pd(sq, _mm512_mul_pd(b, b));
}

T512 static inline __m256i to_bf16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    r = _mm512_srli_epi32(r, 16);
    __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    r = _mm512_mask_mov_epi32(r, nan, q);
    return _mm512_cvtepi32_epi16(r);
}

T512 void zr_adam_kernel_avx512(const ZrAdamK *k, const float *pin, const float *min, const float *vin,
                              float *p, float *m, float *v, const void *g,
                                int gdt, void *p16, int p16dt, int64_t n, double *sq)
{
    __m512d sqv = sq ? _mm512_loadu_pd(sq) : _mm512_setzero_pd();
    const __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2);
    const __m512 omb1 = _mm512_set1_ps(k->omb1), omb2 = _mm512_set1_ps(k->omb2);
    const __m512 eps = _mm512_set1_ps(k->eps), wd = _mm512_set1_ps(k->wd);
    const __m512 lrwd = _mm512_set1_ps(k->lrwd), ss = _mm512_set1_ps(k->step_size);
    const __m512 rbc2 = _mm512_set1_ps(k->rbc2), gs = _mm512_set1_ps(k->gs);
    const int decay = k->decay, adamw = k->adamw;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 gi = load_g16(g, gdt, i);
        if (sq) sqv = add_squares(sqv, gi);
        gi = _mm512_mul_ps(gi, gs);
        __m512 pi = _mm512_loadu_ps(pin + i);
        if (decay) {
            if (adamw) pi = _mm512_sub_ps(pi, _mm512_mul_ps(lrwd, pi));
            else gi = _mm512_add_ps(gi, _mm512_mul_ps(wd, pi));
        }
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(min + i)),
                                  _mm512_mul_ps(omb1, gi));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(vin + i)),
                                  _mm512_mul_ps(omb2, _mm512_mul_ps(gi, gi)));
        __m512 den = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vi), rbc2), eps);
        pi = _mm512_sub_ps(pi, _mm512_mul_ps(ss, _mm512_div_ps(mi, den)));
        _mm512_storeu_ps(p + i, pi);
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        if (p16) {
            __m256i h = p16dt == ZR_DT_BF16
                            ? to_bf16(pi)
                            : _mm512_cvtps_ph(pi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm256_storeu_si256((__m256i *)((uint16_t *)p16 + i), h);
        }
    }
    if (sq) _mm512_storeu_pd(sq, sqv);
    if (i < n) {
        size_t gsz = gdt == ZR_DT_FP32 ? 4 : 2;
        zr_adam_kernel_scalar(k, pin + i, min + i, vin + i, p + i, m + i, v + i, (const char *)g + i * gsz, gdt,
                              p16 ? (void *)((uint16_t *)p16 + i) : NULL, p16dt, n - i, sq);
    }
}
