/*
** train_optim.c — the optimizer step, after the last micro-step of a step: the global gradient norm
** (over each rank's owned shard, summed across ranks), DeepSpeed's clipping and fp16 loss-scale
** rules, then the plan's step list: SWAP_IN / OPTIMIZER / SWAP_OUT per sub-group and the parameter
** all-gather. The rule (tr_step_rule, tr_step) is every backend's: train-cuda calls it with its own
** sum of squares (on the device) and its own step ops, and shares the persistent-tensor slices
** (tr_persist_slices) and the working copy's home (tr_opt_home). Adam runs on the owned fp32 master
** wherever the plan put it (device, CPU or an NVMe staging buffer): the same zr_adam_step over the
** same elements in the same order, so the offload choice never changes a bit. Weight decay applies
** to tensors of two or more dimensions only, so a sub-group is cut into runs of whole tensor pieces.
** Gradients on NVMe (ZG_GRAD_NVME, ZeRO-Infinity): the fourth part of each opt_buf is a window of
** one sub-group's fp32 gradients. The micro-steps' hand-over (tr_grad_take) adds into the window of
** the sub-group it reaches and writes it through when it moves on; the norm pass reads the
** sub-groups back in shard order (the same elements in the same order as from memory, so the same
** double sum), and SWAP_IN reads them with master, m, v. Host memory stays at the buffers.
*/
#include <math.h>
#include <string.h>

#include "train.h"

/* ---------------------------------------------------------------------- where the state is */
/* Gradient of opt-shard element `i` (W when read from "grads", fp32 from grad32). */
static const void *grad_at(int64_t i, ZrDtype *dt)
{
    if (ZG_HAS_GRAD32) { *dt = ZR_DT_FP32; return T.grad32 + i; }
    if (ZG_HAS_GRAD16) { *dt = (ZrDtype)ZG_DTYPE; return tr_w_at(T.grad16, i); }
    *dt = (ZrDtype)ZG_DTYPE;
    return tr_w_at(T.grads, T.opt_flat0 + i);
}

/* The working copy's owned part: this rank's partition of the flat "params16" where the plan has
** one, else the shard region "params_shard" (the memory plan gives a plan one or the other); NULL
** when the shard is on NVMe. */
void *tr_opt_home(void)
{
    return ZG_HAS_PARAMS16 ? tr_w_at(T.params16, T.opt_flat0) : T.params_shard;
}

/* The working-precision home of opt-shard element i (NULL + i when it is on NVMe). */
static void *home_at(int64_t i) { return tr_w_at(tr_opt_home(), i); }

/* Part of the optimizer on the device (ZG_N_SG_DEV, gen/plan.c): the host's state regions hold the
** shard from ZG_OPT_DEV_NUMEL on, so shard element i (i >= ZG_OPT_DEV_NUMEL) is their element
** i - ZG_OPT_DEV_NUMEL; these bases are indexed by the shard element, as the device's *_dev are. */
static float *host_base(float *region) { return region - ZG_OPT_DEV_NUMEL; }

/* fp32 master of opt-shard element i (i >= ZG_OPT_DEV_NUMEL) when it lives in memory: "master", or
** with fp32 and no offload the working parameters themselves. */
static float *master_at(int64_t i)
{
    if (ZG_HAS_MASTER) return host_base(T.master) + i;
    if (ZG_ON_NVME_MASTER) return NULL;
    return (float *)home_at(i);
}

/* ---------------------------------------------------------------------- NVMe sub-group staging */
static float *buf_part(int b, int part) { return (float *)T.opt_buf[b] + part * T.opt_buf_part; }

static int64_t nvme_off(int k, int part)
{
    const ZrSubGroupRow *sg = &zg_subgroups[k];
    int64_t base = part == 0 ? T.master_nvme : part == 1 ? T.adam_m_nvme : T.adam_v_nvme;
    return base + (sg->nvme_offset_bytes >= 0 ? sg->nvme_offset_bytes : sg->shard_offset * 4);
}

static void wait_buf(int b)
{
    for (int part = 0; part < 4; part++) {
        if (T.opt_req[b][part].state != 1) continue;
        if (zr_nvme_wait(T.nvme, &T.opt_req[b][part]) < 0) tr_die("%s", zr_nvme_strerror(T.nvme));
    }
}

