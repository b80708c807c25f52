/*
** cuda_exec.c — the CUDA trainer's micro-step executor: the same op lists (zg_micro_ops,
** zg_last_micro_ops) as the host's train_exec.c, each op turned into work on one of four streams
** with an event for every dependency the op list implies. The host never waits for the device
** inside a micro-step except where a host buffer it is about to reuse is still being copied.
** Its entry points, cz_grads_zero / cz_exec_micro / cz_eval_batch, are the CUDA backend table's
** (cuda_main.c); train_exec.c's tr_* are linked beside them as --check's host reference.
**
**   op                stream   waits (event)                              records
**   PARAM_SWAP_IN s   h2d      the last gather out of param_buf s         ev_pswap[s]
**                    (NVMe: the host reads into pinned param_buf s once its last H2D is done)
**   GATHER g s        nccl     ev_pswap[s] (offload), ev_release[s]       ev_gather[s]
**                    (NVMe: h2d first copies each tensor's own part into the slot: in-place gather)
**   WAIT_GATHER g s   compute  ev_gather[s]
**   RELEASE g s       compute                                             ev_release[s]
**   FORWARD/BACKWARD  compute
**   GRAD_COPY b       compute  ev_buf_free[bucket buffer]
**   REDUCE b          nccl     ev_compute (recorded here on compute)      ev_reduced[b]
**   WAIT_REDUCE b     d2h      ev_reduced[b]; D2H of the reduced range    ev_d2h[b], ev_buf_free
**                              into the host shadow; the host adds it into grad32 later (cz_flush
**                              or before the shadow buffer is reused)
** REDUCE runs the plan's lowered row: stage 3 reduce-scatters the rank-major bucket into the
** device "bucket_recv_<b>" (or grad32 on the device), and only this rank's chunk crosses to the
** host. Only where the row's destination is host memory (a direct reduce-scatter into an offloaded
** grad32), which NCCL cannot write, the bucket is all-reduced in place and chunk `rank` kept.
** 16-bit plans (bf16, fp16) convert exactly where the host executor does, with convert.cu's kernels
** (zr_half.h's bits): the module gradient area is the fp32 second half of "stage32", GRAD_COPY
** rounds it into the 16-bit bucket, stages 0/1 add it into the 16-bit "grads" after each BACKWARD,
** and reduced 16-bit gradients are widened into grad32 on the host with zr_half.h. With fp32
** activations (fp16 plans, ZK_IO 0) the working copy is widened into the device "stage32" before a
** module runs; with bf16 activations (bf16 plans, ZK_IO 1) the model reads the working copy itself.
*/
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"
#include "zr_half.h"
#include "../kernels/zk_shapes.h"   /* ZK_IO: 16-bit activations read the working copy itself */

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

/* ---------------------------------------------------------------------- gathers */
static int gslot[ZG_N_GATHERS > 0 ? ZG_N_GATHERS : 1];
static int gslot_ready;

static void slots_init(void)
{
    if (gslot_ready) return;
    for (int i = 0; i < ZG_N_GATHERS; i++) gslot[i] = -1;
    gslot_ready = 1;
}


/* Device address of tensor t's working copy (ZG_DTYPE) as module m sees it. */
static const void *param_dev(int m, int t)
{
#if ZG_STAGE == 3
    if (zg_tensors[t].persistent) return cz_dev(tr_w_at(T.persist, zg_tensors[t].persist_offset));
    int g = zg_tensors[t].gather;
    slots_init();
    if (g < 0 || gslot[g] < 0)
        tr_die("module %s runs before its parameters (group %d) were gathered", zg_modules[m].name, g);
    return cz_dev(tr_w_at(T.slot[gslot[g]], zg_tensors[t].gather_offset));
#else
    (void)m;
    return cz_dev(tr_w_at(T.params16, zg_tensors[t].flat_offset));
#endif
}

