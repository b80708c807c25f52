/*
** t_lower.c — the lowering pass (gen/lower.c): for every stage, dtype, world size and accumulation,
** each REDUCE / WAIT_REDUCE / GATHER / PARAM_SWAP_IN row names the collective and the buffers that
** gen/zg_plan.h's rules give (all-reduce in place at stages 0-2, reduce-scatter of the rank-major
** bucket at stage 3; straight into grad32 only for one fp32 micro-step; nothing over one rank),
** with counts from the partition map; each row's queue (stream) is the one the trainers issue it on;
** the 16-bit stage-0/1 gradient add is a GRAD_ADD row; each hand-over names its "grad_land" slot,
** the buckets in turn; and the shared enum list gives every name.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zt.h"

static ZgOffload opt_offload;   /* offload_optimizer.device of the plans made next */

static ZgPlan *plan(int stage, int ws, ZgDtype dt, int gas, ZgOffload poff)
{
    static ZgModel m[64];
    static ZgZero z[64];
    static int n;
    ZgModel *mm = &m[n % 64];
    ZgZero *zz = &z[n % 64];
    n++;
    zg_model_defaults(mm);
    mm->name = "t";
    mm->vocab_size = 256; mm->context = 64; mm->d_model = 64; mm->n_layers = 2; mm->n_heads = 2;
    mm->d_ff = 256; mm->seq_len = 64;
    zg_model_set_world_size(mm, ws);
    zg_zero_defaults(zz);
    zz->stage = stage;
    zz->micro_batch = 1;
    zz->grad_accum = gas;
    zz->train_batch_size = ws * gas;
    zz->dtype = dt;
    zz->comm_dtype = dt;
    zz->overlap_comm = stage == 3;
    zz->param_persistence_threshold = 100;      /* biases persist, weights are gathered */
    zz->offload_param.device = stage == 3 ? poff : ZG_OFFLOAD_NONE;
    if (poff == ZG_OFFLOAD_NVME) zz->offload_param.nvme_path = "/tmp";
    zz->offload_optimizer.device = opt_offload;
    if (opt_offload == ZG_OFFLOAD_NVME) zz->offload_optimizer.nvme_path = "/tmp";
    ZgPlan *p = calloc(1, sizeof *p);
    if (!zg_model_build(mm, p) || !zg_plan_build(mm, zz, p)) return NULL;
    zg_lower_build(p);
    return p;
}

static const char *rname(const ZgPlan *p, int r)
{
    return r >= 0 ? p->mem.regions[r].name : "(none)";
}