static int sg_buffer(int k)
{
    int b = zg_subgroups[k].buffer;
    int n = ZG_N_REGIONS_MASTER_BUF ? ZG_N_REGIONS_MASTER_BUF : ZG_N_REGIONS_OPT_BUF;
    if (b < 0 || b >= n) tr_die("sub-group %d names staging buffer %d, absent", k, b);
    return b;
}

/* ---------------------------------------------------------------------- gradients on NVMe */
static float *gw_buf(int b) { return buf_part(b, 3); }

static int64_t gw_off(int k) { return T.grad32_nvme + zg_subgroups[k].nvme_offset_bytes; }

void tr_grad_window_reset(void)
{
    for (int b = 0; b < TR_MAX_BUFS; b++) T.gw_in[b] = -1;
    T.gw_cur = -1;
    memset(T.gw_written, 0, sizeof T.gw_written);
}

/* Start bringing sub-group k's gradients into its buffer once the buffer's earlier I/O is done:
** zeros when this step has not written it yet (the in-memory shard starts the step at 0). */
static void gw_fetch(int k)
{
    int b = sg_buffer(k);
    wait_buf(b);
    T.gw_in[b] = k;
    if (!T.gw_written[k]) {
        memset(gw_buf(b), 0, (size_t)zg_subgroups[k].numel * 4);
        return;
    }
    ZR_CHECK(zr_nvme_read_async(T.nvme, gw_buf(b), zg_subgroups[k].numel * 4, gw_off(k),
                                &T.opt_req[b][3]));
}

/* Sub-group k's current gradients, complete in its buffer. A buffer holds the latest sums of the
** sub-group it names: a sub-group changes only while it is gw_cur, and leaving it writes it. */
static float *gw_get(int k)
{
    int b = sg_buffer(k);
    if (T.gw_in[b] != k) gw_fetch(k);
    wait_buf(b);
    return gw_buf(b);
}

/* Prefetch sub-group k when its buffer is not the one in use. */
static void gw_ahead(int k, int busy)
{
    if (k < 0 || k >= ZG_N_SUBGROUPS || sg_buffer(k) == sg_buffer(busy)) return;
    if (T.gw_in[sg_buffer(k)] != k) gw_fetch(k);
}

static void gw_flush(void)
{
    int k = T.gw_cur;
    if (k < 0) return;
    int b = sg_buffer(k);
    ZR_CHECK(zr_nvme_write_async(T.nvme, gw_buf(b), zg_subgroups[k].numel * 4, gw_off(k),
                                 &T.opt_req[b][3]));
    T.gw_written[k] = 1;
    T.gw_cur = -1;
}

/* The reduced chunks arrive in reduction order, i.e. from the end of the shard towards its start,
** so the hand-over walks the sub-groups downwards and prefetches the one below. */
void tr_grad_take(int64_t off, const void *src, int64_t n, int add)
{
    if (ZG_HAS_GRAD32) { tr_w_into_f32(T.grad32 + off, src, n, add); return; }
    if (!ZG_ON_NVME_GRAD32) tr_die("internal: a gradient hand-over without grad32");
    if (n <= 0) return;
    int64_t size = zg_subgroups[0].numel;
    for (int k = (int)((off + n - 1) / size); k >= 0 && k >= (int)(off / size); k--) {
        const ZrSubGroupRow *sg = &zg_subgroups[k];
        int64_t s0 = off > sg->shard_offset ? off : sg->shard_offset;
        int64_t s1 = off + n < sg->shard_offset + sg->numel ? off + n : sg->shard_offset + sg->numel;
        if (s1 <= s0) continue;
        if (T.gw_cur != k) {
            double t0 = tr_now();
            gw_flush();
            gw_get(k);
            T.gw_cur = k;
            gw_ahead(k - 1, k);
            tr_span(ZR_TRACK_IO, "grad window", t0);
        }
        tr_w_into_f32(gw_buf(sg_buffer(k)) + (s0 - sg->shard_offset),
                      (const char *)src + (s0 - off) * ZG_DTYPE_SIZE, s1 - s0, add);
    }
    /* refill the disk queue: the engine moves only as far as queue_depth pieces between polls */
    if (zr_nvme_poll(T.nvme) < 0) tr_die("%s", zr_nvme_strerror(T.nvme));
}

