/*
** zero.c — a DeepSpeed config (JSON or YAML file, or the spec's inline `deepspeed:` mapping) -> ZgZero.
**
** The config is walked against the key table (zero_keys.c): every key is found or reported as
** unknown with a suggestion (a typo in the same section, the same name in another section, or an
** invented key we know the real spelling of). Supported keys take effect with DeepSpeed's code
** defaults; recognised ones zgen cannot honour are errors naming what to do, or warnings when
** ignoring them is harmless. Semantic rules DeepSpeed itself enforces (offload_param needs stage 3,
** fp16 and bf16 not both, ...) and the nvme_path checks are in zero_rules.c, run after the walk; "auto"
** (Hugging Face's Trainer's placeholder) is filled in zero_auto.c; batch arithmetic, which needs the
** final world size, is in check.c. Every error is reported; nothing stops at the first.
*/
#include "zg.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zero_int.h"

void zg_zero_defaults(ZgZero *z)
{
    memset(z, 0, sizeof *z);
    z->stage = 0;
    z->dtype = ZG_DTYPE_FP32;
    z->comm_dtype = ZG_DTYPE_FP32;
    z->loss_scale = 0;
    z->initial_scale_power = 16;
    z->loss_scale_window = 1000;
    z->hysteresis = 2;
    z->consecutive_hysteresis = false;
    z->min_loss_scale = 1;
    z->gradient_clipping = 1.0;
    z->optimizer = "adamw";
    z->lr = 1e-3;
    z->beta1 = 0.9;
    z->beta2 = 0.999;
    z->eps = 1e-8;
    z->weight_decay = 0;
    z->adam_w_mode = true;
    z->bias_correction = true;
    z->sched = ZG_SCHED_NONE;
    z->warmup_min_lr = 0;
    z->warmup_max_lr = 1e-3;
    z->warmup_num_steps = z->warmup_num_steps_in = 1000;
    z->warmup_linear = false;
    z->warmup_min_ratio = 0;
    z->cos_min_ratio = 1e-4;
    z->total_num_steps = 0;
    z->contiguous_gradients = true;
    z->reduce_scatter = true;
    z->overlap_comm = false;            /* stage 0-2; stage 3 turns it on unless set */
    z->reduce_bucket_size = 500000000;
    z->allgather_bucket_size = 500000000;
    z->sub_group_size = 1000000000;
    z->prefetch_bucket_size = 50000000;
    z->param_persistence_threshold = 100000;
    z->model_persistence_threshold = INT64_MAX;
    z->max_live_parameters = 1000000000;
    z->max_reuse_distance = 1000000000;
    z->offload_param = (ZgOffloadCfg){.device = ZG_OFFLOAD_NONE, .pin_memory = true,
                                      .buffer_count = 5, .buffer_size = 100000000,
                                      .max_in_cpu = 1000000000, .ratio = 1.0};
    z->offload_optimizer = (ZgOffloadCfg){.device = ZG_OFFLOAD_NONE, .pin_memory = true,
                                          .buffer_count = 4, .ratio = 1.0};
    z->aio_block_size = 1048576;
    z->aio_queue_depth = 8;
    z->aio_intra_op_parallelism = 1;
    z->aio_single_submit = false;
    z->aio_overlap_events = true;
}

/* ======================================================================= lookup and suggestions */
static const ZgKey *find_key(const char *section, const char *name)
{
    for (int i = 0; i < zg_zero_nkeys; i++)
        if (!strcmp(zg_zero_keys[i].section, section) && !strcmp(zg_zero_keys[i].name, name))
            return &zg_zero_keys[i];
    return NULL;
}

static char *full_name(const char *section, const char *name)
{
    return section[0] ? zg_fmt("%s.%s", section, name) : zg_xstrdup(name);
}

/* ======================================================================= values */
typedef struct Val {
    bool b;
    int64_t i;
    double d;
    const char *s;
    double pair[2];
} Val;

