/*
** zr_gpu_cuda.c — runtime/zr_gpu.h on a real GPU: the CUDA driver API for memory, streams, events,
** copies and kernel launches (modules loaded from the cubin/PTX blobs zgen embedded with NVRTC at
** generation time), cuBLAS for gemm, and NCCL through libzrt's collectives (zr_coll_nccl.c, on a
** communicator of its own whose NCCL stream is ours).
** Built only in CUDA builds (-DZR_WITH_CUDA, the emitted Makefile's `make cuda`); in libzrt's
** ordinary build this file compiles to nothing, so libzrt needs no CUDA. The CPU stand-in with the
** same interface is templates/cuda_trainer/zr_gpu_emu.cpp.
** Not run on the machines this was written on (no GPU): it compiles and links against the
** toolkit's headers and stubs; `train-cuda --check` is how a first GPU run verifies it.
*/
#ifdef ZR_WITH_CUDA
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the vendor headers do not pass our warnings (-Wundef, -Wstrict-prototypes) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#pragma GCC diagnostic pop

#include "zr_gpu.h"

/* The driver (libcuda.so.1) comes with the NVIDIA driver, not with the toolkit: it is opened at run
** time, so train-cuda starts on a machine without one and says so instead of failing to load.
** Names go through cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2) before dlsym. */
#define ZC_FNS(X) X(cuCtxSetCurrent) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetCount) \
    X(cuDeviceGetName) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRetain) X(cuEventCreate) \
    X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuGetErrorString) X(cuInit) \
    X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemHostRegister) X(cuMemHostUnregister) \
    X(cuMemcpyDtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyHtoDAsync) X(cuMemsetD8Async) \
    X(cuModuleGetFunction) X(cuModuleLoadData) X(cuModuleUnload) X(cuStreamCreate) \
    X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)
#define ZC_STR2(x) #x
#define ZC_STR(x) ZC_STR2(x)
#define ZC_DECL(f) static __typeof__(f) *p_##f;
ZC_FNS(ZC_DECL)
#define DRV(f) p_##f

static char open_err[512];

/* 0 when every entry point was found; -ENODEV (open_err says why) otherwise. */
static int driver_load(void)
{
    static int state;                 /* 0 not tried, 1 loaded, -1 failed */
    if (state) return state > 0 ? 0 : -ENODEV;
    state = -1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(open_err, sizeof open_err, "no NVIDIA driver (libcuda.so.1: %s)", dlerror());
        return -ENODEV;
    }
#define ZC_LOAD(f) \
    if (!(*(void **)&p_##f = dlsym(h, ZC_STR(f)))) { \
        snprintf(open_err, sizeof open_err, "libcuda.so.1 lacks %s (driver too old)", ZC_STR(f)); \
        return -ENODEV; \
    }
    ZC_FNS(ZC_LOAD)
#undef ZC_LOAD
    state = 1;
    return 0;
}

#define ZG_MAX_MODULES 64
#define ZG_MAX_FUNCS 128
#define ZG_MAX_REQS 4096

typedef struct { char name[64]; CUfunction f; } GpuFunc;

struct ZrGpu {
    CUdevice dev;
    CUcontext ctx;
    int arch;
    CUmodule mod[ZG_MAX_MODULES];
    int n_mod;
    GpuFunc fn[ZG_MAX_FUNCS];
    int n_fn;
    cublasHandle_t blas;
    ZrComm *comm;
    ZrCollReq *req[ZG_MAX_REQS];     /* collectives in flight (freed as they complete) */
    int n_req;
    char err[512], desc[256];
};

struct ZrGpuStream { ZrGpu *g; CUstream s; };
struct ZrGpuEvent { ZrGpu *g; CUevent e; };

static int cu_fail(ZrGpu *g, CUresult r, const char *what)
{
    const char *s = NULL;
    if (DRV(cuGetErrorString)) DRV(cuGetErrorString)(r, &s);
    snprintf(g ? g->err : open_err, sizeof open_err, "%s: %s", what, s ? s : "unknown CUDA error");
    return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : r == CUDA_ERROR_NO_DEVICE ? -ENODEV : -EIO;
}
#define CU(g, call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) return cu_fail((g), r_, #call); } while (0)

const char *zr_gpu_backend(void) { return "cuda"; }
const char *zr_gpu_strerror(const ZrGpu *g) { return g ? g->err : open_err; }
const char *zr_gpu_describe(const ZrGpu *g) { return g->desc; }

