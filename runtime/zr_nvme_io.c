/*
** zr_nvme_io.c — the request engine of zr_nvme: cuts requests into pieces of at most block_size bytes,
** keeps at most queue_depth of them in flight, submits each batch with one io_uring_enter, and retires
** completions in three ways (as liburing's io_uring-cp does): an error (-EAGAIN retried, the rest end
** the request with a text naming file, offset and size), a short transfer (resubmitted for the
** remainder), or done. Unaligned pieces go through a per-slot bounce buffer; see zr_nvme.h.
** Also the swap-file checksums (zr_nvme_sum_*): computed as pieces complete, so the CRC work is
** spread over the I/O instead of stalling the caller at the end of a request, and a completion
** sweep for the stripes that straddle two pieces.
*/
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zr_crc.h"           /* zr_crc32c */
#include "zr_nvme_int.h"

#define A ZR_NVME_ALIGN
#define MAX_AGAIN 1000           /* -EAGAIN retries of one piece before giving up */

enum { PLAN_OK = 0, PLAN_BLOCKED = 1 };

static int64_t floor_a(int64_t x) { return x / A * A; }
static int64_t ceil_a(int64_t x) { return (x + A - 1) / A * A; }
static int is_aligned(int64_t x) { return x % A == 0; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int fixed_index(const ZrNvme *f, const char *mem, int64_t len)
{
    for (int i = 0; i < f->nreg; i++)
        if (mem >= f->reg_base[i] && mem + len <= f->reg_base[i] + f->reg_len[i]) return i;
    return -1;
}

/* Prepares the SQE for what is left of piece p. The ring has at least qd entries and each of the
** at most qd pieces has at most one SQE outstanding, so a free SQE exists once pending ones are
** submitted. */
static int prep(ZrNvme *f, ZrPiece *p)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);
    if (!sqe) {
        int rc = io_uring_submit(&f->ring);
        if (rc < 0) return rc;
        f->unsubmitted = 0;
        sqe = io_uring_get_sqe(&f->ring);
        if (!sqe) return -EBUSY;
    }
    int fd = f->fixed_file ? 0 : f->fd;
    char *mem = p->mem + p->done;
    unsigned len = (unsigned)(p->len - p->done);
    int64_t off = p->off + p->done;
    if (p->fixed >= 0 && p->write) io_uring_prep_write_fixed(sqe, fd, mem, len, (uint64_t)off, p->fixed);
    else if (p->fixed >= 0) io_uring_prep_read_fixed(sqe, fd, mem, len, (uint64_t)off, p->fixed);
    else if (p->write) io_uring_prep_write(sqe, fd, mem, len, (uint64_t)off);
    else io_uring_prep_read(sqe, fd, mem, len, (uint64_t)off);
    if (f->fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data(sqe, p);
    f->unsubmitted++;
    return 0;
}

static int submit(ZrNvme *f)
{
    if (!f->unsubmitted) return 0;
    int rc = io_uring_submit(&f->ring);
    if (rc == -EAGAIN || rc == -EBUSY || rc == -EINTR) return 0;   /* retried after reaping */
    if (rc < 0) return rc;
    f->unsubmitted -= rc < f->unsubmitted ? rc : f->unsubmitted;
    return 0;
}

static void unqueue(ZrNvme *f, ZrNvmeReq *r)
{
    ZrNvmeReq **pp = &f->head, *prev = NULL;
    while (*pp && *pp != r) { prev = *pp; pp = &(*pp)->next; }
    if (!*pp) return;
    *pp = r->next;
    if (f->tail == r) f->tail = prev;
    r->next = NULL;
}

/* {===== checksums (zr_nvme.h, zr_nvme_sum_*). The raw CRC32C register (initial value 0, no final
** xor) is what is kept: zr_crc32c takes and returns finished values, so ~0 in and ~ out undo them. */
static uint32_t crc_raw(const char *p, int64_t n) { return ~zr_crc32c(~0u, p, (size_t)n); }

