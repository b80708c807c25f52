/*
** zr_ckpt_read.c — opening a checkpoint shard for resume: the manifest is checked first (format,
** step, world size), then the shard's size and footer against it, then every blob's CRC32C over the
** mapped file, so a damaged shard is refused at open with the file and the fault named, before any
** state is restored.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_ckpt.h"
#include "zr_ckpt_int.h"
#include "zr_crc.h"
#include "zr_json.h"
#include "zr_err.h"

struct ZrCkptReader {
    void *map;
    size_t map_bytes;
    Blob *b;
    int nb;
    int64_t step;
    char *meta;
    char path[PATHLEN];
};

/* {===== reader */

/* A manifest (small text file, < 64 MiB) read whole and NUL-terminated; NULL on any failure. */
char *zr_ckpt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
        else { buf[n] = 0; *len = (size_t)n; }
    }
    fclose(f);
    return buf;
}

void zr_ckpt_close(ZrCkptReader *r)
{
    if (!r) return;
    if (r->map) munmap(r->map, r->map_bytes);
    free(r->b);
    free(r->meta);
    free(r);
}

int zr_ckpt_open(ZrCkptReader **rp, const char *dir, int64_t step, int rank, int world)
{
    char sdir[PATHLEN], mp[PATHLEN + 40], err[200];
    size_t mlen = 0;
    char *mtext;
    ZrJson j = { 0 };
    ZrCkptReader *r;
    uint64_t mbytes = 0, mcrc = 0;
    int64_t mstep = -1, mworld = -1;
    int shards, sh = -1, i, rc, fd;
    struct stat st;
    uint32_t fcrc;
    *rp = NULL;
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    if (step < 0 && stat(mp, &st) == 0) {
        snprintf(sdir, sizeof sdir, "%s", dir); /* dir is itself a step directory */
    } else {
        if (step < 0 && (rc = zr_ckpt_latest(dir, &step)) != 0) return rc;
        step_dir(sdir, dir, step, 0);
    }
    snprintf(mp, sizeof mp, "%s/manifest.json", sdir);
    if (!(mtext = zr_ckpt_slurp(mp, &mlen)))
        return zr_train_fail(-ENOENT, "checkpoint %s: cannot read %s (incomplete or missing checkpoint)",
                             dir, mp);
    if (zr_json_parse(&j, mtext, mlen, err, sizeof err) != 0) {
        free(mtext);
        return zr_train_fail(-EINVAL, "checkpoint manifest %s: bad JSON: %s", mp, err);
    }
    rc = -EINVAL;
    if (j.t[0].type != ZR_JSON_OBJ || !zr_json_str_eq(&j, zr_json_get(&j, 0, "format"), "zrt-checkpoint") ||
        zr_json_i64(&j, zr_json_get(&j, 0, "step"), &mstep) != 0 ||
        zr_json_i64(&j, zr_json_get(&j, 0, "world"), &mworld) != 0 ||
        (shards = zr_json_get(&j, 0, "shards")) < 0 || j.t[shards].type != ZR_JSON_ARR) {
        zr_train_fail(rc, "checkpoint manifest %s: missing format/step/world/shards", mp);
        goto fail;
    }
    if (mworld != world) {
        zr_train_fail(rc, "checkpoint %s was saved by %lld ranks; this run has %d (HINT: resume with the "
                      "same world size, mpirun -np %lld)", sdir, (long long)mworld, world, (long long)mworld);
        goto fail;
    }
    if (step >= 0 && mstep != step) {
        zr_train_fail(rc, "checkpoint manifest %s: says step %lld, directory says %lld", mp,
                      (long long)mstep, (long long)step);
        goto fail;
    }
    for (i = 0; i < j.t[shards].n; i++) {
        int e = zr_json_item(&j, shards, i);
        int64_t rr;
        if (zr_json_i64(&j, zr_json_get(&j, e, "rank"), &rr) == 0 && rr == rank) sh = e;
    }
    if (sh < 0 || zr_json_u64(&j, zr_json_get(&j, sh, "bytes"), &mbytes) != 0 ||
        zr_json_u64(&j, zr_json_get(&j, sh, "footer_crc32c"), &mcrc) != 0) {
        zr_train_fail(rc, "checkpoint manifest %s: no complete entry for rank %d", mp, rank);
        goto fail;
    }
    if (!(r = calloc(1, sizeof *r))) { rc = zr_train_fail(-ENOMEM, "checkpoint: out of memory"); goto fail; }
    r->step = mstep;
    shard_path(r->path, sdir, rank);
    {
        int mi = zr_json_get(&j, 0, "meta");
        size_t ml = mi >= 0 ? j.t[mi].end - j.t[mi].start : 0;
        r->meta = malloc(ml + 1);
        if (r->meta) { if (ml) memcpy(r->meta, mtext + j.t[mi].start, ml); r->meta[ml] = 0; }
    }
    zr_json_free(&j);
    free(mtext);
    mtext = NULL;
    if ((fd = open(r->path, O_RDONLY)) < 0) {
        int e = errno;
        rc = zr_train_fail(-e, "checkpoint shard %s: cannot open: %s", r->path, strerror(e));
        goto fail_r;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != mbytes) {
        close(fd);
        rc = zr_train_fail(-EINVAL, "checkpoint shard %s: %lld bytes, the manifest says %llu (%s)", r->path,
                           (long long)st.st_size, (unsigned long long)mbytes,
                           (uint64_t)st.st_size < mbytes ? "truncated" : "grown");
        goto fail_r;
    }
    r->map_bytes = (size_t)st.st_size;
    r->map = r->map_bytes ? mmap(NULL, r->map_bytes, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        rc = zr_train_fail(-EIO, "checkpoint shard %s: mmap failed", r->path);
        goto fail_r;
    }
    if ((rc = zr_ckpt_parse_footer(r->path, r->map, r->map_bytes, r->map_bytes, rank, world, mstep, &r->b, &r->nb, &fcrc)) != 0)
        goto fail_r;
    if (fcrc != (uint32_t)mcrc || mcrc > UINT32_MAX) {
        rc = zr_train_fail(-EINVAL, "checkpoint shard %s: footer CRC32C %08x, the manifest says %08llx "
                           "(shard from another save?)", r->path, fcrc, (unsigned long long)mcrc);
        goto fail_r;
    }
    for (i = 0; i < r->nb; i++) {
        uint32_t c = zr_crc32c(0, (const uint8_t *)r->map + r->b[i].offset, r->b[i].bytes);
        if (c != r->b[i].crc) {
            rc = zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s (bytes %llu..%llu) fails its CRC32C "
                               "(stored %08x, computed %08x): the file is corrupted", r->path, r->b[i].name,
                               (unsigned long long)r->b[i].offset,
                               (unsigned long long)(r->b[i].offset + r->b[i].bytes), r->b[i].crc, c);
            goto fail_r;
        }
    }
    *rp = r;
    return 0;