static bool parse_val(const ZgKey *k, const ZgNode *v, const char *what, Val *out)
{
    switch (k->type) {
    case ZG_KT_BOOL: return zg_node_bool(v, what, &out->b);
    case ZG_KT_INT: {
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        if (k->min != 0 || k->max != 0) {
            lo = (int64_t)k->min;
            hi = k->max >= 1e18 ? INT64_MAX : (int64_t)k->max;     /* BIG: no upper bound */
        }
        return zg_node_int(v, what, lo, hi, &out->i);
    }
    case ZG_KT_NUM: {
        double lo = -INFINITY, hi = INFINITY;
        if (k->min != 0 || k->max != 0) lo = k->min, hi = k->max >= 1e18 ? INFINITY : k->max;
        return zg_node_num(v, what, lo, hi, &out->d);
    }
    case ZG_KT_STR:
        if (!zg_node_str(v, what, &out->s)) return false;
        /* scheduler.params use `choices` for the schedulers taking the key */
        if (k->choices && strcmp(k->section, "scheduler.params") != 0) {
            size_t n = strlen(out->s);
            for (const char *c = k->choices; c;) {
                const char *bar = strchr(c, '|');
                size_t cl = bar ? (size_t)(bar - c) : strlen(c);
                if (cl == n && !strncmp(c, out->s, n)) return true;
                c = bar ? bar + 1 : NULL;
            }
            zg_error(v->loc, "%s must be one of %s, not '%s'", what, k->choices, out->s);
            return false;
        }
        return true;
    case ZG_KT_PATH:
        if (!zg_node_str(v, what, &out->s)) return false;
        if (!zg_path_is_sane(out->s)) {
            zg_error(v->loc, "%s '%s' is not a usable path", what, out->s);
            zg_note(v->loc, "use a path without spaces, quotes, '$', backslashes or control characters");
            return false;
        }
        return true;
    case ZG_KT_PAIR:
        if (v->kind != ZG_NSEQ || v->n != 2) {
            zg_error(v->loc, "%s must be a list of two numbers, e.g. [0.9, 0.999]", what);
            return false;
        }
        return zg_node_num(v->vals[0], what, k->min, k->max, &out->pair[0]) &&
               zg_node_num(v->vals[1], what, k->min, k->max, &out->pair[1]);
    case ZG_KT_SECTION:
    case ZG_KT_ANY: return true;
    }
    return false;
}

/* Keys whose range in zgen is narrower than in DeepSpeed's config model, and why: said after the
** range error, so the user knows DeepSpeed would take the value (docs/CONFIG.md "Value ranges"). */
static const struct { const char *key, *why; } stricter[] = {
    {"gradient_clipping", "DeepSpeed accepts a negative value and clips only above 0; zgen asks for 0 to "
     "mean off"},
    {"fp16.initial_scale_power", "DeepSpeed accepts any integer; zgen keeps the starting scale 2^power a "
     "finite fp32 number no larger than 2^62 (fp16 overflows at 65504, so a larger start only skips steps)"},
    {"fp16.loss_scale_window", "DeepSpeed's model accepts it, but its scaler divides by the window; zgen "
     "needs at least 1 clean step between raises"},
    {"fp16.hysteresis", "DeepSpeed's model accepts it; zgen counts overflows down from it and needs at "
     "least 1 (1 = lower the scale at the first overflow)"},
    {"aio.block_size", "DeepSpeed accepts any integer; zgen aligns every NVMe transfer to it, and O_DIRECT "
     "needs whole 512-byte sectors"},
    {"aio.queue_depth", "DeepSpeed accepts any integer; zgen sizes its io_uring submission queue with it"},
    {"aio.intra_op_parallelism", "DeepSpeed accepts any integer; zgen splits each transfer that many ways "
     "and needs at least 1"},
    {"optimizer.params.lr", "torch's Adam, which DeepSpeed builds, refuses a negative lr too"},
    {"optimizer.params.eps", "torch's Adam, which DeepSpeed builds, refuses a negative eps too"},
    {"optimizer.params.weight_decay", "torch's Adam, which DeepSpeed builds, refuses a negative weight_decay too"},
};

