/*
** t_half.c — bf16/fp16 conversions (zr_half.h) against independent references: rounding chosen
** in double arithmetic by comparing the two neighbouring 16-bit values, the F16C instructions
** for fp16, and hand-worked values at the edges (ties, subnormals, overflow, NaN, Inf).
*/
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include "zr_half.h"
#include "zt.h"

static uint32_t rng = 12345u;
static uint32_t next_u32(void)
{
    rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
    return rng;
}

/* fp16 value in double from its fields (independent of zr_fp16_to_f32). */
static double fp16_value(uint16_t h)
{
    int e = (h >> 10) & 31, man = h & 1023;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31) return man ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(man, -24);
    return s * ldexp(1024 + man, e - 25);
}

/* Nearest of two candidates in double, ties to the even one. */
static uint16_t pick(double x, uint16_t lo, double vlo, uint16_t hi, double vhi)
{
    double dl = fabs(x - vlo), dh = fabs(vhi - x);
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1) ? hi : lo;
}

static uint16_t ref_bf16(float f)
{
    uint32_t u = zr_f32_bits(f);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);   /* magnitude neighbours */
    if ((u & 0xffff) == 0) return lo;
    double vlo = fabs((double)zr_bits_f32((uint32_t)lo << 16));
    double vhi = (hi & 0x7fff) >= 0x7f80 ? ldexp(1.0, 128)      /* the overflow threshold */
                                         : fabs((double)zr_bits_f32((uint32_t)hi << 16));
    uint16_t r = pick(fabs((double)f), lo, vlo, hi, vhi);
    return r;
}

static void t_bf16_widen_all(void)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zr_bf16_to_f32((uint16_t)h);
        ZT_CHECKM(zr_f32_bits(f) == h << 16, "bf16 %04x widens to %08x", h, zr_f32_bits(f));
        if (((h & 0x7fff) <= 0x7f80))            /* not NaN: round trip is exact */
            ZT_CHECKM(zr_f32_to_bf16(f) == h, "bf16 %04x round trip", h);
    }
}

static void t_bf16_round(void)
{
    static const uint32_t lows[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000};
    int bad = 0;
    for (uint32_t top = 0; top < 65536; top++) {
        for (int k = 0; k < 12; k++) {
            uint32_t low = k < 8 ? lows[k] : next_u32() & 0xffff;
            uint32_t u = top << 16 | low;
            float f = zr_bits_f32(u);
            uint16_t got = zr_f32_to_bf16(f);
            if (isnan(f)) {
                if ((got & 0x7f80) != 0x7f80 || !(got & 0x7f) || !(got & 0x40) ||
                    (got & 0x8000) != (u >> 16 & 0x8000))
                    if (bad++ < 5) ZT_CHECKM(0, "NaN %08x -> %04x not a quiet NaN", u, got);
                continue;
            }
            uint16_t want = ref_bf16(f);
            if (got != want && bad++ < 5)
                ZT_CHECKM(0, "bf16(%08x) = %04x, want %04x", u, got, want);
        }
    }
    ZT_EQ_INT(bad, 0);
    ZT_EQ_INT(zr_f32_to_bf16(1.0f), 0x3f80);
    ZT_EQ_INT(zr_f32_to_bf16(zr_bits_f32(0x3f808000)), 0x3f80);   /* tie, even stays */
    ZT_EQ_INT(zr_f32_to_bf16(zr_bits_f32(0x3f818000)), 0x3f82);   /* tie, odd rounds up */
    ZT_EQ_INT(zr_f32_to_bf16(zr_bits_f32(0x7f7fffff)), 0x7f80);   /* max float -> Inf */
    ZT_EQ_INT(zr_f32_to_bf16(-INFINITY), 0xff80);
    ZT_EQ_INT(zr_f32_to_bf16(zr_bits_f32(0x7f800001)), 0x7fc0);   /* sNaN quietened, not Inf */
}

__attribute__((target("f16c"))) static float hw_widen(uint16_t h) { return _cvtsh_ss(h); }

static void t_fp16_widen_all(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zr_fp16_to_f32((uint16_t)h);
        double want = fp16_value((uint16_t)h);
        float hw = __builtin_cpu_supports("f16c") ? hw_widen((uint16_t)h) : f;
        int ok = isnan(want) ? isnan(f) && zr_f32_bits(f) == zr_f32_bits(hw)
                             : (double)f == want && !!signbit(f) == !!signbit(want);
        if (!ok && bad++ < 5)
            ZT_CHECKM(0, "fp16 %04x -> %g (%08x), want %g", h, f, zr_f32_bits(f), want);
        if (!isnan(want) && zr_f32_to_fp16(f) != h && bad++ < 5)
            ZT_CHECKM(0, "fp16 %04x round trip gives %04x", h, zr_f32_to_fp16(f));
    }
    ZT_EQ_INT(bad, 0);
}

__attribute__((target("f16c"))) static uint16_t hw_fp16(float f)
{
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static void t_fp16_round(void)
{
    if (!__builtin_cpu_supports("f16c")) ZT_SKIP("no F16C to compare with");
    static const uint32_t lows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000};
    int bad = 0;
    for (uint32_t top = 0; top < 1u << 19; top++) {      /* sign, exponent, top 10 man bits */
        for (int k = 0; k < 10; k++) {
            uint32_t low = k < 8 ? lows[k] : next_u32() & 0x1fff;
            uint32_t u = top << 13 | low;
            float f = zr_bits_f32(u);
            uint16_t got = zr_f32_to_fp16(f), want = hw_fp16(f);
            if (got != want && bad++ < 5)
                ZT_CHECKM(0, "fp16(%08x = %g) = %04x, F16C says %04x", u, f, got, want);
        }
    }
    ZT_EQ_INT(bad, 0);
    /* hand-worked edges, independent of the hardware */
    ZT_EQ_INT(zr_f32_to_fp16(1.0f), 0x3c00);
    ZT_EQ_INT(zr_f32_to_fp16(65504.0f), 0x7bff);
    ZT_EQ_INT(zr_f32_to_fp16(65519.996f), 0x7bff);
    ZT_EQ_INT(zr_f32_to_fp16(65520.0f), 0x7c00);               /* tie to even = Inf */
    ZT_EQ_INT(zr_f32_to_fp16(ldexpf(1.0f, -24)), 0x0001);
    ZT_EQ_INT(zr_f32_to_fp16(ldexpf(1.0f, -25)), 0x0000);       /* tie to even = 0 */
    ZT_EQ_INT(zr_f32_to_fp16(ldexpf(3.0f, -26)), 0x0001);       /* 0.75 ulp -> 1 */
    ZT_EQ_INT(zr_f32_to_fp16(ldexpf(3.0f, -25)), 0x0002);       /* 1.5 ulp tie -> 2 */
    ZT_EQ_INT(zr_f32_to_fp16(-ldexpf(1023.5f, -24)), 0x8400);   /* rounds up into normal */
    ZT_EQ_INT(zr_f32_to_fp16(-0.0f), 0x8000);
    ZT_EQ_INT(zr_f32_to_fp16(INFINITY), 0x7c00);
    ZT_CHECK((zr_f32_to_fp16(NAN) & 0x7e00) == 0x7e00);
}

int main(void)
{
    ZT_RUN(t_bf16_widen_all);
    ZT_RUN(t_bf16_round);
    ZT_RUN(t_fp16_widen_all);
    ZT_RUN(t_fp16_round);
    return zt_end();
}