/* fp32, stage 3, parameters on NVMe, optimizer in memory: the NVMe shard is the master, and the
** plan swaps a sub-group's span of it through master_buf (part 0 of opt_req). */
static int64_t pmaster_off(int k) { return T.params_shard_nvme + zg_subgroups[k].nvme_offset_bytes; }

static void swap_in(int k)
{
    if (ZG_N_REGIONS_MASTER_BUF) {
        int b = sg_buffer(k);
        double t0 = tr_now();
        wait_buf(b);                          /* its previous sub-group's write-back */
        ZR_CHECK(zr_nvme_read_async(T.nvme, T.master_buf[b], zg_subgroups[k].numel * 4,
                                    pmaster_off(k), &T.opt_req[b][0]));
        tr_span(ZR_TRACK_IO, "swap-in", t0);
        return;
    }
    if (!ZG_ON_NVME_MASTER) return;            /* optimizer state in memory: nothing to bring in */
    int b = sg_buffer(k);
    double t0 = tr_now();
    wait_buf(b);                              /* its previous sub-group's write-back */
    if (ZG_ON_NVME_GRAD32 && T.gw_in[b] != k) gw_fetch(k);   /* not still there from the norm */
    int64_t bytes = zg_subgroups[k].numel * 4;
    for (int part = 0; part < 3; part++)
        ZR_CHECK(zr_nvme_read_async(T.nvme, buf_part(b, part), bytes, nvme_off(k, part),
                                    &T.opt_req[b][part]));
    tr_span(ZR_TRACK_IO, "swap-in", t0);
}

static void swap_out(int k)
{
    if (ZG_N_REGIONS_MASTER_BUF) {
        int b = sg_buffer(k);
        ZR_CHECK(zr_nvme_write_async(T.nvme, T.master_buf[b], zg_subgroups[k].numel * 4,
                                     pmaster_off(k), &T.opt_req[b][0]));
        return;
    }
    if (!ZG_ON_NVME_MASTER) return;
    int b = sg_buffer(k);
    int64_t bytes = zg_subgroups[k].numel * 4;
    for (int part = 0; part < 3; part++)
        ZR_CHECK(zr_nvme_write_async(T.nvme, buf_part(b, part), bytes, nvme_off(k, part),
                                     &T.opt_req[b][part]));
}

/* ---------------------------------------------------------------------- Adam on one sub-group */
static int spec_first;          /* the speculative pass of a sub-group (tr_spec_optimizer), not a redo */

/* Adam over [lo, hi) of one tensor piece in chunks, driving the disk queue between them so the
** next sub-group's read and the previous one's write progress during Adam (zr_adam_step is
** elementwise: any chunking gives the same bits). */
#define ADAM_CHUNK (1 << 20)

/* Reads p, m, v and writes po, mo, vo (the same arrays in place); with sq the gradients' squares
** too, at shard offset `at` (ZG_NORM_ADAM). */
static void adam_piece(const ZrAdamCfg *c, float *p, float *m, float *v, float *po, float *mo, float *vo,
                       const void *g, ZrDtype gdt, char *p16, int64_t n, int64_t at, ZrAdamSq *sq)
{
    size_t gsz = gdt == ZR_DT_FP32 ? 4 : ZG_DTYPE_SIZE;
    for (int64_t a = 0; a < n; a += ADAM_CHUNK) {
        int64_t len = n - a < ADAM_CHUNK ? n - a : ADAM_CHUNK;
        ZR_CHECK(zr_adam_step_sq(c, p + a, m + a, v + a, po + a, mo + a, vo + a,
                                 (const char *)g + a * gsz, gdt, p16 ? p16 + a * ZG_DTYPE_SIZE : NULL,
                                 (ZrDtype)ZG_DTYPE, len, at + a, sq));
        if (ZG_NVME_FILES > 0 && zr_nvme_poll(T.nvme) < 0) tr_die("%s", zr_nvme_strerror(T.nvme));
        if (ZG_NVME_FILES > 1 && zr_nvme_poll(T.nvme_param) < 0) tr_die("%s", zr_nvme_strerror(T.nvme_param));
    }
}

