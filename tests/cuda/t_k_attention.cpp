/*
** t_k_attention.cpp — templates/cuda/kernels/attention.cu (tiled causal attention, online softmax;
** backward recomputing from the log-sum-exp) under the SIMT emulation against the host kernels
** zk_attention_forward/backward, which materialise the T x T probabilities.
** Shape sets: HS = 16 with T = 13 (less than one 32-key tile, not a multiple of the 8-row query
** tile), HS = 48 (two head dimensions per lane, the second partial) with T = 45 and T = 70 (several
** key tiles, the last partial), HS = 144 with T = 11 (the smaller tiles used beyond HS = 128, five
** dimensions per lane); B = 1 or 2; fp32, bf16 and fp16 storage.
** Also checked: lse against log(sum exp) computed here in double.
** Documents (docs/DATA.md): every set runs again with each row cut into documents (zk_doc_pos:
** documents of length 1, boundaries on and off the 32-key tiles, a row ending in a padding segment),
** against a double-precision reference computed here with the mask (the query at t sees keys
** t - pos[t] .. t only), forward and backward; and with pos[t] = t, whose results must be the bits of
** the run without positions (pos NULL).
** Tolerances: fp32 2e-5 + 1e-4|ref|; 16-bit adds 2 roundings of the type at the scale of the
** largest |ref| (inputs and output are each rounded once), 4 for the gradients.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_attn.cuh"   /* the shape-free bodies (templates), once */
#include <string.h>

#define ZK_BODY

