/*
** t_gpu_gemm_ex.cpp — the stand-in's typed gemm (zr_gpu_gemm_ex in templates/cuda_trainer/
** zr_gpu_emu.cpp) against a float64 reference, as a tensor-core GEMM with CUBLAS_COMPUTE_32F is
** specified: 16-bit inputs exact, products and sums in fp32, beta C added in fp32, a 16-bit result
** rounded once to nearest even. Bounds (u16 = 2^-8 for bf16, 2^-11 for fp16; u32 = 2^-24):
**   16-bit C:  |c - ref| <= u16 |ref| + 2 K u32 S       (S = sum_k |a_k b_k| + |beta c0|)
**   fp32 C:    |c - ref| <= 2 (K + 1) u32 S
** the first term the one final rounding, the second fp32 accumulation in any order (Higham's
** gamma_K, doubled for the rounding of the bound itself). Then, on sums that fp32 holds exactly, the
** 16-bit result must be the reference rounded to nearest even bit for bit (a truncating or twice
** rounding stand-in fails there), and the race checker must see the gemm's reads and writes.
** Odd shapes and all four transposes; tiny, so the test takes well under a second.
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

static uint16_t to16(float v, ZrDtype t) { return t == ZR_DT_BF16 ? zr_f32_to_bf16(v) : zr_f32_to_fp16(v); }
static float from16(uint16_t h, ZrDtype t) { return t == ZR_DT_BF16 ? zr_bf16_to_f32(h) : zr_fp16_to_f32(h); }

struct Rig {
    ZrGpu *g = nullptr;
    ZrGpuStream *s = nullptr, *s2 = nullptr;
    char *dev = nullptr;
    Rig()
    {
        zr_gpu_open(&g, 0, nullptr, 0);
        zr_gpu_stream_create(g, &s, "compute");
        zr_gpu_stream_create(g, &s2, "h2d");
        zr_gpu_malloc(g, (void **)&dev, 1 << 20);
    }
    ~Rig() { zr_gpu_close(g); }
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void)                   /* in [-1, 1) */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* One gemm of M x N x K (ta, tb) with A, B of dtype t and C of dtype ct; returns the worst
** |c - ref| / bound (must be <= 1). */
static double run_case(ZrDtype t, ZrDtype ct, int ta, int tb, int M, int N, int K, float beta)
{
    Rig r;
    int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;       /* padded: strides matter */
    int ra = ta ? K : M, rb = tb ? N : K;
    std::vector<uint16_t> A((size_t)ra * lda), B((size_t)rb * ldb);
    std::vector<float> c0((size_t)M * ldc);
    for (auto &x : A) x = to16(urand() * 2.0f, t);
    for (auto &x : B) x = to16(urand(), t);
    for (auto &x : c0) x = urand();
    size_t es = ct == ZR_DT_FP32 ? 4 : 2;
    std::vector<unsigned char> C((size_t)M * ldc * es);
    for (size_t i = 0; i < c0.size(); i++) {
        if (ct == ZR_DT_FP32) memcpy(&C[i * 4], &c0[i], 4);
        else { uint16_t h = to16(c0[i], ct); memcpy(&C[i * 2], &h, 2); c0[i] = from16(h, ct); }
    }
    /* each matrix 256-byte aligned, as device allocations are (the stand-in refuses misaligned ones) */
    auto up = [](size_t n) { return (n + 255) / 256 * 256; };
    char *dA = r.dev, *dB = dA + up(A.size() * 2) + 256, *dC = dB + up(B.size() * 2) + 256;
    zr_gpu_copy(r.s, ZR_GPU_H2D, dA, A.data(), A.size() * 2);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dB, B.data(), B.size() * 2);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dC, C.data(), C.size());
    int rc = zr_gpu_gemm_ex(r.s, ta, tb, M, N, K, 1.0f, dA, t, lda, dB, t, ldb, beta, dC, ct, ldc, ZR_GPU_COMPUTE_32F);
    zr_gpu_copy(r.s, ZR_GPU_D2H, C.data(), dC, C.size());
    zr_gpu_stream_sync(r.s);
    if (rc != 0) return 1e30;
    double u16 = t == ZR_DT_BF16 ? 1.0 / 256 : 1.0 / 2048, u32 = 1.0 / 16777216, worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, S = 0;
            for (int k = 0; k < K; k++) {
                double a = from16(A[ta ? (size_t)k * lda + i : (size_t)i * lda + k], t);
                double b = from16(B[tb ? (size_t)j * ldb + k : (size_t)k * ldb + j], t);
                ref += a * b;
                S += fabs(a * b);
            }
            ref += (double)beta * c0[(size_t)i * ldc + j];
            S += fabs((double)beta * c0[(size_t)i * ldc + j]);
            size_t o = (size_t)i * ldc + j;
            double got, bound;
            if (ct == ZR_DT_FP32) { float f; memcpy(&f, &C[o * 4], 4); got = f; bound = 2.0 * (K + 1) * u32 * S; }
            else { uint16_t h; memcpy(&h, &C[o * 2], 2); got = from16(h, ct); bound = u16 * fabs(ref) + 2.0 * (K + 1) * u32 * S; }
            double e = fabs(got - ref) / (bound > 0 ? bound : 1e-30);
            if (!(e <= worst)) worst = e;           /* NaN stays the worst */
        }
    return worst;
}

