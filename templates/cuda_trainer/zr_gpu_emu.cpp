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
**   name; their argument types come from the kernel's own signature. They are compiled with the
**   plan's activation storage (ZK_IO of zk_shapes.h, gen's decision: bf16 plans 1, fp16 plans 2,
**   fp32 plans 0), as the NVRTC cubins are, attention_tc.cu included (its WMMA under zk_wmma.cuh's
**   emulated fragments).
** - gemm: cblas_sgemm row-major; gemm_ex (16-bit operands) widens them exactly, sums in fp32 and
**   rounds a 16-bit result once, as a tensor-core GEMM with fp32 compute is specified; after
**   zr_gpu_set_tf32(g, 1) fp32 operands are rounded to TF32 first (zr_gpu_emu_blas.h). Collectives: libzrt's MPI collectives on a communicator of their
**   own (as NCCL has its own), blocking inside the queued operation. A collective group
**   (zr_gpu_group_begin/end) queues nothing until its end, then its members as one operation.
** - Graphs: a capturing stream records its operations (closure and footprint) instead of queuing
**   them; a graph launch enqueues copies of them, so replays run and are race-checked as direct
**   work. What a CUDA capture cannot hold is refused (runtime/zr_gpu.h lists it).
** - ZR_GPU_EMU_GUARD=1: device memory is PROT_NONE except while a queued operation runs, so host
**   code that dereferences a device address crashes here as it would on a GPU.
** - Races (on unless ZR_GPU_EMU_RACE=0; the checker is zr_gpu_emu_race.h), checked when an operation
**   is enqueued, so the verdict does not depend on the scheduler's interleaving: every operation
**   declares the byte ranges it reads and writes (copies, fills, gemms and collectives their own;
**   kernels what zr_gpu_footprint declared), and ordering flows only through vector clocks that
**   record/wait and the host's event/stream syncs carry. An access that conflicts with another stream's access that no chain of
**   record/wait/sync orders before it fails the enqueue with -EFAULT and a message naming both
**   operations. Async copies whose host side is not registered (zr_gpu_host_register: pinned) are
**   counted, and fail the same way with ZR_GPU_EMU_PAGEABLE=1.
*/
/* GCC contracts a*b+c into an FMA in C++ even with -std=c++17 when the target has FMA
** (-march=native): the __f*_rn intrinsics must each round on their own, as on the GPU (adamw.cu's
** bits equal zr_adam.c's only then). */
#pragma GCC optimize("fp-contract=off")
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#ifndef ZK_C                  /* a test may set the shapes itself, as zk_common.cuh allows */
#include "kernels/zk_shapes.h"
#endif
#include "kernels/adamw.cu"
#include "kernels/attention.cu"
#include "kernels/attention_tc.cu"
#include "kernels/convert.cu"
#include "kernels/crossentropy.cu"
#include "kernels/encoder.cu"
#include "kernels/gelu.cu"
#include "kernels/layernorm.cu"
#include "kernels/sumsq.cu"
#include "kernels/rmsnorm.cu"           /* llama's: empty modules without ZK_NKV */
#include "kernels/rope.cu"
#include "kernels/swiglu.cu"
#include "kernels/attention_gqa.cu"
#include "kernels/attention_gqa_tc.cu"
#include "kernels/token_embed.cu"

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
#include "zr_half.h"
#include "zr_gpu_emu_race.h"   /* defines: Clock, Fp, Shadow, join, check_access */

/* gen/cuda_dec.c repeats attention_tc.cu's tile arithmetic to decide ZK_ATT_TC and the launches'
** shared memory; a generated trainer's build proves the two agree. */
#ifdef ZK_ATT_TC
static_assert(!ZK_ATT_TC || ZK_ATC_ON, "gen chose attention_tc for a head size it does not serve");
#if ZK_ATC_ON
static_assert(ZK_ATT_TC_FWD_SMEM == ZK_ATC_FWD_SMEM && ZK_ATT_TC_DQ_SMEM == ZK_ATC_DQ_SMEM &&
              ZK_ATT_TC_DKV_SMEM == ZK_ATC_DKV_SMEM, "gen's attention_tc shared memory differs from the kernel's");
