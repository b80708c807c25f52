/*
** cuda_exec.c — the CUDA backend's op table (train.h, TrOps: cz_ops): what each op of the plan does
** on the device, for the one executor loop (templates/trainer/train_exec.c), which runs it exactly
** as it runs the host's table. Each op becomes work on one of four streams with an event for every
** dependency the op list implies, on the stream the row names (gen/lower.c: cz_queue); the host never waits for the device inside a micro-step except
** where a host buffer it is about to reuse is still being copied. Every entry reads the lowered op
** row (gen/lower.c) and the tensor rows, as the host's do, and maps the plan addresses the shared
** computations give (train_exec.c) to the device with cz_dev: no entry decides by the ZeRO stage.
**
**   op                stream   waits (event)                              records
**   PARAM_SWAP_IN s   h2d      the last gather out of param_buf s         ev_pswap[s]
**                    (NVMe: the host reads into pinned param_buf s once its last H2D is done)
**   GATHER g s        nccl     ev_pswap[s] (offload), ev_release[s]       ev_gather[s]
**                    (NVMe: h2d first copies each tensor's own part into the slot: in-place gather;
**                    the group's all-gathers are one NCCL group)
**   WAIT_GATHER g s   compute  ev_gather[s]
**   RELEASE g s       compute                                             ev_release[s]
**   FORWARD/BACKWARD  compute
**   GRAD_ADD m        compute                                   (stages 0/1, 16-bit: G into "grads")
**   GRAD_COPY b       compute  ev_buf_free[bucket buffer]
**   REDUCE b          nccl     ev_compute (recorded here on compute)      ev_reduced[b]
**   WAIT_REDUCE b     d2h      ev_reduced[b]; D2H of the part the host    ev_d2h[b], ev_buf_free
**                              takes into the row's slot of the pinned "grad_land"; the host does the
**                              row's hand-over into grad32 from there later (cz_flush, or before
**                              the slot is refilled). With Adam on the device (and no --check), or
**                              a row into the device's grad_acc, no D2H: the hand-over runs on the
**                              device only, as the plan's cost counts it
**   GRAD_SHIP b       d2h      (WAIT_REDUCE b's add, same stream); D2H    ev_d2h[b]
**                              of the part's sums into grad32; the host sums the norm's part
**   GRAD_KEEP b       d2h      (WAIT_REDUCE b, same stream); D2D of the   ev_buf_free again
**                              device optimizer range's part into grad_keep
** REDUCE runs the plan's lowered row: stage 3 reduce-scatters the rank-major bucket into the
** device "bucket_recv_<b>" (or grad32 on the device), and only this rank's chunk crosses to the
** host.
** 16-bit plans (bf16, fp16) convert exactly where the host executor does, with convert.cu's kernels
** (zr_half.h's bits): the module gradient area is the fp32 "grad_stage", GRAD_COPY
** rounds it into the 16-bit bucket, stages 0/1's GRAD_ADD rows add it into the 16-bit "grads",
** and reduced 16-bit gradients are widened into grad32 on the host with zr_half.h. Every 16-bit
** plan has 16-bit activations (ZK_IO 1 bf16, 2 fp16), so the model reads the working copy itself:
** no parameter is widened before a module runs.
*/
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"
#include "zr_half.h"
#include "../kernels/zk_shapes.h"   /* ZK_IO: 16-bit activations read the working copy itself */
#if ZG_MIXED && !ZK_IO
#error "a 16-bit plan with fp32 activations: gen/cuda_dec.c gives every 16-bit plan 16-bit activations"
#endif

Cz CZ;

/* ---------------------------------------------------------------------- 16-bit conversions */
#define CZ_FMT (ZG_BF16 ? 1 : 2)      /* convert.cu's format argument */

