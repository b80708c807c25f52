/*
** planout_txt.c — plan.txt, the plan for people: memory per tier per rank with categories, the
** regions, the partition summary, who owns what, buckets, gathers, sub-groups, the schedule with
** one op per line and what it means, and per step the bytes moved per link and the FLOPs, so cost
** and memory can be read before launch. Deterministic like plan.json.
*/
#include <string.h>
#include "zg.h"
#include "zg_cuda_dec.h"       /* the device activations' storage */

#define SHOW_RANKS 4            /* above 2*SHOW_RANKS ranks, list the first and last few */

static double gib(int64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

static void hr(FILE *f, const char *title)
{
    fprintf(f, "\n== %s ==\n", title);
}

static const char *mod_name(const ZgPlan *p, int mi) { return p->modules[mi].name; }

static void op_line(const ZgPlan *p, FILE *f, int idx, const ZgOp *op, int last_bwd)
{
    const ZgZero *z = p->zero;
    int a = op->arg;
    fprintf(f, "  %4d  %-16s %4d", idx, zg_op_name(op->kind), a);
    if (op->kind == ZG_OP_FORWARD && op->slot == ZG_RECOMPUTE) fputs(" rc  ", f);
    else if (op->slot >= 0) fprintf(f, " s%-2d ", op->slot);
    else fputs("     ", f);
    switch (op->kind) {
    case ZG_OP_GATHER:
        fprintf(f, "start all-gather of %s's shards (%lld elements per rank) into gather_slot_%d\n",
                mod_name(p, p->gathers[a].module), (long long)p->gathers[a].part_numel, op->slot);
        break;
    case ZG_OP_WAIT_GATHER:
        fprintf(f, "wait until %s's parameters are gathered in gather_slot_%d\n",
                mod_name(p, p->gathers[a].module), op->slot);
        break;
    case ZG_OP_RELEASE:
        fprintf(f, "gather_slot_%d (%s) is free again\n", op->slot, mod_name(p, p->gathers[a].module));
        break;
    case ZG_OP_FORWARD:
        if (op->slot == ZG_RECOMPUTE)
            fprintf(f, "recompute forward of %s from its kept input (activation checkpointing)\n",
                    mod_name(p, a));
        else
            fprintf(f, "forward of %s\n", mod_name(p, a));
        break;
    case ZG_OP_BACKWARD:
        fprintf(f, "backward of %s (parameter gradients into the module grad area)\n", mod_name(p, a));
        break;
    case ZG_OP_GRAD_COPY:
        fprintf(f, "copy %s's gradients that belong to bucket %d into bucket_%d\n",
                last_bwd >= 0 ? mod_name(p, last_bwd) : "?", a, p->buckets[a].buffer);
        break;
    case ZG_OP_REDUCE:
        fprintf(f, "start %s of bucket %d (%s .. %s, %lld elements)\n",
                z->stage == 3 ? "reduce-scatter" : "all-reduce", a,
                p->tensors[p->buckets[a].first_tensor + p->buckets[a].n_tensors - 1].name,
                p->tensors[p->buckets[a].first_tensor].name, (long long)p->buckets[a].padded_numel);
        break;
    case ZG_OP_WAIT_REDUCE:
        fprintf(f, "wait for bucket %d's reduction%s\n", a,
                p->grad_nvme ? "; add this rank's part into its sub-groups' gradient windows "
                               "(opt_buf_<b>), written through to grad32 on NVMe"
                : p->grad_acc_dev ? "; add this rank's part into grad_acc on the device"
                : z->stage >= 2 || z->offload_optimizer.device != ZG_OFFLOAD_NONE
                ? "; add this rank's part into grad32" : "");
        break;
    case ZG_OP_SWAP_IN:
        if (p->sg_swap == ZG_SWAP_PARAMS)
            fprintf(f, "start reading sub-group %d's fp32 params (the master) from NVMe into "
                    "master_buf_%d\n", a, p->subgroups[a].buffer);
        else
            fprintf(f, "start reading sub-group %d (master, m, v%s) from NVMe into opt_buf_%d\n", a,
                    p->grad_nvme ? ", gradients" : "", p->subgroups[a].buffer);
        break;
    case ZG_OP_OPTIMIZER:
        fprintf(f, "Adam on sub-group %d (%lld elements at shard offset %lld)%s, then its params\n",
                a, (long long)p->subgroups[a].numel, (long long)p->subgroups[a].shard_offset,
                zg_plan_sg_on_device(p, a) ? " on the device (master_dev, adam_m_dev, adam_v_dev)" : "");
        break;
    case ZG_OP_GRAD_ADD:
        fprintf(f, "add %s's fp32 gradients into the 16-bit accumulation buffer grads\n", mod_name(p, a));
        break;
    case ZG_OP_GRAD_KEEP:
        fprintf(f, "keep the part of bucket %d's sums inside this rank's device optimizer range in grad_keep\n", a);
        break;
    case ZG_OP_SWAP_OUT:
        fprintf(f, p->sg_swap == ZG_SWAP_PARAMS
                ? "start writing sub-group %d's updated fp32 params back to NVMe\n"
                : "start writing sub-group %d (master, m, v) back to NVMe\n", a);
        break;
    case ZG_OP_ALLGATHER_PARAMS:
        fprintf(f, z->stage == 3 ? "re-gather the persistent tensors into persist\n"
                                 : "all-gather the updated params16 partitions\n");
        break;
    case ZG_OP_GRAD_SHIP:
        fprintf(f, "bucket %d's sums are final: this rank's part of grad_acc down into grad32%s\n", a,
                p->norm_fused ? ", its squares summed for the norm" : "");
        break;
    case ZG_OP_PARAM_SWAP_IN:
        fprintf(f, "bring %s's shard span (%lld elements) from %s into param_buf_%d\n",
                mod_name(p, p->gathers[a].module), (long long)p->gathers[a].shard_numel,
                zg_offload_name(z->offload_param.device), op->slot);
        break;
    case ZG_NOPS:
        zg_unreachable();
    }
}

/* The lowered row (lower.c) under the op's meaning, when it moves data: what the trainer runs. */
static void lowered_line(const ZgPlan *p, FILE *f, const ZgOp *op)
{
    if (op->xfer == ZG_XFER_NONE) return;
    const char *src = op->src >= 0 ? p->mem.regions[op->src].name : "-";
    const char *dst = op->dst >= 0 ? p->mem.regions[op->dst].name : "-";
    fprintf(f, "%27s%s on %s: %s[%lld] %s -> %s[%lld] %s, %lld elements%s", "-> ",
            zg_xfer_name(op->xfer), zg_stream_name(op->stream), src, (long long)op->src_off,
            zg_dtype_name(op->src_dt), dst, (long long)op->dst_off, zg_dtype_name(op->dst_dt),
            (long long)op->count, op->accumulate ? ", added" : "");
    if (op->flat >= 0) fprintf(f, ", this rank's part of flat [%lld, %lld)", (long long)op->flat,
                               (long long)(op->flat + op->count));
    fputc('\n', f);
}

static void ops_txt(const ZgPlan *p, FILE *f, const char *title, const ZgOp *ops, int n)
{
    fprintf(f, "\n-- %s (%d ops) --\n", title, n);
    int last_bwd = -1;
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == ZG_OP_BACKWARD) last_bwd = ops[i].arg;
        op_line(p, f, i, &ops[i], last_bwd);
        lowered_line(p, f, &ops[i]);
    }
}

