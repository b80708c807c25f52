/*
** t_lower.c — the lowering pass (gen/lower.c): for every stage, dtype, world size and accumulation,
** each REDUCE / WAIT_REDUCE / GATHER / PARAM_SWAP_IN row names the collective and the buffers that
** gen/zg_plan.h's rules give (all-reduce in place at stages 0-2, reduce-scatter of the rank-major
** bucket at stage 3; straight into grad32 only for one fp32 micro-step; nothing over one rank),
** with counts from the partition map, and the shared enum list gives every name.
*/
#include <stdlib.h>
#include <string.h>
#include "zg.h"
#include "zt.h"

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
    for (int i = 0; i < n; i++) {
        const ZgOp *o = &ops[i];
        int a = o->arg;
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
    return zt_end();
}