static void why_stricter(const char *what, ZgLoc at)
{
    for (size_t i = 0; i < sizeof stricter / sizeof *stricter; i++)
        if (!strcmp(stricter[i].key, what)) zg_note(at, "%s", stricter[i].why);
}

/* Does the value differ from the key's DeepSpeed default? (def NULL = None: any value differs) */
static bool differs(const ZgKey *k, const Val *v)
{
    if (!k->def) return true;
    Val d = {0};
    switch (k->type) {
    case ZG_KT_BOOL: return v->b != !strcmp(k->def, "true");
    case ZG_KT_INT: return zg_parse_int64(k->def, &d.i) && v->i != d.i;
    case ZG_KT_NUM: return zg_parse_double(k->def, &d.d) && v->d != d.d;
    case ZG_KT_STR: case ZG_KT_PATH: return strcmp(v->s, k->def) != 0;
    default: return true;
    }
}

static const char *val_text(const ZgNode *v)
{
    return v->kind == ZG_NSCALAR ? v->scalar : zg_node_kind_name(v);
}

/* A feature section (ZG_KT_ANY) is off when absent, false, or a mapping with enabled: false. */
static bool feature_off(const ZgNode *v)
{
    if (zg_node_is_null(v)) return true;
    if (v->kind == ZG_NSCALAR) return !strcmp(v->scalar, "false");
    const ZgNode *en = zg_node_get(v, "enabled");
    return v->kind == ZG_NMAP && en && en->kind == ZG_NSCALAR && !strcmp(en->scalar, "false");
}

static void store(ZgZero *z, const ZgKey *k, const Val *v)
{
    char *p = (char *)z + k->off;
    switch (k->store) {
    case 'b': *(bool *)p = v->b; break;
    case 'i': *(int *)p = (int)v->i; break;
    case 'l': *(int64_t *)p = v->i; break;
    case 'd': *(double *)p = k->type == ZG_KT_INT ? (double)v->i : v->d; break;
    default: zg_unreachable();
    }
}

/* ======================================================================= keys handled by name */
static ZgOffloadCfg *offload_of(Ctx *c, const char *section, int *which)
{
    *which = strstr(section, "offload_param") ? 0 : 1;
    return *which == 0 ? &c->z->offload_param : &c->z->offload_optimizer;
}

