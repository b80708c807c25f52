/*
** x_gpu_stub.c — drives runtime/zr_gpu_cuda.c (the real CUDA backend of zr_gpu.h) against the stub
** libraries of tests/cuda/stubs/, for tests/cuda/t_gpu_stub.sh. Built by that script with a
** generated trainer's kernel table (zg_kernels_bin.c). Scenarios (argv[1]):
**   basic      open (driver version, module choice, every kernel resolved), malloc, pinned copies,
**              memset, a kernel launch whose result is checked (zd_add_f32 through the emulator),
**              an event query (done), zd_sumsq_lanes against the norm's lane order bit for bit,
**              a launch above the kernel's bounds refused, events and streams, a row-major sgemm
**              against a reference, a bf16 gemm_ex (bf16 and fp32 C) against a double reference,
**              a launch with dynamic shared memory above 48 KiB (the opt-in), the cuBLASLt GEMMs of
**              zr_gpu_gemm_lt (each epilogue, one plan per shape), NCCL init for one rank and an all-reduce,
**              a group of two all-gathers (ncclGroupStart/End; no host wait inside; an unbalanced end
**              refused), close;
**   tf32       zr_gpu_set_tf32 off/on/off: fp32 sgemm, gemm_ex, gemm_lt exact or TF32 (against two
**              double references), the math mode / compute type the stub saw (zr_stub_math_summary);
**   graph      stream capture: a sequence (kernel, sgemm, gemm_ex, memset, D2D copy) captured after
**              an uncaptured run runs nothing at capture and, launched twice, gives the bits of the
**              sequence run twice directly; bytes per link counted per launch; a host wait, an event
**              record, an event query and a pageable copy during a capture refused and the capture
**              invalidated;
**              capture under sync-debug refused;
**   open       open only (the script sets the stub's driver version / SM and checks the message);
**   fault      launches the kernel named by ZR_STUB_FAULT_KERNEL and synchronises;
**   hang       records an event that never completes, queries it (not done) and waits for it;
**   hang_coll  the same with an NCCL all-reduce in flight (the collective watchdog must end it).
** Prints "x_gpu_stub: <scenario> ok" or the failure; exit 0 only when it is ok.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zr_gpu.h"
#include "zr_half.h"
#include "zg_kernels_bin.h"
#include "kernels/zk_shapes.h"   /* the shapes of the kernel table, ZK_ATT_TC_FWD_SMEM */
#include "kernels/zk_sumsq.h"    /* ZK_SQ_LANE_SETS, ZK_SQ_LANE_GRID, ZK_SQ_BLOCK */

const char *zr_stub_summary(void);
const char *zr_stub_math_summary(void);

#define TRY(call) do { int rc_ = (call); if (rc_ < 0) { fprintf(stderr, "x_gpu_stub: %s failed (%d): %s\n", #call, rc_, zr_gpu_strerror(g)); return 1; } } while (0)
#define EXPECT(cond) do { if (!(cond)) { fprintf(stderr, "x_gpu_stub: %s:%d: expected %s\n", __FILE__, __LINE__, #cond); return 1; } } while (0)

/* zd_sumsq_lanes (the device optimizer part's norm lanes, cuda_norm.c) through the driver: bf16
** gradients at shard offsets [a, a + n) that start and end inside norm blocks, against the order
** train.h's TrSq defines, written out here: lane j of a block's set is the double sum, ascending, of
** the squares of its elements whose offset is j modulo 8. Bit for bit. */
static int lanes(ZrGpu *g, ZrGpuStream *s)
{
    enum { n = 9000 };
    const long a = 4093, block = 4096, nsets = ZK_SQ_LANE_SETS(4093L, (long)n, 4096L);
    static uint16_t x[n];
    static double got[8 * 8];
    double want[8 * 8] = {0};
    EXPECT(nsets == 4 && (size_t)nsets * 8 <= sizeof got / sizeof got[0]);
    for (int i = 0; i < n; i++) x[i] = zr_f32_to_bf16((float)((i * 37) % 101 - 50) / 16.0f);
    for (long o = a; o < a + n; o++) {
        double v = (double)zr_bf16_to_f32(x[o - a]);
        want[(o / block - a / block) * 8 + o % 8] += v * v;
    }
    TRY(zr_gpu_host_register(g, x, sizeof x));
    TRY(zr_gpu_host_register(g, got, sizeof got));
    void *dx, *dl;
    TRY(zr_gpu_malloc(g, &dx, sizeof x));
    TRY(zr_gpu_malloc(g, &dl, sizeof got));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dx, x, sizeof x));
    long ln = n, la = a, lb = block, ls = nsets;
    int fmt = 1;
    void *args[] = {&dl, &dx, &la, &ln, &lb, &ls, &fmt, NULL};
    unsigned grid[3] = {ZK_SQ_LANE_GRID(nsets), 1, 1}, blk[3] = {ZK_SQ_BLOCK, 1, 1};
    TRY(zr_gpu_launch(s, "zd_sumsq_lanes", grid, blk, 0, args));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, got, dl, (size_t)nsets * 8 * sizeof(double)));
    TRY(zr_gpu_stream_sync(s));
    EXPECT(memcmp(got, want, (size_t)nsets * 8 * sizeof(double)) == 0);
    fprintf(stderr, "x_gpu_stub: zd_sumsq_lanes: %ld lane sets equal the host's order bit for bit\n", nsets);
    return 0;
}

