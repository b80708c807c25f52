/*
** calibrate.c — measures the machine at hand and prints a `host` hardware profile for
** `zgen --predict --hardware FILE` (keys in docs/PREDICT.md). Build: make bin/bench/calibrate.
**   [mpirun -np R] bin/bench/calibrate [--threads N] [--dir D] > host.json
**   ... calibrate --compute-only --base host.json > now.json
**       only the host kernels, memory and Adam (a few seconds), the rest taken from host.json:
**       bench/b_predict.sh re-measures these right before and after each trainer run, because
**       this machine's load changes from minute to minute
** What it measures, each on every rank at once (so a 2-rank run sees what a 2-rank trainer sees on
** shared cores and memory):
**   host kernels  the host backend's own kernels (templates/host) on one GPT-2 block (8 sequences)
**                 at width 128 (sequence 128) and 256 (sequence 256), the two sizes of
**                 bench/b_predict.sh: the four linear layers forward and backward (FLOP rate; GELU
**                 and residual adds are fused in them), attention forward and backward (FLOPs
**                 counted as the model counts them: 6*C*T per token), the two LayerNorms forward and
**                 backward (bytes counted as the model does). A plan uses the width nearest its own
**                 ("host_kernels"); the scalar figures are width 256's;
**   memory        a copy stream (host_memory_gbs: bytes read + written per second) and memcpy
**                 (h2d/d2h: bytes copied per second; the host backend's "device" is host memory);
**   CPU Adam      libzrt's zr_adam_step on fp32 gradients, parameters/s;
**   disk          O_DIRECT sequential write then read of a file in D (default /tmp), GB/s;
**   collectives   with R >= 2: libzrt's all-reduce of 32 MiB fp32 (bus bandwidth
**                 2(R-1)/R x bytes / time) and of one element (latency).
** Each figure is the median of 5 repetitions (3 for the host kernels). Rank 0 prints the profile.
*/
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
#include "zk_host.h"
#include "zb.h"

enum { REPS = 5 };

