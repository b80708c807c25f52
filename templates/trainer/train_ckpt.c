/*
** train_ckpt.c — --save / --resume through libzrt's checkpoints (runtime/zr_ckpt.h). Each rank writes
** its shard: blob "index" (the model's tensor table and, per tensor, which elements this rank's
** optimizer shard holds and where), "state" (steps done, steps applied: the LR schedule and the
** batch position follow from them), "scaler", then "master", "adam_m", "adam_v" of its optimizer
** shard, streamed in chunks since they may live on NVMe. Rank 0 writes the manifest after a barrier.
**
** Resume reads the checkpoint as a whole (zr_ckpt_set): any world size, stage, offload, bucket
** sizes or working dtype, as long as the model's tensors (names, shapes) are the same. Each rank
** asks for exactly the tensor elements its own optimizer shard holds under this plan and gets them
** by pread from the shards that hold them; the working parameters are rebuilt from the master as
** the optimizer writes them (rounded to the working dtype). At the same plan this restores every
** bit, so a resumed run continues bit for bit; at another plan, later sums run in another reduction
** order (docs/TRAINER.md).
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"
#include "train_hf.h"     /* defines: tr_hf_extra (the export's ids, generation config, tokenizer) */

/* the meta of format-1 checkpoints (no tensor index): those load only into the very same plan */
#define META_V1 "{\"name\":\"" ZG_NAME "\",\"stage\":%d,\"world\":%d,\"dtype\":\"" ZG_DTYPE_NAME \
                "\",\"params\":%lld}"

static const char *const part_name[3] = {"master", "adam_m", "adam_v"};
static const char *const offload_name[3] = {"none", "cpu", "nvme"};

/* The --resume checkpoint's meta: a resumed run without --init-from still exports the ids,
** generation defaults and tokenizer of the model the first run started from. */
static char *resumed_meta;

int tr_hf_extra(ZrHfExtra *x, char *why, size_t cap)
{
    const int tok[ZR_HF_NIDS] = {T.tok.bos, T.tok.eos, T.tok.pad};
    const char *flag = NULL;
    zr_hf_extra_init(x);
    zr_hf_extra_set_tokens(x, tok);
    if (T.a.tokenizer && zr_hf_extra_add_tokenizer(x, T.a.tokenizer) < 0) flag = "--tokenizer";
    else if (T.a.init_from && zr_hf_extra_add_folder(x, T.a.init_from) < 0) flag = "--init-from";
    else if (resumed_meta && zr_hf_extra_add_meta(x, resumed_meta) < 0) flag = "--resume";
    if (flag) snprintf(why, cap, "%s: %s", flag, zr_train_error());
    return flag ? -1 : 0;
}

void tr_hf_check(void)
{
    ZrHfExtra x;
    char why[1200];
    if (T.rank != 0) return;         /* only rank 0 writes the export; the files need only be there */
    int rc = tr_hf_extra(&x, why, sizeof why);
    zr_hf_extra_free(&x);
    if (rc) tr_die("%s", why);
}

/* What the manifest says about the run: the plan (informative on resume), the model's
** hyperparameters, the model's Hugging Face config.json keys (the rows zgen emitted), from
** which `zgen ckpt --export` writes config.json for any arch, and "hf_extra": the export's token
** ids, generation defaults and tokenizer folder (zr_hf_extra_meta), so that `zgen ckpt --export`
** writes what this run's --export would. Returns malloc'd text. */
static char *make_meta(void)
{
    ZrHfExtra x;
    char why[1200];
    /* a source that went bad during the run (checked at startup) must not cost the checkpoint */
    if (tr_hf_extra(&x, why, sizeof why) < 0)
        fprintf(stderr, "train: warning: --save records no full tokenizer information: %s\n", why);
    char *extra = zr_hf_extra_meta(&x);
    zr_hf_extra_free(&x);
    if (!extra) tr_die("out of memory for the checkpoint's manifest");
    size_t cap = 1024 + strlen(extra), len;
    for (int r = 0; r < ZG_N_HF_CONFIG; r++)
        if (zg_hf_config[r].write) cap += strlen(zg_hf_config[r].key) + strlen(zg_hf_config[r].value) + 8;
    char *out = malloc(cap);
    if (!out) tr_die("out of memory for the checkpoint's manifest");
    /* the stage number: the manifest records the stage that wrote it for people and `zgen ckpt --info`; the
    ** loader reads the tensor index, never this field, so no table can stand in for the label */
    len = (size_t)snprintf(out, cap, "{\"name\":\"%s\",\"stage\":%d,\"world\":%d,\"dtype\":\"%s\",\"params\":%lld,"
             "\"offload_optimizer\":\"%s\",\"offload_param\":\"%s\",\"arch\":\"%s\",\"vocab_size\":%d,"
             "\"context\":%d,\"d_model\":%d,\"n_layers\":%d,\"n_heads\":%d,\"d_ff\":%d,\"norm_eps\":%.9g,"
             "\"tie_embeddings\":%d,\"hf_config\":{", ZG_NAME, ZG_STAGE, T.ws, ZG_DTYPE_NAME, (long long)ZG_N_PARAMS,
             offload_name[ZG_OFFLOAD_OPTIMIZER], offload_name[ZG_OFFLOAD_PARAM], ZG_ARCH,
             (int)ZG_VOCAB_SIZE, (int)ZG_CONTEXT, (int)ZG_D_MODEL, (int)ZG_N_LAYERS, (int)ZG_N_HEADS,
             (int)ZG_D_FF, (double)ZG_NORM_EPS, (int)ZG_TIE_EMBEDDINGS);
    const char *sep = "";
    for (int r = 0; r < ZG_N_HF_CONFIG; r++) {
        if (!zg_hf_config[r].write) continue;
        len += (size_t)snprintf(out + len, cap - len, "%s\"%s\":%s", sep, zg_hf_config[r].key,
                                zg_hf_config[r].value);
        sep = ",";
    }
    snprintf(out + len, cap - len, "},\"hf_extra\":%s}", extra);
    free(extra);
    return out;
}

