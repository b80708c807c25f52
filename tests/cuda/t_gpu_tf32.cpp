/*
** t_gpu_tf32.cpp — the stand-in's TF32 (zr_gpu_set_tf32 in templates/cuda_trainer/zr_gpu_emu_blas.h):
** with it on, the fp32 gemms (zr_gpu_sgemm, zr_gpu_gemm_ex and zr_gpu_gemm_lt with fp32 operands)
** compute what a TF32 tensor core does, against a float64 reference:
**   TF32 on:   |c - ref| <= (2 u_t + u_t^2) S + 2 (K + 1) u32 S'     (u_t = 2^-11, u32 = 2^-24)
** where ref is the exact product of the fp32 inputs, S = sum_k |a_k b_k|, S' = S + |beta c0|: each
** input rounded to 11 significant bits is off by at most u_t relative, so a product by 2 u_t + u_t^2,
** then fp32 accumulation in any order (Higham's gamma_K, doubled). The emulation must be real: the
** result is within the fp32 bound of the product of the inputs rounded to TF32 by an independent
** rounding (frexp / nearbyint in double), and outside the fp32 bound of the exact product somewhere.
**   TF32 off:  within 2 (K + 1) u32 S' of the exact product (today's fp32), and outside it of the
**              TF32-rounded product somewhere;
**   bf16 operands: the same bits with TF32 on and off (16-bit GEMMs are not affected).
** Odd shapes and all four transposes; tiny.
*/
#define ZK_C 64                /* the stand-in compiles every kernel: small shapes */
#define ZK_NH 2
#define ZK_T 16
#define ZK_V 64
#define ZK_F 256
#define ZK_L 1
#include "../../templates/cuda_trainer/zr_gpu_emu.cpp"

#include <math.h>
#include "zt.h"

#include "zk_coll_stubs.h"      /* the stand-in's collectives call libzrt; nothing here reaches them */

struct Rig {
    ZrGpu *g = nullptr;
    ZrGpuStream *s = nullptr;
    char *dev = nullptr;
    Rig()
    {
        zr_gpu_open(&g, 0, nullptr, 0);
        zr_gpu_stream_create(g, &s, "compute");
        zr_gpu_malloc(g, (void **)&dev, 1 << 20);
    }
    ~Rig() { zr_gpu_close(g); }
};

static uint64_t rng = 0x243f6a8885a308d3ull;
static float urand(void)                   /* in [-1, 1), full 24-bit significands */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* 11 significant bits, to nearest even (the default rounding mode of nearbyint) */
static double tf32_ref(double x)
{
    if (x == 0) return 0;
    int e;
    double m = frexp(x, &e);
    return ldexp(nearbyint(ldexp(m, 11)), e - 11);
}

enum Kind { SGEMM, GEMM_EX, GEMM_LT };
static const char *const kind_name[] = {"sgemm", "gemm_ex", "gemm_lt"};

/* One fp32 gemm of M x N x K (ta, tb, beta) with TF32 on or off. Returns, over the elements, the
** worst |c - ref| / bound for: [0] the TF32 bound against the exact product, [1] the fp32 bound
** against the TF32-rounded product, [2] the fp32 bound against the exact product. */
static void run_case(Kind kind, int tf32, int ta, int tb, int M, int N, int K, float beta, double w[3])
{
    Rig r;
    zr_gpu_set_tf32(r.g, tf32);
    int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;       /* padded: strides matter */
    int ra = ta ? K : M, rb = tb ? N : K;
    std::vector<float> A((size_t)ra * lda), B((size_t)rb * ldb), C((size_t)M * ldc), c0;
    for (auto &x : A) x = urand() * 2.0f;
    for (auto &x : B) x = urand();
    for (auto &x : C) x = urand();
    c0 = C;
    auto up = [](size_t n) { return (n + 255) / 256 * 256; };
    char *dA = r.dev, *dB = dA + up(A.size() * 4), *dC = dB + up(B.size() * 4);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dA, A.data(), A.size() * 4);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dB, B.data(), B.size() * 4);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dC, C.data(), C.size() * 4);
    int rc;
    if (kind == SGEMM)
        rc = zr_gpu_sgemm(r.s, ta, tb, M, N, K, 1.0f, (const float *)dA, lda, (const float *)dB, ldb, beta,
                          (float *)dC, ldc);
    else if (kind == GEMM_EX)
        rc = zr_gpu_gemm_ex(r.s, ta, tb, M, N, K, 1.0f, dA, ZR_DT_FP32, lda, dB, ZR_DT_FP32, ldb, beta, dC,
                            ZR_DT_FP32, ldc, ZR_GPU_COMPUTE_32F);
    else
        rc = zr_gpu_gemm_lt(r.s, ta, tb, M, N, K, 1.0f, dA, lda, dB, ldb, ZR_DT_FP32, beta, dC, dC, ldc,
                            ZR_DT_FP32, ZR_GPU_EPI_NONE, nullptr, nullptr, 0);
    zr_gpu_copy(r.s, ZR_GPU_D2H, C.data(), dC, C.size() * 4);
    zr_gpu_stream_sync(r.s);
    w[0] = w[1] = w[2] = rc == 0 ? 0 : 1e30;
    const double ut = 1.0 / 2048, u32 = 1.0 / 16777216;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, rt = 0, S = 0;
            for (int k = 0; k < K; k++) {
                double a = A[ta ? (size_t)k * lda + i : (size_t)i * lda + k];
                double b = B[tb ? (size_t)j * ldb + k : (size_t)k * ldb + j];
                ref += a * b;
                rt += tf32_ref(a) * tf32_ref(b);
                S += fabs(a * b);
            }
            double bc = (double)beta * c0[(size_t)i * ldc + j];
            ref += bc;
            rt += bc;
            double S1 = S + fabs(bc), got = C[(size_t)i * ldc + j];
            double e[3] = {fabs(got - ref) / ((2 * ut + ut * ut) * S + 2.0 * (K + 1) * u32 * S1),
                           fabs(got - rt) / (2.0 * (K + 1) * u32 * S1), fabs(got - ref) / (2.0 * (K + 1) * u32 * S1)};
            for (int x = 0; x < 3; x++)
                if (!(e[x] <= w[x])) w[x] = e[x];           /* NaN stays the worst */
        }
}