/* An operand of sub-group k's OPTIMIZER (zg_optimizers, gen/lower.c): the address of shard element
** e in region r, whose element off (+ this rank's flat start where ranked) holds shard element 0. */
void *tr_opt_operand(int r, int64_t off, int ranked, int dt, int64_t e)
{
    return tr_region_at(r, off + (ranked ? T.opt_flat0 : 0) + e, dt);
}

static void optimizer(const ZrOpRow *op, double lr)
{
    int k = op->arg;
    const ZrSubGroupRow *sg = &zg_subgroups[k];
    const ZrOptRow *r = &zg_optimizers[k];
    int64_t s0 = sg->shard_offset, s1 = sg->shard_offset + sg->numel;
    double tw = tr_now();
    /* staged state (the master on NVMe, or fp32 parameters that are the master): SWAP_IN's reads */
    if (ZG_ON_NVME_MASTER || ZG_N_REGIONS_MASTER_BUF) wait_buf(sg_buffer(k));
    float *p = tr_opt_operand(r->master, r->master_off, r->master_ranked, ZR_DT_FP32, 0);
    float *m = tr_opt_operand(r->m, r->m_off, 0, ZR_DT_FP32, 0), *v = tr_opt_operand(r->v, r->v_off, 0, ZR_DT_FP32, 0);
    /* 16-bit copy of the result: straight to its home, or to the NVMe write-back buffer */
    char *home = NULL;
    if (r->home >= 0 && r->home_nvme) {
        if (T.wb_req.state == 1 && zr_nvme_wait(T.nvme_param, &T.wb_req) < 0)
            tr_die("%s", zr_nvme_strerror(T.nvme_param));
        home = tr_opt_operand(r->home, r->home_off, 0, ZG_DTYPE, 0);
    } else if (r->home >= 0) {
        home = T.param_out ? T.param_out : tr_opt_operand(r->home, r->home_off, r->home_ranked, ZG_DTYPE, 0);
    }
    if (ZG_NVME_FILES > 0) tr_span(ZR_TRACK_IO, "swap-in wait", tw);   /* waiting is I/O, not Adam */
    double t0 = tr_now();
    ZrAdamCfg c = {(float)lr, (float)ZG_BETA1, (float)ZG_BETA2, (float)ZG_EPS, 0.0f, ZG_ADAM_W_MODE,
                   ZG_BIAS_CORRECTION ? T.applied + 1 : INT64_MAX, T.grad_scale};
    /* where the update goes: in place, or the speculative step's second copy (whose working copy
    ** then comes from that copy's master) */
    int next = T.spec_mode == TR_SPEC_NEXT;
    /* the speculative pass over the host's part sums the norm's squares of what it reads */
    ZrAdamSq *sq = ZG_NORM_ADAM && spec_first && k >= ZG_N_SG_DEV ? tr_norm_sq() : NULL;
    if (next && r->next_master < 0) tr_die("internal: a speculative redo of sub-group %d, which has no second copy", k);
    float *out[3] = {next ? tr_opt_operand(r->next_master, r->next_off, 0, ZR_DT_FP32, 0) : p,
                     next ? tr_opt_operand(r->next_m, r->next_off, 0, ZR_DT_FP32, 0) : m,
                     next ? tr_opt_operand(r->next_v, r->next_off, 0, ZR_DT_FP32, 0) : v};
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        int64_t lo = T.t[t].opt_lo > s0 ? T.t[t].opt_lo : s0;
        int64_t hi = T.t[t].opt_hi < s1 ? T.t[t].opt_hi : s1;
        if (hi <= lo) continue;
        if (T.spec_mode == TR_SPEC_RESTORE) {      /* a skipped step: the working copy of the master */
            if (ZG_MIXED) tr_f32_to_w(home + lo * ZG_DTYPE_SIZE, p + lo, hi - lo);
            else memcpy(home + lo * 4, p + lo, (size_t)(hi - lo) * 4);
            continue;
        }
        ZrDtype gdt = (ZrDtype)r->grad_dt;
        const void *g = tr_opt_operand(r->grad, r->grad_off, r->grad_ranked, gdt, lo);
        c.weight_decay = zg_tensors[t].decay ? (float)ZG_WEIGHT_DECAY : 0.0f;
        char *p16 = ZG_MIXED && home ? home + lo * ZG_DTYPE_SIZE : NULL;
        adam_piece(&c, p + lo, m + lo, v + lo, out[0] + lo, out[1] + lo, out[2] + lo, g, gdt, p16, hi - lo,
                   lo, sq);
        if (!ZG_MIXED && home) memcpy(home + lo * 4, out[0] + lo, (size_t)(hi - lo) * 4);
    }
    if (sq) zr_adam_sq_close(sq);
    if (r->home >= 0 && r->home_nvme)
        ZR_CHECK(zr_nvme_write_async(T.nvme_param, home + s0 * ZG_DTYPE_SIZE, sg->numel * ZG_DTYPE_SIZE,
                                     tr_nvme_at(ZG_RG_PARAMS_SHARD, s0, ZG_DTYPE), &T.wb_req));
    tr_span(ZR_TRACK_COMPUTE, "adam", t0);
}

