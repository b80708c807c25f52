/*
** planout_train.c — the "training" part of plan.txt and plan.json: the batch, the optimizer and its
** hyper-parameters, gradient clipping, the precision and loss scaling, and the lr schedule with every
** parameter, each with where it came from (the config, an "auto" filled from the spec or HF's
** defaults, the spec for a key the config leaves out, a derivation, a default). A config written for
** HF's Trainer says "auto" for most of these, so the plan is where a user reads the numbers the run
** will use before launching it.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"

static bool shown(const ZgZero *z, ZgSetting s)
{
    switch (s) {
    case ZG_S_LOSS_SCALE: case ZG_S_INITIAL_SCALE_POWER: case ZG_S_LOSS_SCALE_WINDOW: case ZG_S_HYSTERESIS:
    case ZG_S_CONSECUTIVE_HYSTERESIS: case ZG_S_MIN_LOSS_SCALE: return z->dtype == ZG_DTYPE_FP16;
    case ZG_S_ADAM_W_MODE: return z->optimizer && !strcmp(z->optimizer, "adam");   /* AdamW: always */
    case ZG_S_WARMUP_MIN_LR: case ZG_S_WARMUP_MAX_LR:
        return z->sched == ZG_SCHED_WARMUP || z->sched == ZG_SCHED_WARMUP_DECAY;
    case ZG_S_WARMUP_NUM_STEPS: case ZG_S_WARMUP_TYPE: return z->sched != ZG_SCHED_NONE;
    case ZG_S_TOTAL_NUM_STEPS: return z->sched == ZG_SCHED_WARMUP_DECAY || z->sched == ZG_SCHED_WARMUP_COSINE;
    case ZG_S_WARMUP_MIN_RATIO: case ZG_S_COS_MIN_RATIO: return z->sched == ZG_SCHED_WARMUP_COSINE;
    default: return true;
    }
}

static const char *from_name(ZgFromKind k)
{
    static const char *const n[] = {"default", "config", "auto", "spec", "derived"};
    return (unsigned)k < 5 ? n[k] : "?";
}

/* Who sets a value nobody wrote. */
static const char *default_source(const ZgZero *z, ZgSetting s)
{
    if (s == ZG_S_OPT_TYPE) return "zgen's: the config has no optimizer";
    if (s == ZG_S_SCHED_TYPE) return "the config has no scheduler: the lr stays constant";
    if ((s == ZG_S_LR || s == ZG_S_BETAS || s == ZG_S_EPS || s == ZG_S_WD) && z->from[ZG_S_OPT_TYPE].kind == ZG_FROM_DEFAULT)
        return "zgen's AdamW default";
    return "DeepSpeed's default";
}

int zg_plan_training_rows(const ZgZero *z, ZgTrainRow *rows)
{
    int n = 0;
    for (int s = 0; s < ZG_NS; s++) {
        if (!shown(z, (ZgSetting)s)) continue;
        const ZgFrom *f = &z->from[s];
        ZgTrainRow *r = &rows[n++];
        r->key = zg_setting_key((ZgSetting)s);
        r->value = zg_setting_text(z, (ZgSetting)s);
        r->json_string = s == ZG_S_OPT_TYPE || s == ZG_S_SCHED_TYPE || s == ZG_S_WARMUP_TYPE;
        r->from = from_name(f->kind);
        r->source = f->src ? f->src : f->kind == ZG_FROM_DEFAULT ? default_source(z, (ZgSetting)s) : NULL;
        r->line = f->kind == ZG_FROM_CONFIG || f->kind == ZG_FROM_AUTO ? f->at.line : 0;
        r->note = NULL;
        if (s == ZG_S_WARMUP_NUM_STEPS && z->warmup_num_steps_in < 2)
            r->note = zg_fmt("the warmup spans max(2, %lld) = 2 steps, as in DeepSpeed",
                             (long long)z->warmup_num_steps_in);
        if (s == ZG_S_CLIP && z->gradient_clipping == 0) r->note = "0: no clipping";
        if (s == ZG_S_LOSS_SCALE && z->loss_scale == 0) r->note = "0: dynamic loss scaling";
    }
    return n;
}

void zg_plan_training_txt(const ZgPlan *p, FILE *f)
{
    const ZgZero *z = p->zero;
    ZgTrainRow rows[ZG_NS];
    int n = zg_plan_training_rows(z, rows);
    fprintf(f, "\n== training settings (what the trainer runs, and where each value came from) ==\n");
    fprintf(f, "%s, %s%s; config %s\n", zg_dtype_name(z->dtype),
            z->dtype == ZG_DTYPE_FP32 ? "no mixed precision" : "16-bit working copy, fp32 master weights and Adam state",
            z->dtype == ZG_DTYPE_FP16 ? ", loss-scaled" : z->dtype == ZG_DTYPE_BF16 ? ", no loss scaling" : "",
            z->path ? z->path : "?");
    for (int i = 0; i < n; i++) {
        const ZgTrainRow *r = &rows[i];
        fprintf(f, "  %-34s %-16s ", r->key, r->value);
        if (!strcmp(r->from, "config")) fprintf(f, "config line %d", r->line);
        else if (!strcmp(r->from, "auto")) fprintf(f, "auto (line %d) <- %s", r->line, r->source ? r->source : "?");
        else if (!strcmp(r->from, "spec")) fprintf(f, "%s (the config leaves it out)", r->source);
        else if (!strcmp(r->from, "derived")) fprintf(f, "derived: %s", r->source);
        else fprintf(f, "%s", r->source);
        if (r->note) fprintf(f, "; %s", r->note);
        fputc('\n', f);
    }
}
