/*
** t_nvme_faults.c — zr_nvme under injected faults (zr_nvme_fault_set, the hook ZR_NVME_FAULT drives
** in the trainer) and the swap-directory check of zr_nvme_open: EIO on a write and on a read (the
** request fails naming file, offset and size; the handle stays usable), every completion short (the
** engine resubmits the rest; data intact, O_DIRECT and buffered), an EAGAIN storm that is absorbed
** and one that is not (a named EAGAIN, not a hang), bad fault specs refused, and nvme_path values
** that are a regular file, a dangling symlink, a device, /proc or read-only, refused at open.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zr_nvme.h"
#include "zt.h"
#include "zt_tmp.h"

static char tmpdir[256];

#define EQ ZT_EQ_CALL                   /* the short name, used on most lines here */

static ZrNvme *open_in(const char *name, int64_t size, int flags)
{
    char path[512];
    ZrNvme *f = NULL;
    ZrNvmeCfg cfg = {16384, 8, ZR_NVME_F_UNLINK | flags};
    zt_tmp_path(path, sizeof path, tmpdir, name);
    int rc = zr_nvme_open(&f, path, size, &cfg);
    ZT_CHECKM(rc == 0 && f, "open %s: %d", path, rc);
    return rc == 0 ? f : NULL;
}