static float *fill(size_t n)
{
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!x) { fprintf(stderr, "calibrate: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return x;
}

static float *zeros(size_t n)
{
    float *x = calloc(n, sizeof(float));
    if (!x) { fprintf(stderr, "calibrate: out of memory\n"); exit(1); }
    return x;
}

/* The host kernels on one block: matmul FLOP/s, attention FLOP/s, LayerNorm bytes/s. */
static void kernel_rates(int T, int C, double *mm, double *attn, double *ln)
{
    const int B = 8, NH = 4, F = 4 * C, n = B * T;
    const float eps = 1e-5f;
    float *x = fill((size_t)n * C), *y = zeros((size_t)n * C), *dy = fill((size_t)n * C);
    float *dx = zeros((size_t)n * C), *mean = zeros(n), *rstd = zeros(n);
    float *qkv = fill((size_t)n * 3 * C), *dqkv = zeros((size_t)n * 3 * C);
    float *h = zeros((size_t)n * F), *hg = zeros((size_t)n * F), *dh = zeros((size_t)n * F);
    float *dhg = zeros((size_t)n * F);
    float *att = zeros((size_t)B * NH * T * T), *datt = zeros((size_t)B * NH * T * T);
    float *w = fill((size_t)C * F), *dw = zeros((size_t)C * F), *b = zeros(F), *db = zeros(F);
    float *lw = fill(C), *lb = zeros(C);
    /* GPT-2-like magnitudes (weights of std ~0.02): with weights of 0.5 the pre-GELU values reach
    ** where GELU and its derivative underflow to denormals, which run many times slower */
    for (size_t i = 0; i < (size_t)C * F; i++) w[i] *= 0.04f;
    for (size_t i = 0; i < (size_t)n * 3 * C; i++) qkv[i] *= 0.1f;
    enum { KREPS = 3 };           /* each is >= 40 ms of kernels */
    double rm[KREPS], ra[KREPS], rl[KREPS];
    double mm_flops = 3.0 * 2.0 * n * (3.0 * C * C + C * C + 2.0 * C * F);    /* forward + backward */
    double attn_flops = 3.0 * 2.0 * n * (double)C * T;
    double ln_bytes = (1.0 + ZG_BWD_FACTOR) * ZG_HOST_ELEM_C * C * (double)n * 4.0;
    /* each repetition runs a kernel group for at least 40 ms, so one descheduling of a thread on
    ** this shared machine weighs in as it does over a training step, not as a whole sample */
    for (int k = 0; k < KREPS; k++) {
        int it = 0;
        double t0 = zb_now(), t;
        do {
            zk_linear_forward(n, C, 3 * C, x, w, b, NULL, qkv, NULL);
            zk_linear_forward(n, C, C, y, w, b, x, dx, NULL);
            zk_linear_forward(n, C, F, x, w, b, NULL, h, hg);
            zk_linear_forward(n, F, C, hg, w, b, x, y, NULL);
            zk_linear_backward(n, F, C, hg, w, dy, dhg, dw, db, h, dh);
            zk_linear_backward(n, C, F, x, w, dh, dx, dw, db, NULL, NULL);
            zk_linear_backward(n, C, C, y, w, dy, dx, dw, db, NULL, NULL);
            zk_linear_backward(n, C, 3 * C, x, w, dqkv, dx, dw, db, NULL, NULL);
            it++;
        } while ((t = zb_now() - t0) < 0.04);
        rm[k] = it * mm_flops / t;
        for (size_t i = 0; i < (size_t)n * 3 * C; i++) qkv[i] = 0.01f * (float)(i % 97);
        it = 0;
        t0 = zb_now();
        do {
            zk_attention_forward(B, T, C, NH, NULL, qkv, att, y);
            zk_attention_backward(B, T, C, NH, NULL, qkv, att, dy, datt, dqkv);
            it++;
        } while ((t = zb_now() - t0) < 0.04);
        ra[k] = it * attn_flops / t;
        it = 0;
        t0 = zb_now();
        do {
            zk_layernorm_forward(n, C, eps, x, lw, lb, y, mean, rstd);
            zk_layernorm_forward(n, C, eps, y, lw, lb, dx, mean, rstd);
            zk_layernorm_backward(n, C, x, lw, mean, rstd, dy, dx, dw, db);
            zk_layernorm_backward(n, C, y, lw, mean, rstd, dy, dx, dw, db);
            it++;
        } while ((t = zb_now() - t0) < 0.04);
        rl[k] = it * ln_bytes / t;
    }
    *mm = zb_median(rm, KREPS);
    *attn = zb_median(ra, KREPS);
    *ln = zb_median(rl, KREPS);
    free(x); free(y); free(dy); free(dx); free(mean); free(rstd); free(qkv); free(dqkv);
    free(h); free(hg); free(dh); free(dhg); free(att); free(datt); free(w); free(dw); free(b);
    free(db); free(lw); free(lb);
}

static void mem_rates(double *stream, double *copy)
{
    size_t n = (size_t)32 << 20;        /* 128 MiB per array */
    float *a = fill(n), *b = fill(n);
    double rs[REPS], rc[REPS];
    for (int k = 0; k < REPS; k++) {
        double t0 = zb_now();
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) b[i] = a[i] * 1.0001f;
        rs[k] = 2.0 * n * sizeof(float) / (zb_now() - t0);
        t0 = zb_now();
#pragma omp parallel
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = n * t / nt, hi = n * (t + 1) / nt;
            memcpy(a + lo, b + lo, (hi - lo) * sizeof(float));
        }
        rc[k] = n * sizeof(float) / (zb_now() - t0);
    }
    free(a); free(b);
    *stream = zb_median(rs, REPS);
    *copy = zb_median(rc, REPS);
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
        double t0 = zb_now();
        zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_BF16, n);
        r[k] = (double)n / (zb_now() - t0);
        c.step++;
    }
    free(p); free(m); free(v); free(g);
    return zb_median(r, REPS);
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
        double t0 = zb_now();
        for (size_t i = 0; i < nblk; i++)
            if (write(fd, buf, blk) != (ssize_t)blk) { close(fd); unlink(path); free(buf); return; }
        fdatasync(fd);
        rw[k] = (double)(blk * nblk) / (zb_now() - t0);
        close(fd);
        fd = open(path, O_RDONLY | O_DIRECT);
        if (fd < 0) { unlink(path); free(buf); return; }
        t0 = zb_now();
        for (size_t i = 0; i < nblk; i++)
            if (read(fd, buf, blk) != (ssize_t)blk) break;
        rr[k] = (double)(blk * nblk) / (zb_now() - t0);
        close(fd);
    }
    unlink(path);
    free(buf);
    *rd = zb_median(rr, REPS);
    *wr = zb_median(rw, REPS);
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
        double t0 = zb_now();
        zr_all_reduce(c, x, y, n, ZR_DT_FP32, &q);
        zr_coll_wait(c, q);
        rb[k] = 2.0 * (w - 1) / w * (double)n * 4.0 / (zb_now() - t0);
        t0 = zb_now();
        for (int j = 0; j < 20; j++) {
            zr_all_reduce(c, x, y, 1, ZR_DT_FP32, &q);
            zr_coll_wait(c, q);
        }
        rl[k] = (zb_now() - t0) / 20;
    }
    free(x); free(y);
    *busbw = zb_median(rb, REPS);
    *lat = zb_median(rl, REPS);
}

