/*
** t_k_llama_attention_simt.cpp — templates/cuda/kernels/attention_gqa.cu (grouped-query causal
** attention on CUDA cores, fp32 arithmetic: the fp32 plans' llama attention) under the SIMT emulation
** against the llama host kernels zl_attention_forward/backward (fp32, templates/host/llama/), which
** materialise the T x T probabilities.
** Shape sets: HS 12 (one partial dimension per lane), NH 4, NKV 2, T 13 (less than one 32-key tile and
** not a multiple of the 8-row query tile), B 2, fp32; HS 48 (two dimensions per lane, the second
** partial), NH 6, NKV 2 (groups of 3), T 45 (two key tiles, the last partial), B 1, fp32; HS 128
** (LLaMA's head size: dkv's two 64-dimension passes), NH 4, NKV 1 (multi-query), T 40, B 1, fp32;
** HS 64, NH 2, NKV 2 (plain multi-head), T 70, B 2, bf16; HS 144 (the smaller tiles beyond HS 128),
** NH 2, NKV 1, T 11, B 1, fp16.
** Checked: y, lse, dq, dk, dv, every element (dk and dv are the sums over each group's query heads).
** Tolerances as t_k_attention.cpp's (the same bodies, zk_attn.cuh): fp32 2e-5 + 1e-4 |ref| (the same
** fp32 terms summed in another order: the host's softmax is materialised, the kernel's online);
** 16-bit storage adds, at the scale of the tensor's largest |ref|, one epsilon of the type for y
** (its output rounding; inputs are rounded before both sides see them) and two for the gradients
** (theirs, and the kernel's own 16-bit y inside D = dy . y). lse against log(sum exp) in double.
** Documents (docs/DATA.md): each set runs again with pos[t] = t, whose results must be the bits of
** the causal run (pos NULL), and with its rows cut into documents (zk_doc_pos: documents of length 1,
** boundaries on and off the 32-key tiles, a query tile holding rows of documents begun in different
** key tiles, a row ending in a padding segment), against a reference computed here in double with
** the mask (the query at t sees keys t - pos[t] .. t only), with the same tolerances.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_attn.cuh"     /* the shape-free bodies (templates), once */
extern "C" {
#include "llama/llama_host.h"
}
#include <string.h>

#define ZK_BODY

