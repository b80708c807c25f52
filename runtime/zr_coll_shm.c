/*
** zr_coll_shm.c — all_reduce and reduce_scatter through an MPI-3 shared-memory window, when every
** rank is on this node (the host backend's usual case).
**
** Open MPI's reductions over shared memory run far below memory bandwidth here (docs/CONTRIBUTING.md
** "Measured on this machine"). Instead each rank owns a segment of one MPI_Win_allocate_shared window, mapped in every
** process: a rank copies its input in, every rank sums its block straight from the W segments
** (in rank order, fp32: the same bits as the MPI path, see zr_coll_reduce), and for all_reduce
** every rank copies all sums out. Large collectives go in chunks of half a segment
** (ZR_COLL_SHM_KB per rank, default 16384 = 16 MiB). Ranks synchronise with a counter in shared
** memory (barrier k completes when W*k arrivals are counted), polled from zr_coll_test, so the
** collective stays asynchronous and the timeout watchdog still sees a late rank.
** One shared-memory collective runs at a time, in issue order (zr_coll_mpi.c progress_all).
** ZR_COLL_SHM=0 turns the path off (then the alltoall path of zr_coll_mpi.c runs).
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zr_coll_int.h"      /* defines: ZrComm, ZrCollReq internals */

static size_t dt_size(ZrDtype dt) { return dt == ZR_DT_FP32 ? 4 : 2; }
static const ZrCollTransport shm_transport;

