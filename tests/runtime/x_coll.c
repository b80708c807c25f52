/*
** x_coll.c — collectives helper run by t_coll.sh / t_coll_timeout.sh under mpirun.
**   x_coll check      every collective, every dtype, sizes that do not divide by the world size,
**                     asynchronous handles in flight together; results against sums computed
**                     here from every rank's (regenerated) input; prints the zt summary on rank 0.
**   x_coll late S     rank 1 sleeps S seconds before the second collective (a late rank)
**   x_coll skip       rank 1 skips the all_reduce and goes on to the barrier (a wrong schedule)
** Every rank can regenerate every other rank's input (value(rank, i)), so expected results need
** no communication; the order of the expected sums is the documented one (rank 0..W-1, fp32).
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "zr_coll.h"
#include "zr_half.h"
#include "zt.h"

static int R, W;
static ZrComm *comm;

static float value(int rank, int64_t i, int salt)
{
    uint64_t x = (uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)(i + 7) * 0xbf58476d1ce4e5b9ull ^ (uint64_t)salt * 0x94d049bb133111ebull;
    x ^= x >> 31; x *= 0xd6e8feb86659fd39ull; x ^= x >> 29;
    return (float)((double)(x >> 11) * 0x1p-53 * 4.0 - 2.0);
}

static size_t esz(ZrDtype dt) { return dt == ZR_DT_FP32 ? 4 : 2; }
static void put(void *buf, ZrDtype dt, int64_t i, float f)
{
    if (dt == ZR_DT_FP32) ((float *)buf)[i] = f;
    else if (dt == ZR_DT_BF16) ((uint16_t *)buf)[i] = zr_f32_to_bf16(f);
    else ((uint16_t *)buf)[i] = zr_f32_to_fp16(f);
}
static float get(const void *buf, ZrDtype dt, int64_t i)
{
    if (dt == ZR_DT_FP32) return ((const float *)buf)[i];
    if (dt == ZR_DT_BF16) return zr_bf16_to_f32(((const uint16_t *)buf)[i]);
    return zr_fp16_to_f32(((const uint16_t *)buf)[i]);
}
/* rank r's input element i, as stored in dt */
static float input(int r, int64_t i, ZrDtype dt, int salt)
{
    char tmp[4];
    put(tmp, dt, 0, value(r, i, salt));
    return get(tmp, dt, 0);
}
/* the documented sum: rank order, fp32, one rounding to dt at the end; *dev gets the distance
** from the exact (double) sum relative to the sum of magnitudes (cancellation-proof) */
static float expect_sum(int64_t i, ZrDtype dt, int salt, int64_t valid_n, double *dev)
{
    float acc = 0;
    double exact = 0, scale = 0;
    if (i < valid_n)
        for (int r = 0; r < W; r++) {
            float x = input(r, i, dt, salt);
            acc += x;
            exact += x;
            scale += fabs(x);
        }
    char tmp[4];
    put(tmp, dt, 0, acc);
    float out = get(tmp, dt, 0);
    if (dev) *dev = fabs((double)out - exact) / (scale + 1e-6);
    return out;
}

static const ZrDtype dts[] = {ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16};
static const char *dtn[] = {"fp32", "bf16", "fp16"};