static void special(Ctx *c, const char *section, const ZgKey *k, const ZgNode *v, const Val *x,
                    ZgLoc kat)
{
    ZgZero *z = c->z;
    const char *n = k->name;
    if (!section[0]) {
        if (!strcmp(n, "train_batch_size")) z->train_batch_size = x->i, z->tb_given = true, z->loc_tb = kat;
        else if (!strcmp(n, "train_micro_batch_size_per_gpu")) z->micro_batch = x->i, z->micro_given = true, z->loc_micro = kat;
        else if (!strcmp(n, "gradient_accumulation_steps")) z->grad_accum = x->i, z->gas_given = true, z->loc_gas = kat;
        else if (!strcmp(n, "communication_data_type")) c->comm = x->s, c->comm_loc = v->loc;
        else if (!strcmp(n, "gradient_allreduce_op")) {
            if (!strcmp(x->s, "sum")) c->sum_op = true, c->sum_loc = v->loc;
        } else zg_unreachable();
    } else if (!strcmp(section, "zero_optimization")) {
        if (!strcmp(n, "stage")) z->stage = (int)x->i, z->loc_stage = v->loc;
        else if (!strcmp(n, "allgather_bucket_size")) {
            z->allgather_bucket_size = x->i;
            if (x->i % 2) {
                zg_error(v->loc, "zero_optimization.allgather_bucket_size must be even, not %lld",
                         (long long)x->i);
                zg_note(v->loc, "DeepSpeed asserts this (16-bit buckets are gathered in 4-byte units)");
            }
        } else if (!strcmp(n, "overlap_comm")) z->overlap_comm = x->b, c->overlap_set = true;
        else zg_unreachable();
    } else if (!strncmp(section, "zero_optimization.offload_", 26)) {
        int w;
        ZgOffloadCfg *o = offload_of(c, section, &w);
        if (!strcmp(n, "device")) {
            o->device = !strcmp(x->s, "cpu") ? ZG_OFFLOAD_CPU : !strcmp(x->s, "nvme") ? ZG_OFFLOAD_NVME
                                                                                    : ZG_OFFLOAD_NONE;
            o->loc_device = v->loc;
        } else if (!strcmp(n, "nvme_path")) o->nvme_path = x->s, c->nvme_set[w] = true, c->nvme_loc[w] = v->loc;
        else if (!strcmp(n, "buffer_count")) {
            /* DeepSpeed's model takes any count >= 0; the buffers exist only with device nvme, so
            ** the minimum is checked in semantic() once the device is known. */
            o->buffer_count = x->i;
            c->bc_loc[w] = v->loc;
        } else if (!strcmp(n, "ratio")) o->ratio = x->d, c->ratio_loc = v->loc;
        else zg_unreachable();
    } else if (!strcmp(section, "fp16") || !strcmp(section, "bf16")) {
        if (section[0] == 'f') c->fp16 = x->b, c->fp16_loc = v->loc;
        else c->bf16 = x->b, c->bf16_loc = v->loc;
    } else if (!strcmp(section, "optimizer.params")) {
        if (!strcmp(n, "lr")) z->lr = x->d, c->lr_given = true;
        else if (!strcmp(n, "betas")) {
            z->beta1 = x->pair[0], z->beta2 = x->pair[1];
            if (x->pair[0] >= 1 || x->pair[1] >= 1) {
                zg_error(v->loc, "optimizer.params.betas must be below 1, not [%g, %g]", x->pair[0], x->pair[1]);
                zg_note(v->loc, "Adam's moments never forget with a beta of 1 and bias correction divides by "
                        "1 - beta^t; DeepSpeed builds the optimizer with them and torch's Adam refuses them too");
            }
        } else if (!strcmp(n, "adam_w_mode")) z->adam_w_mode = x->b;
        else if (!strcmp(n, "bias_correction")) z->bias_correction = x->b;
        else if (!strcmp(n, "max_grad_norm")) {
            zg_error(kat, "optimizer.params.max_grad_norm is not accepted (DeepSpeed rejects it too)");
            zg_note(kat, "set the top-level \"gradient_clipping\": %s instead", val_text(v));
        } else zg_unreachable();
    } else if (!strcmp(section, "scheduler.params")) {
        if (!strcmp(n, "warmup_min_lr")) z->warmup_min_lr = x->d;
        else if (!strcmp(n, "warmup_max_lr")) z->warmup_max_lr = x->d, z->warmup_max_lr_given = true;
        else if (!strcmp(n, "warmup_num_steps")) {
            z->warmup_num_steps = z->warmup_num_steps_in = x->i;
            if (x->i < 2) {
                /* DeepSpeed clamps with max(2, n): log warmup divides by ln(n). */
                zg_warn(v->loc, "warmup_num_steps %lld is raised to 2, as DeepSpeed does", (long long)x->i);
                z->warmup_num_steps = 2;
            }
        } else if (!strcmp(n, "warmup_type")) {
            if (!strcmp(x->s, "linear")) z->warmup_linear = true;
            else if (!strcmp(x->s, "log")) z->warmup_linear = false;
            else zg_error(v->loc, "scheduler.params.warmup_type must be log or linear, not '%s'", x->s);
        } else if (!strcmp(n, "total_num_steps")) z->total_num_steps = x->i, c->total_given = true;
        else if (!strcmp(n, "warmup_min_ratio")) z->warmup_min_ratio = x->d;
        else if (!strcmp(n, "cos_min_ratio")) z->cos_min_ratio = x->d;
        else zg_unreachable();
    } else if (!strcmp(section, "compile")) {
        if (!strcmp(n, "deepcompile") && x->b)
            zg_warn(kat, "compile.deepcompile has nothing to turn on in zgen: the gathers, releases, prefetches "
                    "and reductions DeepCompile schedules from a traced graph are planned ahead of time "
                    "(plan.txt)");
    } else if (!strcmp(section, "optimizer") || !strcmp(section, "scheduler")) {
        /* type: read before the walk (read_types) */
    } else {
        zg_unreachable();
    }
}

