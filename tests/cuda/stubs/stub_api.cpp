/*
** stub_api.cpp — stand-in libcuda / libcudart / libcublas / libnccl for testing runtime/zr_gpu_cuda.c
** without a GPU (tests/cuda/t_gpu_stub.sh). One shared library exports the entry points
** zr_gpu_cuda.c and zr_coll_nccl.c use, with the prototypes of the real headers (so a signature
** mismatch does not compile); the test links it in place of cuBLAS/cudart/NCCL and opens it as the
** driver through ZR_LIBCUDA.
** What it checks, as the real libraries would refuse: PTX whose .target is above the device or whose
** ISA needs a newer driver than the one it pretends to be; a cubin not for the device's SM;
** cuModuleGetFunction of a name the module lacks; launches against CUDA's grid/block limits, the
** kernel's .maxntid / __launch_bounds__, 48 KiB of dynamic shared memory, the argument count and a
** non-NULL `extra`; copies and memsets outside a device allocation; cudaSetDevice out of range; cuBLAS
** leading dimensions; NCCL on more than one rank. Kernels run through zr_simt.h (stub_kernels.cpp),
** gemm is a column-major reference loop, one-rank NCCL collectives are copies.
** Work runs when it is enqueued (streams are trivially ordered). Environment knobs:
**   ZR_STUB_DRIVER=13000  the CUDA version cuDriverGetVersion reports
**   ZR_STUB_SM=80         the device's compute capability (86: no exact cubin, PTX is JIT-loaded)
**   ZR_STUB_FAULT_KERNEL=name  launching it makes the context fail (CUDA_ERROR_ILLEGAL_ADDRESS,
**                         sticky, reported by the next synchronising call), as a bad kernel does
**   ZR_STUB_TOTAL_MB=81559, ZR_STUB_CONTEXT_MB=300  cuMemGetInfo's total, and the context's share;
**                         cuMemAlloc beyond the free rest fails with CUDA_ERROR_OUT_OF_MEMORY
**   ZR_STUB_HANG=1        events and streams never complete (queries say NOT_READY, the blocking
**                         cuEventSynchronize/cuStreamSynchronize never return)
** Stream capture: a capturing stream records its launches, copies, memsets and cuBLAS gemms (the
** arguments copied) instead of running them; cuGraphLaunch runs the records in order (cuBLASLt
** under capture is refused: not emulated). zr_stub_summary() says what happened (the test prints it).
*/
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <nccl.h>
#pragma GCC diagnostic pop
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <functional>
#include <string>
#include <vector>
#include "stub.h"
#include "zr_half.h"

