/*
** predict.c — the cost model: each schedule op's time on a hardware profile, and the step as a
** replay of the schedule over resources with the schedule's waits as dependencies.
**
** Op times (docs/PREDICT.md derives each):
**  - FORWARD/BACKWARD: matmul FLOPs at peak x mm_eff, attention FLOPs (llm.c's 6*L*C*T split 1:2
**    between forward and backward) at peak x attn_eff, plus the elementwise bytes at memory speed.
**    Device profiles model the target design of issue 9 (16-bit tensor-core matmuls with fused
**    epilogues, flash attention, fused residual+LayerNorm); the host profile models the host
**    kernels (fp32, unfused, the T x T attention matrix materialised).
**  - collectives: latency + bytes received per rank / bus bandwidth (the bytes of plan.txt's cost);
**  - copies, NVMe, CPU Adam: bytes / bandwidth, parameters / Adam rate.
** Replay: an op starts when its resource is free and its dependencies have ended; the driver issues
** in schedule order, so an asynchronous op also waits for the compute op before it (the event it
** would record). The step ends when the last op ends (steady state of one step from idle:
** conservative, nothing of the next step's prefetch overlaps this step's optimizer).
*/
#include <stdlib.h>
#include <string.h>
#include "zg_predict.h"
#include "zg_cuda_dec.h"     /* zg_cuda_tf32, zg_cuda_att_tc: gen's GEMM and attention decisions */

typedef struct Sim {
    const ZgPlan *p;
    const ZgHw *hw;
    ZgPrediction *pr;
    int cap;
    int last[ZG_NRES];          /* last event on each resource, -1 */
    int last_compute;           /* the compute op the next async op depends on */
    int *gather_done;           /* per gather group: its GATHER event */
    int *slot_free;             /* per gather slot: the RELEASE point (compute event) */
    int *reduce_done;           /* per bucket: the event after which its buffer is free */
    int *grad_done;             /* per bucket: its gradient landed in grad32 (host accumulation) */
    int *swap_in;               /* per sub-group */
    int *swap_out;
    int *opt_done;              /* per sub-group: last event of its update (Adam, H2D, write) */
    int micro;
    int last_bwd;               /* module of the latest BACKWARD (for GRAD_COPY) */
    int last_grad;              /* the latest hand-over (grad_done) of this micro-step */
} Sim;

static double ev_end(const Sim *s, int e) { return e < 0 ? 0.0 : s->pr->ev[e].start + s->pr->ev[e].dur; }

static int map_res(const Sim *s, int res)
{
    if (!s->hw->host) return res;
    return res == ZG_RES_NVME_READ || res == ZG_RES_NVME_WRITE ? res : ZG_RES_COMPUTE;
}

/* Adds an op on `res` lasting dur that may start after events deps[0..nd). Returns its index. */
static int run(Sim *s, int res, int kind, int arg, double dur, const int *deps, int nd)
{
    ZgPrediction *pr = s->pr;
    res = map_res(s, res);
    int pred = s->last[res];
    double start = ev_end(s, pred);
    for (int i = 0; i < nd; i++)
        if (deps[i] >= 0 && ev_end(s, deps[i]) > start) {
            start = ev_end(s, deps[i]);
            pred = deps[i];
        }
    if (pr->n_ev == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        pr->ev = zg_xrealloc(pr->ev, (size_t)s->cap * sizeof *pr->ev);
    }
    pr->ev[pr->n_ev] = (ZgPredEvent){res, kind, arg, s->micro, start, dur, pred};
    s->last[res] = pr->n_ev;
    pr->busy_s[res] += dur;
    return pr->n_ev++;
}

static int run1(Sim *s, int res, int kind, int arg, double dur, int dep)
{
    return run(s, res, kind, arg, dur, &dep, 1);
}

/* {===================================================================== op times */
static double act_bytes(const Sim *s) { return s->hw->host ? 4.0 : zg_dtype_size(s->p->zero->dtype); }

