/*
** plan.c — the partition map (DeepSpeed's stage_1_and_2.py and partitioned_param_coordinator.py; docs/PLAN.md): who owns which elements of which tensor,
** the gradient buckets, the stage-3 gather groups and the optimizer sub-groups, and the figures
** of a partition that the later steps read. It calls no later step: the sizing step (size.c)
** runs partition -> schedule -> memory plan and re-plans from above.
** Bounded on any input: the sub-group count is formed in int64 and checked before anything is
** allocated for it, a plan with more table rows than ZG_MAX_TABLE_ROWS or a per-step figure that
** does not fit in int64 is refused with the number and the bound (zg.h "bounds",
** zg_plan_within_bounds), before the (slow) rendering and before the fit alternatives are tried.
*/
#include <stdlib.h>
#include <string.h>
#include "plan_int.h"

#define SLOT_ALIGN 32           /* elements: tensors in slots / persist start 64-byte aligned */


static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }

static int64_t lcm64(int64_t a, int64_t b)
{
    int64_t x = a, y = b;
    while (y) { int64_t t = x % y; x = y; y = t; }
    return a / x * b;
}


/* A sizing key is the planner's to choose when the config did not set it and it holds DeepSpeed's
** default (a test or a caller that writes the field directly is honoured like a config). */
bool zg_plan_left_default(const ZgZero *z, unsigned bit, int64_t v, int64_t ds)
{
    return !(z->sizes_set & bit) && v == ds;
}

/* ZeRO-Infinity: with the optimizer on NVMe at stage 3 the owned fp32 gradient shard goes to NVMe
** too (DeepSpeed's optimizer swapper writes gradient chunks beside each sub-group's state), so host
** memory holds staging buffers, not 4 bytes per parameter. Stage 0 keeps the full "grads" on the
** device anyway, so its shard stays in memory. */
bool zg_grads_on_nvme(const ZgZero *z)
{
    return z->stage == 3 && z->offload_optimizer.device == ZG_OFFLOAD_NVME;
}

/* Stages 0-2: one flat buffer cut into ws equal partitions. Stage 3: per-tensor slices. */
static void partition_params(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    int ws = p->model->world_size;
    ZgShardMap *s = &p->shard;
    memset(s, 0, sizeof *s);
    s->ws = ws;
    s->flat_numel = p->n_params;
    if (z->stage < 3) {
        s->align = 2;
        s->padded_numel = round_up(p->n_params, (int64_t)s->align * ws);
        s->part_numel = s->padded_numel / ws;
        s->opt_numel = z->stage == 0 ? s->padded_numel : s->part_numel;
        s->opt_replicated = z->stage == 0;
        s->opt_flat_stride = z->stage == 0 ? 0 : s->part_numel;
        return;
    }
    s->align = 1;
    s->shard_offset = zg_xcalloc((size_t)p->n_tensors, sizeof *s->shard_offset);
    int64_t persist_total = 0, persist_cursor = 0;
    for (int i = 0; i < p->n_tensors; i++) {
        ZgTensor *t = &p->tensors[i];
        t->part_numel = ceil_div(t->numel, ws);
        s->shard_offset[i] = s->part_numel;
        s->part_numel += t->part_numel;
        s->padded_numel += t->part_numel * ws;
        t->persistent = t->numel <= z->param_persistence_threshold &&
                        persist_total + t->numel <= z->model_persistence_threshold;
        if (t->persistent) {
            persist_total += t->numel;
            t->persist_offset = persist_cursor;
            persist_cursor = round_up(persist_cursor + t->numel, SLOT_ALIGN);
        }
    }
    s->persist_numel = persist_total;
    s->opt_numel = s->part_numel;
}

