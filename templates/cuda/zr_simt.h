/*
** zr_simt.h — runs CUDA C kernel source on the CPU, for verification without a GPU.
**
** A kernel written for the GPU is compiled by the host C compiler with this header first. Each block
** runs alone; its threads are fibers (ucontext) on one OS thread, scheduled cooperatively:
**   - __syncthreads() is a block barrier: the fiber yields until every live thread of the block arrives;
**   - warp shuffles (__shfl_*_sync) and __syncwarp() are warp barriers with an exchange slot per lane;
**   - atomics are plain read-modify-writes (fibers never interleave inside one);
**   - __shared__ is `static`: one copy, shared by the block's fibers (blocks run one after another).
** So the emulation is exact for data-race-free kernels and deterministic; it is slow (a context switch
** per barrier), which is fine for tests on small shapes. What it cannot show: timing, bank conflicts,
** memory-model bugs that need true concurrency, and warp-divergent shuffles (a shuffle whose lanes
** do not all arrive is reported as a deadlock, which on a GPU is undefined behaviour too).
**
** CUDA C is a C++ dialect, so the host build is C++ (g++ -std=c++17): the kernel source compiles as is.
** Launch: ZR_SIMT_LAUNCH(kernel, grid, block, shared_bytes, args...) replaces kernel<<<g, b, s>>>(...).
** Exactly one translation unit defines ZR_SIMT_IMPL before including this header.
*/
#ifndef ZR_SIMT_H
#define ZR_SIMT_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

typedef struct { unsigned x, y, z; } uint3;
typedef struct { unsigned x, y, z; } dim3;

/* The running fiber's coordinates; the scheduler rewrites them at every switch. */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
#define warpSize 32

void zr_simt_syncthreads(void);
void zr_simt_syncwarp(void);
float zr_simt_shfl_f(float v, int src_lane, int mode, int width);
int zr_simt_shfl_i(int v, int src_lane, int mode, int width);
/* mode: 0 = from lane src, 1 = xor mask, 2 = down delta, 3 = up delta */
#define __syncthreads() zr_simt_syncthreads()
#define __syncwarp(...) zr_simt_syncwarp()
static inline float zr_simt_shfl(float v, int l, int m, int w) { return zr_simt_shfl_f(v, l, m, w); }
static inline int zr_simt_shfl(int v, int l, int m, int w) { return zr_simt_shfl_i(v, l, m, w); }
static inline unsigned zr_simt_shfl(unsigned v, int l, int m, int w) { return (unsigned)zr_simt_shfl_i((int)v, l, m, w); }
#define ZR_SIMT_SHFL(v, l, mode, w) zr_simt_shfl((v), (l), (mode), (w))
#define __shfl_sync(m, v, l, ...) ZR_SIMT_SHFL(v, l, 0, ZR_SIMT_W(__VA_ARGS__ + 0))
#define __shfl_xor_sync(m, v, l, ...) ZR_SIMT_SHFL(v, l, 1, ZR_SIMT_W(__VA_ARGS__ + 0))
#define __shfl_down_sync(m, v, l, ...) ZR_SIMT_SHFL(v, l, 2, ZR_SIMT_W(__VA_ARGS__ + 0))
#define __shfl_up_sync(m, v, l, ...) ZR_SIMT_SHFL(v, l, 3, ZR_SIMT_W(__VA_ARGS__ + 0))
#define ZR_SIMT_W(w) ((w) ? (w) : 32)

template <typename T> static inline T atomicAdd(T *a, T v) { T o = *a; *a = o + v; return o; }
template <typename T> static inline T atomicMax(T *a, T v) { T o = *a; if (v > o) *a = v; return o; }
template <typename T> static inline T atomicExch(T *a, T v) { T o = *a; *a = v; return o; }
static inline int atomicCAS(int *a, int cmp, int v) { int o = *a; if (o == cmp) *a = v; return o; }

#define __expf expf
#define __logf logf
#define __fdividef(a, b) ((a) / (b))
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
#define __ldg(p) (*(p))
/* Rounded-once arithmetic (never contracted into an FMA on the GPU). GCC contracts a*b+c into an
** FMA in C++ when the target has one (-march=native), even with -std=c++17, so host builds of
** kernels pass -ffp-contract=off; then these are plain IEEE operations. */
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }

