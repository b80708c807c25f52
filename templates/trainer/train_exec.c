/*
** train_exec.c — the micro-step executor: runs the plan's op list (zg_micro_ops, or
** zg_last_micro_ops for the last micro-step of an optimizer step) in order, and nothing else.
**
** Parameters reach the kernels as fp32 pointers: the working copy itself with fp32, or an upcast
** into "stage32" with 16-bit dtypes. Gradients leave the kernels into the module gradient area G
** (gen/zg_plan.h, GRADIENT FLOW): stages 0/1 with fp32 accumulate straight into "grads"; otherwise
** each BACKWARD writes G fresh and the plan's GRAD_COPY / REDUCE / WAIT_REDUCE ops move it on.
** Collectives are started by one op and waited by another, so communication overlaps compute
** exactly as the schedule lays it out; every rank runs the same list, so collectives always match.
*/
#include <stdlib.h>
#include <string.h>

#include "train.h"

static int gslot[ZG_N_GATHERS > 0 ? ZG_N_GATHERS : 1];   /* slot holding group g now, or -1 */
static int gslot_ready;

static void slots_init(void)
{
    if (gslot_ready) return;
    for (int i = 0; i < ZG_N_GATHERS; i++) gslot[i] = -1;
    gslot_ready = 1;
}

/* ---------------------------------------------------------------------- parameters */
/* Tensors a module reads: its own, or the token table for the tied head. */
void tr_module_tensors(int m, int *first, int *n)
{
    const ZrModuleRow *mr = &zg_modules[m];
    if (mr->kind == ZR_MOD_HEAD && mr->n_tensors == 0) { *first = ZG_TIED_TENSOR; *n = 1; }
    else { *first = mr->first_tensor; *n = mr->n_tensors; }
}

/* The working-precision copy of tensor t as module m sees it (full tensor, W elements): the
** tensor rows say where (stage 3: "persist" or the slot its gather group was waited into; else
** its place in "params16"). */
static void *param_w(int m, int t)
{
    const ZrTensorRow *r = &zg_tensors[t];
    if (r->persistent) return tr_w_at(T.persist, r->persist_offset);
    if (r->gather < 0) return tr_w_at(T.params16, r->flat_offset);
    slots_init();
    if (gslot[r->gather] < 0)
        tr_die("module %s runs before its parameters (group %d) were gathered", zg_modules[m].name,
               r->gather);
    return tr_w_at(T.slot[gslot[r->gather]], r->gather_offset);
}

static const float *P[ZG_N_TENSORS];     /* fp32 views for the module being run */

static void load_params(int m)
{
    int first, n;
    tr_module_tensors(m, &first, &n);
    int64_t base = zg_tensors[first].flat_offset;
    for (int t = first; t < first + n; t++) {
        void *w = param_w(m, t);
#if ZG_MIXED
        float *dst = T.stage32 + (zg_tensors[t].flat_offset - base);
        tr_w_to_f32(dst, w, zg_tensors[t].numel);
        P[t] = dst;
#else
        (void)base;
        P[t] = w;
#endif
    }
}

/* ---------------------------------------------------------------------- gradients */
static float *Gp[ZG_N_TENSORS];          /* fp32 gradient views for the module being run */

/* The module gradient area G (gen/zg_plan.h, GRADIENT FLOW) is the BACKWARD row's destination:
** accumulated into (stages 0/1, fp32: "grads" itself) or written fresh. */
static void prepare_grads(const ZrOpRow *op)
{
    int m = op->arg, first, n;
    tr_module_tensors(m, &first, &n);
    int64_t base = zg_tensors[first].flat_offset;
    float *area = tr_region_at(op->dst, op->dst_off, ZR_DT_FP32);
    if (!op->accumulate) memset(area, 0, (size_t)op->count * 4);
    for (int t = first; t < first + n; t++) Gp[t] = area + (zg_tensors[t].flat_offset - base);
    /* stages 2/3: the tied head's token-table gradient joins embed's own (it completes here) */
#if ZG_TIED_TENSOR >= 0
    if (zg_modules[m].kind == ZR_MOD_EMBED && T.tied_grad)
        memcpy(Gp[ZG_TIED_TENSOR], T.tied_grad, (size_t)zg_tensors[ZG_TIED_TENSOR].numel * 4);
#endif
}

