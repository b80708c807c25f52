/*
** zr_coll_mpi.c — the MPI backend of zr_coll.h: nonblocking collectives as small state machines.
**
** Sums are ours, not MPI's (see zr_coll.h): MPI only moves bytes (alltoall, allgather, bcast),
** and zr_coll_reduce adds the W contributions of a block in rank order, in fp32. That makes results
** independent of Open MPI's algorithm choice, identical on every rank, and lets bf16/fp16 sum in
** fp32 (MPI has no 16-bit float types). all_reduce is reduce_scatter over ceil(n/W) blocks
** (phase 1) followed by an allgather of the summed block (phase 2).
** On one node the sums go through a shared-memory window instead (zr_coll_shm.c), on device
** buffers through NCCL (zr_coll_nccl.c): transports this core calls through their tables
** (zr_coll_int.h), never by name, except zr_coll_shm_init at creation, which decides the first.
** Progress: every zr_coll_test / zr_coll_wait advances ALL in-flight requests of the
** communicator in issue order (MPI_Test, local sums, shared-memory stages), so a rank waiting on
** one collective never starves a peer that needs it in another. The timeout and its message are
** in zr_coll_watchdog.c. Scratch buffers are cached in the communicator, because mapping and
** faulting in tens of MiB per call costs more than the copy itself.
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "zr_coll_int.h"      /* defines: ZrComm, ZrCollReq internals, watchdog hooks */

static size_t dt_size(ZrDtype dt) { return dt == ZR_DT_FP32 ? 4 : 2; }
static MPI_Datatype dt_mpi(ZrDtype dt) { return dt == ZR_DT_FP32 ? MPI_FLOAT : MPI_UINT16_T; }

/* {===================================================================== communicator */
int zr_comm_create(ZrComm **out)
{
    int inited = 0, rc;
    if (!out) return -EINVAL;
    *out = NULL;
    MPI_Initialized(&inited);
    ZrComm *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    if (!inited) {
        int provided;
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "zr_coll: MPI_Init_thread failed (%d)\n", rc);
            free(c);
            return -EIO;
        }
        c->we_inited = 1;
    }
    /* our own communicator: our tags never meet the trainer's messages, and an MPI error in a
    ** collective comes back to us (to be reported with its name and sequence) instead of
    ** killing the job with MPI's generic text */
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "zr_coll: MPI_Comm_dup failed (%d)\n", rc);
        free(c);
        return -EIO;
    }
    MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
    zr_coll_install_errhandler(c);
    MPI_Comm_rank(c->mpi, &c->rank);
    MPI_Comm_size(c->mpi, &c->world);
    c->seq = 0;
    c->timeout_s = zr_coll_default_timeout();
    zr_coll_watch_init(c);
    zr_coll_shm_init(c);
    *out = c;
    return 0;
}

void zr_comm_destroy(ZrComm *c)
{
    if (!c) return;
    if (c->dev) c->dev->fini(c);
    if (c->node) c->node->fini(c);
    zr_coll_watch_fini(c);
    MPI_Comm_free(&c->mpi);
    for (int i = 0; i < ZR_SCRATCH_SLOTS; i++) free(c->scratch[i].p);
    if (c->we_inited) {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
    free(c);
}

int zr_comm_rank(const ZrComm *c) { return c->rank; }
int zr_comm_world(const ZrComm *c) { return c->world; }
void zr_comm_set_timeout(ZrComm *c, double s)
{
    c->timeout_s = s > 0 ? s : zr_coll_default_timeout();
}
void zr_comm_set_step(ZrComm *c, int64_t step) { c->step = step; }
int64_t zr_comm_seq(const ZrComm *c) { return c->seq + 1; }
const char *zr_comm_reduce_path(const ZrComm *c)
{
    return c->nccl_on ? "nccl" : c->shm_on ? "shm" : "alltoall";
}

/* A cached buffer of at least `bytes`, or NULL. Released with scratch_put. */
static void *scratch_get(ZrComm *c, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < ZR_SCRATCH_SLOTS; i++)
        if (c->scratch[i].p && !c->scratch[i].busy && c->scratch[i].bytes >= bytes &&
            (best < 0 || c->scratch[i].bytes < c->scratch[best].bytes))
            best = i;
    if (best < 0) {                          /* replace the smallest idle slot */
        for (int i = 0; i < ZR_SCRATCH_SLOTS; i++)
            if (!c->scratch[i].busy && (best < 0 || c->scratch[i].bytes < c->scratch[best].bytes))
                best = i;
        if (best < 0) return malloc(bytes);  /* all busy: uncached */
        free(c->scratch[best].p);
        c->scratch[best].p = malloc(bytes);
        c->scratch[best].bytes = c->scratch[best].p ? bytes : 0;
        if (!c->scratch[best].p) return NULL;
    }
    c->scratch[best].busy = 1;
    return c->scratch[best].p;
}