/* One convert.cu kernel over n elements on the compute stream. */
void cz_convert(ZrGpuStream *s, const char *kernel, void *dst, const void *src, int64_t n)
{
    if (n <= 0) return;
    long nn = (long)n;
    int fmt = CZ_FMT;
    const unsigned grid[3] = {(unsigned)((n + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    void *args[] = {&dst, &src, &nn, &fmt, NULL};
    /* footprints for the stand-in's race checker: 16-bit on the side the kernel's name says */
    size_t sb = strstr(kernel, "_16_to") ? 2 : 4, db = strstr(kernel, "to_16") ? 2 : 4;
    CZ_CHECK(zr_gpu_footprint(s, src, (size_t)n * sb, 0));
    CZ_CHECK(zr_gpu_footprint(s, dst, (size_t)n * db, 1));
    CZ_CHECK(zr_gpu_launch(s, kernel, grid, block, 0, args));
}

/* ---------------------------------------------------------------------- host waits */
/* A host wait for e inside the executor, unless a poll finds it done. ZR_CUDA_WAIT_LOG=1 names each
** one that waits on stderr, with the micro-step and whether the driver was issuing its ops, flushing
** it (cz_flush) or in the optimizer step (CZ.phase): where the driver blocks, read from a run
** (docs/CUDA_TRAINER.md). */
void cz_host_wait(ZrGpuEvent *e, const char *what, int arg)
{
    static int log = -1;
    int q = zr_gpu_event_query(e);
    CZ_CHECK(q);
    if (q) return;
    if (log < 0) log = getenv("ZR_CUDA_WAIT_LOG") && strcmp(getenv("ZR_CUDA_WAIT_LOG"), "1") == 0;
    if (log)
        fprintf(stderr, "train-cuda wait: rank %d step %lld micro-step %d %s: %s %d\n", T.rank, (long long)T.step,
                T.micro, CZ.phase == CZ_FLUSHING ? "flushing" : CZ.phase == CZ_STEP ? "in the step" : "issuing", what, arg);
    CZ_CHECK(zr_gpu_event_sync(e));
}

/* ---------------------------------------------------------------------- shadow -> device */
typedef struct { char *shadow; int64_t off, bytes; } CzMap;
static CzMap maps[ZG_N_REGIONS > 0 ? ZG_N_REGIONS : 1];
static int n_maps;

void cz_regions_init(void)
{
    for (int i = 0; i < ZG_N_REGIONS; i++) {
        const ZrRegionRow *r = &zg_regions[i];
        if (r->tier != ZR_TIER_DEVICE || r->bytes <= 0) continue;
        maps[n_maps].shadow = zr_arena_at(T.arena[ZR_TIER_DEVICE], r->offset_bytes, r->bytes);
        maps[n_maps].off = r->offset_bytes;
        maps[n_maps].bytes = r->bytes;
        n_maps++;
    }
}

/* The row's queue as gen lowered it: every entry below issues its work there. */
ZrGpuStream *cz_queue(const ZrOpRow *op)
{
    switch (op->stream) {
    case ZR_STREAM_COMPUTE: return CZ.compute;
    case ZR_STREAM_COMM: return CZ.nccl;
    case ZR_STREAM_H2D: return CZ.h2d;
    case ZR_STREAM_D2H: return CZ.d2h;
    }
    tr_die("%s row (%d) lowered to the %s queue, which is not a device stream", zr_op_names[op->kind], op->arg,
           op->stream >= 0 && op->stream < ZR_NSTREAMS ? zr_stream_names[op->stream] : "unknown");
}

int cz_dev_region(int r)
{
    return r >= 0 && zg_regions[r].tier == ZR_TIER_DEVICE;
}

int cz_is_dev(const void *p)
{
    for (int i = 0; i < n_maps; i++)
        if ((const char *)p >= maps[i].shadow && (const char *)p < maps[i].shadow + maps[i].bytes) return 1;
    return 0;
}

void *cz_dev(const void *p)
{
    if (!p) return NULL;
    for (int i = 0; i < n_maps; i++)
        if ((const char *)p >= maps[i].shadow && (const char *)p < maps[i].shadow + maps[i].bytes)
            return CZ.dev_base + maps[i].off + ((const char *)p - maps[i].shadow);
    tr_die("internal: a kernel would read host memory (%p is not in the device tier)", p);
}

/* ---------------------------------------------------------------------- parameters */
static const void *P[ZG_N_TENSORS];
static float *Gp[ZG_N_TENSORS];         /* device gradient views of the module being run */

/* P[t] for module m's tensors; returns the first of them, *n how many (tr_module_tensors) */
static int load_params(int m, int *n)
{
    int first;
    tr_module_tensors(m, &first, n);
    for (int t = first; t < first + *n; t++) P[t] = cz_dev(tr_param_at(m, t));
    return first;
}

/* Parameter offload. param_buf s on the device (CPU offload): PARAM_SWAP_IN copies the span H2D
** and GATHER sends from it. param_buf s in pinned memory (NVMe offload): PARAM_SWAP_IN reads the
** span from NVMe into it, and GATHER copies each tensor's own part H2D into its place in the slot
** and all-gathers in place (send = recv + rank * part), so no device staging is needed. */
static void param_swap_in(const ZrOpRow *op)
{
    int s = op->slot;
    size_t bytes = (size_t)op->count * ZG_DTYPE_SIZE;
    char *dst = tr_region_at(op->dst, op->dst_off, op->dst_dt);
    if (op->xfer == ZR_XFER_NVME_READ) {
        if (cz_dev_region(op->dst)) tr_die("PARAM_SWAP_IN %d: an NVMe read into device memory (param_buf_%d)", op->arg, s);
        cz_host_wait(CZ.ev_pswap[s], "H2D out of param_buf", s);   /* its last H2D out of the staging */
        ZR_CHECK(zr_nvme_read_async(T.nvme_param, dst, (int64_t)bytes, tr_nvme_at(op->src, op->src_off, op->src_dt),
                                    &T.pswap_req[s]));
        return;
    }
    if (op->xfer != ZR_XFER_COPY || !cz_dev_region(op->dst))
        tr_die("PARAM_SWAP_IN %d lowered to %s into %s memory", op->arg, zr_xfer_names[op->xfer],
               cz_dev_region(op->dst) ? "device" : "host");
    const char *src = tr_region_at(op->src, op->src_off, op->src_dt);
    int d2d = cz_dev_region(op->src);
    ZrGpuStream *q = cz_queue(op);
    CZ_CHECK(zr_gpu_wait(q, CZ.ev_gather[s]));      /* the last gather out of it is done */
    CZ_CHECK(zr_gpu_copy(q, d2d ? ZR_GPU_D2D : ZR_GPU_H2D, cz_dev(dst), d2d ? cz_dev(src) : src, bytes));
    CZ_CHECK(zr_gpu_record(CZ.ev_pswap[s], q));
}

/* One all-gather per tensor of the group, issued as one NCCL group (ncclGroupStart/End): NCCL
** launches them together, and the stand-in queues them as one operation. */
static void gather(const ZrOpRow *op)
{
    int s = op->slot;
    const ZrGatherRow *gr = &zg_gathers[op->arg];
    /* the row's source holds the group's span of the shard: param_buf s (PARAM_SWAP_IN brought it)
    ** or the shard itself; a host-memory source (NVMe offload: pinned param_buf s) is staged */
    const char *span = tr_region_at(op->src, op->src_off, op->src_dt);
    int staged = !cz_dev_region(op->src);
    ZrGpuStream *q = cz_queue(op);
    CZ_CHECK(zr_gpu_wait(q, CZ.ev_release[s]));     /* compute is done with the slot */
    if (staged) {
        if (T.pswap_req[s].state == 1 && zr_nvme_wait(T.nvme_param, &T.pswap_req[s]) < 0)
            tr_die("%s", zr_nvme_strerror(T.nvme_param));
        CZ_CHECK(zr_gpu_wait(CZ.h2d, CZ.ev_release[s]));
        for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
            if (zg_tensors[t].persistent) continue;
            int64_t part = zg_tensors[t].part_numel;
            CZ_CHECK(zr_gpu_copy(CZ.h2d, ZR_GPU_H2D,
                                 cz_dev(tr_w_at(T.slot[s], zg_tensors[t].gather_offset + T.rank * part)),
                                 span + (zg_tensors[t].shard_offset - gr->shard_offset) * ZG_DTYPE_SIZE,
                                 (size_t)part * ZG_DTYPE_SIZE));
        }
        CZ_CHECK(zr_gpu_record(CZ.ev_pswap[s], CZ.h2d));
    }
    if (ZG_N_REGIONS_PARAM_BUF > 0) CZ_CHECK(zr_gpu_wait(q, CZ.ev_pswap[s]));
    CZ_CHECK(zr_gpu_group_begin(CZ.gpu));
    for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
        if (zg_tensors[t].persistent) continue;
        int64_t part = zg_tensors[t].part_numel;
        char *recv = cz_dev(tr_w_at(T.slot[s], zg_tensors[t].gather_offset));
        const void *send;
        if (staged) send = recv + (size_t)T.rank * part * ZG_DTYPE_SIZE;
        else send = cz_dev(span + (zg_tensors[t].shard_offset - gr->shard_offset) * ZG_DTYPE_SIZE);
        CZ_CHECK(zr_gpu_coll(q, ZR_COLL_ALL_GATHER, send, recv, part, ZG_DTYPE));
    }
    CZ_CHECK(zr_gpu_group_end(CZ.gpu));
    CZ_CHECK(zr_gpu_record(CZ.ev_gather[s], q));
}

static void wait_gather(const ZrOpRow *op)
{
    CZ_CHECK(zr_gpu_wait(cz_queue(op), CZ.ev_gather[op->slot]));
}

static void release(const ZrOpRow *op)
{
    CZ_CHECK(zr_gpu_record(CZ.ev_release[op->slot], cz_queue(op)));
}

/* The arch adapters issue a module's kernels on the compute stream, where gen lowers every module. */
static void module_queue(const ZrOpRow *op)
{
    if (cz_queue(op) != CZ.compute)
        tr_die("%s of module %s lowered to the %s queue; modules run on compute", zr_op_names[op->kind],
               zg_modules[op->arg].name, zr_stream_names[op->stream]);
}

/* ---------------------------------------------------------------------- modules */
/* The module gradient area G of gen/zg_plan.h's GRADIENT FLOW (the BACKWARD row's destination),
** on the device. */
static void prepare_grads(const ZrOpRow *op)
{
    float *area = cz_dev(tr_region_at(op->dst, op->dst_off, ZR_DT_FP32));
    if (!op->accumulate) CZ_CHECK(zr_gpu_memset(CZ.compute, area, 0, (size_t)op->count * 4));
    int tied = tr_grad_views(op, area, Gp);
    if (tied >= 0)
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, Gp[tied], cz_dev(T.tied_grad),
                             (size_t)zg_tensors[tied].numel * 4));
}

