/*
** t_k_attention_tc.cpp — templates/cuda/kernels/attention_tc.cu (causal attention on tensor cores,
** WMMA) under the SIMT + WMMA emulation against a double-precision reference computed here.
** Shape sets (the tile is 64 queries x 64 keys): HS 64 with T = 100 (a full and a partial query
** tile, two key tiles), B = 2, NH = 2, bf16; HS 64 with T = 70, B = 1, NH = 1, fp16; HS 128 with
** T = 75, B = 2, NH = 2, bf16; HS 128 with T = 33 (less than one tile), B = 2, NH = 1, fp16;
** HS 40 (head dims padded to 48 with zeros) with T = 19, B = 1, NH = 2, bf16; HS 36 (not a multiple
** of 8: the element-wise staging path) with T = 21, B = 2, NH = 2, fp32 storage (staged as bf16, so
** the inputs are bf16 values and u is bf16's; outputs are not rounded); HS 64 with T = 128 (exactly
** two tiles, no tail), bf16.
** Checked: y, lse, dq, dk, dv, every element. The backward is checked against the reference given
** the kernel's own forward outputs as its inputs (D = dy . y uses the kernel's 16-bit y), as the
** trainer feeds it. Each set runs causal (pos NULL), with pos[t] = t (whose results must be the bits
** of the causal run), and with its rows cut into documents (docs/DATA.md; zk_doc_pos: documents of
** length 1, boundaries on and off the 64-key tiles and 16-key sub-tiles, a document across a tile
** boundary, a row ending in a padding segment), the reference masking every key outside the query's
** document (keys t - pos[t] .. t only).
** Tolerances, per element: |got - ref| <= 1e-5 + 4 u mag, u the unit roundoff of the storage type
** (2^-8 bf16, 2^-11 fp16), mag the sum of the magnitudes of the terms of that element, in the
** reference (y_id: sum_j p_ij |v_jd|; dv_jd: sum_i p_ij |dy_id|; dk_jd: scale sum_i p_ij (|dp_ij| +
** |D_i|) |q_id|; dq_id likewise over j with k_jd). Why: the inputs are exactly representable (rounded
** before both sides see them) and the products are exact in fp32, so the kernel's error is the
** rounding of P or dS to 16 bits before their second product (u per term), the rounding of the
** output (u |ref| <= u mag), and fp32 summation (~2^-24 * 64 per term, negligible beside u): about
** 2 u mag at worst; 4 leaves room for the hardware's unspecified summation order. lse is fp32 end to
** end: 1e-4 + 1e-5 |ref|.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_wmma.cuh"     /* at global scope, once: the per-set part is only zk_wt */
#include "kernels/zk_attn_tc.cuh"  /* the shape-free bodies (templates), once */
#include <string.h>

#define ZK_BODY