/* Parameter offload. param_buf s on the device (CPU offload): PARAM_SWAP_IN copies the span H2D
** and GATHER sends from it. param_buf s in pinned memory (NVMe offload): PARAM_SWAP_IN reads the
** span from NVMe into it, and GATHER copies each tensor's own part H2D into its place in the slot
** and all-gathers in place (send = recv + rank * part), so no device staging is needed. */
static void param_swap_in(int g, int s)
{
    int64_t off = zg_gathers[g].shard_offset, n = zg_gathers[g].shard_numel;
    if (!T.param_buf[s]) tr_die("plan lacks param_buf_%d for PARAM_SWAP_IN", s);
    if (!cz_is_dev(T.param_buf[s])) {
        if (T.params_shard) tr_die("plan puts param_buf_%d in host memory with the shard in memory", s);
        CZ_CHECK(zr_gpu_event_sync(CZ.ev_pswap[s]));   /* its last H2D out of the staging is done */
        ZR_CHECK(zr_nvme_read_async(T.nvme_param, T.param_buf[s], n * ZG_DTYPE_SIZE,
                                    T.params_shard_nvme + off * ZG_DTYPE_SIZE, &T.pswap_req[s]));
        return;
    }
    if (!T.params_shard) tr_die("plan puts param_buf_%d on the device with the shard on NVMe", s);
    CZ_CHECK(zr_gpu_wait(CZ.h2d, CZ.ev_gather[s]));      /* the last gather out of it is done */
    CZ_CHECK(zr_gpu_copy(CZ.h2d, cz_is_dev(T.params_shard) ? ZR_GPU_D2D : ZR_GPU_H2D,
                         cz_dev(T.param_buf[s]),
                         cz_is_dev(T.params_shard) ? cz_dev(tr_w_at(T.params_shard, off))
                                                   : tr_w_at(T.params_shard, off),
                         (size_t)n * ZG_DTYPE_SIZE));
    CZ_CHECK(zr_gpu_record(CZ.ev_pswap[s], CZ.h2d));
}

static void gather(int g, int s)
{
    const ZrGatherRow *gr = &zg_gathers[g];
    int staged = T.param_buf[s] && !cz_is_dev(T.param_buf[s]);
    CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_release[s]));     /* compute is done with the slot */
    if (staged) {
        if (T.pswap_req[s].state == 1 && zr_nvme_wait(T.nvme_param, &T.pswap_req[s]) < 0)
            tr_die("%s", zr_nvme_strerror(T.nvme_param));
        CZ_CHECK(zr_gpu_wait(CZ.h2d, CZ.ev_release[s]));
        for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
            if (zg_tensors[t].persistent) continue;
            int64_t part = zg_tensors[t].part_numel;
            CZ_CHECK(zr_gpu_copy(CZ.h2d, ZR_GPU_H2D,
                                 cz_dev(tr_w_at(T.slot[s], zg_tensors[t].gather_offset + T.rank * part)),
                                 tr_w_at(T.param_buf[s], zg_tensors[t].shard_offset - gr->shard_offset),
                                 (size_t)part * ZG_DTYPE_SIZE));
        }
        CZ_CHECK(zr_gpu_record(CZ.ev_pswap[s], CZ.h2d));
    }
    if (T.param_buf[s]) CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_pswap[s]));
    for (int t = gr->first_tensor; t < gr->first_tensor + gr->n_tensors; t++) {
        if (zg_tensors[t].persistent) continue;
        int64_t part = zg_tensors[t].part_numel;
        char *recv = cz_dev(tr_w_at(T.slot[s], zg_tensors[t].gather_offset));
        const void *send;
        if (staged) send = recv + (size_t)T.rank * part * ZG_DTYPE_SIZE;
        else if (T.param_buf[s])
            send = cz_dev(tr_w_at(T.param_buf[s], zg_tensors[t].shard_offset - gr->shard_offset));
        else send = cz_dev(tr_w_at(T.params_shard, zg_tensors[t].shard_offset));
        CZ_CHECK(zr_gpu_coll(CZ.nccl, ZR_COLL_ALL_GATHER, send, recv, part, ZG_DTYPE));
    }
    CZ_CHECK(zr_gpu_record(CZ.ev_gather[s], CZ.nccl));
}