/* Gradient buckets in the order gradients complete in backward (reverse tensor order). */
static void make_buckets(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    int stage = z->stage, ws = p->model->world_size;
    int64_t cap = z->reduce_bucket_size > 0 ? z->reduce_bucket_size : 1;
    /* Stages 2/3 plan bucket buffers of the largest bucket: left at DeepSpeed's default (5e8, more
    ** than most models), one bucket would hold every gradient. The planner buckets one layer's
    ** gradients instead (the largest block's; a larger tensor is a bucket of its own), which is
    ** what the schedule can overlap: a bucket is reduced while the next layer's backward runs. */
    if (stage >= 2 && zg_plan_left_default(z, ZG_SET_REDUCE_BUCKET, z->reduce_bucket_size, DS_REDUCE_BUCKET)) {
        int64_t layer = 0;
        for (int mi = 0; mi < p->n_modules; mi++) {
            const ZgModule *md = &p->modules[mi];
            if (md->kind != ZG_MOD_BLOCK) continue;
            int64_t n = 0;
            for (int t = md->first_tensor; t < md->first_tensor + md->n_tensors; t++)
                n += stage == 3 ? p->tensors[t].part_numel * ws : p->tensors[t].numel;
            if (n > layer) layer = n;
        }
        if (layer > 0 && layer < cap) {
            cap = layer;
            p->sized_auto |= ZG_SET_REDUCE_BUCKET;
        }
    }
    p->reduce_bucket_cap = cap;
    p->buckets = zg_xcalloc((size_t)p->n_tensors, sizeof *p->buckets);
    p->n_buckets = 0;
    int hi = p->n_tensors - 1;           /* highest tensor of the open bucket */
    int64_t cur = 0;
    for (int i = p->n_tensors - 1; i >= -1; i--) {
        int64_t sz = i >= 0 ? (stage == 3 ? p->tensors[i].part_numel * ws : p->tensors[i].numel) : 0;
        bool close = i < 0 ? hi >= 0 : (i < hi && cur + sz > cap);
        if (close) {
            ZgBucket *b = &p->buckets[p->n_buckets];
            b->first_tensor = i + 1;
            b->n_tensors = hi - i;
            for (int t = b->first_tensor; t <= hi; t++) {
                ZgTensor *tt = &p->tensors[t];
                tt->reduce_bucket = p->n_buckets;
                b->numel += tt->numel;
                if (stage == 3) {
                    tt->bucket_offset = b->padded_numel / ws;
                    b->padded_numel += tt->part_numel * ws;
                } else {
                    tt->bucket_offset = tt->flat_offset - p->tensors[b->first_tensor].flat_offset;
                }
            }
            if (stage < 3) b->padded_numel = b->numel;
            b->flat_offset = stage < 3 ? p->tensors[b->first_tensor].flat_offset : 0;
            p->n_buckets++;
            hi = i;
            cur = 0;
        }
        cur += sz;
    }
    p->n_bucket_buffers = 0;
    p->bucket_buffer_numel = 0;
    if (stage >= 2) {
        /* one rank: the reduction is the identity, so a second buffer would overlap nothing,
        ** unless the reduced part crosses to a CPU optimizer: then bucket k's D2H overlaps the
        ** backward that fills bucket k + 1 */
        bool overlap = ws > 1 || zg_plan_host_state(z);
        p->n_bucket_buffers = z->overlap_comm && p->n_buckets > 1 && overlap ? 2 : 1;
        for (int k = 0; k < p->n_buckets; k++) {
            if (p->buckets[k].padded_numel > p->bucket_buffer_numel)
                p->bucket_buffer_numel = p->buckets[k].padded_numel;
        }
    }
    for (int k = 0; k < p->n_buckets; k++)
        p->buckets[k].buffer = stage >= 2 ? k % p->n_bucket_buffers : -1;
    /* Stage 3 receives its reduce-scattered chunk in a buffer of its own and adds it into grad32,
    ** except where nothing needs adding (one fp32 micro-step: straight into the zeroed grad32, when
    ** that is device memory, which a collective can write) or nothing moves (one rank: its chunk is
    ** the whole bucket buffer). */
    p->reduce_direct = stage == 3 && z->dtype == ZG_DTYPE_FP32 && z->grad_accum <= 1 &&
                       z->offload_optimizer.device == ZG_OFFLOAD_NONE;
    p->bucket_recv_numel = stage == 3 && ws > 1 && !p->reduce_direct ? p->bucket_buffer_numel / ws : 0;
}