static void t_all_reduce(void)
{
    static const int64_t counts[] = {1, 7, 1001, 65537};
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 4; k++) {
            ZrDtype dt = dts[d];
            int64_t n = counts[k];
            size_t bytes = (size_t)n * esz(dt);
            char *buf = malloc(bytes), *out = malloc(bytes), *again = malloc(bytes);
            long long ln = (long long)n;
            for (int64_t i = 0; i < n; i++) put(buf, dt, i, value(R, i, k));
            ZT_EQ_INT(zr_all_reduce(comm, buf, out, n, dt, NULL), 0);
            int bad = 0;
            double worst = 0, dev;
            for (int64_t i = 0; i < n; i++) {
                float e = expect_sum(i, dt, k, n, &dev), g = get(out, dt, i);
                if (memcmp(&e, &g, 4) != 0 && bad++ < 3)
                    ZT_CHECKM(0, "%s n=%lld [%lld] = %.9g, want %.9g", dtn[d], ln, (long long)i,
                              g, e);
                if (dev > worst) worst = dev;
            }
            /* fp32 sums of W values lose a few ulps; 16-bit outputs one rounding of the format */
            double tol = dt == ZR_DT_FP32 ? 1e-6 : dt == ZR_DT_BF16 ? 8e-3 : 1e-3;
            ZT_CHECKM(worst < tol, "%s n=%lld: deviation from the exact sum %.3g", dtn[d], ln,
                      worst);
            /* in place, twice: the same bits every time */
            memcpy(again, buf, bytes);
            ZT_EQ_INT(zr_all_reduce(comm, again, again, n, dt, NULL), 0);
            ZT_CHECKM(memcmp(again, out, bytes) == 0, "%s n=%lld in place differs", dtn[d], ln);
            /* every rank holds the same bits: compare with rank 0's */
            ZT_EQ_INT(zr_broadcast(comm, again, n, dt, 0, NULL), 0);
            ZT_CHECKM(memcmp(again, out, bytes) == 0, "%s n=%lld differs from rank 0", dtn[d], ln);
            free(buf); free(out); free(again);
        }
}

/* A tensor of n elements, padded by the caller to W*cpr, reduce-scattered: our block's sums. */
static void t_reduce_scatter_padded(void)
{
    static const int64_t ns[] = {1, 10, 1001};
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 3; k++) {
            ZrDtype dt = dts[d];
            int64_t n = ns[k], cpr = (n + W - 1) / W;
            char *send = calloc((size_t)(cpr * W), 4), *recv = malloc((size_t)cpr * 4);
            for (int64_t i = 0; i < n; i++) put(send, dt, i, value(R, i, 10 + k));
            ZT_EQ_INT(zr_reduce_scatter(comm, send, recv, cpr, dt, NULL), 0);
            int bad = 0;
            for (int64_t j = 0; j < cpr; j++) {
                int64_t i = R * cpr + j;
                float e = expect_sum(i, dt, 10 + k, n, NULL), g = get(recv, dt, j);
                if (memcmp(&e, &g, 4) != 0 && bad++ < 3)
                    ZT_CHECKM(0, "%s n=%lld block %d [%lld] = %.9g, want %.9g", dtn[d],
                              (long long)n, R,
                              (long long)j, g, e);
            }
            free(send); free(recv);
        }
}

static void t_all_gather(void)
{
    static const int64_t cprs[] = {1, 5, 333};
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 3; k++) {
            ZrDtype dt = dts[d];
            int64_t cpr = cprs[k];
            char *send = malloc((size_t)cpr * 4), *recv = malloc((size_t)(cpr * W) * 4);
            for (int64_t j = 0; j < cpr; j++) put(send, dt, j, value(R, j, 20 + k));
            ZT_EQ_INT(zr_all_gather(comm, send, recv, cpr, dt, NULL), 0);
            /* in place: our block already sits at its place in recv */
            char *inpl = malloc((size_t)(cpr * W) * 4);
            memcpy(inpl + (size_t)(R * cpr) * esz(dt), send, (size_t)cpr * esz(dt));
            char *own = inpl + (size_t)(R * cpr) * esz(dt);
            ZT_EQ_INT(zr_all_gather(comm, own, inpl, cpr, dt, NULL), 0);
            int bad = 0;
            for (int r = 0; r < W; r++)
                for (int64_t j = 0; j < cpr; j++) {
                    float e = input(r, j, dt, 20 + k), g = get(recv, dt, r * cpr + j);
                    float g2 = get(inpl, dt, r * cpr + j);
                    if ((memcmp(&e, &g, 4) || memcmp(&e, &g2, 4)) && bad++ < 3)
                        ZT_CHECKM(0, "%s cpr=%lld [%d][%lld] = %g / %g, want %g", dtn[d],
                                  (long long)cpr, r,
                                  (long long)j, g, g2, e);
                }
            free(send); free(recv); free(inpl);
        }
}