/* The ZG_SET_* bit of a sizing key the planner sizes itself when the config leaves it out. */
static unsigned size_key_bit(const char *what)
{
    static const struct { const char *key; unsigned bit; } keys[] = {
        {"zero_optimization.reduce_bucket_size", ZG_SET_REDUCE_BUCKET},
        {"zero_optimization.stage3_prefetch_bucket_size", ZG_SET_PREFETCH},
        {"zero_optimization.stage3_max_live_parameters", ZG_SET_MAX_LIVE},
        {"zero_optimization.sub_group_size", ZG_SET_SUB_GROUP},
        {"zero_optimization.offload_param.buffer_count", ZG_SET_PARAM_BUF_COUNT},
        {"zero_optimization.offload_param.buffer_size", ZG_SET_PARAM_BUF_SIZE},
        {"zero_optimization.offload_optimizer.buffer_count", ZG_SET_OPT_BUF_COUNT},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(what, keys[i].key)) return keys[i].bit;
    return 0;
}

/* ======================================================================= the walk */
static void walk(Ctx *c, const ZgNode *map, const char *section);

static void value(Ctx *c, const char *section, const ZgKey *k, const ZgNode *v, ZgLoc kat)
{
    char *what = full_name(section, k->name);
    Val x = {0};
    if (k->type == ZG_KT_SECTION) {
        if (zg_node_is_null(v)) goto done;
        if (v->kind != ZG_NMAP) {
            zg_error(v->loc, "%s must be a mapping, not %s", what, zg_node_kind_name(v));
            goto done;
        }
        if (!strcmp(what, "zero_optimization.offload_param")) c->z->offload_param.loc = kat;
        if (!strcmp(what, "zero_optimization.offload_optimizer")) c->z->offload_optimizer.loc = kat;
        if (!strcmp(what, "scheduler")) c->z->loc_sched = kat;
        walk(c, v, what);
        goto done;
    }
    if (!strcmp(section, "scheduler.params") && c->sched && k->choices && !strstr(k->choices, c->sched)) {
        zg_error(kat, "scheduler %s takes no parameter '%s'", c->sched, k->name);
        zg_note(kat, "'%s' belongs to %s; DeepSpeed would fail with a TypeError", k->name, k->choices);
        goto done;
    }
    if (zg_node_is_auto(v)) {
        zg_zero_auto(c, what, k, v);
        goto done;
    }
    if (k->type == ZG_KT_ANY) {
        if (!strcmp(what, "amp") && zg_zero_amp_auto(c, v)) goto done;
        if (!feature_off(v) && k->support == ZG_KS_IGNORED)
            zg_warn(kat, "'%s' is ignored by zgen: %s", what, k->why);
        else if (!feature_off(v) && k->support == ZG_KS_UNSUPPORTED) {
            zg_error(kat, "zgen does not support '%s'", what);
            zg_note(kat, "%s", k->why);
        }
        goto done;
    }
    if (zg_node_is_null(v)) {
        if (!k->def) goto done;             /* None is the default */
        zg_error(v->loc, "%s must not be null (DeepSpeed's default is %s); remove the key to get it",
                 what, k->def);
        goto done;
    }
    if (!strcmp(k->name, "nvme_path")) {
        /* present, even if malformed: "needs nvme_path" would be a second error for one mistake */
        int w;
        offload_of(c, section, &w);
        c->nvme_set[w] = true;
        c->nvme_loc[w] = v->loc;
    }
    if (!parse_val(k, v, what, &x)) {
        double d;
        if (v->kind == ZG_NSCALAR && zg_parse_double(v->scalar, &d)) why_stricter(what, v->loc);
        goto done;
    }
    if (!strcmp(what, "zero_optimization.sub_group_size")) c->z->loc_sub_group_size = v->loc;
    zg_zero_mark(c, what, v->loc);
    c->z->sizes_set |= size_key_bit(what);
    switch (k->support) {
    case ZG_KS_SUPPORTED:
        if (k->store) store(c->z, k, &x);
        else special(c, section, k, v, &x, kat);
        break;
    case ZG_KS_ACCEPTED: break;
    case ZG_KS_IGNORED:
        if (differs(k, &x)) zg_warn(kat, "'%s' is ignored by zgen: %s", what, k->why);
        break;
    case ZG_KS_UNSUPPORTED:
        if (differs(k, &x)) {
            zg_error(v->loc, "zgen does not support %s = %s", what, val_text(v));
            zg_note(v->loc, "%s", k->why);
        }
        break;
    default: zg_unreachable();
    }
done:
    free(what);
}