/* Tensor elements [*first, *first + *n) that opt-shard elements [lo, lo+n) hold of tensor t, at
** opt-shard element *at; 0 when none (stage-3 slice padding holds none). */
static int tensor_part(int t, int64_t lo, int64_t n, int64_t *first, int64_t *cnt, int64_t *at)
{
    int64_t a = T.t[t].opt_lo > lo ? T.t[t].opt_lo : lo;
    int64_t b = T.t[t].opt_hi < lo + n ? T.t[t].opt_hi : lo + n;
    *first = T.t[t].opt_src + (a - T.t[t].opt_lo);
    if (*first + (b - a) > zg_tensors[t].numel) b = a + (zg_tensors[t].numel - *first);
    *cnt = b - a;
    *at = a;
    return b > a;
}

/* ---------------------------------------------------------------------- save */
typedef struct SaveCtx {
    ZrCkptWriter *w;
    int part;
    const char *dir;
} SaveCtx;

/* A failed write (disk full, file-size limit) removes this rank's partial shard, so the directory
** keeps only whole checkpoints, and says which file and why; `latest` still names the last one. */
static void save_check(SaveCtx *c, int rc)
{
    if (rc >= 0) return;
    char why[512];
    snprintf(why, sizeof why, "%s", zr_train_error());
    zr_ckpt_writer_abort(c->w);
    c->w = NULL;
    tr_die("--save %s: checkpoint of step %lld not written: %s (%s).\n---> HINT: free space (or raise "
           "`ulimit -f`) where --save points, or save elsewhere; the previous checkpoint in %s, if "
           "any, is intact and --resume %s loads it", c->dir, (long long)T.step, why,
           rc == -ENOSPC ? "ENOSPC" : rc == -EFBIG ? "EFBIG" : strerror(-rc), c->dir, c->dir);
}

static void save_sink(int part, int64_t lo, int64_t n, const float *src, void *ctx)
{
    SaveCtx *c = ctx;
    if (part != c->part) {
        if (c->part >= 0) save_check(c, zr_ckpt_blob_end(c->w));
        save_check(c, zr_ckpt_blob_begin(c->w, part_name[part]));
        c->part = part;
    }
    (void)lo;
    save_check(c, zr_ckpt_blob_write(c->w, src, (size_t)n * 4));
}

static void save_index(SaveCtx *c)
{
    static ZrCkptTensor tt[ZG_N_TENSORS];
    static ZrCkptRange rr[ZG_N_TENSORS];
    int nr = 0;
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        const ZrTensorRow *r = &zg_tensors[t];
        memset(&tt[t], 0, sizeof tt[t]);
        snprintf(tt[t].name, sizeof tt[t].name, "%s", r->name);
        tt[t].ndim = r->ndim;
        tt[t].shape[0] = r->shape[0];
        tt[t].shape[1] = r->ndim > 1 ? r->shape[1] : 0;
        tt[t].numel = r->numel;
        int64_t first, n, at;
        if (tensor_part(t, 0, T.opt_numel, &first, &n, &at))
            rr[nr++] = (ZrCkptRange){t, first, n, at};
    }
    save_check(c, zr_ckpt_add_index(c->w, tt, ZG_N_TENSORS, rr, nr, 4));
}

