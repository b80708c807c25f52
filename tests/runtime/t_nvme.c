/*
** t_nvme.c — zr_nvme swap files: round trips with odd sizes, offsets and addresses against an
** in-memory shadow of the file, many requests in flight, unaligned writes sharing sectors, O_DIRECT on
** the repo's disk and the buffered fallback (a ramfs refuses O_DIRECT), registered buffers, and full
** disks: a small tmpfs (ENOSPC at open and mid-run) and RLIMIT_FSIZE (EFBIG) in a child. Each error
** must name the file and leave the data written before it intact.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zr_nvme.h"
#include "zt.h"
#include "zt_tmp.h"

static char tmpdir[256];

#define EQ ZT_EQ_CALL                   /* the short name, used on most lines here */

static uint8_t pat(int64_t pos, unsigned seed)
{
    uint64_t x = (uint64_t)pos * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint8_t)(x ^ (x >> 17));
}

static void fill(uint8_t *b, int64_t n, int64_t pos, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) b[i] = pat(pos + i, seed);
}

/* Captures what fn writes on stderr into buf. */
static void capture_stderr(char *buf, size_t n, void (*fn)(void *), void *arg)
{
    char tpl[] = "/tmp/zt_stderr_XXXXXX";
    int tfd = mkstemp(tpl), saved = dup(2);
    fflush(stderr);
    dup2(tfd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t got = pread(tfd, buf, n - 1, 0);
    buf[got > 0 ? got : 0] = 0;
    close(tfd);
    unlink(tpl);
}

/* Writes random-sized pieces at odd offsets from odd addresses, mirrors them in a shadow, then reads
** the whole file and odd ranges back and compares. */
static void odd_round_trip(const char *dir, const char *name, int flags, int want_direct)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, dir, name);
    const int64_t size = (3 << 20) + 12345;
    ZrNvmeCfg cfg = {64 << 10, 4, flags | ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    EQ(zr_nvme_open(&f, path, size, &cfg), 0);
    if (!f) return;
    if (want_direct >= 0) EQ(zr_nvme_is_direct(f), want_direct);
    uint8_t *shadow = calloc(1, (size_t)size), *buf = malloc((size_t)size + 64);
    const int64_t offs[] = {0, 1, 511, 4095, 4097, (1 << 20) - 3, (2 << 20) + 123, 8192};
    const int64_t lens[] = {1, 3, 4095, 4096, 4097, (1 << 20) + 1, 100000, 65536 * 3};
    unsigned seed = 1;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++, seed++) {
            int64_t o = offs[i], n = lens[j];
            if (o + n > size) n = size - o;
            uint8_t *src = buf + (seed % 3 == 0 ? 0 : seed % 7 + 1);   /* aligned, or not */
            fill(src, n, o, seed);
            int rc = zr_nvme_write(f, src, n, o);
            ZT_CHECKM(rc == 0, "write %lld at %lld: %d %s", (long long)n, (long long)o, rc,
                      zr_nvme_strerror(f));
            memcpy(shadow + o, src, (size_t)n);
        }
    memset(buf, 0xAB, (size_t)size);
    EQ(zr_nvme_read(f, buf, size, 0), 0);
    ZT_CHECK(memcmp(buf, shadow, (size_t)size) == 0);
    for (int i = 0; i < 8; i++) {
        int64_t o = offs[i] + 17 * i, n = lens[(i + 3) % 8];
        if (o + n > size) n = size - o;
        uint8_t *dst = buf + i % 5;
        memset(dst, 0, (size_t)n);
        EQ(zr_nvme_read(f, dst, n, o), 0);
        ZT_CHECKM(memcmp(dst, shadow + o, (size_t)n) == 0, "read %lld at %lld", (long long)n,
                  (long long)o);
    }
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
    ZT_CHECK(access(path, F_OK) != 0);                  /* ZR_NVME_F_UNLINK */
    free(shadow); free(buf);
}

static void t_direct_odd_round_trip(void) { odd_round_trip(tmpdir, "odd.swp", 0, 1); }

