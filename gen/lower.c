/*
** lower.c — the lowering pass: completes every op row of the schedule with the data movement it
** stands for — collective or copy kind, source and destination region (by index), offsets, counts,
** dtypes, accumulate flag, stream — from the partition map (plan.c) and the memory plan
** (memplan.c). Every rule a trainer would otherwise apply again is applied here once: which buffer a
** stage reduces (the flat "grads" at stages 0/1, a bucket buffer at 2/3), all-reduce versus
** reduce-scatter, the stage-3 "direct" rule (one fp32 micro-step reduce-scatters straight into the
** zeroed grad32), the one-rank identity (an in-place sum over one rank moves nothing), where a
** gradient hand-over lands and whether it adds (grad32, or with device accumulation "grad_acc",
** which GRAD_SHIP then copies into grad32), and which copy crosses PCIe. The trainers execute the
** rows (templates/trainer/train_exec.c); plan.txt and plan.json show them.
*/
#include <string.h>

#include "zg_plan.h"

typedef struct Lower {
    ZgPlan *p;
    int stage, ws;
    ZgDtype w;                  /* working (and gradient communication) dtype */
    bool direct;                /* stage 3: REDUCE lands in grad32 itself */
    int last_bwd;               /* module of the latest BACKWARD in the list being lowered */
    int land_next;              /* the next "grad_land" slot a hand-over row lands in */
} Lower;

/* Index of region `name`, -1 when the plan has none. */
static int rid(const ZgPlan *p, const char *name)
{
    for (int i = 0; i < p->mem.n_regions; i++)
        if (!strcmp(p->mem.regions[i].name, name)) return i;
    return -1;
}

static int ridn(const ZgPlan *p, const char *prefix, int n)
{
    return rid(p, zg_fmt("%s%d", prefix, n));
}

static ZgTier tier_of(const ZgPlan *p, int r)
{
    return r >= 0 ? p->mem.regions[r].tier : ZG_TIER_DEVICE;
}

/* The queue each row is issued on, which both trainers read (the CUDA one's streams, the host's
** trace tracks): modules, gather waits and releases on compute; collectives on comm; the shard's
** spans into param_buf on h2d (a host NVMe read on host); everything after a bucket's reduction
** (WAIT_REDUCE, GRAD_SHIP, GRAD_KEEP) on d2h, so its copies and device hand-overs stay in order
** behind the reduction and the bucket buffer is free once that queue passes them; Adam on compute
** where its state is on the device, else on host; sub-group swaps on host. */

/* The module gradient area G of gen/zg_plan.h's GRADIENT FLOW for module m: region, offset. */
static int grad_area(const Lower *L, int m, int64_t *off)
{
    const ZgPlan *p = L->p;
    const ZgModule *mod = &p->modules[m];
    *off = 0;
    if (L->stage <= 1 && L->w == ZG_DTYPE_FP32) {
        int first = mod->n_tensors ? mod->first_tensor : p->tied_tensor;
        *off = first >= 0 ? p->tensors[first].flat_offset : 0;
        return rid(p, "grads");
    }
    if (mod->kind == ZG_MOD_HEAD && mod->n_tensors == 0 && L->stage >= 2 && rid(p, "tied_grad") >= 0)
        return rid(p, "tied_grad");
    return rid(p, "grad_stage");
}

/* The gradients the device's sub-groups of a split optimizer read (plan.c): grad_keep (16-bit,
** one micro-step) or the device accumulator grad_acc (fp32). */
static int dev_part_grads(const Lower *L, ZgDtype *dt)
{
    *dt = L->p->grad_keep ? L->w : ZG_DTYPE_FP32;
    return rid(L->p, L->p->grad_keep ? "grad_keep" : "grad_acc");
}

/* The gradients a host-side (or whole-device) Adam reads: grad32 (fp32), grad16, or "grads"
** (stages 0/1 without either, this rank's part of it). */
static int shard_grads(const Lower *L, ZgDtype *dt)
{
    int g32 = rid(L->p, "grad32"), g16 = rid(L->p, "grad16");
    *dt = g32 >= 0 ? ZG_DTYPE_FP32 : L->w;
    return g32 >= 0 ? g32 : g16 >= 0 ? g16 : rid(L->p, "grads");
}

