/*
** zr_gpu.h — the thin GPU layer the CUDA trainer (templates/cuda_trainer/) is written against.
**
** Two implementations of one interface, so that the trainer's orchestration (streams, events,
** copies, kernel launches, cuBLAS and NCCL calls) is the same code on a GPU and on this GPU-less
** machine:
**   runtime/zr_gpu_cuda.c                       the driver API; zr_gpu_blaslt.c cuBLAS and
**     (+ zr_gpu_blaslt.c, zr_gpu_coll.c,        cuBLASLt, zr_gpu_coll.c NCCL, zr_gpu_graph.c
**        zr_gpu_graph.c)                        stream capture (built with -DZR_WITH_CUDA;
**                                               they compile to nothing otherwise)
**   templates/cuda_trainer/zr_gpu_emu.cpp       the "GPU stand-in": streams are ordered queues run
**                                               lazily by a deterministic scheduler, events are
**                                               sequence marks, copies are memcpy, kernels run under
**                                               zr_simt.h, gemms on OpenBLAS, collectives on libzrt's
**                                               MPI collectives.
** Conventions
**   - Device addresses are carried as void * (a CUdeviceptr fits); host code must never dereference
**     one (the emulation can poison the device allocation between operations to prove it:
**     ZR_GPU_EMU_GUARD=1).
**   - Every operation is asynchronous on the stream given; ordering between streams is only what
**     events state (zr_gpu_record / zr_gpu_wait). The host blocks only in zr_gpu_event_sync /
**     zr_gpu_stream_sync.
**   - Functions return 0 or a negative errno; zr_gpu_strerror says more about the last failure.
**   - gemm is row-major (C = alpha op(A) op(B) + beta C), as the host kernels' zk_sgemm.
*/
#ifndef ZR_GPU_H
#define ZR_GPU_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {                  /* libzrt's headers are C: their declarations too */
#endif
#include "zr_coll.h"          /* defines: ZrComm, ZrCollOp */
#include "zr_plan.h"          /* defines: ZrDtype */

typedef struct ZrGpu ZrGpu;
typedef struct ZrGpuStream ZrGpuStream;
typedef struct ZrGpuEvent ZrGpuEvent;
typedef struct ZrGpuGraph ZrGpuGraph;

/* One embedded kernel image (the emitted cuda/zg_kernels_bin.c has the same fields in order). */
typedef struct ZrGpuBlob {
    const char *name;           /* kernel file, e.g. "attention" */
    int arch;                   /* 80, 90, ... */
    int is_ptx;
    const unsigned char *bytes;
    size_t size;
} ZrGpuBlob;

typedef enum { ZR_GPU_H2D, ZR_GPU_D2H, ZR_GPU_D2D } ZrGpuCopy;

/* "cuda" or "emulated". */
const char *zr_gpu_backend(void);
/* Opens device (local_rank % devices) and loads the blobs that match it (cubin of its arch, else
** PTX of the nearest lower arch). -ENODEV when there is no GPU (zr_gpu_strerror(NULL) says why). */
int zr_gpu_open(ZrGpu **out, int local_rank, const ZrGpuBlob *blobs, int n_blobs);
void zr_gpu_close(ZrGpu *g);
const char *zr_gpu_strerror(const ZrGpu *g);
/* A line naming the device (or the stand-in). */
const char *zr_gpu_describe(const ZrGpu *g);

/* Memory: one device allocation per trainer; host ranges registered as pinned (page-locked). */
int zr_gpu_malloc(ZrGpu *g, void **dptr, size_t bytes);
void zr_gpu_free(ZrGpu *g, void *dptr);
int zr_gpu_host_register(ZrGpu *g, void *p, size_t bytes);
void zr_gpu_host_unregister(ZrGpu *g, void *p);

/* Streams and events. */
int zr_gpu_stream_create(ZrGpu *g, ZrGpuStream **out, const char *name);
void zr_gpu_stream_destroy(ZrGpuStream *s);
int zr_gpu_event_create(ZrGpu *g, ZrGpuEvent **out);
void zr_gpu_event_destroy(ZrGpuEvent *e);
int zr_gpu_record(ZrGpuEvent *e, ZrGpuStream *s);         /* e completes when s reaches here */
int zr_gpu_wait(ZrGpuStream *s, ZrGpuEvent *e);           /* s waits e's last record */
int zr_gpu_event_sync(ZrGpuEvent *e);                     /* host waits e's last record */
int zr_gpu_event_query(ZrGpuEvent *e);    /* 1: e's last record is done, 0: not yet (no wait), < 0 error */
int zr_gpu_stream_sync(ZrGpuStream *s);

