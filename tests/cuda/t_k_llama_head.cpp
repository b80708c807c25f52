/*
** t_k_llama_head.cpp — templates/cuda/kernels/crossentropy.cu serves llama's head: LLaMA 3's
** vocabulary (V = 128256, 250 strides of the 512-thread block, the last partial) with bf16 logits
** from an untied lm_head (V, C), under the SIMT emulation. The kernel needs nothing llama-specific
** (the head's product and its gradients are cuBLAS's; tying only changes which tensor the product
** reads), so this checks the size and the storage:
**   - against a double-precision reference on the very logits the kernel reads: losses 1e-5 +
**     1e-5 |ref| (fp32 sums of 128256 terms: ~1e-6 relative); dlogits 1e-9 + (2^-7 + 1e-4) |ref|
**     (one bf16 rounding of the output, an ulp where the fp32 differences straddle a midpoint);
**   - against the llama host head (zl_head_forward/backward, fp32 logits from lnf and w): the kernel's
**     logits are those rounded to bf16 (|dz| <= 2^-9 |z|), so a loss differs by up to 2^-8 max|z| and
**     a probability by a factor exp(2^-8 max|z|); losses within 1e-5 + 2^-8 max|z|, dlogits within
**     1e-9 + (2^-7 + 2^-7 max|z|) |ref| (the bound doubled for the fp32 rounding of the host's own
**     logits and the output's rounding).
** Rows: 3, one with an ignored target (-1); dloss = 1/2 (two counted targets).
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
extern "C" {
#include "llama/llama_host.h"
}
#define ZK_BODY

#define ZK_C 16
#define ZK_NH 2
#define ZK_NKV 1
#define ZK_T 3
#define ZK_F 64
#define ZK_V 128256
#define ZK_IO 1
namespace v128256_bf16 {
#include "t_k_llama_head.cpp"
}

int main(void)
{
    ZT_RUN(v128256_bf16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/crossentropy.cu"

static void run(void)
{
    const int N = ZK_T, C = ZK_C, V = ZK_V;
    const float dloss = 0.5f;
    zk_seed(128256);
    std::vector<float> lnf = zk_rand((size_t)N * C, -2, 2), w = zk_rand((size_t)V * C);
    std::vector<int> tgt = {V - 1, -1, 70000};
    std::vector<float> logits((size_t)N * V);
    double zmax = 0;
    for (int r = 0; r < N; r++)
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += (double)lnf[(size_t)r * C + c] * w[(size_t)v * C + c];
            logits[(size_t)r * V + v] = (float)s;
            zmax = fabs(s) > zmax ? fabs(s) : zmax;
        }
    std::vector<float> z16 = logits;
    zk_round<zk_io>(z16);
    std::vector<zk_io> ld = zk_to<zk_io>(z16);
    std::vector<float> losses(N, -1.0f);
    ZT_EQ_INT(zd_crossentropy_launch(ld.data(), losses.data(), tgt.data(), dloss, 1, N), 0);
    std::vector<float> g = zk_from(ld);

    /* double reference on the kernel's bf16 logits */
    std::vector<float> want_loss(N), want_g((size_t)N * V);
    for (int r = 0; r < N; r++) {
        const float *z = &z16[(size_t)r * V];
        double mx = z[0], s = 0;
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) s += exp(z[v] - mx);
        want_loss[r] = tgt[r] < 0 ? 0.0f : (float)(log(s) + mx - z[tgt[r]]);
        for (int v = 0; v < V; v++)
            want_g[(size_t)r * V + v] = tgt[r] < 0 ? 0.0f : (float)((exp(z[v] - mx) / s - (v == tgt[r])) * dloss);
    }
    zk_close("losses", losses, want_loss, 1e-5, 1e-5);
    zk_close("dlogits", g, want_g, 1e-9, 1.0 / 128 + 1e-4);

    /* the llama host head, untied w */
    ZlDims d;
    memset(&d, 0, sizeof d);
    d.B = 1, d.T = N, d.C = C, d.NH = ZK_NH, d.NKV = ZK_NKV, d.F = ZK_F, d.V = V, d.L = 0;
    ZlActs a;
    memset(&a, 0, sizeof a);
    std::vector<float> hlog((size_t)N * V), hloss(N), dln((size_t)N * C), dw((size_t)V * C);
    a.lnf = lnf.data(), a.logits = hlog.data(), a.losses = hloss.data(), a.dln = dln.data();
    int count = 0;
    zl_head_forward(&d, w.data(), tgt.data(), &a, &count);
    zl_head_backward(&d, w.data(), dw.data(), tgt.data(), &a, dloss);
    ZT_EQ_INT(count, 2);
    zk_close("losses vs host", losses, hloss, 1e-5 + zmax / 256, 0);
    zk_close("dlogits vs host", g, hlog, 1e-9, 1.0 / 128 + zmax / 128);
}
#endif