/* ---------------------------------------------------------------------- parameter gathers */
/* The persistent tensors' slices this rank owns, in tensor order: f(element of "persist", element
** of the shard, count, ctx) for each (f may be NULL). Returns the elements of "persist" they span
** (0: the plan has no persistent tensor). Every backend rebuilds "persist" from these. */
int64_t tr_persist_slices(TrSlice *f, void *ctx)
{
    int64_t numel = 0;
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        if (!r->persistent) continue;
        numel = r->persist_offset + r->numel;
        int64_t lo = (int64_t)T.rank * r->part_numel, n = r->numel - lo;
        if (n > r->part_numel) n = r->part_numel;
        if (n > 0 && f) f(r->persist_offset + lo, r->shard_offset, n, ctx);
    }
    return numel;
}

/* One slice into "persist" (the row's destination) from the shard in memory or, read in place,
** from the swap file. */
static void persist_slice(int64_t at, int64_t from, int64_t n, void *ctx)
{
    const ZrOpRow *op = ctx;
    void *dst = tr_region_at(op->dst, op->dst_off + at, op->dst_dt);
    if (ZG_HAS_PARAMS_SHARD)
        memcpy(dst, tr_region_at(op->src, op->src_off + from, op->src_dt), (size_t)n * ZG_DTYPE_SIZE);
    else
        tr_nvme_rw_param(0, dst, n * ZG_DTYPE_SIZE, T.params_shard_nvme + from * ZG_DTYPE_SIZE);
}

/* The row's persistent tensors (its destination differs from its source): every rank writes its
** slices into an all-zero "persist" (tr_persist_fill) and one all-reduce sums them (x + 0 is exact),
** so no staging buffer is needed for padded slices. */
int64_t tr_persist_fill(const ZrOpRow *op)
{
    int64_t numel = tr_persist_slices(NULL, NULL);
    if (numel == 0) return 0;
    /* shard on NVMe: the sub-groups' write-backs must land before their slices are read */
    if (ZG_ON_NVME_PARAMS_SHARD && T.wb_req.state == 1 && zr_nvme_wait(T.nvme_param, &T.wb_req) < 0)
        tr_die("%s", zr_nvme_strerror(T.nvme_param));
    for (int b = 0; b < ZG_N_REGIONS_MASTER_BUF; b++) wait_buf(b);
    void *persist = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    memset(persist, 0, (size_t)numel * ZG_DTYPE_SIZE);
    tr_persist_slices(persist_slice, (void *)op);
    return numel;
}

static void regather_persistent(const ZrOpRow *op)
{
    int64_t numel = tr_persist_fill(op);
    if (numel == 0) return;
    void *persist = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    ZR_CHECK(zr_all_reduce(T.comm, persist, persist, numel, (ZrDtype)op->dst_dt, NULL));
}

