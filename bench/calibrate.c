/*
** calibrate.c — measures the machine at hand and prints a `host` hardware profile for
** `zgen --predict --hardware FILE` (keys in docs/PREDICT.md). Build: make bin/bench/calibrate.
**   [mpirun -np R] bin/bench/calibrate [--threads N] [--dir D] > host.json
** What it measures, each the way the host trainer does the work, on every rank at once (so a
** 2-rank run sees what a 2-rank trainer sees on shared cores and memory):
**   sgemm       GPT-shaped matmuls split in row blocks over N OpenMP threads, each block one
**               single-threaded OpenBLAS call (the host kernels' pattern), GFLOP/s;
**   attention   the same with the small per-head shapes of the host attention (32 rows x hs x T);
**   memory      a copy stream (bytes read + written per second) and memcpy (bytes copied/s);
**   CPU Adam    libzrt's zr_adam_step on fp32 gradients, parameters/s;
**   disk        O_DIRECT sequential write then read of a file in D (default /tmp), GB/s;
**   collectives with R >= 2: libzrt's all-reduce of 32 MiB fp32 (bus bandwidth
**               2(R-1)/R x bytes / time) and of one element (latency).
** Each figure is the median of 5 repetitions. Rank 0 prints the profile.
*/
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <omp.h>
#include "zr_adam.h"
#include "zr_coll.h"
#include "zg_predict.h"

enum { REPS = 5 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static float *fill(size_t n)
{
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!x) { fprintf(stderr, "calibrate: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return x;
}

/* C[M,N] = A[M,K] B[K,N], rows split in `rows`-row blocks over the OpenMP threads. */
static double gemm_rate(int M, int K, int N, int rows)
{
    float *A = fill((size_t)M * K), *B = fill((size_t)K * N), *Cm = fill((size_t)M * N);
    double r[REPS];
    for (int k = 0; k < REPS; k++) {
        double t0 = now();
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i += rows) {
            int m = M - i < rows ? M - i : rows;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, N, K, 1.0f,
                        A + (size_t)i * K, K, B, N, 0.0f, Cm + (size_t)i * N, N);
        }
        r[k] = 2.0 * M * K * (double)N / (now() - t0);
    }
    free(A); free(B); free(Cm);
    return median(r, REPS);
}

static void mem_rates(double *stream, double *copy)
{
    size_t n = (size_t)32 << 20;        /* 128 MiB per array */
    float *a = fill(n), *b = fill(n);
    double rs[REPS], rc[REPS];
    for (int k = 0; k < REPS; k++) {
        double t0 = now();
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) b[i] = a[i] * 1.0001f;
        rs[k] = 2.0 * n * sizeof(float) / (now() - t0);
        t0 = now();
#pragma omp parallel
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = n * t / nt, hi = n * (t + 1) / nt;
            memcpy(a + lo, b + lo, (hi - lo) * sizeof(float));
        }
        rc[k] = n * sizeof(float) / (now() - t0);
    }
    free(a); free(b);
    *stream = median(rs, REPS);
    *copy = median(rc, REPS);
}

static double adam_rate(void)
{
    int64_t n = 16 << 20;
    float *p = fill((size_t)n), *m = fill((size_t)n), *v = fill((size_t)n), *g = fill((size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = v[i] * v[i];
    ZrAdamCfg c = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f,
                   .adamw = 1, .step = 1, .grad_scale = 1.0f};
    double r[REPS];
    for (int k = 0; k < REPS; k++) {
        double t0 = now();
        zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_BF16, n);
        r[k] = (double)n / (now() - t0);
        c.step++;
    }
    free(p); free(m); free(v); free(g);
    return median(r, REPS);
}

