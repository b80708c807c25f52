/*
** t_k_attention.cpp — templates/cuda/kernels/attention.cu (tiled causal attention, online softmax;
** backward recomputing from the log-sum-exp) under the SIMT emulation against the host kernels
** zk_attention_forward/backward, which materialise the T x T probabilities.
** Shape sets: HS = 16 with T = 13 (less than one 32-key tile, not a multiple of the 8-row query
** tile), HS = 48 (two head dimensions per lane, the second partial) with T = 45 and T = 70 (several
** key tiles, the last partial), HS = 144 with T = 11 (the smaller tiles used beyond HS = 128, five
** dimensions per lane); B = 1 or 2; fp32, bf16 and fp16 storage.
** Also checked: lse against log(sum exp) computed here in double.
** Tolerances: fp32 2e-5 + 1e-4|ref|; 16-bit adds 2 roundings of the type at the scale of the
** largest |ref| (inputs and output are each rounded once).
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_attn.cuh"   /* the shape-free bodies (templates), once */
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
    ZT_EQ_INT(zd_attention_forward_launch(yd.data(), lse.data(), qkvd.data(), B), 0);
    std::vector<float> att((size_t)B * NH * T * T), y((size_t)B * T * C);
    zk_attention_forward(B, T, C, NH, qkv.data(), att.data(), y.data());
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
    ZT_EQ_INT(zd_attention_backward_launch(dqkvd.data(), Dbuf.data(), qkvd.data(), yd.data(), dyd.data(), lse.data(), B), 0);
    std::vector<float> datt((size_t)B * NH * T * T), dqkv((size_t)B * T * 3 * C);
    zk_attention_backward(B, T, C, NH, qkv.data(), att.data(), dy.data(), datt.data(), dqkv.data());
    std::vector<float> got = zk_from(dqkvd);
    double tg = 2e-5 + 4 * e16 * zk_maxabs(dqkv);
    /* q, k, v parts apart, so a failure names the part */
    for (int part = 0; part < 3; part++) {
        std::vector<float> g1, w1;
        for (size_t r = 0; r < (size_t)B * T; r++)
            for (int c = 0; c < C; c++) {
                g1.push_back(got[r * 3 * C + part * C + c]);
                w1.push_back(dqkv[r * 3 * C + part * C + c]);
            }
        zk_close(part == 0 ? "dq" : part == 1 ? "dk" : "dv", g1, w1, tg, 1e-4);
    }
}
#endif
