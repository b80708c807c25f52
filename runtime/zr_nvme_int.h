/*
** zr_nvme_int.h — private to zr_nvme.c (file life: open, sizing, buffers) and zr_nvme_io.c (the
** request engine). Not part of the public API; nothing outside those two files includes it.
*/
#ifndef ZR_NVME_INT_H
#define ZR_NVME_INT_H
#include <liburing.h>
#include "zr_nvme.h"

/* One piece in flight: at most block_size bytes of one request. */
typedef struct ZrPiece {
    ZrNvmeReq *req;           /* NULL: slot free */
    int64_t off, len;         /* the I/O as issued: file offset and bytes */
    int64_t done;             /* bytes of the I/O transferred so far (short transfers resume here) */
    char *mem;                /* memory of the I/O: the caller's, or this slot's bounce buffer */
    int write;                /* 1: the I/O now in flight is a write */
    int bounce;               /* 1: mem is the bounce buffer; the caller's bytes are below */
    int rmw;                  /* 1: bounce write whose edge sectors are being read first */
    int fixed;                /* registered buffer index, or -1 */
    int again;                /* -EAGAIN retries so far */
    int64_t uoff, ulen;       /* bounce: the caller's bytes, file offset and length */
    char *umem;               /* bounce: the caller's memory for them */
} ZrPiece;

struct ZrNvme {
    struct io_uring ring;
    int fd;
    int direct;               /* 1: opened O_DIRECT */
    int fixed_file;           /* 1: fd registered as fixed file 0 */
    int ring_ok;              /* 1: ring set up */
    int last_err;             /* first error of a request not returned by zr_nvme_wait */
    int nerr;                 /* failed requests whose error zr_nvme_wait has not returned */
    int flags;                /* ZR_NVME_F_* */
    int64_t bs;               /* block size, bytes */
    int qd;                   /* pieces in flight at most */
    int64_t size;             /* reserved size, bytes */
    char *path;
    ZrPiece *pieces;          /* qd slots */
    char **bounce;            /* qd bounce buffers of bs bytes, allocated on first use */
    int bounce_given;         /* 1: bounce[] points into the caller's memory (zr_nvme_use_bounce) */
    int npieces;              /* slots in use */
    int nreqs;                /* requests queued or in flight */
    ZrNvmeReq *head, *tail;   /* requests with bytes not yet handed to pieces, FIFO */
    int nreg;                 /* registered buffers */
    char **reg_base;
    size_t *reg_len;
    int unsubmitted;          /* SQEs prepared since the last submit */
    char err[1024];           /* text of the latest error */
    /* checksums (zr_nvme_sum_*): per stripe of sum_stripe bytes, the raw CRC32C of the bytes
    ** [stripe start, + sum_len) as last written, sum_len 0 when nothing is recorded; sum_seen the
    ** serial of the last read request that checked it (so the completion sweep skips it) */
    int64_t sum_stripe;       /* 0: checksums off */
    int64_t sum_n;            /* stripes */
    uint32_t *sum_crc, *sum_len, *sum_seen;
    uint32_t sum_serial;
    ZrNvmeSumStats sum_stats;
    ZrNvmeDescribe describe;
    void *describe_ctx;
};

/* zr_nvme_io.c: sets up the checksum table for f->size (zr_nvme_open): 0 or -ENOMEM. */
int zr_nvme_sum_setup(ZrNvme *f);

/* Reads ZR_NVME_FAULT once per process (zr_nvme_open calls it): 0, or -EINVAL for a bad value. */
int zr_nvme_fault_env(void);

#endif
