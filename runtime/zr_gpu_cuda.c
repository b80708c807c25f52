/*
** zr_gpu_cuda.c — runtime/zr_gpu.h on a real GPU: the CUDA driver API for memory, streams, events,
** copies and kernel launches (modules loaded from the cubin/PTX blobs zgen embedded with NVRTC at
** generation time). The gemms (cuBLAS, cuBLASLt) are zr_gpu_blaslt.c's, the collectives (NCCL
** through libzrt's zr_coll_nccl.c) zr_gpu_coll.c's; the structures they share are in
** zr_gpu_cuda_int.h. Those parts sit above this file: it closes them through the tables they
** install (ZrGpuPart), never by name.
** Built only in CUDA builds (-DZR_WITH_CUDA, the emitted Makefile's `make cuda`); in libzrt's
** ordinary build this file compiles to nothing, so libzrt needs no CUDA. The CPU stand-in with the
** same interface is templates/cuda_trainer/zr_gpu_emu.cpp.
** First contact with a GPU is made safe here rather than trusted:
**   - the driver's CUDA version is checked against the toolkit that made the PTX/cubin (read from
**     the PTX header) before any module is loaded, with the driver branch to install in the message;
**   - the cubin of the device's exact SM is loaded where we have it, else the PTX of the nearest
**     lower arch (JIT); module loading is eager (CUDA_MODULE_LOADING=EAGER unless set), and every
**     kernel each module's PTX declares is resolved at open, so a missing kernel fails at start;
**   - every driver, runtime, cuBLAS and NCCL result is checked and named (cuGetErrorName,
**     cublasGetStatusName), void functions report theirs on stderr;
**   - the device is chosen once (local rank % devices) and NCCL is checked to be on the same one;
**   - host waits poll (cuEventQuery / cuStreamQuery with a short sleep): each poll advances the
**     collectives in flight, so zr_coll's watchdog names a peer that never arrives and aborts NCCL
**     and the job; a wait with nothing in flight gives up after ZR_GPU_WAIT_TIMEOUT_S (default the
**     collective timeout) naming what it waited for; zr_gpu_set_wait_hook adds a caller's check;
**   - sync-debug (zr_gpu_set_sync_debug or ZR_SYNC_DEBUG=1) synchronises after each launch and
**     names the kernel that faulted; without it a fault is reported at the next wait with the last
**     kernel launched on that stream;
**   - streams are synchronised before close.
** Verified without a GPU against stub driver/cuBLAS/NCCL libraries (tests/cuda/t_gpu_stub.sh), which
** run the kernels through zr_simt.h; `train-cuda --check` is how a first GPU run verifies the rest.
** ZR_LIBCUDA names the driver library to open instead of libcuda.so.1 (the stub tests use it).
*/
#ifdef ZR_WITH_CUDA
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zr_gpu.h"
#include "zr_coll_int.h"      /* defines: zr_coll_dev_abort (a wait that times out aborts NCCL) */
#include "zr_gpu_cuda_int.h"  /* defines: struct ZrGpu, zr_gpu_blaslt_close, zr_gpu_blas_fail, zr_gpu_reqs_wait */

/* The driver (libcuda.so.1) comes with the NVIDIA driver, not with the toolkit: it is opened at run
** time, so train-cuda starts on a machine without one and says so instead of failing to load.
** Names go through cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2) before dlsym. */
#define ZC_FNS(X) X(cuCtxSetCurrent) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetCount) \
    X(cuDeviceGetName) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRetain) X(cuEventCreate) \
    X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuGetErrorString) X(cuInit) \
    X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemHostRegister) X(cuMemHostUnregister) \
    X(cuMemcpyDtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyHtoDAsync) X(cuMemsetD8Async) \
    X(cuModuleGetFunction) X(cuModuleLoadData) X(cuModuleUnload) X(cuStreamCreate) \
    X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuGetErrorName) \
    X(cuDriverGetVersion) X(cuEventQuery) X(cuStreamQuery) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuMemGetInfo)
