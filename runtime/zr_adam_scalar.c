/*
** zr_adam_scalar.c — the scalar Adam/AdamW kernel: the definition of the update (see zr_adam.h).
** zr_adam_avx2.c and zr_adam_avx512.c repeat its operations lane by lane in the same order and
** use it for their tails, so every path gives the same bits; zr_adam.c chooses among them. A module
** of its own so that the vector kernels and the selection above them both depend on it, and it on
** neither.
*/
#include <math.h>
#include "zr_adam.h"          /* defines: ZrAdamK, ZrAdamKernel */
#include "zr_half.h"          /* defines: zr_bf16_to_f32 & co. */

static inline float load_g(const void *g, int gdt, int64_t i)
{
    if (gdt == ZR_DT_FP32) return ((const float *)g)[i];
    if (gdt == ZR_DT_BF16) return zr_bf16_to_f32(((const uint16_t *)g)[i]) + 0.0f;
    return zr_fp16_to_f32(((const uint16_t *)g)[i]) + 0.0f;
}

void zr_adam_kernel_scalar(const ZrAdamK *k, const float *pin, const float *min, const float *vin,
                           float *p, float *m, float *v, const void *g, int gdt, void *p16, int p16dt,
                           int64_t n, double *sq)
{
    for (int64_t i = 0; i < n; i++) {
        float gi = load_g(g, gdt, i);
        if (sq) sq[i % 8] += (double)gi * gi;
        gi = gi * k->gs;
        float pi = pin[i];
        if (k->decay) {
            if (k->adamw) pi = pi - k->lrwd * pi;
            else gi = gi + k->wd * pi;
        }
        float mi = k->b1 * min[i] + k->omb1 * gi;
        float vi = k->b2 * vin[i] + k->omb2 * (gi * gi);
        float den = sqrtf(vi) * k->rbc2 + k->eps;
        pi = pi - k->step_size * (mi / den);
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
        if (p16) {
            uint16_t h = p16dt == ZR_DT_BF16 ? zr_f32_to_bf16(pi) : zr_f32_to_fp16(pi);
            ((uint16_t *)p16)[i] = h;
        }
    }
}