/* Stage 3: one gather group per module with non-persistent tensors. */
static void make_gathers(ZgPlan *p)
{
    int ws = p->model->world_size;
    p->gathers = zg_xcalloc((size_t)p->n_modules, sizeof *p->gathers);
    p->n_gathers = 0;
    p->gather_slot_numel = 0;
    p->prefetch_numel = p->zero->prefetch_bucket_size;
    p->max_live_numel = p->zero->max_live_parameters;
    if (p->zero->stage < 3) return;
    for (int mi = 0; mi < p->n_modules; mi++) {
        ZgModule *md = &p->modules[mi];
        int first = -1, last = -1;
        for (int i = md->first_tensor; i < md->first_tensor + md->n_tensors; i++) {
            if (p->tensors[i].persistent) continue;
            if (first < 0) first = i;
            last = i;
        }
        if (first < 0) continue;
        ZgGather *g = &p->gathers[p->n_gathers];
        g->module = mi;
        g->first_tensor = first;
        g->n_tensors = last - first + 1;
        g->slot = -1;
        int64_t off = 0;
        for (int i = first; i <= last; i++) {
            ZgTensor *t = &p->tensors[i];
            if (t->persistent) continue;
            t->gather = p->n_gathers;
            t->gather_offset = off;
            g->part_numel += t->part_numel;
            off = round_up(off + t->part_numel * ws, SLOT_ALIGN);
            g->numel = t->gather_offset + t->part_numel * ws;
        }
        g->shard_offset = p->shard.shard_offset[first];
        g->shard_numel = p->shard.shard_offset[last] + p->tensors[last].part_numel - g->shard_offset;
        if (g->numel > p->gather_slot_numel) p->gather_slot_numel = g->numel;
        md->gather_bucket = p->n_gathers++;
    }
    for (int mi = 0; mi < p->n_modules; mi++) {
        ZgModule *md = &p->modules[mi];
        if (md->kind == ZG_MOD_HEAD && p->tied_tensor >= 0)
            md->gather_bucket = p->tensors[p->tied_tensor].gather;
    }
    /* Left at DeepSpeed's defaults (5e7 prefetched, 1e9 live), the slots would follow from
    ** constants, not from the model: small groups get many slots of the largest group. The
    ** planner prefetches one group ahead: two slots, the group in use and the next. */
    const ZgZero *z = p->zero;
    bool pf_auto = zg_plan_left_default(z, ZG_SET_PREFETCH, z->prefetch_bucket_size, DS_PREFETCH);
    bool live_auto = zg_plan_left_default(z, ZG_SET_MAX_LIVE, z->max_live_parameters, DS_MAX_LIVE);
    if (pf_auto && live_auto && p->gather_slot_numel > 0) {
        p->prefetch_numel = p->gather_slot_numel;
        p->max_live_numel = 2 * p->gather_slot_numel;
        p->sized_auto |= ZG_SET_PREFETCH | ZG_SET_MAX_LIVE;
    }
}

/* Sub-groups the last make_subgroups wanted (may exceed what it built: see there). */
static int64_t sg_wanted;

/* Optimizer sub-groups of the rank's optimizer shard, and what swaps them (ZgSgSwap). More than
** ZG_MAX_TABLE_ROWS are not built (sub_group_size 1 on a large shard asks for billions): the plan
** gets none and zg_plan_within_bounds refuses it from sg_wanted. */
/* The speculative optimizer step (docs/PLAN.md "Speculative optimizer step"). Adam on the host
** cannot start before the global norm, which needs every gradient: without speculation the whole
** CPU Adam sits after backward. With it, a sub-group's Adam runs as soon as its gradients are final,
** assuming the step applies unclipped (no fp16 overflow, norm within gradient_clipping) and writing
** a second copy of master, m and v; the step rule then commits that copy, or, when the assumption
** failed, redoes every sub-group from the untouched first copy. Either way the bits are those of
** the unspeculated step. Planned where the state is in host memory and the gradients are handed
** over into grad32 there (offload_optimizer cpu, stages 1-2); the norm is then summed during that
** hand-over (norm_fused) with or without speculation, so the choice never changes the norm. */
bool zg_plan_host_state(const ZgZero *z)
{
    return z->offload_optimizer.device == ZG_OFFLOAD_CPU && (z->stage == 1 || z->stage == 2);
}

/* Stages 2 and 3 hand the owned gradients over every micro-step; with the optimizer on the CPU that
** is a D2H copy and a host add per micro-step (stage 1 reduces once, at the last). Accumulated in
** device fp32 instead (the same adds, element by element, in the same order: the same bits), the
** step ships one fp32 copy. Stage 3 adds each rank's reduce-scattered chunk where stage 2 adds its
** part of the flat range; gradients on NVMe (offload_optimizer nvme) keep theirs in the swap file.
** fit_grad_acc drops it where device memory is short. */
bool zg_plan_grad_acc_applies(const ZgZero *z)
{
    return z->offload_optimizer.device == ZG_OFFLOAD_CPU && z->stage >= 2 && z->grad_accum > 1;
}