static void wait_gather(int g, int s)
{
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_gather[s]));
    slots_init();
    gslot[g] = s;
}

static void release(int g, int s)
{
    slots_init();
    CZ_CHECK(zr_gpu_record(CZ.ev_release[s], CZ.compute));
    if (gslot[g] == s) gslot[g] = -1;
}

/* ---------------------------------------------------------------------- modules */
static const void *P[ZG_N_TENSORS];
static float *Gp[ZG_N_TENSORS];         /* device gradient views of the module being run */
static int last_bwd_module = -1;

static void load_params(int m)
{
    int first, n;
    tr_module_tensors(m, &first, &n);
#if ZG_MIXED && !ZK_IO
    float *stage = cz_dev(T.stage32);
    int64_t base = zg_tensors[first].flat_offset;
    for (int t = first; t < first + n; t++) {
        float *dst = stage + (zg_tensors[t].flat_offset - base);
        cz_convert(CZ.compute, "zd_16_to_f32", dst, param_dev(m, t), zg_tensors[t].numel);
        P[t] = dst;
    }
#else
    for (int t = first; t < first + n; t++) P[t] = param_dev(m, t);
#endif
}

/* The module gradient area G of gen/zg_plan.h's GRADIENT FLOW, on the device. */
static void prepare_grads(int m)
{
    int first, n;
    tr_module_tensors(m, &first, &n);
    const ZrModuleRow *mr = &zg_modules[m];
    int64_t base = zg_tensors[first].flat_offset;
    int64_t use = zg_tensors[first + n - 1].flat_offset + zg_tensors[first + n - 1].numel - base;
#if ZG_STAGE <= 1 && !ZG_MIXED
    (void)use; (void)mr;
    for (int t = first; t < first + n; t++) Gp[t] = (float *)cz_dev(T.grads) + zg_tensors[t].flat_offset;
#else
    int head = mr->kind == ZR_MOD_HEAD && mr->n_tensors == 0;
    float *area = head && T.tied_grad ? (float *)cz_dev(T.tied_grad)
                : ZG_MIXED ? (float *)cz_dev(T.stage32) + T.max_use_numel : (float *)cz_dev(T.grad_stage);
    CZ_CHECK(zr_gpu_memset(CZ.compute, area, 0, (size_t)use * 4));
    for (int t = first; t < first + n; t++) Gp[t] = area + (zg_tensors[t].flat_offset - base);
    if (mr->kind == ZR_MOD_EMBED && T.tied_grad)
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, Gp[ZG_T_WTE_WEIGHT], cz_dev(T.tied_grad),
                             (size_t)zg_tensors[ZG_T_WTE_WEIGHT].numel * 4));
#endif
}

static int cur_micro;

static void forward(int m)
{
    const ZrModuleRow *mr = &zg_modules[m];
    load_params(m);
    switch (mr->kind) {
    case ZR_MOD_EMBED: cz_embed_forward(cur_micro, P[ZG_T_WTE_WEIGHT], P[ZG_T_WPE_WEIGHT]); break;
    case ZR_MOD_BLOCK: cz_block_forward(mr->layer, P + mr->first_tensor); break;
    case ZR_MOD_FINAL_NORM: cz_final_norm_forward(P[ZG_T_LN_F_WEIGHT], P[ZG_T_LN_F_BIAS]); break;
    case ZR_MOD_HEAD:
        cz_head_forward(cur_micro, P[ZG_T_WTE_WEIGHT],
                        (float)(T.loss_scale / (double)ZG_TOKENS_PER_STEP), !T.forward_only);
        break;
    }
}