#define ZK_V 64
#define ZK_F 64
#define ZK_C 128
#define ZK_NH 2
#define ZK_T 100
#define ZK_IO 1
#define ZK_TEST_B 2
namespace hs64_t100_bf16 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 64
#define ZK_NH 1
#define ZK_T 70
#define ZK_IO 2
#define ZK_TEST_B 1
namespace hs64_t70_fp16 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 256
#define ZK_NH 2
#define ZK_T 75
#define ZK_IO 1
#define ZK_TEST_B 2
namespace hs128_t75_bf16 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#define ZK_C 128
#define ZK_NH 1
#define ZK_T 33
#define ZK_IO 2
namespace hs128_t33_fp16 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 80
#define ZK_NH 2
#define ZK_T 19
#define ZK_IO 1
#define ZK_TEST_B 1
namespace hs40_t19_bf16 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 72
#define ZK_T 21
#define ZK_IO 0
#define ZK_TEST_B 2
namespace hs36_t21_fp32 {
#include "t_k_attention_tc.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 64
#define ZK_NH 1
#define ZK_T 128
#define ZK_IO 1
#define ZK_TEST_B 1
namespace hs64_t128_bf16 {
#include "t_k_attention_tc.cpp"
}

int main(void)
{
    ZT_RUN(hs64_t100_bf16::run);
    ZT_RUN(hs64_t70_fp16::run);
    ZT_RUN(hs128_t75_bf16::run);
    ZT_RUN(hs128_t33_fp16::run);
    ZT_RUN(hs40_t19_bf16::run);
    ZT_RUN(hs36_t21_fp32::run);
    ZT_RUN(hs64_t128_bf16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/attention_tc.cu"

/* |got - ref| <= 1e-5 + k mag, element by element; names the worst on failure. */
static void close_mag(const char *what, const std::vector<float> &got, const std::vector<double> &ref,
                      const std::vector<double> &mag, double k)
{
    size_t bad = 0, worst = 0;
    double wx = -1e300, maxrel = 0;
    for (size_t n = 0; n < ref.size(); n++) {
        double e = fabs(got[n] - ref[n]), lim = 1e-5 + k * mag[n];
        if (!(e <= lim)) bad++;
        if (!(e - lim <= wx)) { wx = e - lim; worst = n; }
        if (mag[n] > 0 && e / mag[n] > maxrel) maxrel = e / mag[n];
    }
    ZT_CHECKM(bad == 0, "%s: %zu of %zu outside 1e-5 + %g mag; worst [%zu] %.9g vs %.9g (mag %.3g)", what, bad,
              ref.size(), k, worst, (double)got[worst], ref[worst], mag[worst]);
    if (getenv("ZK_VERBOSE")) printf("  %s: max |err| / mag = %.3g (allowed %.3g)\n", what, maxrel, k);
}

/* The kernels' outputs for one set of positions (NULL: causal). */
struct outs { std::vector<zk_io> y, dqkv; std::vector<float> lse; };

static outs run_kernels(const std::vector<zk_io> &qkvd, const std::vector<zk_io> &dyd, const int *pos)
{
    const int B = ZK_TEST_B, T = ZK_T, C = ZK_C, NH = ZK_NH;
    outs o;
    o.y.resize((size_t)B * T * C);
    o.lse.assign((size_t)B * NH * T, -99.0f);
    o.dqkv.resize((size_t)B * T * 3 * C);
    std::vector<float> Dbuf((size_t)B * NH * T);
    ZT_EQ_INT(zd_attention_tc_forward_launch(o.y.data(), o.lse.data(), qkvd.data(), pos, B), 0);
    ZT_EQ_INT(zd_attention_tc_backward_launch(o.dqkv.data(), Dbuf.data(), qkvd.data(), o.y.data(), dyd.data(),
                                              o.lse.data(), pos, B), 0);
    return o;
}

/* The kernels' results against the reference in double, with keys t - pos[t] .. t (pos NULL: 0 .. t). */
static void check(const char *tag, const std::vector<float> &qkv, const std::vector<float> &dy, const outs &o,
                  const int *pos)
{
    const int B = ZK_TEST_B, T = ZK_T, C = ZK_C, NH = ZK_NH, HS = C / NH;
    const double u = ZK_IO == 2 ? 1.0 / 2048 : 1.0 / 256, k4 = 4 * u, scale = 1 / sqrt((double)HS);
    std::vector<float> ykern = zk_from(o.y), got = zk_from(o.dqkv);

    /* the reference, in double */
    size_t ny = (size_t)B * T * C;
    std::vector<double> y(ny), ymag(ny), L((size_t)B * NH * T), dq(ny), dqm(ny), dk(ny), dkm(ny), dv(ny), dvm(ny);
    std::vector<double> p(T), dp(T);
    auto Q = [&](int b, int i, int h, int d) { return (double)qkv[((size_t)b * T + i) * 3 * C + h * HS + d]; };
    auto K = [&](int b, int i, int h, int d) { return (double)qkv[((size_t)b * T + i) * 3 * C + C + h * HS + d]; };
    auto V = [&](int b, int i, int h, int d) { return (double)qkv[((size_t)b * T + i) * 3 * C + 2 * C + h * HS + d]; };
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const int lo = pos ? i - pos[(size_t)b * T + i] : 0;
                double mx = -1e300, s = 0;
                for (int j = lo; j <= i; j++) {
                    double dot = 0;
                    for (int d = 0; d < HS; d++) dot += Q(b, i, h, d) * K(b, j, h, d);
                    p[j] = dot * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = lo; j <= i; j++) s += exp(p[j] - mx);
                L[((size_t)b * NH + h) * T + i] = mx + log(s);
                for (int j = lo; j <= i; j++) p[j] = exp(p[j] - mx) / s;
                size_t row = ((size_t)b * T + i) * C + h * HS;
                double D = 0, Dm = 0;
                for (int d = 0; d < HS; d++) {
                    double a = 0, am = 0;
                    for (int j = lo; j <= i; j++) { a += p[j] * V(b, j, h, d); am += p[j] * fabs(V(b, j, h, d)); }
                    y[row + d] = a;
                    ymag[row + d] = am;
                    D += (double)dy[row + d] * ykern[row + d];
                    Dm += fabs((double)dy[row + d] * ykern[row + d]);
                }
                for (int j = lo; j <= i; j++) {
                    double a = 0;
                    for (int d = 0; d < HS; d++) a += (double)dy[row + d] * V(b, j, h, d);
                    dp[j] = a;
                }
                for (int j = lo; j <= i; j++) {
                    double ds = p[j] * (dp[j] - D), dsm = p[j] * (fabs(dp[j]) + Dm);
                    size_t rj = ((size_t)b * T + j) * C + h * HS;
                    for (int d = 0; d < HS; d++) {
                        dq[row + d] += scale * ds * K(b, j, h, d);
                        dqm[row + d] += scale * dsm * fabs(K(b, j, h, d));
                        dk[rj + d] += scale * ds * Q(b, i, h, d);
                        dkm[rj + d] += scale * dsm * fabs(Q(b, i, h, d));
                        dv[rj + d] += p[j] * dy[row + d];
                        dvm[rj + d] += p[j] * fabs((double)dy[row + d]);
                    }
                }
            }
    char what[64];
    auto name = [&](const char *x) { snprintf(what, sizeof what, "%s %s", tag, x); return what; };
    close_mag(name("y"), ykern, y, ymag, k4);
    std::vector<double> Lmag(L.size());
    for (size_t n = 0; n < L.size(); n++) Lmag[n] = 9 + fabs(L[n]);    /* 1e-5 + 1e-5 (9 + |L|) ~ 1e-4 + 1e-5 |L| */
    close_mag(name("lse"), o.lse, L, Lmag, 1e-5);
    std::vector<float> gq(ny), gk(ny), gv(ny);
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int c = 0; c < C; c++) {
            gq[r * C + c] = got[r * 3 * C + c];
            gk[r * C + c] = got[r * 3 * C + C + c];
            gv[r * C + c] = got[r * 3 * C + 2 * C + c];
        }
    close_mag(name("dq"), gq, dq, dqm, k4);
    close_mag(name("dk"), gk, dk, dkm, k4);
    close_mag(name("dv"), gv, dv, dvm, k4);
}

static void run(void)
{
    const int B = ZK_TEST_B, T = ZK_T, C = ZK_C;
    zk_seed((uint64_t)C * 7919 + T * 31 + ZK_IO);
    std::vector<float> qkv = zk_rand((size_t)B * T * 3 * C, -1.5f, 1.5f), dy = zk_rand((size_t)B * T * C);
    zk_round<zk_io>(qkv); zk_round<zk_io>(dy);
#if ZK_IO == 0
    zk_round<zk_bf16>(qkv); zk_round<zk_bf16>(dy);   /* staged as bf16: exact for these inputs */
#endif
    std::vector<zk_io> qkvd = zk_to<zk_io>(qkv), dyd = zk_to<zk_io>(dy);

    outs causal = run_kernels(qkvd, dyd, NULL);
    check("causal", qkv, dy, causal, NULL);

    std::vector<int> ident((size_t)B * T);
    for (size_t n = 0; n < ident.size(); n++) ident[n] = (int)(n % T);
    outs id = run_kernels(qkvd, dyd, ident.data());
    ZT_CHECKM(memcmp(id.y.data(), causal.y.data(), causal.y.size() * sizeof causal.y[0]) == 0,
              "pos = t: y differs from pos NULL");
    ZT_CHECKM(memcmp(id.lse.data(), causal.lse.data(), causal.lse.size() * 4) == 0, "pos = t: lse differs from pos NULL");
    ZT_CHECKM(memcmp(id.dqkv.data(), causal.dqkv.data(), causal.dqkv.size() * sizeof causal.dqkv[0]) == 0,
              "pos = t: dqkv differs from pos NULL");

    std::vector<int> pos = zk_doc_pos(B, T);
    check("docs", qkv, dy, run_kernels(qkvd, dyd, pos.data()), pos.data());
}
#endif