/* Part of the optimizer on the device (train.device_optimizer): with the state in host memory at
** stage 2, the leading sub-groups' master, m and v can live in device memory the plan leaves free,
** and their Adam (zd_adamw: the host's arithmetic, the same bits) runs there after the norm. The
** host then runs Adam only on the rest: less host traffic per step, and the sub-groups it drops are
** those whose gradients are final last (the shard's front: embeddings, first blocks), which the
** speculative step could not overlap with backward anyway. The device part's gradients stay on the
** device (in grad_acc with several micro-steps, else in "grad_keep"); only their norm lanes cross
** (norm_dev_lanes), which the host's norm continues with the same bits. */
bool zg_plan_dev_opt_applies(const ZgZero *z)
{
    return zg_plan_host_state(z) && z->stage == 2;
}

static void decide_speculative(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    bool host_state = zg_plan_host_state(z);
    p->norm_fused = host_state;
    /* with one micro-step nothing accumulates: grad32 would be a widened copy, which Adam does in
    ** its registers (16-bit gradients in, the same bits) */
    p->grad16 = host_state && z->dtype != ZG_DTYPE_FP32 && z->grad_accum <= 1;
    p->speculative = host_state && p->model->speculative_step != 0;
    p->norm_adam = p->speculative;
    bool acc_ok = zg_plan_grad_acc_applies(z);
    p->grad_acc_dev = acc_ok && p->model->device_grad_accum != 0;
    p->grad_acc_why = p->grad_acc_dev ? NULL
                    : !acc_ok ? "it applies where stage 2 hands gradients to a CPU optimizer over several micro-steps"
                    : "train.device_grad_accum is false";
    p->spec_why = p->speculative ? NULL
                : !host_state ? "it needs the optimizer state in host memory (offload_optimizer cpu, ZeRO stage 1 or 2)"
                : "train.speculative_step is false";
}

/* Rank r's part of bucket a inside its device optimizer range (norm_dev_lanes: that part's
** gradients stay on the device and its norm lanes cross instead): its elements, and the lane sets
** (norm blocks, at multiples of norm_block in shard offsets) it meets into *sets. */
int64_t zg_bucket_dev_part(const ZgPlan *p, int a, int r, int64_t *sets)
{
    const ZgBucket *b = &p->buckets[a];
    int64_t s0 = (int64_t)r * p->shard.opt_flat_stride;
    int64_t lo = b->flat_offset - s0, hi = b->flat_offset + b->numel - s0;
    if (lo < 0) lo = 0;
    if (hi > p->opt_dev_numel) hi = p->opt_dev_numel;
    *sets = 0;
    if (!p->norm_dev_lanes || hi <= lo) return 0;
    *sets = (hi - 1) / p->norm_block - lo / p->norm_block + 1;
    return hi - lo;
}

/* The norm's lane sets of the device part (norm_dev_lanes): the most that any rank's buckets need
** (each rank lays its buckets' sets out in bucket order: train-cuda's lanes_at). */
static void plan_norm_lanes(ZgPlan *p)
{
    p->norm_block = NORM_BLOCK;
    p->norm_dev_lanes = p->norm_fused && p->opt_dev_numel > 0;
    /* a piece per block, and one more at each bucket boundary inside a block */
    p->norm_pieces = p->norm_adam ? ceil_div(p->shard.opt_numel, NORM_BLOCK) + p->n_buckets + 1 : 0;
    p->norm_lanes_sets = 0;
    for (int r = 0; p->norm_dev_lanes && r < p->model->world_size; r++) {
        int64_t n = 0, sets;
        for (int k = 0; k < p->n_buckets; k++) {
            zg_bucket_dev_part(p, k, r, &sets);
            n += sets;
        }
        if (n > p->norm_lanes_sets) p->norm_lanes_sets = n;
    }
}

void zg_plan_set_dev_opt(ZgPlan *p, int k)
{
    p->n_sg_dev = k;
    p->opt_dev_numel = 0;
    for (int i = 0; i < k; i++) p->opt_dev_numel += p->subgroups[i].numel;
    p->grad_keep = k > 0 && p->zero->grad_accum <= 1;
    plan_norm_lanes(p);
}