/* Bounce buffers in caller memory (zr_nvme_use_bounce): too little or misaligned memory is refused;
** given, unaligned pieces go through it (it is written to) and round-trip as before. */
static void t_given_bounce(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "bounce.swp");
    ZrNvmeCfg cfg = {64 << 10, 4, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    EQ(zr_nvme_open(&f, path, 1 << 20, &cfg), 0);
    if (!f) return;
    size_t bytes = 4 * (64 << 10);
    uint8_t *pool = zr_nvme_alloc(bytes + 4096);
    EQ(zr_nvme_use_bounce(f, pool, (int64_t)bytes - 1), -EINVAL);
    EQ(zr_nvme_use_bounce(f, pool + 1, (int64_t)bytes), -EINVAL);
    memset(pool, 0x5A, bytes);
    EQ(zr_nvme_use_bounce(f, pool, (int64_t)bytes), 0);
    uint8_t src[5000], dst[5000];
    fill(src, sizeof src, 777, 9);
    EQ(zr_nvme_write(f, src + 1, 4000, 777), 0);
    memset(dst, 0, sizeof dst);
    EQ(zr_nvme_read(f, dst, 4000, 777), 0);
    ZT_CHECK(memcmp(dst, src + 1, 4000) == 0);
    int used = 0;
    for (size_t i = 0; i < bytes; i++) used |= pool[i] != 0x5A;
    ZT_CHECKM(used, "the unaligned pieces did not go through the given bounce memory");
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
    zr_nvme_free(pool, bytes + 4096);
}
static void t_buffered_flag_round_trip(void)
{
    odd_round_trip(tmpdir, "odd_buf.swp", ZR_NVME_F_BUFFERED, 0);
}
/* /dev/shm is tmpfs: O_DIRECT there depends on the kernel (6.6+ accept it); either way it works. */
static void t_devshm_round_trip(void)
{
    if (access("/dev/shm", W_OK) != 0) ZT_SKIP("no writable /dev/shm");
    odd_round_trip("/dev/shm", "zt_nvme_odd.swp", 0, -1);
}

static void t_aligned_large_pieces(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "big.swp");
    const int64_t size = 6 << 20;
    ZrNvmeCfg cfg = {0, 0, ZR_NVME_F_UNLINK};            /* defaults: 1 MiB, qd 8 */
    ZrNvme *f = NULL;
    EQ(zr_nvme_open(&f, path, size, &cfg), 0);
    if (!f) return;
    EQ(zr_nvme_block_size(f), 1 << 20);
    EQ(zr_nvme_queue_depth(f), 8);
    uint8_t *a = zr_nvme_alloc((size_t)size), *b = zr_nvme_alloc((size_t)size);
    void *bufs[2] = {a, b};
    size_t lens[2] = {(size_t)size, (size_t)size};
    EQ(zr_nvme_register_buffers(f, bufs, lens, 2), 0);
    EQ(zr_nvme_registered(f), 2);                 /* root: no memlock limit */
    fill(a, size, 0, 77);
    ZrNvmeReq w = {0}, r = {0};
    EQ(zr_nvme_write_async(f, a, size, 0, &w), 0);
    if (!zr_nvme_done(&w))      /* a fast disk (or a slow sanitized CPU) may finish it at once */
        EQ(zr_nvme_write_async(f, a, 4096, 0, &w), -EBUSY);   /* in flight: not reusable */
    EQ(zr_nvme_wait(f, &w), 0);
    EQ(zr_nvme_read_async(f, b, size, 0, &r), 0);
    EQ(zr_nvme_wait(f, &r), 0);
    ZT_CHECK(memcmp(a, b, (size_t)size) == 0);
    EQ(zr_nvme_sync(f), 0);
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
    zr_nvme_free(a, (size_t)size); zr_nvme_free(b, (size_t)size);
}