static void check_list(const ZgPlan *p, const ZgOp *ops, int n, const char *what)
{
    int stage = p->zero->stage, ws = p->model->world_size;
    bool fp32 = p->zero->dtype == ZG_DTYPE_FP32;
    bool direct = stage == 3 && fp32 && p->zero->grad_accum == 1;
    int land = 0, adds = 0, backwards = 0;
    for (int i = 0; i < n; i++) {
        const ZgOp *o = &ops[i];
        int a = o->arg;
        switch (o->kind) {
        case ZG_OP_FORWARD: case ZG_OP_BACKWARD: case ZG_OP_GRAD_ADD: case ZG_OP_GRAD_COPY:
        case ZG_OP_WAIT_GATHER: case ZG_OP_RELEASE:
            ZT_CHECKM(o->stream == ZG_STREAM_COMPUTE, "%s op %d: %s on %s", what, i, zg_op_name(o->kind),
                      zg_stream_name(o->stream));
            break;
        case ZG_OP_GATHER: case ZG_OP_REDUCE:
            ZT_EQ_INT(o->stream, ZG_STREAM_COMM);
            break;
        case ZG_OP_WAIT_REDUCE: case ZG_OP_GRAD_SHIP: case ZG_OP_GRAD_KEEP:
            ZT_CHECKM(o->stream == ZG_STREAM_D2H, "%s op %d: %s on %s", what, i, zg_op_name(o->kind),
                      zg_stream_name(o->stream));
            break;
        case ZG_OP_PARAM_SWAP_IN:
            ZT_EQ_INT(o->stream, o->xfer == ZG_XFER_NVME_READ ? ZG_STREAM_HOST : ZG_STREAM_H2D);
            break;
        default:
            break;
        }
        if (o->kind == ZG_OP_BACKWARD) backwards++;
        if (o->kind == ZG_OP_GRAD_ADD) {
            const ZgModule *md = &p->modules[a];
            int first = md->n_tensors ? md->first_tensor : p->tied_tensor;
            adds++;
            ZT_CHECKM(i > 0 && ops[i - 1].kind == ZG_OP_BACKWARD && ops[i - 1].arg == a, "%s op %d", what, i);
            ZT_EQ_STR(rname(p, o->src), "grad_stage");
            ZT_EQ_STR(rname(p, o->dst), "grads");
            ZT_EQ_INT(o->src_dt, ZG_DTYPE_FP32);
            ZT_EQ_INT(o->dst_dt, p->zero->dtype);
            ZT_EQ_INT(o->dst_off, p->tensors[first].flat_offset);
            ZT_EQ_INT(o->count, md->use_numel);
            ZT_CHECK(o->accumulate);
        }
        if (o->kind == ZG_OP_WAIT_REDUCE) {
            int slots = p->mem.grad_land_slots;
            ZT_EQ_INT(o->slot, o->xfer == ZG_XFER_NONE || slots == 0 ? -1 : land++ % slots);
        }
        if (o->kind == ZG_OP_REDUCE) {
            const ZgBucket *k = &p->buckets[a];
            ZT_EQ_INT(o->stream, ZG_STREAM_COMM);
            if (stage < 3) {
                ZT_EQ_INT(o->xfer, ws > 1 ? ZG_XFER_ALL_REDUCE : ZG_XFER_NONE);
                ZT_EQ_STR(rname(p, o->src), stage < 2 ? "grads" : zg_fmt("bucket_%d", k->buffer));
                ZT_EQ_INT(o->src, o->dst);
                ZT_EQ_INT(o->count, k->numel);
                ZT_EQ_INT(o->src_off, stage < 2 ? k->flat_offset : 0);
            } else {
                ZT_CHECKM(o->xfer == (direct || ws > 1 ? ZG_XFER_REDUCE_SCATTER : ZG_XFER_NONE),
                          "%s op %d: stage-3 REDUCE is %s", what, i, zg_xfer_name(o->xfer));
                ZT_EQ_INT(o->count * ws, k->padded_numel);
                ZT_EQ_STR(rname(p, o->src), zg_fmt("bucket_%d", k->buffer));
                if (direct) {
                    ZT_EQ_STR(rname(p, o->dst), "grad32");
                    ZT_EQ_INT(o->dst_off, p->shard.shard_offset[k->first_tensor]);
                } else {
                    ZT_EQ_STR(rname(p, o->dst), ws > 1 ? zg_fmt("bucket_recv_%d", k->buffer)
                                                       : zg_fmt("bucket_%d", k->buffer));
                }
            }
        } else if (o->kind == ZG_OP_WAIT_REDUCE) {
            const ZgBucket *k = &p->buckets[a];
            bool none = direct || (stage < 2 && !strcmp(rname(p, o->dst), "(none)") &&
                                   p->zero->offload_optimizer.device == ZG_OFFLOAD_NONE);
            if (none) {
                ZT_EQ_INT(o->xfer, ZG_XFER_NONE);
                continue;
            }
            ZT_EQ_INT(o->xfer, ZG_XFER_COPY);
            ZT_EQ_STR(rname(p, o->dst), "grad32");
            ZT_EQ_INT(o->dst_dt, ZG_DTYPE_FP32);
            ZT_EQ_INT(o->accumulate, stage >= 2);
            ZT_EQ_INT(o->flat, stage < 3 ? k->flat_offset : -1);
        } else if (o->kind == ZG_OP_GATHER) {
            ZT_EQ_INT(o->xfer, ZG_XFER_ALL_GATHER);
            ZT_EQ_STR(rname(p, o->dst), zg_fmt("gather_slot_%d", o->slot));
            ZT_EQ_INT(o->count, p->gathers[a].part_numel);
            bool off = p->zero->offload_param.device != ZG_OFFLOAD_NONE;
            ZT_EQ_STR(rname(p, o->src), off ? zg_fmt("param_buf_%d", o->slot) : "params_shard");
        } else if (o->kind == ZG_OP_PARAM_SWAP_IN) {
            ZT_EQ_STR(rname(p, o->dst), zg_fmt("param_buf_%d", o->slot));
            ZT_EQ_INT(o->src_off, p->gathers[a].shard_offset);
            ZT_EQ_INT(o->count, p->gathers[a].shard_numel);
            ZT_EQ_INT(o->xfer, p->zero->offload_param.device == ZG_OFFLOAD_NVME ? ZG_XFER_NVME_READ
                                                                                : ZG_XFER_COPY);
        } else if (o->kind == ZG_OP_BACKWARD) {
            ZT_EQ_INT(o->dst_dt, ZG_DTYPE_FP32);
            ZT_EQ_INT(o->accumulate, stage <= 1 && fp32);
        }
    }
    ZT_CHECKM(adds == (stage <= 1 && !fp32 ? backwards : 0), "%s: %d GRAD_ADD rows, %d backwards", what, adds,
              backwards);
}

static void t_reductions(void)
{
    const ZgDtype dts[] = {ZG_DTYPE_FP32, ZG_DTYPE_BF16, ZG_DTYPE_FP16};
    for (int stage = 0; stage <= 3; stage++)
        for (int ws = 1; ws <= 4; ws *= 2)
            for (int d = 0; d < 3; d++)
                for (int gas = 1; gas <= 2; gas++) {
                    ZgPlan *p = plan(stage, ws, dts[d], gas, ZG_OFFLOAD_NONE);
                    ZT_CHECKM(p != NULL, "stage %d ws %d", stage, ws);
                    if (!p) continue;
                    check_list(p, p->sched.micro, p->sched.n_micro, "micro");
                    check_list(p, p->sched.last, p->sched.n_last, "last");
                }
}