#define ZC_STR2(x) #x
#define ZC_STR(x) ZC_STR2(x)
#define ZC_DECL(f) static __typeof__(f) *p_##f;
ZC_FNS(ZC_DECL)
#define DRV(f) p_##f
#define ZC_GRAPH_DEF(f) __typeof__(f) *zr_drv_##f;
ZC_GRAPH_FNS(ZC_GRAPH_DEF)

static char open_err[1024];

/* 0 when every entry point was found; -ENODEV (open_err says why) otherwise. */
static int driver_load(void)
{
    static int state;                 /* 0 not tried, 1 loaded, -1 failed */
    if (state) return state > 0 ? 0 : -ENODEV;
    state = -1;
    const char *lib = getenv("ZR_LIBCUDA");
    if (!lib || !*lib) lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(open_err, sizeof open_err, "no NVIDIA driver (%s: %s)", lib, dlerror());
        return -ENODEV;
    }
#define ZC_LOAD(f) \
    if (!(*(void **)&p_##f = dlsym(h, ZC_STR(f)))) { \
        snprintf(open_err, sizeof open_err, "%s lacks %s (driver too old)", lib, ZC_STR(f)); \
        return -ENODEV; \
    }
    ZC_FNS(ZC_LOAD)
#undef ZC_LOAD
#define ZC_LOAD_GRAPH(f) \
    if (!(*(void **)&zr_drv_##f = dlsym(h, ZC_STR(f)))) { \
        snprintf(open_err, sizeof open_err, "%s lacks %s (driver too old)", lib, ZC_STR(f)); \
        return -ENODEV; \
    }
    ZC_GRAPH_FNS(ZC_LOAD_GRAPH)
#undef ZC_LOAD_GRAPH
    state = 1;
    return 0;
}

/* "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" into g->err (or open_err). */
static int cu_fail(ZrGpu *g, CUresult r, const char *what)
{
    const char *name = NULL, *s = NULL;
    if (DRV(cuGetErrorName)) DRV(cuGetErrorName)(r, &name);
    if (DRV(cuGetErrorString)) DRV(cuGetErrorString)(r, &s);
    char *dst = g ? g->err : open_err;
    size_t cap = g ? sizeof g->err : sizeof open_err;
    snprintf(dst, cap, "%s: %s (%s)", what, name ? name : "unknown CUDA error", s ? s : "no description");
    return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : r == CUDA_ERROR_NO_DEVICE ? -ENODEV : -EIO;
}
int zr_gpu_cu_fail(ZrGpu *g, CUresult r, const char *what) { return cu_fail(g, r, what); }
#define CU(g, what, call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) return cu_fail((g), r_, (what)); } while (0)

/* For functions that return nothing: the failure goes to stderr, named. */
static void cu_warn(ZrGpu *g, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS) return;
    char keep[sizeof g->err];
    if (g) memcpy(keep, g->err, sizeof keep);
    cu_fail(g, r, what);
    fprintf(stderr, "zr_gpu: %s\n", g ? g->err : open_err);
    if (g) memcpy(g->err, keep, sizeof keep);
}

const char *zr_gpu_backend(void) { return "cuda"; }
const char *zr_gpu_strerror(const ZrGpu *g) { return g ? g->err : open_err; }
const char *zr_gpu_describe(const ZrGpu *g) { return g->desc; }
void zr_gpu_set_sync_debug(ZrGpu *g, int on) { g->sync_debug = on; }
int zr_gpu_sync_debug(const ZrGpu *g) { return g->sync_debug; }
void zr_gpu_set_wait_hook(ZrGpu *g, ZrGpuWaitHook hook, void *arg) { g->hook = hook; g->hook_arg = arg; }

/* ---------------------------------------------------------------------- driver version */
/* The CUDA version whose driver the blobs need: "release X.Y" in a PTX header (NVRTC writes it),
** else the PTX ISA (.version 9.0 is CUDA 13.0, 8.x CUDA 12.x); 0 if no PTX says. */
static int blobs_need(const ZrGpuBlob *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (!b[i].is_ptx) continue;
        const char *t = (const char *)b[i].bytes, *r = strstr(t, "release ");
        int maj = 0, min = 0;
        if (r && sscanf(r, "release %d.%d", &maj, &min) == 2) return maj * 1000 + min * 10;
        if ((r = strstr(t, ".version ")) && sscanf(r, ".version %d.%d", &maj, &min) == 2)
            return (maj + 4) * 1000 + min * 10;     /* a lower bound for ISA 8.x (12.x's minors drift) */
    }
    return 0;
}

