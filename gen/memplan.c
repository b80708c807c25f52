/*
** memplan.c — the memory plan: every buffer of a rank as a named region at a fixed byte offset in
** its tier's single arena (device, pinned host, pageable host) or swap file (nvme), so the trainer
** allocates once per tier and the plan's figures are what the run uses, to the byte. Also the
** activation formula (shared with the host kernels) and the per-step cost (bytes per link, FLOPs).
** Region list and meaning: zg_plan.h (ZgRegion); docs/PLAN.md. Also the device headroom: what a
** CUDA rank holds on its GPU beside the arena, which the fit check keeps free.
*/
#include <string.h>
#include "zg.h"
#include "zg_cuda_dec.h"                              /* train-cuda's activation layout */
#include "../templates/cuda/kernels/zk_tokbucket.h"   /* the batch's token grouping, sent up with it */

#define ARENA_ALIGN 64

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* The arch's activation layout (ZgArch: acts_fixed, acts_layer, scratch) for m's shape. An unknown
** arch cannot reach here (zg_model_build refuses it first); gpt2's layout stands in for one. */
static const ZgArch *layout_arch(const ZgModel *m)
{
    const ZgArch *a = zg_arch_find(m->arch);
    return a ? a : zg_arch_at(0);
}

static int64_t terms(const ZgModel *m, int64_t B, const ZgActsTerms *t)
{
    int64_t T = m->seq_len, BT = B * T, hs = m->n_heads > 0 ? m->d_model / m->n_heads : 0;
    int64_t kv = m->n_kv_heads > 0 ? m->n_kv_heads * hs : m->d_model;
    return t->btc * BT * m->d_model + t->bt * BT + t->btkv * BT * kv + t->btf * BT * m->d_ff
         + t->btv * BT * m->vocab_size + t->att * B * m->n_heads * T * T + t->rope * T * hs;
}

int64_t zg_acts_bytes(const ZgModel *m, int64_t micro_batch)
{
    const ZgArch *a = layout_arch(m);
    int64_t floats = terms(m, micro_batch, &a->acts_fixed) + m->n_layers * terms(m, micro_batch, &a->acts_layer);
    return floats * 4;
}

/* Checkpointed: one block's area plus every block's output (the kept residual stream). */
int64_t zg_acts_ckpt_bytes(const ZgModel *m, int64_t micro_batch)
{
    const ZgArch *a = layout_arch(m);
    int64_t floats = terms(m, micro_batch, &a->acts_fixed) + terms(m, micro_batch, &a->acts_layer)
                   + m->n_layers * micro_batch * m->seq_len * m->d_model;
    return floats * 4;
}

int64_t zg_scratch_bytes(const ZgModel *m, int64_t micro_batch)
{
    return terms(m, micro_batch, &layout_arch(m)->scratch) * 4;
}

typedef struct Layout {
    ZgPlan *p;
    int cap;
    int64_t cursor[ZG_NTIERS];
    int file;                   /* swap file of the NVMe regions placed next */
    int64_t nvme_cursor[2];     /* per swap file */
} Layout;

/* A region's name is one of runtime/zr_enums.h's ZR_REGION_LIST, or a family prefix of
** ZR_REGION_FAMILY_LIST and a number: the trainers' ZG_HAS_* constants are made from those lists. */
static bool region_name_listed(const char *name)
{
    static const char *const names[] = {ZR_REGION_LIST(ZR_ENUM_NAME)};
    static const char *const families[] = {ZR_REGION_FAMILY_LIST(ZR_ENUM_NAME)};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        size_t n = strlen(families[i]);
        const char *d = name + n;
        if (strncmp(name, families[i], n) || !*d) continue;
        while (*d >= '0' && *d <= '9') d++;
        if (!*d) return true;
    }
    return false;
}