/* Stages 0/1 with a 16-bit dtype (the plan has "grads" and no fp32 accumulation into it): add G
** into the 16-bit accumulation buffer "grads". */
static void finish_grads(const ZrOpRow *op)
{
    if (op->accumulate || !T.grads) return;
    int first, n;
    tr_module_tensors(op->arg, &first, &n);
    for (int t = first; t < first + n; t++) {
        uint16_t *g = tr_w_at(T.grads, zg_tensors[t].flat_offset);
        const float *s = Gp[t];
        for (int64_t i = 0; i < zg_tensors[t].numel; i++) {
            float a;
            tr_w_to_f32(&a, &g[i], 1);
            a += s[i];
            tr_f32_to_w(&g[i], &a, 1);
        }
    }
}

void tr_grads_zero(void)
{
    if (T.grads) memset(T.grads, 0, (size_t)ZG_PADDED_NUMEL * ZG_DTYPE_SIZE);
    if (T.grad32) memset(T.grad32, 0, (size_t)T.opt_numel * 4);
    tr_grad_window_reset();
}

/* ---------------------------------------------------------------------- activation checkpointing */
/* With checkpointing the adapter runs block l as block 0 of its one-block area, whose input is the
** kept residual stream entering block l, and the final norm on the stream entering it. */
static float *stream_in_ckpt(int l)
{
    if (l == 0) return tr_model_stream0();
    return T.ckpt_out + (size_t)(l - 1) * ZG_MICRO_BATCH * ZG_SEQ_LEN * ZG_D_MODEL;
}

/* The block area must hold block l's activations before its backward: the plan's recompute (or,
** for the last block, its forward) put them there. */
static void check_area(int l)
{
    if (T.area_layer != l)
        tr_die("backward of block %d, but the block area holds block %d (the plan lacks a recompute)",
               l, T.area_layer);
}

/* ---------------------------------------------------------------------- modules */
/* Every module through the model adapter (train_model.h) with its own parameter and gradient
** pointers: P + first, Gp + first (tr_module_tensors). */
static void forward(int m, int recompute)
{
    const ZrModuleRow *mr = &zg_modules[m];
    int first, n;
    tr_module_tensors(m, &first, &n);
    load_params(m);
    const float *const *p = P + first;
    switch (mr->kind) {
    case ZR_MOD_EMBED:
        tr_model_embed_forward(T.inputs, p);
        break;
    case ZR_MOD_BLOCK:
        if (!T.act_ckpt) {
            tr_model_block_forward(mr->layer, NULL, p);
            break;
        }
        /* the same kernel on the same input: a recompute gives the forward's bits */
        tr_model_block_forward(0, stream_in_ckpt(mr->layer), p);
        T.area_layer = mr->layer;
        if (!recompute)
            memcpy(stream_in_ckpt(mr->layer + 1), tr_model_block_out(0),
                   (size_t)ZG_MICRO_BATCH * ZG_SEQ_LEN * ZG_D_MODEL * 4);
        break;
    case ZR_MOD_FINAL_NORM:
        tr_model_final_norm_forward(T.act_ckpt ? stream_in_ckpt(ZG_N_LAYERS) : NULL, p);
        break;
    case ZR_MOD_HEAD: {
        int count = 0;
        float loss = tr_model_head_forward(T.targets, p, &count);
        T.loss_sum += loss * (float)count;
        break;
    }
    }
}

