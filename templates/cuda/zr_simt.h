/*
** zr_simt.h — runs CUDA C kernel source on the CPU, for verification without a GPU.
**
** A kernel written for the GPU is compiled by the host C compiler with this header first. Each block
** runs alone; its threads are fibers on one OS thread, scheduled cooperatively (on x86-64 a stack
** switch of our own that saves the callee-saved registers; elsewhere, and under ASan, which must
** see the switches, ucontext, whose swapcontext also saves the signal mask with a system call per
** switch: that was 70 % of an emulated training step):
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
**
** Checks, each an error that names the kernel (the launch returns -1 and prints why):
**   - CUDA's launch limits: block x, y <= 1024, z <= 64, x*y*z <= 1024; grid x <= 2^31-1, y, z <=
**     65535, no zero dimension; dynamic shared memory within the opt-in limit of the emulated arch
**     (zr_simt_set_arch, default sm_80: 163 KiB; sm_90: 227 KiB); and `__launch_bounds__(n)`: a block
**     of more than n threads (on a GPU the launch fails, as the kernel was compiled for at most n).
**     The bound is found from the kernel's address: the macro puts each bounded kernel in a section
**     of its own and registers (section start, n) when the program starts.
**   - Shared-memory races, when the kernel source is compiled with -fsanitize=thread (the cuda test
**     rule does; nothing else changes without it). GCC then calls __tsan_readN/__tsan_writeN before
**     every load and store; this header defines them (no TSan runtime is linked): accesses outside
**     the section that holds every __shared__ variable return at once, the others are checked
**     against a shadow record per shared byte. Two different threads of a block touching the same
**     shared byte between two __syncthreads, at least one writing, is a race unless they are lanes
**     of one warp separated by a __syncwarp. Warp shuffles do not order memory: they exchange
**     registers (PTX names bar.sync and bar.warp.sync as the synchronising operations, and with
**     sm_70's independent thread scheduling the lanes of a warp are not in lockstep), so two lanes
**     that meet only in a shuffle are not ordered either. Atomics are not checked (they are not
**     races by definition). The report names the kernel, the block, both threads, which accesses,
**     and the byte's offset from the lowest shared address the launch touched (the CPU's layout of
**     the kernel's __shared__ variables, in declaration order as GCC placed them).
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
/* One section holds every __shared__ variable, so the race checker knows shared addresses. */
#define __shared__ static __attribute__((section("zr_simt_shared")))

/* __launch_bounds__(n, ...) ends the declaration it starts in (`__global__ void` + a dummy name),
** registers n against a section that only this kernel occupies, and restarts the kernel's own
** declaration. The counter keeps sections apart when a file is included several times. */
struct ZrSimtLb { const void *at; unsigned n; const char *expr; ZrSimtLb *next; };
void zr_simt_lb_register(ZrSimtLb *e);
struct ZrSimtLbReg {
    ZrSimtLb e;
    ZrSimtLbReg(const void *at, unsigned n, const char *expr) { e.at = at; e.n = n; e.expr = expr; e.next = 0; zr_simt_lb_register(&e); }
};
#define ZR_SIMT_S1(x) #x
#define ZR_SIMT_S(x) ZR_SIMT_S1(x)
#define ZR_SIMT_LB2(c, l, n, ...)                                                                   \
    zr_simt_lb_sink_##c##_##l();                                                                  \
    extern "C" char __start_zr_simt_lb_##c##_##l[];                                               \
    static ZrSimtLbReg zr_simt_lbreg_##c##_##l(__start_zr_simt_lb_##c##_##l, (unsigned)(n), #n);  \
    __attribute__((section("zr_simt_lb_" ZR_SIMT_S(c) "_" ZR_SIMT_S(l)), noinline)) void
#define ZR_SIMT_LB1(c, l, ...) ZR_SIMT_LB2(c, l, __VA_ARGS__)
#define __launch_bounds__(...) ZR_SIMT_LB1(__COUNTER__, __LINE__, __VA_ARGS__)

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