#endif
#endif

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
        ZE_K(zd_bias_gelu_forward), ZE_K(zd_gelu_backward), ZE_K(zd_bias_backward_part), ZE_K(zd_bias_backward_sum),
        ZE_K(zd_layernorm_forward), ZE_K(zd_residual_layernorm_forward),
        ZE_K(zd_layernorm_backward_dx), ZE_K(zd_layernorm_backward_dwdb_part),
        ZE_K(zd_layernorm_backward_dwdb_sum),
        ZE_K(zd_attention_forward), ZE_K(zd_attention_backward_dq), ZE_K(zd_attention_backward_dkv),
        ZE_K(zd_crossentropy_fused), ZE_K(zd_adamw), ZE_K(zd_f32_to_16), ZE_K(zd_16_to_f32), ZE_K(zd_add_16_to_f32),
        ZE_K(zd_add_f32_to_16), ZE_K(zd_add_f32),
        ZE_K(zd_sumsq_partial), ZE_K(zd_sumsq_finish), ZE_K(zd_sumsq_lanes),
#if ZK_ATC_ON           /* the tensor-core attention exists for the head sizes it serves */
        ZE_K(zd_attention_tc_forward), ZE_K(zd_attention_tc_backward_dq), ZE_K(zd_attention_tc_backward_dkv),
#endif
#ifdef ZK_NKV           /* rotary grouped-query archs (llama) */
        ZE_K(zd_token_embed_forward), ZE_K(zd_rmsnorm_forward), ZE_K(zd_rmsnorm_backward_dx), ZE_K(zd_rmsnorm_backward_dw_part),
        ZE_K(zd_rmsnorm_backward_dw_sum), ZE_K(zd_rope_tables), ZE_K(zd_rope), ZE_K(zd_swiglu_forward),
        ZE_K(zd_swiglu_backward), ZE_K(zd_attention_gqa_forward), ZE_K(zd_attention_gqa_backward_dq),
        ZE_K(zd_attention_gqa_backward_dkv),
#if ZK_ATC_FITS
        ZE_K(zd_attention_gqa_tc_forward), ZE_K(zd_attention_gqa_tc_backward_dq),
        ZE_K(zd_attention_gqa_tc_backward_dkv),
#endif
#endif
    };
    return t;
}

/* ---------------------------------------------------------------------- objects */
struct ZrGpuEvent {
    ZrGpu *g = nullptr;
    uint64_t recorded = 0, done = 0;
    Clock vc;                   /* the recording stream's clock at the last record */
};

struct Op {
    std::function<int()> fn;   /* returns 0 or -errno */
    ZrGpuEvent *wait_ev = nullptr;
    uint64_t wait_seq = 0;
};

/* A captured graph: the operations a capturing stream was given, each with its footprint, which a
** launch enqueues again (copies of the closures), so the race checker sees every replay. */
struct GraphOp { std::function<int()> fn; std::string what; std::vector<Fp> fp; };
struct ZrGpuGraph {
    ZrGpu *g = nullptr;
    std::string stream;         /* where it was captured */
    std::vector<GraphOp> ops;
    ZrGpuBytes moved = {0, 0, 0, 0};   /* per link, added at each launch */
    std::string bad;            /* the first call refused during the capture */
};


struct ZrGpuStream {
    ZrGpu *g;
    std::string name;
    std::deque<Op> q;
    int id = 0;                 /* index in the race checker's clocks */
    uint64_t n = 0;             /* operations enqueued */
    Clock vc;
    std::vector<Fp> declared;   /* zr_gpu_footprint's, for the next operation */
    ZrGpuGraph *cap = nullptr;  /* the graph being captured (zr_gpu_capture_begin) */
};

struct Block { void *p; size_t n; };

