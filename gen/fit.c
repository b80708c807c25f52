/*
** fit.c — does a plan fit the declared hardware (hardware.device_memory per rank with the device
** headroom, hardware.host_memory per node), and when it does not, the refusal: the largest
** categories, the swap-buffer arithmetic, and the first config changes that fit, each found by
** planning the change (the sizing step, size.c) and priced by the cost model. Above the sizing
** step: the steps it calls never call back here.
** docs/PLAN.md "Refusal" describes the order of the changes.
*/
#include <stdlib.h>
#include <string.h>
#include "plan_int.h"
#include "zg_fit.h"
#include "zg_predict.h"
#include "zg_size.h"

static double gib(int64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

bool zg_fit_ok(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    if (m->device_memory > 0 && zg_mem_device_need(p) > m->device_memory) return false;
    if (m->host_memory > 0 && zg_mem_host_per_node(p) > m->host_memory) return false;
    return true;
}

bool zg_fit_plan_change(const ZgModel *m, const ZgZero *z, bool ckpt, ZgPlan *q)
{
    memset(q, 0, sizeof *q);
    q->act_ckpt = ckpt;
    if (!zg_model_build(m, q)) return false;
    zg_size_plan(m, z, q);
    return zg_plan_table_rows(q) <= ZG_MAX_TABLE_ROWS && !zg_plan_cost_saturated(&q->cost) && zg_fit_ok(q);
}

/* One alternative: a description and the change applied to copies of m and z. */
typedef struct Alt {
    const char *what;
    ZgModel m;
    ZgZero z;
    bool ckpt;                  /* plan it with activation checkpointing */
} Alt;

#define MAX_ALTS 32

static bool cur_ckpt;            /* the refused plan's act_ckpt, inherited by every alternative */

static Alt *alt(Alt *out, int *n, const ZgModel *m, const ZgZero *z, const char *what)
{
    Alt *a = &out[(*n)++];
    a->m = *m;
    a->z = *z;
    a->what = what;
    a->ckpt = cur_ckpt;
    return a;
}

/* The sizing keys the config set, each planned as the planner would size it (left out). */
static void knob_alternatives(const ZgPlan *p, const ZgModel *m, const ZgZero *z, Alt *out, int *n)
{
    Alt *a;
    bool opt_nvme = z->offload_optimizer.device == ZG_OFFLOAD_NVME;
    if (p->sg_swap != ZG_SWAP_NONE && !zg_plan_left_default(z, ZG_SET_SUB_GROUP, z->sub_group_size, DS_SUB_GROUP)) {
        a = alt(out, n, m, z, "remove zero_optimization.sub_group_size (zgen then sizes sub-groups to "
                "hardware.host_memory)");
        a->z.sizes_set &= ~(unsigned)ZG_SET_SUB_GROUP;
        a->z.sub_group_size = DS_SUB_GROUP;
    }
    if (opt_nvme && z->offload_optimizer.buffer_count > 4) {
        a = alt(out, n, m, z, "set zero_optimization.offload_optimizer.buffer_count: 4 (the fewest "
                "zgen's optimizer pipeline needs)");
        a->z.offload_optimizer.buffer_count = 4;
    }
    if (p->sg_swap == ZG_SWAP_PARAMS && p->n_sg_buffers > 2) {
        a = alt(out, n, m, z, "set zero_optimization.offload_param.buffer_count: 2 (one sub-group "
                "read while the other is updated)");
        a->z.offload_param.buffer_count = 2;
    }
    if (z->stage >= 2 && !zg_plan_left_default(z, ZG_SET_REDUCE_BUCKET, z->reduce_bucket_size, DS_REDUCE_BUCKET)) {
        a = alt(out, n, m, z, "remove zero_optimization.reduce_bucket_size (zgen then buckets one "
                "layer's gradients)");
        a->z.sizes_set &= ~(unsigned)ZG_SET_REDUCE_BUCKET;
        a->z.reduce_bucket_size = DS_REDUCE_BUCKET;
    }
    if (z->stage == 3 && (!zg_plan_left_default(z, ZG_SET_PREFETCH, z->prefetch_bucket_size, DS_PREFETCH) ||
                          !zg_plan_left_default(z, ZG_SET_MAX_LIVE, z->max_live_parameters, DS_MAX_LIVE))) {
        a = alt(out, n, m, z, "remove zero_optimization.stage3_prefetch_bucket_size and "
                "stage3_max_live_parameters (zgen then plans two gather slots: the group in use "
                "and the next)");
        a->z.sizes_set &= ~(unsigned)(ZG_SET_PREFETCH | ZG_SET_MAX_LIVE);
        a->z.prefetch_bucket_size = DS_PREFETCH;
        a->z.max_live_parameters = DS_MAX_LIVE;
    }
}

/* The changes tried, in order: what the user can change on the hardware they declared first (the
** sizing keys they set, the micro batch, activation checkpointing), then where the states live
** (offload targets, stage), and more ranks last. */
static int alternatives(const ZgPlan *p, const ZgModel *m, const ZgZero *z, Alt *out)
{
    int n = 0;
    Alt *a;

    knob_alternatives(p, m, z, out, &n);
    /* smaller micro batches (gradient accumulation scaled to keep train_batch_size) */
    for (int64_t mb = z->micro_batch / 2; mb >= 1 && n < MAX_ALTS - 16; mb /= 2) {
        if (z->micro_batch % mb) continue;
        a = alt(out, &n, m, z, NULL);
        a->z.micro_batch = mb;
        a->z.grad_accum = z->grad_accum * (z->micro_batch / mb);
        a->what = zg_fmt("set train_micro_batch_size_per_gpu: %lld and gradient_accumulation_steps: "
                         "%lld (same train_batch_size)", (long long)mb, (long long)a->z.grad_accum);
    }
    /* activations dominate large shapes: keep only each block's input, for one more forward */
    if (!cur_ckpt) {
        a = alt(out, &n, m, z, "set train.activation_checkpointing: true (in the spec; backward "
                "recomputes each block's forward)");
        a->ckpt = true;
    }
    if (z->offload_optimizer.device == ZG_OFFLOAD_NONE) {      /* stage 0 cannot offload */
        a = alt(out, &n, m, z, z->stage ? "set zero_optimization.offload_optimizer.device: cpu"
                : "set zero_optimization.stage: 1 and offload_optimizer.device: cpu");
        a->z.offload_optimizer.device = ZG_OFFLOAD_CPU;
        a->z.stage = z->stage ? z->stage : 1;
    }
    for (int st = z->stage + 1; st <= 3; st++) {
        a = alt(out, &n, m, z, st == 1 ? "set zero_optimization.stage: 1" :
                st == 2 ? "set zero_optimization.stage: 2" : "set zero_optimization.stage: 3");
        a->z.stage = st;
    }
    if (z->stage == 3 && z->offload_param.device == ZG_OFFLOAD_NONE) {
        a = alt(out, &n, m, z, "set zero_optimization.offload_param.device: cpu");
        a->z.offload_param.device = ZG_OFFLOAD_CPU;
    }
    if (z->stage < 3) {
        a = alt(out, &n, m, z, "set zero_optimization.stage: 3 and offload_optimizer.device: cpu");
        a->z.stage = 3;
        a->z.offload_optimizer.device = ZG_OFFLOAD_CPU;
    }
    if (z->offload_param.device == ZG_OFFLOAD_NONE || z->offload_optimizer.device == ZG_OFFLOAD_NONE) {
        a = alt(out, &n, m, z, "set zero_optimization.stage: 3 with offload_optimizer.device: cpu and "
                "offload_param.device: cpu");
        a->z.stage = 3;
        a->z.offload_optimizer.device = ZG_OFFLOAD_CPU;
        a->z.offload_param.device = ZG_OFFLOAD_CPU;
    }
    /* host-bound: the optimizer back on the device, or on NVMe (stage 3 only, as DeepSpeed) */
    if (z->offload_optimizer.device == ZG_OFFLOAD_CPU) {
        a = alt(out, &n, m, z, "set zero_optimization.offload_optimizer.device: none");
        a->z.offload_optimizer.device = ZG_OFFLOAD_NONE;
    }
    if (z->offload_optimizer.device != ZG_OFFLOAD_NVME) {
        a = alt(out, &n, m, z, z->stage == 3
                ? "set zero_optimization.offload_optimizer.device: nvme (with nvme_path)"
                : "set zero_optimization.stage: 3 and offload_optimizer.device: nvme (with nvme_path)");
        a->z.stage = 3;
        a->z.offload_optimizer.device = ZG_OFFLOAD_NVME;
    }
    /* more ranks (same micro batch and accumulation: the global batch grows) */
    for (int k = 1; k <= 6 && n < MAX_ALTS && z->stage > 0; k++) {
        int64_t ws = (int64_t)m->world_size << k;
        if (ws > (1 << 20)) break;
        a = alt(out, &n, m, z, NULL);
        zg_model_set_world_size(&a->m, (int)ws);
        a->z.train_batch_size = z->micro_batch * z->grad_accum * ws;
        a->what = zg_fmt("use --world-size %lld (train_batch_size becomes %lld)", (long long)ws,
                         (long long)a->z.train_batch_size);
    }
    return n;
}

/* The three largest categories of a tier, as "name X GiB, ...". */
static char *largest_cats(const int64_t *bytes)
{
    bool used[ZG_NMEM] = {0};
    char *s = zg_xstrdup("");
    for (int k = 0; k < 3; k++) {
        int best = -1;
        for (int c = 0; c < ZG_NMEM; c++)
            if (!used[c] && bytes[c] > 0 && (best < 0 || bytes[c] > bytes[best])) best = c;
        if (best < 0) break;
        used[best] = true;
        s = zg_fmt("%s%s%s %.2f GiB", s, k ? ", " : "", zg_memcat_name((ZgMemCat)best), gib(bytes[best]));
    }
    return s;
}

/* A host-bound plan whose sub-group staging the config sized: the arithmetic, and the largest
** sub_group_size that fits with the rest of the plan unchanged. */
static void swap_arithmetic(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    int64_t per = zg_plan_swap_bytes_per_elem(p), sg = zg_plan_sg_largest(p);
    if (per == 0 || sg == 0) return;
    bool sg_set = !zg_plan_left_default(z, ZG_SET_SUB_GROUP, z->sub_group_size, DS_SUB_GROUP);
    if (!sg_set && !(z->sizes_set & (ZG_SET_OPT_BUF_COUNT | ZG_SET_PARAM_BUF_COUNT))) return;
    int rpn = zg_plan_ranks_per_node(m);
    int64_t swap = per * sg, rest = zg_mem_host_per_node(p) - swap * rpn;
    ZgLoc at = sg_set ? z->loc_sub_group_size : m->loc_host_memory;
    int64_t each = p->sg_swap == ZG_SWAP_PARAMS ? 4 : p->grad_nvme ? 16 : 12;
    int64_t land = zg_plan_param_land(p);
    int64_t wb = per - each * p->n_sg_buffers - land;
    zg_note(at, "swap buffers: (%d staging buffers (buffer_count) x %lld bytes (%s)%s) per element "
            "x a sub-group of %lld elements = %.2f GiB per rank; the rest of the plan needs %.2f GiB "
            "per node", p->n_sg_buffers, (long long)each,
            p->sg_swap == ZG_SWAP_PARAMS ? "fp32 parameters"
            : p->grad_nvme ? "fp32 master, m, v, gradients" : "fp32 master, m, v",
            wb ? zg_fmt(" + %lld bytes (16-bit write-back)", (long long)wb)
            : land ? zg_fmt(" + %lld bytes (16-bit updates on their way H2D)", (long long)land) : "", (long long)sg,
            gib(swap), gib(rest));
    int64_t room = (m->host_memory - rest) / rpn;
    int64_t fit = room > 0 ? room / per / p->sg_align * p->sg_align : 0;
    if (fit > 0)
        zg_note(at, "the largest sub_group_size that fits hardware.host_memory %.2f GiB is %lld",
                gib(m->host_memory), (long long)fit);
    else
        zg_note(at, "no sub_group_size fits: the rest of the plan alone needs %.2f GiB of "
                "hardware.host_memory %.2f GiB", gib(rest), gib(m->host_memory));
}

/* Fit advice: the first ADVICE_MAX changes that fit, in alternatives()'s order, each with the
** cost model's step time on ADVICE_HW (the default profile of --predict). */
#define ADVICE_MAX 3
#define ADVICE_HW "h100-sxm"

void zg_fit_refuse(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    int64_t dev = p->mem.tier_bytes[ZG_TIER_DEVICE], host = zg_mem_host_per_node(p);
    int64_t room = p->mem.device_headroom;
    bool dev_bad = m->device_memory > 0 && zg_mem_device_need(p) > m->device_memory;
    ZgLoc at = dev_bad ? m->loc_device_memory : m->loc_host_memory;
    if (dev_bad) {
        zg_error(at, "the plan needs %.2f GiB of device memory per rank and %.2f GiB of device headroom "
                 "(%s); hardware.device_memory is %.2f GiB", gib(dev), gib(room), zg_mem_headroom_parts(p),
                 gib(m->device_memory));
        zg_note(at, "largest on the device: %s", largest_cats(p->mem.cat_bytes[ZG_TIER_DEVICE]));
        if (dev <= m->device_memory && m->device_headroom <= 0)
            zg_note(at, "the plan alone fits; the headroom is zgen's estimate of what a CUDA rank holds "
                    "beside it (docs/PLAN.md \"Device headroom\"): hardware.device_headroom sets a "
                    "measured figure instead");
    } else {
        int64_t cats[ZG_NMEM];
        int rpn = m->gpus_per_node > 0 ? m->gpus_per_node : 1;
        if (rpn > m->world_size) rpn = m->world_size;
        for (int c = 0; c < ZG_NMEM; c++)
            cats[c] = (p->mem.cat_bytes[ZG_TIER_PINNED][c] + p->mem.cat_bytes[ZG_TIER_HOST][c]) * rpn;
        zg_error(at, "the plan needs %.2f GiB of host memory per node (%d ranks); "
                 "hardware.host_memory is %.2f GiB", gib(host), rpn, gib(m->host_memory));
        zg_note(at, "largest on the host: %s", largest_cats(cats));
        swap_arithmetic(p);
    }
    Alt *alts = zg_xcalloc(MAX_ALTS, sizeof *alts);
    cur_ckpt = p->act_ckpt;
    int n = alternatives(p, m, p->zero, alts), shown = 0;
    /* each change that fits is priced by the cost model, so the user can weigh the first one (the
    ** least disruptive) against the faster ones below it; a prediction, labelled as such */
    ZgHw hw;
    bool priced = zg_hw_builtin(ADVICE_HW, &hw);
    for (int i = 0; i < n && shown < ADVICE_MAX; i++) {
        ZgPlan q;
        if (!zg_fit_plan_change(&alts[i].m, &alts[i].z, alts[i].ckpt, &q)) continue;
        int64_t qdev = q.mem.tier_bytes[ZG_TIER_DEVICE];
        char *cost = zg_xstrdup("");
        if (priced) {
            ZgPrediction pr;
            memset(&pr, 0, sizeof pr);
            zg_predict(&q, &hw, &pr);
            free(cost);
            cost = zg_fmt("; predicted step %.3g s, %.0f tokens/s on %s", pr.step_s, pr.tokens_per_s,
                          hw.name);
            free(pr.ev);
        }
        if (dev_bad)
            zg_note(at, "%s (saves %.2f GiB of device memory per rank; needs %.2f GiB + %.2f GiB "
                    "headroom%s)", alts[i].what, gib(dev - qdev), gib(qdev), gib(q.mem.device_headroom),
                    cost);
        else if (q.sized_auto & ZG_SET_SUB_GROUP)
            zg_note(at, "%s (host memory per node: %.2f GiB; sub_group_size %lld%s)", alts[i].what,
                    gib(zg_mem_host_per_node(&q)), (long long)q.sub_group_numel, cost);
        else
            zg_note(at, "%s (host memory per node: %.2f GiB%s)", alts[i].what,
                    gib(zg_mem_host_per_node(&q)), cost);
        free(cost);
        shown++;
    }
    if (shown) return;
    int64_t acts = p->mem.acts_bytes + p->mem.scratch_bytes;
    if (dev_bad && acts + room >= m->device_memory)
        zg_note(at, "no change of stage or offload fits: the activations of one micro-batch alone "
                "take %.2f GiB (micro batch %lld, seq_len %lld%s) beside %.2f GiB of device headroom: "
                "lower train.seq_len or the micro batch", gib(acts), (long long)p->zero->micro_batch,
                (long long)m->seq_len, p->act_ckpt ? ", with activation checkpointing" : "", gib(room));
    else
        zg_note(at, "no single change of a sizing key, micro batch, activation checkpointing, stage, "
                "offload or world size (up to %dx) fits", 64);
}