static void backward(const ZrOpRow *op)
{
    int m = op->arg, first, n;
    const ZrModuleRow *mr = &zg_modules[m];
    tr_module_tensors(m, &first, &n);
    load_params(m);
    prepare_grads(op);
    const float *const *p = P + first;
    float *const *g = Gp + first;
    switch (mr->kind) {
    case ZR_MOD_HEAD:
        tr_model_head_backward(T.targets, p, g, (float)(T.loss_scale / (double)ZG_TOKENS_PER_STEP));
        break;
    case ZR_MOD_FINAL_NORM:
        tr_model_final_norm_backward(T.act_ckpt ? stream_in_ckpt(ZG_N_LAYERS) : NULL, p, g);
        break;
    case ZR_MOD_BLOCK:
        if (T.act_ckpt) {
            check_area(mr->layer);
            tr_model_block_backward(0, stream_in_ckpt(mr->layer), p, g);
            break;
        }
        tr_model_block_backward(mr->layer, NULL, p, g);
        break;
    case ZR_MOD_EMBED:
        tr_model_embed_backward(T.inputs, g);
        break;
    }
    finish_grads(op);
    T.last_bwd_module = m;
}

/* ---------------------------------------------------------------------- stage 3 gathers */
static void param_swap_in(int g, int s)
{
    int64_t off = zg_gathers[g].shard_offset, n = zg_gathers[g].shard_numel;
    if (!T.param_buf[s]) tr_die("plan lacks param_buf_%d for PARAM_SWAP_IN", s);
    if (T.params_shard) {
        memcpy(T.param_buf[s], tr_w_at(T.params_shard, off), (size_t)n * ZG_DTYPE_SIZE);
    } else {
        ZR_CHECK(zr_nvme_read_async(T.nvme_param, T.param_buf[s], n * ZG_DTYPE_SIZE,
                                    T.params_shard_nvme + off * ZG_DTYPE_SIZE, &T.pswap_req[s]));
    }
}

static void gather(int g, int s)
{
    const ZrGatherRow *gr = &zg_gathers[g];
    TrReq *q = &T.gather_req[s];
    const char *src;
    int64_t src0;
    if (T.param_buf[s]) {         /* parameters offloaded: PARAM_SWAP_IN brought the span in */
        if (!T.params_shard && T.pswap_req[s].state == 1) {
            double t0 = tr_now();
            if (zr_nvme_wait(T.nvme_param, &T.pswap_req[s]) < 0) tr_die("%s", zr_nvme_strerror(T.nvme_param));
            tr_span(ZR_TRACK_IO, "param swap-in wait", t0);
        }
        src = T.param_buf[s];
        src0 = gr->shard_offset;
    } else {
        src = T.params_shard;
        src0 = 0;
    }
    if (q->n) tr_die("slot %d gathered again before its previous gather was waited for", s);
    for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
        if (zg_tensors[t].persistent) continue;
        const void *send = src + (zg_tensors[t].shard_offset - src0) * ZG_DTYPE_SIZE;
        ZR_CHECK(zr_all_gather(T.comm, send, tr_w_at(T.slot[s], zg_tensors[t].gather_offset),
                               zg_tensors[t].part_numel, ZG_DTYPE, &q->h[q->n]));
        q->n++;
    }
}

/* After the wait, group g's next user reads slot s (a group may be in two slots at once when the
** prefetch distance reaches its next use, e.g. wte for embed and for the tied head). */
static void wait_gather(int g, int s)
{
    TrReq *q = &T.gather_req[s];
    double t0 = tr_now();
    for (int i = 0; i < q->n; i++) ZR_CHECK(zr_coll_wait(T.comm, q->h[i]));
    q->n = 0;
    slots_init();
    gslot[g] = s;
    tr_span(ZR_TRACK_COMM, "gather", t0);
}

/* The slot is dead until gathered again: in debug mode it is poisoned with NaN, so a schedule
** that reads a released slot shows up as a NaN loss. */
static void release(int g, int s)
{
    slots_init();
    const ZrRegionRow *r = T.slot_row[s];
    ZR_CHECK(zr_arena_release(T.arena[r->tier], r->offset_bytes, r->bytes));
    if (gslot[g] == s) gslot[g] = -1;
}

/* ---------------------------------------------------------------------- gradient buckets */
static void *bucket_buf(int k)
{
    int b = zg_buckets[k].buffer;
    if (b < 0 || b >= T.n_bucket_bufs) tr_die("bucket %d names buffer %d, which the plan lacks", k, b);
    return T.bucket[b];
}

