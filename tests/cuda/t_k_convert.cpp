/*
** t_k_convert.cpp — convert.cu under the SIMT emulation, bit for bit against runtime/zr_half.h (the
** conversions of the host trainer, the CPU Adam and the checkpoints):
**   widening   every one of the 65536 patterns, bf16 and fp16;
**   narrowing  every 16-bit value, the midpoints between neighbours (ties) and one fp32 ulp either
**              side of them, fp32 boundary values (65504, 65520, 2^-14, 2^-25, subnormals, +-0,
**              +-Inf, NaNs with payloads) and random fp32 bit patterns (NaN/Inf/subnormals among
**              them);
**   adds       acc += widen(g), acc16 = round(widen(acc16) + g) and fp32 acc += g on random data
**              with specials.
** A few values are also checked against numpy.float16 / torch.bfloat16 results written here, and
** fp16 against GCC's _Float16 conversion where the compiler has it, so the reference itself is not
** the only judge.
*/
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
extern "C" {
#include "zr_half.h"
}
#include "kernels/convert.cu"

static uint32_t rng32(void)
{
    static uint64_t s = 0x243f6a8885a308d3ull;
    s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
    return (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 32);
}

static uint32_t bits(float f) { return zr_f32_bits(f); }

static void widen_all(void)
{
    std::vector<unsigned short> h(65536);
    for (unsigned u = 0; u < 65536; u++) h[u] = (unsigned short)u;
    std::vector<float> out(65536);
    for (int fmt = 1; fmt <= 2; fmt++) {
        ZT_EQ_INT(zd_16_to_f32_launch(out.data(), h.data(), 65536, fmt), 0);
        int bad = 0, first = -1;
        for (unsigned u = 0; u < 65536; u++) {
            float want = fmt == 1 ? zr_bf16_to_f32((uint16_t)u) : zr_fp16_to_f32((uint16_t)u);
            if (bits(out[u]) != bits(want)) { bad++; if (first < 0) first = (int)u; }
        }
        ZT_CHECKM(bad == 0, "fmt %d: %d of 65536 widened differently, first %#x", fmt, bad, first);
    }
}

/* The fp32 inputs of the narrowing test. */
static std::vector<float> narrow_inputs(int fmt)
{
    std::vector<uint32_t> u;
    for (unsigned p = 0; p < 65536; p++) {
        float f = fmt == 1 ? zr_bf16_to_f32((uint16_t)p) : zr_fp16_to_f32((uint16_t)p);
        float g = fmt == 1 ? zr_bf16_to_f32((uint16_t)(p + 1)) : zr_fp16_to_f32((uint16_t)(p + 1));
        u.push_back(bits(f));
        if (f == f && g == g && p != 0x7fff && p != 0xffff) {
            float mid = (float)(((double)f + (double)g) / 2);     /* exact: 16-bit neighbours */
            u.push_back(bits(mid));
            u.push_back(bits(mid) + 1);
            u.push_back(bits(mid) - 1);
        }
    }
    const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fbfffffu, 0x00000001u,
                                0x807fffffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
                                0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u, 0xb3000000u,
                                0x33800000u, 0x337fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u};
    for (uint32_t s : special) u.push_back(s);
    for (int i = 0; i < 200000; i++) u.push_back(rng32());
    std::vector<float> f(u.size());
    for (size_t i = 0; i < u.size(); i++) f[i] = zr_bits_f32(u[i]);
    return f;
}

static void narrow_all(void)
{
    for (int fmt = 1; fmt <= 2; fmt++) {
        std::vector<float> in = narrow_inputs(fmt);
        std::vector<unsigned short> out(in.size());
        ZT_EQ_INT(zd_f32_to_16_launch(out.data(), in.data(), (long)in.size(), fmt), 0);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < in.size(); i++) {
            uint16_t want = fmt == 1 ? zr_f32_to_bf16(in[i]) : zr_f32_to_fp16(in[i]);
            if (out[i] != want) { if (!bad) first = i; bad++; }
        }
        ZT_CHECKM(bad == 0, "fmt %d: %zu of %zu narrowed differently, first %#x -> %#x (want %#x)", fmt, bad,
                  in.size(), bits(in[first]), out[first],
                  fmt == 1 ? zr_f32_to_bf16(in[first]) : zr_f32_to_fp16(in[first]));
#if defined(__FLT16_MAX__)
        if (fmt == 2) {            /* GCC's own RNE conversion, for every non-NaN input */
            size_t bad2 = 0;
            for (size_t i = 0; i < in.size(); i++) {
                if (in[i] != in[i]) continue;
                _Float16 h = (_Float16)in[i];
                uint16_t hb;
                memcpy(&hb, &h, 2);
                bad2 += hb != out[i];
            }
            ZT_CHECKM(bad2 == 0, "%zu fp16 results differ from _Float16", bad2);
        }
#endif
    }
}

