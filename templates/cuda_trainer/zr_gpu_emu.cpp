/*
** zr_gpu_emu.cpp — the GPU stand-in: runtime/zr_gpu.h implemented on the CPU, so that the CUDA
** trainer's orchestration runs (and is tested) on machines without a GPU.
**
** - Streams are FIFO queues of closures. Nothing runs when it is enqueued: queues are drained only
**   when the host blocks (event/stream sync), by a scheduler that picks among the streams whose
**   head can run with a fixed pseudo-random sequence (ZR_GPU_EMU_SEED). So a dependency the
**   trainer forgot to state as an event shows up as a wrong result or a deadlock report instead of
**   being hidden by program order; the sequence is the same on every rank, so collectives match.
** - Events are sequence marks: record enqueues "done = n", wait enqueues "until done >= n".
** - Kernels: the emitted kernel sources (cuda/kernels/) compiled here under zr_simt.h, found by
**   name; their argument types come from the kernel's own signature. They are compiled with fp32
**   storage (ZK_IO 0) whatever the plan's dtype: the trainer computes in fp32 as the host trainer
**   does and meets 16-bit data only through convert.cu (docs/CUDA_TRAINER.md, 16-bit plans).
** - gemm: cblas_sgemm row-major. Collectives: libzrt's MPI collectives on a communicator of their
**   own (as NCCL has its own), blocking inside the queued operation.
** - ZR_GPU_EMU_GUARD=1: device memory is PROT_NONE except while a queued operation runs, so host
**   code that dereferences a device address crashes here as it would on a GPU.
*/
/* GCC contracts a*b+c into an FMA in C++ even with -std=c++17 when the target has FMA
** (-march=native): the __f*_rn intrinsics must each round on their own, as on the GPU (adamw.cu's
** bits equal zr_adam.c's only then). */
#pragma GCC optimize("fp-contract=off")
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "kernels/zk_shapes.h"
#undef ZK_IO
#define ZK_IO 0
#include "kernels/adamw.cu"
#include "kernels/attention.cu"
#include "kernels/convert.cu"
#include "kernels/crossentropy.cu"
#include "kernels/encoder.cu"
#include "kernels/gelu.cu"
#include "kernels/gradnorm.cu"
#include "kernels/layernorm.cu"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zr_gpu.h"

/* ---------------------------------------------------------------------- kernel table */
/* A launch captures its arguments at the call, by value and with the kernel's own parameter types
** (as cuLaunchKernel copies them), and returns the closure that runs the grid later. */
typedef std::function<int()> (*KCapture)(dim3 g, dim3 b, void **args);

template <typename... A, size_t... I>
static std::function<int()> capture_k(void (*k)(A...), dim3 g, dim3 b, void **args,
                                      std::index_sequence<I...>)
{
    std::tuple<typename std::decay<A>::type...> v(*(typename std::decay<A>::type *)args[I]...);
    return [=]() { return zr_simt_launch(g, b, k, std::get<I>(v)...); };
}
template <typename... A> static std::function<int()> capture(void (*k)(A...), dim3 g, dim3 b, void **args)
{
    return capture_k(k, g, b, args, std::index_sequence_for<A...>{});
}
#define ZE_K(name) {#name, [](dim3 g, dim3 b, void **a) { return capture(name, g, b, a); }}

static const std::map<std::string, KCapture> &kernels()
{
    static const std::map<std::string, KCapture> t = {
        ZE_K(zd_encoder_forward), ZE_K(zd_encoder_backward_wte), ZE_K(zd_encoder_backward_wpe),
        ZE_K(zd_bias_gelu_forward), ZE_K(zd_gelu_backward), ZE_K(zd_bias_backward),
        ZE_K(zd_layernorm_forward), ZE_K(zd_residual_layernorm_forward),
        ZE_K(zd_layernorm_backward_dx), ZE_K(zd_layernorm_backward_dwdb),
        ZE_K(zd_attention_forward), ZE_K(zd_attention_backward_dq), ZE_K(zd_attention_backward_dkv),
        ZE_K(zd_crossentropy_fused), ZE_K(zd_adamw), ZE_K(zd_grad_unscale_norm),
        ZE_K(zd_grad_norm_finish), ZE_K(zd_f32_to_16), ZE_K(zd_16_to_f32), ZE_K(zd_add_16_to_f32),
        ZE_K(zd_add_f32_to_16), ZE_K(zd_add_f32),
    };
    return t;
}

/* ---------------------------------------------------------------------- objects */
struct ZrGpuEvent {
    ZrGpu *g = nullptr;
    uint64_t recorded = 0, done = 0;
};

struct Op {
    std::function<int()> fn;   /* returns 0 or -errno */
    ZrGpuEvent *wait_ev = nullptr;
    uint64_t wait_seq = 0;
};

struct ZrGpuStream {
    ZrGpu *g;
    std::string name;
    std::deque<Op> q;
};