static void grad_copy(int k)
{
    const ZrBucketRow *br = &zg_buckets[k];
    char *buf = bucket_buf(k);
    double t0 = tr_now();
    for (int t = br->first_tensor; t < br->first_tensor + br->n_tensors; t++) {
        if (zg_tensors[t].module != T.last_bwd_module) continue;
        const float *g = Gp[t];
        int64_t numel = zg_tensors[t].numel;
        int64_t pt = zg_tensors[t].part_numel, chunk = br->padded_numel / T.ws;
        if (pt == 0) {                /* stages 0-2: flat order */
            tr_f32_to_w(buf + zg_tensors[t].bucket_offset * ZG_DTYPE_SIZE, g, numel);
            continue;
        }
        for (int r = 0; r < T.ws; r++) {   /* stage 3: rank-major, slice r of each tensor */
            char *dst = buf + (r * chunk + zg_tensors[t].bucket_offset) * ZG_DTYPE_SIZE;
            int64_t lo = r * pt, n = numel - lo < pt ? numel - lo : pt;
            if (n < 0) n = 0;
            tr_f32_to_w(dst, g + lo, n);
            memset(dst + n * ZG_DTYPE_SIZE, 0, (size_t)(pt - n) * ZG_DTYPE_SIZE);
        }
    }
    tr_span(ZR_TRACK_COMPUTE, "grad copy", t0);
}

/* The lowered row says what moves (gen/lower.c decided the stage's rules once): stages 0/1
** all-reduce "grads" in place, stage 2 a bucket buffer; stage 3 reduce-scatters the rank-major
** bucket into "bucket_recv_<b>", or, for one fp32 micro-step, straight into grad32 (zero at this
** point, and 0 + x is exact, so this equals accumulating); over one rank an in-place sum moves
** nothing. libzrt sums every element in rank order in fp32 (16-bit rounded once), the same bits an
** all-reduce of the bucket would give. */
static void reduce(const ZrOpRow *op)
{
    ZrCollReq **req = &T.reduce_req[op->arg];
    *req = NULL;
    if (op->xfer == ZR_XFER_NONE) return;
    const void *src = tr_region_at(op->src, op->src_off, op->src_dt);
    void *dst = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    if (op->xfer == ZR_XFER_ALL_REDUCE)
        ZR_CHECK(zr_all_reduce(T.comm, src, dst, op->count, (ZrDtype)op->src_dt, req));
    else if (op->xfer == ZR_XFER_REDUCE_SCATTER)
        ZR_CHECK(zr_reduce_scatter(T.comm, src, dst, op->count, (ZrDtype)op->src_dt, req));
    else
        tr_die("REDUCE of bucket %d lowered to %s", op->arg, zr_xfer_names[op->xfer]);
}

/* d[i] (+)= W element i of s, for n elements: the widening loop of every gradient hand-over. */
void tr_w_into_f32(float *d, const void *s, int64_t n, int add)
{
#if ZG_MIXED
    /* widened a block at a time (the vector conversion), then the same adds element by element */
    const uint16_t *h = s;
    float x[1024];
    for (int64_t a = 0; a < n; a += 1024) {
        int64_t m = n - a < 1024 ? n - a : 1024;
        tr_w_to_f32(x, h + a, m);
        if (!add) { memcpy(d + a, x, (size_t)m * 4); continue; }
        for (int64_t i = 0; i < m; i++) d[a + i] += x[i];
    }
#else
    const float *f = s;
    if (!add) { memcpy(d, f, (size_t)n * 4); return; }
    for (int64_t i = 0; i < n; i++) d[i] += f[i];
#endif
}

/* Adds (or, stages 0/1, copies) this rank's part of reduced flat range [lo, hi) into grad32. */
void tr_take_flat_part(const void *src, int64_t lo, int64_t hi, int add)
{
    int64_t slo = T.opt_flat0, shi = T.opt_flat0 + T.opt_numel;
    int64_t a = lo > slo ? lo : slo, b = hi < shi ? hi : shi;
    if (b <= a) return;
    tr_w_into_f32(T.grad32 + (a - T.opt_flat0), (const char *)src + (a - lo) * ZG_DTYPE_SIZE, b - a, add);
}