/* The Linux driver branch that first supports a CUDA version (the release notes' table). */
static const char *driver_branch(int v)
{
    if (v >= 13000) return "R580 (580.65.06) or newer";
    if (v >= 12080) return "R570 or newer";
    if (v >= 12000) return "R525 or newer";
    return "a newer driver";
}

/* ---------------------------------------------------------------------- modules and kernels */
/* The .entry names of a PTX text, one at a time: returns the next position or NULL. */
static const char *next_entry(const char *t, char name[64])
{
    const char *e = strstr(t, ".entry ");
    if (!e) return NULL;
    e += 7;
    while (*e == ' ' || *e == '\t') e++;
    size_t k = 0;
    while (e[k] && e[k] != '(' && e[k] != ' ' && e[k] != '\n' && k < 63) { name[k] = e[k]; k++; }
    name[k] = 0;
    return e + k;
}

static int resolve(ZrGpu *g, CUmodule m, const char *name, const char *file)
{
    if (g->n_fn == ZG_MAX_FUNCS) { snprintf(g->err, sizeof g->err, "more than %d kernels", ZG_MAX_FUNCS); return -E2BIG; }
    GpuFunc *f = &g->fn[g->n_fn];
    char what[160];
    snprintf(what, sizeof what, "cuModuleGetFunction(%s) in module %s", name, file);
    CU(g, what, DRV(cuModuleGetFunction)(&f->f, m, name));
    snprintf(what, sizeof what, "cuFuncGetAttribute(%s)", name);
    CU(g, what, DRV(cuFuncGetAttribute)(&f->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->f));
    CU(g, what, DRV(cuFuncGetAttribute)(&f->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f->f));
    snprintf(f->name, sizeof f->name, "%s", name);
    g->n_fn++;
    return 0;
}