static void backward(int m)
{
    const ZrModuleRow *mr = &zg_modules[m];
    load_params(m);
    prepare_grads(m);
    switch (mr->kind) {
    case ZR_MOD_HEAD: cz_head_backward(P[ZG_T_WTE_WEIGHT], Gp[ZG_T_WTE_WEIGHT]); break;
    case ZR_MOD_FINAL_NORM:
        cz_final_norm_backward(P[ZG_T_LN_F_WEIGHT], Gp[ZG_T_LN_F_WEIGHT], Gp[ZG_T_LN_F_BIAS]);
        break;
    case ZR_MOD_BLOCK: cz_block_backward(mr->layer, P + mr->first_tensor, Gp + mr->first_tensor); break;
    case ZR_MOD_EMBED: cz_embed_backward(Gp[ZG_T_WTE_WEIGHT], Gp[ZG_T_WPE_WEIGHT]); break;
    }
#if ZG_STAGE <= 1 && ZG_MIXED
    /* the host's finish_grads: G into the 16-bit accumulation buffer "grads" */
    int first, n;
    tr_module_tensors(m, &first, &n);
    for (int t = first; t < first + n; t++)
        cz_convert(CZ.compute, "zd_add_f32_to_16", cz_dev(tr_w_at(T.grads, zg_tensors[t].flat_offset)), Gp[t],
                   zg_tensors[t].numel);
#endif
    last_bwd_module = m;
}

/* ---------------------------------------------------------------------- gradient buckets */
static int bucket_bufi(int k)
{
    int b = zg_buckets[k].buffer;
    if (b < 0 || b >= T.n_bucket_bufs) tr_die("bucket %d names buffer %d, which the plan lacks", k, b);
    return b;
}

/* fp32 gradients into a bucket of ZG_DTYPE (the host's tr_f32_to_w), on the compute stream. */
static void copy_w(void *dst, const float *src, int64_t n)
{
#if ZG_MIXED
    cz_convert(CZ.compute, "zd_f32_to_16", dst, src, n);
#else
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, dst, src, (size_t)n * 4));
#endif
}

static void grad_copy(int k)
{
    const ZrBucketRow *br = &zg_buckets[k];
    int bi = bucket_bufi(k);
    char *buf = cz_dev(T.bucket[bi]);
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_buf_free[bi]));
    for (int t = br->first_tensor; t < br->first_tensor + br->n_tensors; t++) {
        if (zg_tensors[t].module != last_bwd_module) continue;
        const float *g = Gp[t];
        int64_t numel = zg_tensors[t].numel;
#if ZG_STAGE == 3
        int64_t pt = zg_tensors[t].part_numel, chunk = br->padded_numel / T.ws;
        for (int r = 0; r < T.ws; r++) {
            char *dst = buf + (r * chunk + zg_tensors[t].bucket_offset) * ZG_DTYPE_SIZE;
            int64_t lo = r * pt, n = numel - lo < pt ? numel - lo : pt;
            if (n < 0) n = 0;
            if (n) copy_w(dst, g + lo, n);
            if (pt > n)
                CZ_CHECK(zr_gpu_memset(CZ.compute, dst + n * ZG_DTYPE_SIZE, 0, (size_t)(pt - n) * ZG_DTYPE_SIZE));
        }
#else
        copy_w(buf + zg_tensors[t].bucket_offset * ZG_DTYPE_SIZE, g, numel);
#endif
    }
}

/* How REDUCE k ran, for its WAIT_REDUCE and the host's hand-over (stage 3 follows the plan's row:
** reduce-scatter wherever the row's destination is device memory). */
enum { RED_IN_PLACE, RED_RECV, RED_DIRECT };
static int red_mode[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];

static int dev_region(int r)
{
    return r >= 0 && zg_regions[r].tier == ZR_TIER_DEVICE;
}

