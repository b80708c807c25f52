/*
** t_k_layernorm.cpp — templates/cuda/kernels/layernorm.cu under the SIMT emulation against the host
** kernels zk_layernorm_forward/backward: plain and residual-fused forward, dx (accumulated), dw, db.
** Shape sets: C = 48 and C = 67 (not a multiple of the warp), N rows not a multiple of the 4 rows a
** block takes; C = 300 (two column blocks of the dw/db sums, the second partial) with N = 150 (three
** chunks of zk_colsum.h's 64 rows, the last partial); fp32, bf16 and fp16 storage (host inputs are
** the rounded values the kernel reads).
** Tolerances: fp32 results 1e-5 + 1e-4|ref| (summation order); a 16-bit result adds one rounding of
** the type (bf16 2^-7, fp16 2^-10 relative, with an absolute floor at the same scale).
*/
#ifndef ZK_BODY
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
#define ZK_BODY

#define ZK_C 48
#define ZK_NH 4
#define ZK_T 8
#define ZK_V 64
#define ZK_F 192
#define ZK_IO 0
#define ZK_TEST_N 11
namespace c48_fp32 {
#include "t_k_layernorm.cpp"
}
#undef ZK_IO
#undef ZK_TEST_N
#define ZK_IO 1
#define ZK_TEST_N 6
namespace c48_bf16 {
#include "t_k_layernorm.cpp"
}
#undef ZK_C
#undef ZK_IO
#undef ZK_TEST_N
#define ZK_C 67
#define ZK_IO 0
#define ZK_TEST_N 9
namespace c67_fp32 {
#include "t_k_layernorm.cpp"
}
#undef ZK_IO
#define ZK_IO 2
namespace c67_fp16 {
#include "t_k_layernorm.cpp"
}
#undef ZK_C
#undef ZK_IO
#undef ZK_TEST_N
#define ZK_C 300
#define ZK_IO 0
#define ZK_TEST_N 150
namespace c300_fp32 {
#include "t_k_layernorm.cpp"
}
#undef ZK_IO
#define ZK_IO 1
namespace c300_bf16 {
#include "t_k_layernorm.cpp"
}

int main(void)
{
    ZT_RUN(c48_fp32::run);
    ZT_RUN(c48_bf16::run);
    ZT_RUN(c67_fp32::run);
    ZT_RUN(c67_fp16::run);
    ZT_RUN(c300_fp32::run);
    ZT_RUN(c300_bf16::run);
    return zt_end();
}

#else /* ------------------------------------------------------------ body, once per shape set */
#include "kernels/layernorm.cu"

static void run(void)
{
    const int N = ZK_TEST_N, C = ZK_C;
    const float eps = 1e-5f;
    const double e16 = zk_eps_of<zk_io>(), tol = 1e-5 + e16, rel = 1e-4 + e16;
    zk_seed((uint64_t)C * 1000 + N + ZK_IO);
    std::vector<float> a = zk_rand((size_t)N * C, -2, 2), r = zk_rand((size_t)N * C), w = zk_rand(C, 0.5f, 1.5f),
                       bb = zk_rand(C, -0.5f, 0.5f);
    zk_round<zk_io>(a); zk_round<zk_io>(r); zk_round<zk_io>(w); zk_round<zk_io>(bb);
    std::vector<zk_io> ad = zk_to<zk_io>(a), rd = zk_to<zk_io>(r), wd = zk_to<zk_io>(w), bd = zk_to<zk_io>(bb);

    /* residual-fused forward */
    std::vector<zk_io> resd((size_t)N * C), yd((size_t)N * C);
    std::vector<float> mean(N), rstd(N);
    ZT_EQ_INT(zd_residual_layernorm_forward_launch(resd.data(), yd.data(), mean.data(), rstd.data(), ad.data(),
                                                   rd.data(), wd.data(), bd.data(), eps, N), 0);
    std::vector<float> res((size_t)N * C), y((size_t)N * C), hm(N), hr(N);
    for (size_t i = 0; i < res.size(); i++) res[i] = a[i] + r[i];
    zk_round<zk_io>(res);
    zk_layernorm_forward(N, C, eps, res.data(), w.data(), bb.data(), y.data(), hm.data(), hr.data());
    zk_close("residual", zk_from(resd), res, 0, 0);
    zk_close("y (fused)", zk_from(yd), y, tol, rel);
    zk_close("mean", mean, hm, 1e-5, 1e-5);
    zk_close("rstd", rstd, hr, 1e-5, 1e-4);

    /* plain forward on the residual */
    std::vector<zk_io> y2d((size_t)N * C);
    std::vector<float> m2(N), r2(N);
    ZT_EQ_INT(zd_layernorm_forward_launch(y2d.data(), m2.data(), r2.data(), resd.data(), wd.data(), bd.data(), eps, N), 0);
    zk_close("y", zk_from(y2d), y, tol, rel);

    /* backward: dx accumulates into a nonzero residual gradient, dw and db into nonzero sums */
    std::vector<float> dy = zk_rand((size_t)N * C), dx = zk_rand((size_t)N * C), dw = zk_rand(C), db = zk_rand(C);
    zk_round<zk_io>(dy); zk_round<zk_io>(dx);
    std::vector<zk_io> dyd = zk_to<zk_io>(dy), dxd = zk_to<zk_io>(dx);
    std::vector<float> kdw = dw, kdb = db, part((size_t)zd_layernorm_dwdb_part_floats(N), 12345.0f);
    ZT_EQ_INT(zd_layernorm_backward_launch(dxd.data(), kdw.data(), kdb.data(), part.data(), dyd.data(), resd.data(),
                                           wd.data(), hm.data(), hr.data(), N), 0);
    zk_layernorm_backward(N, C, res.data(), w.data(), hm.data(), hr.data(), dy.data(), dx.data(), dw.data(), db.data());
    zk_close("dx", zk_from(dxd), dx, tol, rel);
    zk_close("dw", kdw, dw, 1e-4, 1e-4);
    zk_close("db", kdb, db, 1e-4, 1e-4);
}
#endif