/* The sizes the planner chose because the config left the key at DeepSpeed's default, each with
** what the default would have planned (ZgPlan.sized_auto, ds_default_bytes). */
static void sizes_txt(const ZgPlan *p, FILE *f)
{
    const ZgZero *z = p->zero;
    const int64_t *ds = p->ds_default_bytes;
    if (!p->sized_auto) return;
    hr(f, "sizes zgen chose (the config left these keys at DeepSpeed's defaults; set a key to override)");
    if (p->sized_auto & ZG_SET_REDUCE_BUCKET) {
        int64_t mine = p->mem.cat_bytes[ZG_TIER_DEVICE][ZG_MEM_COMM_BUCKETS];
        fprintf(f, "reduce bucket sized from the model: 1 layer = %lld elements (a larger tensor is a "
                "bucket of its own; buffers: %d x %lld elements = %.3f GiB); DeepSpeed's default "
                "reduce_bucket_size 5e8 would have used %.3f GiB\n", (long long)p->reduce_bucket_cap,
                p->n_bucket_buffers, (long long)p->bucket_buffer_numel, gib(mine),
                gib(ds[ZG_MEM_COMM_BUCKETS]));
    }
    if (p->sized_auto & ZG_SET_PREFETCH)
        fprintf(f, "gather slots sized from the model: %d slots of the largest gather group (%lld "
                "elements; prefetch depth %d) = %.3f GiB; DeepSpeed's defaults "
                "stage3_prefetch_bucket_size 5e7 and stage3_max_live_parameters 1e9 would have "
                "used %.3f GiB\n", p->n_gather_slots, (long long)p->gather_slot_numel,
                p->sched.prefetch_depth, gib(p->mem.cat_bytes[ZG_TIER_DEVICE][ZG_MEM_GATHER_SLOTS]),
                gib(ds[ZG_MEM_GATHER_SLOTS]));
    if ((p->sized_auto & ZG_SET_SUB_GROUP) && p->sg_for_spec)
        fprintf(f, "sub_group_size sized for the speculative step: %lld elements, one reduce bucket (%d "
                "sub-groups; each one's Adam starts as soon as backward has finalised its gradients, "
                "a bucket at a time); DeepSpeed's default sub_group_size %lld would have cut the shard "
                "into %lld, the first not starting before backward had passed %lld elements of it\n",
                (long long)p->sub_group_numel, p->n_subgroups, (long long)z->sub_group_size,
                (long long)((p->shard.opt_numel + z->sub_group_size - 1) / z->sub_group_size),
                (long long)(z->sub_group_size < p->shard.opt_numel ? z->sub_group_size : p->shard.opt_numel));
    else if (p->sized_auto & ZG_SET_SUB_GROUP) {
        int64_t mine = 0;
        for (int t = 0; t < ZG_NTIERS; t++)
            if (t != ZG_TIER_NVME) mine += p->mem.cat_bytes[t][ZG_MEM_SWAP_BUFFERS];
        fprintf(f, "sub_group_size sized to hardware.host_memory %.3f GiB: %lld elements (%d "
                "sub-groups, %d staging buffers; swap buffers %.3f GiB per rank, at most half of "
                "what the rest of the plan leaves); DeepSpeed's default sub_group_size %lld would "
                "have used %.3f GiB\n", gib(p->model->host_memory), (long long)p->sub_group_numel,
                p->n_subgroups, p->n_sg_buffers, gib(mine), (long long)z->sub_group_size,
                gib(ds[ZG_MEM_SWAP_BUFFERS]));
    }
}

