/*
** zr_adam_avx2.c — the Adam kernel on 8 lanes (AVX2 + F16C), bit-identical to the scalar one.
**
** Same rules as zr_adam_avx512.c: enabled per function with a target attribute, called only
** when cpuid reports AVX2 and F16C, the scalar kernel's operations in its order, no FMA, bf16
** rounded on the integer bits, fp16 through vcvtps2ph (round to nearest even). The last n % 8
** elements go through the scalar kernel.
*/
#include <immintrin.h>
#include "zr_adam.h"          /* defines: ZrAdamK, zr_adam_kernel_scalar */

#define T256 __attribute__((target("avx2,f16c")))

T256 static inline __m256 load_g8(const void *g, int gdt, int64_t i)
{
    if (gdt == ZR_DT_FP32) return _mm256_loadu_ps((const float *)g + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)g + i));
    __m256 x = gdt == ZR_DT_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                                 : _mm256_cvtph_ps(h);
    return _mm256_add_ps(x, _mm256_setzero_ps());        /* -0 as +0 (zr_adam.h) */
}

T256 static inline __m128i to_bf16(__m256 x)
{
    __m256i u = _mm256_castps_si256(x);
    __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    /* abs and Inf are both < 2^31, so a signed compare is right */
    __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    r = _mm256_srli_epi32(r, 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, q, nan);
    /* pack 8 x u32 (all < 2^16) into 8 x u16: packus works per 128-bit lane, then fix order */
    __m256i pk = _mm256_packus_epi32(r, r);
    pk = _mm256_permute4x64_epi64(pk, 0x08);
    return _mm256_castsi256_si128(pk);
}

T256 void zr_adam_kernel_avx2(const ZrAdamK *k, const float *pin, const float *min, const float *vin,
                              float *p, float *m, float *v, const void *g,
                              int gdt, void *p16, int p16dt, int64_t n, double *sq)
{
    /* the squares' lanes 0-3 and 4-7 (a square of a float is exact in a double) */
    __m256d sq0 = sq ? _mm256_loadu_pd(sq) : _mm256_setzero_pd();
    __m256d sq1 = sq ? _mm256_loadu_pd(sq + 4) : _mm256_setzero_pd();
    const __m256 b1 = _mm256_set1_ps(k->b1), b2 = _mm256_set1_ps(k->b2);
    const __m256 omb1 = _mm256_set1_ps(k->omb1), omb2 = _mm256_set1_ps(k->omb2);
    const __m256 eps = _mm256_set1_ps(k->eps), wd = _mm256_set1_ps(k->wd);
    const __m256 lrwd = _mm256_set1_ps(k->lrwd), ss = _mm256_set1_ps(k->step_size);
    const __m256 rbc2 = _mm256_set1_ps(k->rbc2), gs = _mm256_set1_ps(k->gs);
    const int decay = k->decay, adamw = k->adamw;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gi = load_g8(g, gdt, i);
        if (sq) {
            __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(gi)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(gi, 1));
            sq0 = _mm256_add_pd(sq0, _mm256_mul_pd(a, a));
            sq1 = _mm256_add_pd(sq1, _mm256_mul_pd(b, b));
        }
        gi = _mm256_mul_ps(gi, gs);
        __m256 pi = _mm256_loadu_ps(pin + i);
        if (decay) {
            if (adamw) pi = _mm256_sub_ps(pi, _mm256_mul_ps(lrwd, pi));
            else gi = _mm256_add_ps(gi, _mm256_mul_ps(wd, pi));
        }
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(min + i)),
                                  _mm256_mul_ps(omb1, gi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(vin + i)),
                                  _mm256_mul_ps(omb2, _mm256_mul_ps(gi, gi)));
        __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), rbc2), eps);
        pi = _mm256_sub_ps(pi, _mm256_mul_ps(ss, _mm256_div_ps(mi, den)));
        _mm256_storeu_ps(p + i, pi);
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        if (p16) {
            __m128i h = p16dt == ZR_DT_BF16
                            ? to_bf16(pi)
                            : _mm256_cvtps_ph(pi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm_storeu_si128((__m128i *)((uint16_t *)p16 + i), h);
        }
    }
    if (sq) {
        _mm256_storeu_pd(sq, sq0);
        _mm256_storeu_pd(sq + 4, sq1);
    }
    if (i < n) {
        size_t gsz = gdt == ZR_DT_FP32 ? 4 : 2;
        zr_adam_kernel_scalar(k, pin + i, min + i, vin + i, p + i, m + i, v + i, (const char *)g + i * gsz, gdt,
                              p16 ? (void *)((uint16_t *)p16 + i) : NULL, p16dt, n - i, sq);
    }
}