/* The lowered row (gen/lower.c): stages 0-2 all-reduce "grads" or a bucket in place; stage 3
** reduce-scatters the rank-major bucket into "bucket_recv_<b>" (or, one fp32 micro-step, straight
** into grad32). NCCL cannot write host memory, so a direct reduce-scatter whose grad32 the plan puts
** in host memory (optimizer offload) all-reduces the bucket in place instead and keeps chunk
** `rank` (the same sums; libzrt and NCCL forbid an in-place reduce-scatter). */
static void reduce(const ZrOpRow *op)
{
    int k = op->arg;
    CZ_CHECK(zr_gpu_record(CZ.ev_compute, CZ.compute));
    CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_compute));
    red_mode[k] = RED_IN_PLACE;
    if (op->xfer == ZR_XFER_REDUCE_SCATTER && dev_region(op->dst)) {
        red_mode[k] = strcmp(zg_regions[op->dst].name, "grad32") == 0 ? RED_DIRECT : RED_RECV;
        CZ_CHECK(zr_gpu_coll(CZ.nccl, ZR_COLL_REDUCE_SCATTER,
                             cz_dev(tr_region_at(op->src, op->src_off, op->src_dt)),
                             cz_dev(tr_region_at(op->dst, op->dst_off, op->dst_dt)), op->count,
                             (ZrDtype)op->src_dt));
    } else if (op->xfer == ZR_XFER_REDUCE_SCATTER) {
        void *p = cz_dev(tr_region_at(op->src, op->src_off, op->src_dt));
        CZ_CHECK(zr_gpu_coll(CZ.nccl, ZR_COLL_ALL_REDUCE, p, p, op->count * T.ws, (ZrDtype)op->src_dt));
    } else if (op->xfer == ZR_XFER_ALL_REDUCE) {
        void *p = cz_dev(tr_region_at(op->src, op->src_off, op->src_dt));
        CZ_CHECK(zr_gpu_coll(CZ.nccl, ZR_COLL_ALL_REDUCE, p, p, op->count, (ZrDtype)op->src_dt));
    }
    CZ_CHECK(zr_gpu_record(CZ.ev_reduced[k], CZ.nccl));
}

/* Host side of a reduced bucket: its D2H copy into the shadow is done; add it into grad32. */
static int pend[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];



static void finish_bucket(int k)
{
    if (!pend[k]) return;
    pend[k] = 0;
    CZ_CHECK(zr_gpu_event_sync(CZ.ev_d2h[k]));
    const ZrBucketRow *br = &zg_buckets[k];
#if ZG_STAGE <= 1
    if (T.grad32) tr_take_flat_part(tr_w_at(T.grads, br->flat_offset), br->flat_offset,
                                 br->flat_offset + br->numel, 0);
#elif ZG_STAGE == 2
    tr_take_flat_part(T.bucket[bucket_bufi(k)], br->flat_offset, br->flat_offset + br->numel, 1);
#else
    int64_t chunk = br->padded_numel / T.ws;
    if (red_mode[k] == RED_DIRECT) return;       /* the D2H wrote grad32 itself */
    const char *src = red_mode[k] == RED_RECV ? (const char *)T.bucket_recv[bucket_bufi(k)]
                    : (const char *)T.bucket[bucket_bufi(k)] + (size_t)T.rank * chunk * ZG_DTYPE_SIZE;
    tr_grad_take(zg_tensors[br->first_tensor].shard_offset, src, chunk, 1);
#endif
}

/* The optimizer on the device reads the device's grad32, which follows the host's adds
** (finish_bucket) with the same arithmetic, on the d2h stream right after the bucket's D2H: so the
** device and the host hold the same fp32 gradient shard, and the host computes the norm and the
** fp16 overflow decision from its copy exactly as the host trainer does. */
static void dev_take(int k)
{
    if (!CZ.dev_opt || !T.grad32) return;
    const ZrBucketRow *br = &zg_buckets[k];
    float *g32 = cz_dev(T.grad32);
#if ZG_STAGE <= 2
    int64_t lo = br->flat_offset, hi = lo + br->numel, slo = T.opt_flat0, shi = slo + T.opt_numel;
    int64_t a = lo > slo ? lo : slo, b = hi < shi ? hi : shi;
    if (b <= a) return;
#if ZG_STAGE <= 1
    const char *src = cz_dev(tr_w_at(T.grads, a));
    if (ZG_MIXED) cz_convert(CZ.d2h, "zd_16_to_f32", g32 + (a - slo), src, b - a);
    else CZ_CHECK(zr_gpu_copy(CZ.d2h, ZR_GPU_D2D, g32 + (a - slo), src, (size_t)(b - a) * 4));
#else
    const char *src = (const char *)cz_dev(T.bucket[bucket_bufi(k)]) + (a - lo) * ZG_DTYPE_SIZE;
    cz_convert(CZ.d2h, ZG_MIXED ? "zd_add_16_to_f32" : "zd_add_f32", g32 + (a - slo), src, b - a);
#endif
#else
    int64_t chunk = br->padded_numel / T.ws;
    if (red_mode[k] == RED_DIRECT) return;       /* the reduce-scatter wrote grad32 itself */
    const char *src = red_mode[k] == RED_RECV ? (const char *)cz_dev(T.bucket_recv[bucket_bufi(k)])
                    : (const char *)cz_dev(T.bucket[bucket_bufi(k)]) + (size_t)T.rank * chunk * ZG_DTYPE_SIZE;
    cz_convert(CZ.d2h, ZG_MIXED ? "zd_add_16_to_f32" : "zd_add_f32",
               g32 + zg_tensors[br->first_tensor].shard_offset, src, chunk);
#endif
}