static void memory_txt(const ZgPlan *p, FILE *f)
{
    const ZgModel *m = p->model;
    hr(f, "memory per rank");
    for (int t = 0; t < ZG_NTIERS; t++) {
        int64_t b = p->mem.tier_bytes[t];
        fprintf(f, "%-7s %10.3f GiB  (%lld bytes, peak %lld)\n", zg_tier_name((ZgTier)t), gib(b),
                (long long)b, (long long)p->mem.peak_bytes[t]);
        for (int c = 0; c < ZG_NMEM; c++) {
            int64_t cb = p->mem.cat_bytes[t][c];
            if (cb) fprintf(f, "    %-14s %10.3f GiB  (%lld bytes)\n", zg_memcat_name((ZgMemCat)c),
                            gib(cb), (long long)cb);
        }
    }
    for (int i = 0; i < p->mem.n_nvme_files; i++) {
        fprintf(f, "swap file %d: %s/zgen_%s_%srank<r>.swp, %lld bytes (", i, p->mem.nvme_file_path[i],
                m->name, p->mem.n_nvme_files > 1 ? (i ? "optim_" : "param_") : "",
                (long long)p->mem.nvme_file_bytes[i]);
        const char *sep = "";
        for (int r = 0; r < p->mem.n_regions; r++)
            if (p->mem.regions[r].tier == ZG_TIER_NVME && p->mem.regions[r].file == i) {
                fprintf(f, "%s%s", sep, p->mem.regions[r].name);
                sep = ", ";
            }
        fprintf(f, ")\n");
    }
    fprintf(f, "host per node (%d ranks): %.3f GiB\n",
            m->gpus_per_node < m->world_size ? m->gpus_per_node : m->world_size,
            gib(zg_mem_host_per_node(p)));
    fprintf(f, "device headroom: %lld MiB (%s), kept free beside the device arena for a CUDA run\n",
            (long long)(p->mem.device_headroom >> 20), zg_mem_headroom_parts(p));
    if (m->device_memory) fprintf(f, "declared device memory: %.3f GiB (the plan needs %.3f GiB with the headroom)\n",
                                  gib(m->device_memory), gib(zg_mem_device_need(p)));
    if (m->host_memory) fprintf(f, "declared host memory per node: %.3f GiB\n", gib(m->host_memory));
    bool dev_layout = !strcmp(p->mem.device_acts_layout, "train-cuda");
    fprintf(f, "activations (device): acts %lld bytes + scratch %lld bytes (%s, %s, micro batch %lld)\n",
            (long long)p->mem.acts_bytes, (long long)p->mem.scratch_bytes,
            dev_layout && zg_cuda_act_io(p) ? zg_dtype_name(p->zero->dtype) : "fp32",
            dev_layout ? "train-cuda's layout" : "the host kernels' layout: this plan has no train-cuda",
            (long long)p->zero->micro_batch);
    fprintf(f, "host backend (train): its own activations, %lld + %lld bytes (fp32, the host kernels' "
            "layout)", (long long)p->mem.host_acts_bytes, (long long)p->mem.host_scratch_bytes);
    if (p->mem.host_stage_bytes)
        fprintf(f, " and fp32 parameters of one module, %lld bytes (its kernels are fp32; train-cuda reads "
                "the 16-bit copy)", (long long)p->mem.host_stage_bytes);
    fprintf(f, ", mapped at start-up outside the tiers\n");
    if (p->act_ckpt)
        fprintf(f, "activation checkpointing: acts keeps each block's input and one block's "
                "activations (%lld bytes without: %lld); backward recomputes blocks\n",
                (long long)p->mem.acts_bytes, (long long)zg_mem_acts_unckpt(p));

    sizes_txt(p, f);

    hr(f, "regions (one arena per tier; offsets in bytes)");
    fprintf(f, "  %-7s %16s %16s  %-14s %s\n", "tier", "offset", "bytes", "category", "name");
    for (int t = 0; t < ZG_NTIERS; t++)
        for (int i = 0; i < p->mem.n_regions; i++) {
            const ZgRegion *r = &p->mem.regions[i];
            if ((int)r->tier != t) continue;
            fprintf(f, "  %-7s %16lld %16lld  %-14s %s%s\n", zg_tier_name(r->tier),
                    (long long)r->offset_bytes, (long long)r->bytes, zg_memcat_name(r->cat), r->name,
                    p->mem.n_nvme_files > 1 && r->tier == ZG_TIER_NVME ? zg_fmt(" (swap file %d)", r->file) : "");
        }
}