/* Matmul FLOP/s, attention FLOP/s and elementwise bytes/s for this plan's width. */
static void rates(const Sim *s, double *mm, double *attn, double *mem)
{
    const ZgHw *hw = s->hw;
    double peak = zg_predict_peak(s->p, hw, NULL);
    int64_t smem[3];
    *mm = peak * hw->mm_eff;
    /* Attention runs on tensor cores only where gen put it there (16-bit plans, head sizes up to
    ** 128); otherwise on CUDA cores in fp32 arithmetic (attention.cu, attention_gqa.cu), TF32 or not. */
    *attn = (hw->host || zg_cuda_att_tc(s->p, smem) ? peak : hw->peak_flops[ZG_DTYPE_FP32]) * hw->attn_eff;
    *mem = hw->mem_bw;
    if (!hw->host || hw->n_widths == 0) return;
    double C = (double)s->p->model->d_model, best = 0;
    int bi = -1;
    for (int i = 0; i < hw->n_widths; i++) {
        double w = hw->widths[i].d_model, d = w > C ? w / C : C / w;
        if (bi < 0 || d < best) { best = d; bi = i; }
    }
    *mm = hw->widths[bi].matmul_flops;
    *attn = hw->widths[bi].attn_flops;
    *mem = hw->widths[bi].mem_bw;
}

/* One forward (backward = false) or backward of module mi over one micro-batch; recompute: the
** checkpointing rebuild, which skips the block's last linear layer. */
static double module_time(const Sim *s, int mi, bool backward, bool recompute)
{
    const ZgPlan *p = s->p;
    const ZgModel *m = p->model;
    const ZgModule *md = &p->modules[mi];
    const ZgHw *hw = s->hw;
    double BT = (double)p->zero->micro_batch * (double)m->seq_len, C = (double)m->d_model;
    double T = (double)m->seq_len, a = act_bytes(s), f = backward ? ZG_BWD_FACTOR : 1.0;
    double flops = 0, attn = 0, bytes = 0;
    switch (md->kind) {
    case ZG_MOD_EMBED:
        bytes = 3.0 * BT * C * a;                       /* two rows read, the sum written */
        break;
    case ZG_MOD_BLOCK:
        flops = 2.0 * BT * (double)(md->numel - (recompute ? zg_recompute_skip_numel(m) : 0));
        attn = 2.0 * BT * C * T;
        bytes = (hw->host ? ZG_HOST_ELEM_C : ZG_DEV_ELEM_C) * C * BT * a;
        break;
    case ZG_MOD_FINAL_NORM:
        bytes = 2.0 * BT * C * a;
        break;
    case ZG_MOD_HEAD:
        flops = 2.0 * BT * (double)md->use_numel;
        bytes = 2.0 * BT * (double)m->vocab_size * a;   /* logits written, read by the loss */
        break;
    }
    double mm, at, mem;
    rates(s, &mm, &at, &mem);
    double t = f * (flops / mm + attn / at + bytes / mem);
    /* fp32 dW read + written; on the host the linear layers accumulate dW inside their sgemm,
    ** whose calibrated rate includes it */
    if (backward && !hw->host) t += (double)md->use_numel * 8.0 / mem;
    return t + hw->op_overhead_s;
}

static double coll_time(const Sim *s, double bytes)
{
    if (s->p->model->world_size <= 1 || bytes <= 0) return 0.0;
    return s->hw->net_lat_s + bytes / s->hw->net_bw;
}

/* Elements of bucket k's tensors owned by module mi (what one GRAD_COPY copies). */
static double bucket_module_numel(const ZgPlan *p, int k, int mi)
{
    const ZgBucket *b = &p->buckets[k];
    double n = 0;
    for (int t = b->first_tensor; t < b->first_tensor + b->n_tensors; t++)
        if (mi < 0 || p->tensors[t].module == mi) n += (double)p->tensors[t].numel;
    return n;
}
/* }===================================================================== */

/* {===================================================================== the replay */
/* OPTIMIZER on sub-group a after events deps[0..nd): Adam where the plan runs it, then the updated
** working copy to NVMe or H2D. Returns the update's last event (also opt_done[a]). */
static int adam_op(Sim *s, const ZgOp *o, const int *deps, int nd)
{
    const ZgPlan *p = s->p;
    const ZgHw *hw = s->hw;
    int a = o->arg;
    bool host_adam = !p->adam_device && !zg_plan_sg_on_device(p, a);
    double sg = a >= 0 && a < p->n_subgroups ? (double)p->subgroups[a].numel : 0;
    double t = host_adam || hw->host ? sg / hw->cpu_adam_rate
                                     : sg * (28.0 + zg_dtype_size(p->zero->dtype)) / hw->mem_bw;
    int e = run(s, host_adam ? ZG_RES_CPU : ZG_RES_COMPUTE, o->kind, a, t + hw->op_overhead_s, deps, nd);
    ZgOpBytes b = zg_op_bytes(p, o);     /* the updated working copy: to NVMe, or H2D */
    if (b.nvme_write) e = run1(s, ZG_RES_NVME_WRITE, o->kind, a, (double)b.nvme_write / hw->nvme_write_bw, e);
    else if (b.h2d) e = run1(s, ZG_RES_H2D, ZG_NOPS + ZG_PX_H2D, a, (double)b.h2d / hw->h2d_bw, e);
    s->opt_done[a] = e;
    return e;
}