/* The hand-over of the reduced gradients into grad32, as lowered: a flat range of which this
** rank's shard part is taken (stages 0-2), or this rank's reduce-scattered chunk (stage 3; with
** grad32 on NVMe an nvme_write: through the sub-group windows of tr_grad_take); NONE when the
** reduction already landed in grad32 or there is no grad32. */
static void wait_reduce(const ZrOpRow *op)
{
    int k = op->arg;
    double t0 = tr_now();
    ZR_CHECK(zr_coll_wait(T.comm, T.reduce_req[k]));
    T.reduce_req[k] = NULL;
    tr_span(ZR_TRACK_COMM, "reduce", t0);
    if (op->xfer == ZR_XFER_NONE) return;
    t0 = tr_now();
    const void *src = tr_region_at(op->src, op->src_off, op->src_dt);
    if (op->flat >= 0) tr_take_flat_part(src, op->flat, op->flat + op->count, op->accumulate);
    else if (op->xfer == ZR_XFER_NVME_WRITE) tr_grad_take(op->dst_off, src, op->count, op->accumulate);
    else tr_w_into_f32(tr_region_at(op->dst, op->dst_off, ZR_DT_FP32), src, op->count, op->accumulate);
    tr_span(ZR_TRACK_COMPUTE, "grad hand-over", t0);
}

/* ---------------------------------------------------------------------- the executor */
static void run_op(const ZrOpRow *op)
{
    int a = op->arg;
    double t0 = tr_now();
    switch (op->kind) {
    case ZR_OP_PARAM_SWAP_IN: param_swap_in(a, op->slot); break;
    case ZR_OP_GATHER: gather(a, op->slot); break;
    case ZR_OP_WAIT_GATHER: wait_gather(a, op->slot); break;
    case ZR_OP_RELEASE: release(a, op->slot); break;
    case ZR_OP_FORWARD:
        if (op->slot == ZR_RECOMPUTE) {       /* activation checkpointing, before its backward */
            if (T.forward_only) break;
            forward(a, 1);
            tr_span(ZR_TRACK_COMPUTE, "recompute", t0);
            break;
        }
        forward(a, 0);
        tr_span(ZR_TRACK_COMPUTE, zg_modules[a].name, t0);
        break;
    case ZR_OP_BACKWARD:
        if (T.forward_only) break;
        backward(op);
        tr_span(ZR_TRACK_COMPUTE, zg_modules[a].name, t0);
        break;
    case ZR_OP_REDUCE: if (!T.forward_only) reduce(op); break;
    case ZR_OP_WAIT_REDUCE: if (!T.forward_only) wait_reduce(op); break;
    case ZR_OP_GRAD_COPY: if (!T.forward_only) grad_copy(a); break;
    default:
        tr_die("op kind %d in a micro-step list", op->kind);
    }
}

static void load_batch(const ZrData *d, int64_t step, int micro)
{
    ZR_CHECK(zr_data_fill_micro(d, step, ZG_SEQ_LEN, ZG_MICRO_BATCH, ZG_GRAD_ACCUM, T.ws, T.rank,
                                micro, T.inputs, T.targets));
}

void tr_exec_micro(int micro, int last)
{
    load_batch(&T.data, T.step, micro);
    const ZrOpRow *ops = last ? zg_last_micro_ops : zg_micro_ops;
    int n = last ? ZG_N_LAST_MICRO_OPS : ZG_N_MICRO_OPS;
    for (int i = 0; i < n; i++) run_op(&ops[i]);
}

float tr_eval_batch(const ZrData *d, int64_t step)
{
    float saved = T.loss_sum, sum;
    T.loss_sum = 0;
    T.forward_only = 1;
    for (int micro = 0; micro < ZG_GRAD_ACCUM; micro++) {
        load_batch(d, step, micro);
        for (int i = 0; i < ZG_N_LAST_MICRO_OPS; i++) run_op(&zg_last_micro_ops[i]);
    }
    T.forward_only = 0;
    ZR_CHECK(zr_all_reduce(T.comm, &T.loss_sum, &sum, 1, ZR_DT_FP32, NULL));
    T.loss_sum = saved;
    return sum / (float)ZG_TOKENS_PER_STEP;
}