static void t_bf16_out_within_bound(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            double w = run_case(ZR_DT_BF16, ZR_DT_BF16, ta, tb, 13, 21, 70, 0.0f);
            ZT_CHECK(w <= 1.0);
            w = run_case(ZR_DT_BF16, ZR_DT_BF16, ta, tb, 7, 5, 33, 1.0f);
            ZT_CHECK(w <= 1.0);
        }
}

static void t_fp32_accumulate_within_bound(void)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            ZT_CHECK(run_case(ZR_DT_BF16, ZR_DT_FP32, ta, tb, 9, 17, 40, 1.0f) <= 1.0);   /* dW += x^T dy */
            ZT_CHECK(run_case(ZR_DT_FP16, ZR_DT_FP32, ta, tb, 9, 17, 40, 0.0f) <= 1.0);
        }
}

static void t_fp16_out_within_bound(void)
{
    ZT_CHECK(run_case(ZR_DT_FP16, ZR_DT_FP16, 0, 1, 11, 6, 50, 0.0f) <= 1.0);
    ZT_CHECK(run_case(ZR_DT_FP16, ZR_DT_FP16, 1, 0, 5, 12, 19, 1.0f) <= 1.0);
}

/* Integer sums (exact in fp32) that bf16 cannot hold: 257 -> 256 and 259 -> 260 (ties to even),
** 261 -> 260, 263 -> 264; the result must be exactly the reference rounded once. */
static void t_bf16_rounds_once_to_nearest_even(void)
{
    Rig r;
    const float want_in[4] = {257, 259, 261, 263};
    uint16_t A[4 * 2], B[2], C[4];
    for (int i = 0; i < 4; i++) { A[2 * i] = zr_f32_to_bf16(want_in[i] - 1); A[2 * i + 1] = zr_f32_to_bf16(1); }
    B[0] = B[1] = zr_f32_to_bf16(1);
    char *dA = r.dev, *dB = dA + 256, *dC = dB + 256;
    zr_gpu_copy(r.s, ZR_GPU_H2D, dA, A, sizeof A);
    zr_gpu_copy(r.s, ZR_GPU_H2D, dB, B, sizeof B);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, 4, 1, 2, 1.0f, dA, ZR_DT_BF16, 2, dB, ZR_DT_BF16, 1, 0.0f, dC, ZR_DT_BF16,
                             1, ZR_GPU_COMPUTE_32F), 0);
    zr_gpu_copy(r.s, ZR_GPU_D2H, C, dC, sizeof C);
    zr_gpu_stream_sync(r.s);
    const float want[4] = {256, 260, 260, 264};
    for (int i = 0; i < 4; i++) ZT_CHECK(zr_bf16_to_f32(C[i]) == want[i]);
}

static void t_refuses_mixed_and_declares_footprints(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, 2, 2, 2, 1.0f, r.dev, ZR_DT_BF16, 2, r.dev, ZR_DT_FP32, 2, 0.0f, r.dev,
                             ZR_DT_FP32, 2, ZR_GPU_COMPUTE_32F), -EINVAL);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, 2, 2, 2, 1.0f, r.dev, ZR_DT_BF16, 2, r.dev, ZR_DT_BF16, 2, 0.0f, r.dev,
                             ZR_DT_FP16, 2, ZR_GPU_COMPUTE_32F), -EINVAL);
    /* B written by another stream's copy with no wait: the gemm's read is a race */
    static char host[64];
    zr_gpu_host_register(r.g, host, sizeof host);
    ZT_EQ_INT(zr_gpu_copy(r.s2, ZR_GPU_H2D, r.dev + 1024, host, 8), 0);
    ZT_EQ_INT(zr_gpu_gemm_ex(r.s, 0, 0, 2, 2, 2, 1.0f, r.dev, ZR_DT_BF16, 2, r.dev + 1024, ZR_DT_BF16, 2, 0.0f,
                             r.dev + 2048, ZR_DT_FP32, 2, ZR_GPU_COMPUTE_32F), -EFAULT);
    ZT_CHECK(strstr(zr_gpu_strerror(r.g), "gemm_ex") != nullptr);
    zr_gpu_stream_sync(r.s2);
}

int main(void)
{
    ZT_RUN(t_bf16_out_within_bound);
    ZT_RUN(t_fp32_accumulate_within_bound);
    ZT_RUN(t_fp16_out_within_bound);
    ZT_RUN(t_bf16_rounds_once_to_nearest_even);
    ZT_RUN(t_refuses_mixed_and_declares_footprints);
    return zt_end();
}