static const int shapes[][3] = {{9, 17, 40}, {1, 5, 3}, {13, 6, 129}};

static void t_tf32_on_within_bound_and_really_tf32(void)
{
    for (int kind = 0; kind < 3; kind++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (const auto &sh : shapes) {
                    double w[3];
                    run_case((Kind)kind, 1, ta, tb, sh[0], sh[1], sh[2], ta ? 1.0f : 0.0f, w);
                    ZT_CHECKM(w[0] <= 1.0, "%s ta %d tb %d %dx%dx%d: %.3g of the TF32 bound", kind_name[kind], ta, tb,
                              sh[0], sh[1], sh[2], w[0]);
                    ZT_CHECKM(w[1] <= 1.0, "%s ta %d tb %d %dx%dx%d: %.3g of the fp32 bound around the TF32-rounded "
                              "product", kind_name[kind], ta, tb, sh[0], sh[1], sh[2], w[1]);
                    /* one element of a product of more than one term is enough to tell */
                    if (sh[2] > 3)
                        ZT_CHECKM(w[2] > 1.0, "%s ta %d tb %d %dx%dx%d: TF32 on, yet within the exact fp32 bound "
                                  "(%.3g): the inputs were not rounded", kind_name[kind], ta, tb, sh[0], sh[1], sh[2], w[2]);
                }
}

static void t_tf32_off_stays_exact_fp32(void)
{
    for (int kind = 0; kind < 3; kind++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (const auto &sh : shapes) {
                    double w[3];
                    run_case((Kind)kind, 0, ta, tb, sh[0], sh[1], sh[2], tb ? 1.0f : 0.0f, w);
                    ZT_CHECKM(w[2] <= 1.0, "%s ta %d tb %d %dx%dx%d: %.3g of the fp32 bound", kind_name[kind], ta, tb,
                              sh[0], sh[1], sh[2], w[2]);
                    if (sh[2] > 3)
                        ZT_CHECKM(w[1] > 1.0, "%s ta %d tb %d %dx%dx%d: TF32 off, yet the TF32-rounded product",
                                  kind_name[kind], ta, tb, sh[0], sh[1], sh[2]);
                }
}

/* bf16 operands: TF32 changes nothing (the same bits on and off) */
static void t_16bit_not_affected(void)
{
    std::vector<uint16_t> res[2];
    for (int on = 0; on < 2; on++) {
        Rig r;
        zr_gpu_set_tf32(r.g, on);
        const int M = 7, N = 9, K = 33;
        std::vector<uint16_t> A((size_t)M * K), B((size_t)K * N);
        uint64_t keep = rng;
        for (auto &x : A) x = zr_f32_to_bf16(urand());
        for (auto &x : B) x = zr_f32_to_bf16(urand());
        rng = keep;                 /* both runs see the same inputs */
        char *dA = r.dev, *dB = r.dev + 4096, *dC = r.dev + 8192;
        zr_gpu_copy(r.s, ZR_GPU_H2D, dA, A.data(), A.size() * 2);
        zr_gpu_copy(r.s, ZR_GPU_H2D, dB, B.data(), B.size() * 2);
        ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, M, N, K, 1.0f, dA, ZR_DT_BF16, K, dB, ZR_DT_BF16, N, 0.0f, dC, ZR_DT_BF16,
                                 N, ZR_GPU_COMPUTE_32F), 0);
        res[on].resize((size_t)M * N);
        zr_gpu_copy(r.s, ZR_GPU_D2H, res[on].data(), dC, res[on].size() * 2);
        zr_gpu_stream_sync(r.s);
    }
    ZT_CHECK(res[0] == res[1]);
}

int main(void)
{
    ZT_RUN(t_tf32_on_within_bound_and_really_tf32);
    ZT_RUN(t_tf32_off_stays_exact_fp32);
    ZT_RUN(t_16bit_not_affected);
    return zt_end();
}
