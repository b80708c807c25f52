/*
** train_layout.c — the plan's memory made real: one arena per tier (sized by the plan, so the
** device-tier bytes in use are the plan's figure to the byte), every region turned into a pointer
** at its planned offset, the NVMe tier as one swap file per rank and nvme_path (the plan says which
** file each NVMe region lives in), and the per-tensor offsets that
** follow from the partition map (gen/zg_plan.h states the rules; they are applied here once, at
** start-up, never while training).
*/
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "train.h"

/* ---------------------------------------------------------------------- element type W */
size_t tr_wsize(void) { return (size_t)ZG_DTYPE_SIZE; }

void *tr_w_at(void *base, int64_t elem)
{
    return base ? (char *)base + (size_t)elem * ZG_DTYPE_SIZE : NULL;
}

void tr_w_to_f32(float *dst, const void *src, int64_t n)
{
#if ZG_BF16
    zr_bf16_to_f32_n(dst, (const uint16_t *)src, n);
#elif ZG_FP16
    zr_fp16_to_f32_n(dst, (const uint16_t *)src, n);
#else
    if (dst != src) memmove(dst, src, (size_t)n * 4);
#endif
}

void tr_f32_to_w(void *dst, const float *src, int64_t n)
{
#if ZG_BF16
    zr_f32_to_bf16_n((uint16_t *)dst, src, n);
#elif ZG_FP16
    zr_f32_to_fp16_n((uint16_t *)dst, src, n);
#else
    if (dst != src) memmove(dst, src, (size_t)n * 4);
#endif
}

/* ---------------------------------------------------------------------- regions */
void *tr_region_at(int r, int64_t elem, int dt)
{
    if (r < 0 || r >= ZG_N_REGIONS || !T.rg[r])
        tr_die("internal: an op row names region %d, which is not in memory", r);
    return (char *)T.rg[r] + (size_t)elem * (dt == ZR_DT_FP32 ? 4 : 2);
}

int64_t tr_nvme_at(int r, int64_t elem, int dt)
{
    if (r < 0 || r >= ZG_N_REGIONS || zg_regions[r].tier != ZR_TIER_NVME)
        tr_die("internal: an op row reads region %d from NVMe, where the plan does not put it", r);
    return zg_regions[r].offset_bytes + elem * (dt == ZR_DT_FP32 ? 4 : 2);
}

static const ZrRegionRow *find_region(const char *name)
{
    for (int i = 0; i < ZG_N_REGIONS; i++)
        if (zg_regions[i].name && strcmp(zg_regions[i].name, name) == 0) return &zg_regions[i];
    return NULL;
}

int tr_region_index(const char *name)
{
    const ZrRegionRow *r = find_region(name);
    return r ? (int)(r - zg_regions) : -1;
}

/* Pointer to region `name`, or NULL when the plan has none (or it lives on NVMe: *nvme_off). */
static void *region(const char *name, int64_t *nvme_off, int64_t *bytes)
{
    const ZrRegionRow *r = find_region(name);
    if (nvme_off) *nvme_off = -1;
    if (bytes) *bytes = r ? r->bytes : 0;
    if (!r) return NULL;
    if (r->tier == ZR_TIER_NVME) {
        if (!nvme_off) tr_die("region %s is on NVMe where the trainer needs memory", name);
        *nvme_off = r->offset_bytes;
        return NULL;
    }
    void *p = zr_arena_at(T.arena[r->tier], r->offset_bytes, r->bytes);
    ZR_CHECK_PTR(p);
    return p;
}

void *tr_region_named(const char *name)
{
    int64_t nvme_off;
    return region(name, &nvme_off, NULL);
}