/* 300 requests queued before any wait; reaped in reverse order; many share 4 KiB sectors. */
static void t_many_in_flight(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "many.swp");
    enum { N = 300, LEN = 9001 };
    const int64_t size = (int64_t)N * LEN;
    ZrNvmeCfg cfg = {16 << 10, 16, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    EQ(zr_nvme_open(&f, path, size, &cfg), 0);
    if (!f) return;
    uint8_t *src = malloc((size_t)size), *dst = malloc((size_t)size + 1);
    fill(src, size, 0, 5);
    static ZrNvmeReq req[N];
    memset(req, 0, sizeof req);
    int max_inflight = 0;
    for (int i = 0; i < N; i++) {
        int64_t k = (int64_t)(i * 7 % N);              /* scattered order, disjoint ranges */
        EQ(zr_nvme_write_async(f, src + k * LEN, LEN, k * LEN, &req[i]), 0);
        int q = zr_nvme_poll(f);
        if (q > max_inflight) max_inflight = q;
    }
    ZT_CHECKM(max_inflight > 16, "requests queued at once: %d", max_inflight);
    for (int i = N - 1; i >= 0; i--) EQ(zr_nvme_wait(f, &req[i]), 0);
    EQ(zr_nvme_wait_all(f), 0);
    for (int i = 0; i < N; i++) {
        int64_t k = (int64_t)(i * 11 % N);
        EQ(zr_nvme_read_async(f, dst + 1 + k * LEN, LEN, k * LEN, &req[i]), 0);
    }
    int left = N, rounds = 0;                  /* progress with a timeout drives them all home */
    while (left > 0 && rounds++ < 100000) left = zr_nvme_progress(f, 1000);
    EQ(left, 0);
    for (int i = 0; i < N; i++) ZT_CHECK(zr_nvme_done(&req[i]));
    ZT_CHECK(memcmp(src, dst + 1, (size_t)size) == 0);
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
    free(src); free(dst);
}

/* Neighbouring unaligned writes queued back to back share 4 KiB sectors: each read-modify-writes its
** edge sectors, so without ordering one would write back stale bytes of the other. */
static void t_shared_sectors(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "shared.swp");
    enum { N = 1500, LEN = 1000 };
    const int64_t size = (int64_t)N * LEN;
    ZrNvmeCfg cfg = {4096, 32, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    EQ(zr_nvme_open(&f, path, size, &cfg), 0);
    if (!f) return;
    uint8_t *src = malloc((size_t)size), *dst = malloc((size_t)size);
    fill(src, size, 0, 6);
    static ZrNvmeReq req[N];
    memset(req, 0, sizeof req);
    for (int i = 0; i < N; i++) {
        int64_t o = (int64_t)i * LEN;
        EQ(zr_nvme_write_async(f, src + o, LEN, o, &req[i]), 0);
    }
    EQ(zr_nvme_wait_all(f), 0);
    EQ(zr_nvme_read(f, dst, size, 0), 0);
    int64_t bad = 0;
    for (int64_t i = 0; i < size; i++) bad += src[i] != dst[i];
    ZT_CHECKM(bad == 0, "%lld bytes differ", (long long)bad);
    int rc = zr_nvme_close(f);
    EQ(rc, 0);
    free(src); free(dst);
}

static void t_errors(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "err.swp");
    ZrNvme *f = NULL;
    ZrNvmeCfg cfg = {0, 0, ZR_NVME_F_UNLINK};
    ZrNvmeCfg bad = {0, ZR_NVME_QD_MAX + 1, 0};
    EQ(zr_nvme_open(&f, path, 8192, &bad), -EINVAL);
    EQ(zr_nvme_open(&f, path, 8192, &cfg), 0);
    if (!f) return;
    char buf[100];
    EQ(zr_nvme_read(f, buf, 100, 8192 + 50), -ENODATA);   /* past the end */
    ZT_CHECKM(strstr(zr_nvme_strerror(f), path) && strstr(zr_nvme_strerror(f), "8242"),
              "error text: %s", zr_nvme_strerror(f));
    EQ(zr_nvme_read(f, buf, -1, 0), -EINVAL);
    EQ(zr_nvme_read(f, buf, 100, 8100), -ENODATA);        /* crosses the end */
    EQ(zr_nvme_read(f, buf, 92, 8100), 0);                /* up to the end: fine */
    ZrNvmeReq never = {0};
    EQ(zr_nvme_wait(f, &never), -EINVAL);
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
}