#define ZK_V 64
#define ZK_F 64
#define ZK_C 48
#define ZK_NH 4
#define ZK_NKV 2
#define ZK_T 13
#define ZK_IO 0
#define ZK_TEST_B 2
namespace hs12_gqa2_t13_fp32 {
#include "t_k_llama_attention_simt.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_TEST_B
#define ZK_C 288
#define ZK_NH 6
#define ZK_NKV 2
#define ZK_T 45
#define ZK_TEST_B 1
namespace hs48_gqa3_t45_fp32 {
#include "t_k_llama_attention_simt.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#define ZK_C 512
#define ZK_NH 4
#define ZK_NKV 1
#define ZK_T 40
namespace hs128_mqa_t40_fp32 {
#include "t_k_llama_attention_simt.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 128
#define ZK_NH 2
#define ZK_NKV 2
#define ZK_T 70
#define ZK_IO 1
#define ZK_TEST_B 2
namespace hs64_mha_t70_bf16 {
#include "t_k_llama_attention_simt.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 288
#define ZK_NH 2
#define ZK_NKV 1
#define ZK_T 11
#define ZK_IO 2
#define ZK_TEST_B 1
namespace hs144_mqa_t11_fp16 {
#include "t_k_llama_attention_simt.cpp"
}

int main(void)
{
    ZT_RUN(hs12_gqa2_t13_fp32::run);
    ZT_RUN(hs48_gqa3_t45_fp32::run);
    ZT_RUN(hs128_mqa_t40_fp32::run);
    ZT_RUN(hs64_mha_t70_bf16::run);
    ZT_RUN(hs144_mqa_t11_fp16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/attention_gqa.cu"

/* Grouped-query attention in double with keys t - pos[t] .. t: y, lse, dq, dk, dv. */
static void reference(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                      const std::vector<float> &dy, const int *pos, std::vector<float> &yo, std::vector<float> &lse_o,
                      std::vector<float> &dqo, std::vector<float> &dko, std::vector<float> &dvo)
{
    const int B = ZK_TEST_B, T = ZK_T, NH = ZK_NH, NKV = ZK_NKV, HS = ZK_C / NH, C = ZK_C, KV = NKV * HS;
    const int rep = NH / NKV;
    const double scale = 1 / sqrt((double)HS);
    const size_t nq = (size_t)B * T * C, nk = (size_t)B * T * KV;
    std::vector<double> y(nq, 0), dq(nq, 0), dk(nk, 0), dv(nk, 0), p(T), dp(T);
    lse_o.assign((size_t)B * NH * T, 0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const int lo = pos ? i - pos[(size_t)b * T + i] : 0;
                const size_t qi = ((size_t)b * T + i) * C + h * HS;
                double mx = -1e300, s = 0, D = 0;
                for (int j = lo; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + (h / rep) * HS;
                    double dot = 0, a = 0;
                    for (int d = 0; d < HS; d++) {
                        dot += (double)q[qi + d] * k[kj + d];
                        a += (double)dy[qi + d] * v[kj + d];
                    }
                    p[j] = dot * scale;
                    dp[j] = a;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = lo; j <= i; j++) s += exp(p[j] - mx);
                lse_o[((size_t)b * NH + h) * T + i] = (float)(mx + log(s));
                for (int j = lo; j <= i; j++) p[j] = exp(p[j] - mx) / s;
                for (int d = 0; d < HS; d++) {
                    for (int j = lo; j <= i; j++) y[qi + d] += p[j] * v[((size_t)b * T + j) * KV + (h / rep) * HS + d];
                    D += (double)dy[qi + d] * y[qi + d];
                }
                for (int j = lo; j <= i; j++) {
                    size_t kj = ((size_t)b * T + j) * KV + (h / rep) * HS;
                    double ds = p[j] * (dp[j] - D);
                    for (int d = 0; d < HS; d++) {
                        dq[qi + d] += scale * ds * k[kj + d];
                        dk[kj + d] += scale * ds * q[qi + d];
                        dv[kj + d] += p[j] * dy[qi + d];
                    }
                }
            }
    yo.assign(y.begin(), y.end());
    dqo.assign(dq.begin(), dq.end());
    dko.assign(dk.begin(), dk.end());
    dvo.assign(dv.begin(), dv.end());
}

static void run(void)
{
    const int B = ZK_TEST_B, T = ZK_T, NH = ZK_NH, NKV = ZK_NKV, HS = ZK_C / NH, C = ZK_C, KV = NKV * HS;
    const int rep = NH / NKV;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed((uint64_t)C * 7919 + T * 31 + NKV * 3 + ZK_IO);
    const size_t nq = (size_t)B * T * C, nk = (size_t)B * T * KV;
    std::vector<float> q = zk_rand(nq, -1.5f, 1.5f), k = zk_rand(nk, -1.5f, 1.5f), v = zk_rand(nk, -1.5f, 1.5f);
    std::vector<float> dy = zk_rand(nq);
    zk_round<zk_io>(q); zk_round<zk_io>(k); zk_round<zk_io>(v); zk_round<zk_io>(dy);
    std::vector<zk_io> qd = zk_to<zk_io>(q), kd = zk_to<zk_io>(k), vd = zk_to<zk_io>(v), dyd = zk_to<zk_io>(dy);

    /* forward */
    std::vector<zk_io> yd(nq);
    std::vector<float> lse((size_t)B * NH * T, -99.0f);
    ZT_EQ_INT(zd_attention_gqa_forward_launch(yd.data(), lse.data(), qd.data(), kd.data(), vd.data(), nullptr, B), 0);
    std::vector<float> att((size_t)B * NH * T * T), y(nq);
    zl_attention_forward(B, T, NH, NKV, HS, nullptr, q.data(), k.data(), v.data(), att.data(), y.data());
    zk_close("y", zk_from(yd), y, 2e-5 + e16 * zk_maxabs(y), 1e-4);

    /* lse = log sum_{j<=i} exp(q_i . k_j / sqrt(HS)), key/value head h / rep, in double here */
    std::vector<float> want_lse(lse.size());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *qi = &q[((size_t)b * T + i) * C + h * HS];
                double mx = -1e300, s = 0;
                std::vector<double> sc(i + 1);
                for (int j = 0; j <= i; j++) {
                    const float *kj = &k[((size_t)b * T + j) * KV + (h / rep) * HS];
                    double dot = 0;
                    for (int d = 0; d < HS; d++) dot += (double)qi[d] * kj[d];
                    sc[j] = dot / sqrt((double)HS);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j <= i; j++) s += exp(sc[j] - mx);
                want_lse[((size_t)b * NH + h) * T + i] = (float)(mx + log(s));
            }
    zk_close("lse", lse, want_lse, 1e-4 + 4 * e16, 1e-5);

    /* backward: the kernels from their own forward (y, lse), the host from its probabilities */
    std::vector<zk_io> dqd(nq), dkd(nk), dvd(nk);
    std::vector<float> Dbuf((size_t)B * NH * T);
    ZT_EQ_INT(zd_attention_gqa_backward_launch(dqd.data(), dkd.data(), dvd.data(), Dbuf.data(), qd.data(), kd.data(),
                                               vd.data(), yd.data(), dyd.data(), lse.data(), nullptr, B), 0);
    std::vector<float> datt(att.size()), dq(nq), dk(nk), dv(nk);
    zl_attention_backward(B, T, NH, NKV, HS, nullptr, q.data(), k.data(), v.data(), att.data(), dy.data(), datt.data(),
                          dq.data(), dk.data(), dv.data());
    zk_close("dq", zk_from(dqd), dq, 2e-5 + 2 * e16 * zk_maxabs(dq), 1e-4);
    zk_close("dk", zk_from(dkd), dk, 2e-5 + 2 * e16 * zk_maxabs(dk), 1e-4);
    zk_close("dv", zk_from(dvd), dv, 2e-5 + 2 * e16 * zk_maxabs(dv), 1e-4);

    /* pos[t] = t: the bits of the causal run */
    std::vector<int> ident((size_t)B * T);
    for (size_t n = 0; n < ident.size(); n++) ident[n] = (int)(n % T);
    std::vector<zk_io> y2(nq), dq2(nq), dk2(nk), dv2(nk);
    std::vector<float> lse2(lse.size()), D2(Dbuf.size());
    ZT_EQ_INT(zd_attention_gqa_forward_launch(y2.data(), lse2.data(), qd.data(), kd.data(), vd.data(), ident.data(), B), 0);
    ZT_EQ_INT(zd_attention_gqa_backward_launch(dq2.data(), dk2.data(), dv2.data(), D2.data(), qd.data(), kd.data(),
                                               vd.data(), y2.data(), dyd.data(), lse2.data(), ident.data(), B), 0);
    ZT_CHECKM(memcmp(y2.data(), yd.data(), nq * sizeof yd[0]) == 0 && memcmp(lse2.data(), lse.data(), lse.size() * 4) == 0,
              "pos = t: y or lse differs from pos NULL");
    ZT_CHECKM(memcmp(dq2.data(), dqd.data(), nq * sizeof dqd[0]) == 0 && memcmp(dk2.data(), dkd.data(), nk * sizeof dkd[0]) == 0 &&
                  memcmp(dv2.data(), dvd.data(), nk * sizeof dvd[0]) == 0,
              "pos = t: dq, dk or dv differs from pos NULL");

    /* documents, against the double reference with the mask */
    std::vector<int> pos = zk_doc_pos(B, T);
    std::fill(lse2.begin(), lse2.end(), -99.0f);
    ZT_EQ_INT(zd_attention_gqa_forward_launch(y2.data(), lse2.data(), qd.data(), kd.data(), vd.data(), pos.data(), B), 0);
    ZT_EQ_INT(zd_attention_gqa_backward_launch(dq2.data(), dk2.data(), dv2.data(), D2.data(), qd.data(), kd.data(),
                                               vd.data(), y2.data(), dyd.data(), lse2.data(), pos.data(), B), 0);
    std::vector<float> yr, lr, dqr, dkr, dvr;
    reference(q, k, v, dy, pos.data(), yr, lr, dqr, dkr, dvr);
    zk_close("docs y", zk_from(y2), yr, 2e-5 + e16 * zk_maxabs(yr), 1e-4);
    zk_close("docs lse", lse2, lr, 1e-4 + 4 * e16, 1e-5);
    zk_close("docs dq", zk_from(dq2), dqr, 2e-5 + 2 * e16 * zk_maxabs(dqr), 1e-4);
    zk_close("docs dk", zk_from(dk2), dkr, 2e-5 + 2 * e16 * zk_maxabs(dkr), 1e-4);
    zk_close("docs dv", zk_from(dv2), dvr, 2e-5 + 2 * e16 * zk_maxabs(dvr), 1e-4);
}
#endif