/* Every module through the arch's adapter with its own pointers, P + first and Gp + first
** (tr_module_tensors: the tied head's first is the token table), as the host's train_ops.c. */
static void forward(const ZrOpRow *op)
{
    int m = op->arg, n, first = load_params(m, &n);
    const ZrModuleRow *mr = &zg_modules[m];
    const void *const *p = (const void *const *)(P + first);
    module_queue(op);
    switch (mr->kind) {
    case ZR_MOD_EMBED: cz_embed_forward(T.micro, p); break;
    case ZR_MOD_BLOCK: cz_block_forward(mr->layer, p, op->slot == ZR_RECOMPUTE); break;
    case ZR_MOD_FINAL_NORM: cz_final_norm_forward(p); break;
    case ZR_MOD_HEAD:
        cz_head_forward(T.micro, p, (float)(T.loss_scale / T.step_targets), !T.forward_only);
        break;
    }
}

static void backward(const ZrOpRow *op)
{
    int m = op->arg, n, first = load_params(m, &n);
    const ZrModuleRow *mr = &zg_modules[m];
    module_queue(op);
    prepare_grads(op);
    const void *const *p = (const void *const *)(P + first);
    float *const *g = Gp + first;
    switch (mr->kind) {
    case ZR_MOD_HEAD: cz_head_backward(p, g); break;
    case ZR_MOD_FINAL_NORM: cz_final_norm_backward(p, g); break;
    case ZR_MOD_BLOCK: cz_block_backward(mr->layer, p, g); break;
    case ZR_MOD_EMBED: cz_embed_backward(g); break;
    }
}

