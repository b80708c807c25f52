/*
** t_nvme_sum.c — the swap-file checksums of zr_nvme (zr_nvme.h, zr_nvme_sum_*): what a write records
** is the CRC32C of the bytes written (checked against the software CRC, not the engine's piece-wise
** sum), a read of what was written passes and is counted as checked, a byte altered in the file
** between the write and the read (by the flip fault hook, and by another descriptor, as another
** process would) fails the read with -EBADMSG and a text naming the file, the offset, the size, what
** the range holds and what to do; the same alteration with checksums off goes unseen (so the check
** is what finds it); ranges never written are not checked; unaligned writes and reads work.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zr_crc.h"
#include "zr_nvme.h"
#include "zt.h"
#include "zt_tmp.h"

static char tmpdir[256];

#define EQ ZT_EQ_CALL                   /* the short name, used on most lines here */

static ZrNvme *open_in(const char *name, int64_t size, int flags, char *path_out)
{
    char path[512];
    ZrNvme *f = NULL;
    ZrNvmeCfg cfg = {16384, 8, ZR_NVME_F_UNLINK | flags};
    zt_tmp_path(path, sizeof path, tmpdir, name);
    if (path_out) snprintf(path_out, 512, "%s", path);
    int rc = zr_nvme_open(&f, path, size, &cfg);
    ZT_CHECKM(rc == 0 && f, "open %s: %d", path, rc);
    return rc == 0 ? f : NULL;
}

static void describe(void *ctx, const ZrNvme *f, int64_t off, int64_t bytes, char *out, size_t n)
{
    (void)f; (void)bytes;
    snprintf(out, n, "%s at %lld", (const char *)ctx, (long long)off);
}

