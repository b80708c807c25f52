/*
** train_params.c — parameters in and out: docs/SPEC.md's random init (counter-based, so each rank
** generates only what it owns and every world size and stage gets the same weights), --init-from
** (safetensors, the arch's Hugging Face names), --export (gathered from the shards, + config.json) and
** the --dump-grads debug output that the parity test compares with PyTorch. --init-from also
** takes a Hugging Face model folder and --export writes one (runtime/zr_st_hf.c); the config.json
** keys come from the plan (zg_hf_config), so this file never asks which arch it trains.
**
** The optimizer state (master, m, v) and the working copy are written chunk by chunk through the
** host activations (T.acts), which are free outside a micro-step: the state may live on NVMe, and
** the trainer allocates nothing beyond the plan's arenas and that buffer while it trains.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train.h"
#include "train_hf.h"     /* defines: tr_hf_extra, tr_hf_check (the export's ids, generation config, tokenizer) */

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
    static const int in_mem[3] = {ZG_HAS_MASTER, ZG_HAS_ADAM_M, ZG_HAS_ADAM_V};
    static const int on_nvme[3] = {ZG_ON_NVME_MASTER, ZG_ON_NVME_ADAM_M, ZG_ON_NVME_ADAM_V};
    for (int part = 0; part < 3; part++) {
        int64_t nv = part == 0 ? T.master_nvme : part == 1 ? T.adam_m_nvme : T.adam_v_nvme;
        for (int64_t lo = 0; lo < T.opt_numel; lo += chunk) {
            int64_t n = T.opt_numel - lo < chunk ? T.opt_numel - lo : chunk;
            fill(part, lo, n, buf, ctx);
            if (in_mem[part]) tr_opt_state_copy(part, lo, n, buf, 1);
            else if (on_nvme[part]) tr_nvme_rw(1, buf, n * 4, nv + lo * 4);
            if (part != 0) continue;
            /* the working copy: rounded (or copied) from the master */
            if (ZG_HAS_PARAMS16 || ZG_HAS_PARAMS_SHARD) {
                void *home = ZG_HAS_PARAMS16 ? tr_w_at(T.params16, T.opt_flat0 + lo) : tr_w_at(T.params_shard, lo);
                tr_f32_to_w(home, buf, n);
            } else {                  /* the shard lives on NVMe */
                tr_f32_to_w(wbuf, buf, n);
                tr_nvme_rw_param(1, wbuf, n * ZG_DTYPE_SIZE, T.params_shard_nvme + lo * ZG_DTYPE_SIZE);
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
            else tr_opt_state_copy(part, lo, n, buf, 0);
            sink(part, lo, n, buf, ctx);
        }
    }
}

/* ---------------------------------------------------------------------- init */
/* --init-from: the opened file or folder and, per model tensor, the file and entry holding it. */
typedef struct InitSrc {
    ZrStModel m;
    int file[ZG_N_TENSORS], idx[ZG_N_TENSORS];
} InitSrc;

