/*
** train_ops.c — the host backend's op table (train.h, TrOps, tr_host_ops): what each op of
** the plan does on the host, for the executor's loop (train_exec.c). train-cuda runs the same loop
** with this table as --check's reference. (Named without "_host": tests reuse the arch's
** plan-independent kernel objects, *_host*.o, across plans, and this file depends on the plan.)
**
** Parameters reach the kernels as fp32 pointers: the working copy itself with fp32, or with 16-bit
** dtypes an upcast into T.stage_params (this backend's own buffer beside its activations: the
** device tier holds no fp32 parameter copy, as train-cuda reads the 16-bit one). Gradients leave
** the kernels into the module gradient area G
** (gen/zg_plan.h, GRADIENT FLOW), the BACKWARD row's destination: accumulated into (stages 0/1
** with fp32: "grads" itself) or written fresh, and the plan's GRAD_COPY / REDUCE / WAIT_REDUCE rows
** move it on. Collectives are libzrt's (MPI, or shared memory on one node), non-blocking: started
** by one op and waited by another.
*/
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* ---------------------------------------------------------------------- parameters */
static const float *P[ZG_N_TENSORS];     /* fp32 views for the module being run */

static void load_params(int m)
{
    int first, n;
    tr_module_tensors(m, &first, &n);
    int64_t base = zg_tensors[first].flat_offset;
    for (int t = first; t < first + n; t++) {
        void *w = tr_param_at(m, t);
#if ZG_MIXED
        float *dst = T.stage_params + (zg_tensors[t].flat_offset - base);
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

static void prepare_grads(const ZrOpRow *op)
{
    float *area = tr_region_at(op->dst, op->dst_off, ZR_DT_FP32);
    if (!op->accumulate) memset(area, 0, (size_t)op->count * 4);
    int tied = tr_grad_views(op, area, Gp);
    if (tied >= 0) memcpy(Gp[tied], T.tied_grad, (size_t)zg_tensors[tied].numel * 4);
}

/* GRAD_ADD (stages 0/1 with a 16-bit dtype): the row's fp32 module gradient area added into the
** 16-bit accumulation buffer "grads", each element widened, added and rounded once. */
static void grad_add(const ZrOpRow *op)
{
    char *g = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    const float *s = tr_region_at(op->src, op->src_off, op->src_dt);
    float a[1024];
    for (int64_t i = 0; i < op->count; i += 1024) {
        int64_t m = op->count - i < 1024 ? op->count - i : 1024;
        tr_w_to_f32(a, g + i * ZG_DTYPE_SIZE, m);
        for (int64_t j = 0; j < m; j++) a[j] += s[i + j];
        tr_f32_to_w(g + i * ZG_DTYPE_SIZE, a, m);
    }
}

/* ---------------------------------------------------------------------- activation checkpointing */
/* With checkpointing the adapter runs block l as block 0 of its one-block area, whose input is the
** kept residual stream entering block l, and the final norm on the stream entering it. */
static float *stream_in_ckpt(int l)
{
    if (l == 0) return tr_model_stream0();
    return T.ckpt_out + (size_t)(l - 1) * ZG_MICRO_BATCH * ZG_SEQ_LEN * ZG_D_MODEL;
}

/* ---------------------------------------------------------------------- modules */
/* Every module through the model adapter (train_model.h) with its own parameter and gradient
** pointers: P + first, Gp + first (tr_module_tensors). */
static void forward(const ZrOpRow *op)
{
    int m = op->arg, first, n;
    const ZrModuleRow *mr = &zg_modules[m];
    tr_module_tensors(m, &first, &n);
    load_params(m);
    const float *const *p = P + first;
    switch (mr->kind) {
    case ZR_MOD_EMBED:
        tr_model_embed_forward(T.inputs, T.pos, p);
        break;
    case ZR_MOD_BLOCK:
        if (!T.act_ckpt) {
            tr_model_block_forward(mr->layer, NULL, p);
            break;
        }
        /* the same kernels on the same input: a recompute gives the forward's bits of everything
        ** but the block's output, which it does not compute (kept already) */
        if (op->slot == ZR_RECOMPUTE) {
            tr_model_block_recompute(0, stream_in_ckpt(mr->layer), p);
            break;
        }
        tr_model_block_forward(0, stream_in_ckpt(mr->layer), p);
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
        tr_model_head_backward(T.targets, p, g, (float)(T.loss_scale / T.step_targets));
        break;
    case ZR_MOD_FINAL_NORM:
        tr_model_final_norm_backward(T.act_ckpt ? stream_in_ckpt(ZG_N_LAYERS) : NULL, p, g);
        break;
    case ZR_MOD_BLOCK:
        if (T.act_ckpt) {
            tr_model_block_backward(0, stream_in_ckpt(mr->layer), p, g);
            break;
        }
        tr_model_block_backward(mr->layer, NULL, p, g);
        break;
    case ZR_MOD_EMBED:
        tr_model_embed_backward(T.inputs, T.pos, g);
        break;
    }
}

/* ---------------------------------------------------------------------- stage 3 gathers */
/* The row's span of the shard into param_buf s: a copy, or an NVMe read the GATHER waits for. */
static void param_swap_in(const ZrOpRow *op)
{
    void *dst = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    int64_t bytes = op->count * ZG_DTYPE_SIZE;
    if (op->xfer == ZR_XFER_COPY)
        memcpy(dst, tr_region_at(op->src, op->src_off, op->src_dt), (size_t)bytes);
    else if (op->xfer == ZR_XFER_NVME_READ)
        ZR_CHECK(zr_nvme_read_async(T.nvme_param, dst, bytes, tr_nvme_at(op->src, op->src_off, op->src_dt),
                                    &T.pswap_req[op->slot]));
    else
        tr_die("PARAM_SWAP_IN of group %d lowered to %s", op->arg, zr_xfer_names[op->xfer]);
}

static void gather(const ZrOpRow *op)
{
    int s = op->slot;
    const ZrGatherRow *gr = &zg_gathers[op->arg];
    TrReq *q = &T.gather_req[s];
    /* the row's source holds the group's span of the shard: param_buf s (PARAM_SWAP_IN brought it,
    ** from NVMe still in flight) or the shard itself at the span */
    if (T.pswap_req[s].state == 1 && zr_nvme_wait(T.nvme_param, &T.pswap_req[s]) < 0)
        tr_die("%s", zr_nvme_strerror(T.nvme_param));
    const char *src = tr_region_at(op->src, op->src_off, op->src_dt);
    if (q->n) tr_die("slot %d gathered again before its previous gather was waited for", s);
    for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
        if (zg_tensors[t].persistent) continue;
        const void *send = src + (zg_tensors[t].shard_offset - gr->shard_offset) * ZG_DTYPE_SIZE;
        ZR_CHECK(zr_all_gather(T.comm, send, tr_w_at(T.slot[s], zg_tensors[t].gather_offset),
                               zg_tensors[t].part_numel, ZG_DTYPE, &q->h[q->n]));
        q->n++;
    }
}

static void wait_gather(const ZrOpRow *op)
{
    TrReq *q = &T.gather_req[op->slot];
    for (int i = 0; i < q->n; i++) ZR_CHECK(zr_coll_wait(T.comm, q->h[i]));
    q->n = 0;
}

/* The slot is dead until gathered again: in debug mode it is poisoned with NaN, so a schedule
** that reads a released slot shows up as a NaN loss. */
static void release(const ZrOpRow *op)
{
    const ZrRegionRow *r = T.slot_row[op->slot];
    ZR_CHECK(zr_arena_release(T.arena[r->tier], r->offset_bytes, r->bytes));
}

/* ---------------------------------------------------------------------- gradient buckets */
static void put_w(char *dst, const float *src, int64_t n, int64_t pad)
{
    tr_f32_to_w(dst, src, n);
    memset(dst + n * ZG_DTYPE_SIZE, 0, (size_t)pad * ZG_DTYPE_SIZE);
}

static void grad_copy(const ZrOpRow *op)
{
    tr_grad_copy_each(op, T.bucket[tr_bucket_buf(op->arg)], Gp, put_w);
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

/* The norm's sum of squares (ZG_NORM_FUSED) in the order every backend repeats (train.h TrSq): a
** block's element at shard offset o into double lane o % 8, ascending; at the block's end its lanes
** are added ((0+1)+(2+3))+((4+5)+(6+7)) (zr_sq_lanes_sum, the speculative Adam's too) into the
** running sum. Adding a block with no element adds +0, which changes no sum of squares, so the
** state needs no "open block" flag. */
static void sq_close(TrSq *q)
{
    q->sum += zr_sq_lanes_sum(q->lane);
    for (int j = 0; j < 8; j++) q->lane[j] = 0;
}

void tr_sq_feed(TrSq *q, const float *x, int64_t off, int64_t n)
{
    const int64_t B = ZG_NORM_BLOCK;
    double l[8];
    for (int j = 0; j < 8; j++) l[j] = q->lane[j];
    for (int64_t i = 0; i < n;) {
        int64_t o = off + i, m = B - o % B < n - i ? B - o % B : n - i, t = 0;
        const float *p = x + i;
        for (int j = (int)(o % 8); t < m && j != 0; t++, j = (j + 1) & 7) l[j] += (double)p[t] * p[t];
        for (; t + 8 <= m; t += 8)
            for (int j = 0; j < 8; j++) l[j] += (double)p[t + j] * p[t + j];
        for (int j = 0; t < m; t++, j++) l[j] += (double)p[t] * p[t];
        i += m;
        if ((off + i) % B == 0) {
            q->sum += zr_sq_lanes_sum(l);
            for (int j = 0; j < 8; j++) l[j] = 0;
        }
    }
    for (int j = 0; j < 8; j++) q->lane[j] = l[j];
}

void tr_sq_lanes(TrSq *q, const double lane[8], int64_t end)
{
    for (int j = 0; j < 8; j++) q->lane[j] += lane[j];
    if (end % ZG_NORM_BLOCK == 0) sq_close(q);
}

double tr_sq_total(const TrSq *q)
{
    return q->sum + zr_sq_lanes_sum(q->lane);
}

/* The 16-bit hand-over of n elements at shard offset off, the squares of the first nsq fed to q.
** In place (a GPU rank's D2H landed here) only -0 is rewritten, which Adam reads as +0 anyway
** (zr_adam.h): with no squares to sum there is nothing to do. */
static void copy_w_sumsq(void *dst, const void *src, int64_t n, int64_t off, int64_t nsq, TrSq *q)
{
#if ZG_DTYPE_SIZE == 2
    const uint16_t *h = src;
    uint16_t *d = dst;
    float x[1024];
    if (d == h) n = nsq;
    for (int64_t a = 0; a < n; a += 1024) {
        int64_t m = n - a < 1024 ? n - a : 1024;
        if (d != h)
            for (int64_t i = 0; i < m; i++) d[a + i] = h[a + i] == 0x8000 ? 0 : h[a + i];
        else
            for (int64_t i = 0; i < m; i++)
                if (d[a + i] == 0x8000) d[a + i] = 0;
        if (a >= nsq) continue;
        tr_w_to_f32(x, d + a, m);
        tr_sq_feed(q, x, off + a, nsq - a < m ? nsq - a : m);
    }
#else
    (void)dst; (void)src; (void)n; (void)off; (void)nsq; (void)q;
    tr_die("internal: a 16-bit gradient hand-over in an fp32 plan");
#endif
}

/* tr_w_into_f32, and with q (ZG_NORM_FUSED's last hand-over; off the shard offset of d[0]) the
** squares of the first nsq results fed block by block while the block is in cache: one pass over
** the range. */
static void into_f32(float *d, const void *s, int64_t n, int add, int64_t off, int64_t nsq, TrSq *q)
{
    for (int64_t a = 0; a < n; a += 1024) {
        int64_t m = n - a < 1024 ? n - a : 1024;
#if ZG_MIXED
        /* widened a block at a time (the vector conversion), then the same adds element by element */
        float x[1024];
        tr_w_to_f32(x, (const uint16_t *)s + a, m);
#else
        const float *x = (const float *)s + a;
#endif
        if (!add) memcpy(d + a, x, (size_t)m * 4);
        else for (int64_t i = 0; i < m; i++) d[a + i] += x[i];
        if (q && a < nsq) tr_sq_feed(q, d + a, off + a, nsq - a < m ? nsq - a : m);
    }
}

void tr_w_into_f32(float *d, const void *s, int64_t n, int add) { into_f32(d, s, n, add, 0, 0, NULL); }

/* ZG_NORM_ADAM: the elements of the range [at, at + n) whose squares the hand-over sums: the device
** part's (the range's front below ZG_OPT_DEV_NUMEL; the host part's are its Adam's); else all. */
static int64_t sq_here(int64_t at, int64_t n)
{
    if (!ZG_NORM_ADAM) return n;
    return at >= ZG_OPT_DEV_NUMEL ? 0 : at + n > ZG_OPT_DEV_NUMEL ? ZG_OPT_DEV_NUMEL - at : n;
}

static TrSq norm_pre[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];    /* ZG_NORM_ADAM: the device parts' */

/* A bucket's sum so far: the norm's part, or with ZG_NORM_ADAM its device part's, which the pieces
** of its host part continue (tr_norm_total). */
static void norm_done(int k, const TrSq *q)
{
    if (ZG_NORM_ADAM) norm_pre[k] = *q;
    else T.norm_part[k] = tr_sq_total(q);
}

/* The hand-over of reduced gradients into grad32, as lowered: a flat range of which this rank's
** shard part is taken (stages 0-2), or this rank's reduce-scattered chunk (stage 3; with grad32 on
** NVMe an nvme_write: through the sub-group windows of tr_grad_take). */
void tr_hand_over(const ZrOpRow *op) { tr_hand_over_after(op, NULL); }

void tr_hand_over_after(const ZrOpRow *op, const TrSq *pre)
{
    int64_t skip, dst, n = tr_hand_over_range(op, &skip, &dst);
    int norm = ZG_NORM_FUSED && !ZG_GRAD_ACC_DEV && T.micro == ZG_GRAD_ACCUM - 1;   /* else GRAD_SHIP's */
    TrSq q = {0};
    if (pre) q = *pre;
    if (n > 0) {
        const char *src = (const char *)tr_region_at(op->src, op->src_off, op->src_dt) + skip * ZG_DTYPE_SIZE;
        if (op->xfer == ZR_XFER_NVME_WRITE) {
            tr_grad_take(dst, src, n, op->accumulate);
            return;
        }
        if (op->dst_dt != ZR_DT_FP32)             /* grad16: one micro-step, a copy */
            copy_w_sumsq(tr_region_at(op->dst, dst, op->dst_dt), src, n, dst, sq_here(dst, n), &q);
        else
            into_f32(tr_region_at(op->dst, dst, ZR_DT_FP32), src, n, op->accumulate, dst, sq_here(dst, n),
                     norm ? &q : NULL);
    }
    if (norm) norm_done(op->arg, &q);
}

/* GRAD_SHIP: the row's range of grad_acc and grad32 (both indexed by the shard offset, gen/lower.c)
** block by block as into_f32 sums a hand-over, so the norm has the bits the hand-over's would. */
void tr_grad_ship(const ZrOpRow *op, int copy, const TrSq *pre)
{
    int64_t skip, at, n = tr_hand_over_range(op, &skip, &at);
    TrSq q = {0};
    if (pre) q = *pre;
    if (n > 0) {
        float *d = tr_region_at(op->dst, at, ZR_DT_FP32);
        const float *s = tr_region_at(op->src, at, ZR_DT_FP32);
        int64_t nsq = sq_here(at, n);
        for (int64_t a = 0; a < n; a += 1024) {
            int64_t m = n - a < 1024 ? n - a : 1024;
            if (copy) memcpy(d + a, s + a, (size_t)m * 4);
            if (ZG_NORM_FUSED && a < nsq) tr_sq_feed(&q, d + a, at + a, nsq - a < m ? nsq - a : m);
        }
    }
    if (ZG_NORM_FUSED) norm_done(op->arg, &q);
}

/* ---------------------------------------------------------------------- the norm's pieces */
/* ZG_NORM_ADAM: each bucket's part of this rank's shard (its rows' range: tr_hand_over_range on the
** bucket's flat range), the pieces' cuts at those ends that fall inside a block, and the Adam's
** state over T.norm_pieces (train_optim.c runs it; it lives here with the rest of the norm). Laid
** out once at start-up (tr_norm_init), so the Adam thread only reads it. */
static int64_t norm_lo[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1], norm_hi[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
static int64_t norm_cut[2 * (ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1)];
static ZrAdamSq norm_sq;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

ZrAdamSq *tr_norm_sq(void) { return &norm_sq; }

void tr_norm_init(void)
{
    if (!ZG_NORM_ADAM) return;
    int n = 0;
    for (int k = 0; k < ZG_N_BUCKETS; k++) {
        ZrOpRow row = {.flat = zg_buckets[k].flat_offset, .count = zg_buckets[k].numel};
        int64_t skip, at, len = tr_hand_over_range(&row, &skip, &at);
        norm_lo[k] = at;
        norm_hi[k] = at + (len > 0 ? len : 0);
        if (len <= 0) continue;
        if (at % ZG_NORM_BLOCK) norm_cut[n++] = at;
        if ((at + len) % ZG_NORM_BLOCK) norm_cut[n++] = at + len;
    }
    qsort(norm_cut, (size_t)n, sizeof *norm_cut, cmp_i64);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || norm_cut[u - 1] != norm_cut[i]) norm_cut[u++] = norm_cut[i];
    norm_sq = (ZrAdamSq){.block = ZG_NORM_BLOCK, .cut = norm_cut, .n_cut = u, .piece = T.norm_pieces, .open = -1};
    int64_t need = T.opt_numel > 0 ? zr_adam_sq_piece(&norm_sq, T.opt_numel - 1) + 1 : 0;
    if (need > T.n_norm_pieces)
        tr_die("rank %d's norm needs %lld pieces; the plan's norm_pieces holds %lld", T.rank, (long long)need,
               (long long)T.n_norm_pieces);
    /* zero once: the fold clears each piece it reads, which are all the speculative Adam writes */
    memset(T.norm_pieces, 0, (size_t)T.n_norm_pieces * 8);
}

double tr_norm_total(void)
{
    double s = 0;
    if (!ZG_NORM_ADAM) {
        for (int b = 0; b < ZG_N_BUCKETS; b++) s += T.norm_part[b];
        return s;
    }
    for (int b = 0; b < ZG_N_BUCKETS; b++) {
        TrSq q = norm_pre[b];
        int64_t lo = norm_lo[b] > ZG_OPT_DEV_NUMEL ? norm_lo[b] : ZG_OPT_DEV_NUMEL;
        if (lo < norm_hi[b])
            for (int64_t id = zr_adam_sq_piece(&norm_sq, lo), last = zr_adam_sq_piece(&norm_sq, norm_hi[b] - 1);
                 id <= last; id++) {
                q.sum += norm_sq.piece[id];
                norm_sq.piece[id] = 0;
            }
        s += tr_sq_total(&q);
        memset(&norm_pre[b], 0, sizeof norm_pre[b]);
    }
    return s;
}

static void host_grad_ship(const ZrOpRow *op) { tr_grad_ship(op, 1, NULL); }

/* GRAD_KEEP: the device range's part of the bucket's sums, a W copy (the reduction is done: the
** WAIT_REDUCE before it waited for it). */
static void grad_keep(const ZrOpRow *op)
{
    int64_t skip, at, n = tr_keep_range(op, &skip, &at);
    if (n <= 0) return;
    memcpy(tr_w_at(T.grad_keep, at), (const char *)tr_region_at(op->src, op->src_off, op->src_dt) + skip * ZG_DTYPE_SIZE,
           (size_t)n * ZG_DTYPE_SIZE);
}

static void host_spec_optimizer(const ZrOpRow *op) { tr_spec_optimizer(op, tr_step_op); }

/* NONE: the reduction already landed in grad32, or there is no grad32. */
static void wait_reduce(const ZrOpRow *op)
{
    ZR_CHECK(zr_coll_wait(T.comm, T.reduce_req[op->arg]));
    T.reduce_req[op->arg] = NULL;
    if (op->xfer != ZR_XFER_NONE) tr_hand_over(op);
}

const TrOps tr_host_ops = {
    .name = "host",
    .swap_in = param_swap_in, .gather = gather, .wait_gather = wait_gather, .release = release,
    .forward = forward, .backward = backward,
    .grad_copy = grad_copy, .grad_add = grad_add, .reduce = reduce, .wait_reduce = wait_reduce,
    .optimizer = host_spec_optimizer, .grad_ship = host_grad_ship, .grad_keep = grad_keep,
};