/* ALLGATHER_PARAMS as lowered (gen/lower.c): in place (source = destination), rank r's partition of
** `count` elements at r * count, all-gathered unless the row moves nothing (one rank); otherwise the
** persistent tensors, whole, into the destination. */
static void allgather_params(const ZrOpRow *op)
{
    double t0 = tr_now();
    if (op->src != op->dst)
        regather_persistent(op);
    else if (op->xfer != ZR_XFER_NONE)
        ZR_CHECK(zr_all_gather(T.comm, tr_region_at(op->src, op->src_off + T.rank * op->count, op->src_dt),
                               tr_region_at(op->dst, op->dst_off, op->dst_dt), op->count,
                               (ZrDtype)op->src_dt, NULL));
    tr_span(ZR_TRACK_COMM, "allgather params", t0);
}

/* ---------------------------------------------------------------------- the step */
/* The same sum with the gradients on NVMe: the sub-groups in shard order, each element in the order
** the in-memory loop takes it (tensors ascend through the shard), so the same double sum. */
static double owned_sumsq_nvme(void)
{
    double s = 0;
    gw_flush();
    for (int k = 0; k < ZG_N_SUBGROUPS; k++) {
        const ZrSubGroupRow *sg = &zg_subgroups[k];
        int64_t s0 = sg->shard_offset, s1 = s0 + sg->numel;
        double tw = tr_now();
        const float *g = gw_get(k) - s0;
        gw_ahead(k + 1, k);
        tr_span(ZR_TRACK_IO, "grad norm read", tw);
        for (int t = 0; t < ZG_N_TENSORS; t++) {
            int64_t lo = T.t[t].opt_lo > s0 ? T.t[t].opt_lo : s0;
            int64_t hi = T.t[t].opt_hi < s1 ? T.t[t].opt_hi : s1;
            for (int64_t i = lo; i < hi; i++) s += (double)g[i] * g[i];
        }
    }
    return s;
}

/* Sum of squares of this rank's owned gradient (double accumulation, fixed order). With
** ZG_NORM_FUSED the last hand-over of each bucket summed its part (train_ops.c), and the buckets
** add up in bucket order, whichever order they arrived in. */
static double owned_sumsq(void)
{
    if (ZG_NORM_FUSED) return tr_norm_total();
    if (ZG_ON_NVME_GRAD32) return owned_sumsq_nvme();
    double s = 0;
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        int64_t lo = T.t[t].opt_lo, n = T.t[t].opt_hi - lo;
        ZrDtype dt;
        const void *g = grad_at(lo, &dt);
        for (int64_t i = 0; i < n; i++) {
            float x;
            if (dt == ZR_DT_FP32) x = ((const float *)g)[i];
            else tr_w_to_f32(&x, (const char *)g + i * ZG_DTYPE_SIZE, 1);
            s += (double)x * x;
        }
    }
    return s;
}

void tr_step_op(const ZrOpRow *op, double lr)
{
    switch (op->kind) {
    case ZR_OP_SWAP_IN: swap_in(op->arg); break;
    case ZR_OP_OPTIMIZER: optimizer(op, lr); break;
    case ZR_OP_SWAP_OUT: swap_out(op->arg); break;
    case ZR_OP_ALLGATHER_PARAMS: allgather_params(op); break;
    default: tr_die("op kind %d in the optimizer step list", op->kind);
    }
}