static void sum_mismatch(ZrNvme *f, ZrNvmeReq *r, int64_t s, uint32_t got)
{
    int64_t ss = s * f->sum_stripe, len = f->sum_len[s];
    char what[256] = "";
    f->sum_stats.mismatches++;
    if (r->err) return;
    r->err = -EBADMSG;
    if (f->describe) {
        what[0] = ';'; what[1] = ' ';
        f->describe(f->describe_ctx, f, ss, len, what + 2, sizeof what - 2);
        if (!what[2]) what[0] = 0;
    }
    snprintf(f->err, sizeof f->err,
             "zr_nvme: swap file %s: the %lld bytes at offset %lld (read of %lld bytes at offset %lld%s) "
             "do not match the CRC32C recorded when this run wrote them (written %08x, read %08x): "
             "the data changed on disk between the write and this read\n---> HINT: check the device "
             "and its file system (dmesg, smartctl -a; another process writing the file); the state "
             "in memory is not trusted any more: resume from the last checkpoint (--resume)",
             f->path, (long long)len, (long long)ss, (long long)r->bytes, (long long)r->offset, what,
             f->sum_crc[s], got);
}

/* Stripes of r's file range [a, b) whose recorded (write: to be recorded) bytes lie inside [a, b),
** mem holding the bytes of [a, b): a write records them, a read checks them. */
static void sum_range(ZrNvme *f, ZrNvmeReq *r, const char *mem, int64_t a, int64_t b, int sweep)
{
    const int64_t G = f->sum_stripe, end = r->offset + r->bytes;
    for (int64_t s = (a + G - 1) / G; s * G < b && s < f->sum_n; s++) {
        int64_t ss = s * G;
        if (r->write) {
            int64_t len = min64(ss + G, end) - ss;
            if (ss + len > b || (sweep && f->sum_len[s])) continue;
            f->sum_crc[s] = crc_raw(mem + (ss - a), len);
            f->sum_len[s] = (uint32_t)len;
            f->sum_stats.written += len;
        } else {
            int64_t len = f->sum_len[s];
            if (!len || ss + len > b || f->sum_seen[s] == r->sum_id) continue;
            uint32_t got = crc_raw(mem + (ss - a), len);
            f->sum_seen[s] = r->sum_id;
            f->sum_stats.checked += len;
            if (got != f->sum_crc[s]) sum_mismatch(f, r, s, got);
        }
    }
}

/* At enqueue: a write forgets every stripe it touches (the disk is in flux until it completes); a
** read computes checksums only if some stripe it covers whole has a record. */
static void sum_enqueue(ZrNvme *f, ZrNvmeReq *r)
{
    const int64_t G = f->sum_stripe, end = r->offset + r->bytes;
    int any = r->write;
    if (!G) return;
    for (int64_t s = r->offset / G; s * G < end && s < f->sum_n; s++) {
        if (r->write) f->sum_len[s] = 0;
        else if (f->sum_len[s] && s * G >= r->offset && s * G + f->sum_len[s] <= end) any = 1;
    }
    if (any) {
        if (++f->sum_serial == 0) f->sum_serial = 1;
        r->sum_id = f->sum_serial;
    }
}

int zr_nvme_sum_setup(ZrNvme *f)
{
    int64_t G = ZR_NVME_ALIGN;
    if ((f->flags & ZR_NVME_F_NOSUM) || f->size <= 0) return 0;
    while ((f->size + G - 1) / G > ZR_NVME_SUM_MAX_STRIPES) G *= 2;
    f->sum_n = (f->size + G - 1) / G;
    f->sum_crc = calloc((size_t)f->sum_n, sizeof *f->sum_crc);
    f->sum_len = calloc((size_t)f->sum_n, sizeof *f->sum_len);
    f->sum_seen = calloc((size_t)f->sum_n, sizeof *f->sum_seen);
    if (!f->sum_crc || !f->sum_len || !f->sum_seen) return -ENOMEM;
    f->sum_stripe = G;
    return 0;
}

void zr_nvme_set_describe(ZrNvme *f, ZrNvmeDescribe fn, void *ctx) { f->describe = fn; f->describe_ctx = ctx; }
int64_t zr_nvme_sum_stripe(const ZrNvme *f) { return f->sum_stripe; }
void zr_nvme_sum_stats(const ZrNvme *f, ZrNvmeSumStats *out) { *out = f->sum_stats; }