/* cubin of the device's arch, else the PTX of the highest arch not above it (the driver JITs). Every
** kernel the file's PTX declares is resolved now. */
static int load_modules(ZrGpu *g, const ZrGpuBlob *b, int n)
{
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= strcmp(b[j].name, b[i].name) == 0;
        if (seen) continue;
        const ZrGpuBlob *pick = NULL, *names = NULL;
        for (int j = 0; j < n; j++) {
            if (strcmp(b[j].name, b[i].name) != 0) continue;
            if (b[j].is_ptx && !names) names = &b[j];
            if (pick && !pick->is_ptx) continue;
            if (!b[j].is_ptx && b[j].arch == g->arch) pick = &b[j];
            else if (b[j].is_ptx && b[j].arch <= g->arch && (!pick || b[j].arch > pick->arch)) pick = &b[j];
        }
        if (!pick) {
            snprintf(g->err, sizeof g->err, "kernel module %s has no cubin for sm_%d nor a PTX at or "
                     "below it: regenerate with that architecture", b[i].name, g->arch);
            return -ENOEXEC;
        }
        if (g->n_mod == ZG_MAX_MODULES) return -E2BIG;
        char what[160];
        snprintf(what, sizeof what, "cuModuleLoadData(%s, %s sm_%d)", b[i].name,
                 pick->is_ptx ? "PTX" : "cubin", pick->arch);
        CU(g, what, DRV(cuModuleLoadData)(&g->mod[g->n_mod], pick->bytes));
        CUmodule m = g->mod[g->n_mod++];
        if (pick->is_ptx) g->n_ptx++; else g->n_cubin++;
        if (!names) continue;            /* no PTX to read names from: resolved at first launch */
        char name[64];
        for (const char *t = next_entry((const char *)names->bytes, name); t; t = next_entry(t, name)) {
            int rc = resolve(g, m, name, b[i].name);
            if (rc < 0) return rc;
        }
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail_open(ZrGpu *g)
{
    snprintf(open_err, sizeof open_err, "%s", g->err);
    if (g->blas) cublasDestroy(g->blas);
    for (int i = 0; i < g->n_mod; i++) DRV(cuModuleUnload)(g->mod[i]);
    if (g->ctx) DRV(cuDevicePrimaryCtxRelease)(g->dev);
    free(g);
}

int zr_gpu_open(ZrGpu **out, int local_rank, const ZrGpuBlob *blobs, int n_blobs)
{
    *out = NULL;
    if (driver_load() < 0) return -ENODEV;
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);   /* lazy loading stalls a first launch beside NCCL */
    CUresult r = DRV(cuInit)(0);
    if (r != CUDA_SUCCESS) return cu_fail(NULL, r, "cuInit (no GPU or no driver)");
    int ndev = 0, driver = 0;
    CU(NULL, "cuDriverGetVersion", DRV(cuDriverGetVersion)(&driver));
    int needed = blobs ? blobs_need(blobs, n_blobs) : 0;
    if (needed && driver < needed) {
        snprintf(open_err, sizeof open_err, "the NVIDIA driver supports CUDA %d.%d, but the kernels were "
                 "compiled by CUDA %d.%d's NVRTC: install a driver for CUDA %d.%d or newer (Linux: %s)",
                 driver / 1000, driver % 1000 / 10, needed / 1000, needed % 1000 / 10, needed / 1000,
                 needed % 1000 / 10, driver_branch(needed));
        return -ENOEXEC;
    }
    CU(NULL, "cuDeviceGetCount", DRV(cuDeviceGetCount)(&ndev));
    if (ndev <= 0) { snprintf(open_err, sizeof open_err, "no CUDA device"); return -ENODEV; }
    ZrGpu *g = calloc(1, sizeof *g);
    if (!g) return -ENOMEM;
    int rc = 0, maj = 0, min = 0;
    g->ord = local_rank < 0 ? 0 : local_rank % ndev;
    g->driver = driver;
    g->needed = needed;
    char name[128] = "", what[64];
    snprintf(what, sizeof what, "cuDeviceGet(%d)", g->ord);
    if ((r = DRV(cuDeviceGet)(&g->dev, g->ord)) != CUDA_SUCCESS ||
        (r = DRV(cuDevicePrimaryCtxRetain)(&g->ctx, g->dev)) != CUDA_SUCCESS) {
        rc = cu_fail(g, r, r == CUDA_SUCCESS ? what : "cuDevicePrimaryCtxRetain");
        g->ctx = NULL;
        fail_open(g);
        return rc;
    }
    if ((r = DRV(cuCtxSetCurrent)(g->ctx)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetAttribute)(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetAttribute)(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev)) != CUDA_SUCCESS ||
        (r = DRV(cuDeviceGetName)(name, sizeof name, g->dev)) != CUDA_SUCCESS) {
        rc = cu_fail(g, r, "CUDA device set-up (context, compute capability, name)");
        fail_open(g);
        return rc;
    }
    /* cuBLAS and NCCL use the runtime API, on the same primary context: the one choice of device */
    cudaError_t ce = cudaSetDevice(g->ord);
    if (ce != cudaSuccess) {
        snprintf(g->err, sizeof g->err, "cudaSetDevice(%d): %s (%s)", g->ord, cudaGetErrorName(ce),
                 cudaGetErrorString(ce));
        fail_open(g);
        return -EIO;
    }
    g->arch = maj * 10 + min;
    if (blobs && (rc = load_modules(g, blobs, n_blobs)) < 0) { fail_open(g); return rc; }
    cublasStatus_t st = cublasCreate(&g->blas);
    if (st != CUBLAS_STATUS_SUCCESS) { g->blas = NULL; rc = zr_gpu_blas_fail(g, st, "cublasCreate"); fail_open(g); return rc; }
    st = cublasSetMathMode(g->blas, CUBLAS_PEDANTIC_MATH);   /* fp32 stays fp32 (no TF32) */
    if (st != CUBLAS_STATUS_SUCCESS) { rc = zr_gpu_blas_fail(g, st, "cublasSetMathMode"); fail_open(g); return rc; }
    const char *sd = getenv("ZR_SYNC_DEBUG");
    g->sync_debug = sd && *sd && strcmp(sd, "0") != 0;
    const char *wt = getenv("ZR_GPU_WAIT_TIMEOUT_S");
    g->wait_timeout_s = wt && atof(wt) > 0 ? atof(wt) : zr_coll_default_timeout();
    snprintf(g->desc, sizeof g->desc, "GPU %d: %s (sm_%d), driver CUDA %d.%d, %d cubin + %d PTX modules, "
             "%d kernels%s", g->ord, name, g->arch, driver / 1000, driver % 1000 / 10, g->n_cubin, g->n_ptx,
             g->n_fn, g->sync_debug ? ", sync-debug" : "");
    *out = g;
    return 0;
}

