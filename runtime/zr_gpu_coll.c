/*
** zr_gpu_coll.c — the collectives of runtime/zr_gpu.h on a real GPU: NCCL through libzrt's collectives
** (zr_coll_nccl.c), on a communicator of its own whose NCCL stream is the trainer's, and collective
** groups (ncclGroupStart / ncclGroupEnd). The requests in flight live in struct ZrGpu
** (zr_gpu_cuda_int.h) because zr_gpu_cuda.c's host waits advance them (zr_coll's watchdog runs there).
** Built only with -DZR_WITH_CUDA, as zr_gpu_cuda.c.
*/
#ifdef ZR_WITH_CUDA
#include <errno.h>
#include <stdio.h>

#include "zr_gpu.h"
#include "zr_coll_int.h"      /* defines: ZrCollReq's fields (nccl, event), the NCCL stream */
#include "zr_gpu_cuda_int.h"  /* defines: struct ZrGpu */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#ifdef ZR_WITH_NCCL
#include <nccl.h>
#endif
#pragma GCC diagnostic pop

/* Waits every collective in flight and forgets them. */
static void reqs_wait(ZrGpu *g)
{
    for (int i = 0; i < g->n_req; i++) zr_coll_wait(g->comm, g->req[i]);
    g->n_req = 0;
}

static void coll_close(ZrGpu *g)
{
    if (g->comm) { reqs_wait(g); zr_comm_destroy(g->comm); }
}
static const ZrGpuPart coll_part = {"collectives", coll_close};

int zr_gpu_coll_init(ZrGpu *g, ZrComm *comm, ZrGpuStream *s)
{
    (void)comm;
    if (g->comm) return 0;
    int rc = zr_comm_create(&g->comm);
    if (rc < 0) { snprintf(g->err, sizeof g->err, "collectives: communicator"); g->comm = NULL; return rc; }
    g->part[ZR_GPU_PART_COLL] = &coll_part;
    rc = zr_comm_use_nccl(g->comm, (void *)s->s);
    if (rc < 0) { snprintf(g->err, sizeof g->err, "collectives: NCCL set-up failed (%d; its reason is above)", rc); return rc; }
    int dev = -1;
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce != cudaSuccess || dev != g->ord) {
        snprintf(g->err, sizeof g->err, "collectives: NCCL is on GPU %d but this rank opened GPU %d "
                 "(the local rank differs between the trainer and MPI's node split)%s%s", dev, g->ord,
                 ce != cudaSuccess ? ": " : "", ce != cudaSuccess ? cudaGetErrorName(ce) : "");
        return -EIO;
    }
    return 0;
}

/* NCCL runs the collective on the communicator's stream (ours); the request only tracks it. */
int zr_gpu_coll(ZrGpuStream *s, ZrCollOp op, const void *send, void *recv, int64_t count, ZrDtype dt)
{
    ZrGpu *g = s->g;
    if (s->capturing) return zr_gpu_capture_refuse(g, s, "zr_gpu_coll (a collective)");
    for (int i = 0; i < g->n_req && !g->group_depth;) {   /* free the completed ones */
        int done = 0;
        if (zr_coll_test(g->comm, g->req[i], &done) < 0) return -EIO;
        if (done) g->req[i] = g->req[--g->n_req]; else i++;
    }
    if (g->n_req == ZG_MAX_REQS) reqs_wait(g);
    ZrCollReq **q = &g->req[g->n_req];
    int rc;
    switch (op) {
    case ZR_COLL_ALL_GATHER: rc = zr_all_gather(g->comm, send, recv, count, dt, q); break;
    case ZR_COLL_REDUCE_SCATTER: rc = zr_reduce_scatter(g->comm, send, recv, count, dt, q); break;
    case ZR_COLL_ALL_REDUCE: rc = zr_all_reduce(g->comm, send, recv, count, dt, q); break;
    default: return -EINVAL;
    }
    if (rc < 0) { snprintf(g->err, sizeof g->err, "%s failed (%d)", zr_coll_op_name(op), rc); return rc; }
    g->n_req++;
    g->moved.net += zr_gpu_coll_net_bytes(op, count, dt, zr_comm_world(g->comm));
    return 0;
}

/* ncclGroupStart / ncclGroupEnd. libzrt records each member's completion event as it issues it,
** which inside a group is before NCCL enqueued anything: the end records them again behind the
** group, so the watchdog and the frees above see the members' real completion. Without NCCL in
** the build (no collectives can run) a group is only counted. */
int zr_gpu_group_begin(ZrGpu *g)
{
    if (g->group_depth++) return 0;
    g->group_first = g->n_req;
#ifdef ZR_WITH_NCCL
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) {
        g->group_depth = 0;
        snprintf(g->err, sizeof g->err, "ncclGroupStart: %s", ncclGetErrorString(r));
        return -EIO;
    }
#endif
    return 0;
}

int zr_gpu_group_end(ZrGpu *g)
{
    if (!g->group_depth) {
        snprintf(g->err, sizeof g->err, "zr_gpu_group_end without zr_gpu_group_begin");
        return -EINVAL;
    }
    if (--g->group_depth) return 0;
#ifdef ZR_WITH_NCCL
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess) {
        snprintf(g->err, sizeof g->err, "ncclGroupEnd: %s", ncclGetErrorString(r));
        return -EIO;
    }
    for (int i = g->group_first; i < g->n_req; i++) {
        ZrCollReq *q = g->req[i];
        if (!q->nccl || !q->event) continue;
        cudaError_t ce = cudaEventRecord((cudaEvent_t)q->event, (cudaStream_t)g->comm->stream);
        if (ce != cudaSuccess) {
            snprintf(g->err, sizeof g->err, "cudaEventRecord after ncclGroupEnd: %s", cudaGetErrorName(ce));
            return -EIO;
        }
    }
#endif
    return 0;
}
#endif