/* Deprecated zero_optimization booleans with a section as replacement. */
static void old_offload(Ctx *c, const char *name, const ZgNode *v, ZgLoc kat)
{
    bool on;
    if (!zg_node_bool(v, name, &on)) return;
    ZgZero *z = c->z;
    if (!strcmp(name, "cpu_offload") && on) z->offload_optimizer.device = ZG_OFFLOAD_CPU, z->offload_optimizer.loc = z->offload_optimizer.loc_device = kat;
    if (!strcmp(name, "cpu_offload_param") && on) z->offload_param.device = ZG_OFFLOAD_CPU, z->offload_param.loc = z->offload_param.loc_device = kat;
    if (!strcmp(name, "cpu_offload_use_pin_memory")) z->offload_param.pin_memory = z->offload_optimizer.pin_memory = on;
}

/* Errors one config may report: past this, each further one (an unknown key costs a "did you mean"
** search of the whole key table) only buries the first ones, and a hostile file has thousands. */
#define MAX_REPORTED 100

static void walk(Ctx *c, const ZgNode *map, const char *section)
{
    for (int i = 0; i < map->n; i++) {
        if (zg_error_count() >= MAX_REPORTED) {
            if (!c->stopped)
                zg_note(map->key_locs[i], "stopping after %d errors; fix these first", MAX_REPORTED);
            c->stopped = true;
            return;
        }
        const char *name = map->keys[i];
        const ZgNode *v = map->vals[i];
        ZgLoc kat = map->key_locs[i];
        const ZgKey *k = find_key(section, name);
        if (!k) {
            zg_zero_unknown_key(section, name, kat);
            continue;
        }
        if (k->support == ZG_KS_ALIAS || k->support == ZG_KS_DEPRECATED) {
            int other = zg_node_index(map, k->alias);
            char *what = full_name(section, name);
            if (other >= 0) {
                zg_error(kat, "both '%s' and '%s' are set", what, k->alias);
                zg_note(map->key_locs[other], "'%s' is %s of '%s'; keep only '%s' (DeepSpeed refuses both too)",
                        name, k->support == ZG_KS_ALIAS ? "another spelling" : "the deprecated form",
                        k->alias, k->alias);
                free(what);
                continue;
            }
            if (k->support == ZG_KS_DEPRECATED) zg_warn(kat, "'%s' is deprecated: %s", what, k->why);
            free(what);
            if (!strncmp(name, "cpu_offload", 11)) {
                old_offload(c, name, v, kat);
                continue;
            }
            k = find_key(section, k->alias);
            if (!k) zg_unreachable();
        }
        value(c, section, k, v, kat);
    }
}