/* Values from numpy.float16(x).view(uint16) and torch.tensor(x, dtype=torch.bfloat16).view(int16). */
static void known_values(void)
{
    const float v[] = {1.0f, -2.0f, 65504.0f, 65520.0f, 5.9604645e-8f, 1.0f / 3, 1e-8f, 2.9802322e-8f};
    const unsigned short want_h[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x3555, 0x0000, 0x0000};
    const unsigned short want_b[] = {0x3f80, 0xc000, 0x4780, 0x4780, 0x3380, 0x3eab, 0x322c, 0x3300};
    const int n = 8;
    std::vector<unsigned short> h(n), b(n);
    ZT_EQ_INT(zd_f32_to_16_launch(h.data(), v, n, 2), 0);
    ZT_EQ_INT(zd_f32_to_16_launch(b.data(), v, n, 1), 0);
    for (int i = 0; i < n; i++) {
        ZT_CHECKM(h[i] == want_h[i], "fp16(%g) = %#x, want %#x", (double)v[i], h[i], want_h[i]);
        ZT_CHECKM(b[i] == want_b[i], "bf16(%g) = %#x, want %#x", (double)v[i], b[i], want_b[i]);
    }
}

static void adds(void)
{
    const long n = 30001;
    for (int fmt = 1; fmt <= 2; fmt++) {
        std::vector<float> acc(n), g32(n);
        std::vector<unsigned short> g16(n), acc16(n);
        for (long i = 0; i < n; i++) {
            acc[i] = zk_uniform(-4, 4);
            g32[i] = zk_uniform(-4, 4) * (i % 7 == 0 ? 1e-6f : 1.0f);
            g16[i] = (unsigned short)rng32();
            acc16[i] = fmt == 1 ? zr_f32_to_bf16(zk_uniform(-3, 3)) : zr_f32_to_fp16(zk_uniform(-3, 3));
        }
        acc[3] = zr_bits_f32(0x7f800000u);
        acc16[4] = fmt == 1 ? 0x7f80 : 0x7c00;
        g32[5] = 7e4f;                                            /* fp16 overflow */
        std::vector<float> acc0 = acc;
        std::vector<unsigned short> acc16_0 = acc16;
        ZT_EQ_INT(zd_add_16_to_f32_launch(acc.data(), g16.data(), n, fmt), 0);
        ZT_EQ_INT(zd_add_f32_to_16_launch(acc16.data(), g32.data(), n, fmt), 0);
        long bad = 0, bad16 = 0;
        for (long i = 0; i < n; i++) {
            float w = acc0[i] + (fmt == 1 ? zr_bf16_to_f32(g16[i]) : zr_fp16_to_f32(g16[i]));
            if (bits(acc[i]) != bits(w)) bad++;
            float a = (fmt == 1 ? zr_bf16_to_f32(acc16_0[i]) : zr_fp16_to_f32(acc16_0[i])) + g32[i];
            if (acc16[i] != (fmt == 1 ? zr_f32_to_bf16(a) : zr_f32_to_fp16(a))) bad16++;
        }
        ZT_CHECKM(bad == 0, "fmt %d: acc += widen(g): %ld differ", fmt, bad);
        ZT_CHECKM(bad16 == 0, "fmt %d: acc16 = round(acc16 + g): %ld differ", fmt, bad16);
        if (fmt == 2) ZT_EQ_INT(acc16[5] & 0x7fff, 0x7c00);
    }
    std::vector<float> a(n), g(n), a0;
    for (long i = 0; i < n; i++) { a[i] = zk_uniform(-4, 4); g[i] = zk_uniform(-1, 1) * (i % 5 ? 1.0f : 1e-7f); }
    a0 = a;
    ZT_EQ_INT(zd_add_f32_launch(a.data(), g.data(), n), 0);
    long bad = 0;
    for (long i = 0; i < n; i++) bad += bits(a[i]) != bits(a0[i] + g[i]);
    ZT_CHECKM(bad == 0, "fp32 acc += g: %ld differ", bad);
}

int main(void)
{
    ZT_RUN(known_values);
    ZT_RUN(widen_all);
    ZT_RUN(narrow_all);
    ZT_RUN(adds);
    return zt_end();
}
