/*
** t_k_crossentropy.cpp — templates/cuda/kernels/crossentropy.cu (softmax + loss + dlogits in one
** kernel) under the SIMT emulation. fp32: against the host head (zk_head_forward's losses and
** zk_head_backward's dlogits, from logits = lnf @ wte^T). Every type: against a double-precision
** reference on the very logits the kernel reads. Rows with ignored targets (-1) included;
** write_grad = 0 leaves the logits untouched.
** Shapes: V = 64 (less than the 512-thread block) and V = 1237 (three strides, the last partial).
** Tolerances: losses 1e-5 + 1e-5|ref|; dlogits 1e-7 + 1e-4|ref| (dloss = 1/N makes them small),
** plus one rounding of the storage type for 16-bit dlogits.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#define ZK_BODY

#define ZK_C 24
#define ZK_NH 2
#define ZK_T 4
#define ZK_F 64
#define ZK_V 64
#define ZK_IO 0
namespace v64_fp32 {
#include "t_k_crossentropy.cpp"
}
#undef ZK_V
#define ZK_V 1237
namespace v1237_fp32 {
#include "t_k_crossentropy.cpp"
}
#undef ZK_IO
#define ZK_IO 1
namespace v1237_bf16 {
#include "t_k_crossentropy.cpp"
}
#undef ZK_V
#undef ZK_IO
#define ZK_V 64
#define ZK_IO 2
namespace v64_fp16 {
#include "t_k_crossentropy.cpp"
}

int main(void)
{
    ZT_RUN(v64_fp32::run);
    ZT_RUN(v1237_fp32::run);
    ZT_RUN(v1237_bf16::run);
    ZT_RUN(v64_fp16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/crossentropy.cu"

static void run(void)
{
    const int B = 2, T = ZK_T, N = B * T, C = ZK_C, V = ZK_V;
    const float dloss = 1.0f / 7;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed((uint64_t)V * 13 + ZK_IO);
    std::vector<float> lnf = zk_rand((size_t)N * C, -2, 2), wte = zk_rand((size_t)V * C);
    std::vector<int> tgt(N);
    for (int r = 0; r < N; r++) tgt[r] = r == 3 ? -1 : (int)((r * 7919u + 13) % (unsigned)V);
    std::vector<float> logits((size_t)N * V);
    for (int r = 0; r < N; r++)
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += (double)lnf[(size_t)r * C + c] * wte[(size_t)v * C + c];
            logits[(size_t)r * V + v] = (float)s;
        }
    zk_round<zk_io>(logits);
    std::vector<zk_io> ld = zk_to<zk_io>(logits);

    /* losses only: the logits stay */
    std::vector<float> losses(N, -1.0f);
    ZT_EQ_INT(zd_crossentropy_launch(ld.data(), losses.data(), tgt.data(), dloss, 0, N), 0);
    zk_close("logits untouched", zk_from(ld), logits, 0, 0);

    /* reference in double */
    std::vector<float> want_loss(N), want_g((size_t)N * V);
    for (int r = 0; r < N; r++) {
        const float *z = &logits[(size_t)r * V];
        double mx = z[0], s = 0;
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) s += exp(z[v] - mx);
        want_loss[r] = tgt[r] < 0 ? 0.0f : (float)(log(s) + mx - z[tgt[r]]);
        for (int v = 0; v < V; v++)
            want_g[(size_t)r * V + v] = tgt[r] < 0 ? 0.0f : (float)((exp(z[v] - mx) / s - (v == tgt[r])) * dloss);
    }
    zk_close("losses (eval)", losses, want_loss, 1e-5, 1e-5);

    std::vector<float> losses2(N);
    ZT_EQ_INT(zd_crossentropy_launch(ld.data(), losses2.data(), tgt.data(), dloss, 1, N), 0);
    std::vector<float> g = zk_from(ld);
    zk_close("losses", losses2, want_loss, 1e-5, 1e-5);
    zk_close("dlogits", g, want_g, 1e-7 + e16 * dloss, 1e-4 + e16);

    /* the host head: same losses and dlogits (fp32 only: it computes its own fp32 logits) */
    if (ZK_IO != 0) return;
    ZkDims d = {B, T, C, ZK_NH, ZK_F, V, 1, 1e-5f, nullptr};
    ZkActs a;
    memset(&a, 0, sizeof a);
    std::vector<float> hlog((size_t)N * V), hloss(N), dln((size_t)N * C), dwte((size_t)V * C);
    a.lnf = lnf.data(); a.logits = hlog.data(); a.losses = hloss.data(); a.dln = dln.data();
    int count = 0;
    float mean = zk_head_forward(&d, wte.data(), tgt.data(), &a, &count);
    zk_head_backward(&d, wte.data(), dwte.data(), tgt.data(), &a, dloss);
    ZT_EQ_INT(count, N - 1);
    double sum = 0;
    for (int r = 0; r < N; r++) sum += losses2[r];
    ZT_NEAR(sum / count, mean, 1e-5, 1e-5);
    zk_close("losses vs host", losses2, hloss, 1e-5, 1e-5);
    zk_close("dlogits vs host", g, hlog, 1e-7, 1e-4);
}
#endif
