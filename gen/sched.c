/*
** sched.c — the static schedule: the ordered operations of a micro-step and of the optimizer step
** (ZgOpKind in zg_plan.h says what each op means). Every rank runs the same lists, so collectives
** match by construction (no rank can take another path: DeepSpeed #7844/#7170 style hangs cannot
** happen). What DeepSpeed's coordinator decides while tracing (prefetch, release, reuse) is decided
** here once:
**  - stage 3: the module uses in execution order (forward embed..lm_head, backward lm_head..embed)
**    are merged into "intervals" when the same gather group is used by consecutive uses (the tied
**    wte: lm_head forward then lm_head backward); interval j lands in slot j % (depth+1); before
**    interval j starts, gathers for intervals up to j+depth have been issued; it is waited right
**    before use and released right after its last use;
**  - gradients: after the BACKWARD that completes bucket k, REDUCE k (overlap_comm); stages 2/3
**    first wait for bucket k-n_bucket_buffers (its buffer is reused); with device accumulation the
**    last micro-step ships each bucket's sums right after its WAIT_REDUCE; stages 0/1 reduce only in the
**    last micro-step (all at the end of backward without overlap_comm); stages 2/3 without
**    overlap_comm reduce synchronously right after completion (one bucket buffer: deferring to the
**    end of backward would need a buffer per bucket, i.e. the full gradient);
**  - activation checkpointing: a recompute FORWARD (slot ZG_RECOMPUTE) of block l right before
**    its BACKWARD, inside the same use, so one gather serves both; none for the last block,
**    whose activations are still in the block area when its backward comes;
**  - optimizer: SWAP_IN of sub-group i+1 is issued before OPTIMIZER on i, SWAP_OUT after it
**    (optimizer on NVMe; or fp32 parameters on NVMe, which are the master: ZgSgSwap); with part
**    of a CPU optimizer on the device, its sub-groups' OPTIMIZER in the step list, and with one
**    micro-step a GRAD_KEEP after each WAIT_REDUCE that holds some of their gradients.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"

typedef struct OpList {
    ZgOp *ops;
    int n, cap;
} OpList;

static void emit(OpList *l, ZgOpKind kind, int arg, int slot)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->ops = zg_xrealloc(l->ops, (size_t)l->cap * sizeof *l->ops);
    }
    l->ops[l->n++] = (ZgOp){.kind = kind, .arg = arg, .slot = slot, .src = -1, .dst = -1, .flat = -1};
}

typedef struct Use {
    int module;
    bool backward;
    int interval;               /* -1: the module needs no gather */
    bool first, last;           /* first / last use of its interval */
} Use;

typedef struct Interval {
    int group;
    int slot;
} Interval;

/* Prefetch depth from stage3_prefetch_bucket_size and stage3_max_live_parameters. */
static int prefetch_depth(const ZgPlan *p, int n_intervals)
{
    /* the config's values, or the planner's when the config left them (plan.c) */
    int64_t g = p->gather_slot_numel, pf = p->prefetch_numel, live = p->max_live_numel;
    if (n_intervals <= 1 || g <= 0 || pf <= 0) return 0;
    int64_t d = pf / g;
    if (d < 1) d = 1;
    if (live >= 0) {                       /* 0: nothing beyond the group in use (DeepSpeed) */
        int64_t cap = live / g - 1;
        if (cap < d) d = cap;
    }
    if (d > n_intervals - 1) d = n_intervals - 1;
    return d < 0 ? 0 : (int)d;
}

/* Gradient ops after BACKWARD of module mi. `reduce` false: stage 0/1 non-last micro-step. */
typedef struct GradState {
    bool *started, *reduced, *waited;
    int done;                   /* buckets [0, done) are waited: the scan starts there (linear in
                                ** the buckets, which one-layer buckets make as many as layers) */
} GradState;

