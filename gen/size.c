/*
** size.c — the sizing step: partition (plan.c) -> schedule (sched.c) -> memory plan (memplan.c), then
** the choices the planner owns re-planned from the figures of the plan just built, as long as one
** does not fit: sub-groups sized to hardware.host_memory or to the speculative step's pieces, the
** speculative step and the device accumulator dropped where they do not fit, the device optimizer
** share placed (docs/PLAN.md "Sizes zgen chooses", "Optimizer sub-groups"). The steps it calls know nothing of this loop; fit.c and
** advise.c call it to plan a changed config the same way.
*/
#include <stdlib.h>
#include <string.h>
#include "plan_int.h"
#include "zg_size.h"

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }

/* Fewest elements an automatic sub-group holds: a shard is cut into at most this many sub-groups
** (each is a table row and three step ops), and NVMe reads stay large. */
#define AUTO_SG_MAX_GROUPS 1024

/* The smallest sub-group zgen chooses: the shard in AUTO_SG_MAX_GROUPS pieces, aligned. */
static int64_t sg_floor(const ZgPlan *p)
{
    return round_up(ceil_div(p->shard.opt_numel, AUTO_SG_MAX_GROUPS), p->sg_align);
}

/* Sub-groups sized to the declared host memory when the config left sub_group_size at DeepSpeed's
** default (1e9: with buffer_count 4 that is 48 GB of pinned optimizer staging per rank). The swap
** buffers get at most half of what the rest of the plan leaves of hardware.host_memory (the other
** half stays for the system and the page cache the NVMe files go through), but never fewer elements
** than cut the shard into AUTO_SG_MAX_GROUPS. true when it chose a smaller size (replan). */
static bool fit_sub_groups(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    const ZgModel *m = p->model;
    int64_t per = zg_plan_swap_bytes_per_elem(p), sg = zg_plan_sg_largest(p);
    if (m->host_memory <= 0 || per == 0 || sg == 0 || p->n_subgroups == 0) return false;
    if (!zg_plan_left_default(z, ZG_SET_SUB_GROUP, z->sub_group_size, DS_SUB_GROUP)) return false;
    int rpn = zg_plan_ranks_per_node(m);
    int64_t swap = per * sg;
    int64_t fixed = zg_mem_host_per_node(p) / rpn - swap;
    int64_t budget = (m->host_memory / rpn - fixed) / 2;
    if (swap <= budget) return false;
    int64_t floor = sg_floor(p);
    int64_t want = budget > 0 ? budget / per / p->sg_align * p->sg_align : 0;
    if (want < floor) want = floor;
    if (want >= sg) return false;
    p->sub_group_numel = want;
    p->sized_auto |= ZG_SET_SUB_GROUP;
    return true;
}

static bool spec_unfit(const ZgPlan *p)     /* the speculative step that fit_speculative drops */
{
    const ZgModel *m = p->model;
    return p->speculative && m->speculative_step != 1 && m->host_memory > 0 &&
           zg_mem_host_per_node(p) > m->host_memory;
}

/* The speculative step's pieces (stage 1/2, optimizer on the CPU, sub_group_size left at DeepSpeed's
** 1e9, which those stages do not use otherwise). A sub-group's Adam waits until backward has
** finalised every gradient of it, so 1e9-element pieces keep the host idle until backward has
** passed 1e9 elements of the shard (0.5 s into the 10B step, docs/PREDICT.md); pieces of one reduce
** bucket start as each bucket lands, and smaller ones could not start sooner. Only where the
** speculative step fits hardware.host_memory (fit_speculative keeps it). true when it chose (replan). */
static bool fit_spec_sub_groups(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    if (!p->speculative || p->sg_swap != ZG_SWAP_NONE || p->n_subgroups == 0) return false;
    if (!zg_plan_left_default(z, ZG_SET_SUB_GROUP, z->sub_group_size, DS_SUB_GROUP)) return false;
    if (spec_unfit(p)) return false;
    int64_t floor = sg_floor(p);
    int64_t want = round_up(p->reduce_bucket_cap, p->sg_align);
    if (want < floor) want = floor;
    if (want >= zg_plan_sg_largest(p)) return false;
    p->sub_group_numel = want;
    p->sized_auto |= ZG_SET_SUB_GROUP;
    p->sg_for_spec = true;
    return true;
}

/* The speculative step needs a second copy of master, m and v in host memory; where that does not
** fit hardware.host_memory and the spec did not ask for it, the plan runs without it. true when it
** dropped it (replan). */
static bool fit_speculative(ZgPlan *p)
{
    if (!spec_unfit(p)) return false;
    p->speculative = p->norm_adam = false;
    p->spec_why = "its second copy of the optimizer state does not fit hardware.host_memory";
    return true;
}

/* The device accumulator takes 4 B per owned element of device memory; where that does not fit
** hardware.device_memory and the spec did not ask for it, the plan accumulates on the host. true
** when it dropped it (replan). */
static bool fit_grad_acc(ZgPlan *p)
{
    const ZgModel *m = p->model;
    if (!p->grad_acc_dev || m->device_grad_accum == 1 || m->device_memory <= 0) return false;
    if (zg_mem_device_need(p) <= m->device_memory) return false;
    p->grad_acc_dev = false;
    p->grad_acc_why = "its fp32 accumulator does not fit hardware.device_memory";
    return true;
}