/* What a write records is the plain CRC32C of the bytes, stripe by stripe (4096 bytes for a file
** this small): computed here with the table-driven software CRC over the source buffer. */
static void t_recorded_crc(void)
{
    const int64_t n = 100000, off = 8192;
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("rec.swp", 1 << 20, 0, NULL);
    if (!f || !src || !dst) return;
    EQ(zr_nvme_sum_stripe(f), 4096);
    zt_fill_bytes(src, n, 1);
    EQ(zr_nvme_write(f, src, n, off), 0);
    for (int64_t s = 0; s < n; s += 4096) {
        uint32_t crc = 0;
        int64_t len = 0, want = n - s < 4096 ? n - s : 4096;
        EQ(zr_nvme_sum_get(f, off + s, &crc, &len), 0);
        EQ(len, want);
        ZT_CHECKM(crc == ~zr_crc32c_sw(~0u, src + s, (size_t)want), "stripe at %lld: crc %08x",
                  (long long)(off + s), crc);
    }
    uint32_t c;
    int64_t l;
    EQ(zr_nvme_sum_get(f, 0, &c, &l), -ENOENT);          /* never written */
    EQ(zr_nvme_read(f, dst, n, off), 0);
    ZT_CHECK(memcmp(src, dst, (size_t)n) == 0);
    ZrNvmeSumStats st;
    zr_nvme_sum_stats(f, &st);
    EQ(st.read, n);
    EQ(st.checked, n);                                    /* a chunk read back as written: all of it */
    EQ(st.mismatches, 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}

/* A byte flipped in the file after the write: the read that brings it back fails, named. */
static void flip_round(int flags, const char *name)
{
    const int64_t n = 65536, off = 16384;
    char path[512], msg[1100];
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in(name, 1 << 20, flags, path);
    if (!f || !src || !dst) return;
    static char what[] = "optimizer state of sub-group 3";
    zr_nvme_set_describe(f, describe, what);
    zt_fill_bytes(src, n, 2);
    EQ(zr_nvme_fault_set("flip@3"), 0);                   /* the third of 4 pieces of 16 KiB */
    EQ(zr_nvme_write(f, src, n, off), 0);
    EQ(zr_nvme_fault_set(NULL), 0);
    EQ(zr_nvme_read(f, dst, n, off), -EBADMSG);
    snprintf(msg, sizeof msg, "%s", zr_nvme_strerror(f));
    ZT_CHECKM(strstr(msg, path) && strstr(msg, "CRC32C") && strstr(msg, "read of 65536 bytes at offset 16384")
              && strstr(msg, "the 4096 bytes at offset") && strstr(msg, "optimizer state of sub-group 3 at")
              && strstr(msg, "HINT") && strstr(msg, "resume from the last checkpoint"), "error text: %s", msg);
    ZrNvmeSumStats st;
    zr_nvme_sum_stats(f, &st);
    EQ(st.mismatches, 1);
    /* the handle goes on: written again, read back clean */
    EQ(zr_nvme_write(f, src, n, off), 0);
    EQ(zr_nvme_read(f, dst, n, off), 0);
    ZT_CHECK(memcmp(src, dst, (size_t)n) == 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}
static void t_flip_direct(void) { flip_round(0, "flip_d.swp"); }
static void t_flip_buffered(void) { flip_round(ZR_NVME_F_BUFFERED, "flip_b.swp"); }

/* Another process writes into the swap file (here: another descriptor, buffered). */
static void t_other_writer(void)
{
    const int64_t n = 40000, off = 4096;
    char path[512];
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("other.swp", 1 << 20, 0, path);
    if (!f || !src || !dst) return;
    zt_fill_bytes(src, n, 3);
    EQ(zr_nvme_write(f, src, n, off), 0);
    EQ(zr_nvme_read(f, dst, n, off), 0);
    int fd = open(path, O_WRONLY);
    ZT_CHECK(fd >= 0);
    EQ(pwrite(fd, "x", 1, off + n - 3), 1);               /* in the last, partial stripe */
    EQ(fsync(fd), 0);
    close(fd);
    EQ(zr_nvme_read(f, dst, n, off), -EBADMSG);
    ZT_CHECKM(strstr(zr_nvme_strerror(f), "at offset 40960"), "error text: %s", zr_nvme_strerror(f));
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}

/* With checksums off the same flip goes unseen: the bytes read differ and the read succeeds. */
static void t_nosum(void)
{
    const int64_t n = 65536;
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("nosum.swp", 1 << 20, ZR_NVME_F_NOSUM, NULL);
    if (!f || !src || !dst) return;
    EQ(zr_nvme_sum_stripe(f), 0);
    zt_fill_bytes(src, n, 4);
    EQ(zr_nvme_fault_set("flip@1"), 0);
    EQ(zr_nvme_write(f, src, n, 0), 0);
    EQ(zr_nvme_fault_set(NULL), 0);
    EQ(zr_nvme_read(f, dst, n, 0), 0);
    ZT_CHECK(memcmp(src, dst, (size_t)n) != 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}

/* Unaligned memory, offset and size (bounce pieces, edge read-modify-write): the stripes a write
** covers whole from their start are recorded and checked; one that a write starts inside is not. */
static void t_unaligned(void)
{
    const int64_t n = 50001, off = 777;
    uint8_t *src = malloc((size_t)n + 1), *dst = malloc((size_t)n + 1);
    ZrNvme *f = open_in("unal.swp", 1 << 20, 0, NULL);
    if (!f || !src || !dst) { free(src); free(dst); zr_nvme_close(f); return; }
    zt_fill_bytes(src + 1, n, 5);
    EQ(zr_nvme_write(f, src + 1, n, off), 0);
    EQ(zr_nvme_read(f, dst + 1, n, off), 0);
    ZT_CHECK(memcmp(src + 1, dst + 1, (size_t)n) == 0);
    ZrNvmeSumStats st;
    zr_nvme_sum_stats(f, &st);
    EQ(st.checked, off + n - 4096);                       /* all but the stripe the write began inside */
    uint32_t c;
    int64_t l;
    EQ(zr_nvme_sum_get(f, 0, &c, &l), -ENOENT);
    EQ(zr_nvme_sum_get(f, 4096, &c, &l), 0);
    ZT_CHECK(c == ~zr_crc32c_sw(~0u, src + 1 + (4096 - off), 4096));
    /* a read of a part of it checks the stripes it covers whole */
    EQ(zr_nvme_read(f, dst + 1, 9000, 4096), 0);
    ZrNvmeSumStats st2;
    zr_nvme_sum_stats(f, &st2);
    EQ(st2.checked - st.checked, 8192);
    EQ(zr_nvme_close(f), 0);
    free(src); free(dst);
}

/* A fresh file: nothing recorded, nothing checked; the fault spec takes flip for writes only. */
static void t_unwritten(void)
{
    const int64_t n = 32768;
    uint8_t *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("fresh.swp", n, 0, NULL);
    if (!f || !dst) return;
    EQ(zr_nvme_read(f, dst, n, 0), 0);
    ZrNvmeSumStats st;
    zr_nvme_sum_stats(f, &st);
    EQ(st.read, n);
    EQ(st.checked, 0);
    EQ(zr_nvme_fault_set("flip@1:r"), -EINVAL);
    EQ(zr_nvme_fault_set("flip@2:w,eio@9"), 0);
    EQ(zr_nvme_fault_set(NULL), 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(dst, n);
}

/* The hardware CRC (three lanes joined by shifts for long buffers) against the table-driven one,
** over lengths and alignments that reach every path: head bytes, long and short lane blocks, tail. */
static void t_crc_lanes(void)
{
    const size_t n = 3 * 8192 * 2 + 3 * 256 * 3 + 77;
    uint8_t *b = malloc(n + 8);
    if (!b) return;
    zt_fill_bytes(b, (int64_t)n + 8, 9);
    static const size_t lens[] = {0, 1, 7, 8, 767, 768, 769, 3 * 256 * 5 + 13, 4096, 24575, 24576,
                                  24577, 3 * 8192 + 3 * 256 + 5, 65536 - 8};
    int bad = 0;
    for (size_t a = 0; a < 8; a++)
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            size_t len = lens[i] < n - a ? lens[i] : n - a;
            uint32_t hw = zr_crc32c(0x1234567u, b + a, len), sw = zr_crc32c_sw(0x1234567u, b + a, len);
            if (hw != sw && bad++ < 5) ZT_CHECKM(0, "offset %zu length %zu: %08x vs %08x", a, len, hw, sw);
        }
    ZT_CHECK(zr_crc32c(0, "123456789", 9) == 0xE3069283u);     /* RFC 3720 check value */
    free(b);
}

int main(void)
{
    if (zt_tmpdir_make(tmpdir, sizeof tmpdir, "nvmes")) return 1;
    ZT_RUN(t_crc_lanes);
    ZT_RUN(t_recorded_crc);
    ZT_RUN(t_flip_direct);
    ZT_RUN(t_flip_buffered);
    ZT_RUN(t_other_writer);
    ZT_RUN(t_nosum);
    ZT_RUN(t_unaligned);
    ZT_RUN(t_unwritten);
    rmdir(tmpdir);
    return zt_end();
}