static void nvme_rw(ZrNvme *f, int write, void *buf, int64_t bytes, int64_t off)
{
    if (!f) tr_die("internal: NVMe I/O without a swap file");
    int rc = write ? zr_nvme_write(f, buf, bytes, off) : zr_nvme_read(f, buf, bytes, off);
    if (rc < 0) tr_die("%s", zr_nvme_strerror(f));
}
void tr_nvme_rw(int write, void *buf, int64_t bytes, int64_t off) { nvme_rw(T.nvme, write, buf, bytes, off); }
void tr_nvme_rw_param(int write, void *buf, int64_t bytes, int64_t off) { nvme_rw(T.nvme_param, write, buf, bytes, off); }

/* mkdir -p: the nvme_path of a DeepSpeed config names a directory that may not exist yet. */
static void make_dirs(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') { *c = 0; mkdir(p, 0755); *c = '/'; }
    mkdir(p, 0755);
}

/* What a swap file holds at a byte offset, for the checksum-mismatch text (zr_nvme_set_describe):
** the region, and for the optimizer side the sub-group (its window in the region). */
static void describe_swap(void *ctx, const ZrNvme *f, int64_t off, int64_t bytes, char *out, size_t n)
{
    int file = (int)(intptr_t)ctx;
    (void)f; (void)bytes;
    for (int i = 0; i < ZG_N_REGIONS; i++) {
        const ZrRegionRow *r = &zg_regions[i];
        if (r->tier != ZR_TIER_NVME || zg_region_file[i] != file || off < r->offset_bytes ||
            off >= r->offset_bytes + r->bytes)
            continue;
        int64_t rel = off - r->offset_bytes;
        int par = strcmp(r->name, "params_shard") == 0;
        for (int k = 0; k < ZG_N_SUBGROUPS; k++) {
            const ZrSubGroupRow *sg = &zg_subgroups[k];
            int64_t lo = par && ZG_N_REGIONS_MASTER_BUF == 0 ? sg->shard_offset * ZG_DTYPE_SIZE
                                                     : sg->nvme_offset_bytes;
            int64_t hi = lo + sg->numel * (par && ZG_N_REGIONS_MASTER_BUF == 0 ? ZG_DTYPE_SIZE : 4);
            if (lo < 0 || rel < lo || rel >= hi) continue;
            snprintf(out, n, "%s of sub-group %d (region %s, rank %d)",
                     par ? (ZG_N_REGIONS_MASTER_BUF ? "fp32 parameters (the master)" : "16-bit parameters")
                     : !strcmp(r->name, "grad32") ? "fp32 gradients"
                     : !strcmp(r->name, "master") ? "optimizer state: fp32 master"
                     : !strcmp(r->name, "adam_m") ? "optimizer state: Adam m" : "optimizer state: Adam v",
                     k, r->name, T.rank);
            return;
        }
        snprintf(out, n, "region %s, byte %lld of it (rank %d)", r->name, (long long)rel, T.rank);
        return;
    }
}