/* Not seen by the race checker: an atomic is never a race. */
#define ZR_SIMT_NOCHECK __attribute__((no_sanitize_thread))
template <typename T> ZR_SIMT_NOCHECK static inline T atomicAdd(T *a, T v) { T o = *a; *a = o + v; return o; }
template <typename T> ZR_SIMT_NOCHECK static inline T atomicMax(T *a, T v) { T o = *a; if (v > o) *a = v; return o; }
template <typename T> ZR_SIMT_NOCHECK static inline T atomicExch(T *a, T v) { T o = *a; *a = v; return o; }
ZR_SIMT_NOCHECK static inline int atomicCAS(int *a, int cmp, int v) { int o = *a; if (o == cmp) *a = v; return o; }

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

/* Runs body(ctx) as every thread of every block; returns 0, or -1 after printing why (a launch
** limit, a deadlock, a shared-memory race). */
typedef void (*zr_simt_body)(void *ctx);
int zr_simt_run(dim3 grid, dim3 block, zr_simt_body body, void *ctx);
/* The same, for kernel `name` (may be NULL) at address fn (its __launch_bounds__ are looked up),
** with `shmem` bytes of dynamic shared memory. */
int zr_simt_run_k(const char *name, const void *fn, dim3 grid, dim3 block, size_t shmem,
                  zr_simt_body body, void *ctx);
/* The arch whose limits are checked (80, 90, ...); default 80, or ZR_SIMT_ARCH from the environment. */
void zr_simt_set_arch(int sm);
/* The __launch_bounds__ maximum of the kernel at fn, 0 when it has none. */
unsigned zr_simt_launch_bound(const void *fn);
/* Races reported since the program started (tests read it). */
long zr_simt_races(void);
static inline dim3 zr_dim3(unsigned x, unsigned y = 1, unsigned z = 1) { dim3 d = {x, y, z}; return d; }
static inline dim3 zr_simt_dim(dim3 d) { return d; }
static inline dim3 zr_simt_dim(unsigned long long x) { return zr_dim3((unsigned)x); }