fail_r:
    zr_ckpt_close(r);
    return rc;
fail:
    zr_json_free(&j);
    free(mtext);
    return rc;
}

int64_t zr_ckpt_step(const ZrCkptReader *r) { return r->step; }
const char *zr_ckpt_meta(const ZrCkptReader *r) { return r->meta ? r->meta : ""; }

static const Blob *find_blob(const ZrCkptReader *r, const char *name)
{
    for (int i = 0; i < r->nb; i++)
        if (!strcmp(r->b[i].name, name)) return &r->b[i];
    return NULL;
}

int zr_ckpt_blob_size(const ZrCkptReader *r, const char *name, size_t *bytes)
{
    const Blob *b = find_blob(r, name);
    if (!b) return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", r->path, name);
    *bytes = (size_t)b->bytes;
    return 0;
}

int zr_ckpt_get(const ZrCkptReader *r, const char *name, void *dst, size_t bytes)
{
    const Blob *b = find_blob(r, name);
    if (!b) return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", r->path, name);
    if (b->bytes != bytes)
        return zr_train_fail(-EMSGSIZE, "checkpoint shard %s: blob %s holds %llu bytes, this run expects "
                             "%zu (different model or plan?)", r->path, name,
                             (unsigned long long)b->bytes, bytes);
    if (bytes) memcpy(dst, (const uint8_t *)r->map + b->offset, bytes);
    return 0;
}

int zr_ckpt_get_range(const ZrCkptReader *r, const char *name, size_t offset, void *dst, size_t bytes)
{
    const Blob *b = find_blob(r, name);
    if (!b) return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", r->path, name);
    if (offset > b->bytes || bytes > b->bytes - offset)
        return zr_train_fail(-ERANGE, "checkpoint shard %s: blob %s: bytes [%zu, %zu) past its %llu",
                             r->path, name, offset, offset + bytes, (unsigned long long)b->bytes);
    if (bytes) memcpy(dst, (const uint8_t *)r->map + b->offset + offset, bytes);
    return 0;
}

/* }===== */