/* GRAD_ADD (stages 0/1, 16-bit): the row's fp32 gradient area added into "grads", one launch. */
static void grad_add(const ZrOpRow *op)
{
    cz_convert(cz_queue(op), "zd_add_f32_to_16", cz_dev(tr_region_at(op->dst, op->dst_off, op->dst_dt)),
               cz_dev(tr_region_at(op->src, op->src_off, op->src_dt)), op->count);
}

/* ---------------------------------------------------------------------- gradient buckets */
/* fp32 gradients into a bucket of ZG_DTYPE (the host's tr_f32_to_w), on the compute stream. */
static void put_w(char *dst, const float *src, int64_t n, int64_t pad)
{
    if (n && ZG_MIXED) cz_convert(CZ.compute, "zd_f32_to_16", dst, src, n);
    else if (n) CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, dst, src, (size_t)n * 4));
    if (pad) CZ_CHECK(zr_gpu_memset(CZ.compute, dst + n * ZG_DTYPE_SIZE, 0, (size_t)pad * ZG_DTYPE_SIZE));
}

static void grad_copy(const ZrOpRow *op)
{
    int bi = tr_bucket_buf(op->arg);
    module_queue(op);                            /* put_w issues on compute, after the backward */
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_buf_free[bi]));
    tr_grad_copy_each(op, cz_dev(T.bucket[bi]), Gp, put_w);
}