struct mnt { const char *type, *opts; char dir[300]; };

static int mount_tmp(struct mnt *m)
{
    snprintf(m->dir, sizeof m->dir, "%s/mnt_%s", tmpdir, m->type);
    if (mkdir(m->dir, 0755) != 0) return -errno;
    if (mount(m->type, m->dir, m->type, 0, m->opts) != 0) { rmdir(m->dir); return -errno; }
    return 0;
}

/* The ring drops its reference to a registered file asynchronously after io_uring_queue_exit, so
** umount can say EBUSY for a moment after zr_nvme_close: retry, then detach lazily. */
static void umount_tmp(struct mnt *m)
{
    for (int i = 0; i < 200 && umount(m->dir) != 0; i++) {
        if (errno != EBUSY) break;
        usleep(10000);
    }
    if (rmdir(m->dir) != 0) { umount2(m->dir, MNT_DETACH); rmdir(m->dir); }
}

struct open_args { const char *path; int64_t size; int rc; ZrNvme *f; };
static void do_open(void *x)
{
    struct open_args *o = x;
    ZrNvmeCfg cfg = {0, 0, 0};
    o->rc = zr_nvme_open(&o->f, o->path, o->size, &cfg);
}

/* ramfs refuses O_DIRECT (and fallocate): buffered fallback, said once; zero-filled reservation. */
static void t_buffered_fallback_ramfs(void)
{
    struct mnt m = {"ramfs", "", ""};
    if (mount_tmp(&m) != 0) ZT_SKIP("cannot mount ramfs: %s", strerror(errno));
    char p1[1024], p2[1024], err[2048];
    zt_tmp_path(p1, sizeof p1, m.dir, "a.swp");
    zt_tmp_path(p2, sizeof p2, m.dir, "b.swp");
    struct open_args a = {p1, 100000, -1, NULL}, b = {p2, 5000, -1, NULL};
    capture_stderr(err, sizeof err, do_open, &a);
    EQ(a.rc, 0);
    ZT_CHECKM(strstr(err, "O_DIRECT") && strstr(err, p1), "stderr: %s", err);
    capture_stderr(err, sizeof err, do_open, &b);
    EQ(b.rc, 0);
    ZT_CHECKM(!strstr(err, "O_DIRECT"), "said twice: %s", err);
    if (a.f) {
        EQ(zr_nvme_is_direct(a.f), 0);
        struct stat st;
        ZT_CHECK(stat(p1, &st) == 0 && st.st_size == 102400);    /* rounded up to 4 KiB */
        uint8_t x[30000], y[30001];
        fill(x, sizeof x, 333, 9);
        EQ(zr_nvme_write(a.f, x, sizeof x, 333), 0);
        EQ(zr_nvme_read(a.f, y + 1, sizeof x, 333), 0);
        ZT_CHECK(memcmp(x, y + 1, sizeof x) == 0);
        EQ(zr_nvme_read(a.f, y, 10, 0), 0);               /* reserved bytes are zeros */
        ZT_CHECK(y[0] == 0 && y[9] == 0);
    }
    zr_nvme_close(a.f);
    zr_nvme_close(b.f);
    umount_tmp(&m);
}

