/*
** zr_nvme.c — the life of a swap file: open with O_DIRECT (buffered where the file system refuses it),
** reserve its size up front so that a full disk shows before step 1, set up the ring with the file and
** the caller's pinned buffers registered, and close. The request engine is in zr_nvme_io.c, which
** this file calls and which never calls it; both take their aligned buffers from zr_nvme_buf.c.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "zr_nvme_int.h"

static atomic_int said_buffered;     /* the buffered-fallback note is printed once per process */

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static void human(char *out, size_t n, int64_t bytes)
{
    if (bytes >= (1LL << 30)) snprintf(out, n, "%.2f GiB", (double)bytes / (1 << 30));
    else if (bytes >= (1LL << 20)) snprintf(out, n, "%.2f MiB", (double)bytes / (1 << 20));
    else snprintf(out, n, "%lld bytes", (long long)bytes);
}

/* Where fallocate is unsupported, write zeros so the blocks are really allocated (a sparse
** ftruncate alone would let a full disk surface in the middle of training). */
static int fill_zeros(int fd, int64_t from, int64_t to)
{
    const int64_t chunk = 1 << 20;
    char *z = zr_nvme_alloc((size_t)chunk);
    if (!z) return -ENOMEM;
    int rc = 0;
    for (int64_t o = from; o < to && !rc;) {
        int64_t n = to - o < chunk ? to - o : chunk;
        ssize_t w = pwrite(fd, z, (size_t)n, o);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = -errno;
        else if (w == 0) rc = -ENOSPC;
        else o += w;
    }
    zr_nvme_free(z, (size_t)chunk);
    return rc;
}

static int reserve(int fd, int64_t from, int64_t size)
{
    if (size <= from) return 0;
    if (fallocate(fd, 0, from, size - from) == 0) return 0;
    int e = errno;
    if (e != EOPNOTSUPP && e != ENOSYS) return -e;
    if (ftruncate(fd, size) != 0) return -errno;
    return fill_zeros(fd, from, size);
}

static int open_file(const char *path, int flags, int *direct)
{
    int oflags = O_RDWR | O_CREAT | O_CLOEXEC | ((flags & ZR_NVME_F_KEEP) ? 0 : O_TRUNC);
    *direct = 0;
    if (!(flags & ZR_NVME_F_BUFFERED) && !getenv("ZR_NVME_NO_DIRECT")) {
        int fd = open(path, oflags | O_DIRECT, 0644);
        if (fd >= 0) { *direct = 1; return fd; }
        if (errno != EINVAL) return -errno;
        if (atomic_exchange(&said_buffered, 1) == 0)
            fprintf(stderr, "zr_nvme: %s: the file system refuses O_DIRECT; using buffered I/O "
                    "(slower, and it competes for the page cache)\n", path);
    }
    int fd = open(path, oflags, 0644);
    return fd >= 0 ? fd : -errno;
}

/* {===== the swap directory check (zr_nvme.h) */
static const struct { long magic; const char *name; } pseudo_fs[] = {
    {PROC_SUPER_MAGIC, "proc"}, {SYSFS_MAGIC, "sysfs"}, {DEVPTS_SUPER_MAGIC, "devpts"},
    {CGROUP_SUPER_MAGIC, "cgroup"}, {CGROUP2_SUPER_MAGIC, "cgroup2"}, {DEBUGFS_MAGIC, "debugfs"},
    {SECURITYFS_MAGIC, "securityfs"}, {TRACEFS_MAGIC, "tracefs"}, {BPF_FS_MAGIC, "bpf"},
};