struct Block { void *p; size_t n; };

struct ZrGpu {
    std::vector<ZrGpuStream *> streams;
    std::vector<Block> dev;
    ZrComm *comm = nullptr;
    uint64_t rng = 0x243f6a8885a308d3ull;
    int guard = 0;
    std::string err;
    std::string desc;
    long ops_run = 0;
};

static std::string g_err;

static int fail(ZrGpu *g, int rc, const std::string &m)
{
    if (g) g->err = m; else g_err = m;
    return rc;
}

extern "C" const char *zr_gpu_backend(void) { return "emulated"; }
extern "C" const char *zr_gpu_strerror(const ZrGpu *g) { return g ? g->err.c_str() : g_err.c_str(); }
extern "C" const char *zr_gpu_describe(const ZrGpu *g) { return g->desc.c_str(); }

extern "C" int zr_gpu_open(ZrGpu **out, int local_rank, const ZrGpuBlob *blobs, int n_blobs)
{
    (void)blobs;
    ZrGpu *g = new ZrGpu;
    const char *s = getenv("ZR_GPU_EMU_SEED");
    if (s && *s) g->rng ^= strtoull(s, nullptr, 0) * 0x9e3779b97f4a7c15ull;
    const char *gd = getenv("ZR_GPU_EMU_GUARD");
    g->guard = gd && *gd == '1';
    char buf[256];
    snprintf(buf, sizeof buf, "GPU stand-in (zr_simt.h kernels, OpenBLAS gemm, MPI collectives; "
             "local rank %d; %d embedded blobs unused%s)", local_rank, n_blobs,
             g->guard ? "; device memory guarded" : "");
    g->desc = buf;
    *out = g;
    return 0;
}