static void wait_reduce(const ZrOpRow *op)
{
    int k = op->arg;
    const ZrBucketRow *br = &zg_buckets[k];
    char *host;
    const char *dev;
    size_t bytes;
#if ZG_STAGE <= 1
    host = tr_w_at(T.grads, br->flat_offset);
    bytes = (size_t)br->numel * ZG_DTYPE_SIZE;
#else
    int bi = bucket_bufi(k);
    for (int j = 0; j < ZG_N_BUCKETS; j++)       /* the shadow buffer is about to be refilled */
        if (pend[j] && bucket_bufi(j) == bi) finish_bucket(j);
#if ZG_STAGE == 2
    host = T.bucket[bi];
    bytes = (size_t)br->numel * ZG_DTYPE_SIZE;
#else
    /* only this rank's reduced chunk crosses to the host */
    int64_t chunk = br->padded_numel / T.ws;
    if (red_mode[k] == RED_DIRECT) {
        host = (char *)(T.grad32 + zg_tensors[br->first_tensor].shard_offset);
        bytes = (size_t)chunk * 4;
    } else {
        host = red_mode[k] == RED_RECV ? (char *)T.bucket_recv[bi]
                                       : (char *)T.bucket[bi] + (size_t)T.rank * chunk * ZG_DTYPE_SIZE;
        bytes = (size_t)chunk * ZG_DTYPE_SIZE;
    }
#endif
#endif
    dev = cz_dev(host);
    CZ_CHECK(zr_gpu_wait(CZ.d2h, CZ.ev_reduced[k]));
    CZ_CHECK(zr_gpu_copy(CZ.d2h, ZR_GPU_D2H, host, dev, bytes));
    dev_take(k);
    CZ_CHECK(zr_gpu_record(CZ.ev_d2h[k], CZ.d2h));
#if ZG_STAGE >= 2
    CZ_CHECK(zr_gpu_record(CZ.ev_buf_free[bi], CZ.d2h));
#endif
    pend[k] = 1;
}

/* End of the step's micro-steps: the host's part of every copy (reduced gradients into grad32,
** losses) is finished, and no copy out of host memory that the optimizer rewrites is pending. */
void cz_flush(void)
{
    for (int k = 0; k < ZG_N_BUCKETS; k++) finish_bucket(k);
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
}

/* The device-tier regions that host code writes (init, checkpoint, the host optimizer) or reads
** (checkpoint, export): the working copy, plus the optimizer state when Adam runs on the device. */
static int state_regions(void **regs, int64_t *bytes)
{
    void *all[6] = {T.params16, T.persist, T.params_shard, T.master, T.adam_m, T.adam_v};
    const char *names[6] = {"params16", "persist", "params_shard", "master", "adam_m", "adam_v"};
    int n = 0;
    for (int i = 0; i < (CZ.dev_opt ? 6 : 3); i++) {
        if (!all[i] || !cz_is_dev(all[i])) continue;
        int64_t b = 0;
        for (int r = 0; r < ZG_N_REGIONS; r++)
            if (zg_regions[r].name && strcmp(zg_regions[r].name, names[i]) == 0) b = zg_regions[r].bytes;
        regs[n] = all[i];
        bytes[n++] = b;
    }
    return n;
}