static void owners_txt(const ZgPlan *p, FILE *f)
{
    const ZgShardMap *s = &p->shard;
    int ws = s->ws;
    hr(f, "who owns what");
    if (p->zero->stage == 3)
        fprintf(f, "stage 3: rank r holds elements [r*part, min((r+1)*part, numel)) of every "
                "tensor (part = ceil(numel/%d), column `part` below), at shard_offset in its "
                "%lld-element shard\n", ws, (long long)s->part_numel);
    if (ws > 2 * SHOW_RANKS)
        fprintf(f, "(%d ranks: showing ranks 0-%d and %d-%d)\n", ws, SHOW_RANKS - 1,
                ws - SHOW_RANKS, ws - 1);
    for (int r = 0; r < ws; r++) {
        if (ws > 2 * SHOW_RANKS && r == SHOW_RANKS) {
            r = ws - SHOW_RANKS;
            fputs("  ...\n", f);
        }
        if (p->zero->stage == 3) {
            const ZgTensor *t0 = &p->tensors[0];
            int64_t a = r * t0->part_numel, b = a + t0->part_numel;
            if (b > t0->numel) b = t0->numel;
            if (a > b) a = b;
            fprintf(f, "  rank %d: shard of %lld elements; e.g. %s [%lld, %lld)\n", r,
                    (long long)s->part_numel, t0->name, (long long)a, (long long)b);
            continue;
        }
        int64_t lo = (int64_t)r * s->part_numel, hi = lo + s->part_numel;
        int ta = -1, tb = -1;
        for (int i = 0; i < p->n_tensors; i++) {
            const ZgTensor *t = &p->tensors[i];
            if (t->flat_offset < hi && t->flat_offset + t->numel > lo) {
                if (ta < 0) ta = i;
                tb = i;
            }
        }
        fprintf(f, "  rank %d: flat [%lld, %lld)", r, (long long)lo, (long long)hi);
        if (ta >= 0) {
            const ZgTensor *A = &p->tensors[ta], *B = &p->tensors[tb];
            int64_t a0 = lo > A->flat_offset ? lo - A->flat_offset : 0;
            int64_t b1 = hi - B->flat_offset < B->numel ? hi - B->flat_offset : B->numel;
            if (ta == tb)
                fprintf(f, " = %s[%lld:%lld]", A->name, (long long)a0, (long long)b1);
            else
                fprintf(f, " = %s[%lld:] .. %s[:%lld] (%d tensors)", A->name, (long long)a0, B->name,
                        (long long)b1, tb - ta + 1);
        }
        if (hi > s->flat_numel) fprintf(f, " incl. %lld padding", (long long)(hi -
                (lo > s->flat_numel ? lo : s->flat_numel)));
        fputc('\n', f);
    }
}