static void make_subgroups(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    bool opt_nvme = z->offload_optimizer.device == ZG_OFFLOAD_NVME;
    bool par_nvme = z->offload_param.device == ZG_OFFLOAD_NVME;
    int64_t block = z->aio_block_size > 0 ? z->aio_block_size : 4096;
    p->nvme_align = lcm64(block, 4096);
    p->sg_align = opt_nvme || par_nvme ? p->nvme_align / 2 : SLOT_ALIGN;
    /* the fused norm's pieces never cross a sub-group (the speculative Adam sums the squares of its
    ** own, and the sub-groups run back to front), nor the device part's end */
    if (zg_plan_host_state(z)) p->sg_align = lcm64(p->sg_align, NORM_BLOCK);
    int64_t want = p->sub_group_numel > 0 ? p->sub_group_numel : z->sub_group_size;
    int64_t size = round_up(want > 0 ? want : 1, p->sg_align);
    int64_t n = p->shard.opt_numel;
    sg_wanted = ceil_div(n, size);
    p->n_subgroups = sg_wanted <= ZG_MAX_TABLE_ROWS ? (int)sg_wanted : 0;
    p->subgroups = zg_xcalloc((size_t)(p->n_subgroups ? p->n_subgroups : 1), sizeof *p->subgroups);
    /* fp32 has no separate master unless the optimizer is offloaded: with the parameters on NVMe
    ** the master IS the NVMe shard, swapped like the optimizer's state would be */
    p->grad_nvme = zg_grads_on_nvme(z);
    /* Adam on the device needs its state and the working copy there: with offload_param alone the
    ** host runs it (the device cannot write the parameters' host home in its pass) */
    p->adam_device = z->offload_optimizer.device == ZG_OFFLOAD_NONE &&
                     (z->stage < 3 || z->offload_param.device == ZG_OFFLOAD_NONE);
    decide_speculative(p);
    zg_plan_set_dev_opt(p, 0);        /* place_dev_opt decides, once the rest of the plan is built */
    p->sg_swap = opt_nvme ? ZG_SWAP_OPTIMIZER
               : z->stage == 3 && par_nvme && z->dtype == ZG_DTYPE_FP32 &&
                 z->offload_optimizer.device == ZG_OFFLOAD_NONE ? ZG_SWAP_PARAMS : ZG_SWAP_NONE;
    const ZgOffloadCfg *o = opt_nvme ? &z->offload_optimizer : &z->offload_param;
    /* zero.c bounds buffer_count with device nvme; without NVMe it is not used (no swap) */
    int nbuf = o->buffer_count < 1 ? 1 : o->buffer_count > ZG_MAX_TABLE_ROWS ? ZG_MAX_TABLE_ROWS
             : (int)o->buffer_count;
    if (p->sg_swap == ZG_SWAP_PARAMS && nbuf > p->n_subgroups) nbuf = p->n_subgroups;
    p->n_sg_buffers = p->sg_swap == ZG_SWAP_NONE || p->n_subgroups == 0 ? 0 : nbuf;
    for (int i = 0; i < p->n_subgroups; i++) {
        ZgSubGroup *sg = &p->subgroups[i];
        sg->shard_offset = (int64_t)i * size;
        sg->numel = n - sg->shard_offset < size ? n - sg->shard_offset : size;
        sg->nvme_offset_bytes = p->n_sg_buffers ? sg->shard_offset * 4 : -1;
        sg->buffer = p->n_sg_buffers ? i % p->n_sg_buffers : -1;
    }
}

void zg_plan_partition(ZgPlan *p)
{
    for (int i = 0; i < p->n_modules; i++) p->modules[i].gather_bucket = -1;
    for (int i = 0; i < p->n_tensors; i++) {
        ZgTensor *t = &p->tensors[i];
        t->part_numel = 0;
        t->persistent = false;
        t->reduce_bucket = t->gather = -1;
        t->gather_offset = t->persist_offset = -1;
        t->bucket_offset = 0;
    }
    p->sized_auto &= ZG_SET_SUB_GROUP;     /* chosen by zg_plan_build_nocheck, kept across a rebuild */
    partition_params(p);
    make_buckets(p);
    make_gathers(p);
    make_subgroups(p);
}

int zg_plan_ranks_per_node(const ZgModel *m)
{
    int rpn = m->gpus_per_node > 0 ? m->gpus_per_node : 1;
    return rpn > m->world_size ? m->world_size : rpn;
}

int64_t zg_plan_param_land(const ZgPlan *p)
{
    const ZgZero *z = p->zero;
    bool land = z->offload_optimizer.device != ZG_OFFLOAD_NONE &&
                (z->stage < 3 || z->offload_param.device == ZG_OFFLOAD_NONE);
    return land ? 2 * zg_dtype_size(z->dtype) : 0;
}