static void region(Layout *lo, const char *name, ZgMemCat cat, ZgTier tier, int64_t bytes, bool io)
{
    ZgPlan *p = lo->p;
    if (!region_name_listed(name)) zg_unreachable();     /* a new region wants its name listed */
    ZgMemPlan *mp = &p->mem;
    if (bytes <= 0) return;
    int64_t align = io || tier == ZG_TIER_NVME ? p->nvme_align : ARENA_ALIGN;
    if (tier == ZG_TIER_NVME) bytes = round_up(bytes, p->nvme_align);
    if (mp->n_regions == lo->cap) {
        lo->cap = lo->cap ? 2 * lo->cap : 32;
        mp->regions = zg_xrealloc(mp->regions, (size_t)lo->cap * sizeof *mp->regions);
    }
    int file = tier == ZG_TIER_NVME ? lo->file : 0;
    int64_t *cur = tier == ZG_TIER_NVME ? &lo->nvme_cursor[file] : &lo->cursor[tier];
    int64_t off = round_up(*cur, align);
    mp->regions[mp->n_regions++] = (ZgRegion){name, cat, tier, off, bytes, file};
    *cur = off + bytes;
    mp->cat_bytes[tier][cat] += bytes;
}

static ZgTier offload_tier(const ZgOffloadCfg *o)
{
    switch (o->device) {
    case ZG_OFFLOAD_NONE: return ZG_TIER_DEVICE;
    case ZG_OFFLOAD_CPU: return o->pin_memory ? ZG_TIER_PINNED : ZG_TIER_HOST;
    case ZG_OFFLOAD_NVME: return ZG_TIER_NVME;
    }
    zg_unreachable();
}

/* Two nvme_path values name the same directory when they differ only in trailing slashes. */
static bool same_dir(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    while (na > 1 && a[na - 1] == '/') na--;
    while (nb > 1 && b[nb - 1] == '/') nb--;
    return na == nb && !strncmp(a, b, na);
}

/* The swap files: one per distinct nvme_path, offload_param's first (so users who put parameters
** and optimizer states on different drives get both drives' bandwidth, as with DeepSpeed). Returns
** the file of the optimizer-side regions (grad32, master, adam_m, adam_v); params_shard is file 0. */
static int nvme_files(ZgMemPlan *mp, const ZgZero *z)
{
    bool pn = z->stage == 3 && z->offload_param.device == ZG_OFFLOAD_NVME;   /* params_shard there */
    const char *pp = pn ? z->offload_param.nvme_path : NULL;
    const char *op = z->offload_optimizer.device == ZG_OFFLOAD_NVME ? z->offload_optimizer.nvme_path : NULL;
    if (pn) mp->nvme_file_path[mp->n_nvme_files++] = pp ? pp : "";
    if (z->offload_optimizer.device != ZG_OFFLOAD_NVME) return 0;
    if (mp->n_nvme_files && same_dir(mp->nvme_file_path[0], op ? op : "")) return 0;
    mp->nvme_file_path[mp->n_nvme_files++] = op ? op : "";
    return mp->n_nvme_files - 1;
}