void zr_coll_shm_init(ZrComm *c)
{
    c->shm_on = 0;
    c->shm_win = MPI_WIN_NULL;
    const char *e = getenv("ZR_COLL_SHM");
    if (c->world < 2) return;
    int want = !(e && strcmp(e, "0") == 0), all_want = 0;   /* all ranks decide alike */
    MPI_Allreduce(&want, &all_want, 1, MPI_INT, MPI_LAND, c->mpi);
    if (!all_want) return;
    MPI_Comm node;
    if (MPI_Comm_split_type(c->mpi, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return;
    int nsize = 0, all_local = 0, mine;
    MPI_Comm_size(node, &nsize);
    mine = nsize == c->world;
    MPI_Allreduce(&mine, &all_local, 1, MPI_INT, MPI_LAND, c->mpi);   /* all or none */
    if (!all_local) { MPI_Comm_free(&node); return; }
    const char *kb = getenv("ZR_COLL_SHM_KB");
    long k = kb && atol(kb) >= 1 ? atol(kb) : 16384;
    c->shm_bytes = (size_t)k << 10;
    size_t least = 2 * (size_t)(c->world + 1) * 4 * 256;   /* a chunk of >= 256 elements */
    if (c->shm_bytes < least) c->shm_bytes = least;
    char *base = NULL;
    int rc = MPI_Win_allocate_shared((MPI_Aint)(c->shm_bytes + 64), 1, MPI_INFO_NULL, node, &base,
                                     &c->shm_win);
    int ok = rc == MPI_SUCCESS, all_ok = 0;
    c->seg = ok ? calloc((size_t)c->world, sizeof *c->seg) : NULL;
    ok = ok && c->seg;
    for (int r = 0; ok && r < c->world; r++) {   /* node rank r == world rank r (key = rank) */
        MPI_Aint size;
        int disp;
        void *p;
        ok = MPI_Win_shared_query(c->shm_win, r, &size, &disp, &p) == MPI_SUCCESS &&
             (size_t)size >= c->shm_bytes + 64;
        if (ok) c->seg[r] = p;
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, c->mpi);
    MPI_Comm_free(&node);
    if (!all_ok) {
        if (c->rank == 0)
            fprintf(stderr, "zr_coll: no shared-memory window; reductions use alltoall\n");
        if (c->shm_win != MPI_WIN_NULL) MPI_Win_free(&c->shm_win);
        free(c->seg);
        c->seg = NULL;
        return;
    }
    c->shm_ctl = (int64_t *)(c->seg[0] + c->shm_bytes);
    if (c->rank == 0) __atomic_store_n(c->shm_ctl, 0, __ATOMIC_RELEASE);
    c->shm_bars = 0;
    MPI_Barrier(c->mpi);                     /* the counter is zero before anyone arrives */
    c->shm_on = 1;
    c->node = &shm_transport;
}

static void shm_fini(ZrComm *c)
{
    if (c->shm_win != MPI_WIN_NULL) MPI_Win_free(&c->shm_win);
    free(c->seg);
    c->seg = NULL;
    c->shm_on = 0;
    c->node = NULL;
}

/* Elements per rank block in one chunk: half a segment holds `blocks` of them (64-byte
** multiples). Chunks alternate between the two halves of every segment: a rank can only refill a
** half after passing the next chunk's first barrier, which every peer reaches only once done
** with that half, so one barrier per chunk is saved. */
static int64_t chunk_elems(const ZrComm *c, ZrDtype dt, int blocks)
{
    int64_t e = (int64_t)(c->shm_bytes / 2 / ((size_t)blocks * dt_size(dt)));
    return e & ~(int64_t)31;
}

/* all_reduce and reduce_scatter (recv is q->recv already; no root) */
static int shm_start(ZrComm *c, ZrCollReq *q, const void *send, void *recv, int root)
{
    (void)recv;
    (void)root;
    q->shm = 1;
    q->send = send;
    q->shm_stage = 0;
    q->shm_off = 0;
    /* block elements of the whole collective */
    q->B = q->op == ZR_COLL_ALL_REDUCE ? (q->count + c->world - 1) / c->world : q->count;
    return 0;
}

static void arrive(ZrComm *c, ZrCollReq *q)
{
    c->moved = 1;
    c->shm_bars++;
    __atomic_add_fetch(c->shm_ctl, 1, __ATOMIC_ACQ_REL);
    q->shm_target = c->shm_bars * c->world;
}

static int arrived(const ZrComm *c, const ZrCollReq *q)
{
    return __atomic_load_n(c->shm_ctl, __ATOMIC_ACQUIRE) >= q->shm_target;
}

/* Elements of rank block qq's current chunk that lie inside the caller's count (all_reduce pads
** the last block with zeros; reduce_scatter blocks are whole). */
static int64_t valid(const ZrCollReq *q, int qq, int64_t bc)
{
    if (q->op != ZR_COLL_ALL_REDUCE) return bc;
    int64_t start = qq * q->B + q->shm_off, v = q->count - start;
    return v < 0 ? 0 : v < bc ? v : bc;
}

/*
** Stages of one chunk (bc elements of each rank block, starting at shm_off in the block), in the
** current half of every segment:
**   all_reduce:     0 copy in W blocks (zero padded) | 1 sum block `rank` into the sums area
**                   | 2 copy every rank's sums out, next chunk
**   reduce_scatter: 0 copy in W blocks | 1 sum block `rank` into recv, next chunk
** Each bar is a barrier: nobody reads a segment before its owner filled it.
*/
static int shm_progress(ZrComm *c, ZrCollReq *q)
{
    const int W = c->world, me = c->rank, ar = q->op == ZR_COLL_ALL_REDUCE;
    const size_t esz = dt_size(q->dt);
    const int64_t Bc = chunk_elems(c, q->dt, ar ? W + 1 : W);
    for (;;) {
        int64_t bc = q->B - q->shm_off < Bc ? q->B - q->shm_off : Bc;
        if (bc <= 0) return 1;               /* nothing (left) to do */
        size_t half = c->shm_half ? c->shm_bytes / 2 : 0;
        switch (q->shm_stage) {
        case 0: {
            char *dst = c->seg[me] + half;
            for (int qq = 0; qq < W; qq++) {
                int64_t v = valid(q, qq, bc);
                size_t src = (size_t)(qq * q->B + q->shm_off) * esz;
                memcpy(dst + (size_t)(qq * Bc) * esz, (const char *)q->send + src, (size_t)v * esz);
                memset(dst + (size_t)(qq * Bc + v) * esz, 0, (size_t)(bc - v) * esz);
            }
            arrive(c, q);
            q->shm_stage = 1;
            break;
        }
        case 1: {
            if (!arrived(c, q)) return 0;
            const void *in[W];
            for (int r = 0; r < W; r++) in[r] = c->seg[r] + half + (size_t)(me * Bc) * esz;
            void *out = ar ? (void *)(c->seg[me] + half + (size_t)(W * Bc) * esz)
                           : (void *)((char *)q->recv + (size_t)q->shm_off * esz);
            zr_coll_reduce(in, out, bc, W, q->dt);
            if (ar) {
                arrive(c, q);
                q->shm_stage = 2;
            } else {
                q->shm_off += bc;
                c->shm_half ^= 1;
                q->shm_stage = 0;
            }
            break;
        }
        default:
            if (!arrived(c, q)) return 0;
            for (int qq = 0; qq < W; qq++) {
                int64_t v = valid(q, qq, bc);
                memcpy((char *)q->recv + (size_t)(qq * q->B + q->shm_off) * esz,
                       c->seg[qq] + half + (size_t)(W * Bc) * esz, (size_t)v * esz);
            }
            q->shm_off += bc;
            c->shm_half ^= 1;
            q->shm_stage = 0;
            break;
        }
    }
}

static void shm_abort(ZrComm *c) { (void)c; }   /* nothing runs outside the polls */

static const ZrCollTransport shm_transport = {"shm", shm_start, shm_progress, shm_abort, shm_fini};