/* ---------------------------------------------------------------------- waiting */
/* Polls query() until it is not CUDA_ERROR_NOT_READY. Meanwhile the collectives in flight are
** advanced (zr_coll's watchdog aborts the job when one outlives its timeout), the caller's hook is
** asked, and after wait_timeout_s with nothing else to blame the wait gives up, naming `what`. */
typedef CUresult (*QueryFn)(void *h);
static int poll_wait(ZrGpu *g, QueryFn query, void *h, const char *what, const char *last_kernel)
{
    double t0 = 0, next_coll = 0;
    for (unsigned polls = 0;; polls++) {
        CUresult r = query(h);
        if (r == CUDA_SUCCESS) return 0;
        if (r != CUDA_ERROR_NOT_READY) {
            int rc = cu_fail(g, r, what);
            if (last_kernel && last_kernel[0]) {
                size_t l = strlen(g->err);
                snprintf(g->err + l, sizeof g->err - l, "; the last kernel launched on this stream was %s%s",
                         last_kernel, g->sync_debug ? "" : " (run with ZR_SYNC_DEBUG=1 or --sync-debug to "
                         "name the kernel that faulted)");
            }
            return rc;
        }
        if (polls < 64) continue;                        /* most waits end within microseconds */
        double t = now_s();
        if (!t0) t0 = next_coll = t;
        if (g->comm && g->n_req && t >= next_coll) {
            next_coll = t + 0.01;
            for (int i = 0; i < g->n_req;) {             /* the watchdog runs in here */
                int done = 0;
                if (zr_coll_test(g->comm, g->req[i], &done) < 0) {
                    snprintf(g->err, sizeof g->err, "%s: a collective in flight failed", what);
                    return -EIO;
                }
                if (done) g->req[i] = g->req[--g->n_req]; else i++;
            }
        }
        if (g->hook && g->hook(g->hook_arg, what, t - t0)) {
            snprintf(g->err, sizeof g->err, "%s: given up after %.1f s (wait hook)", what, t - t0);
            if (g->comm) zr_coll_dev_abort(g->comm);
            return -ETIMEDOUT;
        }
        if (t - t0 > g->wait_timeout_s) {
            snprintf(g->err, sizeof g->err, "%s: not complete after %.0f s (ZR_GPU_WAIT_TIMEOUT_S): "
                     "the GPU work it waits for never finished%s%s", what, t - t0,
                     last_kernel && last_kernel[0] ? "; the last kernel launched there was " : "",
                     last_kernel ? last_kernel : "");
            if (g->comm) zr_coll_dev_abort(g->comm);
            return -ETIMEDOUT;
        }
        struct timespec ts = {0, t - t0 < 0.1 ? 20000 : 500000};
        nanosleep(&ts, NULL);
    }
}

static CUresult q_event(void *h) { return DRV(cuEventQuery)((CUevent)h); }
static CUresult q_stream(void *h) { return DRV(cuStreamQuery)((CUstream)h); }

static int stream_wait(ZrGpuStream *s)
{
    char what[96];
    snprintf(what, sizeof what, "waiting for stream %s", s->name);
    return poll_wait(s->g, q_stream, (void *)s->s, what, s->last_kernel);
}

