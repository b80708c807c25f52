/*
** train_params.c — parameters in and out: DESIGN.md's random init (counter-based, so each rank
** generates only what it owns and every world size and stage gets the same weights), --init-from
** (safetensors, Hugging Face GPT-2 names), --export (gathered from the shards, + config.json) and
** the --dump-grads debug output that the parity test compares with PyTorch.
**
** The optimizer state (master, m, v) and the working copy are written chunk by chunk through the
** "acts" region, which is free outside a micro-step: the state may live on NVMe, and the trainer
** allocates nothing beyond the plan's arenas while it trains.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train.h"

/* ---------------------------------------------------------------------- chunked state I/O */
static int64_t chunk_floats(void)
{
    int64_t n = T.acts_floats / 2;
    return n > 4096 ? n / 1024 * 1024 : n;
}

/* Fills part (0 master, 1 m, 2 v) of opt-shard elements [lo, lo+n) of the state. */
void tr_state_load(TrFill *fill, void *ctx)
{
    int64_t chunk = chunk_floats();
    float *buf = T.acts;
    void *wbuf = T.acts + chunk;
    for (int part = 0; part < 3; part++) {
        float *mem = part == 0 ? (T.master ? T.master : NULL) : part == 1 ? T.adam_m : T.adam_v;
        int64_t nv = part == 0 ? T.master_nvme : part == 1 ? T.adam_m_nvme : T.adam_v_nvme;
        for (int64_t lo = 0; lo < T.opt_numel; lo += chunk) {
            int64_t n = T.opt_numel - lo < chunk ? T.opt_numel - lo : chunk;
            fill(part, lo, n, buf, ctx);
            if (mem) memcpy(mem + lo, buf, (size_t)n * 4);
            else if (nv >= 0) tr_nvme_rw(1, buf, n * 4, nv + lo * 4);
            if (part != 0) continue;
            /* the working copy: rounded (or copied) from the master */
            if (ZG_STAGE == 3 && !T.params_shard) {
                tr_f32_to_w(wbuf, buf, n);
                tr_nvme_rw(1, wbuf, n * ZG_DTYPE_SIZE, T.params_shard_nvme + lo * ZG_DTYPE_SIZE);
            } else {
                void *home = ZG_STAGE == 3 ? tr_w_at(T.params_shard, lo)
                                           : tr_w_at(T.params16, T.opt_flat0 + lo);
                tr_f32_to_w(home, buf, n);
            }
        }
    }
    /* the rest of the working copy comes from the other ranks */
    tr_params_gather();
}

void tr_state_store(TrSink *sink, void *ctx)
{
    int64_t chunk = chunk_floats();
    float *buf = T.acts;
    for (int part = 0; part < 3; part++) {
        int64_t nv = part == 0 ? T.master_nvme : part == 1 ? T.adam_m_nvme : T.adam_v_nvme;
        if (part == 0 && nv < 0 && !tr_opt_state_at(0, 0)) nv = T.params_shard_nvme;  /* fp32 */
        for (int64_t lo = 0; lo < T.opt_numel; lo += chunk) {
            int64_t n = T.opt_numel - lo < chunk ? T.opt_numel - lo : chunk;
            if (nv >= 0) tr_nvme_rw(0, buf, n * 4, nv + lo * 4);
            else memcpy(buf, tr_opt_state_at(part, lo), (size_t)n * 4);
            sink(part, lo, n, buf, ctx);
        }
    }
}

/* ---------------------------------------------------------------------- init */
/* Master values of opt-shard elements [lo, lo+n): each tensor's piece from the RNG or the file,
** zeros in padding. */
static void fill_master(int64_t lo, int64_t n, float *dst, const ZrSt *st)
{
    memset(dst, 0, (size_t)n * 4);
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        int64_t a = T.t[t].opt_lo > lo ? T.t[t].opt_lo : lo;
        int64_t b = T.t[t].opt_hi < lo + n ? T.t[t].opt_hi : lo + n;
        int64_t first = T.t[t].opt_src + (a - T.t[t].opt_lo);
        if (first + (b - a) > r->numel) b = a + (r->numel - first);   /* stage 3 slice padding */
        if (b <= a) continue;
        if (st) {
            int idx = zr_st_find(st, r->name);
            if (idx < 0 || zr_st_read_range(st, idx, first, b - a, dst + (a - lo)) < 0)
                tr_die("--init-from %s: %s", st->path, zr_train_error());
        } else {
            ZR_CHECK(zr_rng_init_slice(r, (uint32_t)t, ZG_SEED, ZG_N_LAYERS, first, b - a,
                                       dst + (a - lo)));
        }
    }
}

static void init_fill(int part, int64_t lo, int64_t n, float *dst, void *ctx)
{
    if (part == 0) fill_master(lo, n, dst, ctx);
    else memset(dst, 0, (size_t)n * 4);
}

