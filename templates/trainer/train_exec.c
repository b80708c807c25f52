/*
** train_exec.c — the micro-step executor, one for every backend: runs the plan's op list
** (zg_micro_ops, or zg_last_micro_ops for the last micro-step of an optimizer step) in order, and
** hands each op to the backend's op table (train.h, TrOps): the host's tr_host_ops
** (train_ops.c) or the CUDA backend's cz_ops (cuda/trainer/cuda_exec.c). The whole step as
** the plan lays it out is here; what an op does on a backend's memory and queues is in its table.
**
** Each op row arrives lowered (gen/lower.c): collective kind, source and destination regions,
** offsets, counts, dtypes, accumulate flag. So neither this loop nor a backend decides again what
** the ZeRO stage implies; the address arithmetic that turns rows and tensor rows into addresses is
** below, once, and each backend maps the resulting plan addresses to its own memory.
** Collectives are started by one op and waited by another, so communication overlaps compute
** exactly as the schedule lays it out; every rank runs the same list, so collectives always match.
** Evaluation (T.forward_only) runs the last micro-step's list forward only.
*/
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* ---------------------------------------------------------------------- gather slots */
static int gslot[ZG_N_GATHERS > 0 ? ZG_N_GATHERS : 1];   /* slot holding group g now, or -1 */
static int gslot_ready;

static void slots_init(void)
{
    if (gslot_ready) return;
    for (int i = 0; i < ZG_N_GATHERS; i++) gslot[i] = -1;
    gslot_ready = 1;
}

/* ---------------------------------------------------------------------- shared addresses */
void tr_module_tensors(int m, int *first, int *n)
{
    const ZrModuleRow *mr = &zg_modules[m];
    if (mr->kind == ZR_MOD_HEAD && mr->n_tensors == 0) { *first = ZG_TIED_TENSOR; *n = 1; }
    else { *first = mr->first_tensor; *n = mr->n_tensors; }
}

void *tr_param_at(int m, int t)
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

/* The module gradient area G (gen/zg_plan.h, GRADIENT FLOW) is the BACKWARD row's destination,
** the module's tensors at their flat offsets relative to its first. Stages 2/3 keep the tied head's
** token-table gradient in "tied_grad" until embed, whose own gradient of it starts from there. */
int tr_grad_views(const ZrOpRow *op, float *area, float **G)
{
    int m = op->arg, first, n;
    tr_module_tensors(m, &first, &n);
    int64_t base = zg_tensors[first].flat_offset;
    for (int t = first; t < first + n; t++) G[t] = area + (zg_tensors[t].flat_offset - base);
    return zg_modules[m].kind == ZR_MOD_EMBED && ZG_HAS_TIED_GRAD ? ZG_TIED_TENSOR : -1;
}

int tr_bucket_buf(int k)
{
    int b = zg_buckets[k].buffer;
    if (b < 0 || b >= ZG_N_REGIONS_BUCKET) tr_die("bucket %d names buffer %d, which the plan lacks", k, b);
    return b;
}

/* Tensors of the last BACKWARD's module in bucket op->arg: flat order (part_numel 0), or stage 3's
** rank-major order, slice r of each tensor into chunk r, zero-padded to its part. */
void tr_grad_copy_each(const ZrOpRow *op, char *buf, float *const *G, TrPut *put)
{
    const ZrBucketRow *br = &zg_buckets[op->arg];
    int64_t chunk = br->padded_numel / T.ws;
    for (int t = br->first_tensor; t < br->first_tensor + br->n_tensors; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        if (r->module != T.last_bwd_module) continue;
        if (r->part_numel == 0) {
            put(buf + r->bucket_offset * ZG_DTYPE_SIZE, G[t], r->numel, 0);
            continue;
        }
        int64_t pt = r->part_numel;
        for (int k = 0; k < T.ws; k++) {
            int64_t lo = k * pt, n = r->numel - lo < pt ? r->numel - lo : pt;
            if (n < 0) n = 0;
            put(buf + (k * chunk + r->bucket_offset) * ZG_DTYPE_SIZE, G[t] + (n ? lo : 0), n, pt - n);
        }
    }
}