/* A 4 MiB tmpfs: a reservation too big fails at open naming file and size, and removes the file;
** a write that runs out of space mid-run fails with the file and offset; earlier data survive. */
static void t_full_disk_tmpfs(void)
{
    struct mnt m = {"tmpfs", "size=4m", ""};
    if (mount_tmp(&m) != 0) ZT_SKIP("cannot mount a small tmpfs: %s", strerror(errno));
    char p1[1024], err[2048];
    zt_tmp_path(p1, sizeof p1, m.dir, "opt.swp");
    struct open_args a = {p1, 8 << 20, 0, NULL};
    capture_stderr(err, sizeof err, do_open, &a);
    EQ(a.rc, -ENOSPC);
    ZT_CHECKM(strstr(err, p1) && strstr(err, "8388608") && strstr(err, "space"), "stderr: %s", err);
    ZT_CHECK(access(p1, F_OK) != 0);
    a.size = 2 << 20;
    capture_stderr(err, sizeof err, do_open, &a);
    EQ(a.rc, 0);
    if (a.f) {
        const int64_t n = 2 << 20, big = 3 << 20;
        uint8_t *x = zr_nvme_alloc((size_t)big), *y = zr_nvme_alloc((size_t)n);
        fill(x, n, 0, 21);
        EQ(zr_nvme_write(a.f, x, n, 0), 0);
        fill(x, big, n, 22);
        int rc = zr_nvme_write(a.f, x, big, n);                  /* 2 + 3 MiB > 4 MiB */
        EQ(rc, -ENOSPC);
        const char *t = zr_nvme_strerror(a.f);
        ZT_CHECKM(strstr(t, p1) && strstr(t, "offset 2097152") && strstr(t, "3145728"),
                  "text: %s", t);
        fill(x, n, 0, 21);
        EQ(zr_nvme_read(a.f, y, n, 0), 0);
        ZT_CHECK(memcmp(x, y, (size_t)n) == 0);
        zr_nvme_free(x, (size_t)big); zr_nvme_free(y, (size_t)n);
        zr_nvme_close(a.f);
    }
    umount_tmp(&m);
}

/* RLIMIT_FSIZE in a child: EFBIG at open for a reservation over the limit, and mid-run for a write
** crossing it (short write, then EFBIG on the remainder); data before it intact. Exit code = the
** first failed check. */
static int fsize_child(const char *path)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1 << 20, 1 << 20};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 2;
    ZrNvme *f = NULL;
    ZrNvmeCfg cfg = {256 << 10, 4, 0};
    if (zr_nvme_open(&f, path, 2 << 20, &cfg) != -EFBIG) return 3;
    if (zr_nvme_open(&f, path, 1 << 20, &cfg) != 0) return 4;
    const int64_t n = 1 << 20;
    uint8_t *x = zr_nvme_alloc((size_t)n), *y = zr_nvme_alloc((size_t)n);
    fill(x, n, 0, 31);
    if (zr_nvme_write(f, x, n, 0) != 0) return 5;
    fill(x, n / 2, n - n / 8, 32);
    int rc = zr_nvme_write(f, x, n / 2, n - n / 8);    /* a piece straddles the 1 MiB limit */
    if (rc != -EFBIG) { fprintf(stderr, "rc %d\n", rc); return 6; }
    if (!strstr(zr_nvme_strerror(f), path) || !strstr(zr_nvme_strerror(f), "File too large")) {
        fprintf(stderr, "text: %s\n", zr_nvme_strerror(f));
        return 7;
    }
    if (zr_nvme_read(f, y, n, 0) != 0) return 8;
    uint8_t *z = malloc((size_t)n);
    fill(z, n - n / 8, 0, 31);                         /* before the request: intact */
    fill(z + n - n / 8, n / 8, n - n / 8, 32);         /* its part below the limit: written */
    if (memcmp(z, y, (size_t)n) != 0) return 9;
    free(z);
    zr_nvme_close(f);
    unlink(path);
    return 0;
}

static void t_full_disk_rlimit(void)
{
    char path[1024];
    zt_tmp_path(path, sizeof path, tmpdir, "fsize.swp");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        _exit(fsize_child(path));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ZT_CHECKM(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d (exit %d)", st,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    unlink(path);
}

int main(void)
{
    if (zt_tmpdir_make(tmpdir, sizeof tmpdir, "nvme")) return 1;
    ZT_RUN(t_buffered_fallback_ramfs);
    ZT_RUN(t_direct_odd_round_trip);
    ZT_RUN(t_given_bounce);
    ZT_RUN(t_buffered_flag_round_trip);
    ZT_RUN(t_devshm_round_trip);
    ZT_RUN(t_aligned_large_pieces);
    ZT_RUN(t_many_in_flight);
    ZT_RUN(t_shared_sectors);
    ZT_RUN(t_errors);
    ZT_RUN(t_full_disk_tmpfs);
    ZT_RUN(t_full_disk_rlimit);
    rmdir(tmpdir);
    return zt_end();
}
