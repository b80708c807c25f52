/*
** zr_adam.c — CPU Adam/AdamW: path selection and OpenMP chunking over the kernels (the scalar
** reference zr_adam_scalar.c, zr_adam_avx2.c, zr_adam_avx512.c), which this file calls and which
** never call it. Constants that need pow() are computed once per call in double and rounded to
** float, so nothing costly or path-dependent sits in the loop.
*/
#include <cpuid.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "zr_adam.h"          /* defines: ZrAdamCfg, ZrAdamK, the kernels */

/* {===================================================================== path selection */
typedef struct Impl { const char *name; ZrAdamKernel *fn; int (*have)(void); } Impl;

static int have_scalar(void) { return 1; }
/* F16C from CPUID leaf 1 (ECX bit 29) rather than __builtin_cpu_supports("f16c"), which clang 14
** does not know; the AVX2 check above it already covers the OS saving the YMM state. */
static int have_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
static int have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && have_f16c();
}
static int have_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

static const Impl impls[] = {    /* best first */
    {"avx512", zr_adam_kernel_avx512, have_avx512},
    {"avx2", zr_adam_kernel_avx2, have_avx2},
    {"scalar", zr_adam_kernel_scalar, have_scalar},
};
enum { NIMPL = sizeof impls / sizeof impls[0] };
static const Impl *chosen;       /* set once; tests may force another */

static const Impl *best_impl(void)
{
    for (int i = 0; i < NIMPL; i++)
        if (impls[i].have()) return &impls[i];
    return &impls[NIMPL - 1];
}

static const Impl *current(void)
{
    const Impl *c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (c) return c;
    c = best_impl();
    const char *want = getenv("ZR_ADAM_IMPL");
    if (want && *want) {
        const Impl *w = NULL;
        for (int i = 0; i < NIMPL; i++)
            if (strcmp(impls[i].name, want) == 0) w = &impls[i];
        if (w && w->have()) c = w;
        else fprintf(stderr, "zr_adam: ZR_ADAM_IMPL=%s is %s here; using %s\n", want,
                     w ? "not supported by this CPU" : "unknown (avx512, avx2, scalar)", c->name);
    }
    __atomic_store_n(&chosen, c, __ATOMIC_RELEASE);
    return c;
}

const char *zr_adam_impl_name(void) { return current()->name; }

int zr_adam_force_impl(const char *name)
{
    if (!name) { __atomic_store_n(&chosen, best_impl(), __ATOMIC_RELEASE); return 0; }
    for (int i = 0; i < NIMPL; i++) {
        if (strcmp(impls[i].name, name) != 0) continue;
        if (!impls[i].have()) return -ENOTSUP;
        __atomic_store_n(&chosen, &impls[i], __ATOMIC_RELEASE);
        return 0;
    }
    return -EINVAL;
}
/* }===================================================================== */

/* {===================================================================== entry points */
static int prepare(const ZrAdamCfg *c, const float *p, const float *m, const float *v,
                   const void *g, ZrDtype gdt, const void *p16, ZrDtype p16dt, int64_t n,
                   ZrAdamK *k)
{
    if (!c || n < 0 || c->step < 1) return -EINVAL;
    if (gdt != ZR_DT_FP32 && gdt != ZR_DT_BF16 && gdt != ZR_DT_FP16) return -EINVAL;
    if (p16 && p16dt != ZR_DT_BF16 && p16dt != ZR_DT_FP16) return -EINVAL;
    if (n > 0 && (!p || !m || !v || !g)) return -EINVAL;
    double t = (double)c->step;
    k->b1 = c->beta1;
    k->b2 = c->beta2;
    k->omb1 = 1.0f - c->beta1;
    k->omb2 = 1.0f - c->beta2;
    k->eps = c->eps;
    k->wd = c->weight_decay;
    k->lrwd = c->lr * c->weight_decay;
    k->step_size = (float)((double)c->lr / (1.0 - pow((double)c->beta1, t)));
    k->rbc2 = (float)(1.0 / sqrt(1.0 - pow((double)c->beta2, t)));
    k->gs = c->grad_scale;
    k->adamw = c->adamw != 0;
    k->decay = c->weight_decay != 0.0f;
    return 0;
}