/* Where REDUCE k left its sums on the device (a region range, as a row's source), and the
** hand-over WAIT_REDUCE k queued for the host: a copy of its row reading from there. */
static ZrOpRow landed[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1], take[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
static int pend[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];   /* take[k] waits for its D2H */


/* The lowered row (gen/lower.c): an all-reduce in place, or a reduce-scatter into its destination,
** or nothing (one rank). A collective writes device memory only, and gen lowers no reduction into
** host memory (stage 3's direct reduce-scatter is planned only where grad32 is on the device). */
static void reduce(const ZrOpRow *op)
{
    int k = op->arg;
    ZrOpRow *l = &landed[k];
    *l = *op;                                    /* in place: the sums are where the source was */
    l->xfer = ZR_XFER_NONE;
    ZrGpuStream *q = cz_queue(op);
    CZ_CHECK(zr_gpu_record(CZ.ev_compute, CZ.compute));
    CZ_CHECK(zr_gpu_wait(q, CZ.ev_compute));
    if (op->xfer == ZR_XFER_REDUCE_SCATTER && cz_dev_region(op->dst)) {
        CZ_CHECK(zr_gpu_coll(q, ZR_COLL_REDUCE_SCATTER,
                             cz_dev(tr_region_at(op->src, op->src_off, op->src_dt)),
                             cz_dev(tr_region_at(op->dst, op->dst_off, op->dst_dt)), op->count,
                             (ZrDtype)op->src_dt));
        l->src = op->dst;
        l->src_off = op->dst_off;
        l->src_dt = op->dst_dt;
    } else if (op->xfer == ZR_XFER_REDUCE_SCATTER) {
        tr_die("REDUCE %d: the plan reduce-scatters into host memory (region %d), which a collective cannot write",
               k, op->dst);
    } else if (op->xfer == ZR_XFER_ALL_REDUCE) {
        void *p = cz_dev(tr_region_at(op->src, op->src_off, op->src_dt));
        CZ_CHECK(zr_gpu_coll(q, ZR_COLL_ALL_REDUCE, p, p, op->count, (ZrDtype)op->src_dt));
    }
    CZ_CHECK(zr_gpu_record(CZ.ev_reduced[k], q));
}

static size_t dt_bytes(int dt) { return dt == ZR_DT_FP32 ? 4 : 2; }

/* The host's copy of the reduced gradients: wanted where the host's Adam reads it, or --check's
** comparison with the host reference. With Adam on the device (the plan's cost: nothing of the
** gradients crosses PCIe) the reduced buckets stay on the device; so do those the rows hand over
** into the device's grad_acc (ZG_GRAD_ACC_DEV: GRAD_SHIP brings the sums down, under --check too).
** (A device-tier grad32 with Adam on the host, ZeRO 3 with only the parameters offloaded, is the
** host's: it takes the parts into the shadow, which its Adam reads.) */
static int host_takes(void)
{
    return CZ.dev_opt ? CZ.check : !ZG_GRAD_ACC_DEV;
}

int cz_bucket_pending(int k) { return pend[k]; }

/* Host side of a reduced bucket: its D2H copy into the shadow is done; the hand-over into grad32
** (or, after GRAD_SHIP's D2H into grad32, the norm's part). */
void cz_finish_bucket(int k)
{
    if (!pend[k]) return;
    pend[k] = 0;
    cz_host_wait(CZ.ev_d2h[k], "D2H of bucket", k);
    TrSq pre;
    int lanes = cz_norm_pre(k, &pre);
    if (take[k].kind == ZR_OP_GRAD_SHIP) tr_grad_ship(&take[k], 0, lanes ? &pre : NULL);
    else if (take[k].xfer != ZR_XFER_NONE) tr_hand_over_after(&take[k], lanes ? &pre : NULL);
}

/* The hand-overs the device does, with the host's arithmetic, on the d2h stream (after the bucket's
** D2H where there is one): into the device's grad32 that Adam on the device reads (under --check
** the host does the same into the shadow, so both hold the same fp32 gradient shard), or into the
** device accumulator grad_acc (ZG_GRAD_ACC_DEV). */
static void dev_take(const ZrOpRow *h)
{
    if (h->xfer == ZR_XFER_NONE || !(CZ.dev_opt ? ZG_HAS_GRAD32 : ZG_GRAD_ACC_DEV)) return;
    int64_t skip, dst, n = tr_hand_over_range(h, &skip, &dst);
    if (n <= 0) return;
    const char *src = (const char *)cz_dev(tr_region_at(h->src, h->src_off, h->src_dt)) + skip * ZG_DTYPE_SIZE;
    float *d = cz_dev(tr_region_at(h->dst, dst, ZR_DT_FP32));
    if (h->accumulate) cz_convert(cz_queue(h), ZG_MIXED ? "zd_add_16_to_f32" : "zd_add_f32", d, src, n);
    else if (ZG_MIXED) cz_convert(cz_queue(h), "zd_16_to_f32", d, src, n);
    else CZ_CHECK(zr_gpu_copy(cz_queue(h), ZR_GPU_D2D, d, src, (size_t)n * 4));
}

/* The range of a reduced bucket that crosses to the host: only what the host reads of it, the
** part the hand-over takes (this rank's part of the flat range, or stage 3's chunk), or with no
** hand-over (stages 0/1 without grad32: the host's Adam reads "grads" itself) the reduced range's
** part inside this rank's optimizer shard. The plan's cost counts exactly these bytes. */
static char *host_range(const ZrOpRow *h, size_t *bytes)
{
    int64_t skip, dst, n = tr_hand_over_range(h, &skip, &dst);
    *bytes = n > 0 ? (size_t)n * dt_bytes(h->src_dt) : 0;
    return (char *)tr_region_at(h->src, h->src_off, h->src_dt) + (n > 0 ? skip : 0) * (int64_t)dt_bytes(h->src_dt);
}

/* Only what the host reads of what REDUCE left for this rank crosses to the host (host_range),
** and only where the host takes it (host_takes): with Adam on the host into a slot of the pinned
** "grad_land" (gen/memplan.c; the row's hand-over then reads the slot), else (--check's copy with
** Adam on the device) into the shadow at the same offsets. The host's hand-over runs later
** (cz_finish_bucket: before its slot or shadow range is refilled, or in cz_flush), so the host never
** waits for the device inside a micro-step. */
static char *pend_at[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
static size_t pend_bytes[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
static int land_ready, land_bucket[ZG_GRAD_LAND_SLOTS > 0 ? ZG_GRAD_LAND_SLOTS : 1];

/* The row's slot of "grad_land" for bucket k's part of n elements (the hand-over of the bucket
** that landed there before done first), as the row the hand-over reads; -1 when it names none. */
static int land_take(int k, ZrOpRow *h, int64_t n)
{
    int j = h->slot;
    if (!ZG_HAS_GRAD_LAND || j < 0) return -1;
    if (j >= ZG_GRAD_LAND_SLOTS) tr_die("WAIT_REDUCE %d lands in grad_land slot %d of %d", k, j, ZG_GRAD_LAND_SLOTS);
    if (!land_ready) {
        for (int i = 0; i < ZG_GRAD_LAND_SLOTS; i++) land_bucket[i] = -1;
        land_ready = 1;
    }
    if (n > ZG_GRAD_LAND_NUMEL) tr_die("bucket %d hands over %lld elements; grad_land holds %lld", k, (long long)n,
                                       (long long)ZG_GRAD_LAND_NUMEL);
    if (land_bucket[j] >= 0) cz_finish_bucket(land_bucket[j]);
    land_bucket[j] = k;
    int64_t skip, dst;
    tr_hand_over_range(h, &skip, &dst);
    h->src = ZG_RG_GRAD_LAND;
    h->src_off = (int64_t)j * ZG_GRAD_LAND_NUMEL;
    h->dst_off = dst;
    h->flat = -1;
    h->count = n;
    return j;
}

/* ZG_GRAD_LAND_DIRECT (gen/memplan.c: one micro-step into a pinned grad16): the D2H lands in the
** hand-over's destination itself, and the row becomes a hand-over of that range onto itself, which
** only maps -0 to +0 and sums the norm's part (tr_copy_w_sumsq in place: the bits of the copy). */
static char *land_direct(ZrOpRow *h, int64_t n)
{
    int64_t skip, dst;
    tr_hand_over_range(h, &skip, &dst);
    h->src = h->dst;
    h->src_off = dst;
    h->src_dt = h->dst_dt;
    h->dst_off = dst;
    h->flat = -1;
    h->count = n;
    return tr_region_at(h->dst, dst, h->dst_dt);
}

/* Where WAIT_REDUCE k found this rank's reduced sums (the hand-over row before its landing), for
** GRAD_KEEP k, which follows it. */
static ZrOpRow sums_at[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];

static void wait_reduce(const ZrOpRow *op)
{
    int k = op->arg, host_copy = host_takes();
    ZrGpuStream *q = cz_queue(op);
    const ZrOpRow *l = &landed[k];
    take[k] = l->xfer != ZR_XFER_NONE ? *l : *op;
    if (l->xfer == ZR_XFER_NONE) {               /* the row's hand-over, reading where the sums are */
        take[k].src = l->src;
        take[k].src_off = l->src_off;
        take[k].src_dt = l->src_dt;
    }
    size_t bytes = 0;
    char *from = host_range(take[k].xfer != ZR_XFER_NONE ? &take[k] : l, &bytes), *host = from;
    CZ_CHECK(zr_gpu_wait(q, CZ.ev_reduced[k]));
    dev_take(&take[k]);
    sums_at[k] = take[k];
    /* the part in the device optimizer range stays (GRAD_KEEP copies it): its norm lanes cross */
    if (host_copy && take[k].xfer != ZR_XFER_NONE && !ZG_GRAD_ACC_DEV && T.micro == ZG_GRAD_ACCUM - 1 &&
        cz_norm_lanes(k, &take[k], cz_dev(from), CZ_FMT))
        from = host = host_range(&take[k], &bytes);
    int64_t n = host_copy && bytes && take[k].xfer != ZR_XFER_NONE ? (int64_t)(bytes / dt_bytes(take[k].src_dt)) : 0;
    if (n && ZG_GRAD_LAND_DIRECT) {
        host = land_direct(&take[k], n);
    } else if (n && land_take(k, &take[k], n) >= 0) {
        host = tr_region_at(take[k].src, take[k].src_off, take[k].src_dt);
    } else {
        for (int j = 0; host_copy && bytes && j < ZG_N_BUCKETS; j++)   /* a shadow range about to be refilled */
            if (pend[j] && pend_at[j] < host + bytes && host < pend_at[j] + pend_bytes[j]) cz_finish_bucket(j);
    }
    if (host_copy && bytes) CZ_CHECK(zr_gpu_copy(q, ZR_GPU_D2H, host, cz_dev(from), bytes));
    if (host_copy) CZ_CHECK(zr_gpu_record(CZ.ev_d2h[k], q));
    if (zg_buckets[k].buffer >= 0) CZ_CHECK(zr_gpu_record(CZ.ev_buf_free[tr_bucket_buf(k)], q));
    pend[k] = host_copy;
    pend_at[k] = host;
    pend_bytes[k] = bytes;
    cz_spec_issued(k);
    if (ZG_SPECULATIVE && T.micro == ZG_GRAD_ACCUM - 1) cz_spec_pump();
}

/* GRAD_SHIP k: this rank's part of bucket k's sums, device grad_acc -> pinned grad32, on the d2h
** stream after WAIT_REDUCE k's add there; the host sums the norm's part once it landed
** (cz_finish_bucket: before the sub-group's Adam reads it, or in cz_flush). */
static void grad_ship(const ZrOpRow *op)
{
    int k = op->arg;
    ZrGpuStream *q = cz_queue(op);
    take[k] = *op;
    int64_t skip, at, n = tr_hand_over_range(op, &skip, &at);
    /* the part in the device optimizer range stays in grad_acc: its norm lanes cross */
    if (n > 0 && cz_norm_lanes(k, &take[k], cz_dev(tr_region_at(op->src, at, ZR_DT_FP32)), 0))
        n = tr_hand_over_range(&take[k], &skip, &at);
    if (n > 0)
        CZ_CHECK(zr_gpu_copy(q, ZR_GPU_D2H, tr_region_at(op->dst, at, ZR_DT_FP32),
                             cz_dev(tr_region_at(op->src, at, ZR_DT_FP32)), (size_t)n * 4));
    CZ_CHECK(zr_gpu_record(CZ.ev_d2h[k], q));
    pend[k] = 1;
    pend_at[k] = NULL;          /* into grad32, no shadow range that a later D2H could refill */
    pend_bytes[k] = 0;
    cz_spec_issued(k);
}

/* GRAD_KEEP k (part of the optimizer on the device, one micro-step): the part of bucket k's sums
** inside this rank's device optimizer range, copied on the d2h stream after WAIT_REDUCE k's D2H
** read them, into grad_keep, where that Adam reads it after the norm. The bucket buffer is free
** only after this copy: its event is recorded again (no op waits for it in between). */
static void grad_keep(const ZrOpRow *op)
{
    int k = op->arg;
    ZrGpuStream *q = cz_queue(op);
    const ZrOpRow *h = &sums_at[k];
    int64_t skip, at, n = tr_keep_range(h, &skip, &at);
    if (n > 0)
        CZ_CHECK(zr_gpu_copy(q, ZR_GPU_D2D, cz_dev(tr_w_at(T.grad_keep, at)),
                             (const char *)cz_dev(tr_region_at(h->src, h->src_off, h->src_dt)) + skip * ZG_DTYPE_SIZE,
                             (size_t)n * ZG_DTYPE_SIZE));
    if (zg_buckets[k].buffer >= 0) CZ_CHECK(zr_gpu_record(CZ.ev_buf_free[tr_bucket_buf(k)], q));
}

/* End of the step's micro-steps: the host's part of every copy (reduced gradients into grad32,
** losses) is finished, and no copy out of host memory that the optimizer rewrites is pending.
** Every rank also waits for the step's reductions and their device hand-overs (the d2h stream),
** with or without host copies: the step rule's all-reduce follows on the host's communicator, and
** a rank that enters it with its last reductions still queued holds them back from the ranks that
** wait for the device first (the stand-in runs queued work only while its host waits). */
void cz_flush(void)
{
    CZ.phase = CZ_FLUSHING;
    cz_spec_drain();
    CZ_CHECK(zr_gpu_stream_sync(CZ.d2h));
    for (int m = 0; m < ZG_GRAD_ACCUM; m++) {
        if (!CZ.loss_pending[m]) continue;
        CZ.loss_pending[m] = 0;
        CZ_CHECK(zr_gpu_event_sync(CZ.ev_loss[m]));
        float s = 0;
        int count = 0;
        for (int i = 0; i < ZG_MICRO_BATCH * ZG_SEQ_LEN; i++)
            if (CZ.tgt_h[m][i] >= 0) { s += CZ.loss_h[m][i]; count++; }
        float mean = count ? s / (float)count : 0.0f;
        T.loss_sum += mean * (float)count;
    }
    CZ_CHECK(zr_gpu_stream_sync(CZ.h2d));
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
    CZ.phase = CZ_ISSUING;
}

/* The device-tier regions that host code writes (init, checkpoint, the host optimizer) or reads
** (checkpoint, export): the working copy, the device's part of a CPU optimizer's state (*_dev), and
** the whole optimizer state when Adam runs on the device. */
static int state_regions(void **regs, int64_t *bytes)
{
    static const int st[9] = {ZG_RG_PARAMS16, ZG_RG_PERSIST, ZG_RG_PARAMS_SHARD, ZG_RG_MASTER_DEV, ZG_RG_ADAM_M_DEV,
                              ZG_RG_ADAM_V_DEV, ZG_RG_MASTER, ZG_RG_ADAM_M, ZG_RG_ADAM_V};
    int n = 0;
    for (int i = 0; i < (CZ.dev_opt ? 9 : 6); i++) {   /* the *_dev regions exist only on the device */
        int r = st[i];
        if (r < 0 || zg_regions[r].tier != ZR_TIER_DEVICE) continue;
        regs[n] = T.rg[r];
        bytes[n++] = zg_regions[r].bytes;
    }
    return n;
}

/* Device state -> shadow, before host code reads it (a checkpoint or an export). */
void cz_pull_state(void)
{
    void *regs[9];
    int64_t bytes[9];
    int n = state_regions(regs, bytes);
    CZ_CHECK(zr_gpu_record(CZ.ev_compute, CZ.compute));
    CZ_CHECK(zr_gpu_wait(CZ.d2h, CZ.ev_compute));
    CZ_CHECK(zr_gpu_record(CZ.ev_opt2, CZ.nccl));
    CZ_CHECK(zr_gpu_wait(CZ.d2h, CZ.ev_opt2));
    for (int i = 0; i < n; i++) CZ_CHECK(zr_gpu_copy(CZ.d2h, ZR_GPU_D2H, regs[i], cz_dev(regs[i]), (size_t)bytes[i]));
    CZ_CHECK(zr_gpu_stream_sync(CZ.d2h));
}

/* The working copy (written by the host: init, checkpoint, optimizer) to the device; with Adam on
** the device, its state too (only init and checkpoint loads come here then). */
void cz_push_params(void)
{
    CZ_CHECK(zr_gpu_record(CZ.ev_compute, CZ.compute));
    CZ_CHECK(zr_gpu_wait(CZ.h2d, CZ.ev_compute));
    void *regs[9];
    int64_t bytes[9];
    int n = state_regions(regs, bytes);
    for (int i = 0; i < n; i++) CZ_CHECK(zr_gpu_copy(CZ.h2d, ZR_GPU_H2D, cz_dev(regs[i]), regs[i], (size_t)bytes[i]));
    CZ_CHECK(zr_gpu_record(CZ.ev_h2d, CZ.h2d));
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_h2d));
    CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_h2d));
    /* the host rewrites these regions only in the next optimizer step, which waits ev_h2d first
    ** (cz_flush also drains h2d): the next step's work is enqueued while the copy runs */
}