static void micro_step(Sim *s, const ZgOp *ops, int n)
{
    const ZgPlan *p = s->p;
    const ZgZero *z = p->zero;
    const ZgHw *hw = s->hw;
    double n16 = zg_dtype_size(z->dtype), ws = p->model->world_size;
    bool host_adam = !p->adam_device;     /* the plan's step runs Adam on the host */
    int param_in = -1;          /* the PARAM_SWAP_IN the next GATHER waits for */
    for (int i = 0; i < n; i++) {
        const ZgOp *o = &ops[i];
        int a = o->arg, e, dep[2];
        switch (o->kind) {
        case ZG_OP_PARAM_SWAP_IN: {
            ZgOpBytes b = zg_op_bytes(p, o);
            dep[0] = s->slot_free[o->slot];
            if (b.nvme_read)
                dep[0] = run1(s, ZG_RES_NVME_READ, ZG_NOPS + ZG_PX_NVME_READ, a, (double)b.nvme_read / hw->nvme_read_bw, dep[0]);
            param_in = run1(s, ZG_RES_H2D, o->kind, a, (double)b.h2d / hw->h2d_bw, dep[0]);
            break;
        }
        case ZG_OP_GATHER:
            dep[0] = s->slot_free[o->slot];
            dep[1] = param_in;
            s->gather_done[a] = run(s, ZG_RES_NET, o->kind, a, coll_time(s, (double)zg_op_bytes(p, o).net), dep, 2);
            param_in = -1;
            break;
        case ZG_OP_WAIT_GATHER:
            s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a, 0, s->gather_done[a]);
            break;
        case ZG_OP_RELEASE:
            s->slot_free[o->slot] = s->last_compute;
            break;
        case ZG_OP_FORWARD:
        case ZG_OP_BACKWARD:
            s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a,
                                   module_time(s, a, o->kind == ZG_OP_BACKWARD,
                                               o->kind == ZG_OP_FORWARD && o->slot == ZG_RECOMPUTE), -1);
            if (o->kind == ZG_OP_BACKWARD) s->last_bwd = a;
            break;
        case ZG_OP_GRAD_COPY:
            s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a,
                                   bucket_module_numel(p, a, s->last_bwd) * (4.0 + n16) / hw->mem_bw, -1);
            break;
        case ZG_OP_REDUCE:
            s->reduce_done[a] = run1(s, ZG_RES_NET, o->kind, a, coll_time(s, (double)zg_op_bytes(p, o).net),
                                     s->last_compute);
            break;
        case ZG_OP_WAIT_REDUCE: {
            double part = z->stage >= 2 || host_adam ? (double)p->buckets[a].padded_numel / ws : 0;
            e = s->reduce_done[a];
            if (host_adam && !p->grad_acc_dev) {  /* D2H into pinned memory, the host adds it into grad32 */
                e = run1(s, ZG_RES_D2H, ZG_NOPS + ZG_PX_D2H, a, (double)zg_op_bytes(p, o).d2h / hw->d2h_bw, e);
                /* into grad32: read the part, read and write fp32; into grad16: a 16-bit copy, or
                ** where the D2H landed in grad16 itself (a GPU rank) the norm's read of it, which
                ** with norm_adam the speculative Adam does in its own pass: nothing */
                bool in_place = p->mem.grad_land_direct && !hw->host;
                double per = !p->grad16 ? n16 + 8.0 : in_place ? (p->norm_adam ? 0.0 : n16) : 2.0 * n16;
                /* a GPU rank's device optimizer part stays there (its norm lanes come instead) */
                int64_t sets, dev = hw->host ? 0 : zg_bucket_dev_part(p, a, 0, &sets);
                s->grad_done[a] = run1(s, ZG_RES_CPU, ZG_NOPS + ZG_PX_ACCUM, a, (part - (double)dev) * per / hw->host_mem_bw, e);
                s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a, 0, e);
                s->last_grad = s->grad_done[a];
            } else {                      /* the add on the device (grad32, or grad_acc) */
                s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a,
                                       part * (n16 + 8.0) / hw->mem_bw, e);
                s->grad_done[a] = s->last_compute;
            }
            /* gradients on NVMe: the chunk's fp32 sums are read back (after the first micro-step)
            ** and written through */
            if (p->grad_nvme) {
                if (s->micro > 0) run1(s, ZG_RES_NVME_READ, ZG_NOPS + ZG_PX_NVME_READ, a,
                                       part * 4.0 / hw->nvme_read_bw, e);
                s->grad_done[a] = run1(s, ZG_RES_NVME_WRITE, o->kind, a, part * 4.0 / hw->nvme_write_bw,
                                       s->grad_done[a]);
            }
            break;
        }
        case ZG_OP_GRAD_ADD:        /* fp32 gradients read, the 16-bit sums read and written */
            s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a,
                                   (double)p->modules[a].use_numel * (4.0 + 2.0 * n16) / hw->mem_bw + hw->op_overhead_s,
                                   -1);
            break;
        case ZG_OP_GRAD_KEEP: {     /* the device optimizer range's part copied on the device */
            const ZgBucket *b = &p->buckets[a];
            int64_t lo = b->flat_offset > 0 ? b->flat_offset : 0;
            int64_t hi = b->flat_offset + b->numel < p->opt_dev_numel ? b->flat_offset + b->numel : p->opt_dev_numel;
            double kept = hi > lo ? (double)(hi - lo) : 0;
            /* the copy, and (norm_dev_lanes) the norm lanes' read of the same range */
            double reads = p->norm_dev_lanes ? 3.0 : 2.0;
            s->last_compute = run1(s, ZG_RES_COMPUTE, o->kind, a, kept * reads * n16 / hw->mem_bw, s->reduce_done[a]);
            break;
        }
        case ZG_OP_GRAD_SHIP: {     /* the sums D2H into grad32, the host sums their squares */
            double part = (double)p->buckets[a].padded_numel / ws;
            int64_t sets, dev = hw->host ? 0 : zg_bucket_dev_part(p, a, 0, &sets);
            e = s->grad_done[a];
            if (dev)                /* the device part's norm lanes, summed on the device first */
                e = run1(s, ZG_RES_COMPUTE, ZG_NOPS + ZG_PX_NORM, a, (double)dev * 4.0 / hw->mem_bw, e);
            e = run1(s, ZG_RES_D2H, o->kind, a, (double)zg_op_bytes(p, o).d2h / hw->d2h_bw, e);
            if (p->norm_fused && !p->norm_adam)   /* norm_adam: the speculative Adam's pass sums it */
                e = run1(s, ZG_RES_CPU, ZG_NOPS + ZG_PX_NORM, a, (part - (double)dev) * 4.0 / hw->host_mem_bw, e);
            s->grad_done[a] = s->last_grad = e;
            break;
        }
        case ZG_OP_OPTIMIZER:       /* the speculative step: Adam once the hand-overs so far are done,
                                    ** off the driver (a host thread), so compute goes on */
            adam_op(s, o, &s->last_grad, 1);
            break;
        default:
            break;
        }
    }
}