static void layout(ZgPlan *p)
{
    const ZgZero *z = p->zero;
    const ZgModel *m = p->model;
    ZgMemPlan *mp = &p->mem;
    memset(mp, 0, sizeof *mp);
    mp->arena_align = ARENA_ALIGN;
    Layout lo = {.p = p};
    int opt_file = nvme_files(mp, z);
    int64_t n16 = zg_dtype_size(z->dtype), S = p->shard.part_numel, O = p->shard.opt_numel;
    ZgTier opt_tier = offload_tier(&z->offload_optimizer);
    bool opt_off = z->offload_optimizer.device != ZG_OFFLOAD_NONE;
    ZgTier opt_host = z->offload_optimizer.pin_memory || z->offload_optimizer.device == ZG_OFFLOAD_NVME
                      ? ZG_TIER_PINNED : ZG_TIER_HOST;
    int64_t sg_max = 0;
    for (int i = 0; i < p->n_subgroups; i++)
        if (p->subgroups[i].numel > sg_max) sg_max = p->subgroups[i].numel;

    /* working parameters */
    if (z->stage < 3) {
        region(&lo, "params16", ZG_MEM_PARAM16, ZG_TIER_DEVICE, p->shard.padded_numel * n16, false);
    } else {
        ZgTier pt = offload_tier(&z->offload_param);
        region(&lo, "params_shard", ZG_MEM_PARAM16, pt, S * n16, false);
        region(&lo, "persist", ZG_MEM_PARAM16, ZG_TIER_DEVICE, zg_persist_region_numel(p) * n16, false);
        for (int s = 0; s < p->n_gather_slots; s++)
            region(&lo, zg_fmt("gather_slot_%d", s), ZG_MEM_GATHER_SLOTS, ZG_TIER_DEVICE,
                   p->gather_slot_numel * n16, false);
        if (z->offload_param.device != ZG_OFFLOAD_NONE) {
            int64_t span = 0;
            for (int g = 0; g < p->n_gathers; g++)
                if (p->gathers[g].shard_numel > span) span = p->gathers[g].shard_numel;
            bool nv = z->offload_param.device == ZG_OFFLOAD_NVME;
            int64_t bytes = nv ? round_up(span * n16, p->nvme_align) + p->nvme_align : span * n16;
            for (int s = 0; s < p->n_gather_slots; s++)
                region(&lo, zg_fmt("param_buf_%d", s), ZG_MEM_SWAP_BUFFERS,
                       nv ? ZG_TIER_PINNED : ZG_TIER_DEVICE, bytes, nv);
            if (nv && p->sg_swap != ZG_SWAP_PARAMS)
                region(&lo, "param_wb", ZG_MEM_SWAP_BUFFERS, ZG_TIER_PINNED,
                       round_up(sg_max * n16, p->nvme_align), true);
            for (int b = 0; p->sg_swap == ZG_SWAP_PARAMS && b < p->n_sg_buffers; b++)
                region(&lo, zg_fmt("master_buf_%d", b), ZG_MEM_SWAP_BUFFERS, ZG_TIER_PINNED,
                       round_up(sg_max * 4, p->nvme_align), true);
        }
    }
    /* gradients */
    if (z->stage < 2) {
        region(&lo, "grads", ZG_MEM_GRAD, ZG_TIER_DEVICE, p->shard.padded_numel * n16, false);
    } else {
        for (int b = 0; b < p->n_bucket_buffers; b++)
            region(&lo, zg_fmt("bucket_%d", b), ZG_MEM_COMM_BUCKETS, ZG_TIER_DEVICE,
                   p->bucket_buffer_numel * n16, false);
        for (int b = 0; b < p->n_bucket_buffers; b++)
            region(&lo, zg_fmt("bucket_recv_%d", b), ZG_MEM_COMM_BUCKETS, ZG_TIER_DEVICE,
                   p->bucket_recv_numel * n16, false);
    }
    lo.file = opt_file;           /* from here on, NVMe regions are the optimizer side's */
    /* gradients on NVMe: the shard sits in the swap file at the sub-groups' offsets (shard_offset
    ** x 4, aligned like master/m/v), staged through the fourth part of opt_buf_<b> */
    if (p->grad_nvme)
        region(&lo, "grad32", ZG_MEM_GRAD, ZG_TIER_NVME, O * 4, false);
    else if (p->grad16)
        region(&lo, "grad16", ZG_MEM_GRAD, opt_host, O * n16, false);
    else if (z->stage >= 2 || opt_off)
        region(&lo, "grad32", ZG_MEM_GRAD, opt_off ? opt_host : ZG_TIER_DEVICE, O * 4, false);
    /* the device accumulator of the owned fp32 gradients (plan.c), shipped into grad32 at the end */
    if (p->grad_acc_dev)
        region(&lo, "grad_acc", ZG_MEM_GRAD, ZG_TIER_DEVICE, O * 4, false);
    /* optimizer state; with part of it on the device (plan.c, n_sg_dev) the shard's leading
    ** opt_dev_numel elements live in the *_dev regions and the host regions hold the rest */
    int64_t D = p->opt_dev_numel, H = O - D;
    if (z->dtype != ZG_DTYPE_FP32 || opt_off)
        region(&lo, "master", ZG_MEM_MASTER, opt_tier, H * 4, false);
    region(&lo, "adam_m", ZG_MEM_ADAM_M, opt_tier, H * 4, false);
    region(&lo, "adam_v", ZG_MEM_ADAM_V, opt_tier, H * 4, false);
    /* the speculative step's second copy (plan.c): Adam writes it, the step rule commits it */
    if (p->speculative) {
        region(&lo, "master_next", ZG_MEM_MASTER, opt_tier, H * 4, false);
        region(&lo, "adam_m_next", ZG_MEM_ADAM_M, opt_tier, H * 4, false);
        region(&lo, "adam_v_next", ZG_MEM_ADAM_V, opt_tier, H * 4, false);
    }
    if (D > 0) {
        region(&lo, "master_dev", ZG_MEM_MASTER, ZG_TIER_DEVICE, D * 4, false);
        region(&lo, "adam_m_dev", ZG_MEM_ADAM_M, ZG_TIER_DEVICE, D * 4, false);
        region(&lo, "adam_v_dev", ZG_MEM_ADAM_V, ZG_TIER_DEVICE, D * 4, false);
        if (p->grad_keep) region(&lo, "grad_keep", ZG_MEM_GRAD, ZG_TIER_DEVICE, D * n16, false);
    }
    /* the device part's norm lanes (plan.c norm_dev_lanes): summed on the device, copied down
    ** into the pinned landing beside them, 8 doubles per block */
    if (p->norm_dev_lanes) {
        region(&lo, "norm_lanes", ZG_MEM_STAGING, ZG_TIER_DEVICE, p->norm_lanes_sets * 64, false);
        region(&lo, "norm_lanes_land", ZG_MEM_STAGING, ZG_TIER_PINNED, p->norm_lanes_sets * 64, false);
    }
    /* norm_adam: the host part's piece sums, written by its speculative Adam */
    if (p->norm_adam && p->norm_pieces > 0)
        region(&lo, "norm_pieces", ZG_MEM_STAGING, ZG_TIER_HOST, p->norm_pieces * 8, false);
    if (p->sg_swap == ZG_SWAP_OPTIMIZER) {
        for (int b = 0; b < p->n_sg_buffers; b++)
            region(&lo, zg_fmt("opt_buf_%d", b), ZG_MEM_SWAP_BUFFERS, ZG_TIER_PINNED,
                   (p->grad_nvme ? 4 : 3) * round_up(sg_max * 4, p->nvme_align), true);
    }
    /* the NVMe engine's bounce buffers (queue_depth x block_size, for unaligned pieces): handed to
    ** zr_nvme by the trainer, so the plan holds what the engine would otherwise allocate itself */
    if (z->offload_optimizer.device == ZG_OFFLOAD_NVME || z->offload_param.device == ZG_OFFLOAD_NVME) {
        int64_t bs = round_up(z->aio_block_size > 0 ? z->aio_block_size : 1 << 20, 4096);
        int64_t qd = z->aio_queue_depth > 0 ? z->aio_queue_depth : 8;
        int files = mp->n_nvme_files > 1 ? mp->n_nvme_files : 1;      /* one engine per swap file */
        region(&lo, "nvme_bounce", ZG_MEM_SWAP_BUFFERS, ZG_TIER_PINNED, files * qd * bs, true);
    }
    /* the landings of the GPU's per-step DMAs with Adam on the host, pinned whatever pin_memory
    ** says (an async copy needs it): each reduced part the host takes comes down into a slot of
    ** "grad_land" (as many slots as bucket buffers, so a bucket's D2H overlaps the host's add of
    ** the previous one), and each sub-group's update goes up from "param_land" (two: Adam on the
    ** next sub-group writes one while the other crosses). The host backend, whose device tier is
    ** host memory, reads the buckets and writes the working copy where they are. With device
    ** accumulation nothing lands there: GRAD_SHIP copies the sums into grad32 itself; nor with a
    ** pinned grad16 (grad_land_direct). */
    if (!p->adam_device) {
        int64_t land = 0;
        for (int k = 0; k < p->n_buckets; k++) {
            int64_t n = z->stage == 3 ? p->buckets[k].padded_numel / p->model->world_size
                                      : p->buckets[k].numel < O ? p->buckets[k].numel : O;
            if (n > land) land = n;
        }
        /* one micro-step into a pinned grad16: the hand-over is a copy, so its D2H can be the copy
        ** (the host's part is the norm's sum, read in place) and no slot is refilled mid-step */
        mp->grad_land_direct = p->grad16 && opt_host == ZG_TIER_PINNED;
        bool slots = !p->grad_acc_dev && !mp->grad_land_direct;
        mp->grad_land_slots = !slots ? 0 : p->n_bucket_buffers > 2 ? p->n_bucket_buffers : 2;
        mp->grad_land_numel = !slots ? 0 : land;
        region(&lo, "grad_land", ZG_MEM_STAGING, ZG_TIER_PINNED, mp->grad_land_slots * mp->grad_land_numel * n16,
               false);
        mp->param_land_numel = zg_plan_param_land(p) ? sg_max : 0;
        region(&lo, "param_land", ZG_MEM_STAGING, ZG_TIER_PINNED, 2 * mp->param_land_numel * n16, false);
    }
    /* stage 3 with the parameters on NVMe: the persistent tensors' slices, read from the swap file
    ** after the step, go up from here into "persist" */
    if (z->stage == 3 && z->offload_param.device == ZG_OFFLOAD_NVME)
        region(&lo, "persist_land", ZG_MEM_STAGING, ZG_TIER_PINNED, zg_persist_region_numel(p) * n16, false);
    /* staging: the module gradient area, fp32 gradients of one module (every 16-bit plan; fp32
    ** plans at stages 2/3, whose stages 0/1 sum into "grads" itself). A 16-bit plan's fp32 copy of
    ** one module's parameters is the host backend's alone (the host kernels are fp32; the GPU
    ** trainers' kernels and GEMMs read the 16-bit working copy), so it is a host buffer that
    ** backend maps, not device memory */
    if (z->dtype != ZG_DTYPE_FP32 || z->stage >= 2)
        region(&lo, "grad_stage", ZG_MEM_STAGING, ZG_TIER_DEVICE, p->max_use_numel * 4, false);
    mp->host_stage_bytes = z->dtype != ZG_DTYPE_FP32 ? p->max_use_numel * 4 : 0;
    if (z->stage >= 2 && p->tied_tensor >= 0)
        region(&lo, "tied_grad", ZG_MEM_STAGING, ZG_TIER_DEVICE,
               p->tensors[p->tied_tensor].numel * 4, false);
    /* activations: the device holds what the GPU trainer carves; the host backend's own layout
    ** (more arrays, fp32, the attention probabilities) is its business, outside the tiers */
    mp->host_acts_bytes = p->act_ckpt ? zg_acts_ckpt_bytes(m, z->micro_batch)
                                      : zg_acts_bytes(m, z->micro_batch);
    mp->host_scratch_bytes = zg_scratch_bytes(m, z->micro_batch);
    if (!zg_cuda_missing(p)) {
        mp->acts_bytes = zg_cuda_acts_bytes(p, p->act_ckpt, &mp->scratch_bytes);
        mp->device_acts_layout = "train-cuda";
    } else {
        mp->acts_bytes = mp->host_acts_bytes;
        mp->scratch_bytes = mp->host_scratch_bytes;
        mp->device_acts_layout = "host";
    }
    region(&lo, "acts", ZG_MEM_ACTIVATIONS, ZG_TIER_DEVICE, mp->acts_bytes, false);
    region(&lo, "scratch", ZG_MEM_ACTIVATIONS, ZG_TIER_DEVICE, mp->scratch_bytes, false);

    for (int i = 0; i < 2; i++) lo.cursor[ZG_TIER_NVME] += round_up(lo.nvme_cursor[i], p->nvme_align);
    for (int i = 0; i < mp->n_nvme_files; i++) mp->nvme_file_bytes[i] = round_up(lo.nvme_cursor[i], p->nvme_align);
    for (int t = 0; t < ZG_NTIERS; t++) {
        int64_t a = t == ZG_TIER_NVME ? p->nvme_align : ARENA_ALIGN;
        mp->tier_bytes[t] = round_up(lo.cursor[t], a);
        mp->peak_bytes[t] = mp->tier_bytes[t];
    }
}

