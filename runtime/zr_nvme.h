/*
** zr_nvme.h — asynchronous swap-file I/O on io_uring (liburing), O_DIRECT when the file system allows.
**
** A ZrNvme is one swap file and one ring. The file is created and sized up front (fallocate, or
** ftruncate + zero writes where fallocate is unsupported) so a full disk shows at open, before step 1.
** Requests are caller-owned ZrNvmeReq structs: zr_nvme_read_async / zr_nvme_write_async queue one,
** zr_nvme_poll / zr_nvme_progress move the queue forward, zr_nvme_wait blocks for one. The engine cuts
** every request into pieces of at most block_size bytes and keeps at most queue_depth pieces in
** flight over all requests, submitting each batch with one system call.
**
** Alignment: O_DIRECT needs the memory address, file offset and length aligned to ZR_NVME_ALIGN. Pieces
** that are aligned go straight between the caller's memory and the disk (through registered buffers
** when the memory lies in one, see zr_nvme_register_buffers); the rest go through a bounce buffer: reads
** read the enclosing aligned range and copy out; writes read the partly covered edge sectors first
** (read-modify-write). Any size, offset and address therefore works; aligned ones are fast.
**
** Errors: functions return 0 or a negative errno. A failed request's text (operation, file, offset,
** size, reason) is kept and returned by zr_nvme_strerror(). Short transfers are resubmitted for the
** remainder, -EAGAIN is retried; other errors (ENOSPC, EIO, EFBIG, ...) end the request.
**
** Checksums: every handle keeps a CRC32C of what it wrote in this run, per stripe of the file (see
** zr_nvme_sum_*), and checks reads against it; a mismatch fails the read with -EBADMSG and a text
** that names the file, the range, what it holds (zr_nvme_set_describe) and what to do.
**
** Threads: one handle is driven by one thread at a time. Requests may complete in any order; two
** requests in flight that write the same bytes, or read bytes another writes, are the caller's race
** (unaligned writes that merely share a sector are ordered by the engine).
*/
#ifndef ZR_NVME_H
#define ZR_NVME_H
#include <stddef.h>
#include <stdint.h>

#define ZR_NVME_ALIGN         4096        /* bytes: O_DIRECT alignment of address, offset, length */
#define ZR_NVME_BLOCK_DEFAULT (1 << 20)   /* aio.block_size default, bytes */
#define ZR_NVME_QD_DEFAULT    8           /* aio.queue_depth default, pieces in flight */
#define ZR_NVME_QD_MAX        256

enum {
    ZR_NVME_F_BUFFERED = 1,   /* do not try O_DIRECT */
    ZR_NVME_F_KEEP     = 2,   /* keep an existing file's data (default: truncate, then size) */
    ZR_NVME_F_UNLINK   = 4,   /* remove the file at zr_nvme_close */
    ZR_NVME_F_NOSUM    = 8    /* no checksums (zr_nvme_sum_*): for benchmarks that measure their cost */
};

typedef struct ZrNvmeCfg {
    int64_t block_size;       /* aio.block_size, bytes; 0: 1 MiB; rounded up to ZR_NVME_ALIGN */
    int queue_depth;          /* aio.queue_depth; 0: 8; at most ZR_NVME_QD_MAX */
    int flags;                /* ZR_NVME_F_* */
} ZrNvmeCfg;

typedef struct ZrNvme ZrNvme;

/* A request. Zero it before first use (ZrNvmeReq r = {0}). The caller owns the struct and must not
** touch or reuse it until it is complete
** (zr_nvme_done() is 1 or zr_nvme_wait() returned). Fields are the engine's. */
typedef struct ZrNvmeReq {
    struct ZrNvmeReq *next;   /* engine queue link */
    char *buf;                /* caller memory */
    int64_t bytes, offset;    /* request size and file offset, bytes */
    int64_t issued;           /* bytes handed to pieces so far */
    int64_t done;             /* bytes completed */
    int write;                /* 1: write, 0: read */
    int state;                /* 0 idle, 1 queued/in flight, 2 complete, 3 complete and waited */
    int inflight;             /* pieces in flight */
    int err;                  /* 0 or the first negative errno */
    uint32_t sum_id;          /* checksums: this request's serial, 0 when it computes none */
} ZrNvmeReq;

