/*
** t_k_elementwise.cpp — the elementwise and reduction kernels under the SIMT emulation:
**   encoder.cu   against zk_embed_forward / zk_embed_backward (host), repeated token ids included;
**                with document positions (docs/DATA.md; zk_doc_pos: length-1 documents, a padding
**                segment, a row of single tokens): out = wte[tok] + wpe[pos] exactly, and dwpe[p]
**                the sum of the rows with pos = p, within 1e-6 of it in double and bit for bit the
**                fp32 sum in row order from 0 added once (the kernel's stated order, which with
**                pos[t] = t is the order without positions);
**   gelu.cu      against zk_gelu_forward / zk_gelu_backward (host) plus the bias column sums (7
**                and 150 rows: one and three chunks of the two-stage sum);
**   adamw.cu     bit for bit against the CPU optimizer (runtime/zr_adam.c, zr_adam_step_scalar), and
**                within rounding of DeepSpeed's AdamW written out here in double (3 steps, weight
**                decay, gradient scale, the 16-bit copy of the parameters).
** Shape sets: C = 48, F = 192 (fp32) and C = 67, F = 100 (bf16, fp16): not multiples of the blocks.
** Tolerances: fp32 1e-5 + 1e-5|ref| (embedding sums exact: 0); 16-bit adds one rounding of the type.
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#include "kernels/zk_tokbucket.h"     /* outside the shape sets' namespaces: it has one definition */
extern "C" {
#include "zr_adam.h"
}

#define ZK_BODY

#define ZK_NH 1
#define ZK_V 50
#define ZK_T 8
#define ZK_C 48
#define ZK_F 192
#define ZK_IO 0
#define ZK_TEST_BIG 70001
namespace c48_fp32 {
#include "t_k_elementwise.cpp"
}
#undef ZK_C
#undef ZK_F
#undef ZK_IO
#undef ZK_T
#undef ZK_TEST_BIG
#define ZK_T 5
#define ZK_C 67
#define ZK_F 100
#define ZK_IO 1
#define ZK_TEST_BIG 3001
namespace c67_bf16 {
#include "t_k_elementwise.cpp"
}
#undef ZK_IO
#define ZK_IO 2
namespace c67_fp16 {
#include "t_k_elementwise.cpp"
}

/* The 16-bit conversions the emulation uses (the GPU uses cvt instructions): values checked with
** numpy.float16 and torch.bfloat16, and every
** non-NaN 16-bit pattern survives load + store unchanged. */
static void conversions(void)
{
    const float vals[] = {1.0f, -2.0f, 65504.0f, 65520.0f, 5.9604645e-8f, 1.0f / 3, 1e-8f};
    const unsigned short want_h[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x3555, 0x0000};
    const unsigned short want_b[] = {0x3f80, 0xc000, 0x4780, 0x4780, 0x3380, 0x3eab, 0x322c};
    for (int i = 0; i < 7; i++) {
        zk_fp16 h;
        zk_bf16 b;
        zk_st(&h, vals[i]);
        zk_st(&b, vals[i]);
        ZT_CHECKM(h.bits == want_h[i], "fp16(%g) = %#x, want %#x", (double)vals[i], h.bits, want_h[i]);
        ZT_CHECKM(b.bits == want_b[i], "bf16(%g) = %#x, want %#x", (double)vals[i], b.bits, want_b[i]);
    }
    int bad = 0;
    for (unsigned u = 0; u < 65536; u++) {
        zk_fp16 h = {(unsigned short)u}, h2;
        zk_bf16 b = {(unsigned short)u}, b2;
        float fh = zk_ld(&h), fb = zk_ld(&b);
        zk_st(&h2, fh);
        zk_st(&b2, fb);
        if (fh == fh && h2.bits != u) bad++;
        if (fb == fb && b2.bits != u) bad++;
        if ((fh != fh) != ((u & 0x7c00) == 0x7c00 && (u & 0x3ff))) bad++;
    }
    ZT_EQ_INT(bad, 0);
}