void zr_gpu_close(ZrGpu *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_streams; i++)       /* nothing may still run on what is freed below */
        if (stream_wait(g->streams[i]) < 0) fprintf(stderr, "zr_gpu: close: %s\n", g->err);
    for (int k = 0; k < ZR_GPU_NPARTS; k++)
        if (g->part[k]) g->part[k]->close(g);
    if (g->blas) {
        cublasStatus_t st = cublasDestroy(g->blas);
        if (st != CUBLAS_STATUS_SUCCESS) fprintf(stderr, "zr_gpu: cublasDestroy: %s\n", cublasGetStatusName(st));
    }
    for (int i = 0; i < g->n_mod; i++) cu_warn(g, DRV(cuModuleUnload)(g->mod[i]), "cuModuleUnload");
    cu_warn(g, DRV(cuDevicePrimaryCtxRelease)(g->dev), "cuDevicePrimaryCtxRelease");
    free(g);
}

/* ---------------------------------------------------------------------- memory */
int zr_gpu_malloc(ZrGpu *g, void **dptr, size_t bytes)
{
    CUdeviceptr p = 0;
    char what[64];
    if (g->n_capturing) return zr_gpu_capture_refuse(g, NULL, "zr_gpu_malloc");
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    CU(g, what, DRV(cuMemAlloc)(&p, bytes ? bytes : 1));
    *dptr = (void *)(uintptr_t)p;
    return 0;
}

int zr_gpu_mem_info(ZrGpu *g, size_t *free_b, size_t *total_b)
{
    CU(g, "cuMemGetInfo", DRV(cuMemGetInfo)(free_b, total_b));
    return 0;
}

void zr_gpu_free(ZrGpu *g, void *dptr)
{
    if (g->n_capturing) { zr_gpu_capture_refuse(g, NULL, "zr_gpu_free"); fprintf(stderr, "zr_gpu: %s\n", g->err); return; }
    if (dptr) cu_warn(g, DRV(cuMemFree)((CUdeviceptr)(uintptr_t)dptr), "cuMemFree");
}

int zr_gpu_host_register(ZrGpu *g, void *p, size_t bytes)
{
    char what[64];
    if (g->n_capturing) return zr_gpu_capture_refuse(g, NULL, "zr_gpu_host_register");
    snprintf(what, sizeof what, "cuMemHostRegister(%zu bytes)", bytes);
    CU(g, what, DRV(cuMemHostRegister)(p, bytes, 0));
    if (g->n_pinned < ZG_MAX_PINNED) g->pinned[g->n_pinned++] = (Pinned){(const char *)p, bytes};
    return 0;
}

void zr_gpu_host_unregister(ZrGpu *g, void *p)
{
    for (int i = 0; i < g->n_pinned; i++)
        if (g->pinned[i].p == p) { g->pinned[i] = g->pinned[--g->n_pinned]; break; }
    cu_warn(g, DRV(cuMemHostUnregister)(p), "cuMemHostUnregister");
}

/* An async copy from/to pageable memory is synchronous on the host: said once; a capture cannot hold
** one (refused). */
static int check_pinned(ZrGpuStream *s, const void *p, size_t n, const char *dir)
{
    ZrGpu *g = s->g;
    for (int i = 0; i < g->n_pinned; i++)
        if ((const char *)p >= g->pinned[i].p && (const char *)p + n <= g->pinned[i].p + g->pinned[i].n) return 0;
    if (s->capturing) {
        char call[96];
        snprintf(call, sizeof call, "%s copy of %zu bytes with pageable host memory", dir, n);
        return zr_gpu_capture_refuse(g, s, call);
    }
    if (!g->pageable_warned++)
        fprintf(stderr, "zr_gpu: warning: %s copy of %zu bytes at %p uses pageable host memory (not "
                "registered): it blocks the host (reported once)\n", dir, n, p);
    return 0;
}