/* ---------------------------------------------------------------------- the scheduler */
static void guard(ZrGpu *g, int open)
{
    if (!g->guard) return;
    for (auto &b : g->dev) mprotect(b.p, b.n, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static bool runnable(const ZrGpuStream *s)
{
    if (s->q.empty()) return false;
    const Op &o = s->q.front();
    return !o.wait_ev || o.wait_ev->done >= o.wait_seq;
}

/* Runs queued operations until done() holds. Returns 0, the first operation's error, or
** -EDEADLK when no stream can move (an event waited that nobody will record). */
static int drive(ZrGpu *g, const std::function<bool()> &done)
{
    int rc = 0;
    guard(g, 1);
    while (!done()) {
        std::vector<ZrGpuStream *> ready;
        for (auto *s : g->streams) if (runnable(s)) ready.push_back(s);
        if (ready.empty()) {
            std::string m = "emulated GPU: deadlock; heads waiting:";
            for (auto *s : g->streams) if (!s->q.empty()) m += " " + s->name;
            rc = fail(g, -EDEADLK, m);
            break;
        }
        g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
        ZrGpuStream *s = ready[(g->rng >> 33) % ready.size()];
        /* a stream runs a few operations in a row: like a GPU, one may run far ahead of another */
        int burst = 1 + (int)((g->rng >> 20) % 4);
        while (burst-- > 0 && runnable(s)) {
            Op o = std::move(s->q.front());
            s->q.pop_front();
            g->ops_run++;
            if (o.fn && (rc = o.fn()) < 0) break;
        }
        if (rc < 0) break;
    }
    guard(g, 0);
    return rc;
}

static int push(ZrGpuStream *s, std::function<int()> fn)
{
    Op o;
    o.fn = std::move(fn);
    s->q.push_back(std::move(o));
    return 0;
}

/* ---------------------------------------------------------------------- memory */
extern "C" int zr_gpu_malloc(ZrGpu *g, void **dptr, size_t bytes)
{
    size_t n = (bytes + 4095) & ~(size_t)4095;
    if (!n) n = 4096;
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(g, -ENOMEM, "emulated GPU: out of memory");
    /* fresh device memory is garbage on a GPU: NaN bytes catch reads of unwritten memory */
    memset(p, 0xff, n);
    g->dev.push_back({p, n});
    if (g->guard) mprotect(p, n, PROT_NONE);
    *dptr = p;
    return 0;
}

extern "C" void zr_gpu_free(ZrGpu *g, void *dptr)
{
    for (size_t i = 0; i < g->dev.size(); i++)
        if (g->dev[i].p == dptr) {
            munmap(dptr, g->dev[i].n);
            g->dev.erase(g->dev.begin() + (long)i);
            return;
        }
}

extern "C" int zr_gpu_host_register(ZrGpu *g, void *p, size_t bytes) { (void)g; (void)p; (void)bytes; return 0; }
extern "C" void zr_gpu_host_unregister(ZrGpu *g, void *p) { (void)g; (void)p; }

/* ---------------------------------------------------------------------- streams and events */
extern "C" int zr_gpu_stream_create(ZrGpu *g, ZrGpuStream **out, const char *name)
{
    ZrGpuStream *s = new ZrGpuStream;
    s->g = g;
    s->name = name ? name : "stream";
    g->streams.push_back(s);
    *out = s;
    return 0;
}

extern "C" void zr_gpu_stream_destroy(ZrGpuStream *s)
{
    if (!s) return;
    zr_gpu_stream_sync(s);
    auto &v = s->g->streams;
    for (size_t i = 0; i < v.size(); i++) if (v[i] == s) { v.erase(v.begin() + (long)i); break; }
    delete s;
}

extern "C" int zr_gpu_event_create(ZrGpu *g, ZrGpuEvent **out)
{
    *out = new ZrGpuEvent;
    (*out)->g = g;
    return 0;
}
extern "C" void zr_gpu_event_destroy(ZrGpuEvent *e) { delete e; }

extern "C" int zr_gpu_record(ZrGpuEvent *e, ZrGpuStream *s)
{
    uint64_t n = ++e->recorded;
    return push(s, [e, n]() { if (e->done < n) e->done = n; return 0; });
}

extern "C" int zr_gpu_wait(ZrGpuStream *s, ZrGpuEvent *e)
{
    Op o;
    o.wait_ev = e;
    o.wait_seq = e->recorded;     /* the last record at the time of the call, as CUDA */
    s->q.push_back(std::move(o));
    return 0;
}

/* The host has no stream: event_sync drains until e is done, whatever else that runs. */
extern "C" int zr_gpu_event_sync(ZrGpuEvent *e)
{
    uint64_t n = e->recorded;
    return drive(e->g, [e, n]() { return e->done >= n; });
}

extern "C" int zr_gpu_stream_sync(ZrGpuStream *s)
{
    return drive(s->g, [s]() { return s->q.empty(); });
}

extern "C" void zr_gpu_close(ZrGpu *g)
{
    if (!g) return;
    while (!g->streams.empty()) zr_gpu_stream_destroy(g->streams.back());
    while (!g->dev.empty()) zr_gpu_free(g, g->dev.back().p);
    if (g->comm) zr_comm_destroy(g->comm);
    if (getenv("ZR_GPU_EMU_VERBOSE")) fprintf(stderr, "emulated GPU: %ld operations run\n", g->ops_run);
    delete g;
}

/* ---------------------------------------------------------------------- work */
extern "C" int zr_gpu_copy(ZrGpuStream *s, ZrGpuCopy kind, void *dst, const void *src, size_t bytes)
{
    (void)kind;
    return push(s, [=]() { memmove(dst, src, bytes); return 0; });
}

extern "C" int zr_gpu_memset(ZrGpuStream *s, void *dptr, int byte, size_t bytes)
{
    return push(s, [=]() { memset(dptr, byte, bytes); return 0; });
}

extern "C" int zr_gpu_launch(ZrGpuStream *s, const char *kernel, const unsigned grid[3],
                             const unsigned block[3], unsigned shmem, void **args)
{
    (void)shmem;
    auto it = kernels().find(kernel);
    if (it == kernels().end()) return fail(s->g, -ENOENT, std::string("no kernel ") + kernel);
    dim3 gd = {grid[0], grid[1], grid[2]}, bd = {block[0], block[1], block[2]};
    std::function<int()> run = it->second(gd, bd, args);
    std::string name = kernel;
    ZrGpu *g = s->g;
    return push(s, [=]() {
        int rc = run();
        return rc ? fail(g, -EIO, "kernel " + name + " failed under emulation") : 0;
    });
}

extern "C" int zr_gpu_sgemm(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                            int ldc)
{
    return push(s, [=]() {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return 0;
    });
}

extern "C" int zr_gpu_coll_init(ZrGpu *g, ZrComm *comm, ZrGpuStream *s)
{
    (void)comm; (void)s;
    if (g->comm) return 0;
    int rc = zr_comm_create(&g->comm);
    return rc < 0 ? fail(g, rc, "emulated GPU: communicator") : 0;
}

extern "C" int zr_gpu_coll(ZrGpuStream *s, ZrCollOp op, const void *send, void *recv, int64_t count,
                           ZrDtype dt)
{
    ZrGpu *g = s->g;
    if (!g->comm) return fail(g, -EINVAL, "zr_gpu_coll before zr_gpu_coll_init");
    return push(s, [=]() {
        switch (op) {
        case ZR_COLL_ALL_GATHER: return zr_all_gather(g->comm, send, recv, count, dt, nullptr);
        case ZR_COLL_REDUCE_SCATTER: return zr_reduce_scatter(g->comm, send, recv, count, dt, nullptr);
        case ZR_COLL_ALL_REDUCE: return zr_all_reduce(g->comm, send, recv, count, dt, nullptr);
        default: return fail(g, -EINVAL, "emulated GPU: collective not supported");
        }
    });
}
