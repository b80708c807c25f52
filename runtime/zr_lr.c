/*
** zr_lr.c — DeepSpeed's warmup schedules as pure functions of the applied-step count, so a resumed
** run needs no scheduler state beyond the step counter. See zr_lr.h for the formulas and for which
** iteration an optimizer step uses.
*/
#include <errno.h>
#include <math.h>
#include "zr_err.h"
#include "zr_lr.h"

void zr_lr_defaults(ZrLrSched *s, int kind, double lr)
{
    s->kind = kind;
    s->lr = lr;
    s->warmup_min_lr = 0.0;
    s->warmup_max_lr = lr;
    s->warmup_num_steps = 1000;
    s->warmup_type = ZR_WARMUP_LOG;
    s->total_num_steps = 0;
    s->warmup_min_ratio = 0.0;
    s->cos_min_ratio = 1e-4;
}

int zr_lr_check(const ZrLrSched *s)
{
    if (s->kind < ZR_LR_CONSTANT || s->kind > ZR_LR_WARMUP_COSINE)
        return zr_train_fail(-EINVAL, "lr schedule: unknown kind %d", s->kind);
    if (s->warmup_type != ZR_WARMUP_LOG && s->warmup_type != ZR_WARMUP_LINEAR)
        return zr_train_fail(-EINVAL, "lr schedule: warmup_type must be log or linear");
    if (!(s->lr >= 0) || !(s->warmup_min_lr >= 0) || !(s->warmup_max_lr >= 0))
        return zr_train_fail(-EINVAL, "lr schedule: learning rates must be >= 0");
    if (s->kind != ZR_LR_CONSTANT && s->warmup_num_steps < 0)
        return zr_train_fail(-EINVAL, "lr schedule: warmup_num_steps must be >= 0");
    if ((s->kind == ZR_LR_WARMUP_DECAY || s->kind == ZR_LR_WARMUP_COSINE) && s->total_num_steps <= 0)
        return zr_train_fail(-EINVAL, "lr schedule: %s needs scheduler.params.total_num_steps > 0",
                             s->kind == ZR_LR_WARMUP_DECAY ? "WarmupDecayLR" : "WarmupCosineLR");
    if (s->kind == ZR_LR_WARMUP_COSINE &&
        (s->warmup_min_ratio < 0 || s->warmup_min_ratio > 1 || s->cos_min_ratio < 0 ||
         s->cos_min_ratio > 1))
        return zr_train_fail(-EINVAL, "lr schedule: warmup_min_ratio and cos_min_ratio must be in [0, 1]");
    return 0;
}

/* Warmup fraction at iteration it (0 <= it < W). */
static double warmup_gamma(const ZrLrSched *s, int64_t it, int64_t w)
{
    if (s->warmup_type == ZR_WARMUP_LINEAR) return (double)it / (double)w;
    return log((double)(it + 1)) / log((double)w);
}

double zr_lr_at_iter(const ZrLrSched *s, int64_t it)
{
    int64_t w = s->warmup_num_steps < 2 ? 2 : s->warmup_num_steps;
    double delta = s->warmup_max_lr - s->warmup_min_lr;
    switch (s->kind) {
    case ZR_LR_WARMUP:
        if (it < 0) return s->warmup_min_lr;
        return s->warmup_min_lr + delta * (it < w ? warmup_gamma(s, it, w) : 1.0);
    case ZR_LR_WARMUP_DECAY: {
        double g, den;
        if (it < 0) return s->warmup_min_lr;
        if (it < w) return s->warmup_min_lr + delta * warmup_gamma(s, it, w);
        den = (double)(s->total_num_steps - w);
        if (den < 1.0) den = 1.0;
        g = (double)(s->total_num_steps - it) / den;
        return s->warmup_min_lr + delta * (g > 0.0 ? g : 0.0);
    }
    case ZR_LR_WARMUP_COSINE: {
        double ratio, p, den;
        if (it < 0) return s->lr * s->warmup_min_ratio;
        if (it < w) {
            ratio = s->warmup_min_ratio + (1.0 - s->warmup_min_ratio) * warmup_gamma(s, it, w);
            return s->lr * ratio;
        }
        den = (double)(s->total_num_steps - w);
        if (den < 1.0) den = 1.0;
        p = (double)(it - w + 1) / den;
        if (p > 1.0) p = 1.0;
        ratio = s->cos_min_ratio + (1.0 - s->cos_min_ratio) * (1.0 + cos(M_PI * p)) / 2.0;
        return s->lr * (ratio > 0.0 ? ratio : 0.0);
    }
    default:
        return s->lr;
    }
}

double zr_lr_at(const ZrLrSched *s, int64_t n)
{
    return zr_lr_at_iter(s, n - 1);
}