static int basic(ZrGpu *g)
{
    ZrGpuStream *s, *s2;
    ZrGpuEvent *e;
    TRY(zr_gpu_stream_create(g, &s, "compute"));
    TRY(zr_gpu_stream_create(g, &s2, "copy"));
    TRY(zr_gpu_event_create(g, &e));
    enum { n = 1000 };
    static float h[n], acc[n], out[n];
    for (int i = 0; i < n; i++) { h[i] = (float)i * 0.5f; acc[i] = 1.0f; }
    TRY(zr_gpu_host_register(g, h, sizeof h));
    TRY(zr_gpu_host_register(g, acc, sizeof acc));
    TRY(zr_gpu_host_register(g, out, sizeof out));
    void *dg, *dacc;
    TRY(zr_gpu_malloc(g, &dg, sizeof h));
    TRY(zr_gpu_malloc(g, &dacc, sizeof acc));
    TRY(zr_gpu_copy(s2, ZR_GPU_H2D, dg, h, sizeof h));
    TRY(zr_gpu_copy(s2, ZR_GPU_H2D, dacc, acc, sizeof acc));
    TRY(zr_gpu_record(e, s2));
    TRY(zr_gpu_wait(s, e));
    /* zd_add_f32(float *acc, const float *g, long n, int fmt): acc += g */
    long ln = n;
    int fmt = 0;
    void *args[] = {&dacc, &dg, &ln, &fmt, NULL};
    unsigned grid[3] = {(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1}, big[3] = {2048, 1, 1};
    TRY(zr_gpu_launch(s, "zd_add_f32", grid, block, 0, args));
    EXPECT(zr_gpu_launch(s, "zd_add_f32", grid, big, 0, args) < 0);               /* over 1024 */
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
    unsigned tall[3] = {1, 70000, 1};                                             /* grid y > 65535 */
    EXPECT(zr_gpu_launch(s, "zd_add_f32", tall, block, 0, args) < 0);
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
    unsigned ce_block[3] = {1024, 1, 1};
    void *ce_args[] = {&dacc, &dacc, &dacc, &dacc, &fmt, NULL};
    EXPECT(zr_gpu_launch(s, "zd_crossentropy_fused", grid, ce_block, 0, ce_args) < 0);  /* bound 512 */
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
    EXPECT(zr_gpu_launch(s, "zd_no_such_kernel", grid, block, 0, args) == -ENOENT);
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, out, dacc, sizeof out));
    TRY(zr_gpu_stream_sync(s));
    for (int i = 0; i < n; i++) EXPECT(out[i] == 1.0f + (float)i * 0.5f);
    TRY(zr_gpu_memset(s, dacc, 0, sizeof acc));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, out, dacc, sizeof out));
    TRY(zr_gpu_record(e, s));
    TRY(zr_gpu_event_sync(e));
    EXPECT(out[7] == 0.0f);
    EXPECT(zr_gpu_event_query(e) == 1);             /* cuEventQuery: done (the speculative queue's poll) */
    if (lanes(g, s)) return 1;

    /* row-major C (2x3) = A (2x4) B^T, B stored (3x4): through the operand swap to column-major */
    static float A[8], B[12], C[6];
    float want[6];
    TRY(zr_gpu_host_register(g, A, sizeof A));
    TRY(zr_gpu_host_register(g, B, sizeof B));
    TRY(zr_gpu_host_register(g, C, sizeof C));
    for (int i = 0; i < 8; i++) A[i] = (float)(i + 1);
    for (int i = 0; i < 12; i++) B[i] = (float)(i % 5) - 1.0f;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            want[r * 3 + c] = 0;
            for (int k = 0; k < 4; k++) want[r * 3 + c] += A[r * 4 + k] * B[c * 4 + k];
        }
    void *dA, *dB, *dC;
    TRY(zr_gpu_malloc(g, &dA, sizeof A)); TRY(zr_gpu_malloc(g, &dB, sizeof B)); TRY(zr_gpu_malloc(g, &dC, sizeof C));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA, A, sizeof A));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dB, B, sizeof B));
    TRY(zr_gpu_sgemm(s, 0, 1, 2, 3, 4, 1.0f, dA, 4, dB, 4, 0.0f, dC, 3));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, C, dC, sizeof C));
    TRY(zr_gpu_stream_sync(s));
    for (int i = 0; i < 6; i++) EXPECT(fabsf(C[i] - want[i]) < 1e-5f);
    EXPECT(zr_gpu_sgemm(s, 0, 1, 2, 3, 4, 1.0f, dA, 2, dB, 4, 0.0f, dC, 3) < 0);   /* lda < K */
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));

    /* NCCL for one rank: init (device checked against ours) and an all-reduce (a copy) */
    TRY(zr_gpu_coll_init(g, NULL, s));
    TRY(zr_gpu_coll(s, ZR_COLL_ALL_REDUCE, dA, dC, 2, ZR_DT_FP32));
    TRY(zr_gpu_stream_sync(s));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, C, dC, sizeof C));
    TRY(zr_gpu_stream_sync(s));
    EXPECT(C[0] == 1.0f && C[1] == 2.0f);
    /* a group of two all-gathers (one rank: copies) launches at its end: the host may not wait
    ** inside it, and an end without a begin is refused */
    TRY(zr_gpu_memset(s, dC, 0, sizeof C));
    TRY(zr_gpu_group_begin(g));
    TRY(zr_gpu_coll(s, ZR_COLL_ALL_GATHER, dA, dC, 2, ZR_DT_FP32));
    TRY(zr_gpu_coll(s, ZR_COLL_ALL_GATHER, (float *)dA + 4, (float *)dC + 2, 2, ZR_DT_FP32));
    EXPECT(zr_gpu_stream_sync(s) == -EINVAL);
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
    TRY(zr_gpu_group_end(g));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, C, dC, sizeof C));
    TRY(zr_gpu_stream_sync(s));
    EXPECT(C[0] == A[0] && C[1] == A[1] && C[2] == A[4] && C[3] == A[5]);
    EXPECT(zr_gpu_group_end(g) == -EINVAL);
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));

    /* the typed gemm: bf16 A, B (values exact in bf16), C bf16 then fp32 (beta 1 adds), through the
    ** same swap, against a double reference rounded once; a mixed A/B pair is refused */
    static uint16_t A16[8], B16[12], C16[6];
    static float C32[6];
    TRY(zr_gpu_host_register(g, A16, sizeof A16));
    TRY(zr_gpu_host_register(g, B16, sizeof B16));
    TRY(zr_gpu_host_register(g, C16, sizeof C16));
    TRY(zr_gpu_host_register(g, C32, sizeof C32));
    for (int i = 0; i < 8; i++) A16[i] = zr_f32_to_bf16(1.0f + (float)i / 128.0f);
    for (int i = 0; i < 12; i++) B16[i] = zr_f32_to_bf16((float)(i % 5) - 1.5f);
    for (int i = 0; i < 6; i++) C32[i] = 0.25f;
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA, A16, sizeof A16));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dB, B16, sizeof B16));
    TRY(zr_gpu_gemm_ex(s, 0, 1, 2, 3, 4, 1.0f, dA, ZR_DT_BF16, 4, dB, ZR_DT_BF16, 4, 0.0f, dC, ZR_DT_BF16, 3,
                       ZR_GPU_COMPUTE_32F));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, C16, dC, sizeof C16));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dC, C32, sizeof C32));
    TRY(zr_gpu_gemm_ex(s, 0, 1, 2, 3, 4, 1.0f, dA, ZR_DT_BF16, 4, dB, ZR_DT_BF16, 4, 1.0f, dC, ZR_DT_FP32, 3,
                       ZR_GPU_COMPUTE_32F));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, C32, dC, sizeof C32));
    TRY(zr_gpu_stream_sync(s));
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            double w = 0;
            for (int k = 0; k < 4; k++) w += (double)zr_bf16_to_f32(A16[r * 4 + k]) * zr_bf16_to_f32(B16[c * 4 + k]);
            EXPECT(C16[r * 3 + c] == zr_f32_to_bf16((float)w));         /* exact sums here: one rounding */
            EXPECT(C32[r * 3 + c] == (float)(w + 0.25));
        }
    EXPECT(zr_gpu_gemm_ex(s, 0, 1, 2, 3, 4, 1.0f, dA, ZR_DT_BF16, 4, dB, ZR_DT_FP32, 4, 0.0f, dC, ZR_DT_FP32, 3,
                          ZR_GPU_COMPUTE_32F) < 0);
    fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));

    /* dynamic shared memory above 48 KiB (attention_tc.cu): the opt-in is raised at the launch; zero
    ** q, k, v give lse[i] = log(i + 1) (i + 1 equal scores); beyond the device's limit is refused */
    {
        size_t nq = (size_t)ZK_T * 3 * ZK_C * 4, nl = (size_t)ZK_NH * ZK_T * 4;
        void *dq, *dy, *dl;
        static float lse[ZK_NH * ZK_T];
        TRY(zr_gpu_host_register(g, lse, sizeof lse));
        TRY(zr_gpu_malloc(g, &dq, nq)); TRY(zr_gpu_malloc(g, &dy, nq)); TRY(zr_gpu_malloc(g, &dl, nl));
        TRY(zr_gpu_memset(s, dq, 0, nq));
        const int *np = NULL;           /* no document positions: causal */
        void *aa[] = {&dy, &dl, &dq, &np, NULL};
        unsigned ag[3] = {(ZK_T + 63) / 64, ZK_NH, 1}, ab[3] = {256, 1, 1};
        TRY(zr_gpu_launch(s, "zd_attention_tc_forward", ag, ab, ZK_ATT_TC_FWD_SMEM, aa));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, lse, dl, nl));
        TRY(zr_gpu_stream_sync(s));
        for (int i = 0; i < ZK_T; i += 17) EXPECT(fabsf(lse[i] - logf((float)(i + 1))) < 1e-5f);
        EXPECT(zr_gpu_launch(s, "zd_attention_tc_forward", ag, ab, 240 * 1024, aa) < 0);
        fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
        zr_gpu_free(g, dq); zr_gpu_free(g, dy); zr_gpu_free(g, dl);
        zr_gpu_host_unregister(g, lse);
    }

    /* zr_gpu_gemm_lt through zr_gpu_blaslt.c and the stub cuBLASLt: a forward layer with the
    ** residual (C != D) and a bias, the MLP's GELU with its aux, GELU backward from that aux, dW with
    ** the bias gradient into fp32; against double references (bf16 results within a rounding); the
    ** bias layer again (same shape and alignments: no second heuristic query); aux's leading
    ** dimension not a multiple of 8 refused */
    {
        enum { M = 3, N = 16, K = 5 };
        static uint16_t xa[M * K], w[K * N], b[N], res[M * N], y[M * N], pre[M * N], gy[M * N];
        static float dw[K * N], db[N];
        TRY(zr_gpu_host_register(g, xa, sizeof xa)); TRY(zr_gpu_host_register(g, w, sizeof w));
        TRY(zr_gpu_host_register(g, b, sizeof b)); TRY(zr_gpu_host_register(g, res, sizeof res));
        TRY(zr_gpu_host_register(g, y, sizeof y)); TRY(zr_gpu_host_register(g, pre, sizeof pre));
        TRY(zr_gpu_host_register(g, gy, sizeof gy)); TRY(zr_gpu_host_register(g, dw, sizeof dw));
        TRY(zr_gpu_host_register(g, db, sizeof db));
        for (int i = 0; i < M * K; i++) xa[i] = zr_f32_to_bf16((float)(i % 7) / 4.0f - 0.75f);
        for (int i = 0; i < K * N; i++) w[i] = zr_f32_to_bf16((float)(i % 5) / 8.0f - 0.25f);
        for (int i = 0; i < N; i++) b[i] = zr_f32_to_bf16((float)i / 16.0f - 0.5f);
        for (int i = 0; i < M * N; i++) res[i] = zr_f32_to_bf16((float)(i % 3) - 1.0f);
        for (int i = 0; i < K * N; i++) dw[i] = 0.5f;
        void *dx, *dw16, *dbias, *dres, *dy, *dpre, *dgy, *ddw, *ddb;
        TRY(zr_gpu_malloc(g, &dx, sizeof xa)); TRY(zr_gpu_malloc(g, &dw16, sizeof w)); TRY(zr_gpu_malloc(g, &dbias, sizeof b));
        TRY(zr_gpu_malloc(g, &dres, sizeof res)); TRY(zr_gpu_malloc(g, &dy, sizeof y)); TRY(zr_gpu_malloc(g, &dpre, sizeof pre));
        TRY(zr_gpu_malloc(g, &dgy, sizeof gy)); TRY(zr_gpu_malloc(g, &ddw, sizeof dw)); TRY(zr_gpu_malloc(g, &ddb, sizeof db));
        TRY(zr_gpu_copy(s, ZR_GPU_H2D, dx, xa, sizeof xa)); TRY(zr_gpu_copy(s, ZR_GPU_H2D, dw16, w, sizeof w));
        TRY(zr_gpu_copy(s, ZR_GPU_H2D, dbias, b, sizeof b)); TRY(zr_gpu_copy(s, ZR_GPU_H2D, dres, res, sizeof res));
        TRY(zr_gpu_copy(s, ZR_GPU_H2D, ddw, dw, sizeof dw));
        /* y = x @ w + res + b */
        TRY(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dx, K, dw16, N, ZR_DT_BF16, 1.0f, dres, dy, N, ZR_DT_BF16,
                           ZR_GPU_EPI_BIAS, dbias, NULL, 0));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, y, dy, sizeof y));
        /* pre = x @ w + b (aux), gy = gelu(pre) */
        TRY(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dx, K, dw16, N, ZR_DT_BF16, 0.0f, NULL, dgy, N, ZR_DT_BF16,
                           ZR_GPU_EPI_GELU_BIAS, dbias, dpre, N));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, pre, dpre, sizeof pre));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, gy, dgy, sizeof gy));
        TRY(zr_gpu_stream_sync(s));
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)zr_bf16_to_f32(xa[i * K + k]) * zr_bf16_to_f32(w[k * N + j]);
                double p = acc + zr_bf16_to_f32(b[j]), r = p + zr_bf16_to_f32(res[i * N + j]);
                double ge = p / (1.0 + exp(-2.0 * 0.7978845608028654 * (p + 0.044715 * p * p * p)));
                EXPECT(fabs(zr_bf16_to_f32(y[i * N + j]) - r) <= fabs(r) / 256 + 1e-6);
                EXPECT(fabs(zr_bf16_to_f32(pre[i * N + j]) - p) <= fabs(p) / 256 + 1e-6);
                EXPECT(fabs(zr_bf16_to_f32(gy[i * N + j]) - ge) <= fabs(ge) / 256 + 1e-5);
            }
        /* dpre = (y @ w^T... here simply x @ w) * gelu'(pre): the aux is read back */
        TRY(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dx, K, dw16, N, ZR_DT_BF16, 0.0f, NULL, dy, N, ZR_DT_BF16,
                           ZR_GPU_EPI_DGELU, NULL, dpre, N));
        /* dw (K x N) += x^T @ gy, db = column sums of gy */
        TRY(zr_gpu_gemm_lt(s, 1, 0, K, N, M, 1.0f, dx, K, dgy, N, ZR_DT_BF16, 1.0f, ddw, ddw, N, ZR_DT_FP32,
                           ZR_GPU_EPI_BGRAD, ddb, NULL, 0));
        TRY(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dx, K, dw16, N, ZR_DT_BF16, 1.0f, dres, dres, N, ZR_DT_BF16,
                           ZR_GPU_EPI_BIAS, dbias, NULL, 0));       /* planned already: no new query */
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, y, dy, sizeof y));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, dw, ddw, sizeof dw));
        TRY(zr_gpu_copy(s, ZR_GPU_D2H, db, ddb, sizeof db));
        TRY(zr_gpu_stream_sync(s));
        for (int j = 0; j < N; j++) {
            double sb = 0;
            for (int i = 0; i < M; i++) {
                double acc = 0, p = zr_bf16_to_f32(pre[i * N + j]);
                for (int k = 0; k < K; k++) acc += (double)zr_bf16_to_f32(xa[i * K + k]) * zr_bf16_to_f32(w[k * N + j]);
                double sg = 1.0 / (1.0 + exp(-2.0 * 0.7978845608028654 * (p + 0.044715 * p * p * p)));
                double gd = acc * (sg + 2.0 * p * sg * (1.0 - sg) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * p * p));
                EXPECT(fabs(zr_bf16_to_f32(y[i * N + j]) - gd) <= fabs(gd) / 256 + 1e-5);
                sb += zr_bf16_to_f32(gy[i * N + j]);
            }
            EXPECT(fabs(db[j] - sb) <= 1e-5);
            for (int k = 0; k < K; k++) {
                double acc = 0.5;
                for (int i = 0; i < M; i++) acc += (double)zr_bf16_to_f32(xa[i * K + k]) * zr_bf16_to_f32(gy[i * N + j]);
                EXPECT(fabs(dw[k * N + j] - acc) <= 1e-5);
            }
        }
        EXPECT(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dx, K, dw16, N, ZR_DT_BF16, 0.0f, NULL, dgy, N, ZR_DT_BF16,
                              ZR_GPU_EPI_GELU_BIAS, dbias, dpre, 12) == -EINVAL);
        fprintf(stderr, "x_gpu_stub: refused as expected: %s\n", zr_gpu_strerror(g));
        zr_gpu_free(g, dx); zr_gpu_free(g, dw16); zr_gpu_free(g, dbias); zr_gpu_free(g, dres); zr_gpu_free(g, dy);
        zr_gpu_free(g, dpre); zr_gpu_free(g, dgy); zr_gpu_free(g, ddw); zr_gpu_free(g, ddb);
    }

    float pageable[4] = {0};                          /* said once by zr_gpu, counted by the stub */
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA, pageable, sizeof pageable));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA, pageable, sizeof pageable));
    TRY(zr_gpu_stream_sync(s));
    zr_gpu_free(g, dg); zr_gpu_free(g, dacc); zr_gpu_free(g, dA); zr_gpu_free(g, dB); zr_gpu_free(g, dC);
    zr_gpu_event_destroy(e);
    zr_gpu_stream_destroy(s2);
    zr_gpu_host_unregister(g, h); zr_gpu_host_unregister(g, acc); zr_gpu_host_unregister(g, out);
    return 0;
}