/* Opens (creating) path as a swap file of size_bytes (rounded up to ZR_NVME_ALIGN) with a ring of
** cfg->queue_depth entries; cfg may be NULL for the defaults. Where the file system refuses O_DIRECT
** (EINVAL) the file is opened buffered and a note goes to stderr once per process (env
** ZR_NVME_NO_DIRECT=1 forces the same fallback, as ZR_NVME_F_BUFFERED does per file). Returns 0, or
** -ENOSPC / -EFBIG / ... with a message naming the file and size on stderr (there is no handle yet). */
int zr_nvme_open(ZrNvme **out, const char *path, int64_t size_bytes, const ZrNvmeCfg *cfg);
/* Waits for every request, releases the ring, closes (and with ZR_NVME_F_UNLINK removes) the file.
** Returns 0 or as zr_nvme_wait_all. NULL is a no-op. */
int zr_nvme_close(ZrNvme *f);

int zr_nvme_is_direct(const ZrNvme *f);          /* 1: O_DIRECT, 0: buffered */
int64_t zr_nvme_block_size(const ZrNvme *f);     /* bytes, as rounded */
int zr_nvme_queue_depth(const ZrNvme *f);
const char *zr_nvme_path(const ZrNvme *f);
/* The text of the latest error on this handle ("" if none): operation, file, offset, size, reason. */
const char *zr_nvme_strerror(const ZrNvme *f);

/* 4096-aligned, zeroed memory with a best-effort mlock; free with zr_nvme_free. NULL on failure. */
void *zr_nvme_alloc(size_t bytes);
void zr_nvme_free(void *p, size_t bytes);

/* Registers n caller buffers with the ring (replacing earlier ones) so pieces inside them use
** READ_FIXED / WRITE_FIXED. No request may be in flight. If the kernel refuses (memlock limit), I/O
** still works unregistered and 0 is returned; zr_nvme_registered() says how many are registered. */
int zr_nvme_register_buffers(ZrNvme *f, void *const *bufs, const size_t *bytes, int n);
int zr_nvme_registered(const ZrNvme *f);

/* Hands the engine queue_depth x block_size bytes of caller memory (ZR_NVME_ALIGN-aligned) for its
** bounce buffers, so a planned arena holds them instead of allocations of its own (a trainer's plan
** then counts them). Call before any I/O; returns -EINVAL when mem or bytes do not fit, -EBUSY when
** a bounce buffer is already in use. */
int zr_nvme_use_bounce(ZrNvme *f, void *mem, int64_t bytes);

/* Queue a request and submit what the queue depth allows. Returns 0, -EBUSY if req is in flight,
** -EINVAL for a negative size or offset. bytes == 0 completes at once. */
int zr_nvme_read_async(ZrNvme *f, void *buf, int64_t bytes, int64_t offset, ZrNvmeReq *req);
int zr_nvme_write_async(ZrNvme *f, const void *buf, int64_t bytes, int64_t offset, ZrNvmeReq *req);

/* Reaps finished pieces without blocking, refills the queue and submits. Returns the number of
** requests still in flight, or a negative errno for a ring failure. */
int zr_nvme_poll(ZrNvme *f);
/* As zr_nvme_poll, but first waits up to timeout_us for a completion if pieces are in flight.
** Lets a thread that waits for something else keep the disk busy. */
int zr_nvme_progress(ZrNvme *f, int64_t timeout_us);
/* 1 when req is complete (its result is then req->err), 0 otherwise. Does not drive I/O. */
int zr_nvme_done(const ZrNvmeReq *req);
/* Drives I/O until req completes. Returns 0 or its negative errno (text in zr_nvme_strerror). */
int zr_nvme_wait(ZrNvme *f, ZrNvmeReq *req);
/* Drives I/O until nothing is in flight. Returns 0 or the first error of a request whose error no
** zr_nvme_wait returned (since the last zr_nvme_wait_all). */
int zr_nvme_wait_all(ZrNvme *f);

/* Blocking conveniences: one request, waited for. */
int zr_nvme_read(ZrNvme *f, void *buf, int64_t bytes, int64_t offset);
int zr_nvme_write(ZrNvme *f, const void *buf, int64_t bytes, int64_t offset);
/* fdatasync the file. */
int zr_nvme_sync(ZrNvme *f);