int64_t tr_hand_over_range(const ZrOpRow *op, int64_t *skip, int64_t *dst)
{
    if (op->flat < 0) { *skip = 0; *dst = op->dst_off; return op->count; }
    int64_t lo = op->flat, hi = op->flat + op->count, slo = T.opt_flat0, shi = T.opt_flat0 + T.opt_numel;
    int64_t a = lo > slo ? lo : slo, b = hi < shi ? hi : shi;
    *skip = a - lo;
    *dst = a - slo;
    return b > a ? b - a : 0;
}

int64_t tr_keep_range(const ZrOpRow *op, int64_t *skip, int64_t *dst)
{
    int64_t n = tr_hand_over_range(op, skip, dst);
    if (*dst >= ZG_OPT_DEV_NUMEL) return 0;
    return *dst + n > ZG_OPT_DEV_NUMEL ? ZG_OPT_DEV_NUMEL - *dst : n;
}

/* ---------------------------------------------------------------------- the loop */
/* Tracing: one span per op, on the track of the queue gen lowered it to (the CUDA backend's
** stream): host work is I/O, the copy queues and collectives are communication. */
static const ZrTrack track_of[ZR_NSTREAMS] = {
    [ZR_STREAM_HOST] = ZR_TRACK_IO, [ZR_STREAM_COMPUTE] = ZR_TRACK_COMPUTE, [ZR_STREAM_COMM] = ZR_TRACK_COMM,
    [ZR_STREAM_H2D] = ZR_TRACK_COMM, [ZR_STREAM_D2H] = ZR_TRACK_COMM};

static void run_op(const TrOps *ops, const ZrOpRow *op)
{
    int a = op->arg, train = !T.forward_only;
    ZrTrack track = track_of[op->stream];
    double t0 = tr_now();
    switch (op->kind) {
    case ZR_OP_PARAM_SWAP_IN:
        ops->swap_in(op);
        tr_span(track, "param swap-in", t0);
        break;
    case ZR_OP_GATHER:
        ops->gather(op);
        tr_span(track, "gather start", t0);
        break;
    case ZR_OP_WAIT_GATHER:
        ops->wait_gather(op);
        slots_init();
        gslot[a] = op->slot;    /* a group may sit in two slots (prefetch reaching its next use) */
        tr_span(track, "gather", t0);
        break;
    case ZR_OP_RELEASE:
        ops->release(op);
        slots_init();
        if (gslot[a] == op->slot) gslot[a] = -1;
        break;
    case ZR_OP_FORWARD:
        if (op->slot == ZR_RECOMPUTE && !train) break;   /* checkpointing: only before a backward */
        ops->forward(op);
        if (T.act_ckpt && zg_modules[a].kind == ZR_MOD_BLOCK) T.area_layer = zg_modules[a].layer;
        tr_span(track, op->slot == ZR_RECOMPUTE ? "recompute" : zg_modules[a].name, t0);
        break;
    case ZR_OP_BACKWARD:
        if (!train) break;
        /* checkpointing: the one block area must hold this block, which the plan's recompute (or,
        ** for the last block, its forward) put there; either backend differentiates what it holds */
        if (T.act_ckpt && zg_modules[a].kind == ZR_MOD_BLOCK && T.area_layer != zg_modules[a].layer)
            tr_die("backward of block %d, but the block area holds block %d (the plan lacks a recompute)",
                   zg_modules[a].layer, T.area_layer);
        ops->backward(op);
        T.last_bwd_module = a;
        tr_span(track, zg_modules[a].name, t0);
        break;
    case ZR_OP_GRAD_ADD:
        if (!train) break;
        ops->grad_add(op);
        tr_span(track, "grad add", t0);
        break;
    case ZR_OP_GRAD_COPY:
        if (!train) break;
        ops->grad_copy(op);
        tr_span(track, "grad copy", t0);
        break;
    case ZR_OP_REDUCE:
        if (!train) break;
        ops->reduce(op);
        tr_span(track, "reduce start", t0);
        break;
    case ZR_OP_WAIT_REDUCE:
        if (!train) break;
        ops->wait_reduce(op);
        tr_span(track, "reduce + hand-over", t0);
        break;
    case ZR_OP_GRAD_SHIP:
        if (!train) break;
        ops->grad_ship(op);
        tr_span(track, "gradient sums D2H", t0);
        break;
    case ZR_OP_GRAD_KEEP:
        if (!train) break;
        ops->grad_keep(op);
        tr_span(track, "gradients kept", t0);
        break;
    case ZR_OP_OPTIMIZER:       /* the speculative step (gen/plan.c): the trace span is Adam's own */
        if (!train) break;
        ops->optimizer(op);
        break;
    default:
        tr_die("op kind %d in a micro-step list", op->kind);
    }
}