/* O_DIRECT sequential write then read of 256 MiB in 1 MiB requests; 0 if O_DIRECT fails. */
static void disk_rates(const char *dir, int rank, double *rd, double *wr)
{
    size_t blk = 1 << 20, nblk = 256;
    char path[4096];
    snprintf(path, sizeof path, "%s/zgen_calibrate.%d.%d", dir, (int)getpid(), rank);
    void *buf;
    if (posix_memalign(&buf, 4096, blk)) return;
    memset(buf, 0x5a, blk);
    double rr[REPS], rw[REPS];
    for (int k = 0; k < REPS; k++) {
        int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT, 0600);
        if (fd < 0) { free(buf); return; }
        double t0 = now();
        for (size_t i = 0; i < nblk; i++)
            if (write(fd, buf, blk) != (ssize_t)blk) { close(fd); unlink(path); free(buf); return; }
        fdatasync(fd);
        rw[k] = (double)(blk * nblk) / (now() - t0);
        close(fd);
        fd = open(path, O_RDONLY | O_DIRECT);
        if (fd < 0) { unlink(path); free(buf); return; }
        t0 = now();
        for (size_t i = 0; i < nblk; i++)
            if (read(fd, buf, blk) != (ssize_t)blk) break;
        rr[k] = (double)(blk * nblk) / (now() - t0);
        close(fd);
    }
    unlink(path);
    free(buf);
    *rd = median(rr, REPS);
    *wr = median(rw, REPS);
}

static void coll_rates(ZrComm *c, double *busbw, double *lat)
{
    int w = zr_comm_world(c);
    int64_t n = 8 << 20;
    float *x = fill((size_t)n), *y = fill((size_t)n);
    double rb[REPS], rl[REPS];
    for (int k = 0; k < REPS; k++) {
        ZrCollReq *q = NULL;
        zr_barrier(c, &q);
        zr_coll_wait(c, q);
        double t0 = now();
        zr_all_reduce(c, x, y, n, ZR_DT_FP32, &q);
        zr_coll_wait(c, q);
        rb[k] = 2.0 * (w - 1) / w * (double)n * 4.0 / (now() - t0);
        t0 = now();
        for (int j = 0; j < 20; j++) {
            zr_all_reduce(c, x, y, 1, ZR_DT_FP32, &q);
            zr_coll_wait(c, q);
        }
        rl[k] = (now() - t0) / 20;
    }
    free(x); free(y);
    *busbw = median(rb, REPS);
    *lat = median(rl, REPS);
}

int main(int argc, char **argv)
{
    int threads = 0;
    const char *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else {
            fprintf(stderr, "usage: [mpirun -np R] calibrate [--threads N] [--dir D] > host.json\n");
            return 2;
        }
    }
    ZrComm *comm = NULL;
    if (zr_comm_create(&comm) != 0) { fprintf(stderr, "calibrate: MPI init failed\n"); return 1; }
    int rank = zr_comm_rank(comm), world = zr_comm_world(comm);
    if (threads > 0) omp_set_num_threads(threads);
    openblas_set_num_threads(1);

    ZgHw hw;
    zg_hw_builtin("host", &hw);
    hw.name = world > 1 ? "host (calibrated, per rank of a multi-rank run)" : "host (calibrated)";
    /* GPT-shaped blocks of the validation models (C = 256 and 384, BT = 2048) */
    double g[4] = {gemm_rate(2048, 256, 768, 64), gemm_rate(2048, 256, 1024, 64),
                   gemm_rate(2048, 384, 1152, 64), gemm_rate(2048, 1536, 384, 64)};
    double mm = median(g, 4);
    hw.peak_flops[0] = hw.peak_flops[1] = hw.peak_flops[2] = mm;
    hw.mm_eff = 1.0;
    hw.attn_eff = gemm_rate(32 * omp_get_max_threads() * 8, 64, 256, 32) / mm;
    if (hw.attn_eff > 1) hw.attn_eff = 1;
    double stream, copy;
    mem_rates(&stream, &copy);
    hw.mem_bw = hw.host_mem_bw = stream;
    hw.h2d_bw = hw.d2h_bw = copy;
    hw.cpu_adam_rate = adam_rate();
    double rd = 0, wr = 0;
    disk_rates(dir, rank, &rd, &wr);
    if (rd > 0) { hw.nvme_read_bw = rd; hw.nvme_write_bw = wr; }
    else if (rank == 0) fprintf(stderr, "calibrate: O_DIRECT on %s failed; disk figures are the built-in host's\n", dir);
    if (world > 1) coll_rates(comm, &hw.net_bw, &hw.net_lat_s);
    if (rank == 0) zg_hw_write(&hw, stdout);
    zr_comm_destroy(comm);
    return 0;
}