static void scratch_put(ZrComm *c, void *p)
{
    if (!p) return;
    for (int i = 0; i < ZR_SCRATCH_SLOTS; i++)
        if (c->scratch[i].p == p) { c->scratch[i].busy = 0; return; }
    free(p);
}
/* }===================================================================== */

/* {===================================================================== local reduction */
/* The W blocks of B elements of a contiguous buffer, as reduce inputs. */
static void reduce_blocks(ZrComm *c, const void *buf, int64_t B, void *out, ZrDtype dt)
{
    const void *in[c->world];
    for (int r = 0; r < c->world; r++) in[r] = (const char *)buf + (size_t)(r * B) * dt_size(dt);
    zr_coll_reduce(in, out, B, c->world, dt);
}
/* }===================================================================== */

/* {===================================================================== requests */
static ZrCollReq *new_req(ZrComm *c, ZrCollOp op, int64_t count, ZrDtype dt)
{
    ZrCollReq *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->op = op;
    q->count = count;
    q->dt = dt;
    q->mreq = MPI_REQUEST_NULL;
    q->seq = ++c->seq;
    q->step = c->step;
    if (c->tail) c->tail->next = q;
    else c->head = q;
    c->tail = q;
    zr_coll_watch_start(c, q);
    return q;
}

static void free_req(ZrComm *c, ZrCollReq *q)
{
    ZrCollReq *prev = NULL;
    for (ZrCollReq *x = c->head; x; prev = x, x = x->next) {
        if (x != q) continue;
        if (prev) prev->next = q->next;
        else c->head = q->next;
        if (c->tail == q) c->tail = prev;
        break;
    }
    scratch_put(c, q->scratch);
    scratch_put(c, q->pad);
    scratch_put(c, q->block);
    free(q);
}

static int mpi_fail(ZrComm *c, ZrCollReq *q, const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "zr_coll: rank %d: %s for %s (seq %lld, step %lld) failed: %s\n", c->rank,
            call, zr_coll_op_name(q->op), (long long)q->seq, (long long)q->step, msg);
    return -EIO;
}

/* Hands a started request to the caller, or waits for it when req == NULL. */
static int finish_start(ZrComm *c, ZrCollReq *q, int rc, ZrCollReq **req)
{
    if (rc < 0) { zr_coll_watch_done(c, q); free_req(c, q); return rc; }
    if (req) { *req = q; return 0; }
    return zr_coll_wait(c, q);
}

static int check_count(int64_t n) { return n < 0 ? -EINVAL : n > INT_MAX ? -EOVERFLOW : 0; }

int zr_all_gather(ZrComm *c, const void *send, void *recv, int64_t cpr, ZrDtype dt,
                  ZrCollReq **req)
{
    int rc = check_count(cpr);
    if (!c || rc || (cpr && (!send || !recv))) return rc ? rc : -EINVAL;
    ZrCollReq *q = new_req(c, ZR_COLL_ALL_GATHER, cpr, dt);
    if (!q) return -ENOMEM;
    if (c->nccl_on) return finish_start(c, q, c->dev->start(c, q, send, recv, 0), req);
    const char *own = (const char *)recv + (size_t)c->rank * (size_t)cpr * dt_size(dt);
    rc = MPI_Iallgather(send == own ? MPI_IN_PLACE : send, (int)cpr, dt_mpi(dt), recv, (int)cpr,
                        dt_mpi(dt), c->mpi, &q->mreq);
    return finish_start(c, q, rc == MPI_SUCCESS ? 0 : mpi_fail(c, q, "MPI_Iallgather", rc), req);
}