static void wait_upto(const ZgPlan *p, OpList *l, GradState *g, int k)
{
    for (int i = g->done; i <= k && i < p->n_buckets; i++) {
        if (g->reduced[i] && !g->waited[i]) {
            emit(l, ZG_OP_WAIT_REDUCE, i, -1);
            g->waited[i] = true;
        }
    }
    while (g->done < p->n_buckets && g->waited[g->done]) g->done++;
}

static void grad_ops(const ZgPlan *p, OpList *l, GradState *g, int mi, bool reduce)
{
    const ZgModule *md = &p->modules[mi];
    const ZgZero *z = p->zero;
    if (!reduce || md->n_tensors == 0) return;
    int lo = md->first_tensor, hi = md->first_tensor + md->n_tensors - 1;
    int kfirst = p->tensors[hi].reduce_bucket, klast = p->tensors[lo].reduce_bucket;
    for (int k = kfirst; k <= klast; k++) {
        bool complete = p->buckets[k].first_tensor >= lo;
        if (z->stage >= 2) {
            if (!g->started[k]) {
                g->started[k] = true;
                int prev = k - p->n_bucket_buffers;
                if (prev >= 0 && !g->waited[prev]) wait_upto(p, l, g, prev);
            }
            emit(l, ZG_OP_GRAD_COPY, k, -1);
            if (complete) {
                emit(l, ZG_OP_REDUCE, k, -1);
                g->reduced[k] = true;
                if (!z->overlap_comm) wait_upto(p, l, g, k);
            }
        } else if (complete && z->overlap_comm) {
            emit(l, ZG_OP_REDUCE, k, -1);
            g->reduced[k] = true;
        }
    }
}

static void micro_ops(const ZgPlan *p, OpList *l, bool reduce)
{
    const ZgZero *z = p->zero;
    int nm = p->n_modules, nu = 2 * nm;
    Use *u = zg_xcalloc((size_t)nu, sizeof *u);
    Interval *iv = zg_xcalloc((size_t)nu, sizeof *iv);
    int ni = 0;
    for (int i = 0; i < nu; i++) {
        u[i].backward = i >= nm;
        u[i].module = i < nm ? i : nu - 1 - i;
        int grp = z->stage == 3 ? p->modules[u[i].module].gather_bucket : -1;
        u[i].interval = -1;
        if (grp < 0) continue;
        if (i > 0 && u[i - 1].interval >= 0 && iv[u[i - 1].interval].group == grp) {
            u[i].interval = u[i - 1].interval;
            u[i - 1].last = false;
        } else {
            iv[ni].group = grp;
            u[i].interval = ni++;
            u[i].first = true;
        }
        u[i].last = true;
    }
    int depth = prefetch_depth(p, ni);
    int nslots = ni ? depth + 1 : 0;
    for (int j = 0; j < ni; j++) iv[j].slot = j % nslots;
    bool param_swap = z->offload_param.device != ZG_OFFLOAD_NONE;
    /* Parameters on NVMe: the read of interval j + nslots goes into the same param_buf as interval
    ** j's, which is free once j's gather is waited; issued there, the read overlaps j's compute
    ** instead of being waited at once by the GATHER right after it. */
    bool read_ahead = z->offload_param.device == ZG_OFFLOAD_NVME;
    bool *swapped = zg_xcalloc((size_t)ni + 1, sizeof(bool));

    GradState g;
    g.done = 0;
    g.started = zg_xcalloc((size_t)p->n_buckets + 1, sizeof(bool));
    g.reduced = zg_xcalloc((size_t)p->n_buckets + 1, sizeof(bool));
    g.waited = zg_xcalloc((size_t)p->n_buckets + 1, sizeof(bool));
    int issued = 0;
    for (int i = 0; i < nu; i++) {
        int j = u[i].interval;
        if (j >= 0 && u[i].first) {
            for (; issued < ni && issued <= j + depth; issued++) {
                if (param_swap && !swapped[issued])
                    emit(l, ZG_OP_PARAM_SWAP_IN, iv[issued].group, iv[issued].slot);
                swapped[issued] = true;
                emit(l, ZG_OP_GATHER, iv[issued].group, iv[issued].slot);
            }
            emit(l, ZG_OP_WAIT_GATHER, iv[j].group, iv[j].slot);
            if (read_ahead && j + nslots < ni && !swapped[j + nslots]) {
                emit(l, ZG_OP_PARAM_SWAP_IN, iv[j + nslots].group, iv[j + nslots].slot);
                swapped[j + nslots] = true;
            }
        }
        const ZgModule *md = &p->modules[u[i].module];
        if (u[i].backward && p->act_ckpt && md->kind == ZG_MOD_BLOCK &&
            md->layer < p->model->n_layers - 1)
            emit(l, ZG_OP_FORWARD, u[i].module, ZG_RECOMPUTE);
        emit(l, u[i].backward ? ZG_OP_BACKWARD : ZG_OP_FORWARD, u[i].module, -1);
        /* stages 0/1 in 16 bits: the module's fresh fp32 gradients added into the 16-bit "grads",
        ** every micro-step, before any reduction of it */
        if (u[i].backward && z->stage < 2 && z->dtype != ZG_DTYPE_FP32) emit(l, ZG_OP_GRAD_ADD, u[i].module, -1);
        if (j >= 0 && u[i].last) emit(l, ZG_OP_RELEASE, iv[j].group, iv[j].slot);
        if (u[i].backward) grad_ops(p, l, &g, u[i].module, reduce);
    }
    if (reduce && z->stage < 2 && !z->overlap_comm) {
        for (int k = 0; k < p->n_buckets; k++) {
            emit(l, ZG_OP_REDUCE, k, -1);
            g.reduced[k] = true;
        }
    }
    if (reduce) wait_upto(p, l, &g, p->n_buckets - 1);

    /* Record slots for the plan: the group's first interval's slot, and the depth. */
    ZgPlan *pw = (ZgPlan *)p;
    pw->sched.prefetch_depth = depth;
    pw->n_gather_slots = nslots;
    for (int k = 0; k < p->n_gathers; k++) pw->gathers[k].slot = -1;
    for (int j = ni - 1; j >= 0; j--) pw->gathers[iv[j].group].slot = iv[j].slot;
    free(u);
    free(iv);
    free(swapped);
    free(g.started);
    free(g.reduced);
    free(g.waited);
}