/* ---------------------------------------------------------------------- graph */
enum { GN = 64 };              /* floats per array: x, y, w (8 x 8), z (8 x 8), b16 (bf16 8 x 8) */
typedef struct { float *x, *y, *w, *z; void *b16; } GBufs;

/* y += x; z = y @ w + z (sgemm); z = bf16(w) @ bf16(w) + z (gemm_ex, fp32 C); x[0..16) = 0; w = z */
static int gseq(ZrGpu *g, ZrGpuStream *s, GBufs *b)
{
    long n = GN;
    int fmt = 0;
    void *args[] = {&b->y, &b->x, &n, &fmt, NULL};
    unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    TRY(zr_gpu_launch(s, "zd_add_f32", grid, block, 0, args));
    TRY(zr_gpu_sgemm(s, 0, 0, 8, 8, 8, 1.0f, b->y, 8, b->w, 8, 1.0f, b->z, 8));
    TRY(zr_gpu_gemm_ex(s, 0, 1, 8, 8, 8, 1.0f, b->b16, ZR_DT_BF16, 8, b->b16, ZR_DT_BF16, 8, 1.0f, b->z,
                       ZR_DT_FP32, 8, ZR_GPU_COMPUTE_32F));
    TRY(zr_gpu_memset(s, b->x, 0, 16 * 4));
    TRY(zr_gpu_copy(s, ZR_GPU_D2D, b->w, b->z, GN * 4));
    return 0;
}