static void t_broadcast_barrier(void)
{
    for (int d = 0; d < 3; d++) {
        int64_t n = 1001;
        char *buf = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) put(buf, dts[d], i, value(R, i, 30));
        ZT_EQ_INT(zr_broadcast(comm, buf, n, dts[d], W - 1, NULL), 0);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += get(buf, dts[d], i) != input(W - 1, i, dts[d], 30);
        ZT_EQ_INT(bad, 0);
        free(buf);
    }
    int64_t before = zr_comm_seq(comm);
    ZT_EQ_INT(zr_barrier(comm, NULL), 0);
    ZT_EQ_INT(zr_comm_seq(comm), before + 1);
}

/* Several handles in flight, completed out of order, one of them by polling zr_coll_test. */
static void t_async_in_flight(void)
{
    int64_t n = 5003, cpr = 77;
    float *a = malloc((size_t)n * 4), *ar = malloc((size_t)n * 4);
    float *gs = malloc((size_t)cpr * 4), *gr = malloc((size_t)(cpr * W) * 4);
    for (int64_t i = 0; i < n; i++) a[i] = value(R, i, 40);
    for (int64_t j = 0; j < cpr; j++) gs[j] = value(R, j, 41);
    ZrCollReq *q1, *q2, *q3;
    ZT_EQ_INT(zr_all_reduce(comm, a, ar, n, ZR_DT_FP32, &q1), 0);
    ZT_EQ_INT(zr_all_gather(comm, gs, gr, cpr, ZR_DT_FP32, &q2), 0);
    ZT_EQ_INT(zr_barrier(comm, &q3), 0);
    ZT_EQ_INT(zr_coll_wait(comm, q3), 0);
    ZT_EQ_INT(zr_coll_wait(comm, q2), 0);
    int done = 0, polls = 0;
    while (!done) { ZT_EQ_INT(zr_coll_test(comm, q1, &done), 0); polls++; }
    ZT_CHECK(polls >= 1);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float e = expect_sum(i, ZR_DT_FP32, 40, n, NULL);
        bad += memcmp(&e, &ar[i], 4) != 0;
    }
    for (int r = 0; r < W; r++)
        for (int64_t j = 0; j < cpr; j++) bad += gr[r * cpr + j] != value(r, j, 41);
    ZT_EQ_INT(bad, 0);
    free(a); free(ar); free(gs); free(gr);
}

/* 24 mixed collectives in flight; each rank waits for them in its own order (reversed on odd
** ranks, interleaved on others): completing one must never depend on the order of waits. */
static void t_many_in_flight(void)
{
    enum { K = 24, N = 3001 };
    ZrCollReq *h[K];
    float *in[K], *out[K];
    ZrCollOp ops[K];
    for (int k = 0; k < K; k++) {
        in[k] = malloc((size_t)N * W * 4);
        out[k] = malloc((size_t)N * W * 4);
        for (int64_t i = 0; i < (int64_t)N * W; i++) in[k][i] = value(R, i, 100 + k);
        ops[k] = (ZrCollOp)(k % 4);
        int rc = ops[k] == ZR_COLL_ALL_GATHER ? zr_all_gather(comm, in[k], out[k], N, ZR_DT_FP32, &h[k])
                 : ops[k] == ZR_COLL_REDUCE_SCATTER
                     ? zr_reduce_scatter(comm, in[k], out[k], N, ZR_DT_FP32, &h[k])
                 : ops[k] == ZR_COLL_ALL_REDUCE
                     ? zr_all_reduce(comm, in[k], out[k], N, ZR_DT_FP32, &h[k])
                     : zr_broadcast(comm, in[k], N, ZR_DT_FP32, k % W, &h[k]);
        ZT_EQ_INT(rc, 0);
    }
    for (int j = 0; j < K; j++) {
        int k = R % 2 ? K - 1 - j : (j * 7) % K;     /* 7 is prime to 24: a permutation */
        ZT_EQ_INT(zr_coll_wait(comm, h[k]), 0);
    }
    int bad = 0;
    for (int k = 0; k < K; k++) {
        for (int64_t i = 0; i < N; i++) {
            float e, g;
            switch (ops[k]) {
            case ZR_COLL_ALL_GATHER:
                for (int r = 0; r < W; r++) bad += out[k][r * N + i] != value(r, i, 100 + k);
                continue;
            case ZR_COLL_REDUCE_SCATTER:
                e = expect_sum(R * N + i, ZR_DT_FP32, 100 + k, (int64_t)N * W, NULL);
                g = out[k][i];
                break;
            case ZR_COLL_ALL_REDUCE:
                e = expect_sum(i, ZR_DT_FP32, 100 + k, N, NULL);
                g = out[k][i];
                break;
            default:
                e = value(k % W, i, 100 + k);
                g = in[k][i];
                break;
            }
            bad += memcmp(&e, &g, 4) != 0;
        }
        free(in[k]);
        free(out[k]);
    }
    ZT_EQ_INT(bad, 0);
}