static void lower_op(Lower *L, ZgOp *o)
{
    ZgPlan *p = L->p;
    int a = o->arg, s = o->slot;
    o->xfer = ZG_XFER_NONE;
    o->stream = ZG_STREAM_COMPUTE;
    o->src = o->dst = -1;
    o->src_off = o->dst_off = o->count = 0;
    o->src_dt = o->dst_dt = L->w;
    o->accumulate = false;
    o->flat = -1;
    switch (o->kind) {
    case ZG_OP_PARAM_SWAP_IN: {
        const ZgGather *g = &p->gathers[a];
        o->src = rid(p, "params_shard");
        o->dst = ridn(p, "param_buf_", s);
        o->xfer = tier_of(p, o->src) == ZG_TIER_NVME ? ZG_XFER_NVME_READ : ZG_XFER_COPY;
        o->src_off = g->shard_offset;
        o->count = g->shard_numel;
        o->stream = o->xfer == ZG_XFER_NVME_READ ? ZG_STREAM_HOST : ZG_STREAM_H2D;
        break;
    }
    case ZG_OP_GATHER:
    case ZG_OP_WAIT_GATHER: {
        const ZgGather *g = &p->gathers[a];
        int buf = ridn(p, "param_buf_", s);
        o->xfer = ZG_XFER_ALL_GATHER;
        o->src = buf >= 0 ? buf : rid(p, "params_shard");
        o->src_off = buf >= 0 ? 0 : g->shard_offset;
        o->dst = ridn(p, "gather_slot_", s);
        o->count = g->part_numel;
        o->stream = o->kind == ZG_OP_GATHER ? ZG_STREAM_COMM : ZG_STREAM_COMPUTE;
        break;
    }
    case ZG_OP_RELEASE:
        o->dst = ridn(p, "gather_slot_", s);
        break;
    case ZG_OP_FORWARD:
        o->dst = rid(p, "acts");
        break;
    case ZG_OP_BACKWARD:
        o->dst = grad_area(L, a, &o->dst_off);
        o->dst_dt = ZG_DTYPE_FP32;
        o->accumulate = L->stage <= 1 && L->w == ZG_DTYPE_FP32;
        o->count = p->modules[a].use_numel;
        L->last_bwd = a;
        break;
    case ZG_OP_GRAD_ADD: {      /* the module's gradient area, widened-added into "grads" */
        o->xfer = ZG_XFER_COPY;
        o->src = grad_area(L, a, &o->src_off);
        o->src_dt = ZG_DTYPE_FP32;
        const ZgModule *mod = &p->modules[a];
        int first = mod->n_tensors ? mod->first_tensor : p->tied_tensor;
        o->dst = rid(p, "grads");
        o->dst_off = first >= 0 ? p->tensors[first].flat_offset : 0;
        o->count = mod->use_numel;
        o->accumulate = true;
        break;
    }
    case ZG_OP_GRAD_COPY: {
        const ZgBucket *k = &p->buckets[a];
        o->xfer = ZG_XFER_COPY;
        o->src = grad_area(L, L->last_bwd, &o->src_off);
        o->src_dt = ZG_DTYPE_FP32;
        o->dst = ridn(p, "bucket_", k->buffer);
        for (int t = k->first_tensor; t < k->first_tensor + k->n_tensors; t++)
            if (p->tensors[t].module == L->last_bwd)
                o->count += L->stage == 3 ? p->tensors[t].part_numel * L->ws : p->tensors[t].numel;
        break;
    }
    case ZG_OP_REDUCE:
    case ZG_OP_WAIT_REDUCE: {
        const ZgBucket *k = &p->buckets[a];
        int buf = L->stage >= 2 ? ridn(p, "bucket_", k->buffer) : rid(p, "grads");
        int64_t buf_off = L->stage >= 2 ? 0 : k->flat_offset;
        int recv = L->stage == 3 ? ridn(p, "bucket_recv_", k->buffer) : -1;
        int g32 = rid(p, "grad32");
        int64_t g32_off = L->stage == 3 ? p->shard.shard_offset[k->first_tensor] : 0;
        if (o->kind == ZG_OP_REDUCE) {
            o->stream = ZG_STREAM_COMM;
            o->src = buf;
            o->src_off = buf_off;
            if (L->stage < 3) {               /* in place: each rank keeps its part */
                o->xfer = L->ws > 1 ? ZG_XFER_ALL_REDUCE : ZG_XFER_NONE;
                o->dst = buf;
                o->dst_off = buf_off;
                o->count = k->numel;
            } else {                          /* rank-major bucket: rank r receives chunk r */
                o->count = k->padded_numel / L->ws;
                if (L->direct) {
                    o->xfer = ZG_XFER_REDUCE_SCATTER;
                    o->dst = g32;
                    o->dst_off = g32_off;
                    o->dst_dt = ZG_DTYPE_FP32;
                } else {
                    /* one rank: the bucket's only chunk is already where it would land */
                    o->xfer = L->ws > 1 ? ZG_XFER_REDUCE_SCATTER : ZG_XFER_NONE;
                    o->dst = recv >= 0 ? recv : buf;
                }
            }
            break;
        }
        /* WAIT_REDUCE: the hand-over of the reduced gradients into grad32 (or, 16-bit with one
        ** micro-step, a copy into grad16) */
        int g16 = rid(p, "grad16");
        o->stream = ZG_STREAM_D2H;
        if ((g32 < 0 && g16 < 0) || L->direct) {
            o->xfer = ZG_XFER_NONE;
            break;
        }
        o->xfer = ZG_XFER_COPY;
        /* a GPU rank's D2H of the reduced part lands in a slot of the pinned "grad_land" (gen/memplan.c),
        ** the buckets in turn; the row names it (a landing's next use waits for its hand-over) */
        if (p->mem.grad_land_slots > 0) o->slot = L->land_next++ % p->mem.grad_land_slots;
        o->dst = g32 >= 0 ? g32 : g16;
        o->dst_dt = g32 >= 0 ? ZG_DTYPE_FP32 : L->w;
        if (p->grad_acc_dev) o->dst = rid(p, "grad_acc");     /* GRAD_SHIP takes it on from there */
        if (L->stage < 3) {
            o->src = buf;
            o->src_off = buf_off;
            o->flat = k->flat_offset;
            o->count = k->numel;
            o->accumulate = L->stage == 2 && g32 >= 0;    /* stages 0/1 reduce the accumulated sum once */
        } else {
            o->src = recv >= 0 ? recv : buf;
            o->count = k->padded_numel / L->ws;
            o->dst_off = g32_off;
            o->accumulate = true;
        }
        /* gradients on NVMe: added into the sub-group window(s) the chunk falls in, which are
        ** written through to grad32 in the swap file (read back first after the first micro-step) */
        if (p->grad_nvme) o->xfer = ZG_XFER_NVME_WRITE;
        break;
    }
    case ZG_OP_GRAD_KEEP: {     /* stage 2 (plan.c grad_keep): the bucket's sums where WAIT_REDUCE
                                ** reads them; the trainers take the part inside the device range */
        const ZgBucket *k = &p->buckets[a];
        o->xfer = ZG_XFER_COPY;
        o->src = ridn(p, "bucket_", k->buffer);
        o->dst = rid(p, "grad_keep");
        o->flat = k->flat_offset;
        o->count = k->numel;
        o->stream = ZG_STREAM_D2H;
        break;
    }
    case ZG_OP_GRAD_SHIP: {
        const ZgBucket *k = &p->buckets[a];
        o->xfer = ZG_XFER_COPY;
        o->src = rid(p, "grad_acc");
        o->dst = rid(p, "grad32");
        o->src_dt = o->dst_dt = ZG_DTYPE_FP32;
        if (L->stage < 3) {
            o->flat = k->flat_offset;
            o->count = k->numel;
        } else {                /* this rank's chunk, where WAIT_REDUCE added it */
            o->src_off = o->dst_off = p->shard.shard_offset[k->first_tensor];
            o->count = k->padded_numel / L->ws;
        }
        o->stream = ZG_STREAM_D2H;
        break;
    }
    case ZG_OP_SWAP_IN:
    case ZG_OP_SWAP_OUT: {
        const ZgSubGroup *sg = &p->subgroups[a];
        bool par = p->sg_swap == ZG_SWAP_PARAMS;
        int file = par ? rid(p, "params_shard") : rid(p, "master");
        int stage_buf = ridn(p, par ? "master_buf_" : "opt_buf_", sg->buffer);
        bool in = o->kind == ZG_OP_SWAP_IN;
        o->xfer = in ? ZG_XFER_NVME_READ : ZG_XFER_NVME_WRITE;
        o->stream = ZG_STREAM_HOST;
        o->src = in ? file : stage_buf;
        o->dst = in ? stage_buf : file;
        o->src_off = in ? sg->shard_offset : 0;
        o->dst_off = in ? 0 : sg->shard_offset;
        o->src_dt = o->dst_dt = ZG_DTYPE_FP32;
        o->count = sg->numel;
        break;
    }
    case ZG_OP_OPTIMIZER: {
        const ZgSubGroup *sg = &p->subgroups[a];
        if (zg_plan_sg_on_device(p, a)) {   /* part of a CPU optimizer on the device (plan.c) */
            o->src = dev_part_grads(L, &o->src_dt);
            o->src_off = o->dst_off = sg->shard_offset;
            o->dst = rid(p, "master_dev");
            o->dst_dt = ZG_DTYPE_FP32;
            o->count = sg->numel;
            o->stream = ZG_STREAM_COMPUTE;
            break;
        }
        o->src = shard_grads(L, &o->src_dt);
        o->src_off = sg->shard_offset;
        o->dst = sg->buffer >= 0 ? ridn(p, p->sg_swap == ZG_SWAP_PARAMS ? "master_buf_" : "opt_buf_",
                                        sg->buffer)
                                 : rid(p, "master");
        if (o->dst < 0) o->dst = rid(p, L->stage == 3 ? "params_shard" : "params16");
        o->dst_dt = rid(p, "master") >= 0 || sg->buffer >= 0 ? ZG_DTYPE_FP32 : L->w;
        /* "master" holds the shard from opt_dev_numel on (the rest is "master_dev") */
        o->dst_off = sg->buffer >= 0 ? 0 : sg->shard_offset - p->opt_dev_numel;
        o->count = sg->numel;
        o->stream = tier_of(p, rid(p, "adam_m")) == ZG_TIER_DEVICE ? ZG_STREAM_COMPUTE : ZG_STREAM_HOST;
        break;
    }
    case ZG_OP_ALLGATHER_PARAMS:
        o->xfer = L->ws > 1 ? ZG_XFER_ALL_GATHER : ZG_XFER_NONE;
        o->stream = ZG_STREAM_COMM;
        if (L->stage < 3) {                   /* in place: rank r's partition at r * count */
            o->src = o->dst = rid(p, "params16");
            o->count = p->shard.part_numel;
        } else {
            /* the persistent tensors, whole, into "persist": every rank writes its slices into the
            ** zeroed region and one all-reduce of all of it sums them (x + 0 is exact; no staging
            ** for padded slices). Still a row at one rank: the slices are copied */
            o->xfer = ZG_XFER_ALL_REDUCE;
            o->src = rid(p, "params_shard");
            o->dst = rid(p, "persist");
            o->count = zg_persist_region_numel(p);
        }
        break;
    case ZG_NOPS:
        zg_unreachable();
    }
}