static int galloc(ZrGpu *g, ZrGpuStream *s, GBufs *b, const float *init)
{
    char *d;
    TRY(zr_gpu_malloc(g, (void **)&d, 4 * GN * 4 + GN * 2));
    b->x = (float *)d; b->y = b->x + GN; b->w = b->y + GN; b->z = b->w + GN; b->b16 = b->z + GN;
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, d, init, 4 * GN * 4 + GN * 2));
    return 0;
}

static int refused(ZrGpu *g, int rc, const char *want)
{
    EXPECT(rc == -EINVAL && strstr(zr_gpu_strerror(g), want) && strstr(zr_gpu_strerror(g), "is capturing a graph"));
    fprintf(stderr, "refused as expected: %s\n", zr_gpu_strerror(g));
    return 0;
}

static int graph(ZrGpu *g)
{
    ZrGpuStream *s, *s2;
    ZrGpuEvent *e;
    TRY(zr_gpu_stream_create(g, &s, "compute"));
    TRY(zr_gpu_stream_create(g, &s2, "copy"));
    TRY(zr_gpu_event_create(g, &e));
    static float init[4 * GN + GN / 2], outd[4 * GN], outg[4 * GN], mid[4 * GN];
    static float pageable[16];
    for (int i = 0; i < 4 * GN; i++) init[i] = (float)((i * 37) % 23) / 8.0f - 1.0f;
    uint16_t *b16 = (uint16_t *)(init + 4 * GN);
    for (int i = 0; i < GN; i++) b16[i] = zr_f32_to_bf16((float)(i % 7) - 3.0f);
    TRY(zr_gpu_host_register(g, init, sizeof init));
    TRY(zr_gpu_host_register(g, outd, sizeof outd));
    TRY(zr_gpu_host_register(g, outg, sizeof outg));
    TRY(zr_gpu_host_register(g, mid, sizeof mid));
    GBufs d, c;
    if (galloc(g, s, &d, init) || galloc(g, s, &c, init)) return 1;
    for (int k = 0; k < 3; k++) if (gseq(g, s, &d)) return 1;
    if (gseq(g, s, &c)) return 1;                       /* the first run uncaptured */
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, mid, c.x, sizeof mid));
    TRY(zr_gpu_stream_sync(s));
    ZrGpuBytes b0, b1, b2;
    zr_gpu_bytes(g, &b0);
    ZrGpuGraph *gr = NULL;
    TRY(zr_gpu_capture_begin(s));
    if (gseq(g, s, &c)) return 1;
    TRY(zr_gpu_capture_end(s, &gr));
    zr_gpu_bytes(g, &b1);
    EXPECT(b1.d2d == b0.d2d);
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, outg, c.x, sizeof outg));
    TRY(zr_gpu_stream_sync(s));
    EXPECT(memcmp(outg, mid, sizeof mid) == 0);        /* the capture ran nothing */
    TRY(zr_gpu_graph_launch(s, gr));
    TRY(zr_gpu_graph_launch(s, gr));
    zr_gpu_bytes(g, &b2);
    EXPECT(b2.d2d - b0.d2d == 2 * GN * 4);
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, outd, d.x, sizeof outd));
    TRY(zr_gpu_copy(s, ZR_GPU_D2H, outg, c.x, sizeof outg));
    TRY(zr_gpu_stream_sync(s));
    EXPECT(memcmp(outd, outg, sizeof outd) == 0);
    EXPECT(memcmp(outd, mid, sizeof mid) != 0);
    zr_gpu_graph_destroy(gr);
    /* what a capture cannot hold: refused, and the capture invalidated */
    TRY(zr_gpu_capture_begin(s));
    if (refused(g, zr_gpu_stream_sync(s2), "zr_gpu_stream_sync (a host wait)")) return 1;
    if (refused(g, zr_gpu_record(e, s), "zr_gpu_record")) return 1;
    if (refused(g, zr_gpu_event_query(e), "zr_gpu_event_query (a host poll)")) return 1;
    EXPECT(zr_gpu_capture_end(s, &gr) == -EINVAL && !gr && strstr(zr_gpu_strerror(g), "was invalidated: zr_gpu_stream_sync"));
    fprintf(stderr, "refused as expected: %s\n", zr_gpu_strerror(g));
    TRY(zr_gpu_capture_begin(s));
    if (refused(g, zr_gpu_copy(s, ZR_GPU_D2H, pageable, c.x, sizeof pageable), "device-to-host copy of 64 bytes with pageable host memory")) return 1;
    EXPECT(zr_gpu_capture_end(s, &gr) == -EINVAL);
    TRY(zr_gpu_stream_sync(s));                         /* usable again */
    zr_gpu_set_sync_debug(g, 1);
    EXPECT(zr_gpu_capture_begin(s) == -EINVAL && strstr(zr_gpu_strerror(g), "sync-debug"));
    fprintf(stderr, "refused as expected: %s\n", zr_gpu_strerror(g));
    zr_gpu_set_sync_debug(g, 0);
    TRY(zr_gpu_capture_begin(s));                       /* one left open: close ends it */
    if (gseq(g, s, &c)) return 1;
    return 0;
}

