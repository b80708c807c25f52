/*
** zero_auto.c — "auto" in a DeepSpeed config, filled as Hugging Face's Trainer fills it
** (transformers' HfTrainerDeepSpeedConfig: trainer_config_process, then trainer_config_finalize),
** with the spec's train.* keys in the place of TrainingArguments and zgen's --steps in that of
** max_steps; and where every training setting came from, for the lines zgen prints and plan.txt's
** "training" section.
**
** HF fills the batch triple, gradient_clipping, the optimizer's lr, betas, eps and weight_decay, the
** scheduler's warmup_min_lr, warmup_max_lr, warmup_num_steps and total_num_steps, fp16/bf16/amp
** enabled, and three sizing keys from the hidden size. Any other "auto" is an error: DeepSpeed would
** drop the key and use its default, which is how a config written for HF's Trainer trains with
** numbers nobody chose. Where HF refuses a config value that differs from its argument, zgen keeps
** the config's value with a warning (-c exists to run a spec with another config), and warns as well
** when the config leaves a key to its default while the spec gives it; only the lr of a config
** without one (and, with no optimizer section, the betas, eps and weight decay, from which HF's
** Trainer builds its own AdamW) is taken from the spec.
*/
#include <stdlib.h>
#include <string.h>
#include "zero_int.h"
#include "zg_plan.h"

static const struct { const char *key; int ta; } settings[ZG_NS] = {
    [ZG_S_MICRO] = {"train_micro_batch_size_per_gpu", ZG_TA_MICRO},
    [ZG_S_GAS] = {"gradient_accumulation_steps", ZG_TA_GAS},
    [ZG_S_TB] = {"train_batch_size", ZG_TA_BATCH},
    [ZG_S_CLIP] = {"gradient_clipping", ZG_TA_CLIP},
    [ZG_S_BF16] = {"bf16.enabled", ZG_TA_DTYPE},
    [ZG_S_FP16] = {"fp16.enabled", ZG_TA_DTYPE},
    [ZG_S_LOSS_SCALE] = {"fp16.loss_scale", -1},
    [ZG_S_INITIAL_SCALE_POWER] = {"fp16.initial_scale_power", -1},
    [ZG_S_LOSS_SCALE_WINDOW] = {"fp16.loss_scale_window", -1},
    [ZG_S_HYSTERESIS] = {"fp16.hysteresis", -1},
    [ZG_S_CONSECUTIVE_HYSTERESIS] = {"fp16.consecutive_hysteresis", -1},
    [ZG_S_MIN_LOSS_SCALE] = {"fp16.min_loss_scale", -1},
    [ZG_S_OPT_TYPE] = {"optimizer.type", -1},
    [ZG_S_LR] = {"optimizer.params.lr", ZG_TA_LR},
    [ZG_S_BETAS] = {"optimizer.params.betas", ZG_TA_BETAS},
    [ZG_S_EPS] = {"optimizer.params.eps", ZG_TA_EPS},
    [ZG_S_WD] = {"optimizer.params.weight_decay", ZG_TA_WD},
    [ZG_S_ADAM_W_MODE] = {"optimizer.params.adam_w_mode", -1},
    [ZG_S_BIAS_CORRECTION] = {"optimizer.params.bias_correction", -1},
    [ZG_S_SCHED_TYPE] = {"scheduler.type", -1},
    [ZG_S_WARMUP_MIN_LR] = {"scheduler.params.warmup_min_lr", -1},
    [ZG_S_WARMUP_MAX_LR] = {"scheduler.params.warmup_max_lr", ZG_TA_LR},
    [ZG_S_WARMUP_NUM_STEPS] = {"scheduler.params.warmup_num_steps", ZG_TA_WARMUP},
    [ZG_S_WARMUP_TYPE] = {"scheduler.params.warmup_type", -1},
    [ZG_S_TOTAL_NUM_STEPS] = {"scheduler.params.total_num_steps", -1},
    [ZG_S_WARMUP_MIN_RATIO] = {"scheduler.params.warmup_min_ratio", -1},
    [ZG_S_COS_MIN_RATIO] = {"scheduler.params.cos_min_ratio", -1},
};

const char *zg_setting_key(ZgSetting s) { return (unsigned)s < ZG_NS ? settings[s].key : "?"; }

