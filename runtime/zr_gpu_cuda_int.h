/*
** zr_gpu_cuda_int.h — between the files of the GPU build of runtime/zr_gpu.h: zr_gpu_cuda.c (driver
** API: devices, modules, memory, streams, events, copies, launches, waits), zr_gpu_coll.c (NCCL
** collectives and groups), zr_gpu_blaslt.c (cuBLAS gemms and cuBLASLt GEMMs with fused epilogues)
** and zr_gpu_graph.c (stream capture and graph launches). The structures are shared here so that each file owns one part of the work on them;
** zr_gpu_blaslt.c's cuBLASLt state stays its own and reaches the GPU through the accessors below.
** Layers, each using only those below it: zr_gpu_state.c (error text, stream accessors, capture
** refusal), zr_gpu_cuda.c (the driver), then zr_gpu_graph.c, zr_gpu_coll.c, zr_gpu_blaslt.c. A part
** with state of its own on a GPU installs a ZrGpuPart table in it, through which zr_gpu_close
** closes it, so the driver core names no part.
** Only with -DZR_WITH_CUDA.
*/
#ifndef ZR_GPU_CUDA_INT_H
#define ZR_GPU_CUDA_INT_H
#include <stddef.h>

/* the vendor headers do not pass our warnings (-Wundef, -Wstrict-prototypes) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#pragma GCC diagnostic pop

#include "zr_gpu.h"

#define ZG_MAX_MODULES 64
#define ZG_MAX_FUNCS 256
#define ZG_MAX_REQS 4096
#define ZG_MAX_STREAMS 64
#define ZG_MAX_PINNED 1024

typedef struct { char name[64]; CUfunction f; int max_threads, static_smem, dyn_smem; } GpuFunc;  /* dyn_smem: opt-in raised to */
typedef struct { const char *p; size_t n; } Pinned;

/* What zr_gpu_close does for one part, in slot order: graphs first (before the streams they ran
** on), then the collectives (their communicator), then cuBLASLt (its workspace is device memory). */
typedef struct ZrGpuPart {
    const char *name;
    void (*close)(ZrGpu *g);
} ZrGpuPart;
enum { ZR_GPU_PART_GRAPH, ZR_GPU_PART_COLL, ZR_GPU_PART_BLASLT, ZR_GPU_NPARTS };

struct ZrGpu {
    CUdevice dev;
    CUcontext ctx;
    int ord, arch, driver, needed;     /* driver and needed: CUDA versions, 1000 * major + 10 * minor */
    CUmodule mod[ZG_MAX_MODULES];
    int n_mod, n_cubin, n_ptx;
    GpuFunc fn[ZG_MAX_FUNCS];
    int n_fn;
    cublasHandle_t blas;
    int blas_fast;                   /* the handle's math mode: 0 PEDANTIC, 1 DEFAULT (16-bit GEMMs), 2 TF32 (zr_gpu_blaslt.c) */
    ZrComm *comm;
    ZrCollReq *req[ZG_MAX_REQS];     /* collectives in flight (freed as they complete) */
    int n_req;
    int group_depth, group_first;    /* an open collective group; its members are req[group_first..] */
    ZrGpuBytes moved;                /* per link, counted at enqueue (zr_gpu_bytes) */
    ZrGpuStream *streams[ZG_MAX_STREAMS];
    int n_streams;
    Pinned pinned[ZG_MAX_PINNED];
    int n_pinned, pageable_warned;
    int sync_debug;
    int n_capturing;                 /* streams capturing a graph (zr_gpu_graph.c) */
    ZrGpuGraph *graphs;              /* not destroyed yet: zr_gpu_close frees them */
    double wait_timeout_s;
    ZrGpuWaitHook hook;
    void *hook_arg;
    char err[1024], desc[256];
    int tf32;                        /* zr_gpu_set_tf32: fp32 GEMMs on TF32 tensor cores (zr_gpu_blaslt.c) */
    const ZrGpuPart *part[ZR_GPU_NPARTS];  /* installed by each part when it first keeps state */
};

struct ZrGpuStream {
    ZrGpu *g;
    CUstream s;
    char name[32];
    char last_kernel[64];
    int capturing;                   /* zr_gpu_capture_begin .. end */
    ZrGpuBytes cap_moved;            /* what the capture's copies move, per launch */
    char cap_bad[256];               /* the first call refused during the capture */
};
struct ZrGpuEvent { ZrGpu *g; CUevent e; char last_stream[32]; };

/* The graph entry points (zr_gpu_graph.c), resolved by zr_gpu_cuda.c with the rest of the driver
** (names through cuda.h's macros: cuStreamBeginCapture is cuStreamBeginCapture_v2). */
#define ZC_GRAPH_FNS(X) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)
#define ZC_GRAPH_DECL(f) extern __typeof__(f) *zr_drv_##f;
ZC_GRAPH_FNS(ZC_GRAPH_DECL)
/* "what: CUDA_ERROR_... (text)" into g's error (open's when g is NULL); -ENOMEM, -ENODEV or -EIO. */
int zr_gpu_cu_fail(ZrGpu *g, CUresult r, const char *what);
/* Refuses `call` during a capture (runtime/zr_gpu.h, graphs): s is the capturing stream it
** concerns, or NULL for a call no capture may overlap; the captures concerned are invalidated.
** -EINVAL (zr_gpu_state.c). */
int zr_gpu_capture_refuse(ZrGpu *g, ZrGpuStream *s, const char *call);
/* Where a copy on s counts its bytes: the capture's, while s captures. */
static inline ZrGpuBytes *zr_gpu_moved(ZrGpuStream *s) { return s->capturing ? &s->cap_moved : &s->g->moved; }
/* The GPU a stream belongs to, and the stream's CUstream (as void *) (zr_gpu_state.c). */
ZrGpu *zr_gpu_stream_gpu(const ZrGpuStream *s);
void *zr_gpu_stream_handle(const ZrGpuStream *s);
/* Sets what zr_gpu_strerror(g) returns (printf-style; zr_gpu_state.c). */
void zr_gpu_set_error(ZrGpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what: CUBLAS_STATUS_... (text)" into g's error; -ENOMEM or -EIO (zr_gpu_state.c). */
int zr_gpu_blas_fail(ZrGpu *g, cublasStatus_t st, const char *what);
#endif
