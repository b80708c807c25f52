/*
** t_k_llama_attention.cpp — templates/cuda/kernels/attention_gqa_tc.cu (grouped-query causal
** attention on tensor cores, WMMA) under the SIMT + WMMA emulation against the llama host kernels
** zl_attention_forward/backward (fp32, templates/host/llama/llama_host.c).
** Shape sets (tiles of 64 queries x 64 keys): HS 64, NH 4, NKV 2, T 100 (a full and a partial tile),
** B 2, bf16; HS 128, NH 3, NKV 1 (multi-query), T 75, B 1, bf16; HS 40 (not a multiple of 16: head
** dims padded to 48), NH 6, NKV 2 (groups of 3), T 37, B 1, bf16; HS 36 (not a multiple of 8: the
** element-wise staging path), NH 2 = NKV (plain multi-head), T 21, B 2, fp16; HS 64, NH 2, NKV 1,
** T 128 (exactly two tiles), B 1, bf16.
** Checked: y, lse, dq, dk, dv, every element (dk and dv are the sums over each group's query heads).
** Tolerances, per element: |got - ref| <= 1e-5 + k u mag, u the unit roundoff of the storage type
** (2^-8 bf16, 2^-11 fp16) and mag the sum of the magnitudes of the element's terms, from the host's
** probabilities P (y_id: sum_j p_ij |v_jd|; dv_jd: sum over the group's heads and i of p_ij |dy_id|;
** dk_jd: scale sum over heads and i of p_ij (|dp_ij| + Dm_i) |q_id|; dq_id: likewise over j with
** k_jd; dp_ij = dy_i . v_j and Dm_i = sum_d |dy_id| ymag_id). Why: inputs are 16-bit values (rounded
** before both sides see them), products of two are exact in fp32, and the host is fp32 throughout
** (its error ~1e-6 relative, negligible here). The kernel rounds P (forward, dv) or dS (dq, dk) to
** 16 bits before their second product (u per term) and its output once (u |ref| <= u mag); fp32
** sums add ~64 x 2^-24 per term. So y and dv are within 2 u mag: k = 4 leaves room for the tensor
** cores' unspecified summation order (as t_k_attention_tc.cpp). dq and dk also carry D = dy . y from
** the kernel's own 16-bit y, where the host's D is exact: |dD_i| <= sum_d |dy_id| |dy_id error| <=
** 5 u Dm_i (y within 4 u ymag plus the storage of y), weighted by p_ij like dp: k = 8. lse is fp32 end
** to end, against a double reference computed here: 1e-4 + 1e-5 |ref|.
** Documents (docs/DATA.md): each set runs again with pos[t] = t, whose results must be the bits of
** the causal run (pos NULL), and with its rows cut into documents (zk_doc_pos: documents of length 1,
** boundaries on and off the 64-key tiles, a document across a tile boundary, a row ending in a
** padding segment), against a reference computed here in double with the mask (the query at t sees
** keys t - pos[t] .. t only), with the same tolerances and magnitudes (D exact there, as the host's).
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_wmma.cuh"     /* at global scope, once: the per-set part is only zk_wt */
#include "kernels/zk_attn_tc.cuh"  /* the shape-free bodies (templates), once */
extern "C" {
#include "llama/llama_host.h"
}
#include <string.h>

#define ZK_BODY