/* Copies and fills on a stream. */
int zr_gpu_copy(ZrGpuStream *s, ZrGpuCopy kind, void *dst, const void *src, size_t bytes);
int zr_gpu_memset(ZrGpuStream *s, void *dptr, int byte, size_t bytes);

/* Kernels by name; args[i] points at argument i (as cuLaunchKernel), and args ends with NULL. */
int zr_gpu_launch(ZrGpuStream *s, const char *kernel, const unsigned grid[3], const unsigned block[3],
                  unsigned shmem, void **args);

/* fp32 gemm, row-major, on the stream (cuBLAS / OpenBLAS). */
int zr_gpu_sgemm(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Typed gemm for 16-bit plans (cublasGemmEx), row-major as zr_gpu_sgemm: C = alpha op(A) op(B) +
** beta C with A, B, C of dtypes at, bt, ct (ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16; A and B of one
** dtype) and the compute type `compute`. ZR_GPU_COMPUTE_32F is the only one: every product and sum
** in fp32 (CUBLAS_COMPUTE_32F; with 16-bit A and B, tensor cores), so the result is what a tensor-core
** GEMM is specified to give: 16-bit inputs exact, fp32 products and sums, beta C added in fp32,
** the result rounded to ct once (round to nearest even). fp32 A and B keep cuBLAS's pedantic fp32
** math (no TF32). -EINVAL for other combinations. */
typedef enum { ZR_GPU_COMPUTE_32F = 0 } ZrGpuCompute;
int zr_gpu_gemm_ex(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                   ZrDtype at, int lda, const void *B, ZrDtype bt, int ldb, float beta, void *C,
                   ZrDtype ct, int ldc, ZrGpuCompute compute);

/* Collectives on device buffers, on the stream (NCCL / libzrt's MPI collectives). zr_gpu_coll_init
** is collective over comm's ranks and must precede the first zr_gpu_coll. Semantics and counts
** as zr_coll.h (all_gather / reduce_scatter take count per rank). */
int zr_gpu_coll_init(ZrGpu *g, ZrComm *comm, ZrGpuStream *s);
int zr_gpu_coll(ZrGpuStream *s, ZrCollOp op, const void *send, void *recv, int64_t count,
                ZrDtype dt);
/* Collective groups (ncclGroupStart / ncclGroupEnd): the zr_gpu_coll calls between begin and end
** are launched together at the end, as one operation of their stream (NCCL fuses them into one
** launch). Until the end nothing of the group is enqueued, so the host may not wait in between
** (-EINVAL), and every member must be on one stream. Groups nest; the outermost end launches. An
** end without a begin is -EINVAL. */
int zr_gpu_group_begin(ZrGpu *g);
int zr_gpu_group_end(ZrGpu *g);

/* Bytes this rank moved per link since zr_gpu_open, counted as operations are enqueued: H2D and
** D2H (PCIe), D2D, and what collectives receive over the network by the plan's cost rules
** (gen/memplan.c): all_gather and reduce_scatter (ws - 1) x count, all_reduce 2 (ws - 1) / ws x
** count, in elements of their dtype. */
typedef struct ZrGpuBytes { int64_t h2d, d2h, d2d, net; } ZrGpuBytes;
void zr_gpu_bytes(const ZrGpu *g, ZrGpuBytes *out);
/* The network bytes one rank receives in collective op over ws ranks (count as zr_gpu_coll's). */
static inline int64_t zr_gpu_coll_net_bytes(ZrCollOp op, int64_t count, ZrDtype dt, int ws)
{
    int64_t b = count * (dt == ZR_DT_FP32 ? 4 : 2);
    return op == ZR_COLL_ALL_REDUCE ? 2 * (ws - 1) * b / ws : (ws - 1) * b;
}

/* First-contact diagnostics (runtime/zr_gpu_cuda.c; the stand-in may treat them as no-ops).
** Sync-debug: synchronise after every launch and name the kernel that faulted (also ZR_SYNC_DEBUG=1
** in the environment). */
void zr_gpu_set_sync_debug(ZrGpu *g, int on);
int zr_gpu_sync_debug(const ZrGpu *g);      /* on: set above, or ZR_SYNC_DEBUG at open */
/* Host waits (zr_gpu_event_sync, zr_gpu_stream_sync) poll; at each poll after the first few
** microseconds hook(arg, what, seconds waited) is called, and a non-zero return gives the wait up
** (-ETIMEDOUT, zr_gpu_strerror names what was waited for). */
typedef int (*ZrGpuWaitHook)(void *arg, const char *what, double waited_s);
void zr_gpu_set_wait_hook(ZrGpu *g, ZrGpuWaitHook hook, void *arg);

/* ---- first contact (additive)
** Device memory free and total now (cuMemGetInfo; the stand-in: ZR_EMU_DEVICE_MEMORY bytes, default
** 80 GiB, as total, minus what it has allocated). train-cuda's pre-flight compares the free memory
** with the plan's need before it allocates the arena. */
int zr_gpu_mem_info(ZrGpu *g, size_t *free_b, size_t *total_b);

/* ---- footprints for the stand-in's race checker (additive; docs/CUDA_TRAINER.md, Races)
** Declares that the next operation enqueued on s reads (write 0) or writes (write 1) the byte range
** [p, p + bytes). Copies, fills, gemms and collectives declare their own footprints; a kernel
** launch has only those declared before it. The stand-in checks every declared access against the
** accesses of other streams that record/wait/sync do not order before it; the driver build ignores
** the declarations. Returns 0. */
int zr_gpu_footprint(ZrGpuStream *s, const void *p, size_t bytes, int write);

/* ---- GEMM with a fused epilogue (additive; runtime/zr_gpu_blaslt.c on a GPU: cuBLASLt)
** Row-major as zr_gpu_gemm_ex: X = alpha op(A) op(B) + beta C, every product and sum in fp32 (16-bit
** A and B exact, on tensor cores), then the epilogue on the fp32 X, and D written once, rounded to
** dt (round to nearest even). C is read only when beta != 0 and may be D itself or another array of
** D's layout (ldd). A and B have dtype ab (fp32, bf16, fp16), D, C, the bias and aux dtype dt
** (ab or fp32). The epilogue:
**   NONE       D = X
**   BIAS       D = X + bias[j]                     bias: N elements, read
**   GELU_BIAS  P = X + bias[j]; aux = P rounded to dt; D = gelu(P)  (gelu of the fp32 P)
**   DGELU      D = X * gelu'(aux[i][j])            aux: read (what GELU_BIAS saved); beta must be 0
**   BGRAD      D = X, and bias[j] = sum over k of op(B)[k][j] (fp32 sums, written, not added): the
**              bias gradient of a linear layer when op(B) is its output gradient (dW = x^T dy)
** GELU is the tanh form, gelu(x) = x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))), cuBLASLt's and
** the host kernels'. aux is M x N at ldaux (elements), ldaux >= N and a multiple of 8 (cuBLASLt's
** rule), else -EINVAL. On a GPU the first call of each shape (dtypes, transposes, sizes, leading
** dimensions, epilogue, pointer alignments) asks cuBLASLt's heuristic for the algorithm, and every
** later call of that shape reuses it: nothing is chosen per step after the first. -ENOTSUP when the
** heuristic has no algorithm for the combination (the caller may run the unfused sequence). */
typedef enum {
    ZR_GPU_EPI_NONE = 0,
    ZR_GPU_EPI_BIAS,
    ZR_GPU_EPI_GELU_BIAS,
    ZR_GPU_EPI_DGELU,
    ZR_GPU_EPI_BGRAD,
} ZrGpuEpilogue;
int zr_gpu_gemm_lt(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                   int lda, const void *B, int ldb, ZrDtype ab, float beta, const void *C, void *D,
                   int ldd, ZrDtype dt, ZrGpuEpilogue epi, void *bias, void *aux, int ldaux);
/* The contract above as one check, shared by the GPU build and the stand-in so both refuse the same
** calls: NULL when the arguments are valid, else what is wrong. */
static inline const char *zr_gpu_gemm_lt_bad(int ta, int tb, int M, int N, int K, int lda, int ldb,
                                             ZrDtype ab, float beta, int ldd, ZrDtype dt,
                                             ZrGpuEpilogue epi, const void *bias, const void *aux,
                                             int ldaux)
{
    int gelu = epi == ZR_GPU_EPI_GELU_BIAS || epi == ZR_GPU_EPI_DGELU;
    if (ab != ZR_DT_FP32 && ab != ZR_DT_BF16 && ab != ZR_DT_FP16) return "A/B dtype";
    if (dt != ab && dt != ZR_DT_FP32) return "D dtype (A's or fp32)";
    if ((int)epi < 0 || epi > ZR_GPU_EPI_BGRAD) return "epilogue";
    if (epi != ZR_GPU_EPI_NONE && epi != ZR_GPU_EPI_DGELU && !bias) return "bias pointer (NULL)";
    if (gelu && (!aux || ldaux < N || ldaux % 8)) return "aux (NULL, or ldaux below N or not a multiple of 8)";
    if (epi == ZR_GPU_EPI_DGELU && beta != 0.0f) return "beta (DGELU takes 0)";
    if (M <= 0 || N <= 0 || K <= 0 || ldd < N || lda < (ta ? M : K) || ldb < (tb ? K : N)) return "sizes";
    return 0;
}

/* ---- TF32 (additive; docs/CUDA_TRAINER.md "TF32")
** zr_gpu_set_tf32(g, 1): from now on the GEMMs whose A and B are fp32 (zr_gpu_sgemm, and
** zr_gpu_gemm_ex / zr_gpu_gemm_lt with fp32 operands) may run on TF32 tensor cores: each element of
** A and B rounded to TF32 (10 explicit mantissa bits, to nearest even: zr_half.h's
** zr_f32_round_tf32), the products and sums in fp32. On a GPU: cuBLAS math mode
** CUBLAS_TF32_TENSOR_OP_MATH and compute type CUBLAS_COMPUTE_32F_FAST_TF32 (cuBLASLt too); the
** stand-in rounds A and B itself. 0, the state after zr_gpu_open: exact fp32 (pedantic math,
** COMPUTE_32F). GEMMs with 16-bit operands are not affected. The caller decides (the CUDA trainer
** passes gen's ZK_TF32 once, right after the open); the library never does. Returns 0. */
int zr_gpu_set_tf32(ZrGpu *g, int on);

/* ---- graphs: stream capture and replay (additive; docs/CUDA_TRAINER.md, CUDA graphs)
** zr_gpu_capture_begin(s) starts recording the operations enqueued on s instead of running them
** (cuStreamBeginCapture, THREAD_LOCAL mode; the stand-in records its closures); zr_gpu_capture_end
** ends it and returns the graph, instantiated; zr_gpu_graph_launch enqueues all of it on a stream
** as one submission, as often as wanted, with the arguments captured (pointers and scalars by
** value: replay reads and writes the same addresses). What is counted per link (zr_gpu_bytes) is
** counted at each launch, not at capture. While a capture is open the API refuses, -EINVAL and a
** message naming the call, what a capture cannot hold, in both implementations alike: a record or
** wait on the capturing stream (no events inside a graph: its order is the stream's), a host wait
** (event or stream sync), a collective on the capturing stream, an async copy whose host side is
** not registered (pinned), device allocation, free or host registration, a nested capture, and
** capture under sync-debug (which must run uncaptured to name a faulting kernel). A refused call
** also invalidates the capture: zr_gpu_capture_end then fails, naming the first refusal. Work on
** other streams during a capture runs as usual. The first call of a cuBLASLt shape chooses its
** algorithm and may allocate the workspace, so a sequence is captured only after it has run once
** uncaptured. Graphs left undestroyed are freed by zr_gpu_close. */
int zr_gpu_capture_begin(ZrGpuStream *s);
int zr_gpu_capture_end(ZrGpuStream *s, ZrGpuGraph **out);
int zr_gpu_graph_launch(ZrGpuStream *s, ZrGpuGraph *gr);
void zr_gpu_graph_destroy(ZrGpuGraph *gr);

#ifdef __cplusplus
}
#endif
#endif