void tr_ckpt_save(const char *dir)
{
    double t0 = tr_now();
    SaveCtx c = {NULL, -1, dir};
    if (zr_ckpt_writer_begin(&c.w, dir, T.step, T.rank, T.ws) < 0)
        tr_die("--save %s: %s", dir, zr_train_error());
    save_index(&c);
    int64_t state[2] = {T.step, T.applied};
    save_check(&c, zr_ckpt_add(c.w, "state", state, sizeof state));
    uint8_t sc[ZR_SCALER_STATE_BYTES];
    zr_scaler_save(&T.scaler, sc);
    save_check(&c, zr_ckpt_add(c.w, "scaler", sc, sizeof sc));
    tr_state_store(save_sink, &c);
    save_check(&c, zr_ckpt_blob_end(c.w));
    ZrCkptWriter *w = c.w;
    c.w = NULL;                                  /* commit frees the writer, on error too */
    save_check(&c, zr_ckpt_writer_commit(w));
    ZR_CHECK(zr_barrier(T.comm, NULL));
    if (T.rank == 0) {
        char *meta = make_meta();
        int rc = zr_ckpt_finish(dir, T.step, T.ws, meta);
        free(meta);
        save_check(&c, rc);
    }
    ZR_CHECK(zr_barrier(T.comm, NULL));
    tr_span(ZR_TRACK_IO, "checkpoint", t0);
    if (T.rank == 0 && !T.a.quiet) fprintf(stderr, "saved %s (step %lld)\n", dir, (long long)T.step);
}

/* ---------------------------------------------------------------------- resume */
typedef struct LoadCtx {
    ZrCkptSet *s;
    const char *dir;
} LoadCtx;

static void load_fill(int part, int64_t lo, int64_t n, float *dst, void *ctx)
{
    LoadCtx *c = ctx;
    memset(dst, 0, (size_t)n * 4);               /* padding: zero, as the optimizer keeps it */
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        int64_t first, cnt, at;
        if (!tensor_part(t, lo, n, &first, &cnt, &at)) continue;
        if (zr_ckpt_set_read(c->s, part_name[part], t, first, cnt, dst + (at - lo), T.rank) < 0)
            tr_die("--resume %s: %s", c->dir, zr_train_error());
    }
}

/* The model must be the same: names and shapes of every tensor, in order; the first difference
** is named. */
static void check_model(const LoadCtx *c, const ZrCkptTensor *ct, int nt)
{
    for (int t = 0; t < ZG_N_TENSORS || t < nt; t++) {
        const ZrTensorRow *r = t < ZG_N_TENSORS ? &zg_tensors[t] : NULL;
        char mine[160] = "nothing", theirs[160] = "nothing";
        if (r) snprintf(mine, sizeof mine, "%s [%lld%s%.0lld]", r->name, (long long)r->shape[0],
                        r->ndim > 1 ? ", " : "", r->ndim > 1 ? (long long)r->shape[1] : 0LL);
        if (t < nt) snprintf(theirs, sizeof theirs, "%s [%lld%s%.0lld]", ct[t].name, (long long)ct[t].shape[0],
                             ct[t].ndim > 1 ? ", " : "", ct[t].ndim > 1 ? (long long)ct[t].shape[1] : 0LL);
        if (!strcmp(mine, theirs)) continue;
        tr_die("--resume %s: the checkpoint holds another model: tensor %d is %s there and %s in this "
               "trainer (%s).\n---> HINT: resume with a trainer generated from the same model spec; "
               "world size, stage, offload, buckets and dtype may differ", c->dir, t, theirs, mine,
               ZG_SPEC);
    }
}

static void load_fill_v1(int part, int64_t lo, int64_t n, float *dst, void *ctx)
{
    if (zr_ckpt_get_range(ctx, part_name[part], (size_t)lo * 4, dst, (size_t)n * 4) < 0)
        tr_die("--resume: %s", zr_train_error());
}