/* ======================================================================= optimizer and scheduler */
static const char *const ds_optimizers[] = {
    "lamb", "onebitadam", "zerooneadam", "onebitlamb", "adagrad", "lion", "muon", "muadam",
    "muadamw", "musgd",
};

/* Checks optimizer.type; true when zgen runs it (adam, adamw). */
static bool read_optimizer_type(Ctx *c, const ZgNode *sec)
{
    const ZgNode *t = zg_node_get(sec, "type");
    if (!t) {
        zg_error(sec->loc, "optimizer has no 'type'");
        zg_note(sec->loc, "zgen runs \"AdamW\" or \"Adam\"");
        return false;
    }
    const char *s;
    if (!zg_node_str(t, "optimizer.type", &s)) return false;
    if (zg_node_is_auto(t)) {
        zg_error(t->loc, "optimizer.type cannot be \"auto\": Hugging Face's Trainer fills no value for it");
        zg_note(t->loc, "zgen runs \"AdamW\" or \"Adam\"");
        return false;
    }
    char *low = zg_xstrdup(s);
    for (char *p = low; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    if (!strcmp(low, "adam") || !strcmp(low, "adamw")) {
        c->z->optimizer = low;
        zg_zero_mark(c, "optimizer.type", t->loc);
        return true;
    }
    bool builtin = false;
    for (size_t i = 0; i < sizeof ds_optimizers / sizeof *ds_optimizers; i++)
        builtin |= !strcmp(low, ds_optimizers[i]);
    if (builtin) {
        zg_error(t->loc, "zgen does not support optimizer '%s'", s);
        if (!strncmp(low, "onebit", 6) || !strcmp(low, "zerooneadam"))
            zg_note(t->loc, "1-bit optimizers also need ZeRO off in DeepSpeed; zgen supports Adam and AdamW only");
        else zg_note(t->loc, "zgen supports Adam and AdamW (DeepSpeed semantics); use \"AdamW\"");
    } else {
        const char *cands[] = {"Adam", "AdamW"};
        const char *sug = zg_suggest(s, cands, 2);
        zg_error(t->loc, "unknown optimizer type '%s'%s", s,
                 sug ? "" : " (DeepSpeed would look for torch.optim.<type>)");
        if (sug) zg_note(t->loc, "did you mean '%s'?", sug);
        else zg_note(t->loc, "zgen supports Adam and AdamW");
    }
    free(low);
    return false;
}

static bool read_scheduler_type(Ctx *c, const ZgNode *sec)
{
    static const char *const ok[] = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
    const ZgNode *t = zg_node_get(sec, "type");
    if (!t) {
        zg_error(sec->loc, "scheduler has no 'type'");
        zg_note(sec->loc, "zgen runs WarmupLR, WarmupDecayLR or WarmupCosineLR");
        return false;
    }
    const char *s;
    if (!zg_node_str(t, "scheduler.type", &s)) return false;
    if (zg_node_is_auto(t)) {
        zg_error(t->loc, "scheduler.type cannot be \"auto\": Hugging Face's Trainer fills no value for it");
        zg_note(t->loc, "zgen runs WarmupLR, WarmupDecayLR or WarmupCosineLR");
        return false;
    }
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, ok[i])) {
            c->sched = ok[i];
            zg_zero_mark(c, "scheduler.type", t->loc);
            c->z->sched = i == 0 ? ZG_SCHED_WARMUP : i == 1 ? ZG_SCHED_WARMUP_DECAY : ZG_SCHED_WARMUP_COSINE;
            return true;
        }
    if (!strcmp(s, "OneCycle") || !strcmp(s, "LRRangeTest")) {
        zg_error(t->loc, "zgen does not support scheduler '%s'", s);
        zg_note(t->loc, "zgen runs WarmupLR, WarmupDecayLR or WarmupCosineLR");
        return false;
    }
    const char *sug = zg_suggest(s, ok, 3);
    zg_error(t->loc, "unknown scheduler type '%s'", s);
    if (sug) zg_note(t->loc, "did you mean '%s'?", sug);
    else zg_note(t->loc, "zgen runs WarmupLR, WarmupDecayLR or WarmupCosineLR "
                         "(DeepSpeed would look in torch.optim.lr_scheduler)");
    return false;
}

