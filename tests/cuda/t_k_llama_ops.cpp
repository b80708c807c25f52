/*
** t_k_llama_ops.cpp — templates/cuda/kernels/rmsnorm.cu, rope.cu and swiglu.cu under the SIMT
** emulation against the llama host kernels (templates/host/llama/llama_host.c): RMSNorm forward (y,
** rstd) and backward (dx accumulated into a nonzero residual gradient, dw into nonzero sums, over
** more than one 64-row dw chunk), the RoPE tables (zl_acts_carve's) and the rotation of q and k, forward
** and inverse, SwiGLU forward and backward (also in place).
** Shape sets: C 66 (not a multiple of the warp, nor of 8: element-wise paths), HS 22, NKV 1 (MQA),
** F 100, N 15, bf16, RoPE unscaled; C 128, HS 64, NKV 2, F 136, N 134 (three dw chunks), bf16: the
** 16-byte paths of all three files, LLaMA 3 scaling with original context 32 so that the head's
** wavelengths fall in all three of its regimes (kept, interpolated, divided); C 160, HS 40 (not a
** multiple of 16), NH 4, NKV 2, F 48, fp16 (16-byte RMSNorm and SwiGLU, element-wise RoPE), scaled
** with other factors; C 96, HS 48, NKV 2 = NH, F 33, fp32 storage, unscaled base 500000.
** The host sees the values the kernel reads (inputs rounded to the storage type first).
** Tolerances, per element, |got - ref| <= a + r |ref|:
**   - a 16-bit output (y, dx, rotated q/k, h, dgate, dup): r = one ulp of the type (bf16 2^-7, fp16
**     2^-10: zk_eps_of), a = 1e-5. Both sides compute the same fp32 formula on the same inputs and
**     differ only by fp32 summation order (RMSNorm's sums over C: ~C 2^-24 relative), the host's
**     zk_exp (2.5e-7) against expf, and FMA contraction; so the kernel's value is the host's value
**     rounded once to 16 bits (at most half an ulp) except where that rounding sits on a midpoint the
**     fp32 differences straddle (an ulp). a covers cancellation in the fp32 formulas (dy w - x s dot,
**     a cos - b sin, 1 + x (1 - sig)), whose terms are O(1) here: 2^-24 x a few O(1) terms ~ 1e-6;
**   - fp32 storage: r = 1e-5 (the fp32 differences alone);
**   - rstd: 1e-5 relative (fp32 sum order and rsqrtf);
**   - dw: fp32 sums of N products in chunks of 64 rows against the host's row order: 1e-4 + 1e-4 |ref|,
**     as layernorm's dw;
**   - the RoPE tables: equal bits. The kernel computes zl_rope_inv_freq's double arithmetic and cos/sin
**     in double, as the host, with the same libm here (on a GPU, CUDA's double functions put it within
**     an ulp of fp32, which this emulation cannot show).
** Documents (docs/DATA.md): RoPE rotates each token by its position in its document; checked with
** pos[t] = t (the bits of the run without positions, pos NULL) and with rows cut into documents
** (zk_doc_pos: length-1 documents, a padding segment, a row of single tokens), forward and inverse,
** against the rotation by the table row pos[n] computed here in double, with the 16-bit bounds above.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
extern "C" {
#include "llama/llama_host.h"
}
#include <string.h>

#define ZK_BODY

#define ZK_V 64
#define ZK_C 66
#define ZK_NH 3
#define ZK_NKV 1
#define ZK_T 5
#define ZK_F 100
#define ZK_IO 1
#define ZK_ROPE_THETA 10000.0
#define ZK_ROPE_LLAMA3 0
#define ZK_TEST_B 3
namespace c66_mqa_bf16 {
#include "t_k_llama_ops.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_F
#undef ZK_ROPE_THETA
#undef ZK_ROPE_LLAMA3
#undef ZK_TEST_B
#define ZK_C 128
#define ZK_NH 2
#define ZK_NKV 2
#define ZK_T 67
#define ZK_F 136
#define ZK_ROPE_THETA 500000.0
#define ZK_ROPE_LLAMA3 1
#define ZK_ROPE_FACTOR 8.0
#define ZK_ROPE_LOW 1.0
#define ZK_ROPE_HIGH 4.0
#define ZK_ROPE_OLD 32
#define ZK_TEST_B 2
namespace c128_scaled_bf16 {
#include "t_k_llama_ops.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_T
#undef ZK_F
#undef ZK_IO
#undef ZK_ROPE_THETA
#undef ZK_ROPE_FACTOR
#undef ZK_ROPE_LOW
#undef ZK_ROPE_HIGH
#undef ZK_ROPE_OLD
#define ZK_C 160
#define ZK_NH 4
#define ZK_T 9
#define ZK_F 48
#define ZK_IO 2
#define ZK_ROPE_THETA 10000.0
#define ZK_ROPE_FACTOR 4.0
#define ZK_ROPE_LOW 2.0
#define ZK_ROPE_HIGH 8.0
#define ZK_ROPE_OLD 64
namespace c160_hs40_fp16 {
#include "t_k_llama_ops.cpp"
}
#undef ZK_C
#undef ZK_NH
#undef ZK_NKV
#undef ZK_T
#undef ZK_F
#undef ZK_IO
#undef ZK_ROPE_THETA
#undef ZK_ROPE_LLAMA3
#undef ZK_TEST_B
#define ZK_C 96
#define ZK_NH 2
#define ZK_NKV 2
#define ZK_T 7
#define ZK_F 33
#define ZK_IO 0
#define ZK_ROPE_THETA 500000.0
#define ZK_ROPE_LLAMA3 0
#define ZK_TEST_B 1
namespace c96_mha_fp32 {
#include "t_k_llama_ops.cpp"
}

int main(void)
{
    ZT_RUN(c66_mqa_bf16::run);
    ZT_RUN(c128_scaled_bf16::run);
    ZT_RUN(c160_hs40_fp16::run);
    ZT_RUN(c96_mha_fp32::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/rmsnorm.cu"
#include "kernels/rope.cu"
#include "kernels/swiglu.cu"

static ZlDims dims(void)
{
    ZlDims d;
    memset(&d, 0, sizeof d);
    d.B = ZK_TEST_B, d.T = ZK_T, d.C = ZK_C, d.NH = ZK_NH, d.NKV = ZK_NKV, d.F = ZK_F, d.V = 1, d.L = 0;
    d.eps = 1e-5f;
    d.rope_theta = ZK_ROPE_THETA;
    d.rope_llama3 = ZK_ROPE_LLAMA3;
#if ZK_ROPE_LLAMA3
    d.rope_factor = ZK_ROPE_FACTOR, d.rope_low_freq_factor = ZK_ROPE_LOW, d.rope_high_freq_factor = ZK_ROPE_HIGH;
    d.rope_original_context = ZK_ROPE_OLD;
#endif
    return d;
}

static void run(void)
{
    const ZlDims d = dims();
    const int N = d.B * d.T, C = ZK_C, HS = C / ZK_NH, KV = ZK_NKV * HS, F = ZK_F;
    const double r16 = ZK_IO == 0 ? 1e-5 : zk_eps_of<zk_io>(), a16 = 1e-5;
    zk_seed((uint64_t)C * 131 + N * 7 + ZK_IO);

    /* ---- RMSNorm forward */
    std::vector<float> x = zk_rand((size_t)N * C, -2, 2), w = zk_rand(C, 0.5f, 1.5f);
    zk_round<zk_io>(x); zk_round<zk_io>(w);
    std::vector<zk_io> xd = zk_to<zk_io>(x), wd = zk_to<zk_io>(w), yd((size_t)N * C);
    std::vector<float> rstd(N, -1.0f), y((size_t)N * C), hr(N);
    ZT_EQ_INT(zd_rmsnorm_forward_launch(yd.data(), rstd.data(), xd.data(), wd.data(), d.eps, N), 0);
    zl_rmsnorm_forward(N, C, d.eps, x.data(), w.data(), y.data(), hr.data());
    zk_close("rmsnorm y", zk_from(yd), y, a16, r16);
    zk_close("rmsnorm rstd", rstd, hr, 0, 1e-5);

    /* ---- RMSNorm backward: dx accumulates into a nonzero gradient, dw into nonzero sums */
    std::vector<float> dy = zk_rand((size_t)N * C), dx = zk_rand((size_t)N * C), dw = zk_rand(C);
    zk_round<zk_io>(dy); zk_round<zk_io>(dx);
    std::vector<zk_io> dyd = zk_to<zk_io>(dy), dxd = zk_to<zk_io>(dx);
    std::vector<float> kdw = dw, part((size_t)zd_rmsnorm_dw_part_floats(N), 12345.0f);
    ZT_EQ_INT(zd_rmsnorm_backward_launch(dxd.data(), kdw.data(), part.data(), dyd.data(), xd.data(), wd.data(),
                                         hr.data(), N), 0);
    zl_rmsnorm_backward(N, C, x.data(), w.data(), hr.data(), dy.data(), dx.data(), dw.data());
    zk_close("rmsnorm dx", zk_from(dxd), dx, a16, r16);
    zk_close("rmsnorm dw", kdw, dw, 1e-4, 1e-4);

    /* ---- RoPE tables, as zl_acts_carve makes them */
    std::vector<float> acts(zl_acts_floats(&d)), scratch(zl_scratch_floats(&d));
    ZlActs ha;
    zl_acts_carve(&d, acts.data(), scratch.data(), &ha);
    const size_t nt = (size_t)ZK_T * (HS / 2);
    std::vector<float> kcos(nt, 9.0f), ksin(nt, 9.0f);
    ZT_EQ_INT(zd_rope_tables_launch(kcos.data(), ksin.data()), 0);
    zk_close("rope cos table", kcos, std::vector<float>(ha.rope_cos, ha.rope_cos + nt), 0, 0);
    zk_close("rope sin table", ksin, std::vector<float>(ha.rope_sin, ha.rope_sin + nt), 0, 0);
