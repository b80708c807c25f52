/*
** zr_coll_int.h — internals shared by the zr_coll_*.c files (not part of the public API).
** The MPI core (zr_coll_mpi.c) runs every request; a transport that moves or sums data another way
** (the shared-memory window, NCCL) is a ZrCollTransport table of what differs, installed in the
** communicator by whoever selects it (zr_coll_shm_init at creation, the caller's zr_comm_use_nccl),
** so the core and the watchdog call it through the table and name no transport.
*/
#ifndef ZR_COLL_INT_H
#define ZR_COLL_INT_H
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "zr_coll.h"          /* defines: ZrComm, ZrCollReq, ZrCollOp */

/* One transport: how a request it runs starts, advances, and ends. */
typedef struct ZrCollTransport {
    const char *name;
    /* q's op, count and dtype are set; recv and root as the public call gave them */
    int (*start)(ZrComm *c, ZrCollReq *q, const void *send, void *recv, int root);
    int (*progress)(ZrComm *c, ZrCollReq *q);  /* 1 done, 0 pending, < 0 error */
    void (*abort)(ZrComm *c);                  /* before MPI_Abort on a timeout */
    void (*fini)(ZrComm *c);                   /* collective */
} ZrCollTransport;

#define ZR_SCRATCH_SLOTS 8         /* cached scratch buffers (alltoall receive, padding, block) */
#define ZR_PUB_WORDS 4        /* published per rank: seq started, op, step, seq completed */

struct ZrComm {
    int rank, world;
    MPI_Comm mpi;             /* a dup of MPI_COMM_WORLD with MPI_ERRORS_RETURN */
    int we_inited;            /* we called MPI_Init_thread, so destroy finalises */
    double timeout_s;
    int64_t step;             /* set by the trainer, named in timeout messages */
    int64_t seq;              /* collectives started so far on this rank */
    struct { void *p; size_t bytes; int busy; } scratch[ZR_SCRATCH_SLOTS];
    MPI_Win win;              /* MPI_WIN_NULL if RMA is unavailable */
    int64_t *pub;             /* this rank's ZR_PUB_WORDS words, inside win */
    ZrCollReq *head, *tail;   /* in-flight requests, in issue order */
    int moved;                /* set when a request advanced: the waiter's backoff restarts */
    const ZrCollTransport *node;  /* sums on this node (zr_coll_shm.c) when shm_on; else NULL */
    const ZrCollTransport *dev;   /* device buffers (zr_coll_nccl.c) once zr_comm_use_nccl; NULL */
    /* shared-memory reductions (zr_coll_shm.c); shm_on = 0 when not every rank is on this node */
    int shm_on;
    MPI_Win shm_win;
    char **seg;               /* seg[r]: rank r's shm_bytes, mapped in this process */
    size_t shm_bytes;
    int64_t *shm_ctl;         /* barrier arrivals, in rank 0's segment (after its shm_bytes) */
    int64_t shm_bars;         /* barriers this rank has arrived at */
    int shm_half;             /* which half of the segments the next chunk uses */
    /* NCCL (zr_coll_nccl.c, CUDA builds): data collectives on device buffers */
    int nccl_on, nccl_own_stream;
    void *nccl;               /* ncclComm_t */
    void *stream;             /* cudaStream_t the collectives run on */
};

struct ZrCollReq {
    ZrCollOp op;
    ZrDtype dt;
    int64_t count;            /* elements: per rank for all_gather / reduce_scatter */
    int64_t seq, step;
    double t0;                /* start, seconds (CLOCK_MONOTONIC) */
    int phase;                /* all_reduce: 0 alltoall, 1 allgather */
    int mpi_done;             /* the MPI request of the current phase completed */
    int64_t B;                /* block elements of the alltoall */
    MPI_Request mreq;
    void *recv;
    void *scratch, *pad, *block;   /* from the comm's cache; NULL if unused */
    ZrCollReq *next;          /* in the communicator's in-flight list */
    int state;                /* 0 in flight, 1 complete, < 0 failed (negative errno) */
    /* shared-memory path */
    int shm;                  /* 1: runs in zr_coll_shm.c */
    int shm_stage;
    int64_t shm_off;          /* element offset inside the rank block of the current chunk */
    int64_t shm_target;       /* barrier count to wait for */
    const void *send;
    int nccl;                 /* 1: runs on NCCL, completes with event */
    void *event;              /* cudaEvent_t recorded after the NCCL call */
};

/* zr_coll_common.c: out = sum of in[0..world-1] (n elements each), rank order, fp32, one rounding */
void zr_coll_reduce(const void *const *in, void *out, int64_t n, int world, ZrDtype dt);

/* zr_coll_shm.c: collective; when every rank is on this node, sets shm_on and c->node (its
** all_reduce and reduce_scatter) */
void zr_coll_shm_init(ZrComm *c);

/* NCCL's kernels waiting on a peer never finish: a timeout aborts the device transport first. */
static inline void zr_coll_dev_abort(ZrComm *c)
{
    if (c->dev) c->dev->abort(c);
}

/* zr_coll_watchdog.c */
double zr_coll_default_timeout(void);          /* ZR_COLL_TIMEOUT_S or 300 */
void zr_coll_watch_init(ZrComm *c);            /* collective: creates the RMA window */
void zr_coll_watch_fini(ZrComm *c);            /* collective: frees it */
void zr_coll_watch_start(ZrComm *c, ZrCollReq *q);
void zr_coll_watch_done(ZrComm *c, ZrCollReq *q);
void zr_coll_watch_check(ZrComm *c, ZrCollReq *q);   /* aborts the job past the timeout */
void zr_coll_backoff(unsigned polls);          /* spin, then yield, then sleep briefly */
/* Open MPI raises errors of nonblocking collectives found in MPI_Test on MPI_COMM_WORLD, not on
** our communicator: while WORLD has the default fatal handler, replace it by a fatal handler
** that first names the collective in progress. */
void zr_coll_install_errhandler(ZrComm *c);
#endif