/* Device state -> shadow, before host code reads it (a checkpoint or an export). */
void cz_pull_state(void)
{
    void *regs[6];
    int64_t bytes[6];
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
    void *regs[6];
    int64_t bytes[6];
    int n = state_regions(regs, bytes);
    for (int i = 0; i < n; i++) CZ_CHECK(zr_gpu_copy(CZ.h2d, ZR_GPU_H2D, cz_dev(regs[i]), regs[i], (size_t)bytes[i]));
    CZ_CHECK(zr_gpu_record(CZ.ev_h2d, CZ.h2d));
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_h2d));
    CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_h2d));
    /* the host rewrites these regions only in the next optimizer step, which waits ev_h2d first
    ** (cz_flush also drains h2d): the next step's work is enqueued while the copy runs */
}

/* ---------------------------------------------------------------------- the executor */
static void run_op(const ZrOpRow *op)
{
    int a = op->arg;
    switch (op->kind) {
    case ZR_OP_PARAM_SWAP_IN: param_swap_in(a, op->slot); break;
    case ZR_OP_GATHER: gather(a, op->slot); break;
    case ZR_OP_WAIT_GATHER: wait_gather(a, op->slot); break;
    case ZR_OP_RELEASE: release(a, op->slot); break;
    case ZR_OP_FORWARD: forward(a); break;
    case ZR_OP_BACKWARD: if (!T.forward_only) backward(a); break;
    case ZR_OP_REDUCE: if (!T.forward_only) reduce(op); break;
    case ZR_OP_WAIT_REDUCE: if (!T.forward_only) wait_reduce(op); break;
    case ZR_OP_GRAD_COPY: if (!T.forward_only) grad_copy(a); break;
    default: tr_die("op kind %d in a micro-step list", op->kind);
    }
}

static void load_batch(const ZrData *d, int64_t step, int micro)
{
    ZR_CHECK(zr_data_fill_micro(d, step, ZG_SEQ_LEN, ZG_MICRO_BATCH, ZG_GRAD_ACCUM, T.ws, T.rank,
                                micro, T.inputs, T.targets));
    cz_upload_batch(micro);
}

void cz_exec_micro(int micro, int last)
{
    cur_micro = micro;
    load_batch(&T.data, T.step, micro);
    const ZrOpRow *ops = last ? zg_last_micro_ops : zg_micro_ops;
    int n = last ? ZG_N_LAST_MICRO_OPS : ZG_N_MICRO_OPS;
    for (int i = 0; i < n; i++) run_op(&ops[i]);
    if (last) cz_flush();
}

float cz_eval_batch(const ZrData *d, int64_t step)
{
    float saved = T.loss_sum, sum;
    T.loss_sum = 0;
    T.forward_only = 1;
    for (int micro = 0; micro < ZG_GRAD_ACCUM; micro++) {
        cur_micro = micro;
        load_batch(d, step, micro);
        for (int i = 0; i < ZG_N_LAST_MICRO_OPS; i++) run_op(&zg_last_micro_ops[i]);
    }
    cz_flush();
    T.forward_only = 0;
    ZR_CHECK(zr_all_reduce(T.comm, &T.loss_sum, &sum, 1, ZR_DT_FP32, NULL));
    T.loss_sum = saved;
    return sum / (float)ZG_TOKENS_PER_STEP;
}

/* Start of a step: the gradient accumulators are zero on the host and (stages 0/1) the device. */
void cz_grads_zero(void)
{
    if (T.grads) {
        memset(T.grads, 0, (size_t)ZG_PADDED_NUMEL * ZG_DTYPE_SIZE);
        CZ_CHECK(zr_gpu_memset(CZ.compute, cz_dev(T.grads), 0, (size_t)ZG_PADDED_NUMEL * ZG_DTYPE_SIZE));
    }
    if (T.grad32) memset(T.grad32, 0, (size_t)T.opt_numel * 4);
    tr_grad_window_reset();
    if (T.grad32 && CZ.dev_opt)
        CZ_CHECK(zr_gpu_memset(CZ.compute, cz_dev(T.grad32), 0, (size_t)T.opt_numel * 4));
}