#define ZK_V 64
#define ZK_F 64
#define ZK_C 256
#define ZK_NH 4
#define ZK_NKV 2
#define ZK_T 100
#define ZK_IO 1
#define ZK_TEST_B 2
namespace hs64_gqa2_t100_bf16 {
#include "t_k_llama_attention.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_TEST_B
#define ZK_C 384
#define ZK_NH 3
#define ZK_NKV 1
#define ZK_T 75
#define ZK_TEST_B 1
namespace hs128_mqa_t75_bf16 {
#include "t_k_llama_attention.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#define ZK_C 240
#define ZK_NH 6
#define ZK_NKV 2
#define ZK_T 37
namespace hs40_gqa3_t37_bf16 {
#include "t_k_llama_attention.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 72
#define ZK_NH 2
#define ZK_NKV 2
#define ZK_T 21
#define ZK_IO 2
#define ZK_TEST_B 2
namespace hs36_mha_t21_fp16 {
#include "t_k_llama_attention.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 128
#define ZK_NH 2
#define ZK_NKV 1
#define ZK_T 128
#define ZK_IO 1
#define ZK_TEST_B 1
namespace hs64_mqa_t128_bf16 {
#include "t_k_llama_attention.cpp"
}

int main(void)
{
    ZT_RUN(hs64_gqa2_t100_bf16::run);
    ZT_RUN(hs128_mqa_t75_bf16::run);
    ZT_RUN(hs40_gqa3_t37_bf16::run);
    ZT_RUN(hs36_mha_t21_fp16::run);
    ZT_RUN(hs64_mqa_t128_bf16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/attention_gqa_tc.cu"

/* |got - ref| <= 1e-5 + k mag, element by element; names the worst on failure. */
static void close_mag(const char *what, const std::vector<float> &got, const std::vector<float> &ref,
                      const std::vector<double> &mag, double k)
{
    size_t bad = 0, worst = 0;
    double wx = -1e300, maxrel = 0;
    for (size_t n = 0; n < ref.size(); n++) {
        double e = fabs((double)got[n] - ref[n]), lim = 1e-5 + k * mag[n];
        if (!(e <= lim)) bad++;
        if (!(e - lim <= wx)) { wx = e - lim; worst = n; }
        if (mag[n] > 0 && e / mag[n] > maxrel) maxrel = e / mag[n];
    }
    ZT_CHECKM(bad == 0, "%s: %zu of %zu outside 1e-5 + %g mag; worst [%zu] %.9g vs %.9g (mag %.3g)", what, bad,
              ref.size(), k, worst, (double)got[worst], (double)ref[worst], mag[worst]);
    if (getenv("ZK_VERBOSE")) printf("  %s: max |err| / mag = %.3g (allowed %.3g)\n", what, maxrel, k);
}

/* Grouped-query attention in double with keys t - pos[t] .. t: y, lse, dq, dk, dv and the magnitudes
** of the head comment's tolerances (ymag, dqm, dkm, dvm). */
struct ref_t { std::vector<double> y, L, dq, dk, dv, ymag, dqm, dkm, dvm; };
static ref_t reference(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                       const std::vector<float> &dy, const int *pos)
{
    const int B = ZK_TEST_B, T = ZK_T, NH = ZK_NH, NKV = ZK_NKV, HS = ZK_C / NH, C = ZK_C, KV = NKV * HS;
    const int rep = NH / NKV;
    const double scale = 1 / sqrt((double)HS);
    const size_t nq = (size_t)B * T * C, nk = (size_t)B * T * KV;
    ref_t r;
    r.y.assign(nq, 0); r.ymag.assign(nq, 0); r.dq.assign(nq, 0); r.dqm.assign(nq, 0);
    r.dk.assign(nk, 0); r.dkm.assign(nk, 0); r.dv.assign(nk, 0); r.dvm.assign(nk, 0);
    r.L.assign((size_t)B * NH * T, 0);
    std::vector<double> p(T), dp(T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            int g = h / rep;
            for (int i = 0; i < T; i++) {
                const int lo = pos ? i - pos[(size_t)b * T + i] : 0;
                size_t qi = ((size_t)b * T + i) * C + h * HS;
                double mx = -1e300, s = 0, D = 0, Dm = 0;
                for (int j = lo; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + g * HS;
                    double dot = 0, a = 0;
                    for (int dd = 0; dd < HS; dd++) {
                        dot += (double)q[qi + dd] * k[kj + dd];
                        a += (double)dy[qi + dd] * v[kj + dd];
                    }
                    p[j] = dot * scale;
                    dp[j] = a;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = lo; j <= i; j++) s += exp(p[j] - mx);
                r.L[((size_t)b * NH + h) * T + i] = mx + log(s);
                for (int j = lo; j <= i; j++) p[j] = exp(p[j] - mx) / s;
                for (int dd = 0; dd < HS; dd++) {
                    double a = 0, am = 0;
                    for (int j = lo; j <= i; j++) {
                        double vj = v[((size_t)b * T + j) * KV + g * HS + dd];
                        a += p[j] * vj;
                        am += p[j] * fabs(vj);
                    }
                    r.y[qi + dd] = a;
                    r.ymag[qi + dd] = am;
                    D += (double)dy[qi + dd] * a;
                    Dm += fabs((double)dy[qi + dd]) * am;
                }
                for (int j = lo; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + g * HS;
                    double ds = p[j] * (dp[j] - D), dsm = p[j] * (fabs(dp[j]) + Dm);
                    for (int dd = 0; dd < HS; dd++) {
                        r.dq[qi + dd] += scale * ds * k[kj + dd];
                        r.dqm[qi + dd] += scale * dsm * fabs((double)k[kj + dd]);
                        r.dk[kj + dd] += scale * ds * q[qi + dd];
                        r.dkm[kj + dd] += scale * dsm * fabs((double)q[qi + dd]);
                        r.dv[kj + dd] += p[j] * dy[qi + dd];
                        r.dvm[kj + dd] += p[j] * fabs((double)dy[qi + dd]);
                    }
                }
            }
        }
    return r;
}

static std::vector<float> to_f(const std::vector<double> &x) { return std::vector<float>(x.begin(), x.end()); }

static void run(void)
{
    const int B = ZK_TEST_B, T = ZK_T, NH = ZK_NH, NKV = ZK_NKV, HS = ZK_C / NH, C = ZK_C, KV = NKV * HS;
    const int rep = NH / NKV;
    const double u = ZK_IO == 2 ? 1.0 / 2048 : 1.0 / 256, scale = 1 / sqrt((double)HS);
    zk_seed((uint64_t)C * 7919 + T * 31 + NKV * 3 + ZK_IO);
    const size_t nq = (size_t)B * T * C, nk = (size_t)B * T * KV;
    std::vector<float> q = zk_rand(nq, -1.5f, 1.5f), k = zk_rand(nk, -1.5f, 1.5f), v = zk_rand(nk, -1.5f, 1.5f);
    std::vector<float> dy = zk_rand(nq);
    zk_round<zk_io>(q); zk_round<zk_io>(k); zk_round<zk_io>(v); zk_round<zk_io>(dy);
    std::vector<zk_io> qd = zk_to<zk_io>(q), kd = zk_to<zk_io>(k), vd = zk_to<zk_io>(v), dyd = zk_to<zk_io>(dy);

    /* the kernels */
    std::vector<zk_io> yd(nq), dqd(nq), dkd(nk), dvd(nk);
    std::vector<float> lse((size_t)B * NH * T, -99.0f), Dbuf((size_t)B * NH * T);
    ZT_EQ_INT(zd_attention_gqa_tc_forward_launch(yd.data(), lse.data(), qd.data(), kd.data(), vd.data(), nullptr, B), 0);
    ZT_EQ_INT(zd_attention_gqa_tc_backward_launch(dqd.data(), dkd.data(), dvd.data(), Dbuf.data(), qd.data(), kd.data(),
                                                  vd.data(), yd.data(), dyd.data(), lse.data(), nullptr, B), 0);

    /* the host */
    std::vector<float> att((size_t)B * NH * T * T), datt(att.size()), y(nq), dq(nq), dk(nk), dv(nk);
    zl_attention_forward(B, T, NH, NKV, HS, nullptr, q.data(), k.data(), v.data(), att.data(), y.data());
    zl_attention_backward(B, T, NH, NKV, HS, nullptr, q.data(), k.data(), v.data(), att.data(), dy.data(), datt.data(),
                          dq.data(), dk.data(), dv.data());

    /* magnitudes (double) from the host's P, and lse in double */
    std::vector<double> ymag(nq), dqm(nq), dkm(nk), dvm(nk), L((size_t)B * NH * T), dp(T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            int g = h / rep;
            for (int i = 0; i < T; i++) {
                const float *p = att.data() + (((size_t)b * NH + h) * T + i) * T;
                size_t qi = ((size_t)b * T + i) * C + h * HS;
                double mx = -1e300, s = 0, Dm = 0;
                std::vector<double> sc(i + 1);
                for (int j = 0; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + g * HS;
                    double dot = 0, a = 0;
                    for (int dd = 0; dd < HS; dd++) {
                        dot += (double)q[qi + dd] * k[kj + dd];
                        a += (double)dy[qi + dd] * v[kj + dd];
                    }
                    sc[j] = dot * scale;
                    dp[j] = a;
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j <= i; j++) s += exp(sc[j] - mx);
                L[((size_t)b * NH + h) * T + i] = mx + log(s);
                for (int dd = 0; dd < HS; dd++) {
                    double am = 0;
                    for (int j = 0; j <= i; j++) am += p[j] * fabs((double)v[((size_t)b * T + j) * KV + g * HS + dd]);
                    ymag[qi + dd] = am;
                    Dm += fabs((double)dy[qi + dd]) * am;
                }
                for (int j = 0; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + g * HS;
                    double dsm = p[j] * (fabs(dp[j]) + Dm);
                    for (int dd = 0; dd < HS; dd++) {
                        dqm[qi + dd] += scale * dsm * fabs((double)k[kj + dd]);
                        dkm[kj + dd] += scale * dsm * fabs((double)q[qi + dd]);
                        dvm[kj + dd] += p[j] * fabs((double)dy[qi + dd]);
                    }
                }
            }
        }
    close_mag("y", zk_from(yd), y, ymag, 4 * u);
    std::vector<float> Lf(L.begin(), L.end());
    std::vector<double> Lmag(L.size());
    for (size_t n = 0; n < L.size(); n++) Lmag[n] = 9 + fabs(L[n]);    /* 1e-5 + 1e-5 (9 + |L|) ~ 1e-4 + 1e-5 |L| */
    close_mag("lse", lse, Lf, Lmag, 1e-5);
    close_mag("dq", zk_from(dqd), dq, dqm, 8 * u);
    close_mag("dk", zk_from(dkd), dk, dkm, 8 * u);
    close_mag("dv", zk_from(dvd), dv, dvm, 4 * u);

    /* pos[t] = t: the bits of the causal run */
    std::vector<int> ident((size_t)B * T);
    for (size_t n = 0; n < ident.size(); n++) ident[n] = (int)(n % T);
    std::vector<zk_io> y2(nq), dq2(nq), dk2(nk), dv2(nk);
    std::vector<float> lse2(lse.size()), D2(Dbuf.size());
    ZT_EQ_INT(zd_attention_gqa_tc_forward_launch(y2.data(), lse2.data(), qd.data(), kd.data(), vd.data(), ident.data(),
                                                 B), 0);
    ZT_EQ_INT(zd_attention_gqa_tc_backward_launch(dq2.data(), dk2.data(), dv2.data(), D2.data(), qd.data(), kd.data(),
                                                  vd.data(), y2.data(), dyd.data(), lse2.data(), ident.data(), B), 0);
    ZT_CHECKM(memcmp(y2.data(), yd.data(), nq * sizeof yd[0]) == 0 && memcmp(lse2.data(), lse.data(), lse.size() * 4) == 0,
              "pos = t: y or lse differs from pos NULL");
    ZT_CHECKM(memcmp(dq2.data(), dqd.data(), nq * sizeof dqd[0]) == 0 && memcmp(dk2.data(), dkd.data(), nk * sizeof dkd[0]) == 0 &&
                  memcmp(dv2.data(), dvd.data(), nk * sizeof dvd[0]) == 0,
              "pos = t: dq, dk or dv differs from pos NULL");

    /* documents, against the double reference with the mask */
    std::vector<int> pos = zk_doc_pos(B, T);
    ZT_EQ_INT(zd_attention_gqa_tc_forward_launch(y2.data(), lse2.data(), qd.data(), kd.data(), vd.data(), pos.data(),
                                                 B), 0);
    ZT_EQ_INT(zd_attention_gqa_tc_backward_launch(dq2.data(), dk2.data(), dv2.data(), D2.data(), qd.data(), kd.data(),
                                                  vd.data(), y2.data(), dyd.data(), lse2.data(), pos.data(), B), 0);
    ref_t r = reference(q, k, v, dy, pos.data());
    close_mag("docs y", zk_from(y2), to_f(r.y), r.ymag, 4 * u);
    for (size_t n = 0; n < r.L.size(); n++) Lmag[n] = 9 + fabs(r.L[n]);
    close_mag("docs lse", lse2, to_f(r.L), Lmag, 1e-5);
    close_mag("docs dq", zk_from(dq2), to_f(r.dq), r.dqm, 8 * u);
    close_mag("docs dk", zk_from(dk2), to_f(r.dk), r.dkm, 8 * u);
    close_mag("docs dv", zk_from(dv2), to_f(r.dv), r.dvm, 4 * u);
}
#endif