/* Runs body(ctx) as every thread of every block; returns 0, or -1 after printing a deadlock report. */
typedef void (*zr_simt_body)(void *ctx);
int zr_simt_run(dim3 grid, dim3 block, zr_simt_body body, void *ctx);
static inline dim3 zr_dim3(unsigned x, unsigned y = 1, unsigned z = 1) { dim3 d = {x, y, z}; return d; }
static inline dim3 zr_simt_dim(dim3 d) { return d; }
static inline dim3 zr_simt_dim(unsigned long long x) { return zr_dim3((unsigned)x); }

template <typename F> static void zr_simt_thunk(void *f) { (*(F *)f)(); }
/* Arguments are taken by value (arrays decay to pointers), as a real launch copies them. */
template <typename K, typename... A> static int zr_simt_launch(dim3 g, dim3 b, K kernel, A... args)
{
    auto fn = [=]() { kernel(args...); };
    return zr_simt_run(g, b, zr_simt_thunk<decltype(fn)>, &fn);
}
/* kernel<<<grid, block, shmem>>>(a, b, c)  ==>  ZR_SIMT_LAUNCH(kernel, grid, block, shmem, a, b, c) */
#define ZR_SIMT_LAUNCH(kernel, grid, block, shmem, ...)                                  \
    ((void)(shmem), zr_simt_launch(zr_simt_dim(grid), zr_simt_dim(block), kernel, __VA_ARGS__))

#ifdef ZR_SIMT_IMPL
#include <ucontext.h>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

enum { RUNNABLE, AT_BLOCK_BAR, AT_WARP_BAR, DONE };
struct Fiber {
    ucontext_t ctx;
    int state;
    unsigned tid;                  /* linear thread index in the block */
    int shfl_i; float shfl_f;      /* value published for a shuffle */
    int warp_gen;                  /* warp barrier generation this fiber waits on */
};

static struct SimtState {
    Fiber *f;
    unsigned n;                    /* threads per block */
    unsigned cur;
    ucontext_t sched;
    zr_simt_body body;
    void *ctx;
    int *warp_arrived, *warp_gen;  /* per warp */
    unsigned block_arrived;
    size_t stack_bytes;
    char *stacks;
} S;

static void set_coords(unsigned tid)
{
    threadIdx.x = tid % blockDim.x;
    threadIdx.y = (tid / blockDim.x) % blockDim.y;
    threadIdx.z = tid / (blockDim.x * blockDim.y);
}

static void fiber_main(void)
{
    S.body(S.ctx);
    S.f[S.cur].state = DONE;
    /* returning switches to uc_link = the scheduler */
}

static void yield_to_sched(void) { swapcontext(&S.f[S.cur].ctx, &S.sched); set_coords(S.cur); }

void zr_simt_syncthreads(void)
{
    S.f[S.cur].state = AT_BLOCK_BAR;
    S.block_arrived++;
    yield_to_sched();
}

static unsigned warp_size_of(unsigned w)
{
    unsigned first = w * 32, last = first + 32 < S.n ? first + 32 : S.n;
    return last - first;
}

/* Warp barrier: the last lane to arrive releases the others. */
static void warp_barrier(void)
{
    unsigned w = S.cur / 32;
    Fiber *me = &S.f[S.cur];
    me->warp_gen = S.warp_gen[w];
    if (++S.warp_arrived[w] == (int)warp_size_of(w)) {
        S.warp_arrived[w] = 0;
        S.warp_gen[w]++;
        for (unsigned i = w * 32; i < w * 32 + warp_size_of(w); i++)
            if (S.f[i].state == AT_WARP_BAR) S.f[i].state = RUNNABLE;
        return;
    }
    me->state = AT_WARP_BAR;
    yield_to_sched();
}

void zr_simt_syncwarp(void) { warp_barrier(); }

static unsigned shfl_src(unsigned lane, int l, int mode, int width)
{
    unsigned base = lane / width * width, r = lane % width, s;
    switch (mode) {
    case 0: s = (unsigned)l % width; break;
    case 1: s = r ^ (unsigned)l; if (s >= (unsigned)width) s = r; break;
    case 2: s = r + (unsigned)l; if (s >= (unsigned)width) s = r; break;
    default: s = r >= (unsigned)l ? r - (unsigned)l : r; break;
    }
    return base + s;
}