static void optimizer_step(Sim *s, const ZgOp *ops, int n)
{
    const ZgPlan *p = s->p;
    const ZgZero *z = p->zero;
    const ZgHw *hw = s->hw;
    double n16 = zg_dtype_size(z->dtype);
    bool host_adam = !p->adam_device;     /* the plan's step runs Adam on the host */
    int opt_res = host_adam ? ZG_RES_CPU : ZG_RES_COMPUTE;
    /* Adam needs every gradient and the global norm: one pass over the owned gradients. */
    int all = s->last_compute;
    for (int k = 0; k < p->n_buckets; k++)
        if (ev_end(s, s->grad_done[k]) > ev_end(s, all)) all = s->grad_done[k];
    double shard = (double)p->shard.opt_numel;
    double norm_bw = host_adam ? hw->host_mem_bw : hw->mem_bw;
    if (p->grad_nvme)               /* the norm reads the gradient shard back from NVMe */
        all = run1(s, ZG_RES_NVME_READ, ZG_NOPS + ZG_PX_NVME_READ, 0, shard * 4.0 / hw->nvme_read_bw, all);
    /* norm_fused: the hand-overs summed it; what is left is adding the buckets' sums (norm_adam:
    ** reading the pieces the speculative Adam wrote, 8 B per norm block) */
    double norm_bytes = p->norm_adam ? (double)p->norm_pieces * 8.0
                      : p->norm_fused ? 0 : shard * (z->stage >= 2 || host_adam ? 4.0 : n16);
    int norm = run1(s, opt_res, ZG_NOPS + ZG_PX_NORM, 0, norm_bytes / norm_bw + hw->op_overhead_s, all);
    int done = norm;
    for (int i = 0; i < n; i++) {
        const ZgOp *o = &ops[i];
        int a = o->arg, dep[3];
        switch (o->kind) {
        case ZG_OP_SWAP_IN:
            dep[0] = a - p->n_sg_buffers >= 0 ? s->swap_out[a - p->n_sg_buffers] : -1;
            dep[1] = host_adam ? s->last[ZG_RES_CPU] : -1;     /* the driver issues it */
            s->swap_in[a] = run(s, ZG_RES_NVME_READ, o->kind, a, (double)zg_op_bytes(p, o).nvme_read / hw->nvme_read_bw, dep, 2);
            break;
        case ZG_OP_OPTIMIZER: {
            dep[0] = norm;
            dep[1] = s->swap_in[a];
            int e = adam_op(s, o, dep, 2);
            if (ev_end(s, e) > ev_end(s, done)) done = e;
            break;
        }
        case ZG_OP_SWAP_OUT:
            s->swap_out[a] = run1(s, ZG_RES_NVME_WRITE, o->kind, a, (double)zg_op_bytes(p, o).nvme_write / hw->nvme_write_bw,
                                  s->opt_done[a]);
            break;
        case ZG_OP_ALLGATHER_PARAMS: {
            ZgOpBytes b = zg_op_bytes(p, o);
            int last_opt = done;
            for (int k = 0; k < p->n_subgroups; k++)
                if (ev_end(s, s->opt_done[k]) > ev_end(s, last_opt)) last_opt = s->opt_done[k];
            if (b.h2d)              /* stage 3, parameters offloaded: this rank's persistent slices up first */
                last_opt = run1(s, ZG_RES_H2D, ZG_NOPS + ZG_PX_H2D, a, (double)b.h2d / hw->h2d_bw, last_opt);
            run1(s, ZG_RES_NET, o->kind, a, coll_time(s, (double)b.net), last_opt);
            break;
        }
        default:
            break;
        }
    }
}