static void load_batch(const TrOps *ops, const ZrData *d, int64_t step, int micro)
{
    T.micro = micro;
    ZR_CHECK(zr_data_fill_micro(d, step, ZG_SEQ_LEN, ZG_MICRO_BATCH, ZG_GRAD_ACCUM, T.ws, T.rank,
                                micro, T.inputs, T.targets, T.pos));
    if (ops->batch) ops->batch(micro);
}

void tr_step_targets(void)
{
    int64_t n = zr_data_step_targets(&T.data, T.step, ZG_SEQ_LEN,
                                     (int64_t)ZG_MICRO_BATCH * ZG_GRAD_ACCUM * T.ws);
    if (n < 0) tr_die("--data: %s", zr_train_error());
    /* a batch of padding alone has loss 0 and no gradient; 1 keeps the divisions finite */
    T.step_targets = n > 0 ? (double)n : 1.0;
}

void tr_exec_micro(const TrOps *ops, int micro, int last)
{
    load_batch(ops, &T.data, T.step, micro);
    const ZrOpRow *list = last ? zg_last_micro_ops : zg_micro_ops;
    int n = last ? ZG_N_LAST_MICRO_OPS : ZG_N_MICRO_OPS;
    for (int i = 0; i < n; i++) run_op(ops, &list[i]);
    if (last && ops->flush) ops->flush();
}

/* Chunks of ZG_MICRO_BATCH rows per rank, every rank running every chunk (the forward's gathers are
** collective); rows past the file's end are padding without targets. Each chunk's loss sum is
** all-reduced, the chunks added in double. */
double tr_eval(const TrOps *ops, const ZrData *d, int64_t *targets)
{
    const int L = ZG_SEQ_LEN;
    int64_t rows = zr_data_eval_rows(d, L), per = (int64_t)ZG_MICRO_BATCH * T.ws, n = 0;
    if (rows < 0) tr_die("--val: %s", zr_train_error());
    float saved = T.loss_sum;
    double sum = 0;
    T.forward_only = 1;
    for (int64_t c = 0; c * per < rows; c++) {
        for (int64_t r = c * per; r < (c + 1) * per && r < rows; r++) {
            static int32_t in[ZG_SEQ_LEN], tg[ZG_SEQ_LEN];
            zr_data_fill_eval_row(d, r, L, in, tg, NULL);
            for (int t = 0; t < L; t++) n += tg[t] >= 0;
        }
        for (int i = 0; i < ZG_MICRO_BATCH; i++) {
            int64_t r = c * per + (int64_t)T.rank * ZG_MICRO_BATCH + i, o = (int64_t)i * L;
            zr_data_fill_eval_row(d, r, L, T.inputs + o, T.targets + o, T.pos + o);
        }
        T.micro = 0;
        T.loss_sum = 0;
        if (ops->batch) ops->batch(0);
        for (int i = 0; i < ZG_N_LAST_MICRO_OPS; i++) run_op(ops, &zg_last_micro_ops[i]);
        if (ops->flush) ops->flush();
        float part;
        ZR_CHECK(zr_all_reduce(T.comm, &T.loss_sum, &part, 1, ZR_DT_FP32, NULL));
        sum += part;
    }
    T.forward_only = 0;
    T.loss_sum = saved;
    *targets = n;
    return n > 0 ? sum / (double)n : 0.0;
}

void tr_grads_zero(const TrOps *ops)
{
    if (ZG_HAS_GRADS) memset(T.grads, 0, (size_t)ZG_PADDED_NUMEL * ZG_DTYPE_SIZE);
    if (ZG_HAS_GRAD32) memset(T.grad32, 0, (size_t)T.opt_numel * 4);
    if (ZG_HAS_GRAD_ACC) memset(T.grad_acc, 0, (size_t)T.opt_numel * 4);
    memset(T.norm_part, 0, sizeof T.norm_part);
    tr_grad_window_reset();
    if (ops->grads_zero) ops->grads_zero();
}