static int setting_of(const char *what)
{
    for (int s = 0; s < ZG_NS; s++)
        if (!strcmp(settings[s].key, what)) return s;
    return -1;
}

/* The settings HF's Trainer writes over "auto" (trainer_config_process / _finalize). */
static bool hf_fills(int s)
{
    switch (s) {
    case ZG_S_MICRO: case ZG_S_GAS: case ZG_S_TB: case ZG_S_CLIP: case ZG_S_BF16: case ZG_S_FP16:
    case ZG_S_LR: case ZG_S_BETAS: case ZG_S_EPS: case ZG_S_WD: case ZG_S_WARMUP_MIN_LR:
    case ZG_S_WARMUP_MAX_LR: case ZG_S_WARMUP_NUM_STEPS: case ZG_S_TOTAL_NUM_STEPS: return true;
    default: return false;
    }
}

/* ======================================================================= values as text */
char *zg_num_text(double x)
{
    char buf[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    return zg_xstrdup(buf);
}

static const char *sched_name(ZgSchedKind k)
{
    static const char *const n[] = {"none", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
    return (unsigned)k < 4 ? n[k] : "none";
}

static char *yes_no(bool b) { return zg_xstrdup(b ? "true" : "false"); }

char *zg_setting_text(const ZgZero *z, ZgSetting s)
{
    switch (s) {
    case ZG_S_MICRO: return zg_fmt("%lld", (long long)z->micro_batch);
    case ZG_S_GAS: return zg_fmt("%lld", (long long)z->grad_accum);
    case ZG_S_TB: return zg_fmt("%lld", (long long)z->train_batch_size);
    case ZG_S_CLIP: return zg_num_text(z->gradient_clipping);
    case ZG_S_BF16: return yes_no(z->dtype == ZG_DTYPE_BF16);
    case ZG_S_FP16: return yes_no(z->dtype == ZG_DTYPE_FP16);
    case ZG_S_LOSS_SCALE: return zg_num_text(z->loss_scale);
    case ZG_S_INITIAL_SCALE_POWER: return zg_fmt("%d", z->initial_scale_power);
    case ZG_S_LOSS_SCALE_WINDOW: return zg_fmt("%d", z->loss_scale_window);
    case ZG_S_HYSTERESIS: return zg_fmt("%d", z->hysteresis);
    case ZG_S_CONSECUTIVE_HYSTERESIS: return yes_no(z->consecutive_hysteresis);
    case ZG_S_MIN_LOSS_SCALE: return zg_num_text(z->min_loss_scale);
    case ZG_S_OPT_TYPE: return zg_xstrdup(z->optimizer && !strcmp(z->optimizer, "adam") ? "Adam" : "AdamW");
    case ZG_S_LR: return zg_num_text(z->lr);
    case ZG_S_BETAS: {
        char *a = zg_num_text(z->beta1), *b = zg_num_text(z->beta2), *r = zg_fmt("[%s, %s]", a, b);
        free(a), free(b);
        return r;
    }
    case ZG_S_EPS: return zg_num_text(z->eps);
    case ZG_S_WD: return zg_num_text(z->weight_decay);
    case ZG_S_ADAM_W_MODE: return yes_no(z->adam_w_mode);
    case ZG_S_BIAS_CORRECTION: return yes_no(z->bias_correction);
    case ZG_S_SCHED_TYPE: return zg_xstrdup(sched_name(z->sched));
    case ZG_S_WARMUP_MIN_LR: return zg_num_text(z->warmup_min_lr);
    case ZG_S_WARMUP_MAX_LR: return zg_num_text(z->warmup_max_lr);
    case ZG_S_WARMUP_NUM_STEPS: return zg_fmt("%lld", (long long)z->warmup_num_steps_in);
    case ZG_S_WARMUP_TYPE: return zg_xstrdup(z->warmup_linear ? "linear" : "log");
    case ZG_S_TOTAL_NUM_STEPS: return zg_fmt("%lld", (long long)z->total_num_steps);
    case ZG_S_WARMUP_MIN_RATIO: return zg_num_text(z->warmup_min_ratio);
    case ZG_S_COS_MIN_RATIO: return zg_num_text(z->cos_min_ratio);
    case ZG_NS: break;
    }
    zg_unreachable();
}

/* ======================================================================= recording */
void zg_zero_mark(Ctx *c, const char *what, ZgLoc at)
{
    int s = setting_of(what);
    if (s >= 0) c->z->from[s] = (ZgFrom){ZG_FROM_CONFIG, NULL, at};
}

static ZgAutoKey *push_auto(ZgZero *z, ZgLoc at, const char *key, int setting, const char *text)
{
    z->autos = zg_xrealloc(z->autos, (size_t)(z->n_autos + 1) * sizeof *z->autos);
    z->autos[z->n_autos] = (ZgAutoKey){at, zg_xstrdup(key), setting, text};
    return &z->autos[z->n_autos++];
}

static void set_from(ZgZero *z, int s, ZgFromKind kind, const char *src, ZgLoc at)
{
    z->from[s] = (ZgFrom){kind, src, at};
}

/* The source of a value HF takes from TrainingArguments: the spec's key, else HF's default. */
static const char *spec_or_default(const ZgModel *m, ZgTrainArg ta, const char *dflt)
{
    return zg_train_arg_set(m, ta) ? zg_fmt("spec %s", zg_train_arg_name(ta))
                                   : zg_fmt("HF default %s; %s in the spec sets it", dflt, zg_train_arg_name(ta));
}

/* "auto" for a setting HF fills. */
static void fill(Ctx *c, int s, ZgLoc at)
{
    ZgZero *z = c->z;
    const ZgModel *m = c->m;
    const char *what = settings[s].key;
    bool spec = settings[s].ta >= 0 && zg_train_arg_set(m, (ZgTrainArg)settings[s].ta);
    const char *src = settings[s].ta >= 0 ? zg_fmt("spec %s", zg_train_arg_name((ZgTrainArg)settings[s].ta)) : NULL;
    switch (s) {
    case ZG_S_MICRO:
        if (spec) {
            z->micro_batch = m->train_micro_batch, z->micro_given = true, z->loc_micro = at;
            break;
        }
        z->batch_unresolved = true;
        zg_error(at, "%s is \"auto\" but the spec has no train.micro_batch_size", what);
        zg_note(at, "add train.micro_batch_size to the spec (HF's per_device_train_batch_size), or give a number here");
        return;
    case ZG_S_GAS:
        z->grad_accum = spec ? m->train_grad_accum : 1, z->gas_given = true, z->loc_gas = at;
        src = spec_or_default(m, ZG_TA_GAS, "1");
        break;
    case ZG_S_TB:
        /* without the spec's batch, check.c computes it as HF does (micro x accumulation x world size)
        ** once the world size is final, and names the arithmetic there */
        if (spec) z->train_batch_size = m->train_batch, z->tb_given = true, z->loc_tb = at;
        else src = NULL;
        break;
    case ZG_S_CLIP:
        z->gradient_clipping = spec ? m->train_max_grad_norm : 1.0;
        src = spec_or_default(m, ZG_TA_CLIP, "max_grad_norm 1.0");
        break;
    case ZG_S_BF16: c->bf16_auto = true, c->bf16_loc = at, src = NULL; break;   /* zg_zero_auto_finish */
    case ZG_S_FP16: c->fp16_auto = true, c->fp16_loc = at, src = NULL; break;
    case ZG_S_LR:
        if (spec) {
            z->lr = m->train_lr, c->lr_given = true;
            break;
        }
        zg_error(at, "%s is \"auto\" but the spec has no train.lr", what);
        zg_note(at, "add train.lr to the spec (HF's learning_rate), or give a number here");
        return;
    case ZG_S_BETAS:
        z->beta1 = spec ? m->train_beta1 : 0.9, z->beta2 = spec ? m->train_beta2 : 0.999;
        src = spec_or_default(m, ZG_TA_BETAS, "[0.9, 0.999]");
        break;
    case ZG_S_EPS:
        z->eps = spec ? m->train_eps : 1e-8;
        src = spec_or_default(m, ZG_TA_EPS, "1e-08");
        break;
    case ZG_S_WD:
        z->weight_decay = spec ? m->train_weight_decay : 0;
        src = spec_or_default(m, ZG_TA_WD, "0");
        break;
    case ZG_S_WARMUP_MIN_LR: z->warmup_min_lr = 0, src = "HF fills 0"; break;
    case ZG_S_WARMUP_MAX_LR: c->wmax_auto = true, z->warmup_max_lr_given = true, src = NULL; break;
    case ZG_S_WARMUP_NUM_STEPS:
        /* the schedule warms up over max(2, n) steps (DeepSpeed's WarmupLR), stored so as for a written n;
        ** said as filled */
        z->warmup_num_steps_in = spec ? m->train_warmup_steps : 0;
        z->warmup_num_steps = z->warmup_num_steps_in < 2 ? 2 : z->warmup_num_steps_in;
        src = spec_or_default(m, ZG_TA_WARMUP, "warmup_steps 0, not DeepSpeed's 1000");
        break;
    case ZG_S_TOTAL_NUM_STEPS:
        if (m->steps > 0) {
            z->total_num_steps = m->steps, c->total_given = true, src = "zgen --steps";
            break;
        }
        zg_error(at, "%s is \"auto\" but zgen was given no --steps", what);
        zg_note(at, "pass --steps N to zgen (the optimizer steps of the run: HF's max_steps), or write the "
                "number here");
        c->total_given = true;          /* one error for one missing number */
        return;
    default: zg_unreachable();
    }
    push_auto(z, at, what, s, NULL);
    set_from(z, s, ZG_FROM_AUTO, src, at);
}

void zg_zero_auto(Ctx *c, const char *what, const ZgKey *k, const ZgNode *v)
{
    ZgLoc at = v->loc;
    int s = setting_of(what);
    if (s >= 0 && hf_fills(s)) {
        fill(c, s, at);
        return;
    }
    /* HF sizes these from the hidden size; which of zgen's rules then applies needs the stage
    ** and the other keys (zg_zero_auto_finish) */
    bool *flag = !strcmp(what, "zero_optimization.reduce_bucket_size") ? &c->rbs_auto
               : !strcmp(what, "zero_optimization.stage3_prefetch_bucket_size") ? &c->prefetch_auto
               : !strcmp(what, "zero_optimization.stage3_param_persistence_threshold") ? &c->persist_auto : NULL;
    if (flag) {
        *flag = true;
        push_auto(c->z, at, what, -1, NULL);
        return;
    }
    zg_error(at, "%s cannot be \"auto\": Hugging Face's Trainer fills no value for it", what);
    if (k->def && k->type != ZG_KT_SECTION && k->type != ZG_KT_ANY)
        zg_note(at, "write the value you want, or remove the key for DeepSpeed's default (%s)", k->def);
    else
        zg_note(at, "write the value you want, or remove the key");
}

bool zg_zero_amp_auto(Ctx *c, const ZgNode *v)
{
    const ZgNode *en = v->kind == ZG_NMAP ? zg_node_get(v, "enabled") : NULL;
    if (!en || !zg_node_is_auto(en)) return false;
    push_auto(c->z, en->loc, "amp.enabled", -1,
              "false (HF's Trainer enables amp only for --fp16_backend apex; zgen has no Apex)");
    return true;
}

/* ======================================================================= after the walk */
static bool spec_dtype_is(const ZgModel *m, ZgDtype d)
{
    return zg_train_arg_set(m, ZG_TA_DTYPE) && m->train_dtype == d;
}

/* The spec's value of a setting, as zg_setting_text writes the run's. */
static char *spec_text(const ZgModel *m, ZgSetting s)
{
    switch (s) {
    case ZG_S_MICRO: return zg_fmt("%lld", (long long)m->train_micro_batch);
    case ZG_S_GAS: return zg_fmt("%lld", (long long)m->train_grad_accum);
    case ZG_S_TB: return zg_fmt("%lld", (long long)m->train_batch);
    case ZG_S_CLIP: return zg_num_text(m->train_max_grad_norm);
    case ZG_S_LR: case ZG_S_WARMUP_MAX_LR: return zg_num_text(m->train_lr);
    case ZG_S_BETAS: {
        char *a = zg_num_text(m->train_beta1), *b = zg_num_text(m->train_beta2), *r = zg_fmt("[%s, %s]", a, b);
        free(a), free(b);
        return r;
    }
    case ZG_S_EPS: return zg_num_text(m->train_eps);
    case ZG_S_WD: return zg_num_text(m->train_weight_decay);
    case ZG_S_WARMUP_NUM_STEPS: return zg_fmt("%lld", (long long)m->train_warmup_steps);
    default: zg_unreachable();
    }
}

static const char *leaf(const char *key)
{
    const char *d = strrchr(key, '.');
    return d ? d + 1 : key;
}

/* A spec train.* value the run does not use, because the config writes another or leaves the key to
** its default: a warning where the user can act. HF's Trainer refuses a written mismatch; zgen keeps
** the config's word (-c exists to run the spec with another config) and says so. */
void zg_zero_spec_unused(const ZgModel *m, const ZgZero *z, ZgSetting s)
{
    int ta = settings[s].ta;
    const ZgFrom *f = &z->from[s];
    if (ta < 0 || !zg_train_arg_set(m, (ZgTrainArg)ta) || f->kind == ZG_FROM_AUTO || f->kind == ZG_FROM_SPEC) return;
    char *have = zg_setting_text(z, s), *want = spec_text(m, s);
    const char *what = settings[s].key, *name = zg_train_arg_name((ZgTrainArg)ta);
    ZgLoc sat = m->loc_train[ta];
    if (!strcmp(have, want)) {
        /* the same number either way */
    } else if (f->kind == ZG_FROM_CONFIG) {
        zg_warn(f->at, "%s is %s here, not the spec's %s %s: the config's value is used", what, have, name, want);
        zg_note(f->at, "write \"auto\" to use the spec's value (HF's Trainer refuses such a mismatch)");
    } else {
        zg_warn(sat, "the spec's %s %s is not used: %s is %s (%s)", name, want, what, have,
                f->kind == ZG_FROM_DERIVED && f->src ? f->src : "the config leaves it out");
        zg_note(sat, "write \"%s\": \"auto\" in the config to use it", leaf(what));
    }
    free(have), free(want);
}

/* The spec's precision against the config's fp16/bf16 when neither says "auto". */
static void dtype_unused(Ctx *c)
{
    const ZgModel *m = c->m;
    ZgZero *z = c->z;
    if (!zg_train_arg_set(m, ZG_TA_DTYPE) || (c->bf16 && c->fp16)) return;    /* both: zero_rules.c's error */
    ZgDtype want = m->train_dtype, have = c->bf16 ? ZG_DTYPE_BF16 : c->fp16 ? ZG_DTYPE_FP16 : ZG_DTYPE_FP32;
    if (have == want) return;
    for (int i = 0; i < 2; i++) {
        int s = i ? ZG_S_FP16 : ZG_S_BF16;
        bool on = i ? c->fp16 : c->bf16, wants = want == (i ? ZG_DTYPE_FP16 : ZG_DTYPE_BF16);
        if (z->from[s].kind == ZG_FROM_CONFIG && on != wants) {
            zg_warn(z->from[s].at, "%s is %s here, not as the spec's train.dtype %s: the config's value is used",
                    settings[s].key, on ? "true" : "false", zg_dtype_name(want));
            zg_note(z->from[s].at, "write \"auto\" to use the spec's train.dtype (HF's Trainer refuses such a mismatch)");
            return;
        }
    }
    zg_warn(m->loc_train[ZG_TA_DTYPE], "the spec's train.dtype %s is not used: the config's precision is %s",
            zg_dtype_name(want), zg_dtype_name(have));
    zg_note(m->loc_train[ZG_TA_DTYPE], "write \"bf16\": {\"enabled\": \"auto\"} and \"fp16\": {\"enabled\": \"auto\"} in "
            "the config to use it");
}

/* After the walk: the spec's lr for a config without one (and, with no optimizer section at all, its
** betas, eps and weight decay: HF's Trainer then builds its AdamW from TrainingArguments); a warning
** for every other spec value the run does not use. The batch keys are judged by check.c once the
** world size has fixed them. */
static void spec_values(Ctx *c)
{
    ZgZero *z = c->z;
    const ZgModel *m = c->m;
    bool no_optimizer = z->from[ZG_S_OPT_TYPE].kind == ZG_FROM_DEFAULT;
    static const int opt[] = {ZG_S_LR, ZG_S_BETAS, ZG_S_EPS, ZG_S_WD};
    for (int i = 0; i < 4; i++) {
        int s = opt[i], ta = settings[s].ta;
        if (!zg_train_arg_set(m, (ZgTrainArg)ta) || z->from[s].kind != ZG_FROM_DEFAULT || (s != ZG_S_LR && !no_optimizer))
            continue;
        if (s == ZG_S_LR) z->lr = m->train_lr, c->lr_given = true;
        else if (s == ZG_S_BETAS) z->beta1 = m->train_beta1, z->beta2 = m->train_beta2;
        else if (s == ZG_S_EPS) z->eps = m->train_eps;
        else z->weight_decay = m->train_weight_decay;
        set_from(z, s, ZG_FROM_SPEC, zg_fmt("spec %s", zg_train_arg_name((ZgTrainArg)ta)), z->from[s].at);
    }
    for (int i = 0; i < 4; i++) zg_zero_spec_unused(m, z, (ZgSetting)opt[i]);
    zg_zero_spec_unused(m, z, ZG_S_CLIP);
    if (z->from[ZG_S_WARMUP_MAX_LR].kind == ZG_FROM_CONFIG && z->sched != ZG_SCHED_WARMUP_COSINE)
        zg_zero_spec_unused(m, z, ZG_S_WARMUP_MAX_LR);
    /* warmup: as written (DeepSpeed's max(2, n) is applied later) */
    if (zg_train_arg_set(m, ZG_TA_WARMUP) && z->from[ZG_S_WARMUP_NUM_STEPS].kind != ZG_FROM_AUTO) {
        const ZgFrom *f = &z->from[ZG_S_WARMUP_NUM_STEPS];
        ZgLoc sat = m->loc_train[ZG_TA_WARMUP];
        long long want = (long long)m->train_warmup_steps;
        if (z->sched == ZG_SCHED_NONE) {
            zg_warn(sat, "the spec's train.warmup_steps %lld is not used: the config has no scheduler", want);
            zg_note(sat, "add a scheduler (e.g. WarmupLR) with \"warmup_num_steps\": \"auto\" to use it");
        } else if (f->kind == ZG_FROM_CONFIG && z->warmup_num_steps_in != want) {
            zg_warn(f->at, "scheduler.params.warmup_num_steps is %lld here, not the spec's train.warmup_steps %lld: "
                    "the config's value is used", (long long)z->warmup_num_steps_in, want);
            zg_note(f->at, "write \"auto\" to use the spec's value (HF's Trainer refuses such a mismatch)");
        } else if (f->kind == ZG_FROM_DEFAULT && z->warmup_num_steps != want) {
            zg_warn(sat, "the spec's train.warmup_steps %lld is not used: the config leaves warmup_num_steps out "
                    "(DeepSpeed's default %lld)", want, (long long)z->warmup_num_steps);
            zg_note(sat, "write \"warmup_num_steps\": \"auto\" in the config's scheduler.params to use it");
        }
    }
    const ZgFrom *f = &z->from[ZG_S_TOTAL_NUM_STEPS];
    if (m->steps > 0 && f->kind == ZG_FROM_CONFIG && z->total_num_steps != m->steps) {
        zg_warn(f->at, "scheduler.params.total_num_steps is %lld here, not zgen --steps %lld: the config's value "
                "is used", (long long)z->total_num_steps, (long long)m->steps);
        zg_note(f->at, "write \"auto\" to use --steps (HF's Trainer refuses such a mismatch)");
    }
}

static const char *dtype_src(const ZgModel *m, const char *flag)
{
    return zg_train_arg_set(m, ZG_TA_DTYPE) ? zg_fmt("spec train.dtype %s", zg_dtype_name(m->train_dtype))
                                            : zg_fmt("HF default: no %s; train.dtype in the spec sets it", flag);
}

/* What the sizing keys' "auto" became (HF: reduce_bucket_size d^2; at stage 3 also
** stage3_prefetch_bucket_size 0.9 d^2 and stage3_param_persistence_threshold 10 d). */
static void sizing(Ctx *c)
{
    ZgZero *z = c->z;
    int64_t d = c->m->d_model;
    for (int i = 0; i < z->n_autos; i++) {
        ZgAutoKey *a = &z->autos[i];
        if (a->setting >= 0 || a->text) continue;
        if (!strcmp(a->key, "zero_optimization.reduce_bucket_size"))
            a->text = z->stage >= 2
                ? zg_fmt("sized by zgen from the model (plan.txt \"sizes zgen chose\"; HF would write d_model^2 = %lld)",
                         (long long)(d * d))
                : zg_fmt("DeepSpeed's default 5e8 (stages 0 and 1 reduce in place; HF would write d_model^2 = %lld)",
                         (long long)(d * d));
        else if (z->stage != 3)
            a->text = "unused below stage 3 (HF fills it at stage 3 only)";
        else if (!strcmp(a->key, "zero_optimization.stage3_param_persistence_threshold")) {
            z->param_persistence_threshold = 10 * d;
            a->text = zg_fmt("%lld (HF's 10 x d_model)", (long long)(10 * d));
        } else if (z->sizes_set & ZG_SET_MAX_LIVE) {
            /* zgen sizes the prefetch only with both prefetch keys left to it; HF's rule otherwise,
            ** rounded down as DeepSpeed's integer field needs */
            z->prefetch_bucket_size = (int64_t)(0.9 * (double)d * (double)d);
            z->sizes_set |= ZG_SET_PREFETCH;
            a->text = zg_fmt("%lld (HF's 0.9 x d_model^2, rounded down)", (long long)z->prefetch_bucket_size);
        } else
            a->text = zg_fmt("sized by zgen from the model with stage3_max_live_parameters (plan.txt \"sizes "
                             "zgen chose\"; HF would write 0.9 x d_model^2 = %lld)",
                             (long long)(0.9 * (double)d * (double)d));
    }
}

void zg_zero_auto_finish(Ctx *c)
{
    ZgZero *z = c->z;
    const ZgModel *m = c->m;
    spec_values(c);
    /* HF: bf16.enabled <- --bf16, fp16.enabled <- --fp16 (amp backend); here the spec's train.dtype */
    if (c->bf16_auto) {
        c->bf16 = spec_dtype_is(m, ZG_DTYPE_BF16);
        z->from[ZG_S_BF16].src = dtype_src(m, "--bf16");
    }
    if (c->fp16_auto) {
        c->fp16 = spec_dtype_is(m, ZG_DTYPE_FP16);
        z->from[ZG_S_FP16].src = dtype_src(m, "--fp16");
    }
    dtype_unused(c);
    /* HF: warmup_max_lr <- learning_rate, which in zgen is the optimizer's lr wherever it came from */
    if (c->wmax_auto) {
        z->warmup_max_lr = z->lr;
        z->from[ZG_S_WARMUP_MAX_LR].src = z->from[ZG_S_LR].kind == ZG_FROM_CONFIG ? "the optimizer's lr"
                                          : z->from[ZG_S_LR].kind == ZG_FROM_DEFAULT ? "the optimizer's lr (its default)"
                                          : "the optimizer's lr, spec train.lr";
    } else if (!z->warmup_max_lr_given && z->sched == ZG_SCHED_WARMUP) {
        z->warmup_max_lr = z->lr;
        set_from(z, ZG_S_WARMUP_MAX_LR, ZG_FROM_DERIVED, "WarmupLR peaks at the optimizer's lr", z->loc_sched);
    }
    if (c->rbs_auto || c->prefetch_auto || c->persist_auto) sizing(c);
}

/* ======================================================================= the lines zgen prints */
void zg_zero_print_auto(const ZgZero *z, FILE *f)
{
    for (int i = 0; i < z->n_autos; i++) {
        const ZgAutoKey *a = &z->autos[i];
        char *v = a->setting >= 0 ? zg_setting_text(z, (ZgSetting)a->setting) : NULL;
        const char *src = a->setting >= 0 ? z->from[a->setting].src : NULL;
        fprintf(f, "zgen: %s:%d: %s: \"auto\" -> %s%s%s%s\n", a->at.file ? a->at.file : "?", a->at.line,
                a->key, v ? v : a->text ? a->text : "?", src ? " (" : "", src ? src : "", src ? ")" : "");
        free(v);
    }
}