int64_t zg_recompute_skip_numel(const ZgModel *m)
{
    return m->d_ff * m->d_model;
}

int64_t zg_mem_acts_unckpt(const ZgPlan *p)
{
    if (!strcmp(p->mem.device_acts_layout, "host")) return zg_acts_bytes(p->model, p->zero->micro_batch);
    int64_t scratch;
    return zg_cuda_acts_bytes(p, false, &scratch);
}

int64_t zg_mem_host_per_node(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    int rpn = m->gpus_per_node > 0 ? m->gpus_per_node : 1;
    if (rpn > m->world_size) rpn = m->world_size;
    return (p->mem.tier_bytes[ZG_TIER_PINNED] + p->mem.tier_bytes[ZG_TIER_HOST]) * rpn;
}

/* *acc += x * times, saturating at INT64_MAX: gradient_accumulation_steps multiplies a micro-step's
** traffic, and DeepSpeed accepts any accumulation; zg_plan_build refuses a plan whose figure
** saturated (it cannot state it) rather than print a wrapped number. */
static void add_times(int64_t *acc, int64_t x, int64_t times)
{
    int64_t prod;
    if (__builtin_mul_overflow(x, times, &prod) || __builtin_add_overflow(*acc, prod, acc)) *acc = INT64_MAX;
}