int zr_nvme_check_dir(const char *dir, char *msg, size_t n)
{
    static const char hint[] = "HINT: point nvme_path (or ZG_NVME_DIR) at a directory on a local disk";
    struct stat st;
    struct statfs fs;
    char probe[4200];
    int fd, direct = 1;
    if (!dir || !*dir) dir = ".";
    if (stat(dir, &st) != 0) {
        int e = errno;
        struct stat lst;
        snprintf(msg, n, "swap directory %s %s: %s; %s", dir,
                 lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode) ? "is a dangling symlink" : "cannot be used",
                 strerror(e), hint);
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(msg, n, "swap directory %s is not a directory (it is %s); %s", dir,
                 S_ISREG(st.st_mode) ? "a regular file" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ?
                 "a device" : "not a directory", hint);
        return -ENOTDIR;
    }
    if (statfs(dir, &fs) == 0)
        for (size_t i = 0; i < sizeof pseudo_fs / sizeof pseudo_fs[0]; i++)
            if ((long)fs.f_type == pseudo_fs[i].magic) {
                snprintf(msg, n, "swap directory %s is on %s, a pseudo file system that cannot hold "
                         "swap data; %s", dir, pseudo_fs[i].name, hint);
                return -EINVAL;
            }
    static atomic_int seq;
    snprintf(probe, sizeof probe, "%s/.zr_nvme_probe.%ld.%d", dir, (long)getpid(), atomic_fetch_add(&seq, 1));
    fd = open(probe, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
    if (fd < 0 && errno == EINVAL) {
        direct = 0;
        unlink(probe);            /* some file systems (ramfs) create the file, then refuse O_DIRECT */
        fd = open(probe, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        int e = errno;
        snprintf(msg, n, "swap directory %s is not writable: creating a file there failed: %s; %s", dir,
                 strerror(e), hint);
        return -e;
    }
    close(fd);
    unlink(probe);
    snprintf(msg, n, "swap directory %s: %s", dir, direct ? "O_DIRECT" :
             "the file system refuses O_DIRECT; swap I/O there is buffered (slower, and it competes "
             "for the page cache)");
    return direct;
}
/* }===== */

int zr_nvme_open(ZrNvme **out, const char *path, int64_t size_bytes, const ZrNvmeCfg *cfg)
{
    ZrNvmeCfg d = {0, 0, 0};
    if (!cfg) cfg = &d;
    *out = NULL;
    if (!path || size_bytes < 0 || cfg->block_size < 0 || cfg->queue_depth < 0 ||
        cfg->queue_depth > ZR_NVME_QD_MAX) {
        fprintf(stderr, "zr_nvme: bad arguments to open %s (size %lld, block %lld, qd %d)\n",
                path ? path : "(null)", (long long)size_bytes, (long long)cfg->block_size,
                cfg->queue_depth);
        return -EINVAL;
    }
    if (zr_nvme_fault_env() != 0) return -EINVAL;
    {
        /* the directory first: a bad nvme_path is named as such, before any file is made */
        char dir[4096], msg[4600];
        const char *slash = strrchr(path, '/');
        int rc = 0;
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == path) snprintf(dir, sizeof dir, "/");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        if ((rc = zr_nvme_check_dir(dir, msg, sizeof msg)) < 0) {
            fprintf(stderr, "zr_nvme: cannot open swap file %s: %s\n", path, msg);
            return rc;
        }
    }
    ZrNvme *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    f->fd = -1;
    f->flags = cfg->flags;
    if (getenv("ZR_NVME_NOSUM") && *getenv("ZR_NVME_NOSUM") && strcmp(getenv("ZR_NVME_NOSUM"), "0"))
        f->flags |= ZR_NVME_F_NOSUM;      /* the user's switch: checksums off for every handle */
    f->bs = round_up(cfg->block_size ? cfg->block_size : ZR_NVME_BLOCK_DEFAULT, ZR_NVME_ALIGN);
    f->qd = cfg->queue_depth ? cfg->queue_depth : ZR_NVME_QD_DEFAULT;
    f->size = round_up(size_bytes, ZR_NVME_ALIGN);
    f->path = strdup(path);
    f->pieces = calloc((size_t)f->qd, sizeof *f->pieces);
    f->bounce = calloc((size_t)f->qd, sizeof *f->bounce);
    if (!f->path || !f->pieces || !f->bounce) { zr_nvme_close(f); return -ENOMEM; }

    int rc = open_file(path, f->flags, &f->direct);
    if (rc < 0) {
        fprintf(stderr, "zr_nvme: cannot open swap file %s: %s\n", path, strerror(-rc));
        zr_nvme_close(f);
        return rc;
    }
    f->fd = rc;
    struct stat st;
    int64_t have = fstat(f->fd, &st) == 0 ? (int64_t)st.st_size : 0;
    rc = reserve(f->fd, (f->flags & ZR_NVME_F_KEEP) ? have : 0, f->size);
    if (rc < 0) {
        char need[32], avail[32] = "unknown";
        struct statvfs vs;
        human(need, sizeof need, f->size);
        if (fstatvfs(f->fd, &vs) == 0)
            human(avail, sizeof avail, (int64_t)vs.f_bavail * (int64_t)vs.f_frsize);
        fprintf(stderr, "zr_nvme: cannot reserve %lld bytes (%s) for swap file %s: %s "
                "(free on that file system: %s)\n---> HINT: %s\n", (long long)f->size, need, path,
                strerror(-rc), avail, rc == -EFBIG ? "raise the file-size limit (ulimit -f)"
                : "free space there, or move the swap directory to a file system with room "
                  "(nvme_path in the config; ZG_NVME_DIR for the trainer)");
        if (!(f->flags & ZR_NVME_F_KEEP)) f->flags |= ZR_NVME_F_UNLINK;
        zr_nvme_close(f);
        return rc;
    }

    rc = io_uring_queue_init((unsigned)f->qd, &f->ring, 0);
    if (rc < 0) {
        fprintf(stderr, "zr_nvme: io_uring setup (%d entries) for %s failed: %s\n", f->qd, path,
                strerror(-rc));
        zr_nvme_close(f);
        return rc;
    }
    f->ring_ok = 1;
    f->fixed_file = io_uring_register_files(&f->ring, &f->fd, 1) == 0;
    if ((rc = zr_nvme_sum_setup(f)) < 0) {
        fprintf(stderr, "zr_nvme: no memory for the checksum table of swap file %s\n", path);
        zr_nvme_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

int zr_nvme_close(ZrNvme *f)
{
    if (!f) return 0;
    int rc = 0;
    if (f->ring_ok) {
        rc = zr_nvme_wait_all(f);
        io_uring_queue_exit(&f->ring);
    }
    if (f->fd >= 0) close(f->fd);
    if ((f->flags & ZR_NVME_F_UNLINK) && f->path) unlink(f->path);
    if (f->bounce && !f->bounce_given)
        for (int i = 0; i < f->qd; i++) zr_nvme_free(f->bounce[i], (size_t)f->bs);
    free(f->bounce);
    free(f->pieces);
    free(f->reg_base);
    free(f->reg_len);
    free(f->sum_crc);
    free(f->sum_len);
    free(f->sum_seen);
    free(f->path);
    free(f);
    return rc;
}

int zr_nvme_use_bounce(ZrNvme *f, void *mem, int64_t bytes)
{
    if (!f || !mem || (uintptr_t)mem % ZR_NVME_ALIGN || bytes < (int64_t)f->qd * f->bs) return -EINVAL;
    if (f->bounce_given) return 0;
    for (int i = 0; i < f->qd; i++)
        if (f->bounce[i]) return -EBUSY;
    for (int i = 0; i < f->qd; i++) f->bounce[i] = (char *)mem + (size_t)i * (size_t)f->bs;
    f->bounce_given = 1;
    return 0;
}

int zr_nvme_is_direct(const ZrNvme *f) { return f->direct; }
int64_t zr_nvme_block_size(const ZrNvme *f) { return f->bs; }
int zr_nvme_queue_depth(const ZrNvme *f) { return f->qd; }
const char *zr_nvme_path(const ZrNvme *f) { return f->path; }
const char *zr_nvme_strerror(const ZrNvme *f) { return f->err; }
int zr_nvme_registered(const ZrNvme *f) { return f->nreg; }

int zr_nvme_register_buffers(ZrNvme *f, void *const *bufs, const size_t *bytes, int n)
{
    if (f->nreqs) return -EBUSY;
    if (n < 0 || (n > 0 && (!bufs || !bytes))) return -EINVAL;
    if (f->nreg) io_uring_unregister_buffers(&f->ring);
    f->nreg = 0;
    free(f->reg_base); free(f->reg_len);
    f->reg_base = NULL; f->reg_len = NULL;
    if (n == 0) return 0;
    struct iovec *iov = calloc((size_t)n, sizeof *iov);
    f->reg_base = calloc((size_t)n, sizeof *f->reg_base);
    f->reg_len = calloc((size_t)n, sizeof *f->reg_len);
    if (!iov || !f->reg_base || !f->reg_len) { free(iov); return -ENOMEM; }
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = bytes[i];
        f->reg_base[i] = bufs[i];
        f->reg_len[i] = bytes[i];
    }
    if (io_uring_register_buffers(&f->ring, iov, (unsigned)n) == 0) f->nreg = n;
    free(iov);
    return 0;
}

int zr_nvme_sync(ZrNvme *f)
{
    int rc = zr_nvme_wait_all(f);
    if (rc) return rc;
    if (fdatasync(f->fd) != 0) {
        rc = -errno;
        snprintf(f->err, sizeof f->err, "zr_nvme: fdatasync of %s: %s", f->path, strerror(-rc));
    }
    return rc;
}