static void t_param_offload(void)
{
    for (int o = ZG_OFFLOAD_CPU; o <= ZG_OFFLOAD_NVME; o++) {
        ZgPlan *p = plan(3, 2, ZG_DTYPE_BF16, 1, (ZgOffload)o);
        ZT_CHECK(p != NULL);
        if (!p) continue;
        int swaps = 0;
        for (int i = 0; i < p->sched.n_last; i++) swaps += p->sched.last[i].kind == ZG_OP_PARAM_SWAP_IN;
        ZT_CHECK(swaps > 0);
        check_list(p, p->sched.last, p->sched.n_last, "last");
    }
}

/* Each sub-group's Adam operands (zg_optimizers): where the memory plan put master, m, v, the
** gradients and the working copy, so the trainers read them instead of deciding. */
static void t_optimizer_rows(void)
{
    struct { int stage; ZgDtype dt; ZgOffload opt, par; const char *master, *m, *grad, *home; bool ranked; } c[] = {
        {2, ZG_DTYPE_FP32, ZG_OFFLOAD_NONE, ZG_OFFLOAD_NONE, "params16", "adam_m", "grad32", NULL, true},
        {1, ZG_DTYPE_BF16, ZG_OFFLOAD_NONE, ZG_OFFLOAD_NONE, "master", "adam_m", "grads", "params16", true},
        {2, ZG_DTYPE_BF16, ZG_OFFLOAD_CPU, ZG_OFFLOAD_NONE, "master", "adam_m", "grad32", "params16", true},
        {3, ZG_DTYPE_BF16, ZG_OFFLOAD_NVME, ZG_OFFLOAD_NONE, "opt_buf_", "opt_buf_", "opt_buf_", "params_shard", false},
        {3, ZG_DTYPE_BF16, ZG_OFFLOAD_NVME, ZG_OFFLOAD_NVME, "opt_buf_", "opt_buf_", NULL, "param_wb", false},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        opt_offload = c[i].opt;
        ZgPlan *p = plan(c[i].stage, 2, c[i].dt, 2, c[i].par);
        opt_offload = ZG_OFFLOAD_NONE;
        ZT_CHECKM(p != NULL && p->optim != NULL, "case %zu", i);
        if (!p || !p->optim) continue;
        for (int k = 0; k < p->n_subgroups; k++) {
            const ZgOptRow *r = &p->optim[k];
            const ZgSubGroup *sg = &p->subgroups[k];
            ZT_CHECKM(!strncmp(rname(p, r->master), c[i].master, strlen(c[i].master)), "case %zu sg %d: master in %s",
                      i, k, rname(p, r->master));
            ZT_CHECKM(!strncmp(rname(p, r->m), c[i].m, strlen(c[i].m)), "case %zu sg %d: m in %s", i, k, rname(p, r->m));
            if (c[i].grad)
                ZT_CHECKM(!strncmp(rname(p, r->grad), c[i].grad, strlen(c[i].grad)), "case %zu sg %d: gradients in %s",
                          i, k, rname(p, r->grad));
            ZT_EQ_STR(rname(p, r->home), c[i].home ? c[i].home : "(none)");
            ZT_EQ_INT(r->home_nvme, c[i].par == ZG_OFFLOAD_NVME);
            ZT_EQ_INT(r->master_ranked || r->home_ranked, c[i].ranked);
            if (c[i].opt == ZG_OFFLOAD_NVME) {      /* the parts of the sub-group's staging buffer */
                ZT_EQ_STR(rname(p, r->master), zg_fmt("opt_buf_%d", sg->buffer));
                ZT_EQ_INT(r->master_off, -sg->shard_offset);
                ZT_CHECK(r->m_off > r->master_off && r->v_off - r->m_off == r->m_off - r->master_off);
            } else {
                ZT_EQ_INT(r->m_off, -p->opt_dev_numel);
            }
        }
    }
}

/* The shared lists name every enumerator and agree with the enums' counts. */
static void t_names(void)
{
    ZT_EQ_STR(zg_op_name(ZG_OP_GRAD_COPY), "GRAD_COPY");
    ZT_EQ_STR(zg_tier_name(ZG_TIER_NVME), "nvme");
    ZT_EQ_STR(zg_memcat_name(ZG_MEM_STAGING), "staging");
    ZT_EQ_STR(zg_xfer_name(ZG_XFER_REDUCE_SCATTER), "reduce_scatter");
    ZT_EQ_STR(zg_stream_name(ZG_STREAM_D2H), "d2h");
    ZT_EQ_STR(zg_modkind_name(ZG_MOD_FINAL_NORM), "final_norm");
    ZT_EQ_STR(zg_dtype_name(ZG_DTYPE_FP16), "fp16");
}

int main(void)
{
    ZT_RUN(t_names);
    ZT_RUN(t_reductions);
    ZT_RUN(t_param_offload);
    ZT_RUN(t_optimizer_rows);
    return zt_end();
}