template <typename F> static void zr_simt_thunk(void *f) { (*(F *)f)(); }
/* Arguments are taken by value (arrays decay to pointers), as a real launch copies them. */
template <typename K, typename... A>
static int zr_simt_launch_as(const char *name, dim3 g, dim3 b, size_t shmem, K kernel, A... args)
{
    auto fn = [=]() { kernel(args...); };
    return zr_simt_run_k(name, (const void *)(uintptr_t)kernel, g, b, shmem, zr_simt_thunk<decltype(fn)>, &fn);
}
template <typename K, typename... A> static int zr_simt_launch(dim3 g, dim3 b, K kernel, A... args)
{
    return zr_simt_launch_as(NULL, g, b, 0, kernel, args...);
}
/* kernel<<<grid, block, shmem>>>(a, b, c)  ==>  ZR_SIMT_LAUNCH(kernel, grid, block, shmem, a, b, c) */
#define ZR_SIMT_LAUNCH(kernel, grid, block, shmem, ...)                                  \
    zr_simt_launch_as(#kernel, zr_simt_dim(grid), zr_simt_dim(block), (size_t)(shmem), kernel, __VA_ARGS__)

#ifdef ZR_SIMT_IMPL
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define ZR_SIMT_OWN_SWITCH 1
typedef void *ZrSimtCtx;           /* a suspended fiber: its stack pointer */
/* Saves rbp, rbx, r12-r15, MXCSR and the x87 control word on the current stack, stores the stack
** pointer in *save, switches to `to` and restores the same from there (SysV: all else is
** caller-saved, so the compiler has already spilled it around the call). */
extern "C" void zr_simt_switch(ZrSimtCtx *save, ZrSimtCtx to);
__asm__(".text\n"
        ".globl zr_simt_switch\n"
        ".type zr_simt_switch, @function\n"
        "zr_simt_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $16, %rsp\n  stmxcsr 8(%rsp)\n  fnstcw (%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  fldcw (%rsp)\n  ldmxcsr 8(%rsp)\n  addq $16, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size zr_simt_switch, .-zr_simt_switch\n");
#define ZR_SIMT_SWITCH(from, to) zr_simt_switch(&(from), (to))
#else
#define ZR_SIMT_OWN_SWITCH 0
#include <ucontext.h>
typedef ucontext_t ZrSimtCtx;
#define ZR_SIMT_SWITCH(from, to) swapcontext(&(from), &(to))
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

enum { RUNNABLE, AT_BLOCK_BAR, AT_WARP_BAR, DONE };
struct Fiber {
    ZrSimtCtx ctx;
    int state;
    unsigned tid;                  /* linear thread index in the block */
    int shfl_i; float shfl_f;      /* value published for a shuffle */
    int warp_gen;                  /* warp barrier generation this fiber waits on */
};

/* Shadow of one shared byte: the last writer and up to two readers since the last block barrier
** (ep), each with its warp's __syncwarp generation at the access. */
struct ShadowByte { uint32_t ep; int16_t w, r1, r2; uint16_t wg, r1g, r2g; };

static struct SimtState {
    Fiber *f;
    unsigned n;                    /* threads per block */
    unsigned cur;
    ZrSimtCtx sched;
    zr_simt_body body;
    void *ctx;
    int *warp_arrived, *warp_gen;  /* per warp */
    int *warp_sync;                /* per warp: the arriving lanes' barrier is a __syncwarp */
    uint16_t *sync_gen;            /* per warp: completed __syncwarp barriers */
    unsigned block_arrived;
    size_t stack_bytes;
    char *stacks;
    /* race checking */
    int active;                    /* a block is running: accesses are the kernel's */
    const char *name;
    uint32_t ep;                   /* block barrier epoch, never reused */
    ShadowByte *shadow;
    size_t shadow_n;
    uintptr_t lo;                  /* lowest shared address touched in this launch */
    long races, launch_races;
    /* limits */
    int arch;
    ZrSimtLb *bounds;
} S;

extern "C" char __start_zr_simt_shared[] __attribute__((weak));
extern "C" char __stop_zr_simt_shared[] __attribute__((weak));

void zr_simt_lb_register(ZrSimtLb *e) { e->next = S.bounds; S.bounds = e; }

unsigned zr_simt_launch_bound(const void *fn)
{
    for (ZrSimtLb *e = S.bounds; e; e = e->next)
        if (e->at == fn) return e->n;
    return 0;
}

long zr_simt_races(void) { return S.races; }

void zr_simt_set_arch(int sm) { S.arch = sm; }

static int arch_now(void)
{
    if (!S.arch) {
        const char *a = getenv("ZR_SIMT_ARCH");
        S.arch = a && atoi(a) > 0 ? atoi(a) : 80;
    }
    return S.arch;
}

/* The largest dynamic shared memory a block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize). */
static size_t shared_optin_limit(int sm)
{
    if (sm >= 90) return 227 * 1024;
    if (sm == 80 || sm == 87) return 163 * 1024;
    if (sm >= 86) return 99 * 1024;
    if (sm >= 75) return 64 * 1024;
    return 96 * 1024;
}

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
#if ZR_SIMT_OWN_SWITCH
    ZR_SIMT_SWITCH(S.f[S.cur].ctx, S.sched);   /* never resumed */
    __builtin_unreachable();
#endif
    /* returning switches to uc_link = the scheduler */
}

static void yield_to_sched(void) { ZR_SIMT_SWITCH(S.f[S.cur].ctx, S.sched); set_coords(S.cur); }

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

/* Warp barrier: the last lane to arrive releases the others. A __syncwarp (is_sync) also orders
** the lanes' memory accesses; a shuffle's barrier only exchanges values. */
static void warp_barrier(int is_sync)
{
    unsigned w = S.cur / 32;
    Fiber *me = &S.f[S.cur];
    me->warp_gen = S.warp_gen[w];
    if (is_sync) S.warp_sync[w] = 1;
    if (++S.warp_arrived[w] == (int)warp_size_of(w)) {
        S.warp_arrived[w] = 0;
        S.warp_gen[w]++;
        if (S.warp_sync[w]) S.sync_gen[w]++;
        S.warp_sync[w] = 0;
        for (unsigned i = w * 32; i < w * 32 + warp_size_of(w); i++)
            if (S.f[i].state == AT_WARP_BAR) S.f[i].state = RUNNABLE;
        return;
    }
    me->state = AT_WARP_BAR;
    yield_to_sched();
}

void zr_simt_syncwarp(void) { warp_barrier(1); }

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
    warp_barrier(0);                      /* everyone has published */
    src = w0 + shfl_src(lane, l, mode, width);
    v = src < S.n ? S.f[src].shfl_f : v;
    warp_barrier(0);                      /* everyone has read before slots are reused */
    return v;
}