static void t_fault_spec(void)
{
    static const char *const bad[] = {"eio", "eio@", "eio@0", "foo@1", "eio@1x0", "eio@1:z", "eio@1;",
                                      "eio@1,eio@2,eio@3,eio@4,eio@5", "short@-3", "eagain@1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ZT_CHECKM(zr_nvme_fault_set(bad[i]) == -EINVAL, "spec '%s' accepted", bad[i]);
    EQ(zr_nvme_fault_set("eio@3x2:w,short@1,eagain@7:r"), 0);
    EQ(zr_nvme_fault_set(""), 0);
    EQ(zr_nvme_fault_set(NULL), 0);
}

static void t_eio_write_then_read(void)
{
    const int64_t n = 65536;
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("eio.swp", n, 0);
    if (!f || !src || !dst) return;
    zt_fill_bytes(src, n, 1);
    EQ(zr_nvme_fault_set("eio@2:w"), 0);
    EQ(zr_nvme_write(f, src, n, 0), -EIO);
    ZT_CHECKM(strstr(zr_nvme_strerror(f), "eio.swp") && strstr(zr_nvme_strerror(f), "write of 65536") &&
              strstr(zr_nvme_strerror(f), "Input/output error"), "error text: %s", zr_nvme_strerror(f));
    EQ(zr_nvme_write(f, src, n, 0), 0);                 /* the rule is spent: the handle works */
    EQ(zr_nvme_fault_set("eio@1:r"), 0);
    EQ(zr_nvme_read(f, dst, n, 0), -EIO);
    ZT_CHECKM(strstr(zr_nvme_strerror(f), "read of 65536"), "error text: %s", zr_nvme_strerror(f));
    EQ(zr_nvme_read(f, dst, n, 0), 0);
    ZT_CHECK(memcmp(src, dst, (size_t)n) == 0);
    EQ(zr_nvme_fault_set(NULL), 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}

/* Every completion moves half of what it was asked: the data must still arrive whole. */
static void short_round_trip(int flags, int64_t off, int64_t n)
{
    uint8_t *src = malloc((size_t)n + 1), *dst = malloc((size_t)n + 1);
    ZrNvme *f = open_in(flags ? "short_b.swp" : "short_d.swp", off + n, flags);
    if (!f || !src || !dst) { free(src); free(dst); zr_nvme_close(f); return; }
    zt_fill_bytes(src + 1, n, 2);
    EQ(zr_nvme_fault_set("short@1x100000000"), 0);
    EQ(zr_nvme_write(f, src + 1, n, off), 0);
    EQ(zr_nvme_read(f, dst + 1, n, off), 0);
    EQ(zr_nvme_fault_set(NULL), 0);
    ZT_CHECKM(memcmp(src + 1, dst + 1, (size_t)n) == 0, "data differs after short transfers (flags %d)", flags);
    memset(dst, 0, (size_t)n + 1);
    EQ(zr_nvme_read(f, dst + 1, n, off), 0);             /* and read again without faults */
    ZT_CHECK(memcmp(src + 1, dst + 1, (size_t)n) == 0);
    EQ(zr_nvme_close(f), 0);
    free(src); free(dst);
}
static void t_short_direct(void) { short_round_trip(0, 8192, 200000); }
static void t_short_buffered(void) { short_round_trip(ZR_NVME_F_BUFFERED, 777, 100001); }

static void t_eagain_storm(void)
{
    const int64_t n = 32768;
    uint8_t *src = zr_nvme_alloc(n), *dst = zr_nvme_alloc(n);
    ZrNvme *f = open_in("again.swp", n, 0);
    if (!f || !src || !dst) return;
    zt_fill_bytes(src, n, 3);
    EQ(zr_nvme_fault_set("eagain@1x600"), 0);            /* absorbed: retried */
    EQ(zr_nvme_write(f, src, n, 0), 0);
    EQ(zr_nvme_read(f, dst, n, 0), 0);
    ZT_CHECK(memcmp(src, dst, (size_t)n) == 0);
    EQ(zr_nvme_fault_set("eagain@1x100000"), 0);         /* never ends: a named error, not a hang */
    EQ(zr_nvme_read(f, dst, n, 0), -EAGAIN);
    ZT_CHECKM(strstr(zr_nvme_strerror(f), "again.swp") && strstr(zr_nvme_strerror(f), "errno 11"),
              "error text: %s", zr_nvme_strerror(f));
    EQ(zr_nvme_fault_set(NULL), 0);
    EQ(zr_nvme_read(f, dst, n, 0), 0);
    EQ(zr_nvme_close(f), 0);
    zr_nvme_free(src, n); zr_nvme_free(dst, n);
}

static void t_check_dir(void)
{
    char msg[1024], p[600], q[600];
    EQ(zr_nvme_check_dir(tmpdir, msg, sizeof msg) >= 0, 1);
    snprintf(p, sizeof p, "%s/regular", tmpdir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    EQ(zr_nvme_check_dir(p, msg, sizeof msg), -ENOTDIR);
    ZT_CHECKM(strstr(msg, p) && strstr(msg, "regular file") && strstr(msg, "HINT"), "msg: %s", msg);
    snprintf(q, sizeof q, "%s/dangling", tmpdir);
    ZT_CHECK(symlink("/nonexistent/zgen/dir", q) == 0);
    EQ(zr_nvme_check_dir(q, msg, sizeof msg), -ENOENT);
    ZT_CHECKM(strstr(msg, "dangling symlink"), "msg: %s", msg);
    EQ(zr_nvme_check_dir("/dev/null", msg, sizeof msg), -ENOTDIR);
    ZT_CHECKM(strstr(msg, "a device"), "msg: %s", msg);
    EQ(zr_nvme_check_dir("/proc", msg, sizeof msg), -EINVAL);
    ZT_CHECKM(strstr(msg, "proc"), "msg: %s", msg);
    /* zr_nvme_open refuses a swap file whose directory is a regular file, before creating anything */
    {
        char sw[700];
        ZrNvme *f = NULL;
        snprintf(sw, sizeof sw, "%s/x.swp", p);
        EQ(zr_nvme_open(&f, sw, 8192, NULL), -ENOTDIR);
        ZT_CHECK(f == NULL);
    }
    if (geteuid() != 0) {
        char ro[600];
        snprintf(ro, sizeof ro, "%s/ro", tmpdir);
        mkdir(ro, 0500);
        EQ(zr_nvme_check_dir(ro, msg, sizeof msg), -EACCES);
        ZT_CHECKM(strstr(msg, "not writable"), "msg: %s", msg);
        rmdir(ro);
    }
    unlink(p);
    unlink(q);
}

int main(void)
{
    if (zt_tmpdir_make(tmpdir, sizeof tmpdir, "nvmef")) return 1;
    ZT_RUN(t_fault_spec);
    ZT_RUN(t_eio_write_then_read);
    ZT_RUN(t_short_direct);
    ZT_RUN(t_short_buffered);
    ZT_RUN(t_eagain_storm);
    ZT_RUN(t_check_dir);
    rmdir(tmpdir);
    return zt_end();
}