namespace {
struct Fn { std::string name; int kid; unsigned maxntid; int dyn_smem; };  /* dyn_smem: the opt-in limit set */
struct Mod { std::vector<Fn *> fns; int is_ptx, arch; };
struct Alloc { char *p; size_t n; };
struct St { int driver, sm, ndev, dev = -1, hang; size_t total_b, context_b, used_b; std::string fault; CUresult sticky = CUDA_SUCCESS;
            std::vector<Alloc> allocs; std::vector<Alloc> pinned;
            int n_cubin, n_ptx, launches, refused, pageable, aborted, gemm_ex, lt_matmul, lt_heur; std::string log;
            int group_depth, groups, grouped; std::vector<std::function<void()>> group_q;
            int captures, captured, graph_launches;
            /* TF32 (zr_gpu_set_tf32): fp32 GEMMs by what they were asked to compute in */
            int sgemm_exact, sgemm_tf32, gex_fp32_exact, gex_fp32_tf32, gex_16bit, lt_fp32_exact, lt_fp32_tf32,
                gex_16bit_not_default; } S;
/* A capturing stream records its work (closures with the arguments copied) instead of running it;
** a graph holds the records, and a launch runs them in order. */
struct Stream { int id; int capturing = 0; std::vector<std::function<void()>> rec; };
struct Graph { std::vector<std::function<void()>> ops; };
Stream *blas_stream;                       /* cublasSetStream's */
bool defer(CUstream s, std::function<void()> f)
{
    Stream *st = (Stream *)s;
    if (!st || !st->capturing) return false;
    st->rec.push_back(std::move(f));
    S.captured++;
    return true;
}
struct Event { int recorded; };
int inited;

void init_state()
{
    if (inited) return;
    inited = 1;
    const char *e;
    S.driver = (e = getenv("ZR_STUB_DRIVER")) ? atoi(e) : 13000;
    S.sm = (e = getenv("ZR_STUB_SM")) ? atoi(e) : 80;
    S.ndev = (e = getenv("ZR_STUB_DEVICES")) ? atoi(e) : 1;
    S.hang = (e = getenv("ZR_STUB_HANG")) && *e == '1';
    if ((e = getenv("ZR_STUB_FAULT_KERNEL"))) S.fault = e;
    /* an H100 80GB's cuMemGetInfo total (81559 MiB) unless planted; the context's share of it */
    S.total_b = ((e = getenv("ZR_STUB_TOTAL_MB")) ? (size_t)atoll(e) : 81559) << 20;
    S.context_b = ((e = getenv("ZR_STUB_CONTEXT_MB")) ? (size_t)atoll(e) : 300) << 20;
}

CUresult refuse(CUresult r, const char *fmt, const char *a, long b = 0, long c = 0)
{
    fprintf(stderr, "zr_stub: ");
    fprintf(stderr, fmt, a, b, c);
    fprintf(stderr, "\n");
    S.refused++;
    return r;
}

int in_alloc(const void *p, size_t n)
{
    for (auto &a : S.allocs)
        if ((const char *)p >= a.p && (const char *)p + n <= a.p + a.n) return 1;
    return 0;
}
int in_pinned(const void *p, size_t n)
{
    for (auto &a : S.pinned)
        if ((const char *)p >= a.p && (const char *)p + n <= a.p + a.n) return 1;
    return 0;
}

/* Kernel names and bounds of a PTX text: ".entry name(" ... ".maxntid x, y, z". */
void ptx_entries(const char *t, Mod *m)
{
    for (const char *e = strstr(t, ".entry "); e; e = strstr(e, ".entry ")) {
        e += 7;
        while (*e == ' ') e++;
        size_t k = strcspn(e, "( \n");
        Fn *f = new Fn{std::string(e, k), -1, 0, 0};
        const char *next = strstr(e, ".entry "), *mx = strstr(e, ".maxntid");
        if (mx && (!next || mx < next)) {
            unsigned x = 1, y = 1, z = 1;
            sscanf(mx, ".maxntid %u, %u, %u", &x, &y, &z);
            f->maxntid = x * y * z;
        }
        m->fns.push_back(f);
    }
}

/* Global function symbols of a cubin (ELF64). */
int cubin_entries(const unsigned char *b, Mod *m)
{
    uint64_t shoff; uint16_t shentsize, shnum;
    memcpy(&shoff, b + 0x28, 8); memcpy(&shentsize, b + 0x3a, 2); memcpy(&shnum, b + 0x3c, 2);
    for (int i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (size_t)i * shentsize;
        uint32_t type, link; uint64_t off, size, entsize;
        memcpy(&type, sh + 4, 4);
        if (type != 2) continue;                              /* SHT_SYMTAB */
        memcpy(&off, sh + 0x18, 8); memcpy(&size, sh + 0x20, 8); memcpy(&link, sh + 0x28, 4); memcpy(&entsize, sh + 0x38, 8);
        const unsigned char *strsh = b + shoff + (size_t)link * shentsize;
        uint64_t stroff; memcpy(&stroff, strsh + 0x18, 8);
        for (uint64_t s = 0; s < size / entsize; s++) {
            const unsigned char *sym = b + off + s * entsize;
            uint32_t name; memcpy(&name, sym, 4);
            if ((sym[4] & 0xf) == 2 && (sym[4] >> 4) == 1)     /* STT_FUNC, STB_GLOBAL */
                m->fns.push_back(new Fn{std::string((const char *)b + stroff + name), -1, 0, 0});
        }
        return 0;
    }
    return -1;
}

void block_forever() { for (;;) sleep(1); }
}

/* What the fp32 and 16-bit GEMMs were asked to compute in (t_gpu_stub.sh's tf32 scenario). */
extern "C" const char *zr_stub_math_summary(void)
{
    static char b[300];
    snprintf(b, sizeof b, "stub math: sgemm exact %d tf32 %d; gemm_ex fp32 exact %d tf32 %d, 16-bit %d (not DEFAULT "
             "math %d); cublasLt fp32 exact %d tf32 %d", S.sgemm_exact, S.sgemm_tf32, S.gex_fp32_exact,
             S.gex_fp32_tf32, S.gex_16bit, S.gex_16bit_not_default, S.lt_fp32_exact, S.lt_fp32_tf32);
    return b;
}

extern "C" const char *zr_stub_summary(void)
{
    char b[400];
    snprintf(b, sizeof b, "stub: device %d sm_%d driver %d; modules cubin %d ptx %d; launches %d; refused %d; "
             "pageable async copies %d; nccl aborted %d; nccl groups %d (%d collectives); gemm_ex %d; gemm_lt %d "
             "(heuristics %d); captures %d (%d operations), graph launches %d", S.dev, S.sm, S.driver, S.n_cubin,
             S.n_ptx, S.launches, S.refused, S.pageable, S.aborted, S.groups, S.grouped, S.gemm_ex, S.lt_matmul,
             S.lt_heur, S.captures, S.captured, S.graph_launches);
    S.log = b;
    return S.log.c_str();
}

/* ------------------------------------------------------------------ driver API */
extern "C" {
CUresult CUDAAPI cuInit(unsigned int) { init_state(); return S.ndev > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE; }
CUresult CUDAAPI cuDriverGetVersion(int *v) { init_state(); *v = S.driver; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetCount(int *n) { *n = S.ndev; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ord) { if (ord < 0 || ord >= S.ndev) return CUDA_ERROR_INVALID_DEVICE; *d = ord; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice)
{
    if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) *v = S.sm / 10;
    else if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) *v = S.sm % 10;
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, (size_t)len, "zr stub GPU %d", d); return CUDA_SUCCESS; }
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = (CUcontext)(uintptr_t)(0x1000 + d); return CUDA_SUCCESS; }
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) { S.dev = (int)((uintptr_t)c - 0x1000); return CUDA_SUCCESS; }

