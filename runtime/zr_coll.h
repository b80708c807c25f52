/*
** zr_coll.h — collectives with asynchronous handles and a timeout that never hangs silently.
**
** Backends: MPI (host backend; nonblocking MPI_I* calls progressed by MPI_Test polling) and, in
** CUDA builds (-DZR_WITH_NCCL), NCCL on device buffers after zr_comm_use_nccl (zr_coll_nccl.c;
** compiled but not run on these GPU-less machines). All ranks must issue the same collectives in
** the same order (the static schedule guarantees it); each gets a sequence number.
**
** Numerics. Sums are computed by libzrt, not by MPI: reduce_scatter moves blocks with an
** alltoall (or, all ranks on one node, through an MPI-3 shared-memory window: ZR_COLL_SHM=0
** turns it off, ZR_COLL_SHM_KB sizes it, default 16 MiB per rank) and each rank adds the world's
** contributions for its block in rank order 0..W-1, in fp32 (16-bit inputs are widened exactly,
** summed in fp32 and rounded once, RNE, at the end). Both paths give the same bits.
** So for a given world size every run gives the same bits, every rank holds the same all_reduce
** result, and bf16/fp16 sums lose nothing to intermediate rounding. all_reduce = reduce_scatter
** + all_gather over ceil(count/world)-element blocks (padding handled internally).
**
** Sizes. reduce_scatter and all_gather take equal blocks of count_per_rank elements: a tensor
** whose size does not divide by the world size is padded BY THE CALLER to world*count_per_rank
** (the plan's padded_numel); the padding is summed like any element (keep it zero).
** Counts are limited to INT_MAX elements per rank block (MPI's int counts): -EOVERFLOW beyond.
**
** Timeout. zr_coll_wait polls; a collective not complete the timeout after it was issued
** (ZR_COLL_TIMEOUT_S, default 300 s, or zr_comm_set_timeout) prints, on each rank that times out,
**   zr_coll: TIMEOUT after 300 s in all_reduce (seq 17, step 4, 4194304 x fp32) on rank 0 of 4
**   zr_coll: [rank 0] ranks not arrived: 1 (at seq 16 barrier, step 4)
** (each rank publishes {seq, op, step} in an MPI RMA window read one-sidedly on timeout) and
** calls MPI_Abort(MPI_COMM_WORLD, 70): every rank ends, mpirun exits non-zero. This abort is the
** one documented exception to "runtime functions never exit" (a hung job is worse).
**
** Progress. Any zr_coll_test / zr_coll_wait advances every in-flight collective of the
** communicator (issue order), so waiting on one never starves another that a peer waits on.
** A failed MPI call comes back as -EIO (collective, seq and step on stderr); a mismatched
** schedule that Open MPI detects inside MPI_Test aborts with the last collective named.
**
** Buffers belong to the caller and must stay untouched until the handle completes.
** In-place: all_reduce(send == recv) is allowed; reduce_scatter/all_gather require
** non-overlapping buffers except all_gather with send == recv + rank*count_per_rank (in place).
*/
#ifndef ZR_COLL_H
#define ZR_COLL_H
#include <stdint.h>
#include "zr_plan.h"          /* defines: ZrDtype */

typedef struct ZrComm ZrComm;
typedef struct ZrCollReq ZrCollReq;   /* one in-flight collective; freed by wait / test == done */

typedef enum {
    ZR_COLL_ALL_GATHER, ZR_COLL_REDUCE_SCATTER, ZR_COLL_ALL_REDUCE, ZR_COLL_BROADCAST,
    ZR_COLL_BARRIER, ZR_COLL_NOPS
} ZrCollOp;

/*
** Creates the communicator over MPI_COMM_WORLD. Calls MPI_Init_thread(FUNNELED) if MPI is not
** initialised yet (then zr_comm_destroy finalises it). Collective: every rank calls it.
** Returns 0, -ENOMEM, -EIO (an MPI error; message on stderr).
*/
int zr_comm_create(ZrComm **out);
void zr_comm_destroy(ZrComm *c);     /* collective; waits for nothing: complete handles first */

int zr_comm_rank(const ZrComm *c);
int zr_comm_world(const ZrComm *c);
/* Seconds after which a collective aborts the job; <= 0 restores the default/env value. */
void zr_comm_set_timeout(ZrComm *c, double seconds);
/* The training step named in timeout messages (the trainer sets it every step). */
void zr_comm_set_step(ZrComm *c, int64_t step);
/* Sequence number the next collective will get (starts at 1); for tests and traces. */
int64_t zr_comm_seq(const ZrComm *c);
/* How sums are done: "nccl", "shm" (shared-memory window, all ranks on one node), "alltoall". */
const char *zr_comm_reduce_path(const ZrComm *c);
/*
** CUDA builds: from now on all_gather, reduce_scatter, all_reduce and broadcast of this
** communicator run on NCCL, on DEVICE buffers, on `cuda_stream` (a cudaStream_t; NULL: one of
** its own). Collective. Bootstraps the ncclUniqueId over MPI_Bcast; takes GPU local_rank %
** devices. NCCL's sums are in NCCL's order (not rank order; bf16/fp16 accumulate in 16 bits).
** Returns 0, -ENOTSUP (built without ZR_WITH_NCCL), -ENODEV (no GPU on some rank), -EIO.
*/
int zr_comm_use_nccl(ZrComm *c, void *cuda_stream);

/*
** Starting a collective: returns 0 and a handle in *req, or a negative errno (-EINVAL bad
** argument, -EOVERFLOW count, -ENOMEM, -EIO MPI error). req == NULL means blocking: the call
** waits (with the timeout) before returning.
**   all_gather:     recv[r*cpr .. (r+1)*cpr) = send of rank r; recv holds world*cpr elements.
**   reduce_scatter: send holds world*cpr elements; recv (cpr) = sum over ranks of block `rank`.
**   all_reduce:     recv (count) = sum over ranks of send (count); send == recv allowed.
**   broadcast:      buf (count) of rank root copied to every rank.
**   barrier:        completes when every rank has entered it.
*/
int zr_all_gather(ZrComm *c, const void *send, void *recv, int64_t count_per_rank, ZrDtype dt,
                  ZrCollReq **req);
int zr_reduce_scatter(ZrComm *c, const void *send, void *recv, int64_t count_per_rank,
                      ZrDtype dt, ZrCollReq **req);
int zr_all_reduce(ZrComm *c, const void *send, void *recv, int64_t count, ZrDtype dt,
                  ZrCollReq **req);
int zr_broadcast(ZrComm *c, void *buf, int64_t count, ZrDtype dt, int root, ZrCollReq **req);
int zr_barrier(ZrComm *c, ZrCollReq **req);

/* Progresses req; *done = 1 when complete (req is then freed and must not be used again).
** Aborts the job on timeout like zr_coll_wait. Returns 0 or -EIO. */
int zr_coll_test(ZrComm *c, ZrCollReq *req, int *done);
/* Waits for completion (polling, yielding the CPU) and frees req. NULL req is a no-op.
** Returns 0 or -EIO; aborts every rank on timeout (see above). */
int zr_coll_wait(ZrComm *c, ZrCollReq *req);

const char *zr_coll_op_name(ZrCollOp op);   /* "all_gather", "reduce_scatter", ... */
#endif
