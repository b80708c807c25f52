/*
** b_coll.c — libzrt's reductions against Open MPI's own, same buffers, same run, alternately.
**
** 64 MiB of fp32 per rank (ZB_COLL_MB to change) on 2 ranks (ZB_COLL_NP): zr_all_reduce against
** MPI_Allreduce and zr_reduce_scatter against MPI_Reduce_scatter_block, 5 pairs each, median of
** the pair-by-pair time ratios. The figure is algorithm bandwidth (bytes of one rank's input
** per second). Run directly (bench/run.sh does), it relaunches itself under mpirun.
** Appends two JSON objects to $ZB_RESULTS.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "zr_coll.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { PAIRS = 5 };

static void report(const char *name, const char *peer, double bytes, double *ours, double *mpi,
                   const char *path, int W)
{
    double ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) ratio[i] = mpi[i] / ours[i];
    qsort(ratio, PAIRS, sizeof *ratio, cmp_d);
    qsort(ours, PAIRS, sizeof *ours, cmp_d);
    qsort(mpi, PAIRS, sizeof *mpi, cmp_d);
    double v = bytes / ours[PAIRS / 2] / 1e9, pv = bytes / mpi[PAIRS / 2] / 1e9;
    printf("%s: %.2f GB/s (%.1f ms), %s %.2f GB/s (%.1f ms), median ratio %.2f\n", name, v,
           ours[PAIRS / 2] * 1e3, peer, pv, mpi[PAIRS / 2] * 1e3, ratio[PAIRS / 2]);
    const char *out = getenv("ZB_RESULTS");
    FILE *f = out ? fopen(out, "a") : NULL;
    if (!f) return;
    fprintf(f, "{\"name\": \"%s\", \"value\": %.3f, \"unit\": \"GB/s\", \"peer\": \"%s\", "
            "\"peer_value\": %.3f, \"ratio\": %.3f, \"note\": \"%d ranks, path %s, median of %d "
            "alternating pairs\"}\n", name, v, peer, pv, ratio[PAIRS / 2], W, path, PAIRS);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {       /* not under mpirun: relaunch */
        const char *np = getenv("ZB_COLL_NP") ? getenv("ZB_COLL_NP") : "2";
        const char *args[] = {"mpirun", "--oversubscribe", "-np", np, "-x", "ZB_RESULTS",
                              "-x", "ZB_COLL_MB", argv[0], NULL};
        if (!getenv("ZB_COLL_MB")) setenv("ZB_COLL_MB", "64", 1);
        if (!getenv("ZB_RESULTS")) setenv("ZB_RESULTS", "/dev/null", 1);
        execvp("mpirun", (char *const *)args);
        perror("b_coll: mpirun");
        return 1;
    }
    (void)argc;
    ZrComm *c;
    if (zr_comm_create(&c) != 0) return 1;
    int R = zr_comm_rank(c), W = zr_comm_world(c);
    long mb = getenv("ZB_COLL_MB") ? atol(getenv("ZB_COLL_MB")) : 64;
    int64_t n = ((int64_t)mb << 20) / 4 / W * W;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) a[i] = (float)((i + R) % 1000) * 1e-3f;
    memset(b, 0, (size_t)n * 4);
    double ar[PAIRS], arm[PAIRS], rs[PAIRS], rsm[PAIRS];
    zr_all_reduce(c, a, b, n, ZR_DT_FP32, NULL);                  /* warm-up: scratch, pages */
    MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < PAIRS; i++) {
        double t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        zr_all_reduce(c, a, b, n, ZR_DT_FP32, NULL);
        ar[i] = MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        arm[i] = MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        zr_reduce_scatter(c, a, b, n / W, ZR_DT_FP32, NULL);
        rs[i] = MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        MPI_Reduce_scatter_block(a, b, (int)(n / W), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        rsm[i] = MPI_Wtime() - t;
    }
    /* rank 0's times decide (every rank leaves a collective at about the same time) */
    if (R == 0) {
        char name[96];
        snprintf(name, sizeof name, "all_reduce_%ldMiB_fp32_%dranks", mb, W);
        report(name, "Open MPI MPI_Allreduce", (double)n * 4, ar, arm, zr_comm_reduce_path(c), W);
        snprintf(name, sizeof name, "reduce_scatter_%ldMiB_fp32_%dranks", mb, W);
        report(name, "Open MPI MPI_Reduce_scatter_block", (double)n * 4, rs, rsm,
               zr_comm_reduce_path(c), W);
    }
    free(a);
    free(b);
    zr_comm_destroy(c);
    return 0;
}