int zr_simt_shfl_i(int v, int l, int mode, int width)
{
    unsigned lane = S.cur % 32, w0 = S.cur - lane, src;
    S.f[S.cur].shfl_i = v;
    warp_barrier(0);
    src = w0 + shfl_src(lane, l, mode, width);
    v = src < S.n ? S.f[src].shfl_i : v;
    warp_barrier(0);
    return v;
}

/* ---------------------------------------------------------------- shared-memory race checking */
__attribute__((unused)) static void thread_str(char *b, size_t n, int t)
{
    unsigned x = blockDim.x, y = blockDim.y;
    snprintf(b, n, "(%u,%u,%u)", (unsigned)t % x, (unsigned)t / x % y, (unsigned)t / (x * y));
}

__attribute__((no_sanitize_thread, unused)) static void race(uintptr_t a, int other, const char *other_did, const char *i_do)
{
    S.races++;
    if (S.launch_races++ >= 3) return;
    char t1[48], t2[48];
    thread_str(t1, sizeof t1, other);
    thread_str(t2, sizeof t2, (int)S.cur);
    fprintf(stderr, "zr_simt: shared-memory race in kernel %s, block (%u,%u,%u): shared offset %lu: "
            "thread %s %s it and thread %s %s it with no __syncthreads between (nor a __syncwarp, "
            "within a warp)\n", S.name ? S.name : "(unnamed)", blockIdx.x, blockIdx.y, blockIdx.z,
            (unsigned long)(a - S.lo), t1, other_did, t2, i_do);
}

/* Whether an earlier access by thread t, at its warp's __syncwarp generation g, is ordered before
** the running thread's access now. */
__attribute__((no_sanitize_thread, unused)) static inline int ordered(int t, uint16_t g)
{
    if (t == (int)S.cur) return 1;
    return (unsigned)t / 32 == S.cur / 32 && S.sync_gen[S.cur / 32] != g;
}

__attribute__((no_sanitize_thread, unused)) static void shadow_access(const void *p, size_t n, int write)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)__start_zr_simt_shared;
    if (!S.active || a - lo >= S.shadow_n) return;
    if (a < S.lo) S.lo = a;
    int me = (int)S.cur;
    uint16_t g = S.sync_gen[S.cur / 32];
    for (size_t i = 0; i < n && a + i - lo < S.shadow_n; i++) {
        ShadowByte *e = &S.shadow[a + i - lo];
        if (e->ep != S.ep) {
            e->ep = S.ep;
            e->w = e->r1 = e->r2 = -1;
        }
        if (e->w >= 0 && !ordered(e->w, e->wg)) {
            race(a + i, e->w, "wrote", write ? "writes" : "reads");
            return;
        }
        if (write) {
            int r = e->r1 >= 0 && !ordered(e->r1, e->r1g) ? e->r1 : e->r2 >= 0 && !ordered(e->r2, e->r2g) ? e->r2 : -1;
            if (r >= 0) { race(a + i, r, "read", "writes"); return; }
            e->w = (int16_t)me; e->wg = g;
            e->r1 = e->r2 = -1;
        } else if (e->r1 < 0 || e->r1 == me) {
            e->r1 = (int16_t)me; e->r1g = g;
        } else {
            e->r2 = (int16_t)me; e->r2g = g;
        }
    }
}

#if defined(__SANITIZE_THREAD__) && !defined(ZR_SIMT_NO_RACE_HOOKS)
/* The entry points GCC's -fsanitize=thread instrumentation calls; no TSan runtime is linked. */
#define ZR_SIMT_HOOK extern "C" __attribute__((no_sanitize_thread, used))
#define ZR_SIMT_RW(n)                                                                                   \
    ZR_SIMT_HOOK void __tsan_read##n(void *p) { shadow_access(p, n, 0); }                              \
    ZR_SIMT_HOOK void __tsan_write##n(void *p) { shadow_access(p, n, 1); }                             \
    ZR_SIMT_HOOK void __tsan_unaligned_read##n(void *p) { shadow_access(p, n, 0); }                    \
    ZR_SIMT_HOOK void __tsan_unaligned_write##n(void *p) { shadow_access(p, n, 1); }                   \
    ZR_SIMT_HOOK void __tsan_volatile_read##n(void *p) { shadow_access(p, n, 0); }                     \
    ZR_SIMT_HOOK void __tsan_volatile_write##n(void *p) { shadow_access(p, n, 1); }
