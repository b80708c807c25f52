/*
** zr_coll_nccl.c — the NCCL backend of zr_coll.h for CUDA builds (compiled in with -DZR_WITH_NCCL
** and the CUDA include/library paths; without it zr_comm_use_nccl says -ENOTSUP).
**
** zr_comm_use_nccl switches a communicator made by zr_comm_create to NCCL for the data
** collectives: the ncclUniqueId is made on rank 0 and sent with MPI_Bcast on the communicator's
** own MPI duplicate, each rank takes GPU local_rank % devices, and every collective is issued on
** one CUDA stream followed by an event. A request completes when its event has (cudaEventQuery,
** polled by the same progress loop as the MPI path), so the timeout report and MPI_Abort of
** zr_coll_watchdog.c work unchanged; ncclCommGetAsyncError is checked on every poll. barrier stays
** an MPI barrier (host-side ordering is what the schedule needs from it).
** Numerics differ from the host path: NCCL sums in its own order (ring/tree), and bf16/fp16 sums
** accumulate in the 16-bit type; NCCL_ALGO=Ring NCCL_PROTO=Simple gives repeatable results for a
** given world size. Buffers must be device (or managed) memory.
*/
#include <errno.h>
#include <stdio.h>
#include "zr_coll_int.h"      /* defines: ZrComm, ZrCollReq internals */

#ifdef ZR_WITH_NCCL
/* the vendor headers do not pass our warnings (-Wundef, -Wstrict-prototypes) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime.h>
#include <nccl.h>
#pragma GCC diagnostic pop

static ncclDataType_t nccl_type(ZrDtype dt)
{
    return dt == ZR_DT_FP32 ? ncclFloat32 : dt == ZR_DT_BF16 ? ncclBfloat16 : ncclFloat16;
}

/* 1 on every rank if ok is 1 on every rank: one rank's failure must not leave others in NCCL. */
static int all_ok(ZrComm *c, int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, c->mpi);
    return all;
}

static const ZrCollTransport nccl_transport;

int zr_comm_use_nccl(ZrComm *c, void *stream)
{
    int ndev = 0, ok;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    ok = ce == cudaSuccess && ndev > 0;
    if (!ok)
        fprintf(stderr, "zr_coll: rank %d: no CUDA device for NCCL (%s)\n", c->rank,
                ce == cudaSuccess ? "0 devices" : cudaGetErrorString(ce));
    if (!all_ok(c, ok)) return -ENODEV;
    MPI_Comm node;
    int local = 0;
    if (MPI_Comm_split_type(c->mpi, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    ce = cudaSetDevice(local % ndev);
    ok = ce == cudaSuccess;
    cudaStream_t s = stream;
    if (ok && !s) {
        ce = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        ok = ce == cudaSuccess;
        c->nccl_own_stream = ok;
    }
    if (!ok) fprintf(stderr, "zr_coll: rank %d: CUDA setup failed: %s\n", c->rank,
                     cudaGetErrorString(ce));
    if (!all_ok(c, ok)) return -EIO;
    ncclUniqueId id;
    ncclResult_t nr = ncclSuccess;
    if (c->rank == 0) nr = ncclGetUniqueId(&id);
    if (!all_ok(c, nr == ncclSuccess)) return -EIO;
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->mpi);
    ncclComm_t comm;
    nr = ncclCommInitRank(&comm, c->world, id, c->rank);
    if (nr != ncclSuccess)
        fprintf(stderr, "zr_coll: rank %d: ncclCommInitRank failed: %s\n", c->rank,
                ncclGetErrorString(nr));
    if (!all_ok(c, nr == ncclSuccess)) return -EIO;
    c->nccl = comm;
    c->stream = s;
    c->nccl_on = 1;
    c->dev = &nccl_transport;
    return 0;
}

static int nccl_start(ZrComm *c, ZrCollReq *q, const void *send, void *recv, int root)
{
    ncclComm_t comm = c->nccl;
    cudaStream_t s = c->stream;
    ncclDataType_t t = nccl_type(q->dt);
    size_t n = (size_t)q->count;
    ncclResult_t nr;
    switch (q->op) {
    case ZR_COLL_ALL_GATHER: nr = ncclAllGather(send, recv, n, t, comm, s); break;
    case ZR_COLL_REDUCE_SCATTER: nr = ncclReduceScatter(send, recv, n, t, ncclSum, comm, s); break;
    case ZR_COLL_ALL_REDUCE: nr = ncclAllReduce(send, recv, n, t, ncclSum, comm, s); break;
    case ZR_COLL_BROADCAST: nr = ncclBroadcast(send, recv, n, t, root, comm, s); break;
    default: return -EINVAL;
    }
    if (nr != ncclSuccess) {
        fprintf(stderr, "zr_coll: rank %d: NCCL %s (seq %lld, step %lld) failed: %s\n", c->rank,
                zr_coll_op_name(q->op), (long long)q->seq, (long long)q->step,
                ncclGetErrorString(nr));
        return -EIO;
    }
    cudaEvent_t ev;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(ev, s) != cudaSuccess)
        return -EIO;
    q->event = ev;
    q->nccl = 1;
    return 0;
}

static int nccl_progress(ZrComm *c, ZrCollReq *q)
{
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(c->nccl, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
        fprintf(stderr, "zr_coll: rank %d: NCCL error during %s (seq %lld, step %lld): %s\n",
                c->rank, zr_coll_op_name(q->op), (long long)q->seq, (long long)q->step,
                ncclGetErrorString(async));
        return -EIO;
    }
    cudaError_t ce = cudaEventQuery(q->event);
    if (ce == cudaErrorNotReady) return 0;
    cudaEventDestroy(q->event);
    q->event = NULL;
    if (ce == cudaSuccess) return 1;
    fprintf(stderr, "zr_coll: rank %d: CUDA error after %s (seq %lld): %s\n", c->rank,
            zr_coll_op_name(q->op), (long long)q->seq, cudaGetErrorString(ce));
    return -EIO;
}

static void nccl_abort(ZrComm *c)
{
    if (c->nccl_on) ncclCommAbort(c->nccl);
    c->nccl_on = 0;
}

static void nccl_fini(ZrComm *c)
{
    if (!c->nccl_on) return;
    ncclCommDestroy(c->nccl);
    if (c->nccl_own_stream) cudaStreamDestroy(c->stream);
    c->nccl_on = 0;
}

static const ZrCollTransport nccl_transport = {"nccl", nccl_start, nccl_progress, nccl_abort, nccl_fini};

#else /* no NCCL in this build: no transport to install */

int zr_comm_use_nccl(ZrComm *c, void *stream)
{
    (void)stream;
    if (c && c->rank == 0)
        fprintf(stderr, "zr_coll: this libzrt was built without NCCL (-DZR_WITH_NCCL)\n");
    return -ENOTSUP;
}
#endif