/* The optimizer/scheduler sections are walked only when their type is one zgen runs: the params of
** other types are theirs, and reporting them as unknown would bury the real error. */
static void walk_top(Ctx *c, const ZgNode *root)
{
    for (int i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        const ZgNode *v = root->vals[i];
        bool opt = !strcmp(k, "optimizer"), sch = !strcmp(k, "scheduler");
        if ((opt || sch) && v->kind == ZG_NMAP) {
            bool ok = opt ? read_optimizer_type(c, v) : read_scheduler_type(c, v);
            if (sch) c->z->loc_sched = root->key_locs[i];
            if (ok) walk(c, v, k);
            continue;
        }
        ZgNode one = {.kind = ZG_NMAP, .loc = root->loc, .n = 1, .keys = &root->keys[i],
                      .key_locs = &root->key_locs[i], .vals = &root->vals[i]};
        /* Alias partner check needs the whole map: do it here for bfloat16. */
        if (!strcmp(k, "bfloat16") && zg_node_index(root, "bf16") >= 0) {
            zg_error(root->key_locs[i], "both 'bfloat16' and 'bf16' are set");
            zg_note(root->key_locs[i], "they are the same section; keep only 'bf16'");
            continue;
        }
        walk(c, &one, "");
    }
}

/* ======================================================================= entry points */
bool zg_zero_load_node(const ZgNode *root, const char *file, const ZgModel *m, ZgZero *z)
{
    int before = zg_error_count();
    zg_zero_defaults(z);
    z->path = file;
    if (!root) return false;
    z->loc_root = root->loc;
    z->loc_tb = z->loc_micro = z->loc_gas = z->loc_sched = z->loc_stage = z->loc_batch = root->loc;
    z->loc_sub_group_size = root->loc;
    z->offload_param.loc = z->offload_param.loc_device = root->loc;
    z->offload_optimizer.loc = z->offload_optimizer.loc_device = root->loc;
    if (root->kind != ZG_NMAP) {
        zg_error(root->loc, "a DeepSpeed config is a mapping of keys, not %s", zg_node_kind_name(root));
        return false;
    }
    Ctx c = {.m = m, .z = z, .bc_loc = {root->loc, root->loc}};
    walk_top(&c, root);
    zg_zero_rules(&c);
    return zg_error_count() == before;
}

bool zg_zero_load_file(const char *path, const ZgModel *m, ZgZero *z)
{
    zg_zero_defaults(z);
    z->path = path;
    const ZgNode *root = zg_node_load_file(path);
    return root && zg_zero_load_node(root, path, m, z);
}

bool zg_zero_load(const ZgNode *ds, const ZgModel *m, ZgZero *z)
{
    zg_zero_defaults(z);
    if (!ds) {
        if (m->loc_deepspeed.file) return false;    /* the spec's deepspeed: was reported bad */
        zg_error((ZgLoc){m->spec_path, 0, 0}, "no DeepSpeed config: add `deepspeed: FILE` to the spec or pass -c FILE");
        return false;
    }
    if (ds->kind == ZG_NMAP) return zg_zero_load_node(ds, m->spec_path, m, z);
    /* A relative path is relative to the spec's folder. */
    const char *p = ds->scalar, *slash = m->spec_path ? strrchr(m->spec_path, '/') : NULL;
    char *path = (p[0] == '/' || !slash) ? zg_xstrdup(p)
                                         : zg_fmt("%.*s/%s", (int)(slash - m->spec_path), m->spec_path, p);
    z->path = path;
    const ZgNode *root = zg_node_load_file_at(path, ds->loc);
    return root && zg_zero_load_node(root, path, m, z);
}
