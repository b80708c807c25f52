/*
** b_nvme_sum.c — what the swap-file checksums (zr_nvme_sum_*) cost: the same swap I/O through two
** zr_nvme handles on the same file system, one with checksums (the default) and one with
** ZR_NVME_F_NOSUM, alternated pass by pass (which goes first swaps every rep). A pass writes SHARDS
** shards of SHARD_MB MiB, all in flight, then reads them back (the read is checked against the write's
** record). Reports the medians of GB/s with checksums (value) and without (peer) and the median of the
** pairwise ratios, for write and read; and, as a note, the CRC32C rate of one core here, the bound on
** how fast checksummed I/O can go from one thread.
** Env: ZB_RESULTS (JSON lines out), ZB_DIR (default bench/out: the repo's disk), ZB_NVME_REPS.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zr_crc.h"
#include "zr_nvme.h"
#include "zb.h"

#define SHARDS 4
#define SHARD_MB 64                       /* 4 x 64 MiB = 256 MiB per pass */
#define BS (1 << 20)                      /* aio.block_size default */
#define QD 8                              /* aio.queue_depth default */

/* GB/s of one pass over all shards, every shard queued before waiting. */
static double pass(ZrNvme *f, char **buf, int write)
{
    return zb_nvme_pass(f, buf, SHARDS, (int64_t)SHARD_MB << 20, write, "b_nvme_sum");
}

static void emit(const char *name, double v, double peer, double ratio, const char *note)
{
    zb_emit_gbs(name, v, "same I/O without checksums", peer, ratio, note);
}

static ZrNvme *open_one(const char *dir, const char *name, int flags, char **buf)
{
    char path[600];
    const int64_t sz = (int64_t)SHARD_MB << 20;
    ZrNvmeCfg cfg = {BS, QD, ZR_NVME_F_UNLINK | flags};
    ZrNvme *f = NULL;
    size_t lens[SHARDS];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (zr_nvme_open(&f, path, sz * SHARDS, &cfg)) return NULL;
    if (!zr_nvme_is_direct(f)) fprintf(stderr, "b_nvme_sum: %s is not O_DIRECT\n", path);
    for (int s = 0; s < SHARDS; s++) lens[s] = (size_t)sz;
    zr_nvme_register_buffers(f, (void *const *)buf, lens, SHARDS);
    return f;
}

int main(void)
{
    const char *dir = getenv("ZB_DIR") ? getenv("ZB_DIR") : "bench/out";
    int reps = getenv("ZB_NVME_REPS") ? atoi(getenv("ZB_NVME_REPS")) : 7;
    if (reps < 1 || reps > 31) reps = 7;
    const int64_t sz = (int64_t)SHARD_MB << 20;
    char *buf[SHARDS];
    for (int s = 0; s < SHARDS; s++) {
        buf[s] = zr_nvme_alloc((size_t)sz);
        if (!buf[s]) { fprintf(stderr, "b_nvme_sum: out of memory\n"); return 1; }
        for (int64_t i = 0; i < sz; i += 8) memcpy(buf[s] + i, &(uint64_t){(uint64_t)i * 2654435761u + (uint64_t)s}, 8);
    }
    ZrNvme *on = open_one(dir, "b_nvme_sum_on.swp", 0, buf), *off = open_one(dir, "b_nvme_sum_off.swp",
                                                                             ZR_NVME_F_NOSUM, buf);
    if (!on || !off) return 1;
    printf("b_nvme_sum: %d x %d MiB shards, bs %d, qd %d, %s, checksum stripe %lld bytes; %d reps\n",
           SHARDS, SHARD_MB, BS, QD, dir, (long long)zr_nvme_sum_stripe(on), reps);

    /* the CRC32C rate of one core, over the same buffers */
    double t0 = zb_now();
    uint32_t c = 0;
    for (int s = 0; s < SHARDS; s++) c += zr_crc32c(~0u, buf[s], (size_t)sz);
    (void)c;
    double crc_gbs = (double)sz * SHARDS / (zb_now() - t0) / 1e9;

    double ow[32], fw[32], orr[32], fr[32], rw[32], rr[32];
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
        if (r % 2 == 0) { ow[r] = pass(on, buf, 1); fw[r] = pass(off, buf, 1); }
        else { fw[r] = pass(off, buf, 1); ow[r] = pass(on, buf, 1); }
        if (r % 2 == 0) { orr[r] = pass(on, buf, 0); fr[r] = pass(off, buf, 0); }
        else { fr[r] = pass(off, buf, 0); orr[r] = pass(on, buf, 0); }
        ok = ow[r] > 0 && fw[r] > 0 && orr[r] > 0 && fr[r] > 0;
        rw[r] = ow[r] / fw[r];
        rr[r] = orr[r] / fr[r];
        printf("  rep %d: write sum %.3f nosum %.3f GB/s (%.3f)   read sum %.3f nosum %.3f GB/s (%.3f)\n",
               r, ow[r], fw[r], rw[r], orr[r], fr[r], rr[r]);
    }
    ZrNvmeSumStats st;
    zr_nvme_sum_stats(on, &st);
    zr_nvme_close(on);
    zr_nvme_close(off);
    for (int s = 0; s < SHARDS; s++) zr_nvme_free(buf[s], (size_t)sz);
    if (!ok) { fprintf(stderr, "b_nvme_sum: a pass failed\n"); return 1; }
    if (st.checked != st.read || st.mismatches) {
        fprintf(stderr, "b_nvme_sum: %lld of %lld bytes read were checked, %lld mismatches\n",
                (long long)st.checked, (long long)st.read, (long long)st.mismatches);
        return 1;
    }
    char note[400];
    snprintf(note, sizeof note, "256 MiB of 64 MiB shards, bs 1 MiB, qd 8, %s; every byte read checked; "
             "medians of %d alternated passes; CRC32C on one core here %.2f GB/s", dir, reps, crc_gbs);
    emit("nvme_swap_write_with_checksums", zb_median(ow, reps), zb_median(fw, reps),
         zb_median(rw, reps), note);
    emit("nvme_swap_read_with_checksums", zb_median(orr, reps), zb_median(fr, reps),
         zb_median(rr, reps), note);
    return 0;
}