#if ZK_ROPE_LLAMA3
    {   /* the scaling is in effect for this set (both sides could ignore it and still agree) */
        std::vector<double> f1(HS / 2), f0(HS / 2);
        ZlDims d0 = d;
        d0.rope_llama3 = 0;
        zl_rope_inv_freq(&d, f1.data());
        zl_rope_inv_freq(&d0, f0.data());
        int kept = 0, changed = 0;
        for (int i = 0; i < HS / 2; i++) (f1[i] == f0[i] ? kept : changed)++;
        ZT_CHECKM(kept > 0 && changed > 0, "llama3 scaling: %d frequencies kept, %d changed", kept, changed);
    }
#endif

    /* ---- RoPE on q and k, forward then inverse (on the kernel's rotated values) */
    std::vector<float> q = zk_rand((size_t)N * C, -2, 2), k = zk_rand((size_t)N * KV, -2, 2);
    zk_round<zk_io>(q); zk_round<zk_io>(k);
    std::vector<zk_io> qd = zk_to<zk_io>(q), kd = zk_to<zk_io>(k);
    ZT_EQ_INT(zd_rope_launch(qd.data(), kd.data(), kcos.data(), ksin.data(), nullptr, N, 0), 0);
    zl_rope(d.B, d.T, ZK_NH, HS, nullptr, ha.rope_cos, ha.rope_sin, q.data(), 0);
    zl_rope(d.B, d.T, ZK_NKV, HS, nullptr, ha.rope_cos, ha.rope_sin, k.data(), 0);
    zk_close("rope q", zk_from(qd), q, a16, r16);
    zk_close("rope k", zk_from(kd), k, a16, r16);
    q = zk_from(qd);
    k = zk_from(kd);
    ZT_EQ_INT(zd_rope_launch(qd.data(), kd.data(), kcos.data(), ksin.data(), nullptr, N, 1), 0);
    zl_rope(d.B, d.T, ZK_NH, HS, nullptr, ha.rope_cos, ha.rope_sin, q.data(), 1);
    zl_rope(d.B, d.T, ZK_NKV, HS, nullptr, ha.rope_cos, ha.rope_sin, k.data(), 1);
    zk_close("rope inverse q", zk_from(qd), q, a16, r16);
    zk_close("rope inverse k", zk_from(kd), k, a16, r16);

    /* ---- RoPE by document positions: pos[t] = t gives the bits of pos NULL; documents against the
    ** rotation by table row pos[n] in double, forward and then inverse on the kernel's values */
    {
        std::vector<float> q0 = zk_rand((size_t)N * C, -2, 2), k0 = zk_rand((size_t)N * KV, -2, 2);
        zk_round<zk_io>(q0); zk_round<zk_io>(k0);
        std::vector<zk_io> qa = zk_to<zk_io>(q0), ka = zk_to<zk_io>(k0), qb = qa, kb = ka;
        std::vector<int> ident(N), pos = zk_doc_pos_small(d.B, d.T);
        for (int n = 0; n < N; n++) ident[n] = n % ZK_T;
        for (int inv = 0; inv < 2; inv++) {
            ZT_EQ_INT(zd_rope_launch(qa.data(), ka.data(), kcos.data(), ksin.data(), nullptr, N, inv), 0);
            ZT_EQ_INT(zd_rope_launch(qb.data(), kb.data(), kcos.data(), ksin.data(), ident.data(), N, inv), 0);
        }
        ZT_CHECKM(memcmp(qa.data(), qb.data(), qa.size() * sizeof qa[0]) == 0 &&
                      memcmp(ka.data(), kb.data(), ka.size() * sizeof ka[0]) == 0,
                  "rope: pos = t differs from pos NULL");
        qa = zk_to<zk_io>(q0);
        ka = zk_to<zk_io>(k0);
        for (int inv = 0; inv < 2; inv++) {
            std::vector<float> qr = zk_from(qa), kr = zk_from(ka);
            auto rot = [&](std::vector<float> &x, int heads) {
                for (int n = 0; n < N; n++)
                    for (int h = 0; h < heads; h++)
                        for (int i = 0; i < HS / 2; i++) {
                            float *v = &x[((size_t)n * heads + h) * HS];
                            double c = kcos[(size_t)pos[n] * (HS / 2) + i], sn = (inv ? -1 : 1) * (double)ksin[(size_t)pos[n] * (HS / 2) + i];
                            double a = v[i], b = v[i + HS / 2];
                            v[i] = (float)(a * c - b * sn);
                            v[i + HS / 2] = (float)(b * c + a * sn);
                        }
            };
            rot(qr, ZK_NH);
            rot(kr, ZK_NKV);
            ZT_EQ_INT(zd_rope_launch(qa.data(), ka.data(), kcos.data(), ksin.data(), pos.data(), N, inv), 0);
            zk_close(inv ? "rope docs inverse q" : "rope docs q", zk_from(qa), qr, a16, r16);
            zk_close(inv ? "rope docs inverse k" : "rope docs k", zk_from(ka), kr, a16, r16);
        }
    }

    /* ---- SwiGLU forward and backward; the backward again in place (dgate over gate, dup over up) */
    const size_t nf = (size_t)N * F;
    std::vector<float> gate = zk_rand(nf, -6, 6), up = zk_rand(nf, -2, 2), dh = zk_rand(nf);
    zk_round<zk_io>(gate); zk_round<zk_io>(up); zk_round<zk_io>(dh);
    std::vector<zk_io> gd = zk_to<zk_io>(gate), ud = zk_to<zk_io>(up), dhd = zk_to<zk_io>(dh), hd(nf), dgd(nf), dud(nf);
    std::vector<float> h(nf), dg(nf), du(nf);
    ZT_EQ_INT(zd_swiglu_forward_launch(hd.data(), gd.data(), ud.data(), N), 0);
    zl_swiglu_forward(nf, gate.data(), up.data(), h.data());
    zk_close("swiglu h", zk_from(hd), h, a16, r16);
    ZT_EQ_INT(zd_swiglu_backward_launch(dgd.data(), dud.data(), gd.data(), ud.data(), dhd.data(), N), 0);
    zl_swiglu_backward(nf, gate.data(), up.data(), dh.data(), dg.data(), du.data());
    zk_close("swiglu dgate", zk_from(dgd), dg, a16, r16);
    zk_close("swiglu dup", zk_from(dud), du, a16, r16);
    ZT_EQ_INT(zd_swiglu_backward_launch(gd.data(), ud.data(), gd.data(), ud.data(), dhd.data(), N), 0);
    zk_close("swiglu dgate in place", zk_from(gd), zk_from(dgd), 0, 0);
    zk_close("swiglu dup in place", zk_from(ud), zk_from(dud), 0, 0);
}
#endif