static int fault(ZrGpu *g)
{
    ZrGpuStream *s;
    TRY(zr_gpu_stream_create(g, &s, "compute"));
    void *d;
    TRY(zr_gpu_malloc(g, &d, 4096));
    long ln = 16; int fmt = 0;
    void *args[] = {&d, &d, &ln, &fmt, NULL};
    unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    int rc = zr_gpu_launch(s, "zd_add_f32", grid, block, 0, args);
    if (rc == 0) rc = zr_gpu_launch(s, "zd_f32_to_16", grid, block, 0, args);
    if (rc == 0) rc = zr_gpu_stream_sync(s);
    fprintf(stderr, "x_gpu_stub: fault reported: %s\n", zr_gpu_strerror(g));
    return rc < 0 ? 2 : 0;
}

static int hang(ZrGpu *g, int with_coll)
{
    ZrGpuStream *s;
    ZrGpuEvent *e;
    TRY(zr_gpu_stream_create(g, &s, "nccl"));
    TRY(zr_gpu_event_create(g, &e));
    void *d;
    TRY(zr_gpu_malloc(g, &d, 4096));
    if (with_coll) {
        TRY(zr_gpu_coll_init(g, NULL, s));
        TRY(zr_gpu_coll(s, ZR_COLL_ALL_REDUCE, d, d, 16, ZR_DT_FP32));
    }
    TRY(zr_gpu_record(e, s));
    EXPECT(zr_gpu_event_query(e) == 0);             /* not done: the poll returns at once */
    fprintf(stderr, "x_gpu_stub: event query while pending: not done\n");
    int rc = zr_gpu_event_sync(e);
    fprintf(stderr, "x_gpu_stub: wait ended (%d): %s\n", rc, zr_gpu_strerror(g));
    return rc == -ETIMEDOUT ? 3 : 1;
}