ZR_SIMT_RW(1) ZR_SIMT_RW(2) ZR_SIMT_RW(4) ZR_SIMT_RW(8) ZR_SIMT_RW(16)
ZR_SIMT_HOOK void __tsan_read_range(void *p, unsigned long n) { shadow_access(p, n, 0); }
ZR_SIMT_HOOK void __tsan_write_range(void *p, unsigned long n) { shadow_access(p, n, 1); }
ZR_SIMT_HOOK void __tsan_init(void) {}
ZR_SIMT_HOOK void __tsan_func_entry(void *pc) { (void)pc; }
ZR_SIMT_HOOK void __tsan_func_exit(void) {}
ZR_SIMT_HOOK void __tsan_vptr_update(void **p, void *v) { (void)p; (void)v; }
ZR_SIMT_HOOK void __tsan_vptr_read(void **p) { (void)p; }
#endif

/* Thread t's fiber, ready to start at fiber_main. getcontext returns twice in the compiler's eyes,
** so it sits in a frame of its own where no loop variable can be clobbered. */
static void init_fiber(unsigned t)
{
    Fiber *f = &S.f[t];
#if ZR_SIMT_OWN_SWITCH
    /* the frame zr_simt_switch restores: its ret enters fiber_main as if called (the slot above the
    ** return address 16-byte aligned, as the ABI has it at a call), with this thread's FP modes */
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    uint64_t *sp = (uint64_t *)((uintptr_t)(S.stacks + (size_t)(t + 1) * S.stack_bytes) & ~(uintptr_t)15);
    *--sp = 0;                                  /* fiber_main's return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)fiber_main;    /* where zr_simt_switch's ret goes */
    for (int i = 0; i < 6; i++) *--sp = 0;      /* rbp, rbx, r12-r15 */
    *--sp = mxcsr;                              /* at 8(%rsp) */
    *--sp = fpucw;                              /* at (%rsp) */
    f->ctx = sp;
#else
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = S.stacks + (size_t)t * S.stack_bytes;
    f->ctx.uc_stack.ss_size = S.stack_bytes;
    f->ctx.uc_link = &S.sched;
    makecontext(&f->ctx, fiber_main, 0);
#endif
    f->state = RUNNABLE;
    f->tid = t;
}

static int run_block(void)
{
    volatile unsigned live = S.n;   /* survives swapcontext (-Wclobbered) */
    for (unsigned t = 0; t < S.n; t++) init_fiber(t);
    S.block_arrived = 0;
    S.ep++;                          /* a new block: its own shared memory */
    memset(S.warp_arrived, 0, sizeof(int) * ((S.n + 31) / 32));
    S.active = 1;
    while (live) {
        volatile int progressed = 0;
        for (unsigned t = 0; t < S.n; t++) {
            if (S.f[t].state != RUNNABLE) continue;
            S.cur = t;
            set_coords(t);
            ZR_SIMT_SWITCH(S.sched, S.f[t].ctx);
            progressed = 1;
            if (S.f[t].state == DONE) live--;
        }
        /* All live threads at the block barrier: release them together. */
        if (live && S.block_arrived == live) {
            S.block_arrived = 0;
            S.ep++;
            for (unsigned t = 0; t < S.n; t++)
                if (S.f[t].state == AT_BLOCK_BAR) S.f[t].state = RUNNABLE;
            continue;
        }
        if (!progressed) {
            S.active = 0;
            fprintf(stderr, "zr_simt: deadlock in kernel %s, block (%u,%u,%u): %u live threads, %u at "
                    "__syncthreads, the rest at a warp barrier (divergent shuffle or __syncthreads "
                    "not reached by every thread)\n", S.name ? S.name : "(unnamed)", blockIdx.x,
                    blockIdx.y, blockIdx.z, live, S.block_arrived);
            return -1;
        }
    }
    S.active = 0;
    return 0;
}