/* cubin of the device's arch, else the PTX of the highest arch not above it (the driver JITs). */
static int load_modules(ZrGpu *g, const ZrGpuBlob *b, int n)
{
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= strcmp(b[j].name, b[i].name) == 0;
        if (seen) continue;
        const ZrGpuBlob *pick = NULL;
        for (int j = 0; j < n; j++) {
            if (strcmp(b[j].name, b[i].name) != 0) continue;
            if (!b[j].is_ptx && b[j].arch == g->arch) { pick = &b[j]; break; }
            if (b[j].is_ptx && b[j].arch <= g->arch && (!pick || b[j].arch > pick->arch)) pick = &b[j];
        }
        if (!pick) {
            snprintf(g->err, sizeof g->err, "kernel module %s has no cubin for sm_%d nor a PTX at or "
                     "below it: regenerate with that architecture", b[i].name, g->arch);
            return -ENOEXEC;
        }
        if (g->n_mod == ZG_MAX_MODULES) return -E2BIG;
        CU(g, DRV(cuModuleLoadData)(&g->mod[g->n_mod], pick->bytes));
        g->n_mod++;
    }
    return 0;
}

int zr_gpu_open(ZrGpu **out, int local_rank, const ZrGpuBlob *blobs, int n_blobs)
{
    *out = NULL;
    if (driver_load() < 0) return -ENODEV;
    CUresult r = DRV(cuInit)(0);
    if (r != CUDA_SUCCESS) return cu_fail(NULL, r, "cuInit (no GPU or no driver)");
    int ndev = 0;
    r = DRV(cuDeviceGetCount)(&ndev);
    if (r != CUDA_SUCCESS) return cu_fail(NULL, r, "cuDeviceGetCount");
    if (ndev <= 0) { snprintf(open_err, sizeof open_err, "no CUDA device"); return -ENODEV; }
    ZrGpu *g = calloc(1, sizeof *g);
    if (!g) return -ENOMEM;
    int rc = 0, maj = 0, min = 0;
    int ord = local_rank < 0 ? 0 : local_rank % ndev;
    char name[128] = "";
    if ((r = DRV(cuDeviceGet)(&g->dev, ord)) != CUDA_SUCCESS ||
        (r = DRV(cuDevicePrimaryCtxRetain)(&g->ctx, g->dev)) != CUDA_SUCCESS ||
        (r = DRV(cuCtxSetCurrent)(g->ctx)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetAttribute)(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetAttribute)(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetName)(name, sizeof name, g->dev)) != CUDA_SUCCESS) {
        rc = cu_fail(NULL, r, "CUDA device set-up");
        free(g);
        return rc;
    }
    cudaSetDevice(ord);               /* cuBLAS and NCCL use the runtime API's primary context */
    g->arch = maj * 10 + min;
    snprintf(g->desc, sizeof g->desc, "GPU %d: %s (sm_%d)", ord, name, g->arch);
    if (blobs && (rc = load_modules(g, blobs, n_blobs)) < 0) {
        snprintf(open_err, sizeof open_err, "%s", g->err);
        free(g);
        return rc;
    }
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
        snprintf(open_err, sizeof open_err, "cublasCreate failed");
        free(g);
        return -EIO;
    }
    cublasSetMathMode(g->blas, CUBLAS_PEDANTIC_MATH);   /* fp32 stays fp32 (no TF32) */
    *out = g;
    return 0;
}

static void reqs_wait(ZrGpu *g)
{
    for (int i = 0; i < g->n_req; i++) zr_coll_wait(g->comm, g->req[i]);
    g->n_req = 0;
}

void zr_gpu_close(ZrGpu *g)
{
    if (!g) return;
    if (g->comm) { reqs_wait(g); zr_comm_destroy(g->comm); }
    if (g->blas) cublasDestroy(g->blas);
    for (int i = 0; i < g->n_mod; i++) DRV(cuModuleUnload)(g->mod[i]);
    DRV(cuDevicePrimaryCtxRelease)(g->dev);
    free(g);
}

/* ---------------------------------------------------------------------- memory */
int zr_gpu_malloc(ZrGpu *g, void **dptr, size_t bytes)
{
    CUdeviceptr p = 0;
    CU(g, DRV(cuMemAlloc)(&p, bytes ? bytes : 1));
    *dptr = (void *)(uintptr_t)p;
    return 0;
}

void zr_gpu_free(ZrGpu *g, void *dptr) { (void)g; if (dptr) DRV(cuMemFree)((CUdeviceptr)(uintptr_t)dptr); }

int zr_gpu_host_register(ZrGpu *g, void *p, size_t bytes)
{
    CU(g, DRV(cuMemHostRegister)(p, bytes, 0));
    return 0;
}

void zr_gpu_host_unregister(ZrGpu *g, void *p) { (void)g; DRV(cuMemHostUnregister)(p); }

/* ---------------------------------------------------------------------- streams and events */
int zr_gpu_stream_create(ZrGpu *g, ZrGpuStream **out, const char *name)
{
    (void)name;
    ZrGpuStream *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->g = g;
    CUresult r = DRV(cuStreamCreate)(&s->s, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) { free(s); return cu_fail(g, r, "cuStreamCreate"); }
    *out = s;
    return 0;
}

void zr_gpu_stream_destroy(ZrGpuStream *s)
{
    if (!s) return;
    DRV(cuStreamSynchronize)(s->s);
    DRV(cuStreamDestroy)(s->s);
    free(s);
}

