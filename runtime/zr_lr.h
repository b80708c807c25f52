/*
** zr_lr.h — learning-rate schedules with DeepSpeed's formulas (runtime/lr_schedules.py):
** WarmupLR (log or linear warmup), WarmupDecayLR, WarmupCosineLR, and a constant lr.
**
** Which lr an optimizer step uses: DeepSpeed's scheduler starts at it = -1 with the optimizer's lr set
** to the schedule's initial value (WarmupLR/WarmupDecayLR: warmup_min_lr; WarmupCosineLR:
** warmup_min_ratio * lr), and the engine calls scheduler.step() (it += 1) after every APPLIED optimizer
** step (an fp16 step skipped for overflow does not advance it). So the n-th applied step (n from 0)
** uses it = n - 1: step 0 the initial value, step n >= 1 the formula at it = n - 1.
** zr_lr_at(s, n) returns that lr; n is the number of steps applied before this one.
** Formulas (W = max(2, warmup_num_steps), T = total_num_steps):
**   warmup gamma: log: ln(it+1)/ln(W); linear: it/W; for it < W, else 1
**   WarmupLR:       min + (max - min) * gamma
**   WarmupDecayLR:  it < W as WarmupLR, then min + (max - min) * max(0, (T - it) / max(1, T - W))
**   WarmupCosineLR: lr * ratio; it < W: ratio = wmin + (1 - wmin) * gamma, then
**                   p = min(1, (it - W + 1) / max(1, T - W)), ratio = cmin + (1 - cmin)(1 + cos(pi p))/2
*/
#ifndef ZR_LR_H
#define ZR_LR_H
#include <stdint.h>

typedef enum { ZR_LR_CONSTANT, ZR_LR_WARMUP, ZR_LR_WARMUP_DECAY, ZR_LR_WARMUP_COSINE } ZrLrKind;
typedef enum { ZR_WARMUP_LOG, ZR_WARMUP_LINEAR } ZrWarmupType;

typedef struct ZrLrSched {
    int kind;                   /* ZrLrKind */
    double lr;                  /* optimizer lr: CONSTANT's value, WarmupCosineLR's peak */
    double warmup_min_lr;       /* WarmupLR / WarmupDecayLR */
    double warmup_max_lr;       /* WarmupLR / WarmupDecayLR */
    int64_t warmup_num_steps;   /* W before the max(2, .) */
    int warmup_type;            /* ZrWarmupType */
    int64_t total_num_steps;    /* WarmupDecayLR / WarmupCosineLR */
    double warmup_min_ratio;    /* WarmupCosineLR */
    double cos_min_ratio;       /* WarmupCosineLR */
} ZrLrSched;

/* DeepSpeed's defaults for `kind` (warmup 1000 steps, log, min 0, max = lr, cos_min_ratio 1e-4). */
void zr_lr_defaults(ZrLrSched *s, int kind, double lr);
/* -EINVAL with a message for a schedule DeepSpeed would reject or that is meaningless. */
int zr_lr_check(const ZrLrSched *s);
/* The lr of the optimizer step that has n applied steps before it (see above). */
double zr_lr_at(const ZrLrSched *s, int64_t n);
/* The formula at DeepSpeed's last_batch_iteration `it` (it < 0: the initial value). */
double zr_lr_at_iter(const ZrLrSched *s, int64_t it);
#endif