/* ---------------------------------------------------------------------- streams and events */
int zr_gpu_stream_create(ZrGpu *g, ZrGpuStream **out, const char *name)
{
    if (g->n_streams == ZG_MAX_STREAMS) { snprintf(g->err, sizeof g->err, "more than %d streams", ZG_MAX_STREAMS); return -E2BIG; }
    ZrGpuStream *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->g = g;
    snprintf(s->name, sizeof s->name, "%s", name ? name : "?");
    CUresult r = DRV(cuStreamCreate)(&s->s, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) { free(s); return cu_fail(g, r, "cuStreamCreate"); }
    g->streams[g->n_streams++] = s;
    *out = s;
    return 0;
}

void zr_gpu_stream_destroy(ZrGpuStream *s)
{
    if (!s) return;
    ZrGpu *g = s->g;
    if (stream_wait(s) < 0) fprintf(stderr, "zr_gpu: destroying stream %s: %s\n", s->name, g->err);
    cu_warn(g, DRV(cuStreamDestroy)(s->s), "cuStreamDestroy");
    for (int i = 0; i < g->n_streams; i++)
        if (g->streams[i] == s) { g->streams[i] = g->streams[--g->n_streams]; break; }
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

void zr_gpu_event_destroy(ZrGpuEvent *e) { if (e) { cu_warn(e->g, DRV(cuEventDestroy)(e->e), "cuEventDestroy"); free(e); } }

int zr_gpu_record(ZrGpuEvent *e, ZrGpuStream *s)
{
    if (s->capturing) return zr_gpu_capture_refuse(s->g, s, "zr_gpu_record (an event record)");
    snprintf(e->last_stream, sizeof e->last_stream, "%s", s->name);
    CU(e->g, "cuEventRecord", DRV(cuEventRecord)(e->e, s->s));
    return 0;
}

int zr_gpu_wait(ZrGpuStream *s, ZrGpuEvent *e)
{
    if (s->capturing) return zr_gpu_capture_refuse(s->g, s, "zr_gpu_wait (an event wait)");
    CU(s->g, "cuStreamWaitEvent", DRV(cuStreamWaitEvent)(s->s, e->e, 0));
    return 0;
}

/* Nothing of an open collective group is enqueued before its end (NCCL's rule): no host wait. */
static int group_open(ZrGpu *g)
{
    if (!g->group_depth) return 0;
    snprintf(g->err, sizeof g->err, "the host waits inside an open collective group (its members "
             "launch only at zr_gpu_group_end)");
    return -EINVAL;
}

int zr_gpu_event_sync(ZrGpuEvent *e)
{
    if (group_open(e->g)) return -EINVAL;
    if (e->g->n_capturing) return zr_gpu_capture_refuse(e->g, NULL, "zr_gpu_event_sync (a host wait)");
    char what[96];
    snprintf(what, sizeof what, "waiting for an event recorded on stream %s", e->last_stream[0] ? e->last_stream : "?");
    return poll_wait(e->g, q_event, (void *)e->e, what, NULL);
}

/* A host poll, not a wait: no hook, no timeout (the caller polls again or waits). */
int zr_gpu_event_query(ZrGpuEvent *e)
{
    if (group_open(e->g)) return -EINVAL;
    if (e->g->n_capturing) return zr_gpu_capture_refuse(e->g, NULL, "zr_gpu_event_query (a host poll)");
    CUresult r = q_event((void *)e->e);
    if (r == CUDA_SUCCESS) return 1;
    if (r == CUDA_ERROR_NOT_READY) return 0;
    return cu_fail(e->g, r, "querying an event");
}

int zr_gpu_stream_sync(ZrGpuStream *s)
{
    if (group_open(s->g)) return -EINVAL;
    if (s->g->n_capturing) return zr_gpu_capture_refuse(s->g, NULL, "zr_gpu_stream_sync (a host wait)");
    return stream_wait(s);
}

/* ---------------------------------------------------------------------- work */
int zr_gpu_copy(ZrGpuStream *s, ZrGpuCopy kind, void *dst, const void *src, size_t bytes)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sp = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case ZR_GPU_H2D:
        if (check_pinned(s, src, bytes, "host-to-device") < 0) return -EINVAL;
        CU(s->g, "cuMemcpyHtoDAsync", DRV(cuMemcpyHtoDAsync)(d, src, bytes, s->s));
        break;
    case ZR_GPU_D2H:
        if (check_pinned(s, dst, bytes, "device-to-host") < 0) return -EINVAL;
        CU(s->g, "cuMemcpyDtoHAsync", DRV(cuMemcpyDtoHAsync)(dst, sp, bytes, s->s));
        break;
    case ZR_GPU_D2D: CU(s->g, "cuMemcpyDtoDAsync", DRV(cuMemcpyDtoDAsync)(d, sp, bytes, s->s)); break;
    }
    ZrGpuBytes *m = zr_gpu_moved(s);
    *(kind == ZR_GPU_H2D ? &m->h2d : kind == ZR_GPU_D2H ? &m->d2h : &m->d2d) += (int64_t)bytes;
    return 0;
}