/* Phase 1 of reduce_scatter / all_reduce: alltoall of W blocks of B elements into scratch. */
static int start_alltoall(ZrComm *c, ZrCollReq *q, const void *send, int64_t B)
{
    size_t bytes = (size_t)c->world * (size_t)B * dt_size(q->dt);
    q->scratch = scratch_get(c, bytes ? bytes : 1);
    if (!q->scratch) return -ENOMEM;
    q->B = B;
    int rc = MPI_Ialltoall(send, (int)B, dt_mpi(q->dt), q->scratch, (int)B, dt_mpi(q->dt),
                           c->mpi, &q->mreq);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(c, q, "MPI_Ialltoall", rc);
}

int zr_reduce_scatter(ZrComm *c, const void *send, void *recv, int64_t cpr, ZrDtype dt,
                      ZrCollReq **req)
{
    int rc = check_count(cpr);
    if (!c || rc || (cpr && (!send || !recv))) return rc ? rc : -EINVAL;
    ZrCollReq *q = new_req(c, ZR_COLL_REDUCE_SCATTER, cpr, dt);
    if (!q) return -ENOMEM;
    q->recv = recv;
    if (c->nccl_on) return finish_start(c, q, c->dev->start(c, q, send, recv, 0), req);
    if (c->shm_on) return finish_start(c, q, c->node->start(c, q, send, recv, 0), req);
    return finish_start(c, q, start_alltoall(c, q, send, cpr), req);
}

int zr_all_reduce(ZrComm *c, const void *send, void *recv, int64_t count, ZrDtype dt,
                  ZrCollReq **req)
{
    if (!c || count < 0 || (count && (!send || !recv))) return -EINVAL;
    int64_t W = c->world, B = (count + W - 1) / W;
    int rc = check_count(B);
    if (rc) return rc;
    ZrCollReq *q = new_req(c, ZR_COLL_ALL_REDUCE, count, dt);
    if (!q) return -ENOMEM;
    q->recv = recv;
    if (c->nccl_on) return finish_start(c, q, c->dev->start(c, q, send, recv, 0), req);
    size_t esz = dt_size(dt);
    if (W == 1) {       /* one rank: the sum is its own values (a 16-bit value widens and rounds
                        ** back to itself), so nothing moves; the handle is complete at once */
        if (send != recv && count) memmove(recv, send, (size_t)count * esz);
        q->state = 1;
        zr_coll_watch_done(c, q);
        return finish_start(c, q, 0, req);
    }
    if (c->shm_on) return finish_start(c, q, c->node->start(c, q, send, recv, 0), req);
    if (B * W != count) {                    /* pad to W equal blocks with zeros */
        q->pad = scratch_get(c, (size_t)(B * W) * esz);
        if (!q->pad) return finish_start(c, q, -ENOMEM, req);
        memcpy(q->pad, send, (size_t)count * esz);
        memset((char *)q->pad + (size_t)count * esz, 0, (size_t)(B * W - count) * esz);
        send = q->pad;
    }
    return finish_start(c, q, start_alltoall(c, q, send, B), req);
}

int zr_broadcast(ZrComm *c, void *buf, int64_t count, ZrDtype dt, int root, ZrCollReq **req)
{
    int rc = check_count(count);
    if (!c || rc || (count && !buf) || root < 0 || root >= c->world) return rc ? rc : -EINVAL;
    ZrCollReq *q = new_req(c, ZR_COLL_BROADCAST, count, dt);
    if (!q) return -ENOMEM;
    if (c->nccl_on) return finish_start(c, q, c->dev->start(c, q, buf, buf, root), req);
    rc = MPI_Ibcast(buf, (int)count, dt_mpi(dt), root, c->mpi, &q->mreq);
    return finish_start(c, q, rc == MPI_SUCCESS ? 0 : mpi_fail(c, q, "MPI_Ibcast", rc), req);
}

int zr_barrier(ZrComm *c, ZrCollReq **req)
{
    if (!c) return -EINVAL;
    ZrCollReq *q = new_req(c, ZR_COLL_BARRIER, 0, ZR_DT_FP32);
    if (!q) return -ENOMEM;
    int rc = MPI_Ibarrier(c->mpi, &q->mreq);
    return finish_start(c, q, rc == MPI_SUCCESS ? 0 : mpi_fail(c, q, "MPI_Ibarrier", rc), req);
}