/* What one op moves per rank, per link (the cost's and the prediction's one source). */
ZgOpBytes zg_op_bytes(const ZgPlan *p, const ZgOp *o)
{
    const ZgZero *z = p->zero;
    int64_t ws = p->model->world_size, n16 = zg_dtype_size(z->dtype);
    int a = o->arg;
    ZgOpBytes b = {0};
    switch (o->kind) {
    case ZG_OP_GATHER:
        b.net = (ws - 1) * p->gathers[a].part_numel * n16;
        break;
    case ZG_OP_PARAM_SWAP_IN:
        /* CPU: the group's span of the pinned shard H2D into the device param_buf. NVMe: the span
        ** read into the pinned param_buf, then each gathered tensor's own part H2D straight into
        ** its place in the slot (the persistent slices between stay behind) */
        if (z->offload_param.device == ZG_OFFLOAD_NVME) {
            b.nvme_read = p->gathers[a].shard_numel * n16;
            b.h2d = p->gathers[a].part_numel * n16;
        } else {
            b.h2d = p->gathers[a].shard_numel * n16;
        }
        break;
    case ZG_OP_REDUCE:
        if (z->stage == 3) b.net = (ws - 1) * (p->buckets[a].padded_numel / ws) * n16;
        else b.net = 2 * (ws - 1) * p->buckets[a].numel * n16 / ws;
        break;
    case ZG_OP_WAIT_REDUCE:     /* Adam on the host: this rank's part comes down (unless it
                                ** accumulates on the device: then GRAD_SHIP brings the sums), less
                                ** the device optimizer's part, whose norm lanes come instead (rank
                                ** 0's: every rank's device part has its size) */
        if (!p->adam_device && !p->grad_acc_dev) {
            int64_t sets, dev = zg_bucket_dev_part(p, a, 0, &sets);
            b.d2h = (p->buckets[a].padded_numel / ws - dev) * n16 + sets * 64;
        }
        break;
    case ZG_OP_GRAD_SHIP: {
        int64_t sets, dev = zg_bucket_dev_part(p, a, 0, &sets);
        b.d2h = (p->buckets[a].padded_numel / ws - dev) * 4 + sets * 64;
        break;
    }
    case ZG_OP_SWAP_IN:     /* master, m, v (+ gradients); or (ZG_SWAP_PARAMS) the fp32 params */
        b.nvme_read = (p->sg_swap == ZG_SWAP_PARAMS ? 1 : p->grad_nvme ? 4 : 3) * p->subgroups[a].numel * 4;
        break;
    case ZG_OP_SWAP_OUT:
        b.nvme_write = (p->sg_swap == ZG_SWAP_PARAMS ? 1 : 3) * p->subgroups[a].numel * 4;
        break;
    case ZG_OP_OPTIMIZER:
        if (p->sg_swap == ZG_SWAP_PARAMS) break;          /* SWAP_OUT writes them */
        if (z->offload_param.device == ZG_OFFLOAD_NVME) b.nvme_write = p->subgroups[a].numel * n16;
        else if (zg_plan_param_land(p) && !zg_plan_sg_on_device(p, a))   /* up from param_land */
            b.h2d = p->subgroups[a].numel * n16;
        break;
    case ZG_OP_ALLGATHER_PARAMS:
        /* stage 3: the persistent tensors are rebuilt by one all-reduce of the whole "persist"
        ** region (every rank's slices into zeros; lower.c's row), so that is what is received */
        if (z->stage < 3) b.net = (ws - 1) * p->shard.part_numel * n16;
        else b.net = 2 * (ws - 1) * (zg_persist_region_numel(p) * n16) / ws;
        /* parameters offloaded: this rank's slices cross H2D into "persist" first; rank 0's
        ** (a slice is min(part, what is left of the tensor), so no rank moves more) */
        if (z->stage == 3 && z->offload_param.device != ZG_OFFLOAD_NONE)
            for (int t = 0; t < p->n_tensors; t++)
                if (p->tensors[t].persistent)
                    b.h2d += (p->tensors[t].part_numel < p->tensors[t].numel ? p->tensors[t].part_numel
                                                                           : p->tensors[t].numel) * n16;
        break;
    default:
        break;
    }
    return b;
}