void zr_gpu_bytes(const ZrGpu *g, ZrGpuBytes *out) { *out = g->moved; }

int zr_gpu_memset(ZrGpuStream *s, void *dptr, int byte, size_t bytes)
{
    CU(s->g, "cuMemsetD8Async", DRV(cuMemsetD8Async)((CUdeviceptr)(uintptr_t)dptr, (unsigned char)byte, bytes, s->s));
    return 0;
}

static GpuFunc *find_fn(ZrGpu *g, const char *name)
{
    for (int i = 0; i < g->n_fn; i++) if (strcmp(g->fn[i].name, name) == 0) return &g->fn[i];
    for (int m = 0; m < g->n_mod; m++) {          /* only modules without a PTX to list them */
        CUfunction f;
        if (DRV(cuModuleGetFunction)(&f, g->mod[m], name) != CUDA_SUCCESS) continue;
        if (resolve(g, g->mod[m], name, "?") < 0) return NULL;
        return &g->fn[g->n_fn - 1];
    }
    return NULL;
}

int zr_gpu_launch(ZrGpuStream *s, const char *kernel, const unsigned grid[3], const unsigned block[3],
                  unsigned shmem, void **args)
{
    ZrGpu *g = s->g;
    GpuFunc *f = find_fn(g, kernel);
    if (!f) {
        snprintf(g->err, sizeof g->err, "kernel %s is in no loaded module", kernel);
        return -ENOENT;
    }
    unsigned long threads = (unsigned long)block[0] * block[1] * block[2];
    if (threads > (unsigned long)f->max_threads) {
        snprintf(g->err, sizeof g->err, "kernel %s: block (%u,%u,%u) has %lu threads, more than the %d "
                 "it was compiled for (__launch_bounds__ or registers)", kernel, block[0], block[1],
                 block[2], threads, f->max_threads);
        return -EINVAL;
    }
    char what[160];
    /* Dynamic shared memory above the 48 KiB default (attention_tc.cu): the kernel's opt-in limit is
    ** raised once to what the launch asks; the driver refuses what the device cannot give. */
    if (shmem > 48 * 1024 && (int)shmem > f->dyn_smem) {
        snprintf(what, sizeof what, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)", kernel, shmem);
        CU(g, what, DRV(cuFuncSetAttribute)(f->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shmem));
        f->dyn_smem = (int)shmem;
    }
    snprintf(s->last_kernel, sizeof s->last_kernel, "%s", kernel);
    snprintf(what, sizeof what, "cuLaunchKernel(%s, grid (%u,%u,%u), block (%u,%u,%u), %u bytes shared)",
             kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem);
    CU(g, what, DRV(cuLaunchKernel)(f->f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem,
                                    s->s, args, NULL));
    if (g->sync_debug) {
        CUresult r = DRV(cuStreamSynchronize)(s->s);
        if (r != CUDA_SUCCESS) {
            snprintf(what, sizeof what, "sync-debug: kernel %s (grid (%u,%u,%u), block (%u,%u,%u)) on stream %s "
                     "faulted", kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], s->name);
            return cu_fail(g, r, what);
        }
    }
    return 0;
}

/* The footprints feed the stand-in's race checker; on a GPU the ordering is the driver's. */
int zr_gpu_footprint(ZrGpuStream *s, const void *p, size_t bytes, int write)
{
    (void)s; (void)p; (void)bytes; (void)write;
    return 0;
}

#endif