CUresult CUDAAPI cuGetErrorName(CUresult r, const char **s)
{
    switch (r) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    case CUDA_ERROR_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: *s = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
       : r == CUDA_ERROR_NOT_READY ? "device not ready" : "stub error";
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *out, const void *image)
{
    const unsigned char *b = (const unsigned char *)image;
    Mod *m = new Mod();
    if (memcmp(b, "\177ELF", 4) == 0) {
        uint32_t flags; memcpy(&flags, b + 48, 4);
        m->arch = (int)((flags >> 8) & 0xff);
        if ((b[18] | b[19] << 8) != 190 || m->arch != S.sm)
            return refuse(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadData: cubin for sm_%s%ld, device is sm_%ld", "", m->arch, S.sm);
        if (cubin_entries(b, m) < 0) return refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %scubin without a symbol table", "");
        S.n_cubin++;
    } else {
        const char *t = (const char *)image, *tg = strstr(t, ".target sm_"), *vs = strstr(t, ".version ");
        int isa_maj = 0, isa_min = 0;
        if (!tg || !vs) return refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %sneither a cubin nor PTX", "");
        m->arch = atoi(tg + 11);
        sscanf(vs, ".version %d.%d", &isa_maj, &isa_min);
        if (m->arch > S.sm) return refuse(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadData: %sPTX for sm_%ld on an sm_%ld device", "", m->arch, S.sm);
        if ((isa_maj + 4) * 1000 + isa_min * 10 > S.driver)
            return refuse(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "cuModuleLoadData: %sPTX ISA %ld needs a newer driver than CUDA %ld",
                          "", isa_maj * 10 + isa_min, S.driver);
        m->is_ptx = 1;
        ptx_entries(t, m);
        S.n_ptx++;
    }
    for (Fn *f : m->fns) {
        f->kid = zs_kernel_find(f->name.c_str());
        if (!f->maxntid && f->kid >= 0) f->maxntid = zs_kernel_bound(f->kid);
    }
    *out = (CUmodule)m;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule m) { delete (Mod *)m; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
    for (Fn *fn : ((Mod *)mod)->fns)
        if (fn->name == name) {
            if (fn->kid < 0) return refuse(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction(%s): in the module but not emulated", name);
            *f = (CUfunction)fn;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}
/* The opt-in for dynamic shared memory above 48 KiB, up to the device's limit (sm_80 163 KiB, sm_90
** 227 KiB, sm_86 99 KiB). */
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    Fn *fn = (Fn *)f;
    int lim = (S.sm == 80 ? 163 : S.sm >= 90 ? 227 : 99) * 1024;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v < 0 || v > lim)
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute(%s): %ld bytes of dynamic shared memory, the device allows %ld",
                      fn->name.c_str(), v, lim);
    fn->dyn_smem = v;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    Fn *fn = (Fn *)f;
    if (a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) *v = fn->maxntid ? (int)fn->maxntid : 1024;
    else if (a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) *v = 0;
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shmem, CUstream st, void **params, void **extra)
{
    Fn *fn = (Fn *)f;
    const char *k = fn->name.c_str();
    unsigned long threads = (unsigned long)bx * by * bz;
    if (S.sticky) return S.sticky;
    if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 || threads > 1024 ||
        gx > 0x7fffffffu || gy > 65535 || gz > 65535)
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): grid/block outside CUDA's limits (block %ld threads)", k, (long)threads);
    if (fn->maxntid && threads > fn->maxntid)
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): %ld threads per block, the kernel's .maxntid is %ld", k, (long)threads, fn->maxntid);
    if (shmem > 48 * 1024 && (int)shmem > fn->dyn_smem)
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): %ld bytes of dynamic shared memory without the opt-in attribute", k, shmem);
    if (extra) return refuse(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): `extra` is not used by zr_gpu", k);
    int np = zs_kernel_nparams(fn->kid), given = 0;
    while (params && params[given]) given++;
    if (np && (!params || given < np))
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): %ld arguments given, the kernel takes %ld", k, given, np);
    /* the argument values, copied as the driver copies them (a capture keeps them for its replays) */
    std::vector<std::vector<char>> vals;
    for (int i = 0; i < np; i++) {
        const char *v = (const char *)params[i];
        vals.emplace_back(v, v + zs_kernel_param_size(fn->kid, i));
    }
    const int kid = fn->kid;
    const std::string name = fn->name;
    auto run = [=]() mutable {
        S.launches++;
        if (S.fault == name) { S.sticky = CUDA_ERROR_ILLEGAL_ADDRESS; return; }   /* faults later, asynchronously */
        const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
        std::vector<void *> a;
        for (auto &v : vals) a.push_back(v.data());
        a.push_back(nullptr);
        if (zs_kernel_launch(kid, g, b, shmem, a.data(), S.sm) != 0) S.sticky = CUDA_ERROR_LAUNCH_FAILED;
    };
    if (!defer(st, run)) run();
    return CUDA_SUCCESS;
}