static void step_ops(const ZgPlan *p, OpList *l)
{
    const ZgZero *z = p->zero;
    bool nvme = p->sg_swap != ZG_SWAP_NONE;
    int n = p->n_subgroups;
    if (nvme && n > 0) emit(l, ZG_OP_SWAP_IN, 0, -1);
    /* the speculative step's OPTIMIZER ops are in the last micro-step's list, except the device's
    ** (plan.c n_sg_dev): those run here, after the norm, as every unspeculated step does */
    for (int i = 0; i < n && (!p->speculative || zg_plan_sg_on_device(p, i)); i++) {
        if (nvme && i + 1 < n) emit(l, ZG_OP_SWAP_IN, i + 1, -1);
        emit(l, ZG_OP_OPTIMIZER, i, -1);
        if (nvme) emit(l, ZG_OP_SWAP_OUT, i, -1);
    }
    if (z->stage == 1 || z->stage == 2) emit(l, ZG_OP_ALLGATHER_PARAMS, 0, -1);
    if (z->stage == 3 && p->shard.persist_numel > 0) emit(l, ZG_OP_ALLGATHER_PARAMS, 0, -1);
}

/* The speculative step (plan.c): OPTIMIZER on sub-group k right after the last WAIT_REDUCE, in the
** last micro-step (its GRAD_SHIP with device accumulation), of a bucket that holds gradients of k on
** some rank (rank r's sub-group k is the
** flat range r * opt_flat_stride + [shard_offset, + numel)). After it every rank's gradients of k
** are final, so the op sits at the same place in every rank's list. */
static void speculative_ops(const ZgPlan *p, OpList *l)
{
    int ns = p->n_subgroups, ws = p->model->world_size;
    ZgOpKind final = p->grad_acc_dev ? ZG_OP_GRAD_SHIP : ZG_OP_WAIT_REDUCE;
    int *after = zg_xmalloc((size_t)(ns > 0 ? ns : 1) * sizeof *after);
    for (int k = 0; k < ns; k++) after[k] = -1;
    for (int i = 0; i < l->n; i++) {
        if (l->ops[i].kind != final) continue;
        const ZgBucket *b = &p->buckets[l->ops[i].arg];
        for (int k = 0; k < ns; k++)
            for (int r = 0; r < ws; r++) {
                int64_t lo = (int64_t)r * p->shard.opt_flat_stride + p->subgroups[k].shard_offset;
                if (lo < b->flat_offset + b->numel && b->flat_offset < lo + p->subgroups[k].numel) {
                    after[k] = i;
                    break;
                }
            }
    }
    OpList out = {0};
    int first = p->n_sg_dev;                    /* the device's sub-groups run in the step list */
    for (int i = 0; i < l->n; i++) {
        emit(&out, l->ops[i].kind, l->ops[i].arg, l->ops[i].slot);
        for (int k = ns - 1; k >= first; k--)
            if (after[k] == i) emit(&out, ZG_OP_OPTIMIZER, k, -1);
    }
    for (int k = ns - 1; k >= first; k--)      /* a sub-group of padding only: at the end */
        if (after[k] < 0) emit(&out, ZG_OP_OPTIMIZER, k, -1);
    free(l->ops);
    free(after);
    *l = out;
}