/* The expected-tensor table for safetensors, Hugging Face shapes. */
static void st_table(ZrStTensor *want)
{
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        memset(&want[t], 0, sizeof want[t]);
        want[t].name = r->name;
        want[t].ndim = r->ndim;
        want[t].shape[0] = r->shape[0];
        want[t].shape[1] = r->shape[1];
    }
}

void tr_params_init(void)
{
    if (T.a.init_from) {
        ZrSt st;
        ZrStTensor want[ZG_N_TENSORS];
        st_table(want);
        if (zr_st_open(&st, T.a.init_from) < 0 || zr_st_check(&st, want, ZG_N_TENSORS, 1) < 0)
            tr_die("--init-from: %s", zr_train_error());
        tr_state_load(init_fill, &st);
        zr_st_close(&st);
    } else {
        tr_state_load(init_fill, NULL);
    }
}

/* ---------------------------------------------------------------------- gathered copies */
/* Every rank passes its owned opt shard (opt_numel fp32); rank 0 gets the model's tensors back to
** back at flat_offset (flat_numel floats, malloc'd), the others NULL. Export-time memory only. */
static float *gather_model(const float *shard)
{
    float *all = NULL, *out = NULL;
    if (ZG_STAGE == 0) {
        all = (float *)shard;
    } else {
        all = malloc((size_t)T.ws * T.opt_numel * 4);
        if (!all) tr_die("out of memory gathering %lld floats", (long long)(T.ws * T.opt_numel));
        ZR_CHECK(zr_all_gather(T.comm, shard, all, T.opt_numel, ZR_DT_FP32, NULL));
    }
    if (T.rank == 0) {
        out = malloc((size_t)ZG_FLAT_NUMEL * 4 + 4);
        if (!out) tr_die("out of memory for the gathered model");
        for (int t = 0; t < ZG_N_TENSORS; t++) {
            const ZrTensorRow *r = &zg_tensors[t];
            float *dst = out + r->flat_offset;
            if (ZG_STAGE < 3) { memcpy(dst, all + r->flat_offset, (size_t)r->numel * 4); continue; }
            for (int k = 0; k < T.ws; k++) {
                int64_t lo = k * r->part_numel, n = r->numel - lo;
                if (n > r->part_numel) n = r->part_numel;
                if (n > 0) memcpy(dst + lo, all + (int64_t)k * T.opt_numel + r->shard_offset,
                                  (size_t)n * 4);
            }
        }
    }
    if (all != shard) free(all);
    return out;
}

static void write_model(const char *path, const float *flat)
{
    ZrStTensor t[ZG_N_TENSORS];
    st_table(t);
    for (int i = 0; i < ZG_N_TENSORS; i++) t[i].data = flat + zg_tensors[i].flat_offset;
    const char *meta[] = {"format", "pt", "generator", "zgen " ZG_NAME, NULL};
    if (zr_st_write(path, t, ZG_N_TENSORS, meta) < 0) tr_die("%s: %s", path, zr_train_error());
}

static void collect_master(int part, int64_t lo, int64_t n, const float *src, void *ctx)
{
    if (part == 0) memcpy((float *)ctx + lo, src, (size_t)n * 4);
}

/* mkdir -p of the directory part of path */
static void make_parent(const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') { *c = 0; mkdir(p, 0755); *c = '/'; }
}

void tr_export(const char *path)
{
    float *shard = malloc((size_t)T.opt_numel * 4 + 4);
    if (!shard) tr_die("out of memory for the export");
    tr_state_store(collect_master, shard);
    float *flat = gather_model(shard);
    if (T.rank == 0) {
        make_parent(path);
        write_model(path, flat);
#if ZG_ARCH_GPT2
        /* GPT-2's config.json beside the weights. Other archs get the weights only (Hugging Face
        ** names and layouts): writing their config.json (e.g. LlamaConfig) is the arch-aware
        ** export's job, not done here, so no wrong GPT-2 config is written for them. */
        char cfg[1100];
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        snprintf(cfg, sizeof cfg, "%.*s/config.json", dl, slash ? path : ".");
        ZrGpt2Config c = {ZG_VOCAB_SIZE, ZG_CONTEXT, ZG_D_MODEL, ZG_N_LAYERS, ZG_N_HEADS, ZG_D_FF,
                          ZG_NORM_EPS, ZG_TIE_EMBEDDINGS};
        if (zr_st_write_gpt2_config(cfg, &c) < 0) tr_die("%s: %s", cfg, zr_train_error());
#endif
    }
    free(flat);
    free(shard);
}

void tr_dump_grads(const char *path)
{
    float *shard = malloc((size_t)T.opt_numel * 4 + 4);
    if (!shard) tr_die("out of memory for --dump-grads");
    tr_opt_shard_grads(shard);
    for (int64_t i = 0; i < T.opt_numel; i++) shard[i] = (float)(shard[i] / T.loss_scale);  /* fp16 */
    float *flat = gather_model(shard);
    if (T.rank == 0) { make_parent(path); write_model(path, flat); }
    free(flat);
    free(shard);
}