/* Bytes per rank per optimizer step, summed over the op lists (micro x (gas-1), last, step). */
static void cost_ops(const ZgPlan *p, const ZgOp *ops, int n, int64_t times, ZgCost *c)
{
    for (int i = 0; i < n; i++) {
        ZgOpBytes b = zg_op_bytes(p, &ops[i]);
        add_times(&c->net_bytes, b.net, times);
        add_times(&c->h2d_bytes, b.h2d, times);
        add_times(&c->d2h_bytes, b.d2h, times);
        add_times(&c->nvme_read_bytes, b.nvme_read, times);
        add_times(&c->nvme_write_bytes, b.nvme_write, times);
    }
}

/* Elements of the "persist" region (stage 3): the persistent tensors at their persist_offset. */
int64_t zg_persist_region_numel(const ZgPlan *p)
{
    int64_t n = 0;
    for (int i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].persistent) n = p->tensors[i].persist_offset + p->tensors[i].numel;
    return n;
}

static void cost(ZgPlan *p)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    ZgCost *c = &p->cost;
    memset(c, 0, sizeof *c);
    int64_t gas = z->grad_accum > 0 ? z->grad_accum : 1;
    cost_ops(p, p->sched.micro, p->sched.n_micro, gas - 1, c);
    cost_ops(p, p->sched.last, p->sched.n_last, 1, c);
    cost_ops(p, p->sched.step, p->sched.n_step, 1, c);
    /* gradients on NVMe, by sub-group windows: every micro-step writes the shard once and every
    ** one after the first reads it back to add into; the norm pass reads it once more */
    if (p->grad_nvme) {
        int64_t g = p->shard.opt_numel * 4;
        add_times(&c->nvme_write_bytes, g, gas);
        add_times(&c->nvme_read_bytes, g, gas);
    }
    /* what the device needs of the host each micro-step and gives back, whatever the stage: the
    ** batch's token ids, targets and document positions up (int32 each) with the rows grouped by
    ** token for the wte gradient (zk_tokbucket.h's ints) and, for a learned position table (no
    ** rope), by position for its gradient; the per-token losses down (fp32) */
    int64_t bt = (int64_t)z->micro_batch * m->seq_len;
    int64_t groupings = layout_arch(m)->rope ? 1 : 2;
    add_times(&c->batch_h2d_bytes, (3 * bt + groupings * ZK_TOKBUCKET_INTS(bt)) * 4, gas);
    add_times(&c->loss_d2h_bytes, bt * 4, gas);
    /* the optimizer state on the device: Adam runs there, and only the gradient's sum of squares
    ** (one double) comes down for the step rule (the norm and the fp16 overflow decision) */
    if (p->adam_device) c->norm_d2h_bytes = 8;
    add_times(&c->h2d_bytes, c->batch_h2d_bytes, 1);
    add_times(&c->d2h_bytes, c->loss_d2h_bytes, 1);
    add_times(&c->d2h_bytes, c->norm_d2h_bytes, 1);
    double tokens = (double)z->micro_batch * (double)gas * (double)m->seq_len;
    double per_token = 6.0 * (double)p->n_params +
                       6.0 * (double)m->n_layers * (double)m->d_model * (double)m->seq_len;
    /* activation checkpointing: one more forward of every recomputed block (2 FLOPs per
    ** parameter and 2*C*T of attention per token, the forward third of the formula above) less
    ** its last linear layer, which a recompute skips (zg_recompute_skip_numel) */
    for (int i = 0; i < p->sched.n_last; i++) {
        const ZgOp *o = &p->sched.last[i];
        if (o->kind == ZG_OP_FORWARD && o->slot == ZG_RECOMPUTE)
            per_token += 2.0 * (double)(p->modules[o->arg].numel - zg_recompute_skip_numel(m)) +
                         2.0 * (double)m->d_model * (double)m->seq_len;
    }
    c->flops = per_token * tokens;
}