int main(int argc, char **argv)
{
    int threads = 0, compute_only = 0;
    const char *dir = "/tmp", *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--base") && i + 1 < argc) base = argv[++i];
        else if (!strcmp(argv[i], "--compute-only")) compute_only = 1;
        else {
            fprintf(stderr, "usage: [mpirun -np R] calibrate [--threads N] [--dir D] "
                    "[--compute-only] [--base PROFILE] > host.json\n");
            return 2;
        }
    }
    ZrComm *comm = NULL;
    if (zr_comm_create(&comm) != 0) { fprintf(stderr, "calibrate: MPI init failed\n"); return 1; }
    int rank = zr_comm_rank(comm), world = zr_comm_world(comm);
    if (threads > 0) omp_set_num_threads(threads);
    zk_threads_init(threads);

    ZgHw hw;
    if (base) {
        if (!zg_hw_load(base, &hw)) return 1;
    } else
        zg_hw_builtin("host", &hw);
    hw.name = world > 1 ? "host (calibrated, per rank of a multi-rank run)" : "host (calibrated)";
    hw.host = true;
    hw.n_widths = 0;
    double mm, attn, ln, stream, copy;
    /* the two widths of bench/b_predict.sh's models; the profile's scalar figures are 256's */
    static const int widths[2][2] = {{128, 128}, {256, 256}};     /* {seq, d_model} */
    for (int i = 0; i < 2; i++) {
        kernel_rates(widths[i][0], widths[i][1], &mm, &attn, &ln);
        hw.widths[hw.n_widths++] = (struct ZgHwWidth){widths[i][1], mm, attn, ln};
    }
    hw.peak_flops[0] = hw.peak_flops[1] = hw.peak_flops[2] = mm;
    hw.tf32_flops = mm;         /* the host kernels have no TF32 */
    hw.mm_eff = 1.0;
    hw.attn_eff = attn / mm < 1.0 ? attn / mm : 1.0;
    hw.mem_bw = ln;
    mem_rates(&stream, &copy);
    hw.host_mem_bw = stream;
    hw.h2d_bw = hw.d2h_bw = copy;
    hw.cpu_adam_rate = adam_rate();
    double rd = 0, wr = 0;
    if (!compute_only) {
        disk_rates(dir, rank, &rd, &wr);
        if (rd > 0) { hw.nvme_read_bw = rd; hw.nvme_write_bw = wr; }
        else if (rank == 0)
            fprintf(stderr, "calibrate: O_DIRECT on %s failed; disk figures are the built-in host's\n", dir);
        if (world > 1) coll_rates(comm, &hw.net_bw, &hw.net_lat_s);
    }
    if (rank == 0) zg_hw_write(&hw, stdout);
    zr_comm_destroy(comm);
    return 0;
}