/* The step rule, one for every backend. One all-reduce carries this rank's sum of squares of its
** owned gradient and its loss sum; where every rank's optimizer holds every element
** (ZG_OPT_REPLICATED, gen's fact) only rank 0 contributes its sum (x + 0 is exact) and the others
** do not compute it.
** Then DeepSpeed's rules: a non-finite sum is an fp16 overflow (the scaler decides whether the step
** is skipped and the next scale), the norm is unscaled, the clipping coefficient applies, and Adam's
** gradient multiplier is 1/(scale * coefficient). Returns 1 when the step applies (*lr its learning
** rate, T.grad_scale set), 0 when the scaler skips it. The sum is fp32 on the wire whatever the
** backend summed in, so two backends' sums that round to the same fp32 give the same step. */
int tr_step_rule(double (*owned)(void), double *lr)
{
    double t0 = tr_now();
    float local[2] = {(float)(ZG_OPT_REPLICATED && T.rank != 0 ? 0.0 : owned()), T.loss_sum};
    float global[2];
    ZR_CHECK(zr_all_reduce(T.comm, local, global, 2, ZR_DT_FP32, NULL));
    tr_span(ZR_TRACK_COMPUTE, "grad norm", t0);
    T.loss_sum = global[1];
    int overflow = !isfinite(global[0]);
    T.grad_norm = sqrt((double)global[0]) / T.loss_scale;
    int skip = 0;
#if ZG_FP16
    ZR_CHECK(zr_scaler_update(&T.scaler, overflow, &skip));
#else
    (void)overflow;
#endif
    if (skip) return 0;
    /* DeepSpeed: combined = scale * max(1, (norm + 1e-6) / clip), gradients times 1/combined */
    double combined = T.loss_scale;
    if (ZG_GRADIENT_CLIPPING > 0) {
        double c = (T.grad_norm + 1e-6) / ZG_GRADIENT_CLIPPING;
        if (c > 1) combined *= c;
    }
    T.grad_scale = (float)(1.0 / combined);
    *lr = zr_lr_at(&T.lr, T.applied);
    return 1;
}

/* ---------------------------------------------------------------------- the speculative step */
/* ZG_SPECULATIVE (gen/plan.c): OPTIMIZER ops sit in the last micro-step's list, each right after its
** sub-group's gradients are final, and run with what an applied, unclipped step would use: this
** step's lr and 1/loss_scale. They write master_next, m_next, v_next and the working copy; the
** current state stays as it was. The step rule then decides: an applied unclipped step has exactly
** those inputs (the same float grad_scale), so the second copy is the step and committing it is
** swapping pointers; an applied clipped step redoes every sub-group from the current state with
** its grad_scale; a skipped step (fp16 overflow) rewrites the working copy from the current master,
** which it was before the speculation. Each outcome has the bits of the unspeculated step. */
static int spec_done[ZG_N_SUBGROUPS > 0 ? ZG_N_SUBGROUPS : 1];

/* The grad_scale the speculation assumes: tr_step_rule's for an applied, unclipped step. */
static float spec_grad_scale(void) { return (float)(1.0 / T.loss_scale); }

void tr_spec_optimizer(const ZrOpRow *op, void (*run_op)(const ZrOpRow *op, double lr))
{
    T.grad_scale = spec_grad_scale();
    T.spec_mode = TR_SPEC_NEXT;
    spec_first = 1;
    run_op(op, zr_lr_at(&T.lr, T.applied));
    spec_first = 0;
    T.spec_mode = TR_SPEC_OFF;
    spec_done[op->arg] = 1;
}

#if ZG_SPECULATIVE
static void swap_state(float **a, float **b, int i, int j)
{
    float *t = *a;
    *a = *b;
    *b = t;
    void *r = T.rg[i];
    T.rg[i] = T.rg[j];
    T.rg[j] = r;
}
#endif

/* Every OPTIMIZER of the last micro-step's list again, in `mode`. */
static void spec_rerun(int mode, double lr, void (*run_op)(const ZrOpRow *op, double lr))
{
    T.spec_mode = mode;
    for (int i = 0; i < ZG_N_LAST_MICRO_OPS; i++)
        if (zg_last_micro_ops[i].kind == ZR_OP_OPTIMIZER) run_op(&zg_last_micro_ops[i], lr);
    T.spec_mode = TR_SPEC_OFF;
}

