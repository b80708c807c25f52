/*
** train_ckpt.c — --save / --resume through libzrt's checkpoints (runtime/zr_ckpt.h): each rank writes
** its shard (blobs "master", "adam_m", "adam_v" of its optimizer shard, streamed in chunks since they
** may live on NVMe, plus "state" and "scaler"), rank 0 writes the manifest with checksums after a
** barrier. Resume needs the same world size and plan (the manifest's meta names them); the working
** parameters are rebuilt from the master exactly as the optimizer writes them (rounding to the
** working dtype), so a resumed run continues bit for bit.
*/
#include <errno.h>
#include <string.h>

#include "train.h"

#define META "{\"name\":\"" ZG_NAME "\",\"stage\":%d,\"world\":%d,\"dtype\":\"" ZG_DTYPE_NAME \
             "\",\"params\":%lld}"

static const char *const part_name[3] = {"master", "adam_m", "adam_v"};

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

void tr_ckpt_save(const char *dir)
{
    double t0 = tr_now();
    SaveCtx c = {NULL, -1, dir};
    if (zr_ckpt_writer_begin(&c.w, dir, T.step, T.rank, T.ws) < 0)
        tr_die("--save %s: %s", dir, zr_train_error());
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
        char meta[256];
        snprintf(meta, sizeof meta, META, ZG_STAGE, T.ws, (long long)ZG_N_PARAMS);
        save_check(&c, zr_ckpt_finish(dir, T.step, T.ws, meta));
    }
    ZR_CHECK(zr_barrier(T.comm, NULL));
    tr_span(ZR_TRACK_IO, "checkpoint", t0);
    if (T.rank == 0 && !T.a.quiet) fprintf(stderr, "saved %s (step %lld)\n", dir, (long long)T.step);
}

static void load_fill(int part, int64_t lo, int64_t n, float *dst, void *ctx)
{
    if (zr_ckpt_get_range(ctx, part_name[part], (size_t)lo * 4, dst, (size_t)n * 4) < 0)
        tr_die("--resume: %s", zr_train_error());
}

void tr_ckpt_load(const char *dir)
{
    ZrCkptReader *r;
    if (zr_ckpt_open(&r, dir, -1, T.rank, T.ws) < 0) tr_die("--resume: %s", zr_train_error());
    char meta[256];
    snprintf(meta, sizeof meta, META, ZG_STAGE, T.ws, (long long)ZG_N_PARAMS);
    if (strcmp(zr_ckpt_meta(r), meta) != 0)
        tr_die("--resume %s: the checkpoint was written by another plan (%s; this trainer is %s)",
               dir, zr_ckpt_meta(r), meta);
    size_t bytes;
    for (int part = 0; part < 3; part++)
        if (zr_ckpt_blob_size(r, part_name[part], &bytes) < 0 || bytes != (size_t)T.opt_numel * 4)
            tr_die("--resume %s: blob %s of rank %d has the wrong size", dir, part_name[part], T.rank);
    int64_t state[2];
    uint8_t sc[ZR_SCALER_STATE_BYTES];
    if (zr_ckpt_get(r, "state", state, sizeof state) < 0 || zr_ckpt_get(r, "scaler", sc, sizeof sc) < 0)
        tr_die("--resume: %s", zr_train_error());
    if (zr_scaler_load(&T.scaler, sc) < 0) tr_die("--resume: %s", zr_train_error());
    T.step = state[0];
    T.applied = state[1];
    tr_state_load(load_fill, r);
    zr_ckpt_close(r);
    if (T.rank == 0 && !T.a.quiet)
        fprintf(stderr, "resumed %s at step %lld\n", dir, (long long)T.step);
}