/* Fault injection for tests, compiled in always and off until set: spec is a comma-separated list
** of up to 4 rules KIND@N[xCOUNT][:r|:w], each changing completions N .. N+COUNT-1 (1-based, counted
** over the process's completions, only reads with :r, only writes with :w) before the engine sees
** them: eio gives -EIO (the request fails, naming file, offset and size), short halves the bytes
** moved (the engine resubmits the rest), eagain gives -EAGAIN (retried up to 1000 times per piece,
** then the request fails with EAGAIN), flip (counts writes only) inverts, in the file, the first
** byte the completed write put there, as a bad device or another process would: the checksums
** then fail the read that brings it back. NULL or "" turns it off; counts restart at each call.
** zr_nvme_open reads the environment variable ZR_NVME_FAULT with the same syntax once per process.
** Returns 0 or -EINVAL for a bad spec (injection then off). */
int zr_nvme_fault_set(const char *spec);

/* Checks that dir can hold swap files: an existing directory (a dangling symlink, a regular file or
** a device is refused), on a real file system (not proc, sysfs, devpts, ...), writable (a probe file
** is created and removed), and whether that file system takes O_DIRECT. Returns 1 with O_DIRECT, 0
** when I/O there will be buffered (the fallback zr_nvme_open takes), or a negative errno with the
** reason and what to do in msg. zr_nvme_open runs it on the swap file's directory, so the trainer
** refuses a bad nvme_path at start-up, before any step. */
int zr_nvme_check_dir(const char *dir, char *msg, size_t msg_size);

/* {===== swap-file checksums: a block altered on disk between its write and its read is detected.
** The file is cut into stripes of zr_nvme_sum_stripe() bytes (4096 x a power of two: the smallest
** that keeps the table at ZR_NVME_SUM_MAX_STRIPES entries or fewer; so the table, 12 bytes a stripe,
** is sized once at open from the file's size and nothing is allocated per I/O). A completed write
** records, for every stripe it starts at or before, the CRC32C of the bytes it wrote from the
** stripe's start (the whole stripe, or up to the write's end); a write that starts inside a stripe
** only forgets that stripe's record (what the rest of the stripe holds is not known). A read checks
** every recorded stripe whose recorded bytes it covers whole, as its pieces complete; a mismatch
** ends the request with -EBADMSG and a text naming the file, the stripe's offset and size, the
** request, what it holds (the caller's describe function) and what to do. Not checked: ranges not
** written by this handle (a fresh file, a kept file before its first write), the stripes a read or a
** write covers only in part (at most two per request: so a chunk read back exactly as it was written
** is checked whole), and what a failed write touched. ZR_NVME_F_NOSUM turns it off for a handle, the
** environment variable ZR_NVME_NOSUM=1 for every handle the process opens (bench/b_nvme_sum.c
** measures the cost). */
#define ZR_NVME_SUM_MAX_STRIPES (1 << 20)

/* Names what the file holds at [offset, offset + bytes) into out ("optimizer state adam_m of
** sub-group 3"), for the mismatch text. */
typedef void (*ZrNvmeDescribe)(void *ctx, const ZrNvme *f, int64_t offset, int64_t bytes, char *out,
                               size_t n);
void zr_nvme_set_describe(ZrNvme *f, ZrNvmeDescribe fn, void *ctx);
int64_t zr_nvme_sum_stripe(const ZrNvme *f);     /* bytes; 0 when checksums are off */

typedef struct ZrNvmeSumStats {
    int64_t written;          /* bytes recorded by completed writes */
    int64_t read;             /* bytes read */
    int64_t checked;          /* of them, bytes compared with a record */
    int64_t mismatches;       /* stripes that failed their check */
} ZrNvmeSumStats;
void zr_nvme_sum_stats(const ZrNvme *f, ZrNvmeSumStats *out);
/* The CRC32C (initial value 0, no final xor: the register's raw value) recorded for the stripe that
** starts at offset, and its recorded length; -ENOENT when none. For tests. */
int zr_nvme_sum_get(const ZrNvme *f, int64_t offset, uint32_t *crc, int64_t *bytes);
/* }===== */

#endif