float zr_simt_shfl_f(float v, int l, int mode, int width)
{
    unsigned lane = S.cur % 32, w0 = S.cur - lane, src;
    S.f[S.cur].shfl_f = v;
    warp_barrier();                       /* everyone has published */
    src = w0 + shfl_src(lane, l, mode, width);
    v = src < S.n ? S.f[src].shfl_f : v;
    warp_barrier();                       /* everyone has read before slots are reused */
    return v;
}

int zr_simt_shfl_i(int v, int l, int mode, int width)
{
    unsigned lane = S.cur % 32, w0 = S.cur - lane, src;
    S.f[S.cur].shfl_i = v;
    warp_barrier();
    src = w0 + shfl_src(lane, l, mode, width);
    v = src < S.n ? S.f[src].shfl_i : v;
    warp_barrier();
    return v;
}

static int run_block(void)
{
    volatile unsigned live = S.n;   /* survives swapcontext (-Wclobbered) */
    for (unsigned t = 0; t < S.n; t++) {
        Fiber *f = &S.f[t];
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = S.stacks + (size_t)t * S.stack_bytes;
        f->ctx.uc_stack.ss_size = S.stack_bytes;
        f->ctx.uc_link = &S.sched;
        makecontext(&f->ctx, fiber_main, 0);
        f->state = RUNNABLE;
        f->tid = t;
    }
    S.block_arrived = 0;
    memset(S.warp_arrived, 0, sizeof(int) * ((S.n + 31) / 32));
    while (live) {
        volatile int progressed = 0;
        for (unsigned t = 0; t < S.n; t++) {
            if (S.f[t].state != RUNNABLE) continue;
            S.cur = t;
            set_coords(t);
            swapcontext(&S.sched, &S.f[t].ctx);
            progressed = 1;
            if (S.f[t].state == DONE) live--;
        }
        /* All live threads at the block barrier: release them together. */
        if (live && S.block_arrived == live) {
            S.block_arrived = 0;
            for (unsigned t = 0; t < S.n; t++)
                if (S.f[t].state == AT_BLOCK_BAR) S.f[t].state = RUNNABLE;
            continue;
        }
        if (!progressed) {
            fprintf(stderr, "zr_simt: deadlock in block (%u,%u,%u): %u live threads, %u at "
                    "__syncthreads, the rest at a warp barrier (divergent shuffle or __syncthreads "
                    "not reached by every thread)\n", blockIdx.x, blockIdx.y, blockIdx.z, live,
                    S.block_arrived);
            return -1;
        }
    }
    return 0;
}

int zr_simt_run(dim3 grid, dim3 block, zr_simt_body body, void *ctx)
{
    int rc = 0;
    if (grid.y == 0) grid.y = 1;
    if (grid.z == 0) grid.z = 1;
    if (block.y == 0) block.y = 1;
    if (block.z == 0) block.z = 1;
    gridDim = grid;
    blockDim = block;
    S.n = block.x * block.y * block.z;
    S.body = body;
    S.ctx = ctx;
    S.stack_bytes = 64 * 1024;
    S.f = (Fiber *)calloc(S.n, sizeof *S.f);
    S.stacks = (char *)malloc(S.stack_bytes * S.n);
    S.warp_arrived = (int *)calloc((S.n + 31) / 32, sizeof(int));
    S.warp_gen = (int *)calloc((S.n + 31) / 32, sizeof(int));
    if (!S.f || !S.stacks || !S.warp_arrived || !S.warp_gen) { rc = -1; goto out; }
    for (unsigned z = 0; z < grid.z && rc == 0; z++)
        for (unsigned y = 0; y < grid.y && rc == 0; y++)
            for (unsigned x = 0; x < grid.x && rc == 0; x++) {
                blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                rc = run_block();
            }
out:
    free(S.f); free(S.stacks); free(S.warp_arrived); free(S.warp_gen);
    return rc;
}
#endif /* ZR_SIMT_IMPL */
#endif