/* Walks back from the last event along `pred`, adding each event's time to its resource. */
static void critical_path(ZgPrediction *pr)
{
    int e = -1;
    double end = 0;
    for (int i = 0; i < pr->n_ev; i++)
        if (pr->ev[i].start + pr->ev[i].dur >= end) {
            end = pr->ev[i].start + pr->ev[i].dur;
            e = i;
        }
    pr->step_s = end;
    int tail = e;
    while (e >= 0) {
        pr->crit_s[pr->ev[e].res] += pr->ev[e].dur;
        pr->crit_kind_s[pr->ev[e].kind] += pr->ev[e].dur;
        e = pr->ev[e].pred;
    }
    pr->bottleneck = 0;
    for (int r = 1; r < ZG_NRES; r++)
        if (pr->crit_s[r] > pr->crit_s[pr->bottleneck]) pr->bottleneck = r;
    /* the kind that contributes most on the bottleneck resource */
    double *kind_s = zg_xcalloc(ZG_NOPS + ZG_NPX, sizeof(double));
    for (e = tail; e >= 0; e = pr->ev[e].pred)
        if (pr->ev[e].res == pr->bottleneck) kind_s[pr->ev[e].kind] += pr->ev[e].dur;
    pr->bottleneck_kind = 0;
    for (int k = 1; k < ZG_NOPS + ZG_NPX; k++)
        if (kind_s[k] > kind_s[pr->bottleneck_kind]) pr->bottleneck_kind = k;
    free(kind_s);
}