static int spec_settle(double (*owned)(void), void (*run_op)(const ZrOpRow *op, double lr))
{
    for (int k = ZG_N_SG_DEV; k < ZG_N_SUBGROUPS; k++)     /* the device's run in the step list */
        if (!spec_done[k]) tr_die("internal: sub-group %d had no speculative update this step", k);
    memset(spec_done, 0, sizeof spec_done);
    float guessed = spec_grad_scale();
    double lr;
    if (!tr_step_rule(owned, &lr)) {
        double t0 = tr_now();
        spec_rerun(TR_SPEC_RESTORE, 0, run_op);
        tr_span(ZR_TRACK_COMPUTE, "speculation undone", t0);
        T.spec_undone++;
        return 0;
    }
    if (T.grad_scale != guessed) {
        double t0 = tr_now();
        spec_rerun(TR_SPEC_NEXT, lr, run_op);
        tr_span(ZR_TRACK_COMPUTE, "speculation redone", t0);
        T.spec_redone++;
    }
#if ZG_SPECULATIVE
    _Static_assert(ZG_RG_MASTER >= 0 && ZG_RG_MASTER_NEXT >= 0 && ZG_RG_ADAM_M_NEXT >= 0 && ZG_RG_ADAM_V_NEXT >= 0,
                   "a speculative plan without the state's second copy");
    swap_state(&T.master, &T.master_next, ZG_RG_MASTER, ZG_RG_MASTER_NEXT);
    swap_state(&T.adam_m, &T.adam_m_next, ZG_RG_ADAM_M, ZG_RG_ADAM_M_NEXT);
    swap_state(&T.adam_v, &T.adam_v_next, ZG_RG_ADAM_V, ZG_RG_ADAM_V_NEXT);
#endif
    for (int i = 0; i < ZG_N_STEP_OPS; i++) run_op(&zg_step_ops[i], lr);
    T.applied++;
    return 1;
}

int tr_step(double (*owned)(void), void (*run_op)(const ZrOpRow *op, double lr))
{
    if (ZG_SPECULATIVE) return spec_settle(owned, run_op);
    double lr;
    if (!tr_step_rule(owned, &lr)) return 0;
    for (int i = 0; i < ZG_N_STEP_OPS; i++) run_op(&zg_step_ops[i], lr);
    T.applied++;
    return 1;
}

void tr_optim_step_with(void (*run_op)(const ZrOpRow *op, double lr))
{
    if (!tr_step(owned_sumsq, run_op) || ZG_NVME_FILES == 0) return;
    double t0 = tr_now();
    if (zr_nvme_wait_all(T.nvme) < 0) tr_die("%s", zr_nvme_strerror(T.nvme));
    if (ZG_NVME_FILES > 1 && zr_nvme_wait_all(T.nvme_param) < 0)
        tr_die("%s", zr_nvme_strerror(T.nvme_param));
    tr_span(ZR_TRACK_IO, "swap-out wait", t0);
}

void tr_optim_step(void) { tr_optim_step_with(tr_step_op); }

/* ---------------------------------------------------------------------- whole-shard access */
float *tr_opt_state_at(int part, int64_t i)
{
    if (i < ZG_OPT_DEV_NUMEL) return (part == 0 ? T.master_dev : part == 1 ? T.adam_m_dev : T.adam_v_dev) + i;
    if (part == 0) return master_at(i);
    return host_base(part == 1 ? T.adam_m : T.adam_v) + i;
}

void tr_opt_state_copy(int part, int64_t lo, int64_t n, float *buf, int into_state)
{
    while (n > 0) {         /* a range across ZG_OPT_DEV_NUMEL is two runs */
        int64_t run = lo < ZG_OPT_DEV_NUMEL && lo + n > ZG_OPT_DEV_NUMEL ? ZG_OPT_DEV_NUMEL - lo : n;
        float *at = tr_opt_state_at(part, lo);
        if (into_state) memcpy(at, buf, (size_t)run * 4);
        else memcpy(buf, at, (size_t)run * 4);
        lo += run;
        buf += run;
        n -= run;
    }
}

void tr_opt_shard_grads(float *dst)
{
    if (ZG_ON_NVME_GRAD32) {
        gw_flush();
        for (int k = 0; k < ZG_N_SUBGROUPS; k++)
            memcpy(dst + zg_subgroups[k].shard_offset, gw_get(k), (size_t)zg_subgroups[k].numel * 4);
        return;
    }
    ZrDtype dt;
    const void *g = grad_at(0, &dt);
    if (dt == ZR_DT_FP32) memcpy(dst, g, (size_t)T.opt_numel * 4);
    else tr_w_to_f32(dst, g, T.opt_numel);
}

void tr_params_gather(void)
{
    for (int i = 0; i < ZG_N_STEP_OPS; i++)
        if (zg_step_ops[i].kind == ZR_OP_ALLGATHER_PARAMS) allgather_params(&zg_step_ops[i]);
}