int zr_nvme_sum_get(const ZrNvme *f, int64_t offset, uint32_t *crc, int64_t *bytes)
{
    int64_t G = f->sum_stripe;
    if (!G || offset < 0 || offset % G || offset / G >= f->sum_n || !f->sum_len[offset / G]) return -ENOENT;
    *crc = f->sum_crc[offset / G];
    *bytes = f->sum_len[offset / G];
    return 0;
}
/* }===== */

static void complete_if_done(ZrNvme *f, ZrNvmeReq *r)
{
    if (r->inflight == 0 && r->issued == r->bytes && r->state == 1) {
        if (!r->err && r->sum_id)         /* the stripes that straddle two pieces */
            sum_range(f, r, r->buf, r->offset, r->offset + r->bytes, 1);
        if (!r->err && !r->write && f->sum_stripe) f->sum_stats.read += r->bytes;
        r->state = 2;
        f->nreqs--;
        if (r->err) {
            f->nerr++;
            if (!f->last_err) f->last_err = r->err;
        }
    }
}

static void fail(ZrNvme *f, ZrNvmeReq *r, int64_t at, int64_t len, int err)
{
    if (!r->err) {
        r->err = err;
        snprintf(f->err, sizeof f->err,
                 "zr_nvme: %s of %lld bytes at offset %lld of %s failed (piece of %lld bytes at "
                 "offset %lld): %s (errno %d)", r->write ? "write" : "read", (long long)r->bytes,
                 (long long)r->offset, f->path, (long long)len, (long long)at, strerror(-err), -err);
    }
    if (r->issued < r->bytes) { unqueue(f, r); r->issued = r->bytes; }   /* issue no more of it */
    complete_if_done(f, r);
}

/* Plans the next piece of r into *p. Returns PLAN_OK, PLAN_BLOCKED (an unaligned write must wait for
** another in flight that shares its edge sectors), or -ENOMEM. */
static int plan(ZrNvme *f, ZrNvmeReq *r, int slot, ZrPiece *p)
{
    int64_t s = r->offset + r->issued, end = r->offset + r->bytes, e;
    char *m = r->buf + r->issued;
    memset(p, 0, sizeof *p);
    p->req = r;
    p->fixed = -1;
    p->write = r->write;
    if (!f->direct || (is_aligned(s) && is_aligned((int64_t)(uintptr_t)m))) {
        e = min64(end, s + f->bs);
        if (f->direct && !is_aligned(e) && e - s >= A) e = floor_a(e);
        if (!f->direct || is_aligned(e)) {
            p->off = s; p->len = e - s; p->mem = m;
            p->fixed = fixed_index(f, m, p->len);
            p->ulen = p->len;
            return PLAN_OK;
        }
    }
    e = min64(end, floor_a(s) + f->bs);
    p->bounce = 1;
    p->off = floor_a(s); p->len = ceil_a(e) - p->off;
    p->uoff = s; p->ulen = e - s; p->umem = m;
    p->rmw = r->write && (s != p->off || e != p->off + p->len);
    if (p->rmw) {
        p->write = 0;                 /* read the edge sectors first */
        for (int i = 0; i < f->qd; i++) {
            const ZrPiece *q = &f->pieces[i];
            if (q->req && q->rmw && q->off < p->off + p->len && p->off < q->off + q->len)
                return PLAN_BLOCKED;
        }
    }
    if (!f->bounce[slot] && !(f->bounce[slot] = zr_nvme_alloc((size_t)f->bs))) return -ENOMEM;
    p->mem = f->bounce[slot];
    if (r->write && !p->rmw) memcpy(p->mem, m, (size_t)p->ulen);
    return PLAN_OK;
}

static int dispatch(ZrNvme *f)
{
    while (f->head && f->npieces < f->qd) {
        ZrNvmeReq *r = f->head;
        int slot = 0;
        while (f->pieces[slot].req) slot++;
        ZrPiece cand;
        int rc = plan(f, r, slot, &cand);
        if (rc == PLAN_BLOCKED) break;
        if (rc < 0) { fail(f, r, r->offset + r->issued, 0, rc); continue; }
        f->pieces[slot] = cand;
        r->issued += cand.ulen;
        r->inflight++;
        f->npieces++;
        if (r->issued == r->bytes) unqueue(f, r);
        rc = prep(f, &f->pieces[slot]);
        if (rc < 0) return rc;
    }
    return 0;
}