/* TF32 of a double, rounded to nearest even with 11 significant bits (frexp's mantissa in [0.5, 1)
** scaled by 2^11), independent of zr_half.h's bit arithmetic that the stub and the stand-in use. */
static double tf32_ref(double x)
{
    int e;
    double m = frexp(x, &e);
    return ldexp(nearbyint(ldexp(m, 11)), e - 11);
}

/* zr_gpu_set_tf32 off, on, off: fp32 sgemm, gemm_ex and gemm_lt give the exact fp32 product when
** off and the product of TF32-rounded inputs when on (which differs from the exact one by far more
** than fp32 rounding); a bf16 gemm_ex keeps DEFAULT math either way. The stub counts what each call
** asked for (zr_stub_math_summary: t_gpu_stub.sh checks the counts). */
static int tf32(ZrGpu *g)
{
    enum { M = 3, N = 4, K = 16 };
    ZrGpuStream *s;
    TRY(zr_gpu_stream_create(g, &s, "compute"));
    static float A[M * K], B[K * N], C[M * N];
    static uint16_t A16[M * K], B16[K * N];
    double exact[M * N], rounded[M * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)(1.0 + 0.001 * (i + 1)), A16[i] = zr_f32_to_bf16(A[i]);
    for (int i = 0; i < K * N; i++) B[i] = (float)(0.5 - 0.0007 * i), B16[i] = zr_f32_to_bf16(B[i]);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            exact[i * N + j] = rounded[i * N + j] = 0;
            for (int k = 0; k < K; k++) {
                exact[i * N + j] += (double)A[i * K + k] * B[k * N + j];
                rounded[i * N + j] += tf32_ref(A[i * K + k]) * tf32_ref(B[k * N + j]);
            }
        }
    TRY(zr_gpu_host_register(g, A, sizeof A));
    TRY(zr_gpu_host_register(g, B, sizeof B));
    TRY(zr_gpu_host_register(g, C, sizeof C));
    TRY(zr_gpu_host_register(g, A16, sizeof A16));
    TRY(zr_gpu_host_register(g, B16, sizeof B16));
    void *dA, *dB, *dC, *dA16, *dB16;
    TRY(zr_gpu_malloc(g, &dA, sizeof A)); TRY(zr_gpu_malloc(g, &dB, sizeof B)); TRY(zr_gpu_malloc(g, &dC, sizeof C));
    TRY(zr_gpu_malloc(g, &dA16, sizeof A16)); TRY(zr_gpu_malloc(g, &dB16, sizeof B16));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA, A, sizeof A));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dB, B, sizeof B));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dA16, A16, sizeof A16));
    TRY(zr_gpu_copy(s, ZR_GPU_H2D, dB16, B16, sizeof B16));
    static const int phase[3] = {0, 1, 0};
    for (int ph = 0; ph < 3; ph++) {
        int on = phase[ph];
        TRY(zr_gpu_set_tf32(g, on));
        const double *want = on ? rounded : exact, *other = on ? exact : rounded;
        for (int which = 0; which < 3; which++) {
            if (which == 0) TRY(zr_gpu_sgemm(s, 0, 0, M, N, K, 1.0f, dA, K, dB, N, 0.0f, dC, N));
            else if (which == 1)
                TRY(zr_gpu_gemm_ex(s, 0, 0, M, N, K, 1.0f, dA, ZR_DT_FP32, K, dB, ZR_DT_FP32, N, 0.0f, dC,
                                   ZR_DT_FP32, N, ZR_GPU_COMPUTE_32F));
            else
                TRY(zr_gpu_gemm_lt(s, 0, 0, M, N, K, 1.0f, dA, K, dB, N, ZR_DT_FP32, 0.0f, NULL, dC, N, ZR_DT_FP32,
                                   ZR_GPU_EPI_NONE, NULL, NULL, 0));
            TRY(zr_gpu_copy(s, ZR_GPU_D2H, C, dC, sizeof C));
            TRY(zr_gpu_stream_sync(s));
            double worst = 0, apart = 1e30;
            for (int i = 0; i < M * N; i++) {
                double d = fabs(C[i] - want[i]) / fabs(want[i]), o = fabs(C[i] - other[i]) / fabs(want[i]);
                if (d > worst) worst = d;
                if (o < apart) apart = o;
            }
            fprintf(stderr, "x_gpu_stub: tf32 %d %s: within %.1e of its reference, %.1e from the other\n", on,
                    which == 0 ? "sgemm" : which == 1 ? "gemm_ex" : "gemm_lt", worst, apart);
            EXPECT(worst <= 1e-6);      /* fp32 sums of K = 16 products */
            EXPECT(apart >= 1e-5);      /* TF32 moves every element by ~1e-4 here */
        }
        /* bf16 operands: tensor cores with or without TF32, DEFAULT math (the stub counts it) */
        TRY(zr_gpu_gemm_ex(s, 0, 0, M, N, K, 1.0f, dA16, ZR_DT_BF16, K, dB16, ZR_DT_BF16, N, 0.0f, dC, ZR_DT_FP32,
                           N, ZR_GPU_COMPUTE_32F));
    }
    TRY(zr_gpu_stream_sync(s));
    fprintf(stderr, "%s\n", zr_stub_math_summary());
    return 0;
}

