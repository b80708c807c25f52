/*
** zr_adam.h — fused CPU Adam / AdamW over fp32 master weights (DeepSpeed's cpu_adam semantics).
**
** One pass reads p, m, v, g and writes p, m, v (28 B/param with an fp32 gradient) and, when asked,
** the rounded 16-bit parameter copy, so the step runs at memory bandwidth. Three paths: AVX-512,
** AVX2+FMA and scalar, chosen once from cpuid; OpenMP threads split the array in chunks.
** The SIMD paths perform exactly the operations of the scalar path, in the same order, with the
** same roundings (no FMA contraction, IEEE division and sqrt): every path gives the SAME BITS, so
** the choice of path or offload tier never changes numerics. Tests demand equality.
**
** Per element, with t = c->step, g read in gdt and widened to fp32 exactly:
**     g  = g * grad_scale
**     adamw:  p = p - (lr*wd) * p            (decoupled decay first, if wd != 0)
**     else:   g = g + wd * p                 (L2, if wd != 0)
**     m  = b1*m + (1-b1)*g
**     v  = b2*v + (1-b2)*(g*g)
**     p  = p - step_size * (m / (sqrt(v) * rbc2 + eps))
** where step_size = lr / (1 - b1^t) and rbc2 = 1 / sqrt(1 - b2^t) are computed once per call in
** double and rounded to float (as DeepSpeed does). p16 (if not NULL) = round-to-nearest-even(p).
** A 16-bit gradient is widened and then added to +0 (-0 reads as +0, as a zeroed fp32 sum it was
** added into would hold it), so a gradient landed 16-bit needs no pass of its own before Adam.
*/
#ifndef ZR_ADAM_H
#define ZR_ADAM_H
#include <stdint.h>
#include "zr_plan.h"          /* defines: ZrDtype (ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16) */

typedef struct ZrAdamCfg {
    float lr, beta1, beta2, eps, weight_decay;
    int adamw;                /* 1: decoupled decay p -= lr*wd*p first; 0: L2, g += wd*p */
    int64_t step;             /* t >= 1, for bias correction */
    float grad_scale;         /* g is multiplied by this first (1/loss_scale x clip coefficient) */
} ZrAdamCfg;

/*
** One fused pass over n elements: p (fp32 master), m, v updated in place from g (dtype gdt);
** if p16 != NULL also writes the rounded parameter copy in p16dt (ZR_DT_BF16 or ZR_DT_FP16).
** g and p16 may have any alignment; p, m, v too (aligned is faster). n == 0 is a no-op.
** Returns 0, or -EINVAL (NULL array with n > 0, step < 1, bad dtype, n < 0).
** Threads: OpenMP, omp_get_max_threads() (set with OMP_NUM_THREADS or omp_set_num_threads);
** safe to call from inside a parallel region (it then runs on the calling thread only).
*/
int zr_adam_step(const ZrAdamCfg *c, float *p, float *m, float *v, const void *g, ZrDtype gdt,
                 void *p16, ZrDtype p16dt, int64_t n);
/* The same pass out of place: reads pin, min, vin and writes p, m, v (each output array either is
** its input or does not overlap it), the same bits as zr_adam_step on copies. The speculative step
** (docs/PLAN.md) computes the next state beside the current one with it, at the in-place pass's
** 28 B per parameter. */
int zr_adam_step_to(const ZrAdamCfg *c, const float *pin, const float *min, const float *vin, float *p,
                    float *m, float *v, const void *g, ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n);
/*
** The fused norm's squares, summed in the pass that reads the gradients anyway (the trainer's TrSq
** order, docs/PLAN.md "The norm"). The shard is cut into pieces: at every multiple of `block` in
** shard offsets and at each `cut`. Within a piece the square (in double, of the widened gradient,
** before grad_scale) of the element at shard offset o goes into lane o % 8 in ascending order; a
** piece's sum is ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), stored at piece[zr_adam_sq_piece(o)]. A piece
** that a call leaves unfinished stays open in `lane` and a later call at higher offsets continues
** it (a call elsewhere, or zr_adam_sq_close, closes it first), so a range fed in any number of
** ascending calls, with gaps of zeros skipped, gives each piece the bits of one sequential pass.
*/
typedef struct ZrAdamSq {
    int64_t block;            /* elements per norm block (> 0) */
    const int64_t *cut;       /* ascending shard offsets, none a multiple of block, where a piece also starts */
    int n_cut;
    double *piece;            /* out: closed pieces' sums */
    int64_t open;             /* the piece whose lanes are in lane[], or -1 */
    double lane[8];           /* by shard offset % 8 */
} ZrAdamSq;
/* zr_adam_step_to over n elements at shard offset `at`, the squares of g into sq as above
** (sq == NULL: zr_adam_step_to). -EINVAL also for at < 0 or sq->block < 1. */
int zr_adam_step_sq(const ZrAdamCfg *c, const float *pin, const float *min, const float *vin, float *p,
                    float *m, float *v, const void *g, ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n,
                    int64_t at, ZrAdamSq *sq);
int64_t zr_adam_sq_piece(const ZrAdamSq *sq, int64_t o);   /* the index of the piece holding offset o */
double zr_sq_lanes_sum(const double l[8]);                 /* ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) */
void zr_adam_sq_close(ZrAdamSq *sq);                       /* the open piece's sum into piece[] */
/* The reference every SIMD path is held to (single-threaded, plain C). */
int zr_adam_step_scalar(const ZrAdamCfg *c, float *p, float *m, float *v, const void *g,
                        ZrDtype gdt, void *p16, ZrDtype p16dt, int64_t n);
/* "avx512" | "avx2" | "scalar": the path zr_adam_step uses (from cpuid, or forced). */
const char *zr_adam_impl_name(void);
/* Tests/bench: force a path ("avx512", "avx2", "scalar"; NULL = back to cpuid's choice).
** Returns 0, -ENOTSUP if the CPU lacks it, -EINVAL for an unknown name.
** Env ZR_ADAM_IMPL=<name> forces a path at first use (ignored with a warning if absent). */
int zr_adam_force_impl(const char *name);

/* ---- internal to zr_adam*.c: per-call constants and the kernels over one chunk */
typedef struct ZrAdamK {
    float b1, b2, omb1, omb2; /* beta1, beta2, 1-beta1, 1-beta2 (float arithmetic) */
    float eps, wd, lrwd;      /* eps, weight decay, lr*wd */
    float step_size, rbc2;    /* lr/(1-b1^t), 1/sqrt(1-b2^t): double math rounded once */
    float gs;                 /* grad_scale */
    int adamw, decay;         /* decay = (wd != 0) */
} ZrAdamK;
/* Reads pin/min/vin, writes p/m/v (the same arrays for an in-place step). With sq != NULL the square
** of element i's widened gradient is added to sq[i % 8] in ascending i (the caller rotates the
** lanes to shard offsets). */
typedef void ZrAdamKernel(const ZrAdamK *k, const float *pin, const float *min, const float *vin,
                          float *p, float *m, float *v, const void *g, int gdt, void *p16, int p16dt,
                          int64_t n, double *sq);
ZrAdamKernel zr_adam_kernel_scalar, zr_adam_kernel_avx2, zr_adam_kernel_avx512;
#endif