/* ---------------------------------------------------------------------- the op table */
/* Start of a step: the host zeroed its accumulators (tr_grads_zero); the device's too (stages 0/1:
** "grads"; with Adam on the device, grad32). */
static void grads_zero(void)
{
    if (ZG_HAS_GRADS) CZ_CHECK(zr_gpu_memset(CZ.compute, cz_dev(T.grads), 0, (size_t)ZG_PADDED_NUMEL * ZG_DTYPE_SIZE));
    if (ZG_HAS_GRAD32 && CZ.dev_opt)
        CZ_CHECK(zr_gpu_memset(CZ.compute, cz_dev(T.grad32), 0, (size_t)T.opt_numel * 4));
    if (ZG_HAS_GRAD_ACC) CZ_CHECK(zr_gpu_memset(CZ.compute, cz_dev(T.grad_acc), 0, (size_t)T.opt_numel * 4));
}

const TrOps cz_ops = {
    .name = "cuda",
    .swap_in = param_swap_in, .gather = gather, .wait_gather = wait_gather, .release = release,
    .forward = forward, .backward = backward,
    .grad_copy = grad_copy, .grad_add = grad_add, .reduce = reduce, .wait_reduce = wait_reduce, .optimizer = cz_spec_optimizer,
    .grad_ship = grad_ship, .grad_keep = grad_keep,
    .batch = cz_upload_batch, .flush = cz_flush, .grads_zero = grads_zero,
};