/* CUDA's launch limits (the same for every arch since sm_30) and the kernel's own bound. */
static int check_launch(const char *name, const void *fn, dim3 g, dim3 b, size_t shmem)
{
    const char *k = name ? name : "(unnamed)";
    unsigned long threads = (unsigned long)b.x * b.y * b.z;
    unsigned lb = fn ? zr_simt_launch_bound(fn) : 0;
    size_t lim = shared_optin_limit(arch_now());
    if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) {
        fprintf(stderr, "zr_simt: kernel %s: launch with a zero dimension: grid (%u,%u,%u), block "
                "(%u,%u,%u)\n", k, g.x, g.y, g.z, b.x, b.y, b.z);
        return -1;
    }
    if (b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024) {
        fprintf(stderr, "zr_simt: kernel %s: block (%u,%u,%u) exceeds CUDA's limits (x, y <= 1024, "
                "z <= 64, x*y*z <= 1024 threads)\n", k, b.x, b.y, b.z);
        return -1;
    }
    if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
        fprintf(stderr, "zr_simt: kernel %s: grid (%u,%u,%u) exceeds CUDA's limits (x <= 2^31-1, "
                "y, z <= 65535)\n", k, g.x, g.y, g.z);
        return -1;
    }
    if (lb && threads > lb) {
        fprintf(stderr, "zr_simt: kernel %s: block of %lu threads exceeds its __launch_bounds__ (%u)\n",
                k, threads, lb);
        return -1;
    }
    if (shmem > lim) {
        fprintf(stderr, "zr_simt: kernel %s: %zu bytes of dynamic shared memory exceed sm_%d's "
                "limit of %zu\n", k, shmem, arch_now(), lim);
        return -1;
    }
    return 0;
}

int zr_simt_run_k(const char *name, const void *fn, dim3 grid, dim3 block, size_t shmem,
                  zr_simt_body body, void *ctx)
{
    int rc = 0;
    /* dim3 is a C struct here: an unset y or z is 0 where CUDA's constructor gives 1 */
    if (grid.y == 0) grid.y = 1;
    if (grid.z == 0) grid.z = 1;
    if (block.y == 0) block.y = 1;
    if (block.z == 0) block.z = 1;
    if (check_launch(name, fn, grid, block, shmem) < 0) return -1;
    gridDim = grid;
    blockDim = block;
    S.n = block.x * block.y * block.z;
    S.body = body;
    S.ctx = ctx;
    S.name = name;
    S.lo = UINTPTR_MAX;
    S.launch_races = 0;
    if (!S.shadow && (uintptr_t)__stop_zr_simt_shared > (uintptr_t)__start_zr_simt_shared) {
        S.shadow_n = (size_t)((uintptr_t)__stop_zr_simt_shared - (uintptr_t)__start_zr_simt_shared);
        S.shadow = (ShadowByte *)calloc(S.shadow_n, sizeof *S.shadow);
        if (!S.shadow) S.shadow_n = 0;
    }
    S.stack_bytes = 64 * 1024;
    S.f = (Fiber *)calloc(S.n, sizeof *S.f);
    S.stacks = (char *)malloc(S.stack_bytes * S.n);
    S.warp_arrived = (int *)calloc((S.n + 31) / 32, sizeof(int));
    S.warp_gen = (int *)calloc((S.n + 31) / 32, sizeof(int));
    S.warp_sync = (int *)calloc((S.n + 31) / 32, sizeof(int));
    S.sync_gen = (uint16_t *)calloc((S.n + 31) / 32, sizeof(uint16_t));
    if (!S.f || !S.stacks || !S.warp_arrived || !S.warp_gen || !S.warp_sync || !S.sync_gen) { rc = -1; goto out; }
    for (unsigned z = 0; z < grid.z && rc == 0; z++)
        for (unsigned y = 0; y < grid.y && rc == 0; y++)
            for (unsigned x = 0; x < grid.x && rc == 0; x++) {
                blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                rc = run_block();
            }
    if (S.launch_races) {
        if (S.launch_races > 3)
            fprintf(stderr, "zr_simt: kernel %s: %ld shared-memory races in all\n", S.name ? S.name : "(unnamed)", S.launch_races);
        rc = -1;
    }
out:
    free(S.f); free(S.stacks); free(S.warp_arrived); free(S.warp_gen); free(S.warp_sync); free(S.sync_gen);
    S.f = NULL; S.stacks = NULL;
    return rc;
}

int zr_simt_run(dim3 grid, dim3 block, zr_simt_body body, void *ctx)
{
    return zr_simt_run_k(NULL, NULL, grid, block, 0, body, ctx);
}
#endif /* ZR_SIMT_IMPL */
#endif