/* Sub-group k's Adam operands, by where the memory plan put the state (decided here, once):
** - master on NVMe: master, m, v (and with the gradients on NVMe, those) in the parts of the
**   sub-group's staging buffer opt_buf_<b>, which SWAP_IN filled;
** - fp32 with the parameters on NVMe and no separate master: the parameters are the master, in
**   master_buf_<b>; m and v in memory, by shard element;
** - the device's sub-groups of a split optimizer: the *_dev regions, the gradients the OPTIMIZER
**   row's source (grad_keep or grad_acc);
** - else master (or, fp32 without one, the working copy) and m, v in memory, which hold the shard
**   from opt_dev_numel on.
** Gradients otherwise: grad32 (fp32), grad16, or this rank's part of "grads". The working copy is
** written when the master is separate: to params16 / params_shard, or through param_wb when the
** shard is on NVMe. */
static void lower_optimizer(Lower *L, int k)
{
    ZgPlan *p = L->p;
    const ZgSubGroup *sg = &p->subgroups[k];
    ZgOptRow *r = &p->optim[k];
    int64_t s0 = sg->shard_offset, dev = p->opt_dev_numel;
    int master = rid(p, "master"), p16 = rid(p, "params16"), shard = rid(p, "params_shard");
    int home = p16 >= 0 ? p16 : shard;
    *r = (ZgOptRow){.master = -1, .m = -1, .v = -1, .grad = -1, .home = -1, .grad_dt = L->w,
                    .next_master = -1, .next_m = -1, .next_v = -1};
    r->grad = shard_grads(L, &r->grad_dt);
    r->grad_ranked = r->grad == rid(p, "grads");
    if (master >= 0 && tier_of(p, master) == ZG_TIER_NVME) {
        int ob = ridn(p, "opt_buf_", sg->buffer);
        int64_t part = p->mem.regions[ob].bytes / (4 * (p->grad_nvme ? 4 : 3));
        r->master = r->m = r->v = ob;
        r->master_off = -s0;
        r->m_off = part - s0;
        r->v_off = 2 * part - s0;
        if (p->grad_nvme) {
            r->grad = ob;
            r->grad_off = 3 * part - s0;
            r->grad_dt = ZG_DTYPE_FP32;
        }
    } else if (ridn(p, "master_buf_", 0) >= 0) {
        r->master = ridn(p, "master_buf_", sg->buffer);
        r->master_off = -s0;
        r->m = rid(p, "adam_m");
        r->v = rid(p, "adam_v");
    } else if (zg_plan_sg_on_device(p, k)) {
        r->master = rid(p, "master_dev");
        r->m = rid(p, "adam_m_dev");
        r->v = rid(p, "adam_v_dev");
        r->grad = dev_part_grads(L, &r->grad_dt);
        r->grad_ranked = false;
        r->grad_off = 0;
    } else {
        r->master = master >= 0 ? master : home;
        r->master_off = master >= 0 ? -dev : 0;
        r->master_ranked = master < 0 && home == p16;
        r->m = rid(p, "adam_m");
        r->v = rid(p, "adam_v");
        r->m_off = r->v_off = -dev;
    }
    if (master >= 0) {
        if (shard >= 0 && tier_of(p, shard) == ZG_TIER_NVME) {
            r->home = rid(p, "param_wb");
            r->home_off = -s0;
            r->home_nvme = true;
        } else {
            r->home = home;
            r->home_ranked = home == p16;
        }
    }
    if (p->speculative && !zg_plan_sg_on_device(p, k)) {
        r->next_master = rid(p, "master_next");
        r->next_m = rid(p, "adam_m_next");
        r->next_v = rid(p, "adam_v_next");
        r->next_off = -dev;
    }
}

static void lower_optimizers(Lower *L)
{
    ZgPlan *p = L->p;
    p->optim = zg_xcalloc((size_t)(p->n_subgroups ? p->n_subgroups : 1), sizeof *p->optim);
    for (int k = 0; k < p->n_subgroups; k++) lower_optimizer(L, k);
}

static void lower_list(Lower *L, ZgOp *ops, int n)
{
    L->last_bwd = -1;
    L->land_next = 0;
    for (int i = 0; i < n; i++) lower_op(L, &ops[i]);
}

void zg_lower_build(ZgPlan *p)
{
    Lower L = {.p = p, .stage = p->zero->stage, .ws = p->model->world_size, .w = p->zero->dtype};
    L.direct = p->reduce_direct;
    lower_list(&L, p->sched.micro, p->sched.n_micro);
    lower_list(&L, p->sched.last, p->sched.n_last);
    lower_list(&L, p->sched.step, p->sched.n_step);
    lower_optimizers(&L);
}