/* Pinned bytes per sub-group element of the staging buffers that scale with sub_group_size
** (memplan.c: opt_buf_<b> master|m|v, param_wb 16-bit; or master_buf_<b> fp32; and param_land's
** two 16-bit sub-groups). */
int64_t zg_plan_swap_bytes_per_elem(const ZgPlan *p)
{
    const ZgZero *z = p->zero;
    int64_t land = zg_plan_param_land(p);
    if (p->sg_swap == ZG_SWAP_PARAMS) return (int64_t)p->n_sg_buffers * 4 + land;
    if (p->sg_swap != ZG_SWAP_OPTIMIZER) return land;
    bool wb = z->stage == 3 && z->offload_param.device == ZG_OFFLOAD_NVME;
    return (int64_t)p->n_sg_buffers * (p->grad_nvme ? 16 : 12) + (wb ? zg_dtype_size(z->dtype) : 0) + land;
}

int64_t zg_plan_sg_largest(const ZgPlan *p)
{
    int64_t mx = 0;
    for (int i = 0; i < p->n_subgroups; i++)
        if (p->subgroups[i].numel > mx) mx = p->subgroups[i].numel;
    return mx;
}



/* Rows a sub-group adds at most: its own, and SWAP_IN, OPTIMIZER, SWAP_OUT in the step list. */
#define SG_ROWS 4

/* Rows of every table the trainer is emitted with (zg_tables.c). Sub-groups that were not built
** (too many) count SG_ROWS each, since their ops are missing from the schedule. */
int64_t zg_plan_table_rows(const ZgPlan *p)
{
    int64_t sg = p->n_subgroups == sg_wanted ? sg_wanted : SG_ROWS * sg_wanted;
    return (int64_t)p->n_tensors + p->n_modules + p->n_buckets + p->n_gathers + sg +
           p->mem.n_regions + p->sched.n_micro + p->sched.n_last + p->sched.n_step;
}

bool zg_plan_cost_saturated(const ZgCost *c)
{
    return c->net_bytes == INT64_MAX || c->h2d_bytes == INT64_MAX || c->d2h_bytes == INT64_MAX ||
           c->nvme_read_bytes == INT64_MAX || c->nvme_write_bytes == INT64_MAX;
}

bool zg_plan_within_bounds(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    int64_t rows = zg_plan_table_rows(p);
    if (rows > ZG_MAX_TABLE_ROWS) {
        int64_t sg_rows = p->n_subgroups == sg_wanted ? sg_wanted : SG_ROWS * sg_wanted;
        int64_t other = rows - sg_rows, budget = (ZG_MAX_TABLE_ROWS - other) / SG_ROWS;
        bool sg = sg_rows > other;
        ZgLoc at = sg ? z->loc_sub_group_size : m->loc_n_layers;
        zg_error(at, "the plan needs %lld rows in the emitted tables (%d tensors, %lld optimizer sub-groups, "
                 "%d schedule ops, %d buckets, %d gather groups, %d regions); zgen emits at most %d",
                 (long long)rows, p->n_tensors, (long long)sg_wanted,
                 p->sched.n_micro + p->sched.n_last + p->sched.n_step, p->n_buckets, p->n_gathers,
                 p->mem.n_regions, ZG_MAX_TABLE_ROWS);
        if (sg && budget > 0) {
            int64_t need = (p->shard.opt_numel + budget - 1) / budget;
            need = (need + p->sg_align - 1) / p->sg_align * p->sg_align;
            zg_note(at, "sub_group_size %lld cuts each rank's %lld-element optimizer shard into %lld sub-groups; "
                    "set sub_group_size to at least %lld", (long long)z->sub_group_size,
                    (long long)p->shard.opt_numel, (long long)sg_wanted, (long long)need);
            zg_note(at, "DeepSpeed accepts the smaller value (it steps sub-group by sub-group at run time); zgen "
                    "writes every sub-group into its tables, and longer tables are slow to render and to compile");
        } else {
            zg_note(at, "model.n_layers %lld gives 12 tensors and about 10 schedule ops per layer; lower it "
                    "(zgen's tables and rendering time grow with it)", (long long)m->n_layers);
        }
        return false;
    }
    if (zg_plan_cost_saturated(&p->cost)) {
        ZgLoc at = z->loc_gas;
        zg_error(at, "the bytes moved per optimizer step do not fit in 64 bits (%lld micro-steps of "
                 "gradient_accumulation_steps)", (long long)z->grad_accum);
        zg_note(at, "zgen states every figure of a plan (plan.txt) and refuses one it cannot state; DeepSpeed "
                "accepts it: lower gradient_accumulation_steps");
        return false;
    }
    return true;
}