/* Master values of opt-shard elements [lo, lo+n): each tensor's piece from the RNG or the file,
** zeros in padding. Only the owned ranges are read (zr_st_read_range: pread, no read-ahead). */
static void fill_master(int64_t lo, int64_t n, float *dst, const InitSrc *src)
{
    memset(dst, 0, (size_t)n * 4);
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        int64_t a = T.t[t].opt_lo > lo ? T.t[t].opt_lo : lo;
        int64_t b = T.t[t].opt_hi < lo + n ? T.t[t].opt_hi : lo + n;
        int64_t first = T.t[t].opt_src + (a - T.t[t].opt_lo);
        if (first + (b - a) > r->numel) b = a + (r->numel - first);   /* stage 3 slice padding */
        if (b <= a) continue;
        if (src) {
            const ZrSt *st = &src->m.f[src->file[t]];
            if (zr_st_read_range(st, src->idx[t], first, b - a, dst + (a - lo)) < 0)
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

/* --init-from takes a .safetensors file or a Hugging Face folder (docs/TRAINER_FORMATS.md): the
** folder's config.json must agree with the plan's (zg_hf_config), every tensor must be there with
** its shape, and anything else in the files is an error unless zg_hf_ignore names it. */
void tr_params_init(void)
{
    if (T.a.init_from) {
        InitSrc *src = calloc(1, sizeof *src);
        ZrStTensor want[ZG_N_TENSORS];
        if (!src) tr_die("out of memory for --init-from");
        st_table(want);
        if (zr_st_model_open(&src->m, T.a.init_from) < 0) tr_die("--init-from: %s", zr_train_error());
        if (src->m.config[0] && zr_st_hf_config_check(src->m.config, zg_hf_config, ZG_N_HF_CONFIG) < 0)
            tr_die("--init-from: %s", zr_train_error());
        if (zr_st_model_check(&src->m, want, ZG_N_TENSORS, zg_hf_ignore, ZG_N_HF_IGNORE) < 0)
            tr_die("--init-from: %s", zr_train_error());
        for (int t = 0; t < ZG_N_TENSORS; t++)
            if (zr_st_model_find(&src->m, zg_tensors[t].name, &src->file[t], &src->idx[t]) != 0)
                tr_die("--init-from %s: no %s", T.a.init_from, zg_tensors[t].name);
        tr_hf_check();                /* a bad --tokenizer fails now, not after the training */
        tr_state_load(init_fill, src);
        zr_st_model_close(&src->m);
        free(src);
    } else {
        tr_hf_check();
        tr_state_load(init_fill, NULL);
    }
}

/* ---------------------------------------------------------------------- gathered copies */
/* Every rank passes its owned opt shard (opt_numel fp32); rank 0 gets the model's tensors back to
** back at flat_offset (flat_numel floats, malloc'd), the others NULL. Export-time memory only. */
static float *gather_model(const float *shard)
{
    float *all = NULL, *out = NULL;
    if (ZG_OPT_REPLICATED) {          /* every rank's shard is the whole model already */
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
            if (r->part_numel == 0) { memcpy(dst, all + r->flat_offset, (size_t)r->numel * 4); continue; }
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

static const char *const st_meta[] = {"format", "pt", "generator", "zgen " ZG_NAME, NULL};

/* The gathered model as safetensors rows over flat. */
static void model_rows(ZrStTensor *t, const float *flat)
{
    st_table(t);
    for (int i = 0; i < ZG_N_TENSORS; i++) t[i].data = flat + zg_tensors[i].flat_offset;
}

static void write_model(const char *path, const float *flat)
{
    ZrStTensor t[ZG_N_TENSORS];
    model_rows(t, flat);
    if (zr_st_write(path, t, ZG_N_TENSORS, st_meta) < 0) tr_die("%s: %s", path, zr_train_error());
}

static void collect_master(int part, int64_t lo, int64_t n, const float *src, void *ctx)
{
    if (part == 0) memcpy((float *)ctx + lo, src, (size_t)n * 4);
}

/* mkdir -p of the directory part of path */
static void make_parent(const char *path)
{
    char p[1200];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') { *c = 0; mkdir(p, 0755); *c = '/'; }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

const char *tr_export_dtype_arg(const char *v)
{
    if (strcmp(v, "fp32") && strcmp(v, "bf16")) {
        fprintf(stderr, "train: error: --export-dtype %s: expected fp32 or bf16\n", v);
        exit(2);
    }
    return v;
}

int64_t tr_size_arg(const char *flag, const char *v)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    char *end;
    double x = strtod(v, &end);
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (end != v && x > 0 && !strcmp(end, units[k].suffix) && x * units[k].mult < 9e18)
            return (int64_t)(x * units[k].mult);
    fprintf(stderr, "train: error: %s %s: expected a positive size in bytes, e.g. 5GB, 500MB, 2GiB or "
            "1000000\n", flag, v);
    exit(2);
}

/* --export PATH: PATH.safetensors is one file with config.json beside it; any other PATH is a
** Hugging Face folder (config.json, model.safetensors or shards above --export-shard-size with their
** index, generation_config.json and the tokenizer's files: a folder from_pretrained loads whole).
** The config.json rows are the plan's (zg_hf_config): nothing here depends on the arch; the token
** ids and the rest come from tr_hf_extra. */
void tr_export(const char *path)
{
    ZrHfExtra x;
    char why[1200];
    int late = 0;
    if (T.rank == 0) late = tr_hf_extra(&x, why, sizeof why) < 0;
    float *shard = malloc((size_t)T.opt_numel * 4 + 4);
    if (!shard) tr_die("out of memory for the export");
    tr_state_store(collect_master, shard);
    float *flat = gather_model(shard);
    if (T.rank == 0) {
        int bf16 = T.a.export_dtype && !strcmp(T.a.export_dtype, "bf16");
        int dt = bf16 ? ZR_DT_BF16 : ZR_DT_FP32;
        int folder = !ends_with(path, ".safetensors");
        const char *torch_dtype = bf16 ? "bfloat16" : "float32";
        ZrStTensor t[ZG_N_TENSORS];
        char cfg[1100];
        struct stat sb;
        model_rows(t, flat);
        if (!folder) {
            const char *slash = strrchr(path, '/');
            make_parent(path);
            if (zr_st_write_dtype(path, t, ZG_N_TENSORS, dt, st_meta) < 0)
                tr_die("--export %s: %s", path, zr_train_error());
            snprintf(cfg, sizeof cfg, "%.*s/config.json", slash ? (int)(slash - path) : 1, slash ? path : ".");
        } else {
            snprintf(cfg, sizeof cfg, "%s/", path);
            make_parent(cfg);
            if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
                tr_die("--export %s: cannot make this folder (HINT: a path ending in .safetensors writes "
                       "one file; any other path names a folder)", path);
            if (zr_st_write_model(path, t, ZG_N_TENSORS, dt, (uint64_t)T.a.export_shard_bytes, st_meta) < 0)
                tr_die("--export %s: %s", path, zr_train_error());
            snprintf(cfg, sizeof cfg, "%s/config.json", path);
        }
        if (zr_hf_extra_config_write(cfg, zg_hf_config, ZG_N_HF_CONFIG, torch_dtype, &x) < 0)
            tr_die("%s: %s", cfg, zr_train_error());
        /* the sources were checked at startup; one that went bad since must not cost the weights,
        ** which are written by now */
        if (late)
            tr_die("--export %s: the weights and config.json are written, the rest is not: %s", path, why);
        if (folder && zr_hf_extra_write(&x, path) < 0) tr_die("--export %s: %s", path, zr_train_error());
        if (folder && !x.n_tok) {
            char note[2400];
            zr_hf_extra_note(&x, path, note, sizeof note);
            fprintf(stderr, "train: note: --export %s\n", note);
        } else if (!folder && T.a.tokenizer && !T.a.quiet) {
            fprintf(stderr, "train: note: --export %s is one file: the tokenizer of --tokenizer %s goes "
                    "only into a folder export (--export DIR)\n", path, T.a.tokenizer);
        }
        zr_hf_extra_free(&x);
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