static void retire(ZrNvme *f, ZrPiece *p, int err)
{
    ZrNvmeReq *r = p->req;
    int64_t at = p->off + p->done, len = p->len - p->done;
    p->req = NULL;
    f->npieces--;
    r->inflight--;
    if (err) { fail(f, r, at, len, err); return; }
    r->done += p->ulen;
    if (r->sum_id && !r->err) {
        int64_t a = p->bounce ? p->uoff : p->off;
        sum_range(f, r, p->bounce ? p->umem : p->mem, a, a + p->ulen, 0);
        if (r->err && r->issued < r->bytes) { unqueue(f, r); r->issued = r->bytes; }
    }
    complete_if_done(f, r);
}

static int finished(ZrNvme *f, ZrPiece *p)
{
    if (p->rmw && !p->write) {        /* edges read: lay the caller's bytes over them and write */
        memcpy(p->mem + (p->uoff - p->off), p->umem, (size_t)p->ulen);
        p->write = 1;
        p->done = 0;
        p->again = 0;
        return prep(f, p);
    }
    if (p->bounce && !p->write) memcpy(p->umem, p->mem + (p->uoff - p->off), (size_t)p->ulen);
    retire(f, p, 0);
    return 0;
}

/* A read stopped short of the piece: the end of the file. Fine for a bounce piece whose caller
** bytes were all read (the aligned range runs past an unaligned end of file) or that reads edge
** sectors for a write (beyond the end they are zeros); otherwise the caller asked past the end. */
static int at_eof(ZrNvme *f, ZrPiece *p)
{
    if (p->bounce && (p->rmw || p->uoff + p->ulen <= p->off + p->done)) {
        memset(p->mem + p->done, 0, (size_t)(p->len - p->done));
        p->done = p->len;
        return finished(f, p);
    }
    retire(f, p, -ENODATA);
    return 0;
}

static int on_cqe(ZrNvme *f, ZrPiece *p, int res)
{
    if ((res == -EAGAIN || res == -EINTR) && ++p->again <= MAX_AGAIN) return prep(f, p);
    if (res < 0) { retire(f, p, res); return 0; }
    if (res == 0) {
        if (!p->write) return at_eof(f, p);
        retire(f, p, -EIO);           /* a write that moves nothing would loop forever */
        return 0;
    }
    p->done += res;
    p->again = 0;
    if (p->done < p->len) {           /* short transfer: go on from where it stopped */
        if (f->direct && !is_aligned(p->off + p->done)) {
            if (!p->write) return at_eof(f, p);
            retire(f, p, -EIO);       /* O_DIRECT cannot resume at an unaligned offset */
            return 0;
        }
        return prep(f, p);
    }
    return finished(f, p);
}

/* {===== fault injection (zr_nvme_fault_set): compiled in always, off unless asked for.
** A rule changes the result of completions number at .. at+count-1 (1-based, counted per rule over
** the process's completions of its kind: reads, writes or both) before the engine sees them. */
enum { FK_EIO, FK_SHORT, FK_EAGAIN, FK_FLIP };
typedef struct Fault { int kind, rw; long long at, count; atomic_llong seen; } Fault;
#define MAX_FAULTS 4
static Fault faults[MAX_FAULTS];
static atomic_int nfaults;
static atomic_int env_done;