int zr_gpu_event_create(ZrGpu *g, ZrGpuEvent **out)
{
    ZrGpuEvent *e = calloc(1, sizeof *e);
    if (!e) return -ENOMEM;
    e->g = g;
    CUresult r = DRV(cuEventCreate)(&e->e, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) { free(e); return cu_fail(g, r, "cuEventCreate"); }
    *out = e;
    return 0;
}

void zr_gpu_event_destroy(ZrGpuEvent *e) { if (e) { DRV(cuEventDestroy)(e->e); free(e); } }
int zr_gpu_record(ZrGpuEvent *e, ZrGpuStream *s) { CU(e->g, DRV(cuEventRecord)(e->e, s->s)); return 0; }
int zr_gpu_wait(ZrGpuStream *s, ZrGpuEvent *e) { CU(s->g, DRV(cuStreamWaitEvent)(s->s, e->e, 0)); return 0; }
int zr_gpu_event_sync(ZrGpuEvent *e) { CU(e->g, DRV(cuEventSynchronize)(e->e)); return 0; }
int zr_gpu_stream_sync(ZrGpuStream *s) { CU(s->g, DRV(cuStreamSynchronize)(s->s)); return 0; }

/* ---------------------------------------------------------------------- work */
int zr_gpu_copy(ZrGpuStream *s, ZrGpuCopy kind, void *dst, const void *src, size_t bytes)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sp = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case ZR_GPU_H2D: CU(s->g, DRV(cuMemcpyHtoDAsync)(d, src, bytes, s->s)); break;
    case ZR_GPU_D2H: CU(s->g, DRV(cuMemcpyDtoHAsync)(dst, sp, bytes, s->s)); break;
    case ZR_GPU_D2D: CU(s->g, DRV(cuMemcpyDtoDAsync)(d, sp, bytes, s->s)); break;
    }
    return 0;
}

int zr_gpu_memset(ZrGpuStream *s, void *dptr, int byte, size_t bytes)
{
    CU(s->g, DRV(cuMemsetD8Async)((CUdeviceptr)(uintptr_t)dptr, (unsigned char)byte, bytes, s->s));
    return 0;
}

static CUfunction find_fn(ZrGpu *g, const char *name)
{
    for (int i = 0; i < g->n_fn; i++) if (strcmp(g->fn[i].name, name) == 0) return g->fn[i].f;
    for (int m = 0; m < g->n_mod; m++) {
        CUfunction f;
        if (DRV(cuModuleGetFunction)(&f, g->mod[m], name) != CUDA_SUCCESS) continue;
        if (g->n_fn < ZG_MAX_FUNCS) {
            snprintf(g->fn[g->n_fn].name, sizeof g->fn[g->n_fn].name, "%s", name);
            g->fn[g->n_fn++].f = f;
        }
        return f;
    }
    return NULL;
}

int zr_gpu_launch(ZrGpuStream *s, const char *kernel, const unsigned grid[3], const unsigned block[3],
                  unsigned shmem, void **args)
{
    CUfunction f = find_fn(s->g, kernel);
    if (!f) {
        snprintf(s->g->err, sizeof s->g->err, "kernel %s is in no loaded module", kernel);
        return -ENOENT;
    }
    CU(s->g, DRV(cuLaunchKernel)(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, s->s,
                            args, NULL));
    return 0;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
int zr_gpu_sgemm(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    ZrGpu *g = s->g;
    cublasSetStream(g->blas, (cudaStream_t)s->s);
    cublasStatus_t st = cublasSgemm(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(g->err, sizeof g->err, "cublasSgemm (%d x %d x %d) failed: status %d", M, N, K, (int)st);
        return -EIO;
    }
    return 0;
}

int zr_gpu_coll_init(ZrGpu *g, ZrComm *comm, ZrGpuStream *s)
{
    (void)comm;
    if (g->comm) return 0;
    int rc = zr_comm_create(&g->comm);
    if (rc < 0) { snprintf(g->err, sizeof g->err, "collectives: communicator"); return rc; }
    rc = zr_comm_use_nccl(g->comm, (void *)s->s);
    if (rc < 0) snprintf(g->err, sizeof g->err, "collectives: NCCL set-up failed (%d)", rc);
    return rc;
}

/* NCCL runs the collective on the communicator's stream (ours); the request only tracks it. */
int zr_gpu_coll(ZrGpuStream *s, ZrCollOp op, const void *send, void *recv, int64_t count, ZrDtype dt)
{
    ZrGpu *g = s->g;
    for (int i = 0; i < g->n_req;) {         /* free the completed ones */
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
    return 0;
}

/* ---------------------------------------------------------------------- footprints (additive) */
/* The footprints feed the stand-in's race checker; on a GPU the ordering is the driver's. */
int zr_gpu_footprint(ZrGpuStream *s, const void *p, size_t bytes, int write)
{
    (void)s; (void)p; (void)bytes; (void)write;
    return 0;
}
#endif