/* Free: the total less the context and what is allocated; an allocation beyond it is refused as the
** driver refuses it (the stub backs only what it hands out, so a planted 80 GiB costs nothing). */
CUresult CUDAAPI cuMemGetInfo(size_t *free_b, size_t *total_b)
{
    init_state();
    size_t held = S.context_b + S.used_b;
    *free_b = held < S.total_b ? S.total_b - held : 0;
    *total_b = S.total_b;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n)
{
    init_state();
    size_t fr, tot;
    cuMemGetInfo(&fr, &tot);
    if (n > fr) return CUDA_ERROR_OUT_OF_MEMORY;
    char *m = (char *)aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    S.used_b += n;
    S.allocs.push_back({m, n});
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p)
{
    for (size_t i = 0; i < S.allocs.size(); i++)
        if ((uintptr_t)S.allocs[i].p == p) { S.used_b -= S.allocs[i].n; free(S.allocs[i].p); S.allocs.erase(S.allocs.begin() + (long)i); return CUDA_SUCCESS; }
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemHostRegister(void *p, size_t n, unsigned) { S.pinned.push_back({(char *)p, n}); return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    for (size_t i = 0; i < S.pinned.size(); i++)
        if (S.pinned[i].p == p) { S.pinned.erase(S.pinned.begin() + (long)i); return CUDA_SUCCESS; }
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream st)
{
    if (S.sticky) return S.sticky;
    if (!in_alloc((void *)(uintptr_t)d, n)) return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoDAsync: %s%ld bytes outside a device allocation", "", (long)n);
    if (!in_pinned(h, n)) S.pageable++;
    if (!in_pinned(h, n) && st && ((Stream *)st)->capturing) return refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuMemcpyHtoDAsync: %s%ld pageable bytes in a capture", "", (long)n);
    if (defer(st, [=]() { memcpy((void *)(uintptr_t)d, h, n); })) return CUDA_SUCCESS;
    memcpy((void *)(uintptr_t)d, h, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream st)
{
    if (S.sticky) return S.sticky;
    if (!in_alloc((void *)(uintptr_t)d, n)) return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemcpyDtoHAsync: %s%ld bytes outside a device allocation", "", (long)n);
    if (!in_pinned(h, n)) S.pageable++;
    if (!in_pinned(h, n) && st && ((Stream *)st)->capturing) return refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuMemcpyDtoHAsync: %s%ld pageable bytes in a capture", "", (long)n);
    if (defer(st, [=]() { memcpy(h, (void *)(uintptr_t)d, n); })) return CUDA_SUCCESS;
    memcpy(h, (void *)(uintptr_t)d, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    if (S.sticky) return S.sticky;
    if (!in_alloc((void *)(uintptr_t)d, n) || !in_alloc((void *)(uintptr_t)s, n))
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemcpyDtoDAsync: %s%ld bytes outside a device allocation", "", (long)n);
    if (defer(st, [=]() { memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); })) return CUDA_SUCCESS;
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    if (S.sticky) return S.sticky;
    if (!in_alloc((void *)(uintptr_t)d, n)) return refuse(CUDA_ERROR_INVALID_VALUE, "cuMemsetD8Async: %s%ld bytes outside a device allocation", "", (long)n);
    if (defer(st, [=]() { memset((void *)(uintptr_t)d, v, n); })) return CUDA_SUCCESS;
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned) { static int n; Stream *st = new Stream; st->id = ++n; *s = (CUstream)st; return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamDestroy(CUstream s) { delete (Stream *)s; return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamQuery(CUstream) { return S.hang ? CUDA_ERROR_NOT_READY : S.sticky; }
CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
    if (s && ((Stream *)s)->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (S.hang) block_forever();
    return S.sticky;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent e, unsigned) { return e ? S.sticky : CUDA_ERROR_INVALID_HANDLE; }
/* Capture (cuStreamBeginCapture is cuStreamBeginCapture_v2 through cuda.h, cuGraphInstantiate
** cuGraphInstantiateWithFlags): the modes and states the driver accepts. */
CUresult CUDAAPI cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
    Stream *st = (Stream *)s;
    if (!st || mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return refuse(CUDA_ERROR_INVALID_VALUE, "cuStreamBeginCapture: %sstream or mode %ld", "", (long)mode);
    if (st->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    st->capturing = 1;
    st->rec.clear();
    S.captures++;
    return S.sticky;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g)
{
    Stream *st = (Stream *)s;
    if (!st || !st->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    st->capturing = 0;
    Graph *gr = new Graph;
    gr->ops = std::move(st->rec);
    *g = (CUgraph)gr;
    st->rec.clear();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
    *e = (CUgraphExec) new Graph(*(Graph *)g);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream s)
{
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    if (s && ((Stream *)s)->capturing) return refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuGraphLaunch: %sinto a capture (not emulated)", "");
    if (S.sticky) return S.sticky;
    S.graph_launches++;
    for (auto &f : ((Graph *)e)->ops) f();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) { delete (Graph *)e; return CUDA_SUCCESS; }
CUresult CUDAAPI cuGraphDestroy(CUgraph g) { delete (Graph *)g; return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned) { *e = (CUevent) new Event{0}; return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventDestroy(CUevent e) { delete (Event *)e; return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream) { ((Event *)e)->recorded = 1; return S.sticky; }
CUresult CUDAAPI cuEventQuery(CUevent) { return S.hang ? CUDA_ERROR_NOT_READY : S.sticky; }
CUresult CUDAAPI cuEventSynchronize(CUevent) { if (S.hang) block_forever(); return S.sticky; }

/* ------------------------------------------------------------------ runtime API (what NCCL set-up uses) */
cudaError_t CUDARTAPI cudaGetDeviceCount(int *n) { init_state(); *n = S.ndev; return cudaSuccess; }
cudaError_t CUDARTAPI cudaSetDevice(int d)
{
    init_state();
    if (d < 0 || d >= S.ndev) return cudaErrorInvalidDevice;
    S.dev = d;
    return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetDevice(int *d) { *d = S.dev; return cudaSuccess; }
const char *CUDARTAPI cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "stub runtime error"; }
const char *CUDARTAPI cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorInvalidDevice ? "cudaErrorInvalidDevice" : "cudaErrorUnknown"; }
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { return cuStreamCreate((CUstream *)s, f) ? cudaErrorUnknown : cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) { cuStreamDestroy((CUstream)s); return cudaSuccess; }
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { cuEventCreate((CUevent *)e, f); return cudaSuccess; }
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cuEventRecord((CUevent)e, (CUstream)s) ? cudaErrorIllegalAddress : cudaSuccess; }
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t) { return S.hang ? cudaErrorNotReady : S.sticky ? cudaErrorIllegalAddress : cudaSuccess; }
cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) { cuEventDestroy((CUevent)e); return cudaSuccess; }

/* ------------------------------------------------------------------ cuBLAS */
cublasStatus_t CUBLASWINAPI cublasCreate(cublasHandle_t *h) { *h = (cublasHandle_t) new int(0); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasDestroy(cublasHandle_t h) { delete (int *)h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasSetStream(cublasHandle_t, cudaStream_t s) { blas_stream = (Stream *)s; return CUBLAS_STATUS_SUCCESS; }
/* The handle is its math mode (cublasCreate: DEFAULT); the GEMMs read it as cuBLAS does. */
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { *(int *)h = (int)m; return CUBLAS_STATUS_SUCCESS; }
static bool mode_tf32(cublasHandle_t h) { return (*(int *)h & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH; }
const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : s == CUBLAS_STATUS_INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_INTERNAL_ERROR"; }
const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_INVALID_VALUE ? "an invalid value was used as an argument" : "stub"; }
/* cublasGemmEx: the combinations zr_gpu uses (A, B of one type; C that type or fp32; COMPUTE_32F),
** column-major, fp32 products and sums, C rounded once (round to nearest even) when 16-bit. */
static float stub_ld(const void *p, long i, cudaDataType_t t)
{
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == CUDA_R_16BF ? zr_bf16_to_f32(h) : zr_fp16_to_f32(h);
}
static void stub_st(void *p, long i, cudaDataType_t t, float v)
{
    if (t == CUDA_R_32F) { ((float *)p)[i] = v; return; }
    ((uint16_t *)p)[i] = t == CUDA_R_16BF ? zr_f32_to_bf16(v) : zr_f32_to_fp16(v);
}
cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const void *alpha, const void *A, cudaDataType_t at, int lda,
                                         const void *B, cudaDataType_t bt, int ldb, const void *beta, void *C,
                                         cudaDataType_t ct, int ldc, cublasComputeType_t comp, cublasGemmAlgo_t)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    bool types = at == bt && (at == CUDA_R_16BF || at == CUDA_R_16F || at == CUDA_R_32F) && (ct == at || ct == CUDA_R_32F);
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1) ||
        !types || (comp != CUBLAS_COMPUTE_32F && !(comp == CUBLAS_COMPUTE_32F_FAST_TF32 && at == CUDA_R_32F && ct == CUDA_R_32F))) {
        fprintf(stderr, "zr_stub: cublasGemmEx: m %d n %d k %d lda %d ldb %d ldc %d types %d %d %d compute %d: invalid\n",
                m, n, k, lda, ldb, ldc, (int)at, (int)bt, (int)ct, (int)comp);
        S.refused++;
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    float al = *(const float *)alpha, be = *(const float *)beta;
    S.gemm_ex++;
    /* fp32 operands: TF32 when the compute type asks for it (or the handle's TF32 math mode does) */
    bool tf32 = at == CUDA_R_32F && (comp == CUBLAS_COMPUTE_32F_FAST_TF32 || mode_tf32(h));
    if (at != CUDA_R_32F) {
        S.gex_16bit++;
        if ((*(int *)h & 0xf) != CUBLAS_DEFAULT_MATH) S.gex_16bit_not_default++;
    } else if (tf32) S.gex_fp32_tf32++;
    else S.gex_fp32_exact++;
    auto run = [=]() {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float acc = 0;
                for (int p = 0; p < k; p++) {
                    float a = stub_ld(A, ta == CUBLAS_OP_N ? i + (long)p * lda : p + (long)i * lda, at);
                    float b = stub_ld(B, tb == CUBLAS_OP_N ? p + (long)j * ldb : j + (long)p * ldb, bt);
                    if (tf32) a = zr_f32_round_tf32(a), b = zr_f32_round_tf32(b);
                    acc += a * b;
                }
                long o = i + (long)j * ldc;
                stub_st(C, o, ct, al * acc + (be != 0 ? be * stub_ld(C, o, ct) : 0.0f));
            }
    };
    if (!defer((CUstream)blas_stream, run)) run();
    return CUBLAS_STATUS_SUCCESS;
}
/* Column-major C = alpha op(A) op(B) + beta C, with cuBLAS's argument checks. */
cublasStatus_t CUBLASWINAPI cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                        const float *alpha, const float *A, int lda, const float *B, int ldb,
                                        const float *beta, float *C, int ldc)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) {
        fprintf(stderr, "zr_stub: cublasSgemm: m %d n %d k %d lda %d ldb %d ldc %d: invalid\n", m, n, k, lda, ldb, ldc);
        S.refused++;
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const float al = *alpha, be = *beta;
    bool tf32 = mode_tf32(h);       /* TF32_TENSOR_OP_MATH: inputs rounded to TF32 */
    if (tf32) S.sgemm_tf32++;
    else S.sgemm_exact++;
    auto run = [=]() {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float acc = 0;
                for (int p = 0; p < k; p++) {
                    float a = ta == CUBLAS_OP_N ? A[i + (long)p * lda] : A[p + (long)i * lda];
                    float b = tb == CUBLAS_OP_N ? B[p + (long)j * ldb] : B[j + (long)p * ldb];
                    if (tf32) a = zr_f32_round_tf32(a), b = zr_f32_round_tf32(b);
                    acc += a * b;
                }
                C[i + (long)j * ldc] = al * acc + (be != 0 ? be * C[i + (long)j * ldc] : 0.0f);
            }
    };
    if (!defer((CUstream)blas_stream, run)) run();
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ NCCL, one rank */
struct StubComm { int nranks; };
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 7, sizeof *id); return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int nranks, ncclUniqueId, int rank)
{
    if (nranks != 1 || rank != 0) { fprintf(stderr, "zr_stub: NCCL stub has one rank only\n"); return ncclInvalidUsage; }
    *c = (ncclComm_t) new StubComm{nranks};
    return ncclSuccess;
}
static size_t tsize(ncclDataType_t t) { return t == ncclFloat32 ? 4 : 2; }
/* One rank: every collective is a copy. Inside a group it runs only at ncclGroupEnd, as NCCL
** enqueues a group's members only then: a caller that reads the result earlier reads stale data. */
static ncclResult_t one_rank(const void *s, void *r, size_t n, ncclDataType_t t)
{
    if (r == s) return ncclSuccess;
    if (!S.group_depth) { memmove(r, s, n * tsize(t)); return ncclSuccess; }
    S.group_q.push_back([=]() { memmove(r, s, n * tsize(t)); });
    return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t, cudaStream_t)
{ return one_rank(s, r, n, t); }
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t, cudaStream_t)
{ return one_rank(s, r, n, t); }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t, cudaStream_t)
{ return one_rank(s, r, n, t); }
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int, ncclComm_t, cudaStream_t)
{ return one_rank(s, r, n, t); }
ncclResult_t ncclGroupStart(void) { S.group_depth++; return ncclSuccess; }
ncclResult_t ncclGroupEnd(void)
{
    if (!S.group_depth) { fprintf(stderr, "zr_stub: ncclGroupEnd without ncclGroupStart\n"); return ncclInvalidUsage; }
    if (--S.group_depth) return ncclSuccess;
    S.groups++;
    S.grouped += (int)S.group_q.size();
    for (auto &f : S.group_q) f();
    S.group_q.clear();
    return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *e) { *e = ncclSuccess; return ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t c) { S.aborted++; fprintf(stderr, "zr_stub: ncclCommAbort\n"); delete (StubComm *)c; return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { delete (StubComm *)c; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "stub NCCL error"; }
ncclResult_t ncclGetVersion(int *v) { *v = 22800; return ncclSuccess; }
}