/* ---------------------------------------------------------------------- device headroom */
/* What a CUDA rank allocates on its GPU outside the plan's arena, per rank, as zgen budgets it
** (docs/PLAN.md "Device headroom" gives the sources):
**   - the CUDA context: driver state, the loaded kernel images, stacks; a few hundred MiB on a
**     Hopper GPU with lazy loading (the default since CUDA 12.2), budgeted at 512 MiB;
**   - cuBLAS: one workspace per handle and stream that runs GEMMs, 32 MiB each (NVIDIA's
**     recommended size on Hopper; 4 MiB before it). train-cuda has one handle, and every FORWARD
**     and BACKWARD row runs on the compute stream (gen/lower.c), so one workspace;
**   - NCCL: per channel, one set of receive buffers per connection: Simple NCCL_BUFFSIZE 4 MiB +
**     LL128 4.6875 MiB + LL 0.5 MiB = 9.19 MiB, allocated in 2 MiB granules = 10 MiB; up to 32
**     channels over NVLink; a ring plus a chain within a node is 2 connections, a ring plus a tree
**     across nodes (parent and two children) 4. One rank opens no connection.
** hardware.device_headroom replaces the sum (a measured figure, or smaller NCCL buffers). */
#define MIB ((int64_t)1 << 20)
#define HEADROOM_CONTEXT (512 * MIB)
#define CUBLAS_WORKSPACE (32 * MIB)
#define GEMM_STREAMS 1
#define NCCL_CHANNELS 32
#define NCCL_CONN_BYTES (10 * MIB)