struct ZrGpu {
    std::vector<ZrGpuStream *> streams;
    std::vector<ZrGpuEvent *> dead_events;   /* destroyed, freed at close (queued waits may name them) */
    std::vector<Block> dev;
    ZrComm *comm = nullptr;
    uint64_t rng = 0x243f6a8885a308d3ull;
    int guard = 0;
    std::string err;
    std::string desc;
    long ops_run = 0;
    double gemm_flops = 0;      /* 2 M N K of every GEMM run (replays included): ZR_GPU_EMU_VERBOSE */
    int race = 1, pageable_fail = 0, n_ids = 0;
    int tf32 = 0;               /* zr_gpu_set_tf32: fp32 GEMMs round A and B to TF32 (zr_gpu_emu_blas.h) */
    long pageable = 0;          /* async copies touching unregistered host memory */
    Clock host_vc;              /* what the host has waited for */
    Shadow shadow;              /* the race checker's (zr_gpu_emu_race.h) */
    std::vector<Block> registered;
    /* an open collective group (zr_gpu_group_begin): its members, queued as one operation at the end */
    int group_depth = 0;
    ZrGpuStream *group_s = nullptr;
    std::vector<std::function<int()>> group_fns;
    std::vector<Fp> group_fp;
    std::string group_what;
    ZrGpuBytes moved = {0, 0, 0, 0};   /* per link, counted at enqueue (zr_gpu_bytes) */
    std::vector<ZrGpuGraph *> graphs;  /* not destroyed yet (close frees them) */
    int sync_debug = 0;
    long graph_launches = 0, graph_ops = 0;
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
    const char *rc = getenv("ZR_GPU_EMU_RACE"), *pg = getenv("ZR_GPU_EMU_PAGEABLE");
    g->race = !(rc && *rc == '0');
    g->pageable_fail = pg && *pg == '1';
    const char *sd = getenv("ZR_SYNC_DEBUG");
    g->sync_debug = sd && *sd && strcmp(sd, "0") != 0;
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

/* One move of the device: a stream picked among the runnable ones runs a few operations in a row
** (like a GPU, one may run far ahead of another). Returns 0, the first operation's error, or 1
** when no stream can move. Memory is unguarded around it by the caller. */
static int step(ZrGpu *g)
{
    int rc = 0;
    std::vector<ZrGpuStream *> ready;
    for (auto *s : g->streams) if (runnable(s)) ready.push_back(s);
    if (ready.empty()) return 1;
    g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
    ZrGpuStream *s = ready[(g->rng >> 33) % ready.size()];
    int burst = 1 + (int)((g->rng >> 20) % 4);
    while (burst-- > 0 && runnable(s)) {
        Op o = std::move(s->q.front());
        s->q.pop_front();
        g->ops_run++;
        if (o.fn && (rc = o.fn()) < 0) break;
    }
    return rc;
}

/* Runs queued operations until done() holds. Returns 0, the first operation's error, or
** -EDEADLK when no stream can move (an event waited that nobody will record). */
static int drive(ZrGpu *g, const std::function<bool()> &done)
{
    int rc = 0;
    guard(g, 1);
    while (!done()) {
        if ((rc = step(g)) == 1) {
            std::string m = "emulated GPU: deadlock; heads waiting:";
            for (auto *s : g->streams) if (!s->q.empty()) m += " " + s->name;
            rc = fail(g, -EDEADLK, m);
        }
        if (rc < 0) break;
    }
    guard(g, 0);
    return rc;
}

static bool registered(const ZrGpu *g, const void *p, size_t n)
{
    for (const Block &b : g->dev)
        if ((const char *)p >= (const char *)b.p && (const char *)p + n <= (const char *)b.p + b.n) return true;
    for (const Block &b : g->registered)
        if ((const char *)p >= (const char *)b.p && (const char *)p + n <= (const char *)b.p + b.n) return true;
    return false;
}

/* Enqueues fn as operation `what` with its footprint (plus what zr_gpu_footprint declared): the
** stream's clock takes in what the host has waited for, then every access is checked. */
static int push(ZrGpuStream *s, std::function<int()> fn, const std::string &what = "",
                std::vector<Fp> fp = {})
{
    ZrGpu *g = s->g;
    fp.insert(fp.end(), s->declared.begin(), s->declared.end());
    s->declared.clear();
    if (s->cap) {                        /* recorded; checked when a launch enqueues it */
        s->cap->ops.push_back(GraphOp{std::move(fn), what, std::move(fp)});
        return 0;
    }
    join(s->vc, g->host_vc);
    s->n++;
    if (s->vc.size() <= (size_t)s->id) s->vc.resize((size_t)s->id + 1, 0);
    s->vc[(size_t)s->id] = s->n;
    if (g->race && !fp.empty()) {
        std::string name = what + " (operation " + std::to_string(s->n) + " on stream " + s->name + ")";
        for (const Fp &f : fp) {
            std::string m = check_access(g->shadow, s->id, s->n, s->vc, name, f);
            if (!m.empty()) {
                fprintf(stderr, "%s\n", m.c_str());
                return fail(g, -EFAULT, m);
            }
        }
    }
    Op o;
    o.fn = std::move(fn);
    s->q.push_back(std::move(o));
    return 0;
}

static Fp rd(const void *p, size_t n) { return Fp{(uintptr_t)p, (uintptr_t)p + n, 0}; }
static Fp wr(const void *p, size_t n) { return Fp{(uintptr_t)p, (uintptr_t)p + n, 1}; }

extern "C" int zr_gpu_footprint(ZrGpuStream *s, const void *p, size_t bytes, int write)
{
    s->declared.push_back(write ? wr(p, bytes) : rd(p, bytes));
    return 0;
}

/* First-contact diagnostics of the driver build (zr_gpu.h). The stand-in runs each operation when
** its stream is drained, so a fault already names its operation, and its waits never block on a
** device: both are accepted and have nothing to do. */
extern "C" void zr_gpu_set_sync_debug(ZrGpu *g, int on) { g->sync_debug = on; }
extern "C" int zr_gpu_sync_debug(const ZrGpu *g) { return g->sync_debug; }
extern "C" void zr_gpu_set_wait_hook(ZrGpu *g, ZrGpuWaitHook hook, void *arg)
{
    (void)g; (void)hook; (void)arg;
}

/* ---------------------------------------------------------------------- capture rules */
/* What a CUDA capture cannot hold is refused here too (runtime/zr_gpu.h, graphs), so the stand-in is
** at least as strict as the driver. `s` is the capturing stream the call concerns, or NULL for a
** call that no capture of this thread may overlap (host waits, allocation); the captures concerned
** are invalidated, as CUDA invalidates them. */
static ZrGpuStream *capturing(const ZrGpu *g)
{
    for (auto *t : g->streams) if (t->cap) return t;
    return nullptr;
}

static int refuse_in_capture(ZrGpu *g, ZrGpuStream *s, const std::string &call)
{
    ZrGpuStream *c = s ? s : capturing(g);
    std::string m = "emulated GPU: " + call + " while stream " + c->name + " is capturing a graph (" +
                    (s ? "not allowed on a capturing stream" : "not allowed during a capture") + ")";
    for (auto *t : g->streams)
        if (t->cap && (!s || t == s) && t->cap->bad.empty()) t->cap->bad = m;
    return fail(g, -EINVAL, m);
}

/* ---------------------------------------------------------------------- memory */
extern "C" int zr_gpu_malloc(ZrGpu *g, void **dptr, size_t bytes)
{
    if (capturing(g)) return refuse_in_capture(g, nullptr, "zr_gpu_malloc");
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

/* The emulated device's size: ZR_EMU_DEVICE_MEMORY bytes (default 80 GiB), of which what zr_gpu_malloc
** holds is not free. */
extern "C" int zr_gpu_mem_info(ZrGpu *g, size_t *free_b, size_t *total_b)
{
    const char *e = getenv("ZR_EMU_DEVICE_MEMORY");
    size_t total = e && *e ? (size_t)strtoull(e, nullptr, 10) : (size_t)80 << 30, used = 0;
    for (const auto &d : g->dev) used += d.n;
    *total_b = total;
    *free_b = used < total ? total - used : 0;
    return 0;
}

extern "C" void zr_gpu_free(ZrGpu *g, void *dptr)
{
    if (capturing(g)) {
        refuse_in_capture(g, nullptr, "zr_gpu_free");
        fprintf(stderr, "%s\n", g->err.c_str());
        return;
    }
    for (size_t i = 0; i < g->dev.size(); i++)
        if (g->dev[i].p == dptr) {
            munmap(dptr, g->dev[i].n);
            g->dev.erase(g->dev.begin() + (long)i);
            return;
        }
}

extern "C" int zr_gpu_host_register(ZrGpu *g, void *p, size_t bytes)
{
    if (capturing(g)) return refuse_in_capture(g, nullptr, "zr_gpu_host_register");
    g->registered.push_back({p, bytes});
    return 0;
}
extern "C" void zr_gpu_host_unregister(ZrGpu *g, void *p)
{
    for (size_t i = 0; i < g->registered.size(); i++)
        if (g->registered[i].p == p) { g->registered.erase(g->registered.begin() + (long)i); return; }
}

/* ---------------------------------------------------------------------- streams and events */
extern "C" int zr_gpu_stream_create(ZrGpu *g, ZrGpuStream **out, const char *name)
{
    ZrGpuStream *s = new ZrGpuStream;
    s->g = g;
    s->name = name ? name : "stream";
    s->id = g->n_ids++;
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
/* As cudaEventDestroy: a wait already queued on e still completes, so e itself lives until close. */
extern "C" void zr_gpu_event_destroy(ZrGpuEvent *e)
{
    if (e) e->g->dead_events.push_back(e);
}

extern "C" int zr_gpu_record(ZrGpuEvent *e, ZrGpuStream *s)
{
    if (s->cap) return refuse_in_capture(s->g, s, "zr_gpu_record (an event record)");
    uint64_t n = ++e->recorded;
    int rc = push(s, [e, n]() { if (e->done < n) e->done = n; return 0; });
    e->vc = s->vc;
    return rc;
}

extern "C" int zr_gpu_wait(ZrGpuStream *s, ZrGpuEvent *e)
{
    if (s->cap) return refuse_in_capture(s->g, s, "zr_gpu_wait (an event wait)");
    Op o;
    o.wait_ev = e;
    o.wait_seq = e->recorded;     /* the last record at the time of the call, as CUDA */
    s->q.push_back(std::move(o));
    join(s->vc, e->vc);
    return 0;
}

/* Nothing of an open group is enqueued yet: a host wait now would not include it. */
static int group_open(ZrGpu *g)
{
    return g->group_depth ? fail(g, -EINVAL, "emulated GPU: the host waits inside an open collective "
                                 "group (its members launch only at zr_gpu_group_end)") : 0;
}

/* The host has no stream: event_sync drains until e is done, whatever else that runs. */
extern "C" int zr_gpu_event_sync(ZrGpuEvent *e)
{
    if (int rc = group_open(e->g)) return rc;
    if (capturing(e->g)) return refuse_in_capture(e->g, nullptr, "zr_gpu_event_sync (a host wait)");
    uint64_t n = e->recorded;
    join(e->g->host_vc, e->vc);
    return drive(e->g, [e, n]() { return e->done >= n; });
}

/* A host poll: the stand-in's device runs only while the host waits or polls, so a poll that finds
** e not done moves the device once (step) and looks again. Done carries a sync's ordering: what the
** host does after it is ordered after e on a GPU too. */
extern "C" int zr_gpu_event_query(ZrGpuEvent *e)
{
    if (int rc = group_open(e->g)) return rc;
    if (capturing(e->g)) return refuse_in_capture(e->g, nullptr, "zr_gpu_event_query (a host poll)");
    uint64_t n = e->recorded;
    if (e->done < n) {
        guard(e->g, 1);
        int rc = step(e->g);
        guard(e->g, 0);
        if (rc < 0) return rc;
    }
    if (e->done < n) return 0;
    join(e->g->host_vc, e->vc);
    return 1;
}

extern "C" int zr_gpu_stream_sync(ZrGpuStream *s)
{
    if (int rc = group_open(s->g)) return rc;
    if (capturing(s->g)) return refuse_in_capture(s->g, nullptr, "zr_gpu_stream_sync (a host wait)");
    join(s->g->host_vc, s->vc);
    return drive(s->g, [s]() { return s->q.empty(); });
}

/* Weak: the stand-in's own tests link it with one-rank stubs of libzrt's collectives that have no
** zr_comm_rank, and a strong reference would pull in the MPI ones beside those stubs. */
extern "C" int zr_comm_rank(const ZrComm *c) __attribute__((weak));

extern "C" void zr_gpu_close(ZrGpu *g)
{
    if (!g) return;
    for (auto *s : g->streams) { delete s->cap; s->cap = nullptr; }   /* captures never ended */
    while (!g->streams.empty()) zr_gpu_stream_destroy(g->streams.back());
    while (!g->graphs.empty()) zr_gpu_graph_destroy(g->graphs.back());
    for (auto *e : g->dead_events) delete e;
    while (!g->dev.empty()) zr_gpu_free(g, g->dev.back().p);
    int rank = g->comm && zr_comm_rank ? zr_comm_rank(g->comm) : -1;   /* -1: no collectives */
    if (g->comm) zr_comm_destroy(g->comm);
    if (getenv("ZR_GPU_EMU_VERBOSE"))
        fprintf(stderr, "emulated GPU (rank %d): %ld operations run, %ld async copies with pageable host memory; "
                "bytes moved: H2D %lld, D2H %lld, D2D %lld, collectives received %lld\n", rank, g->ops_run,
                g->pageable, (long long)g->moved.h2d, (long long)g->moved.d2h, (long long)g->moved.d2d,
                (long long)g->moved.net);
    if (getenv("ZR_GPU_EMU_VERBOSE"))
        fprintf(stderr, "emulated GPU (rank %d): %ld graph launches (%ld operations replayed), GEMM FLOPs %.0f\n",
                rank, g->graph_launches, g->graph_ops, g->gemm_flops);
    delete g;
}

/* ---------------------------------------------------------------------- work */
extern "C" int zr_gpu_copy(ZrGpuStream *s, ZrGpuCopy kind, void *dst, const void *src, size_t bytes)
{
    static const char *const names[] = {"copy H2D", "copy D2H", "copy D2D"};
    std::string what = std::string(names[kind]) + " of " + std::to_string(bytes) + " bytes";
    const void *host = kind == ZR_GPU_H2D ? src : kind == ZR_GPU_D2H ? dst : nullptr;
    if (s->cap && host && bytes && !registered(s->g, host, bytes))
        return refuse_in_capture(s->g, s, what + " with pageable host memory (not registered with zr_gpu_host_register)");
    if (host && bytes && !registered(s->g, host, bytes)) {
        s->g->pageable++;
        if (s->g->pageable_fail) {
            std::string m = "emulated GPU: " + what + " (operation " + std::to_string(s->n + 1) +
                            " on stream " + s->name + ") " + (kind == ZR_GPU_H2D ? "reads" : "writes") +
                            " pageable host memory (not registered with zr_gpu_host_register)";
            fprintf(stderr, "%s\n", m.c_str());
            return fail(s->g, -EFAULT, m);
        }
    }
    int rc = push(s, [=]() { memmove(dst, src, bytes); return 0; }, what, {rd(src, bytes), wr(dst, bytes)});
    ZrGpuBytes *m = s->cap ? &s->cap->moved : &s->g->moved;
    if (!rc) *(kind == ZR_GPU_H2D ? &m->h2d : kind == ZR_GPU_D2H ? &m->d2h : &m->d2d) += (int64_t)bytes;
    return rc;
}

extern "C" void zr_gpu_bytes(const ZrGpu *g, ZrGpuBytes *out) { *out = g->moved; }

extern "C" int zr_gpu_memset(ZrGpuStream *s, void *dptr, int byte, size_t bytes)
{
    return push(s, [=]() { memset(dptr, byte, bytes); return 0; },
                "memset of " + std::to_string(bytes) + " bytes", {wr(dptr, bytes)});
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
    }, "kernel " + name);
}

/* ---------------------------------------------------------------------- graphs (additive) */
extern "C" int zr_gpu_capture_begin(ZrGpuStream *s)
{
    ZrGpu *g = s->g;
    if (s->cap) return refuse_in_capture(g, s, "zr_gpu_capture_begin (a nested capture)");
    if (g->sync_debug)
        return fail(g, -EINVAL, "emulated GPU: zr_gpu_capture_begin under sync-debug (it runs uncaptured, "
                    "to name a faulting kernel)");
    if (g->group_depth) return fail(g, -EINVAL, "emulated GPU: zr_gpu_capture_begin inside an open collective group");
    s->cap = new ZrGpuGraph;
    s->cap->g = g;
    s->cap->stream = s->name;
    return 0;
}

extern "C" int zr_gpu_capture_end(ZrGpuStream *s, ZrGpuGraph **out)
{
    ZrGpu *g = s->g;
    *out = nullptr;
    if (!s->cap) return fail(g, -EINVAL, "emulated GPU: zr_gpu_capture_end on stream " + s->name + ", which is not capturing");
    ZrGpuGraph *gr = s->cap;
    s->cap = nullptr;
    s->declared.clear();                 /* footprints with no operation after them */
    if (!gr->bad.empty()) {
        std::string m = "emulated GPU: the capture on stream " + s->name + " was invalidated: " + gr->bad;
        delete gr;
        return fail(g, -EINVAL, m);
    }
    g->graphs.push_back(gr);
    *out = gr;
    return 0;
}

/* One submission on a GPU; here the recorded operations are enqueued in order on s, each checked by
** the race checker with its footprint as when it was first enqueued. */
extern "C" int zr_gpu_graph_launch(ZrGpuStream *s, ZrGpuGraph *gr)
{
    ZrGpu *g = s->g;
    if (s->cap) return refuse_in_capture(g, s, "zr_gpu_graph_launch (a graph inside a capture)");
    if (!gr || gr->g != g) return fail(g, -EINVAL, "emulated GPU: zr_gpu_graph_launch of a graph of another GPU");
    for (const GraphOp &o : gr->ops)
        if (int rc = push(s, o.fn, o.what + " (graph captured on " + gr->stream + ")", o.fp)) return rc;
    g->moved.h2d += gr->moved.h2d;
    g->moved.d2h += gr->moved.d2h;
    g->moved.d2d += gr->moved.d2d;
    g->moved.net += gr->moved.net;
    g->graph_launches++;
    g->graph_ops += (long)gr->ops.size();
    return 0;
}

/* Queued operations hold copies of the closures: a graph may be destroyed while its launch runs. */
extern "C" void zr_gpu_graph_destroy(ZrGpuGraph *gr)
{
    if (!gr) return;
    auto &v = gr->g->graphs;
    for (size_t i = 0; i < v.size(); i++) if (v[i] == gr) { v.erase(v.begin() + (long)i); break; }
    delete gr;
}

#include "zr_gpu_emu_blas.h"     /* zr_gpu_sgemm, zr_gpu_gemm_ex, zr_gpu_gemm_lt */
#include "zr_gpu_emu_coll.h"     /* zr_gpu_coll_init, zr_gpu_coll, zr_gpu_group_begin, zr_gpu_group_end */