/* Device accumulation (plan.c): in the last micro-step, each WAIT_REDUCE is followed by the
** GRAD_SHIP of the bucket's sums, so each part leaves as soon as it is final. */
static void ship_ops(OpList *l)
{
    OpList out = {0};
    for (int i = 0; i < l->n; i++) {
        emit(&out, l->ops[i].kind, l->ops[i].arg, l->ops[i].slot);
        if (l->ops[i].kind == ZG_OP_WAIT_REDUCE) emit(&out, ZG_OP_GRAD_SHIP, l->ops[i].arg, -1);
    }
    free(l->ops);
    *l = out;
}

/* Part of the optimizer on the device with one micro-step (plan.c grad_keep): each WAIT_REDUCE
** (in the last list) of a bucket that holds some rank's device range, the flat
** r * opt_flat_stride + [0, opt_dev_numel), is followed by GRAD_KEEP, which copies that part before
** the bucket buffer is reused. The same ops on every rank; a rank with nothing there copies none. */
static void keep_ops(const ZgPlan *p, OpList *l)
{
    OpList out = {0};
    for (int i = 0; i < l->n; i++) {
        emit(&out, l->ops[i].kind, l->ops[i].arg, l->ops[i].slot);
        if (l->ops[i].kind != ZG_OP_WAIT_REDUCE) continue;
        const ZgBucket *b = &p->buckets[l->ops[i].arg];
        for (int r = 0; r < p->model->world_size; r++) {
            int64_t lo = (int64_t)r * p->shard.opt_flat_stride;
            if (lo < b->flat_offset + b->numel && b->flat_offset < lo + p->opt_dev_numel) {
                emit(&out, ZG_OP_GRAD_KEEP, l->ops[i].arg, -1);
                break;
            }
        }
    }
    free(l->ops);
    *l = out;
}

void zg_sched_build(ZgPlan *p)
{
    ZgSchedule *s = &p->sched;
    OpList micro = {0}, last = {0}, step = {0};
    bool every = p->zero->stage >= 2;
    micro_ops(p, &micro, every);
    micro_ops(p, &last, true);
    if (p->grad_acc_dev) ship_ops(&last);
    if (p->speculative) speculative_ops(p, &last);
    if (p->grad_keep) keep_ops(p, &last);
    step_ops(p, &step);
    s->micro = micro.ops; s->n_micro = micro.n;
    s->last = last.ops;   s->n_last = last.n;
    s->step = step.ops;   s->n_step = step.n;
}