/* The reduction path is the one asked for (t_coll.sh runs both). */
static void t_path(void)
{
    const char *want = getenv("X_COLL_PATH");
    if (!want) ZT_SKIP("X_COLL_PATH not set");
    ZT_EQ_STR(zr_comm_reduce_path(comm), want);
}

/* This build has no NCCL: asking for it fails cleanly, and the communicator keeps working. */
static void t_nccl_absent(void)
{
    ZT_EQ_INT(zr_comm_use_nccl(comm, NULL), -ENOTSUP);
    ZT_CHECK(strcmp(zr_comm_reduce_path(comm), "nccl") != 0);
    float x = 1, y = 0;
    ZT_EQ_INT(zr_all_reduce(comm, &x, &y, 1, ZR_DT_FP32, NULL), 0);
    ZT_EQ_INT(y, W);
}

static void t_bad_args(void)
{
    float x = 0;
    ZT_EQ_INT(zr_broadcast(comm, &x, 1, ZR_DT_FP32, W, NULL), -EINVAL);
    ZT_EQ_INT(zr_all_reduce(comm, NULL, &x, 1, ZR_DT_FP32, NULL), -EINVAL);
    ZT_EQ_INT(zr_all_gather(comm, &x, &x, (int64_t)1 << 40, ZR_DT_FP32, NULL), -EOVERFLOW);
    ZT_EQ_STR(zr_coll_op_name(ZR_COLL_REDUCE_SCATTER), "reduce_scatter");
}

/* A rank whose collective fails with an MPI error (a mismatched schedule) stops at once, as
** the trainer's ZR_CHECK would; mpirun then ends the others. */
static void must(int rc, const char *what)
{
    if (rc == 0) return;
    fprintf(stderr, "x_coll: rank %d: %s returned %d\n", R, what, rc);
    exit(3);
}

static int fault_mode(const char *mode, int secs)
{
    zr_comm_set_step(comm, 7);
    float x[64] = {0}, y[64];
    must(zr_barrier(comm, NULL), "barrier");                          /* seq 1 */
    if (strcmp(mode, "late") == 0) {
        if (R == 1) sleep((unsigned)secs);
        must(zr_all_reduce(comm, x, y, 64, ZR_DT_FP32, NULL), "all_reduce");   /* seq 2 */
    } else {
        if (R != 1) must(zr_all_reduce(comm, x, y, 64, ZR_DT_FP32, NULL), "all_reduce");
        must(zr_barrier(comm, NULL), "barrier");
    }
    if (R == 0) printf("x_coll: %s finished without a timeout\n", mode);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    if (zr_comm_create(&comm) != 0) {
        fprintf(stderr, "x_coll: zr_comm_create failed\n");
        return 1;
    }
    R = zr_comm_rank(comm);
    W = zr_comm_world(comm);
    int rc;
    if (strcmp(mode, "check") == 0) {
        if (R != 0 && !freopen("/dev/null", "w", stdout)) return 1;   /* one report: rank 0 */
        ZT_RUN(t_all_reduce);
        ZT_RUN(t_reduce_scatter_padded);
        ZT_RUN(t_all_gather);
        ZT_RUN(t_broadcast_barrier);
        ZT_RUN(t_async_in_flight);
        ZT_RUN(t_many_in_flight);
        ZT_RUN(t_bad_args);
        ZT_RUN(t_path);
        ZT_RUN(t_nccl_absent);
        /* the job fails if any rank failed */
        int mine = zt_failed, all = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (all && !zt_failed) {
            zt_failed = 1;
            zt_passed--;
            printf("(failures on other ranks)\n");
        }
        rc = zt_end();
    } else {
        rc = fault_mode(mode, argc > 2 ? atoi(argv[2]) : 30);
    }
    zr_comm_destroy(comm);
    return rc;
}