void zg_predict(const ZgPlan *p, const ZgHw *hw, ZgPrediction *pr)
{
    memset(pr, 0, sizeof *pr);
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    Sim s = {.p = p, .hw = hw, .pr = pr, .last_compute = -1, .last_bwd = -1, .last_grad = -1};
    for (int r = 0; r < ZG_NRES; r++) s.last[r] = -1;
    int ng = p->n_gathers + 1, ns = p->n_gather_slots + 1, nb = p->n_buckets + 1, nsg = p->n_subgroups + 1;
    int **arrs[] = {&s.gather_done, &s.slot_free, &s.reduce_done, &s.grad_done, &s.swap_in,
                    &s.swap_out, &s.opt_done};
    int lens[] = {ng, ns, nb, nb, nsg, nsg, nsg};
    for (int i = 0; i < 7; i++) {
        *arrs[i] = zg_xmalloc((size_t)lens[i] * sizeof(int));
        for (int j = 0; j < lens[i]; j++) (*arrs[i])[j] = -1;
    }
    int64_t gas = z->grad_accum > 0 ? z->grad_accum : 1;
    for (s.micro = 0; s.micro < gas; s.micro++) {
        if (s.micro + 1 < gas) micro_step(&s, p->sched.micro, p->sched.n_micro);
        else micro_step(&s, p->sched.last, p->sched.n_last);
    }
    optimizer_step(&s, p->sched.step, p->sched.n_step);
    critical_path(pr);

    double T = (double)m->seq_len;
    double tokens_rank = (double)z->micro_batch * (double)gas * T;
    pr->tokens_per_step = tokens_rank * (double)m->world_size;
    pr->model_flops = (6.0 * (double)p->n_params + 6.0 * (double)m->n_layers * (double)m->d_model * T) *
                      tokens_rank;
    if (pr->step_s > 0) {
        pr->tokens_per_s = pr->tokens_per_step / pr->step_s;
        pr->mfu = pr->model_flops / pr->step_s / zg_predict_peak(p, hw, NULL);
    }
    for (int i = 0; i < 7; i++) free(*arrs[i]);
}

double zg_predict_peak(const ZgPlan *p, const ZgHw *hw, const char **which)
{
    bool tf32 = !hw->host && zg_cuda_tf32(p) && hw->tf32_flops > 0;
    if (which) *which = tf32 ? "tf32" : zg_dtype_name(p->zero->dtype);
    return tf32 ? hw->tf32_flops : hw->peak_flops[p->zero->dtype];
}

const char *zg_res_name(int r)
{
    static const char *names[ZG_NRES] = {"compute", "network", "PCIe H2D", "PCIe D2H", "NVMe read",
                                         "NVMe write", "CPU"};
    return r >= 0 && r < ZG_NRES ? names[r] : "?";
}

const char *zg_pred_kind_name(int kind)
{
    static const char *extra[ZG_NPX] = {"D2H of gradients", "gradient accumulation on the host",
                                        "H2D of updated parameters", "NVMe read of parameters",
                                        "gradient norm"};
    static const char *ops[ZG_NOPS] = {
        [ZG_OP_GATHER] = "parameter all-gather", [ZG_OP_WAIT_GATHER] = "waiting for a gather",
        [ZG_OP_RELEASE] = "release", [ZG_OP_FORWARD] = "forward", [ZG_OP_BACKWARD] = "backward",
        [ZG_OP_REDUCE] = "gradient reduction", [ZG_OP_WAIT_REDUCE] = "gradient accumulation",
        [ZG_OP_SWAP_IN] = "NVMe read of optimizer state", [ZG_OP_OPTIMIZER] = "Adam",
        [ZG_OP_SWAP_OUT] = "NVMe write of optimizer state",
        [ZG_OP_ALLGATHER_PARAMS] = "all-gather of updated parameters",
        [ZG_OP_PARAM_SWAP_IN] = "H2D of parameters", [ZG_OP_GRAD_COPY] = "gradient copy to buckets",
        [ZG_OP_GRAD_SHIP] = "D2H of accumulated gradients", [ZG_OP_GRAD_KEEP] = "device copy of kept gradients",
        [ZG_OP_GRAD_ADD] = "16-bit gradient accumulation"};
    if (kind >= 0 && kind < ZG_NOPS) return ops[kind];
    if (kind >= ZG_NOPS && kind < ZG_NOPS + ZG_NPX) return extra[kind - ZG_NOPS];
    return "?";
}
/* }===================================================================== */