int zr_nvme_fault_set(const char *spec)
{
    Fault nf[MAX_FAULTS];
    int n = 0;
    const char *s = spec ? spec : "";
    atomic_store(&nfaults, 0);
    while (*s) {
        Fault *r = &nf[n];
        char *end;
        size_t k = strcspn(s, "@");
        if (n == MAX_FAULTS || !s[k]) return -EINVAL;
        if (k == 3 && !strncmp(s, "eio", 3)) r->kind = FK_EIO;
        else if (k == 5 && !strncmp(s, "short", 5)) r->kind = FK_SHORT;
        else if (k == 6 && !strncmp(s, "eagain", 6)) r->kind = FK_EAGAIN;
        else if (k == 4 && !strncmp(s, "flip", 4)) r->kind = FK_FLIP;
        else return -EINVAL;
        r->at = strtoll(s + k + 1, &end, 10);
        r->count = 1;
        r->rw = 2;
        if (end == s + k + 1 || r->at < 1) return -EINVAL;
        if (*end == 'x') {
            const char *c = end + 1;
            r->count = strtoll(c, &end, 10);
            if (end == c || r->count < 1) return -EINVAL;
        }
        if (*end == ':') {
            if (end[1] != 'r' && end[1] != 'w') return -EINVAL;
            r->rw = end[1] == 'w';
            end += 2;
        }
        if (*end && *end != ',') return -EINVAL;
        if (r->kind == FK_FLIP && r->rw == 0) return -EINVAL;    /* it alters what a write put there */
        if (r->kind == FK_FLIP) r->rw = 1;
        s = *end ? end + 1 : end;
        n++;
    }
    for (int i = 0; i < n; i++) {
        faults[i].kind = nf[i].kind;
        faults[i].rw = nf[i].rw;
        faults[i].at = nf[i].at;
        faults[i].count = nf[i].count;
        atomic_store(&faults[i].seen, 0);
    }
    atomic_store(&nfaults, n);
    return 0;
}

int zr_nvme_fault_env(void)
{
    const char *e = getenv("ZR_NVME_FAULT");
    if (atomic_exchange(&env_done, 1) || !e || !*e) return 0;
    if (zr_nvme_fault_set(e) == 0) {
        fprintf(stderr, "zr_nvme: fault injection on: ZR_NVME_FAULT=%s\n", e);
        return 0;
    }
    fprintf(stderr, "zr_nvme: bad ZR_NVME_FAULT '%s' (expected KIND@N[xCOUNT][:r|:w],... with KIND eio, "
            "short, eagain or flip)\n", e);
    return -EINVAL;
}

/* flip: inverts the first of the caller's bytes that the write completion put in the file, through
** a sector-sized read-modify-write on the same descriptor (aligned, so O_DIRECT takes it). */
static void flip_byte(const ZrNvme *f, const ZrPiece *p, int res)
{
    static _Alignas(A) unsigned char sec[A];
    int64_t at = p->off + p->done;
    if (p->bounce && at < p->uoff) at = p->uoff;
    if (res <= 0 || at >= p->off + p->done + res || (p->bounce && at >= p->uoff + p->ulen)) return;
    int64_t base = floor_a(at);
    ssize_t n = pread(f->fd, sec, A, base);
    if (n <= at - base) return;
    sec[at - base] ^= 0xff;
    if (pwrite(f->fd, sec, (size_t)n, base) != n)
        fprintf(stderr, "zr_nvme: fault injection: flipping byte %lld of %s failed\n", (long long)at, f->path);
}

/* The completion result the engine sees: res, or the fault a rule puts in its place. A short
** transfer keeps half the bytes (O_DIRECT: rounded down to a sector, when that leaves any). */
static int fault_res(const ZrNvme *f, const ZrPiece *p, int res)
{
    int n = atomic_load(&nfaults);
    for (int i = 0; i < n; i++) {
        Fault *r = &faults[i];
        if (r->rw != 2 && r->rw != p->write) continue;
        long long k = atomic_fetch_add(&r->seen, 1) + 1;
        if (k < r->at || k >= r->at + r->count) continue;
        if (r->kind == FK_EIO) return -EIO;
        if (r->kind == FK_EAGAIN) return -EAGAIN;
        if (r->kind == FK_FLIP) { flip_byte(f, p, res); continue; }
        if (f->direct && res / 2 >= A) return (int)floor_a(res / 2);  /* O_DIRECT stops on a sector */
        if (!f->direct && res > 1) return res / 2;
    }
    return res;
}
/* }===== */

static int reap(ZrNvme *f)
{
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    int rc = 0;
    io_uring_for_each_cqe(&f->ring, head, cqe) {
        ZrPiece *p = io_uring_cqe_get_data(cqe);
        int r = on_cqe(f, p, atomic_load(&nfaults) ? fault_res(f, p, cqe->res) : cqe->res);
        if (r < 0 && !rc) rc = r;
        n++;
    }
    io_uring_cq_advance(&f->ring, n);
    return rc;
}