/* The MPI part of the current phase completed: do the local work, maybe start the next phase.
** Returns 1 when the whole collective is done, 0 if a new phase started, <0 on error. */
static int advance(ZrComm *c, ZrCollReq *q)
{
    if (q->op == ZR_COLL_REDUCE_SCATTER) {
        reduce_blocks(c, q->scratch, q->B, q->recv, q->dt);
        return 1;
    }
    if (q->op != ZR_COLL_ALL_REDUCE || q->phase == 1) {
        if (q->op == ZR_COLL_ALL_REDUCE && q->pad)      /* gathered into pad: trim to count */
            memcpy(q->recv, q->pad, (size_t)q->count * dt_size(q->dt));
        return 1;
    }
    /* all_reduce, phase 0 -> 1: sum our block, then gather every block */
    size_t esz = dt_size(q->dt);
    q->block = scratch_get(c, (size_t)q->B * esz + 1);
    if (!q->block) return -ENOMEM;
    reduce_blocks(c, q->scratch, q->B, q->block, q->dt);
    void *dst = q->pad ? q->pad : q->recv;   /* the alltoall is done: send/pad are free again */
    q->phase = 1;
    int rc = MPI_Iallgather(q->block, (int)q->B, dt_mpi(q->dt), dst, (int)q->B, dt_mpi(q->dt),
                            c->mpi, &q->mreq);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(c, q, "MPI_Iallgather", rc);
}

/* Advances one MPI-path request as far as it goes now: 1 done, 0 pending, <0 error.
** MPI matches nonblocking collectives by the order in which ranks START them, so a second phase
** (all_reduce's allgather) may only start when every earlier request has started all of its
** phases (may_start): otherwise two ranks could pair the allgathers of different all_reduces. */
static int progress_mpi(ZrComm *c, ZrCollReq *q, int may_start)
{
    for (;;) {
        if (!q->mpi_done) {
            int flag = 0;
            int rc = MPI_Test(&q->mreq, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) return mpi_fail(c, q, "MPI_Test", rc);
            if (!flag) return 0;
            q->mpi_done = 1;
            c->moved = 1;
        }
        if (q->op == ZR_COLL_ALL_REDUCE && q->phase == 0 && !may_start) return 0;
        int rc = advance(c, q);
        if (rc != 0) return rc;
        q->mpi_done = 0;                     /* a new phase started */
    }
}

/* Every in-flight request, in issue order. Shared-memory requests share one window, so only
** the oldest unfinished one may advance; MPI phases start in issue order (see progress_mpi). */
static void progress_all(ZrComm *c)
{
    int shm_busy = 0, order_block = 0;
    for (ZrCollReq *x = c->head; x; x = x->next) {
        if (x->state != 0) continue;
        if (x->shm && shm_busy) continue;
        int rc = x->nccl ? c->dev->progress(c, x)
                 : x->shm ? c->node->progress(c, x) : progress_mpi(c, x, !order_block);
        if (rc != 0) {
            x->state = rc;
            zr_coll_watch_done(c, x);
        } else if (x->shm) {
            shm_busy = 1;
        } else if (!x->nccl && x->op == ZR_COLL_ALL_REDUCE && x->phase == 0) {
            order_block = 1;                 /* its allgather has yet to start */
        }
    }
}

int zr_coll_test(ZrComm *c, ZrCollReq *q, int *done)
{
    *done = 0;
    progress_all(c);
    if (q->state == 0) {
        zr_coll_watch_check(c, q);
        return 0;
    }
    int rc = q->state < 0 ? q->state : 0;   /* on error the request is unusable: freed too */
    free_req(c, q);
    *done = rc == 0;
    return rc;
}

int zr_coll_wait(ZrComm *c, ZrCollReq *q)
{
    if (!q) return 0;
    for (unsigned polls = 0;; polls++) {
        c->moved = 0;
        int done = 0, rc = zr_coll_test(c, q, &done);
        if (rc < 0 || done) return rc;
        if (c->moved) polls = 0;             /* something advanced: peers are active, poll fast */
        zr_coll_backoff(polls);
    }
}
/* }===================================================================== */