/* Sub-group k as two: its first `part` elements, and the rest (aligned as make_subgroups aligns). */
static void split_subgroup(ZgPlan *p, int k, int64_t part)
{
    p->subgroups = zg_xrealloc(p->subgroups, (size_t)(p->n_subgroups + 1) * sizeof *p->subgroups);
    memmove(&p->subgroups[k + 1], &p->subgroups[k], (size_t)(p->n_subgroups - k) * sizeof *p->subgroups);
    p->n_subgroups++;
    p->subgroups[k].numel = part;
    p->subgroups[k + 1].shard_offset += part;
    p->subgroups[k + 1].numel -= part;
}

/* The leading sub-groups on the device (zg_plan_dev_opt_applies), from train.device_optimizer: a
** share of the shard's elements rounded down to whole sub-groups, or (auto) as many as fit
** hardware.device_memory beside the rest of the plan, the first one that does not fit split at what
** does (when that is at least an eighth of it: Adam's rate does not depend on where a sub-group
** ends, and the bits do not either). At least one sub-group stays on the host (all of it on the
** device is offload_optimizer none). true when it placed some (replan). */
static bool place_dev_opt(ZgPlan *p)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    double want = m->device_optimizer;
    p->opt_dev_why = NULL;
    if (want == 0) { p->opt_dev_why = "train.device_optimizer is not set"; return false; }
    if (!zg_plan_dev_opt_applies(z)) {
        p->opt_dev_why = "it applies where ZeRO stage 2 offloads the optimizer to the CPU";
        return false;
    }
    if (z->grad_accum > 1 && !p->grad_acc_dev) {
        p->opt_dev_why = "with several micro-steps it reads the gradients that accumulate on the device, "
                         "and this plan accumulates them on the host";
        return false;
    }
    int n = p->n_subgroups - 1;
    if (n < 1) {
        p->opt_dev_why = "the optimizer shard is one sub-group, and one stays on the host";
        return false;
    }
    int64_t n16 = zg_dtype_size(z->dtype), keep = z->grad_accum > 1 ? 0 : n16, k = 0, numel = 0;
    if (want > 0) {
        double cap = want * (double)p->shard.opt_numel;
        while (k < n && (double)(numel + p->subgroups[k].numel) <= cap) numel += p->subgroups[k++].numel;
        if (k == 0) p->opt_dev_why = "train.device_optimizer's share is less than the first sub-group";
    } else {
        /* auto: what the device has left, at 12 B of state and the kept gradient per element, and
        ** the norm's lanes (64 B per NORM_BLOCK elements, and two sets per bucket at most) */
        int64_t left = m->device_memory > 0 ? m->device_memory - zg_mem_device_need(p) - 128 * p->n_buckets : 0;
        int64_t per64 = (12 + keep) * 64 + 64 * 64 / NORM_BLOCK;     /* per element, in 1/64 B */
        while (k < n && (numel + p->subgroups[k].numel) * per64 <= left * 64) numel += p->subgroups[k++].numel;
        int64_t part = left > 0 ? (left * 64 / per64 - numel) / p->sg_align * p->sg_align : 0;
        if (k < n && part >= p->subgroups[k].numel / 8 && part < p->subgroups[k].numel &&
            p->n_subgroups < ZG_MAX_TABLE_ROWS && p->sg_swap == ZG_SWAP_NONE) {
            split_subgroup(p, (int)k, part);
            numel += p->subgroups[k++].numel;
        }
        if (k == 0) p->opt_dev_why = m->device_memory > 0 ? "the first sub-group's state does not fit hardware.device_memory"
                                                          : "auto needs hardware.device_memory";
    }
    zg_plan_set_dev_opt(p, (int)k);
    return k > 0;
}

void zg_size_plan(const ZgModel *m, const ZgZero *z, ZgPlan *p)
{
    p->act_ckpt = p->act_ckpt || m->activation_checkpointing;
    p->zero = z;
    p->model = m;
    p->sized_auto = 0;
    p->sub_group_numel = 0;
    p->sg_for_spec = false;
    zg_plan_partition(p);
    zg_sched_build(p);
    zg_memplan_build(p);
    if (fit_sub_groups(p) || fit_spec_sub_groups(p)) {
        zg_plan_partition(p);
        zg_sched_build(p);
        zg_memplan_build(p);
    }
    if (fit_speculative(p)) {
        zg_sched_build(p);
        zg_memplan_build(p);
    }
    if (fit_grad_acc(p)) {
        zg_sched_build(p);
        zg_memplan_build(p);
    }
    if (place_dev_opt(p)) {
        zg_sched_build(p);
        zg_memplan_build(p);
        /* auto's estimate left the regions' alignment out: one sub-group fewer until it fits */
        while (m->device_optimizer < 0 && p->n_sg_dev > 0 && zg_mem_device_need(p) > m->device_memory) {
            zg_plan_set_dev_opt(p, p->n_sg_dev - 1);
            if (p->n_sg_dev == 0) p->opt_dev_why = "the first sub-group's state does not fit hardware.device_memory";
            zg_sched_build(p);
            zg_memplan_build(p);
        }
    }
}

void zg_size_ds_defaults(const ZgModel *m, const ZgZero *z, ZgPlan *p)
{
    memset(p->ds_default_bytes, 0, sizeof p->ds_default_bytes);
    if (!p->sized_auto) return;
    ZgZero *dz = zg_xcalloc(1, sizeof *dz);
    *dz = *z;
    dz->sizes_set |= p->sized_auto;
    ZgPlan q;
    memset(&q, 0, sizeof q);
    q.act_ckpt = p->act_ckpt;
    if (!zg_model_build(m, &q)) return;
    zg_size_plan(m, dz, &q);
    for (int c = 0; c < ZG_NMEM; c++)
        for (int t = 0; t < ZG_NTIERS; t++)
            if (t != ZG_TIER_NVME) p->ds_default_bytes[c] += q.mem.cat_bytes[t][c];
}