/* ------------------------------------------------------------------ cuBLASLt
** What zr_gpu_blaslt.c uses, with the real library's argument rules as documented in cublasLt.h:
** attribute sizes, COMPUTE_32F with fp32 scale, A and B of one type and C/D of that type or fp32,
** layouts that agree (op(A) m x k, op(B) k x n, C = D m x n, ld >= rows), a bias or bias gradient
** vector of D's rows in D's type, a GELU aux matrix with ld >= rows and a multiple of 8, an algorithm
** from the heuristic and a workspace within the preference. The product is the column-major
** reference loop in fp32, then the epilogue by its specification (bias before GELU, GELU of the fp32
** pre-activation in the tanh form, aux and D rounded once to D's type, BGRADA the sums of op(A) over
** k). The library is also opened through ZR_LIBCUBLASLT, so the handle and descriptors are ours. */
namespace {
struct LtDesc { cublasComputeType_t comp; cudaDataType_t scale; int32_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
                uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT; void *bias = nullptr, *aux = nullptr; int64_t auxld = 0; };
struct LtLayout { cudaDataType_t t; uint64_t rows, cols; int64_t ld; };
struct LtPref { uint64_t ws = 0; };
const uint32_t LT_MAGIC = 0x5a4c5431u;

cublasStatus_t lt_refuse(const char *what)
{
    fprintf(stderr, "zr_stub: %s\n", what);
    S.refused++;
    return CUBLAS_STATUS_INVALID_VALUE;
}

float lt_ld(const void *p, long i, cudaDataType_t t) { return stub_ld(p, i, t); }
void lt_st(void *p, long i, cudaDataType_t t, float v) { stub_st(p, i, t, v); }
float lt_sig(float v) { return 1.0f / (1.0f + expf(-2.0f * 0.7978845608028654f * (v + 0.044715f * v * v * v))); }

/* The checks both the heuristic and the matmul make; NULL when the combination is valid. */
const char *lt_check(const LtDesc *d, const LtLayout *a, const LtLayout *b, const LtLayout *c, const LtLayout *dd)
{
    uint64_t am = d->ta == CUBLAS_OP_N ? a->rows : a->cols, ak = d->ta == CUBLAS_OP_N ? a->cols : a->rows;
    uint64_t bk = d->tb == CUBLAS_OP_N ? b->rows : b->cols, bn = d->tb == CUBLAS_OP_N ? b->cols : b->rows;
    bool gelu = d->epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || d->epi == CUBLASLT_EPILOGUE_DGELU;
    if ((d->comp != CUBLAS_COMPUTE_32F && !(d->comp == CUBLAS_COMPUTE_32F_FAST_TF32 && a->t == CUDA_R_32F)) ||
        d->scale != CUDA_R_32F)
        return "compute type (COMPUTE_32F, or COMPUTE_32F_FAST_TF32 for fp32 A and B; fp32 scale)";
    if (a->t != b->t || (c->t != a->t && c->t != CUDA_R_32F) || c->t != dd->t) return "matrix types";
    if (ak != bk || am != c->rows || bn != c->cols || c->rows != dd->rows || c->cols != dd->cols || c->ld != dd->ld)
        return "layouts disagree";
    if (a->ld < (int64_t)a->rows || b->ld < (int64_t)b->rows || c->ld < (int64_t)c->rows) return "leading dimension below rows";
    if (d->epi != CUBLASLT_EPILOGUE_DEFAULT && d->epi != CUBLASLT_EPILOGUE_BIAS && d->epi != CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
        d->epi != CUBLASLT_EPILOGUE_DGELU && d->epi != CUBLASLT_EPILOGUE_BGRADA)
        return "epilogue not emulated";
    if ((d->epi == CUBLASLT_EPILOGUE_BIAS || d->epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || d->epi == CUBLASLT_EPILOGUE_BGRADA) && !d->bias)
        return "bias pointer missing";
    if (gelu && (!d->aux || d->auxld < (int64_t)dd->rows || d->auxld % 8)) return "aux pointer or leading dimension";
    return nullptr;
}
}