/* Format 1 (no tensor index): only the very plan that wrote it, as before. */
static void load_v1(const char *dir)
{
    ZrCkptReader *r;
    if (zr_ckpt_open(&r, dir, -1, T.rank, T.ws) < 0) tr_die("--resume: %s", zr_train_error());
    char meta[256];
    /* the stage number: format 1 identified its plan by this text, stage number included; to match it the
    ** trainer must print the same number (the tables do not carry the label) */
    snprintf(meta, sizeof meta, META_V1, ZG_STAGE, T.ws, (long long)ZG_N_PARAMS);
    if (strcmp(zr_ckpt_meta(r), meta) != 0)
        tr_die("--resume %s: a format-1 checkpoint (no tensor index, written by an older zgen) loads only "
               "into the plan that wrote it (%s; this trainer is %s).\n---> HINT: resume it once with "
               "that plan and --save again: the new checkpoint loads into any plan", dir,
               zr_ckpt_meta(r), meta);
    int64_t state[2];
    uint8_t sc[ZR_SCALER_STATE_BYTES];
    if (zr_ckpt_get(r, "state", state, sizeof state) < 0 || zr_ckpt_get(r, "scaler", sc, sizeof sc) < 0 ||
        zr_scaler_load(&T.scaler, sc) < 0)
        tr_die("--resume: %s", zr_train_error());
    T.step = state[0];
    T.applied = state[1];
    tr_state_load(load_fill_v1, r);
    zr_ckpt_close(r);
}

/* The saving run's dtype, from the manifest's meta ("" when absent). */
static void meta_str(const char *meta, const char *key, char *out, size_t cap)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":\"", key);
    const char *p = strstr(meta, k);
    out[0] = 0;
    if (!p) return;
    p += strlen(k);
    size_t n = 0;
    while (p[n] && p[n] != '"' && n + 1 < cap) n++;
    memcpy(out, p, n);
    out[n] = 0;
}

void tr_ckpt_load(const char *dir)
{
    LoadCtx c = {NULL, dir};
    if (zr_ckpt_set_open(&c.s, dir, -1) < 0) tr_die("--resume: %s", zr_train_error());
    if (!(resumed_meta = strdup(zr_ckpt_set_meta(c.s)))) tr_die("out of memory");
    tr_hf_check();                    /* a bad --tokenizer fails now, not after the training */
    int nt;
    const ZrCkptTensor *ct = zr_ckpt_set_tensors(c.s, &nt);
    if (!ct) {
        zr_ckpt_set_close(c.s);
        load_v1(dir);
        return;
    }
    check_model(&c, ct, nt);
    int from = T.rank % zr_ckpt_set_world(c.s);
    int64_t state[2];
    uint8_t sc[ZR_SCALER_STATE_BYTES];
    if (zr_ckpt_set_get(c.s, from, "state", state, sizeof state) < 0 ||
        zr_ckpt_set_get(c.s, from, "scaler", sc, sizeof sc) < 0)
        tr_die("--resume %s: %s", dir, zr_train_error());
    /* the loss scale carries over between fp16 runs; from a bf16/fp32 run an fp16 run starts with
    ** the configured initial scale, and a run without fp16 does not use the scaler */
    char dtype[16];
    meta_str(zr_ckpt_set_meta(c.s), "dtype", dtype, sizeof dtype);
    if (!ZG_FP16 || !strcmp(dtype, "fp16")) {
        ZrScaler keep = T.scaler;
        if (zr_scaler_load(&T.scaler, sc) < 0) {
            if (ZG_FP16) tr_die("--resume %s: %s", dir, zr_train_error());
            T.scaler = keep;
        }
    }
    T.step = state[0];
    T.applied = state[1];
    tr_state_load(load_fill, &c);

    /* what each rank read, beside the state it holds and the whole model's: the point of reading
    ** by ranges is that a rank reads about its own share */
    int64_t mine[2] = {(int64_t)zr_ckpt_set_bytes_read(c.s), T.opt_numel * 12};
    int64_t *all = malloc((size_t)T.ws * sizeof mine);
    if (!all) tr_die("out of memory");
    ZR_CHECK(zr_all_gather(T.comm, mine, all, 4, ZR_DT_FP32, NULL));   /* 16 bytes, bit copies */
    if (T.rank == 0 && !T.a.quiet) {
        char stage[16];
        meta_str(zr_ckpt_set_meta(c.s), "offload_optimizer", stage, sizeof stage);
        fprintf(stderr, "resumed %s at step %lld (saved by %d ranks, %s, optimizer offload %s); "
                "checkpoint bytes read per rank:", zr_ckpt_set_dir(c.s), (long long)T.step,
                zr_ckpt_set_world(c.s), dtype, stage[0] ? stage : "?");
        for (int r = 0; r < T.ws; r++) fprintf(stderr, " %lld", (long long)all[2 * r]);
        fprintf(stderr, "; optimizer state per rank %lld bytes, whole model %lld\n", (long long)all[1],
                (long long)ZG_FLAT_NUMEL * 12);
    }
    free(all);
    zr_ckpt_set_close(c.s);
}