#define ZK_V 64
#define ZK_F 64
#define ZK_C 32
#define ZK_NH 2
#define ZK_T 13
#define ZK_IO 0
#define ZK_TEST_B 2
namespace hs16_t13_fp32 {
#include "t_k_attention.cpp"
}
#undef ZK_IO
#define ZK_IO 1
namespace hs16_t13_bf16 {
#include "t_k_attention.cpp"
}
#undef ZK_C
#undef ZK_T
#undef ZK_IO
#undef ZK_TEST_B
#define ZK_C 96
#define ZK_T 45
#define ZK_IO 0
#define ZK_TEST_B 1
namespace hs48_t45_fp32 {
#include "t_k_attention.cpp"
}
#undef ZK_T
#undef ZK_IO
#define ZK_T 70
#define ZK_IO 2
namespace hs48_t70_fp16 {
#include "t_k_attention.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_IO
#define ZK_C 144
#define ZK_NH 1
#define ZK_T 11
#define ZK_IO 0
namespace hs144_t11_fp32 {
#include "t_k_attention.cpp"
}

int main(void)
{
    ZT_RUN(hs16_t13_fp32::run);
    ZT_RUN(hs16_t13_bf16::run);
    ZT_RUN(hs48_t45_fp32::run);
    ZT_RUN(hs48_t70_fp16::run);
    ZT_RUN(hs144_t11_fp32::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/attention.cu"

/* Attention of qkv (B*T, 3C) in double with documents (pos NULL: causal): y, lse, dqkv; D from the
** kernel's own y (ykern), as the trainer feeds the backward. */
static void ref_attention(const std::vector<float> &qkv, const std::vector<float> &dy, const std::vector<float> &ykern,
                          const int *pos, std::vector<float> &y, std::vector<float> &lse, std::vector<float> &dqkv)
{
    const int B = ZK_TEST_B, T = ZK_T, C = ZK_C, NH = ZK_NH, HS = C / NH;
    const double scale = 1 / sqrt((double)HS);
    std::vector<double> yd((size_t)B * T * C, 0), g((size_t)B * T * 3 * C, 0), p(T);
    lse.assign((size_t)B * NH * T, 0);
    auto X = [&](int b, int i, int part, int h, int d) { return (double)qkv[((size_t)b * T + i) * 3 * C + part * C + h * HS + d]; };
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                int lo = pos ? i - pos[(size_t)b * T + i] : 0;
                double mx = -1e300, s = 0;
                for (int j = lo; j <= i; j++) {
                    double dot = 0;
                    for (int d = 0; d < HS; d++) dot += X(b, i, 0, h, d) * X(b, j, 1, h, d);
                    p[j] = dot * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = lo; j <= i; j++) s += exp(p[j] - mx);
                lse[((size_t)b * NH + h) * T + i] = (float)(mx + log(s));
                for (int j = lo; j <= i; j++) p[j] = exp(p[j] - mx) / s;
                size_t row = ((size_t)b * T + i) * C + h * HS;
                double D = 0;
                for (int d = 0; d < HS; d++) {
                    for (int j = lo; j <= i; j++) yd[row + d] += p[j] * X(b, j, 2, h, d);
                    D += (double)dy[row + d] * ykern[row + d];
                }
                for (int j = lo; j <= i; j++) {
                    double dp = 0;
                    for (int d = 0; d < HS; d++) dp += (double)dy[row + d] * X(b, j, 2, h, d);
                    double ds = p[j] * (dp - D);
                    size_t gi = ((size_t)b * T + i) * 3 * C + h * HS, gj = ((size_t)b * T + j) * 3 * C + h * HS;
                    for (int d = 0; d < HS; d++) {
                        g[gi + d] += scale * ds * X(b, j, 1, h, d);
                        g[gj + C + d] += scale * ds * X(b, i, 0, h, d);
                        g[gj + 2 * C + d] += p[j] * dy[row + d];
                    }
                }
            }
    y.assign(yd.begin(), yd.end());
    dqkv.assign(g.begin(), g.end());
}

/* q, k, v parts apart, so a failure names the part */
static void close_parts(const char *tag, const std::vector<float> &got, const std::vector<float> &want, double tol)
{
    const int C = ZK_C;
    for (int part = 0; part < 3; part++) {
        std::vector<float> g1, w1;
        for (size_t r = 0; r < got.size() / (3 * C); r++)
            for (int c = 0; c < C; c++) {
                g1.push_back(got[r * 3 * C + part * C + c]);
                w1.push_back(want[r * 3 * C + part * C + c]);
            }
        char what[64];
        snprintf(what, sizeof what, "%s %s", tag, part == 0 ? "dq" : part == 1 ? "dk" : "dv");
        zk_close(what, g1, w1, tol, 1e-4);
    }
}

static void run(void)
{
    const int B = ZK_TEST_B, T = ZK_T, C = ZK_C, NH = ZK_NH, HS = C / NH;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed((uint64_t)C * 7919 + T * 31 + ZK_IO);
    std::vector<float> qkv = zk_rand((size_t)B * T * 3 * C, -1.5f, 1.5f), dy = zk_rand((size_t)B * T * C);
    zk_round<zk_io>(qkv); zk_round<zk_io>(dy);
    std::vector<zk_io> qkvd = zk_to<zk_io>(qkv), dyd = zk_to<zk_io>(dy);

    /* forward */
    std::vector<zk_io> yd((size_t)B * T * C);
    std::vector<float> lse((size_t)B * NH * T, -99.0f);
    ZT_EQ_INT(zd_attention_forward_launch(yd.data(), lse.data(), qkvd.data(), NULL, B), 0);
    std::vector<float> att((size_t)B * NH * T * T), y((size_t)B * T * C);
    zk_attention_forward(B, T, C, NH, NULL, qkv.data(), att.data(), y.data());
    double ty = 2e-5 + 2 * e16 * zk_maxabs(y);
    zk_close("y", zk_from(yd), y, ty, 1e-4);

    /* lse = log sum_{j<=i} exp(q.k_j / sqrt(HS)), in double here */
    std::vector<float> want_lse(lse.size());
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *q = &qkv[((size_t)b * T + i) * 3 * C + h * HS];
                double mx = -1e300, s = 0, sc[256];
                for (int j = 0; j <= i; j++) {
                    const float *k = &qkv[((size_t)b * T + j) * 3 * C + C + h * HS];
                    double dot = 0;
                    for (int d = 0; d < HS; d++) dot += (double)q[d] * k[d];
                    sc[j] = dot / sqrt((double)HS);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j <= i; j++) s += exp(sc[j] - mx);
                want_lse[((size_t)b * NH + h) * T + i] = (float)(mx + log(s));
            }
    zk_close("lse", lse, want_lse, 1e-4 + 4 * e16, 1e-5);

    /* backward: the kernel from its own forward (y, lse), the host from its probabilities */
    std::vector<zk_io> dqkvd((size_t)B * T * 3 * C);
    std::vector<float> Dbuf((size_t)B * NH * T);
    ZT_EQ_INT(zd_attention_backward_launch(dqkvd.data(), Dbuf.data(), qkvd.data(), yd.data(), dyd.data(), lse.data(),
                                           NULL, B), 0);
    std::vector<float> datt((size_t)B * NH * T * T), dqkv((size_t)B * T * 3 * C);
    zk_attention_backward(B, T, C, NH, NULL, qkv.data(), att.data(), dy.data(), datt.data(), dqkv.data());
    std::vector<float> got = zk_from(dqkvd);
    close_parts("causal", got, dqkv, 2e-5 + 4 * e16 * zk_maxabs(dqkv));

    /* pos[t] = t: one document per row, the bits of the run without positions */
    std::vector<int> ident((size_t)B * T);
    for (size_t n = 0; n < ident.size(); n++) ident[n] = (int)(n % T);
    std::vector<zk_io> yi(yd.size()), dqkvi(dqkvd.size());
    std::vector<float> lsei(lse.size()), Di(Dbuf.size());
    ZT_EQ_INT(zd_attention_forward_launch(yi.data(), lsei.data(), qkvd.data(), ident.data(), B), 0);
    ZT_EQ_INT(zd_attention_backward_launch(dqkvi.data(), Di.data(), qkvd.data(), yi.data(), dyd.data(), lsei.data(),
                                           ident.data(), B), 0);
    ZT_CHECKM(memcmp(yi.data(), yd.data(), yd.size() * sizeof yd[0]) == 0, "pos = t: y differs from pos NULL");
    ZT_CHECKM(memcmp(lsei.data(), lse.data(), lse.size() * 4) == 0, "pos = t: lse differs from pos NULL");
    ZT_CHECKM(memcmp(dqkvi.data(), dqkvd.data(), dqkvd.size() * sizeof dqkvd[0]) == 0,
              "pos = t: dqkv differs from pos NULL");

    /* documents, against the double reference with the mask */
    std::vector<int> pos = zk_doc_pos(B, T);
    std::vector<zk_io> ydoc(yd.size()), dqkvdoc(dqkvd.size());
    std::vector<float> lsedoc(lse.size(), -99.0f), Ddoc(Dbuf.size());
    ZT_EQ_INT(zd_attention_forward_launch(ydoc.data(), lsedoc.data(), qkvd.data(), pos.data(), B), 0);
    ZT_EQ_INT(zd_attention_backward_launch(dqkvdoc.data(), Ddoc.data(), qkvd.data(), ydoc.data(), dyd.data(),
                                           lsedoc.data(), pos.data(), B), 0);
    std::vector<float> yk = zk_from(ydoc), yr, lr, gr;
    ref_attention(qkv, dy, yk, pos.data(), yr, lr, gr);
    zk_close("docs y", yk, yr, 2e-5 + 2 * e16 * zk_maxabs(yr), 1e-4);
    zk_close("docs lse", lsedoc, lr, 1e-4 + 4 * e16, 1e-5);
    close_parts("docs", zk_from(dqkvdoc), gr, 2e-5 + 4 * e16 * zk_maxabs(gr));
}
#endif