int main(void)
{
    ZT_RUN(conversions);
    ZT_RUN(c48_fp32::encoder);
    ZT_RUN(c48_fp32::gelu);
    ZT_RUN(c48_fp32::adamw);
    ZT_RUN(c67_bf16::encoder);
    ZT_RUN(c67_bf16::gelu);
    ZT_RUN(c67_bf16::adamw);
    ZT_RUN(c67_fp16::encoder);
    ZT_RUN(c67_fp16::gelu);
    ZT_RUN(c67_fp16::adamw);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/encoder.cu"
#include "kernels/gelu.cu"
#include "kernels/adamw.cu"

static void encoder(void)
{
    const int B = 3, T = ZK_T, N = B * T, C = ZK_C, V = ZK_V;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed(C + ZK_IO);
    std::vector<float> wte = zk_rand((size_t)V * C), wpe = zk_rand((size_t)T * C), dout = zk_rand((size_t)N * C);
    zk_round<zk_io>(wte); zk_round<zk_io>(wpe); zk_round<zk_io>(dout);
    std::vector<int> tok(N);
    for (int i = 0; i < N; i++) tok[i] = (i * 17 + 3) % 11;   /* ids repeat */
    std::vector<zk_io> wted = zk_to<zk_io>(wte), wped = zk_to<zk_io>(wpe), outd((size_t)N * C);
    ZT_EQ_INT(zd_encoder_forward_launch(outd.data(), tok.data(), nullptr, wted.data(), wped.data(), N), 0);
    ZkDims d = {B, T, C, ZK_NH, ZK_F, V, 1, 1e-5f, nullptr};
    ZkActs a;
    memset(&a, 0, sizeof a);
    std::vector<float> enc((size_t)N * C);
    a.encoded = enc.data();
    a.dresidual = dout.data();
    zk_embed_forward(&d, tok.data(), wte.data(), wpe.data(), &a);
    zk_close("encoded", zk_from(outd), enc, 0, e16);

    std::vector<float> dwte = zk_rand((size_t)V * C), dwpe = zk_rand((size_t)T * C);
    std::vector<float> kdwte = dwte, kdwpe = dwpe;
    std::vector<zk_io> doutd = zk_to<zk_io>(dout);
    std::vector<int> bkt(ZK_TOKBUCKET_INTS(N)), cnt(V + 1), ident(N), pbkt(ZK_TOKBUCKET_INTS(N)), pcnt(T + 1);
    ZT_EQ_INT(zk_tok_buckets(tok.data(), N, V, cnt.data(), bkt.data()), 11);
    for (int n = 0; n < N; n++) ident[n] = n % T;
    ZT_EQ_INT(zk_tok_buckets(ident.data(), N, T, pcnt.data(), pbkt.data()), T);
    ZT_EQ_INT(zd_encoder_backward_launch(kdwte.data(), kdwpe.data(), bkt.data(), pbkt.data(), doutd.data(), N), 0);
    zk_embed_backward(&d, tok.data(), dwte.data(), dwpe.data(), &a);
    zk_close("dwte", kdwte, dwte, 0, 0);     /* the host's additions in the host's order: the same bits */
    zk_close("dwpe", kdwpe, dwpe, 1e-6, 1e-6);

    /* dwpe[p] in fp32: the rows with pos = p in row order summed from 0, then added onto dwpe */
    auto wpe_sums = [&](const std::vector<int> &pos, std::vector<float> g) {
        for (int p = 0; p < T; p++)
            for (int c = 0; c < C; c++) {
                float acc = 0.0f;
                for (int n = 0; n < N; n++)
                    if (pos[n] == p) acc += zk_ld(&doutd[(size_t)n * C + c]);
                g[(size_t)p * C + c] += acc;
            }
        return g;
    };
    std::vector<float> dwpe0 = zk_rand((size_t)T * C);
    std::vector<float> kd0 = dwpe0, kdt = dwte;
    ZT_EQ_INT(zd_encoder_backward_launch(kdt.data(), kd0.data(), bkt.data(), pbkt.data(), doutd.data(), N), 0);
    zk_close("dwpe, pos = t: the sums over the sequences in order", kd0, wpe_sums(ident, dwpe0), 0, 0);

    /* documents: each token at its position in its document */
    std::vector<int> pos = zk_doc_pos_small(B, T);
    int npos = 0;
    for (int n = 0; n < N; n++) npos = pos[n] + 1 > npos ? pos[n] + 1 : npos;
    ZT_EQ_INT(zk_tok_buckets(pos.data(), N, T, pcnt.data(), pbkt.data()), npos);
    ZT_EQ_INT(zd_encoder_forward_launch(outd.data(), tok.data(), pos.data(), wted.data(), wped.data(), N), 0);
    std::vector<float> encd((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) encd[(size_t)n * C + c] = wte[(size_t)tok[n] * C + c] + wpe[(size_t)pos[n] * C + c];
    zk_round<zk_io>(encd);
    zk_close("encoded, documents", zk_from(outd), encd, 0, 0);
    kd0 = dwpe0;
    kdt = dwte;
    ZT_EQ_INT(zd_encoder_backward_launch(kdt.data(), kd0.data(), bkt.data(), pbkt.data(), doutd.data(), N), 0);
    std::vector<double> sum(dwpe0.begin(), dwpe0.end());
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) sum[(size_t)pos[n] * C + c] += zk_ld(&doutd[(size_t)n * C + c]);
    zk_close("dwpe, documents", kd0, std::vector<float>(sum.begin(), sum.end()), 1e-6, 1e-6);
    zk_close("dwpe, documents: the stated order", kd0, wpe_sums(pos, dwpe0), 0, 0);
}

/* N 7: one chunk of the bias sums; 150: three, the last partial (zk_colsum.h's 64 rows) */
static void gelu_n(const int N)
{
    const int F = ZK_F;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed(F + ZK_IO);
    std::vector<float> x = zk_rand((size_t)N * F, -4, 4), bias = zk_rand(F), dy = zk_rand((size_t)N * F);
    zk_round<zk_io>(x); zk_round<zk_io>(bias); zk_round<zk_io>(dy);
    std::vector<zk_io> xd = zk_to<zk_io>(x), bd = zk_to<zk_io>(bias), dyd = zk_to<zk_io>(dy);
    std::vector<zk_io> outd((size_t)N * F), pred((size_t)N * F), dpred((size_t)N * F);
    ZT_EQ_INT(zd_bias_gelu_forward_launch(outd.data(), pred.data(), xd.data(), bd.data(), N), 0);
    std::vector<float> pre((size_t)N * F), out((size_t)N * F), dpre((size_t)N * F);
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) pre[(size_t)n * F + f] = x[(size_t)n * F + f] + bias[f];
    zk_round<zk_io>(pre);
    zk_gelu_forward(pre.size(), pre.data(), out.data());
    zk_close("pre", zk_from(pred), pre, 0, 0);
    zk_close("gelu", zk_from(outd), out, 1e-6, 1e-5 + e16);

    std::vector<float> dbias = zk_rand(F), kdbias = dbias, part((size_t)zd_bias_part_floats(N), 12345.0f);
    ZT_EQ_INT(zd_bias_gelu_backward_launch(dpred.data(), kdbias.data(), part.data(), pred.data(), dyd.data(), N), 0);
    zk_gelu_backward(pre.size(), pre.data(), dy.data(), dpre.data());
    std::vector<float> kdpre = zk_from(dpred);
    zk_close("dpre", kdpre, dpre, 1e-6, 1e-5 + e16);
    for (int f = 0; f < F; f++)
        for (int n = 0; n < N; n++) dbias[f] += kdpre[(size_t)n * F + f];   /* the kernel's own dpre */
    zk_close("dbias", kdbias, dbias, 1e-5, 1e-5);
}