bool zg_plan_write_txt(const ZgPlan *p, FILE *f)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    const ZgShardMap *s = &p->shard;
    fprintf(f, "zgen plan: %s (%s, %lld parameters, %lld layers, d_model %lld, %lld heads, "
            "vocab %lld, seq %lld)\n", m->name, m->arch, (long long)p->n_params,
            (long long)m->n_layers, (long long)m->d_model, (long long)m->n_heads,
            (long long)m->vocab_size, (long long)m->seq_len);
    fprintf(f, "ZeRO stage %d, %s, world size %d (%d per node), batch %lld = micro %lld x "
            "accumulation %lld x %d ranks\n", z->stage, zg_dtype_name(z->dtype), m->world_size,
            m->gpus_per_node, (long long)z->train_batch_size, (long long)z->micro_batch,
            (long long)z->grad_accum, m->world_size);
    fprintf(f, "offload: optimizer %s%s, params %s%s; overlap_comm %s\n",
            zg_offload_name(z->offload_optimizer.device),
            z->offload_optimizer.device == ZG_OFFLOAD_CPU && z->offload_optimizer.pin_memory
            ? " (pinned)" : "", zg_offload_name(z->offload_param.device),
            z->offload_param.device == ZG_OFFLOAD_CPU && z->offload_param.pin_memory ? " (pinned)" : "",
            z->overlap_comm ? "on" : "off");
    zg_plan_training_txt(p, f);
    memory_txt(p, f);

    hr(f, "partition");
    if (z->stage < 3)
        fprintf(f, "flat buffer of %lld elements padded to %lld (multiple of %d x %d ranks); "
                "%lld per rank%s\n", (long long)s->flat_numel, (long long)s->padded_numel, s->align,
                s->ws, (long long)s->part_numel,
                z->stage == 0 ? "; stage 0: every rank updates all of it" : "");
    else
        fprintf(f, "%lld elements, each tensor padded to a multiple of %d: %lld; shard %lld per rank;"
                " %lld elements persistent (threshold %lld)\n", (long long)s->flat_numel, s->ws,
                (long long)s->padded_numel, (long long)s->part_numel, (long long)s->persist_numel,
                (long long)z->param_persistence_threshold);
    for (int i = 0; i < p->mem.n_regions; i++) {
        const ZgRegion *r = &p->mem.regions[i];
        if (!strcmp(r->name, "params16") || !strcmp(r->name, "params_shard") ||
            !strcmp(r->name, "grad32") || !strcmp(r->name, "grad16") || !strcmp(r->name, "adam_m"))
            fprintf(f, "%s%s lives on %s\n", !strcmp(r->name, "adam_m") ? "optimizer state (master, m, v)"
                    : !strcmp(r->name, "grad32") ? "owned fp32 gradient shard"
                    : !strcmp(r->name, "grad16") ? "owned 16-bit gradient shard (one micro-step: Adam widens it)"
                    : "working parameters, ",
                    r->name[0] == 'p' ? zg_dtype_name(z->dtype) : "", zg_tier_name(r->tier));
    }
    fprintf(f, "Adam runs on the %s%s\n", p->adam_device ? "device" : "host",
            p->adam_device || z->offload_optimizer.device != ZG_OFFLOAD_NONE ? ""
            : " (its state stays in the device tier, as DeepSpeed places it, but the parameters it "
              "updates are offloaded; a GPU rank reads and writes that state through host memory)");
    if (p->speculative)
        fprintf(f, "speculative step: each sub-group's Adam runs in the last micro-step once its gradients "
                "are final (OPTIMIZER in that list), into a second copy of the state; the step commits it "
                "when the step applies unclipped, else redoes every sub-group from the first copy (same bits)\n");
    else if (!p->adam_device)
        fprintf(f, "no speculative step: %s\n", p->spec_why ? p->spec_why : "?");
    if (p->norm_adam)
        fprintf(f, "gradient norm summed by the speculative Adam, which reads the gradients anyway (in "
                "blocks of %lld elements, 8 lanes each, cut at the buckets' ends: %lld pieces in "
                "norm_pieces); the hand-over moves the gradients only, and the norm adds each bucket's "
                "pieces in order (the hand-over's bits)\n", (long long)p->norm_block, (long long)p->norm_pieces);
    else if (p->norm_fused)
        fprintf(f, "gradient norm summed per bucket while the last micro-step hands the gradients over "
                "(in blocks of %lld elements, 8 lanes each)\n", (long long)p->norm_block);
    if (p->mem.grad_land_direct)
        fprintf(f, "gradients land in place: each bucket's D2H copies into the pinned grad16 itself (one "
                "micro-step: the hand-over is a copy)%s\n", p->norm_adam ? ", and the host does nothing more there"
                                                                   : ", and the host only sums the norm's part there");
    if (p->grad_acc_dev)
        fprintf(f, "gradient accumulation on the device: every micro-step adds this rank's reduced part into "
                "the device's fp32 grad_acc (the host's adds, element by element: same bits); only the last "
                "ships the sums to grad32 (GRAD_SHIP), 4 B per owned element per step\n");
    else if (zg_plan_grad_acc_applies(z))
        fprintf(f, "no gradient accumulation on the device: %s\n", p->grad_acc_why ? p->grad_acc_why : "?");
    if (p->n_sg_dev > 0)
        fprintf(f, "part of the optimizer on the device: sub-groups 0..%d (%lld elements, the shard's front) "
                "keep master, m and v in device memory and run Adam there after the norm (the host's "
                "arithmetic: same bits); their gradients %s; the host runs Adam on the other %d\n",
                p->n_sg_dev - 1, (long long)p->opt_dev_numel,
                p->grad_keep ? "stay on the device in grad_keep (GRAD_KEEP)" : "are read from grad_acc",
                p->n_subgroups - p->n_sg_dev);
    else if (zg_plan_dev_opt_applies(z))
        fprintf(f, "no part of the optimizer on the device: %s\n", p->opt_dev_why ? p->opt_dev_why : "?");
    if (p->norm_dev_lanes)
        fprintf(f, "the device part's gradients do not cross: the device sums their norm lanes per block "
                "(zd_sumsq_lanes) and only those come down (64 B per %lld elements, %lld lane sets in "
                "norm_lanes), where the host's hand-over continues the bucket's sum\n",
                (long long)p->norm_block, (long long)p->norm_lanes_sets);
    fprintf(f, "optimizer shard %lld elements in %d sub-group(s) (boundaries multiple of %lld)\n",
            (long long)s->opt_numel, p->n_subgroups, (long long)p->sg_align);
    owners_txt(p, f);

    hr(f, "tensors");
    fprintf(f, "  %-28s %-14s %12s %5s %-6s %6s", "name", "shape", "numel", "decay", "init", "bucket");
    if (z->stage == 3) fprintf(f, " %10s %12s %6s", "part", "shard_off", "gather");
    fputc('\n', f);
    for (int i = 0; i < p->n_tensors; i++) {
        const ZgTensor *t = &p->tensors[i];
        char shape[48];
        if (t->ndim == 2) snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)t->shape[0],
                                   (long long)t->shape[1]);
        else snprintf(shape, sizeof shape, "[%lld]", (long long)t->shape[0]);
        fprintf(f, "  %-28s %-14s %12lld %5s %-6s %6d", t->name, shape, (long long)t->numel,
                t->decay ? "yes" : "no", zg_init_name(t->init), t->reduce_bucket);
        if (z->stage == 3) {
            fprintf(f, " %10lld %12lld ", (long long)t->part_numel, (long long)s->shard_offset[i]);
            if (t->persistent) fputs("persistent", f);
            else fprintf(f, "%6d", t->gather);
        }
        fputc('\n', f);
    }

    hr(f, "gradient buckets (reduction order)");
    fprintf(f, "%d buckets of at most %lld elements; %d bucket buffer(s) of %lld elements\n",
            p->n_buckets, (long long)z->reduce_bucket_size, p->n_bucket_buffers,
            (long long)p->bucket_buffer_numel);
    if (p->bucket_recv_numel > 0)
        fprintf(f, "reduce-scatter receives this rank's chunk (%lld elements) in bucket_recv_<b>, "
                "then adds it into grad32\n", (long long)p->bucket_recv_numel);
    for (int k = 0; k < p->n_buckets; k++) {
        const ZgBucket *b = &p->buckets[k];
        fprintf(f, "  bucket %3d: %-26s .. %-26s %3d tensors %12lld elements\n", k,
                p->tensors[b->first_tensor + b->n_tensors - 1].name, p->tensors[b->first_tensor].name,
                b->n_tensors, (long long)b->padded_numel);
    }
    if (z->stage == 3) {
        hr(f, "gather groups (stage 3)");
        fprintf(f, "%d groups; %d slot(s) of %lld elements; prefetch depth %d\n", p->n_gathers,
                p->n_gather_slots, (long long)p->gather_slot_numel, p->sched.prefetch_depth);
        for (int g = 0; g < p->n_gathers; g++)
            fprintf(f, "  group %3d: %-10s %12lld elements gathered (%lld per rank)\n", g,
                    mod_name(p, p->gathers[g].module), (long long)p->gathers[g].numel,
                    (long long)p->gathers[g].part_numel);
    }
    hr(f, "optimizer sub-groups");
    for (int i = 0; i < p->n_subgroups && i < 16; i++)
        fprintf(f, "  sub-group %d: shard [%lld, %lld)%s\n", i,
                (long long)p->subgroups[i].shard_offset,
                (long long)(p->subgroups[i].shard_offset + p->subgroups[i].numel),
                p->subgroups[i].nvme_offset_bytes >= 0 ? " (NVMe)" : "");
    if (p->n_subgroups > 16) fprintf(f, "  ... %d sub-groups in all\n", p->n_subgroups);
    if (p->grad_nvme)
        fprintf(f, "gradients on NVMe (stage 3, optimizer on NVMe): grad32 is in the swap file; each "
                "opt_buf_<b> has a fourth part for one sub-group's gradients: the hand-over window of "
                "WAIT_REDUCE in micro-steps (read back from NVMe after the first micro-step, written "
                "through when the reduction moves to the next sub-group), read once in order by the "
                "gradient-norm pass and once more by SWAP_IN with master, m, v\n");

    hr(f, "schedule (every rank runs exactly these lists)");
    fprintf(f, "columns: index, op, arg, slot, meaning; then \"->\" the lowered row (gen/lower.c): "
               "transfer on stream: source[offset] dtype -> destination[offset] dtype\n");
    if (z->grad_accum > 1)
        ops_txt(p, f, "micro-step (all but the last of each optimizer step)", p->sched.micro,
                p->sched.n_micro);
    ops_txt(p, f, "last micro-step", p->sched.last, p->sched.n_last);
    ops_txt(p, f, "optimizer step", p->sched.step, p->sched.n_step);

    hr(f, "cost per optimizer step per rank");
    const ZgCost *c = &p->cost;
    fprintf(f, "network (collectives, received): %.3f GiB\n", gib(c->net_bytes));
    fprintf(f, "PCIe host -> device (H2D):       %.3f GiB (%lld bytes; of them the batches' token ids, "
               "targets, positions and their groupings %lld)\n", gib(c->h2d_bytes), (long long)c->h2d_bytes, (long long)c->batch_h2d_bytes);
    fprintf(f, "PCIe device -> host (D2H):       %.3f GiB (%lld bytes; of them the per-token losses %lld, the "
               "gradient's sum of squares %lld%s)\n", gib(c->d2h_bytes), (long long)c->d2h_bytes,
            (long long)c->loss_d2h_bytes, (long long)c->norm_d2h_bytes,
            c->norm_d2h_bytes && p->shard.opt_replicated && m->world_size > 1
                ? ", rank 0 only: every rank's optimizer updates every element" : "");
    fprintf(f, "NVMe read / write:               %.3f / %.3f GiB\n", gib(c->nvme_read_bytes),
            gib(c->nvme_write_bytes));
    fprintf(f, "compute: %.4e FLOP ((6N + 6*L*C*T) per token x %lld tokens)\n", c->flops,
            (long long)(z->micro_batch * z->grad_accum * m->seq_len));
    return !ferror(f);
}