extern "C" {
cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *h) { *h = (cublasLtHandle_t) new int(1); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t h) { delete (int *)h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t comp, cudaDataType_t scale)
{
    LtDesc *x = new LtDesc();
    x->comp = comp;
    x->scale = scale;
    *d = (cublasLtMatmulDesc_t)x;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete (LtDesc *)d; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                                          const void *buf, size_t n)
{
    LtDesc *x = (LtDesc *)d;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: if (n != 4) break; memcpy(&x->ta, buf, 4); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_TRANSB: if (n != 4) break; memcpy(&x->tb, buf, 4); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: if (n != 4) break; memcpy(&x->epi, buf, 4); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: if (n != sizeof(void *)) break; memcpy(&x->bias, buf, n); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: if (n != sizeof(void *)) break; memcpy(&x->aux, buf, n); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: if (n != 8) break; memcpy(&x->auxld, buf, 8); return CUBLAS_STATUS_SUCCESS;
    default: return lt_refuse("cublasLtMatmulDescSetAttribute: attribute not emulated");
    }
    return lt_refuse("cublasLtMatmulDescSetAttribute: size of the attribute");
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld)
{
    *l = (cublasLtMatrixLayout_t) new LtLayout{t, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { delete (LtLayout *)l; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) { *p = (cublasLtMatmulPreference_t) new LtPref(); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { delete (LtPref *)p; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
                                                                const void *buf, size_t n)
{
    if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && n == 8) { memcpy(&((LtPref *)p)->ws, buf, 8); return CUBLAS_STATUS_SUCCESS; }
    if ((a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES || a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ||
         a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES || a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) && n == 4)
        return CUBLAS_STATUS_SUCCESS;
    return lt_refuse("cublasLtMatmulPreferenceSetAttribute: attribute or size");
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                                          cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                                          cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t p, int req,
                                                          cublasLtMatmulHeuristicResult_t *res, int *n)
{
    S.lt_heur++;
    const char *bad = lt_check((LtDesc *)d, (LtLayout *)a, (LtLayout *)b, (LtLayout *)c, (LtLayout *)dd);
    if (bad || req < 1) return lt_refuse(bad ? bad : "requested no algorithm");
    memset(res, 0, sizeof *res);
    memcpy(res->algo.data, &LT_MAGIC, 4);
    res->workspaceSize = ((LtPref *)p)->ws < (1u << 20) ? ((LtPref *)p)->ws : (1u << 20);
    res->state = CUBLAS_STATUS_SUCCESS;
    *n = 1;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t dsc, const void *alpha, const void *A,
                                          cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb,
                                          const void *beta, const void *C, cublasLtMatrixLayout_t lc, void *D,
                                          cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws,
                                          size_t wsn, cudaStream_t st)
{
    if (st && ((Stream *)st)->capturing) return lt_refuse("cublasLtMatmul: capture is not emulated by the stub");
    const LtDesc *d = (const LtDesc *)dsc;
    const LtLayout *a = (const LtLayout *)la, *b = (const LtLayout *)lb, *c = (const LtLayout *)lc, *o = (const LtLayout *)ld;
    const char *bad = lt_check(d, a, b, c, o);
    if (bad) return lt_refuse(bad);
    if (!algo || memcmp(algo->data, &LT_MAGIC, 4)) return lt_refuse("cublasLtMatmul: algorithm not from the heuristic");
    if (!ws || !in_alloc(ws, wsn)) return lt_refuse("cublasLtMatmul: workspace outside a device allocation");
    int m = (int)o->rows, n = (int)o->cols, k = (int)(d->ta == CUBLAS_OP_N ? a->cols : a->rows);
    size_t es = o->t == CUDA_R_32F ? 4 : 2, ea = a->t == CUDA_R_32F ? 4 : 2;
    size_t span_d = ((size_t)(n - 1) * (size_t)o->ld + (size_t)m) * es;
    if (!in_alloc(A, ((size_t)(a->cols - 1) * (size_t)a->ld + a->rows) * ea) ||
        !in_alloc(B, ((size_t)(b->cols - 1) * (size_t)b->ld + b->rows) * ea) || !in_alloc(C, span_d) || !in_alloc(D, span_d))
        return lt_refuse("cublasLtMatmul: a matrix outside a device allocation");
    if (d->bias && !in_alloc(d->bias, (size_t)m * es)) return lt_refuse("cublasLtMatmul: bias outside a device allocation");
    float al = *(const float *)alpha, be = *(const float *)beta;
    S.lt_matmul++;
    bool tf32 = d->comp == CUBLAS_COMPUTE_32F_FAST_TF32;
    if (a->t == CUDA_R_32F) (tf32 ? S.lt_fp32_tf32 : S.lt_fp32_exact)++;
    auto rd = [&](const void *p, long i, cudaDataType_t t) { float v = lt_ld(p, i, t); return tf32 ? zr_f32_round_tf32(v) : v; };
    std::vector<float> x((size_t)m * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int p = 0; p < k; p++)
                acc += rd(A, d->ta == CUBLAS_OP_N ? i + (long)p * a->ld : p + (long)i * a->ld, a->t) *
                       rd(B, d->tb == CUBLAS_OP_N ? p + (long)j * b->ld : j + (long)p * b->ld, b->t);
            x[(size_t)j * m + i] = al * acc + (be != 0 ? be * lt_ld(C, i + (long)j * c->ld, c->t) : 0.0f);
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float v = x[(size_t)j * m + i];
            if (d->epi == CUBLASLT_EPILOGUE_BIAS) v += lt_ld(d->bias, i, o->t);
            if (d->epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                v += lt_ld(d->bias, i, o->t);
                lt_st(d->aux, i + (long)j * d->auxld, o->t, v);
                v *= lt_sig(v);
            }
            if (d->epi == CUBLASLT_EPILOGUE_DGELU) {
                float t = lt_ld(d->aux, i + (long)j * d->auxld, o->t), s = lt_sig(t);
                v *= s + 2.0f * t * s * (1.0f - s) * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * t * t);
            }
            lt_st(D, i + (long)j * o->ld, o->t, v);
        }
    if (d->epi == CUBLASLT_EPILOGUE_BGRADA)
        for (int i = 0; i < m; i++) {
            float sum = 0;
            for (int p = 0; p < k; p++) sum += lt_ld(A, d->ta == CUBLAS_OP_N ? i + (long)p * a->ld : p + (long)i * a->ld, a->t);
            lt_st(d->bias, i, o->t, sum);
        }
    return CUBLAS_STATUS_SUCCESS;
}
}