/* One round: refill and submit; if asked, wait (timeout_us < 0: without limit) for a completion;
** reap; refill and submit again. */
static int round_trip(ZrNvme *f, int wait, int64_t timeout_us)
{
    int rc = dispatch(f);
    if (!rc && wait && f->npieces) {
        struct io_uring_cqe *cqe;
        if (timeout_us < 0) {
            rc = io_uring_submit_and_wait(&f->ring, 1);
        } else {
            struct __kernel_timespec ts = {timeout_us / 1000000, (timeout_us % 1000000) * 1000};
            rc = io_uring_submit_and_wait_timeout(&f->ring, &cqe, 1, &ts, NULL);
        }
        if (rc >= 0 || rc == -ETIME || rc == -EINTR) f->unsubmitted = 0;   /* SQEs were taken */
        if (rc == -ETIME || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY || rc > 0) rc = 0;
    } else if (!rc) {
        rc = submit(f);
    }
    if (!rc) rc = reap(f);
    if (!rc) rc = dispatch(f);
    if (!rc) rc = submit(f);
    if (rc < 0)
        snprintf(f->err, sizeof f->err, "zr_nvme: io_uring failure on %s: %s", f->path,
                 strerror(-rc));
    return rc;
}

static int enqueue(ZrNvme *f, char *buf, int64_t bytes, int64_t offset, ZrNvmeReq *r, int write)
{
    if (r->state == 1) return -EBUSY;
    if (bytes < 0 || offset < 0 || offset > INT64_MAX - bytes || (bytes && !buf)) return -EINVAL;
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->bytes = bytes;
    r->offset = offset;
    r->write = write;
    r->state = bytes ? 1 : 2;
    if (!bytes) return 0;
    sum_enqueue(f, r);
    if (f->tail) f->tail->next = r;
    else f->head = r;
    f->tail = r;
    f->nreqs++;
    return round_trip(f, 0, 0);
}

int zr_nvme_read_async(ZrNvme *f, void *buf, int64_t bytes, int64_t offset, ZrNvmeReq *req)
{
    return enqueue(f, buf, bytes, offset, req, 0);
}

int zr_nvme_write_async(ZrNvme *f, const void *buf, int64_t bytes, int64_t offset, ZrNvmeReq *req)
{
    return enqueue(f, (char *)(uintptr_t)buf, bytes, offset, req, 1);
}

int zr_nvme_poll(ZrNvme *f)
{
    int rc = round_trip(f, 0, 0);
    return rc < 0 ? rc : f->nreqs;
}

int zr_nvme_progress(ZrNvme *f, int64_t timeout_us)
{
    int rc = round_trip(f, 1, timeout_us < 0 ? 0 : timeout_us);
    return rc < 0 ? rc : f->nreqs;
}

int zr_nvme_done(const ZrNvmeReq *req) { return req->state >= 2; }

int zr_nvme_wait(ZrNvme *f, ZrNvmeReq *req)
{
    if (req->state == 0) return -EINVAL;
    while (req->state == 1) {
        int rc = round_trip(f, 1, -1);
        if (rc < 0) return rc;
    }
    if (req->state == 2 && req->err && --f->nerr == 0) f->last_err = 0;   /* reported here */
    req->state = 3;
    return req->err;
}

int zr_nvme_wait_all(ZrNvme *f)
{
    while (f->nreqs) {
        int rc = round_trip(f, 1, -1);
        if (rc < 0) return rc;
    }
    int rc = f->last_err;
    f->last_err = 0;
    f->nerr = 0;
    return rc;
}

int zr_nvme_read(ZrNvme *f, void *buf, int64_t bytes, int64_t offset)
{
    ZrNvmeReq r = {0};
    int rc = zr_nvme_read_async(f, buf, bytes, offset, &r);
    return rc ? rc : zr_nvme_wait(f, &r);
}

int zr_nvme_write(ZrNvme *f, const void *buf, int64_t bytes, int64_t offset)
{
    ZrNvmeReq r = {0};
    int rc = zr_nvme_write_async(f, buf, bytes, offset, &r);
    return rc ? rc : zr_nvme_wait(f, &r);
}