static void gelu(void)
{
    gelu_n(7);
    gelu_n(150);
}

/* adamw: AdamW (decoupled decay) or Adam (L2 decay into the gradient); bc: bias correction (without,
** both sides pass a step so large that b^t is 0, as the trainers do) */
static void adam_case(int adamw, int bc)
{
    const long n = 1000;
    const float lr = 3e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, gs = 0.5f;
    const double e16 = zk_eps_of<zk_io>();
    zk_seed(n + ZK_IO);
    std::vector<float> p = zk_rand(n), m(n, 0.0f), v(n, 0.0f), p0 = p;
    std::vector<float> cp = p, cm = m, cv = v;                   /* the CPU optimizer's copy */
    std::vector<double> rp(p.begin(), p.end()), rm(n, 0.0), rv(n, 0.0);
    std::vector<zk_io> p16(n);
    std::vector<uint16_t> c16(n);
    for (int s = 1; s <= 3; s++) {
        long t = bc ? s : INT64_MAX;
        std::vector<float> g = zk_rand(n, -0.1f, 0.1f);
        ZT_EQ_INT(zd_adamw_launch(p.data(), p16.data(), g.data(), m.data(), v.data(), n,
                                  zd_adamw_consts(lr, b1, b2, eps, wd, gs, t, adamw)), 0);
        ZrAdamCfg c = {lr, b1, b2, eps, wd, adamw, t, gs};
        ZT_EQ_INT(zr_adam_step_scalar(&c, cp.data(), cm.data(), cv.data(), g.data(), ZR_DT_FP32,
                                      ZK_IO ? (void *)c16.data() : NULL, ZK_IO == 2 ? ZR_DT_FP16 : ZR_DT_BF16, n), 0);
        for (long i = 0; i < n; i++) {
            double gi = (double)g[i] * gs;
            if (!adamw) gi += (double)wd * rp[i];
            rm[i] = b1 * rm[i] + (1.0 - b1) * gi;
            rv[i] = b2 * rv[i] + (1.0 - b2) * gi * gi;
            if (adamw) rp[i] -= (double)lr * wd * rp[i];
            double c1 = bc ? 1.0 - pow(b1, s) : 1.0, c2 = bc ? sqrt(1.0 - pow(b2, s)) : 1.0;
            rp[i] -= lr / c1 * rm[i] / (sqrt(rv[i]) / c2 + eps);
        }
    }
    /* the same bits as runtime/zr_adam.c */
    ZT_CHECK(memcmp(p.data(), cp.data(), n * sizeof(float)) == 0);
    ZT_CHECK(memcmp(m.data(), cm.data(), n * sizeof(float)) == 0);
    ZT_CHECK(memcmp(v.data(), cv.data(), n * sizeof(float)) == 0);
    if (ZK_IO) ZT_CHECK(memcmp(p16.data(), c16.data(), n * 2) == 0);
    /* and DeepSpeed's formula, in double */
    std::vector<float> fp(rp.begin(), rp.end()), fm(rm.begin(), rm.end()), fv(rv.begin(), rv.end());
    zk_close("p", p, fp, 1e-6, 1e-5);
    zk_close("m", m, fm, 1e-8, 1e-5);
    zk_close("v", v, fv, 1e-10, 1e-5);
    zk_close("p16", zk_from(p16), fp, 1e-6, 1e-5 + e16);
    /* the reference moved (three steps of lr 3e-3 with decay), so a kernel that did nothing fails */
    double moved = 0;
    for (long i = 0; i < n; i++) moved = fmax(moved, fabs(fp[i] - p0[i]));
    ZT_CHECK(moved > (bc ? 3e-3 : 1e-4));
}

static void adamw(void)
{
    adam_case(1, 1);
    adam_case(0, 1);
    adam_case(1, 0);
    adam_case(0, 0);
}
#endif