static void device_headroom(ZgPlan *p)
{
    const ZgModel *m = p->model;
    ZgMemPlan *mp = &p->mem;
    int rpn = m->gpus_per_node > 0 ? m->gpus_per_node : 1;
    int conns = m->world_size <= 1 ? 0 : m->world_size > rpn ? 4 : 2;
    mp->headroom_context = HEADROOM_CONTEXT;
    mp->headroom_cublas = GEMM_STREAMS * CUBLAS_WORKSPACE;
    mp->headroom_nccl = (int64_t)NCCL_CHANNELS * conns * NCCL_CONN_BYTES;
    mp->device_headroom = m->device_headroom > 0 ? m->device_headroom
                          : mp->headroom_context + mp->headroom_cublas + mp->headroom_nccl;
}

int64_t zg_mem_device_need(const ZgPlan *p)
{
    return p->mem.tier_bytes[ZG_TIER_DEVICE] + p->mem.device_headroom;
}

char *zg_mem_headroom_parts(const ZgPlan *p)
{
    const ZgMemPlan *mp = &p->mem;
    if (p->model->device_headroom > 0) return zg_fmt("set by hardware.device_headroom");
    return zg_fmt("CUDA context %lld MiB, cuBLAS workspace %lld MiB, NCCL %lld MiB",
                  (long long)(mp->headroom_context / MIB), (long long)(mp->headroom_cublas / MIB),
                  (long long)(mp->headroom_nccl / MIB));
}

void zg_memplan_build(ZgPlan *p)
{
    layout(p);
    device_headroom(p);
    cost(p);
}