/* One swap file: under ZG_NVME_DIR when set (every file), else under the nvme_path the plan gives it. */
static ZrNvme *open_swap_file(int file, char *path, size_t cap)
{
    const char *dir = getenv("ZG_NVME_DIR");
    if (!dir || !*dir) dir = file ? ZG_NVME_FILE_DIR_1 : ZG_NVME_FILE_DIR_0;
    if (!dir || !*dir) dir = ".";
    make_dirs(dir);
    snprintf(path, cap, "%s/zgen_%s_%srank%d.swp", dir, ZG_NAME,
             ZG_NVME_FILES < 2 ? "" : file ? "optim_" : "param_", T.rank);
    ZrNvmeCfg cfg = {ZG_AIO_BLOCK_SIZE, ZG_AIO_QUEUE_DEPTH, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    ZR_CHECK(zr_nvme_open(&f, path, file ? ZG_NVME_FILE_BYTES_1 : ZG_NVME_FILE_BYTES_0, &cfg));
    zr_nvme_set_describe(f, describe_swap, (void *)(intptr_t)file);
    return f;
}

static int region_file(const char *name)
{
    for (int i = 0; i < ZG_N_REGIONS; i++)
        if (zg_regions[i].name && strcmp(zg_regions[i].name, name) == 0) return zg_region_file[i];
    return 0;
}

/* The plan's swap files: T.nvme holds the optimizer side, T.nvme_param params_shard (the same
** handle with one file). */
static void open_swap_files(void)
{
    ZrNvme *f[2] = {NULL, NULL};
    char path[2][1024];
    for (int i = 0; i < ZG_NVME_FILES && i < 2; i++)
        f[i] = open_swap_file(i, path[i], sizeof path[i]);
    int po = region_file("params_shard"), oo = region_file("adam_m");
    if (!f[po] || !f[oo]) tr_die("internal: the plan's swap files (%d) do not hold its NVMe regions", ZG_NVME_FILES);
    T.nvme = f[oo];
    T.nvme_param = f[po];
    snprintf(T.nvme_path, sizeof T.nvme_path, "%s", path[oo]);
    snprintf(T.nvme_param_path, sizeof T.nvme_param_path, "%s", path[po]);
}

/* The engines' bounce buffers live in the plan's pinned "nvme_bounce" (queue_depth x block_size for
** each swap file). */
static void give_bounce(void)
{
    int64_t bytes;
    char *b = region("nvme_bounce", NULL, &bytes);
    if (!ZG_HAS_NVME_BOUNCE || ZG_NVME_FILES == 0) return;
    if (ZG_NVME_FILES == 1) {
        ZR_CHECK(zr_nvme_use_bounce(T.nvme, b, bytes));
        return;
    }
    ZR_CHECK(zr_nvme_use_bounce(T.nvme_param, b, bytes / 2));
    ZR_CHECK(zr_nvme_use_bounce(T.nvme, b + bytes / 2, bytes / 2));
}

/* ---------------------------------------------------------------------- the plan's regions */
/* What the trainer dereferences, by the regions the plan carved (gen/memplan.c decides them from
** the configuration, not from the ZeRO stage): a plan without them does not compile. */
#define TR_PARAMS_SHARDED (ZG_HAS_PARAMS_SHARD || ZG_ON_NVME_PARAMS_SHARD)
_Static_assert(ZG_HAS_PARAMS16 != TR_PARAMS_SHARDED,
               "plan needs exactly one working copy of the parameters: params16 (whole) or params_shard");
_Static_assert(ZG_HAS_GRADS || ((ZG_HAS_GRAD32 || ZG_HAS_GRAD16 || ZG_ON_NVME_GRAD32) && ZG_N_REGIONS_BUCKET > 0),
               "plan lacks gradient buffers: neither grads nor grad32 (or grad16) with bucket_0");
_Static_assert(!ZG_ON_NVME_GRAD32 || (ZG_OPT_BUF_PARTS == 4 && ZG_N_SUBGROUPS > 0),
               "plan puts grad32 on NVMe without opt_buf_<b> staging for its sub-groups");
_Static_assert(!ZG_MIXED || ZG_HAS_GRAD_STAGE, "plan lacks the module gradient area grad_stage");
_Static_assert(ZG_MIXED || ZG_HAS_GRADS || ZG_HAS_GRAD_STAGE, "plan lacks region grad_stage (bucketed fp32 gradients)");
_Static_assert(ZG_N_GATHER_SLOTS <= TR_MAX_SLOTS && ZG_N_REGIONS_PARAM_BUF <= TR_MAX_SLOTS,
               "more gather slots than this trainer supports");
_Static_assert(ZG_N_REGIONS_BUCKET <= TR_MAX_BUFS && ZG_N_REGIONS_OPT_BUF <= TR_MAX_BUFS &&
               ZG_N_REGIONS_MASTER_BUF <= TR_MAX_BUFS, "more buffers than this trainer supports");
_Static_assert(ZG_MIXED || !ZG_ON_NVME_PARAMS_SHARD || ZG_HAS_MASTER || ZG_ON_NVME_MASTER || ZG_N_REGIONS_MASTER_BUF > 0,
               "plan lacks region master_buf_0 (fp32 parameters on NVMe are the master)");
_Static_assert(!ZG_GRAD_ACC_DEV || (ZG_HAS_GRAD_ACC && ZG_HAS_GRAD32),
               "plan accumulates on the device without grad_acc and grad32");
_Static_assert(!ZG_NORM_ADAM || ZG_HAS_NORM_PIECES, "plan sums the norm in Adam without norm_pieces");
_Static_assert(ZG_N_SG_DEV == 0 || (ZG_HAS_MASTER_DEV && ZG_HAS_ADAM_M_DEV && ZG_HAS_ADAM_V_DEV && ZG_HAS_MASTER &&
                                    (ZG_GRAD_KEEP ? ZG_HAS_GRAD_KEEP : ZG_HAS_GRAD_ACC)),
               "the plan keeps part of the optimizer on the device without its regions");
_Static_assert(ZG_HAS_ACTS && ZG_HAS_SCRATCH, "the plan has no acts/scratch regions");

/* ---------------------------------------------------------------------- derived offsets */
static void derive(void)
{
    T.opt_numel = ZG_OPT_NUMEL;
    T.opt_flat0 = (int64_t)T.rank * ZG_OPT_FLAT_STRIDE;
    for (int i = 0; i < ZG_N_TENSORS; i++) {
        const ZrTensorRow *r = &zg_tensors[i];
        TrTensor *d = &T.t[i];
        if (r->part_numel > 0) {      /* slice `rank` of the padded tensor, padding included */
            d->opt_lo = r->shard_offset;
            d->opt_hi = r->shard_offset + r->part_numel;
            d->opt_src = (int64_t)T.rank * r->part_numel;
        } else {                      /* the tensor's overlap with this rank's flat partition */
            int64_t lo = r->flat_offset, hi = r->flat_offset + r->numel;
            int64_t slo = T.opt_flat0, shi = T.opt_flat0 + T.opt_numel;
            if (lo < slo) lo = slo;
            if (hi > shi) hi = shi;
            if (hi < lo) hi = lo;
            d->opt_lo = lo - T.opt_flat0;
            d->opt_hi = hi - T.opt_flat0;
            d->opt_src = lo - r->flat_offset;
        }
    }
}

/* Every region an op row names must be in memory, or on NVMe where the row moves bytes to or from
** the swap file: checked once here, so that a plan and a trainer that disagree stop before step 1. */
static void check_op_regions(const ZrOpRow *ops, int n, const char *list)
{
    for (int i = 0; i < n; i++) {
        const int rg[2] = {ops[i].src, ops[i].dst};
        for (int k = 0; k < 2; k++) {
            int r = rg[k];
            if (r < 0) continue;
            if (r >= ZG_N_REGIONS || (!T.rg[r] && zg_regions[r].tier != ZR_TIER_NVME))
                tr_die("plan: %s[%d] (%s) names region %d, which the plan does not place in memory: "
                       "regenerate the trainer with a matching zgen", list, i, zr_op_names[ops[i].kind], r);
        }
    }
}

/* ---------------------------------------------------------------------- init */
void tr_layout_init(void)
{
    const int64_t tier_bytes[ZR_NTIERS] = {ZG_TIER_BYTES_DEVICE, ZG_TIER_BYTES_PINNED,
                                           ZG_TIER_BYTES_HOST, ZG_TIER_BYTES_NVME};
#if defined(ZR_DEBUG) && ZR_DEBUG
    zr_mem_set_debug(1);          /* make DEBUG=1: guards, NaN fill, released slots poisoned */
#endif
    zr_pinned_budget(ZG_TIER_BYTES_PINNED);
    for (int tier = 0; tier < ZR_TIER_NVME; tier++)
        if (tier_bytes[tier] > 0)
            ZR_CHECK(zr_arena_create(&T.arena[tier], (ZrTier)tier, tier_bytes[tier], zg_regions,
                                     ZG_N_REGIONS));
    if (tier_bytes[ZR_TIER_NVME] > 0) open_swap_files();

    for (int i = 0; i < ZG_N_REGIONS; i++)
        if (zg_regions[i].tier != ZR_TIER_NVME && zg_regions[i].bytes > 0)
            ZR_CHECK_PTR(T.rg[i] = zr_arena_at(T.arena[zg_regions[i].tier], zg_regions[i].offset_bytes,
                                               zg_regions[i].bytes));
    char name[64];
    int64_t bytes;
    give_bounce();
    T.params16 = region("params16", NULL, NULL);
    T.params_shard = region("params_shard", &T.params_shard_nvme, NULL);
    T.persist = region("persist", NULL, NULL);
    for (int s = 0; s < ZG_N_GATHER_SLOTS && s < TR_MAX_SLOTS; s++) {
        snprintf(name, sizeof name, "gather_slot_%d", s);
        T.slot[s] = region(name, NULL, NULL);
        T.slot_row[s] = find_region(name);
        snprintf(name, sizeof name, "param_buf_%d", s);
        T.param_buf[s] = region(name, NULL, NULL);
    }
    T.param_wb = region("param_wb", NULL, NULL);
    T.grads = region("grads", NULL, NULL);
    for (int b = 0; b < ZG_N_REGIONS_BUCKET; b++) {
        snprintf(name, sizeof name, "bucket_%d", b);
        T.bucket[b] = region(name, NULL, NULL);
        snprintf(name, sizeof name, "bucket_recv_%d", b);
        T.bucket_recv[b] = region(name, NULL, NULL);
    }
    T.grad32 = region("grad32", &T.grad32_nvme, NULL);
    T.grad_acc = region("grad_acc", NULL, NULL);
    int64_t g16_bytes = 0;
    if (ZG_HAS_GRAD16 && (T.grad16 = region("grad16", NULL, &g16_bytes))) memset(T.grad16, 0, (size_t)g16_bytes);   /* padding */
    T.master = region("master", &T.master_nvme, NULL);
    T.adam_m = region("adam_m", &T.adam_m_nvme, NULL);
    T.adam_v = region("adam_v", &T.adam_v_nvme, NULL);
    T.master_dev = region("master_dev", NULL, NULL);
    T.adam_m_dev = region("adam_m_dev", NULL, NULL);
    T.adam_v_dev = region("adam_v_dev", NULL, NULL);
    T.grad_keep = region("grad_keep", NULL, NULL);
    int64_t np_bytes = 0;
    T.norm_pieces = region("norm_pieces", NULL, &np_bytes);
    T.n_norm_pieces = np_bytes / 8;
    T.master_next = region("master_next", NULL, NULL);
    T.adam_m_next = region("adam_m_next", NULL, NULL);
    T.adam_v_next = region("adam_v_next", NULL, NULL);
    for (int b = 0; b < ZG_N_REGIONS_OPT_BUF; b++) {
        snprintf(name, sizeof name, "opt_buf_%d", b);
        T.opt_buf[b] = region(name, NULL, &bytes);
        T.opt_buf_part = bytes / (4 * ZG_OPT_BUF_PARTS);
    }
    tr_grad_window_reset();
    for (int b = 0; b < ZG_N_REGIONS_MASTER_BUF; b++) {
        snprintf(name, sizeof name, "master_buf_%d", b);
        T.master_buf[b] = region(name, NULL, NULL);
    }
    T.grad_stage = region("grad_stage", NULL, NULL);
    T.tied_grad = region("tied_grad", NULL, NULL);

    derive();
    tr_norm_init();                 /* the norm's pieces by this rank's buckets (after derive) */

    /* the host kernels' activations: not the device regions, which hold the GPU trainer's layout,
    ** but a buffer of gen's ZG_HOST_ACTS_BYTES + ZG_HOST_SCRATCH_BYTES mapped here (untouched pages
    ** cost nothing: train-cuda touches it only for --check and the state's chunked I/O). It must
    ** hold what the arch's adapter carves (train_model.h): every block's activations, or the
    ** checkpointed layout (one block area, then each block's output). After them, with a 16-bit
    ** dtype, ZG_HOST_STAGE_BYTES: the fp32 copy of one module's parameters the fp32 kernels read */
    int64_t ab = ZG_HOST_ACTS_BYTES, sb = ZG_HOST_SCRATCH_BYTES, pb = ZG_HOST_STAGE_BYTES;
    T.host_acts_bytes = (size_t)(ab + sb + pb + 128);
    void *hb = mmap(NULL, T.host_acts_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hb == MAP_FAILED)
        tr_die("cannot map the host backend's activations (%lld bytes, plan.txt \"host backend\"): %s",
               (long long)T.host_acts_bytes, strerror(errno));
    T.acts = hb;
    T.scratch = (float *)((char *)hb + (ab + 63) / 64 * 64);
    T.stage_params = pb ? (float *)((char *)T.scratch + (sb + 63) / 64 * 64) : NULL;
    T.acts_floats = ab / 4;
    int64_t btc = (int64_t)ZG_MICRO_BATCH * ZG_SEQ_LEN * ZG_D_MODEL;
    T.act_ckpt = ZG_ACT_CKPT && ZG_N_LAYERS > 0;     /* decided by the plan */
    T.area_layer = -1;
    int64_t need = T.act_ckpt ? tr_model_acts_floats(1) + ZG_N_LAYERS * btc : tr_model_acts_floats(ZG_N_LAYERS);
    int64_t need_s = tr_model_scratch_floats();
    if (need * 4 > ab || need_s * 4 > sb)
        tr_die("plan's host activations (%lld/%lld bytes) are smaller than the kernels need "
               "(%lld/%lld): regenerate with a matching zgen", (long long)ab, (long long)sb,
               (long long)(need * 4), (long long)(need_s * 4));
    tr_model_carve(T.acts, T.scratch, T.act_ckpt ? 1 : ZG_N_LAYERS);
    if (T.act_ckpt) T.ckpt_out = T.acts + tr_model_acts_floats(1);

    /* what the executor dereferences: a plan without it cannot be run (the regions themselves are
    ** checked when this file compiles, above) */
    check_op_regions(zg_micro_ops, ZG_N_MICRO_OPS, "zg_micro_ops");
    check_op_regions(zg_last_micro_ops, ZG_N_LAST_MICRO_OPS, "zg_last_micro_ops");
    check_op_regions(zg_step_ops, ZG_N_STEP_OPS, "zg_step_ops");
    if ((zg_tensors[0].part_numel > 0) != TR_PARAMS_SHARDED)   /* derive() reads the rows, the rest the regions */
        tr_die("plan's tensor rows %s per-rank slices (part_numel) but its regions hold %s",
               TR_PARAMS_SHARDED ? "lack" : "have", TR_PARAMS_SHARDED ? "params_shard" : "params16");
    if (ZG_MIXED && !T.stage_params) tr_die("plan lacks the host's fp32 parameter staging (ZG_HOST_STAGE_BYTES)");
}

void tr_layout_free(void)
{
    if (ZG_NVME_FILES > 1) ZR_CHECK(zr_nvme_close(T.nvme_param));
    if (ZG_NVME_FILES > 0) ZR_CHECK(zr_nvme_close(T.nvme));
    for (int tier = 0; tier < ZR_NTIERS; tier++) {
        if (!T.arena[tier]) continue;
        ZR_CHECK(zr_arena_check(T.arena[tier]));
        zr_arena_destroy(T.arena[tier]);
    }
    if (T.acts) munmap(T.acts, T.host_acts_bytes);
    T.acts = T.scratch = T.stage_params = NULL;
}
