/*
** b_nvme.c — zr_nvme swapper bandwidth against fio on the same file system, block size and queue depth.
** Writes then reads SHARDS shards of SHARD_MB MiB (1 GiB+ in all) through zr_nvme (O_DIRECT, registered
** buffers, all shards in flight, block_size / queue_depth pieces), and runs fio (ioengine=io_uring,
** direct=1, same bs and iodepth, same size, and like zr_nvme registered buffers and file:
** fixedbufs, registerfiles, and reaping up to qd completions at once: fio's fastest setting here)
** on a file beside it, alternately REPS times. Reports the median of the pair-by-pair ratios zr/fio
** for write and read, and deletes the files.
** Env: ZB_RESULTS (JSON lines out), ZB_DIR (default bench/out: the repo's disk), ZB_NVME_REPS.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zr_nvme.h"
#include "zb.h"

#define SHARDS 8
#define SHARD_MB 160                      /* 8 x 160 MiB = 1.25 GiB */
#define BS (1 << 20)                      /* aio.block_size default */
#define QD 8                              /* aio.queue_depth default */

/* GB/s of one pass of zr_nvme over all shards, every shard queued before waiting. */
static double zr_pass(ZrNvme *f, char **buf, int write)
{
    return zb_nvme_pass(f, buf, SHARDS, (int64_t)SHARD_MB << 20, write, "b_nvme");
}

/* GB/s that fio reports for one job; -1 if fio fails. */
static double fio_pass(const char *file, int write)
{
    char cmd[1024], out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "fio --name=zb --filename=%s --ioengine=io_uring --direct=1 --rw=%s --bs=%d "
             "--iodepth=%d --size=%dM --numjobs=1 --fixedbufs=1 --registerfiles=1 "
             "--iodepth_batch_complete_max=%d "
             "--output-format=json 2>/dev/null",
             file, write ? "write" : "read", BS, QD, SHARDS * SHARD_MB, QD);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    if (pclose(p) != 0) return -1;
    const char *sec = strstr(out, write ? "\"write\" :" : "\"read\" :");
    const char *bw = sec ? strstr(sec, "\"bw_bytes\" :") : NULL;
    return bw ? atof(bw + strlen("\"bw_bytes\" :")) / 1e9 : -1;
}

static void emit(const char *name, double v, double peer, double ratio, const char *note)
{
    zb_emit_gbs(name, v, "fio io_uring direct bs=1M qd=8 fixedbufs", peer, ratio, note);
}

int main(void)
{
    const char *dir = getenv("ZB_DIR") ? getenv("ZB_DIR") : "bench/out";
    int reps = getenv("ZB_NVME_REPS") ? atoi(getenv("ZB_NVME_REPS")) : 5;
    if (reps < 1 || reps > 20) reps = 5;
    char zpath[512], fpath[512];
    snprintf(zpath, sizeof zpath, "%s/b_nvme_zr.swp", dir);
    snprintf(fpath, sizeof fpath, "%s/b_nvme_fio.dat", dir);
    const int64_t sz = (int64_t)SHARD_MB << 20;
    ZrNvmeCfg cfg = {BS, QD, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    int rc = zr_nvme_open(&f, zpath, sz * SHARDS, &cfg);
    if (rc) return 1;
    if (!zr_nvme_is_direct(f)) fprintf(stderr, "b_nvme: %s is not O_DIRECT\n", zpath);
    char *buf[SHARDS];
    size_t lens[SHARDS];
    for (int s = 0; s < SHARDS; s++) {
        buf[s] = zr_nvme_alloc((size_t)sz);
        lens[s] = (size_t)sz;
        if (!buf[s]) { fprintf(stderr, "b_nvme: out of memory\n"); return 1; }
        memset(buf[s], s + 1, (size_t)sz);
    }
    zr_nvme_register_buffers(f, (void *const *)buf, lens, SHARDS);
    printf("b_nvme: %d x %d MiB shards, bs %d, qd %d, %s, registered buffers %d; %d reps\n", SHARDS,
           SHARD_MB, BS, QD, dir, zr_nvme_registered(f), reps);
    double rw[20], rr[20], zw[20], zrd[20], fw[20], frd[20];
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
        /* Alternate zr and fio, and swap which goes first every rep so neither always runs on a
        ** disk the other just left. */
        if (r % 2 == 0) { zw[r] = zr_pass(f, buf, 1); fw[r] = fio_pass(fpath, 1); }
        else { fw[r] = fio_pass(fpath, 1); zw[r] = zr_pass(f, buf, 1); }
        if (r % 2 == 0) { zrd[r] = zr_pass(f, buf, 0); frd[r] = fio_pass(fpath, 0); }
        else { frd[r] = fio_pass(fpath, 0); zrd[r] = zr_pass(f, buf, 0); }
        ok = zw[r] > 0 && fw[r] > 0 && zrd[r] > 0 && frd[r] > 0;
        rw[r] = zw[r] / fw[r];
        rr[r] = zrd[r] / frd[r];
        printf("  rep %d: write zr %.3f fio %.3f GB/s (%.3f)   read zr %.3f fio %.3f GB/s (%.3f)\n",
               r, zw[r], fw[r], rw[r], zrd[r], frd[r], rr[r]);
    }
    unlink(fpath);
    for (int s = 0; s < SHARDS; s++) zr_nvme_free(buf[s], (size_t)sz);
    zr_nvme_close(f);
    if (!ok) { fprintf(stderr, "b_nvme: a pass failed (is fio installed?)\n"); return 1; }
    double mrw = zb_median(rw, reps), mrr = zb_median(rr, reps);
    const char *note = "1.25 GiB of 160 MiB shards, bs 1 MiB, qd 8, O_DIRECT; median of pairwise "
                       "ratios of alternated runs";
    emit("nvme_swapper_write", zb_median(zw, reps), zb_median(fw, reps), mrw,
         note);
    emit("nvme_swapper_read", zb_median(zrd, reps), zb_median(frd, reps), mrr,
         note);
    return 0;
}