/* cuMemGetInfo's planted figures come back, an allocation takes its size from the free memory, and
** one beyond it is refused with the driver's out-of-memory (what the trainer's pre-flight avoids). */
static int meminfo(ZrGpu *g)
{
    size_t fr = 0, tot = 0, fr2 = 0;
    TRY(zr_gpu_mem_info(g, &fr, &tot));
    fprintf(stderr, "x_gpu_stub: device memory free %zu MiB of %zu MiB\n", fr >> 20, tot >> 20);
    void *p = NULL, *q = NULL;
    TRY(zr_gpu_malloc(g, &p, (size_t)64 << 20));
    TRY(zr_gpu_mem_info(g, &fr2, &tot));
    EXPECT(fr - fr2 == (size_t)64 << 20);
    int rc = zr_gpu_malloc(g, &q, fr2 + 1);
    EXPECT(rc == -ENOMEM);
    fprintf(stderr, "refused as expected: %s\n", zr_gpu_strerror(g));
    zr_gpu_free(g, p);
    TRY(zr_gpu_mem_info(g, &fr2, &tot));
    EXPECT(fr2 == fr);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "basic";
    ZrGpu *g = NULL;
    int rc = zr_gpu_open(&g, 0, (const ZrGpuBlob *)zg_kernel_blobs, zg_n_kernel_blobs);
    if (rc < 0) {
        fprintf(stderr, "x_gpu_stub: open failed (%d): %s\n", rc, zr_gpu_strerror(NULL));
        fprintf(stderr, "%s\n", zr_stub_summary());
        return 4;
    }
    fprintf(stderr, "x_gpu_stub: %s\n", zr_gpu_describe(g));
    if (!strcmp(sc, "basic")) rc = basic(g);
    else if (!strcmp(sc, "fault")) rc = fault(g);
    else if (!strcmp(sc, "graph")) rc = graph(g);
    else if (!strcmp(sc, "tf32")) rc = tf32(g);
    else if (!strcmp(sc, "meminfo")) rc = meminfo(g);
    else if (!strcmp(sc, "hang")) rc = hang(g, 0);
    else if (!strcmp(sc, "hang_coll")) rc = hang(g, 1);
    else rc = 0;
    if (strcmp(sc, "hang") && strcmp(sc, "hang_coll")) zr_gpu_close(g);
    fprintf(stderr, "%s\n", zr_stub_summary());
    if (rc == 0) printf("x_gpu_stub: %s ok\n", sc);
    return rc;
}