int zr_adam_step_scalar(const ZrAdamCfg *c, float *p, float *m, float *v, const void *g,
                        ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n)
{
    ZrAdamK k;
    int rc = prepare(c, p, m, v, g, gdt, p16, p16dt, n, &k);
    if (rc == 0 && n > 0) zr_adam_kernel_scalar(&k, p, m, v, p, m, v, g, (int)gdt, p16, (int)p16dt, n, NULL);
    return rc;
}

/* Below this many elements threads cost more than they save. */
#define ZR_ADAM_PAR_MIN (1 << 16)

int zr_adam_step(const ZrAdamCfg *c, float *p, float *m, float *v, const void *g, ZrDtype gdt,
                 void *p16, ZrDtype p16dt, int64_t n)
{
    return zr_adam_step_to(c, p, m, v, p, m, v, g, gdt, p16, p16dt, n);
}

int zr_adam_step_to(const ZrAdamCfg *c, const float *pin, const float *min, const float *vin, float *p,
                    float *m, float *v, const void *g, ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n)
{
    return zr_adam_step_sq(c, pin, min, vin, p, m, v, g, gdt, p16, p16dt, n, 0, NULL);
}

/* The squares' pieces (zr_adam.h ZrAdamSq). The lanes' tree is the norm's order everywhere on the
** host: the trainers' TrSq uses this function too. */
double zr_sq_lanes_sum(const double l[8])
{
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static int cuts_upto(const ZrAdamSq *sq, int64_t o)      /* how many cuts are <= o */
{
    int lo = 0, hi = sq->n_cut;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (sq->cut[mid] <= o) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int64_t zr_adam_sq_piece(const ZrAdamSq *sq, int64_t o) { return o / sq->block + cuts_upto(sq, o); }

static int64_t piece_end(const ZrAdamSq *sq, int64_t o)
{
    int64_t e = (o / sq->block + 1) * sq->block;
    int c = cuts_upto(sq, o);
    return c < sq->n_cut && sq->cut[c] < e ? sq->cut[c] : e;
}

void zr_adam_sq_close(ZrAdamSq *sq)
{
    if (sq->open >= 0) sq->piece[sq->open] = zr_sq_lanes_sum(sq->lane);
    sq->open = -1;
    memset(sq->lane, 0, sizeof sq->lane);
}

/* What one thread leaves open at the end of its run. */
typedef struct Open { int64_t id; double lane[8]; } Open;

/* One thread's run over [lo, hi) of a call at shard offset at: the kernel piece by piece, each
** piece's lanes rotated from shard offsets to the kernel's i % 8 and back; `in` the lanes of a piece
** continued from an earlier call (or NULL), *out what stays open at hi (id -1: nothing). */
static void run_sq(ZrAdamKernel *fn, const ZrAdamK *k, const float *pin, const float *min, const float *vin,
                   float *p, float *m, float *v, const void *g, int gdt, size_t gsz, void *p16, int p16dt,
                   int64_t lo, int64_t hi, int64_t at, const ZrAdamSq *sq, const double *in, Open *out)
{
    double lane[8] = {0};
    if (in) memcpy(lane, in, sizeof lane);
    out->id = -1;
    for (int64_t i = lo; i < hi;) {
        int64_t o = at + i, pe = piece_end(sq, o), e = pe - at < hi ? pe - at : hi;
        int r = (int)(o % 8);
        double acc[8];
        for (int j = 0; j < 8; j++) acc[j] = lane[(r + j) % 8];
        fn(k, pin + i, min + i, vin + i, p + i, m + i, v + i, (const char *)g + i * gsz, gdt,
           p16 ? (void *)((char *)p16 + i * 2) : NULL, p16dt, e - i, acc);
        for (int j = 0; j < 8; j++) lane[(r + j) % 8] = acc[j];
        if (at + e == pe) {
            sq->piece[zr_adam_sq_piece(sq, o)] = zr_sq_lanes_sum(lane);
            memset(lane, 0, sizeof lane);
        } else {
            out->id = zr_adam_sq_piece(sq, o);
            memcpy(out->lane, lane, sizeof lane);
        }
        i = e;
    }
}

int zr_adam_step_sq(const ZrAdamCfg *c, const float *pin, const float *min, const float *vin, float *p,
                    float *m, float *v, const void *g, ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n,
                    int64_t at, ZrAdamSq *sq)
{
    ZrAdamK k;
    int rc = prepare(c, p, m, v, g, gdt, p16, p16dt, n, &k);
    if (rc == 0 && n > 0 && (!pin || !min || !vin)) rc = -EINVAL;
    if (rc == 0 && sq && (at < 0 || sq->block < 1 || !sq->piece || (sq->n_cut > 0 && !sq->cut))) rc = -EINVAL;
    if (rc != 0 || n == 0) return rc;
    ZrAdamKernel *fn = current()->fn;
    size_t gsz = gdt == ZR_DT_FP32 ? 4 : 2;
    int nt = omp_in_parallel() || n < ZR_ADAM_PAR_MIN ? 1 : omp_get_max_threads();
    if (!sq && nt <= 1) {
        fn(&k, pin, min, vin, p, m, v, g, (int)gdt, p16, (int)p16dt, n, NULL);
        return 0;
    }
    if (!sq) {
        /* One contiguous chunk per thread, boundaries on 64-element multiples (whole cache lines
        ** for every array); elementwise, so the split never changes the result. */
        #pragma omp parallel num_threads(nt)
        {
            int tid = omp_get_thread_num(), nth = omp_get_num_threads();
            int64_t per = ((n + nth - 1) / nth + 63) & ~(int64_t)63;
            int64_t lo = per * tid, hi = lo + per < n ? lo + per : n;
            if (lo < hi)
                fn(&k, pin + lo, min + lo, vin + lo, p + lo, m + lo, v + lo, (const char *)g + lo * gsz, (int)gdt,
                   p16 ? (void *)((char *)p16 + lo * 2) : NULL, (int)p16dt, hi - lo, NULL);
        }
        return 0;
    }
    /* the squares: a piece is one thread's, so the threads' boundaries are block multiples in shard
    ** offsets; only the first thread continues an open piece, only the last can leave one open */
    if (sq->open >= 0 && sq->open != zr_adam_sq_piece(sq, at)) zr_adam_sq_close(sq);
    double in[8];
    int cont = sq->open >= 0;
    memcpy(in, sq->lane, sizeof in);
    enum { MAXT = 256 };
    if (nt > MAXT) nt = MAXT;
    Open open[MAXT];
    for (int t = 0; t < nt; t++) open[t].id = -1;
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t per = (n + nth - 1) / nth;
        int64_t lo = tid == 0 ? 0 : ((at + per * tid + sq->block - 1) / sq->block) * sq->block - at;
        int64_t hi = tid == nth - 1 ? n : ((at + per * (tid + 1) + sq->block - 1) / sq->block) * sq->block - at;
        if (lo > n) lo = n;
        if (hi > n) hi = n;
        if (lo < hi)
            run_sq(fn, &k, pin, min, vin, p, m, v, g, (int)gdt, gsz, p16, (int)p16dt, lo, hi, at, sq,
                   tid == 0 && cont ? in : NULL, &open[tid]);
    }
    sq->open = -1;
    memset(sq->lane, 0, sizeof sq->lane);
    for (int t = 0; t < nt; t++)
        if (open[t].id >= 0) {
            sq->open = open[t].id;
            memcpy(sq->lane, open[t].lane, sizeof sq->lane);
        }
    return 0;
}
/* }===================================================================== */
