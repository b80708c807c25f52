/*
** zr_ckpt.c — sharded checkpoints (format and protocol in zr_ckpt.h). Each rank streams its blobs
** into one file and checksums them on the way; the footer at the end makes the shard
** self-describing, so rank 0 builds the manifest from the footers alone without re-reading data.
** Atomicity comes from names: nothing under step_<N>/ or `latest` is ever written in place.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_ckpt.h"
#include "zr_ckpt_int.h"
#include "zr_crc.h"
#include "zr_json.h"
#include "zr_err.h"

struct ZrCkptWriter {
    ZrAfile af;
    int64_t step;
    int rank, world;
    Blob *b;
    int nb, cap;
    int open_blob;              /* 1 between blob_begin and blob_end */
    uint32_t *cc;               /* chunk CRCs of every blob so far, in blob order */
    size_t ncc, capcc;
    uint32_t cur;               /* CRC of the open blob's current chunk, cur_fill bytes so far */
    uint64_t cur_fill;
    char path[PATHLEN];
};

static int push_chunk_crc(ZrCkptWriter *w)
{
    if (w->ncc == w->capcc) {
        size_t cap = w->capcc ? 2 * w->capcc : 256;
        uint32_t *n = realloc(w->cc, cap * sizeof *n);
        if (!n) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        w->cc = n;
        w->capcc = cap;
    }
    w->cc[w->ncc++] = w->cur;
    w->cur = 0;
    w->cur_fill = 0;
    return 0;
}

/* mkdir -p: every missing component of p; existing ones (made by another rank meanwhile) are fine. */
static int mkdir_ok(const char *p)
{
    char buf[PATHLEN];
    size_t n = strlen(p), k;
    if (n >= sizeof buf) return zr_train_fail(-ENAMETOOLONG, "checkpoint: path too long: %s", p);
    memcpy(buf, p, n + 1);
    for (k = 1; k <= n; k++) {
        if (buf[k] != '/' && buf[k] != 0) continue;
        buf[k] = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            return zr_train_fail(-e, "checkpoint: cannot create directory %s: %s", buf, strerror(e));
        }
        buf[k] = p[k];
    }
    return 0;
}

/* {===== writer */

int zr_ckpt_writer_begin(ZrCkptWriter **wp, const char *dir, int64_t step, int rank, int world)
{
    char sdir[PATHLEN];
    ZrCkptWriter *w;
    int rc;
    *wp = NULL;
    if (rank < 0 || rank >= world || step < 0 || strlen(dir) > 900)
        return zr_train_fail(-EINVAL, "checkpoint %s: bad rank %d / world %d / step %lld", dir, rank,
                             world, (long long)step);
    if ((rc = mkdir_ok(dir)) != 0) return rc;
    step_dir(sdir, dir, step, 1);
    if ((rc = mkdir_ok(sdir)) != 0) return rc;
    if (!(w = calloc(1, sizeof *w))) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    w->step = step;
    w->rank = rank;
    w->world = world;
    shard_path(w->path, sdir, rank);
    if ((rc = zr_afile_open(&w->af, w->path)) != 0) {
        free(w);
        return rc;
    }
    *wp = w;
    return 0;
}

int zr_ckpt_blob_begin(ZrCkptWriter *w, const char *name)
{
    static const uint8_t zeros[BLOB_ALIGN];
    Blob *b;
    int i, rc;
    if (w->open_blob) return zr_train_fail(-EINVAL, "checkpoint %s: blob %s begun inside blob %s",
                                           w->path, name, w->b[w->nb - 1].name);
    if (!name[0] || strlen(name) >= ZR_CKPT_NAMELEN)
        return zr_train_fail(-EINVAL, "checkpoint %s: blob name '%s' empty or longer than %d", w->path,
                             name, ZR_CKPT_NAMELEN - 1);
    for (i = 0; i < w->nb; i++)
        if (!strcmp(w->b[i].name, name))
            return zr_train_fail(-EINVAL, "checkpoint %s: blob %s added twice", w->path, name);
    if (w->nb == w->cap) {
        int cap = w->cap ? 2 * w->cap : 8;
        Blob *nb = realloc(w->b, (size_t)cap * sizeof *nb);
        if (!nb) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        w->b = nb;
        w->cap = cap;
    }
    if (w->af.bytes % BLOB_ALIGN &&
        (rc = zr_afile_write(&w->af, zeros, BLOB_ALIGN - w->af.bytes % BLOB_ALIGN)) != 0)
        return rc;
    b = &w->b[w->nb++];
    memset(b, 0, sizeof *b);
    strcpy(b->name, name);
    b->offset = w->af.bytes;
    w->open_blob = 1;
    return 0;
}

int zr_ckpt_blob_write(ZrCkptWriter *w, const void *data, size_t bytes)
{
    Blob *b = &w->b[w->nb - 1];
    const uint8_t *p = data;
    size_t left = bytes;
    int rc;
    if (!w->open_blob) return zr_train_fail(-EINVAL, "checkpoint %s: write outside a blob", w->path);
    if ((rc = zr_afile_write(&w->af, data, bytes)) != 0) return rc;
    b->crc = zr_crc32c(b->crc, data, bytes);
    b->bytes += bytes;
    while (left) {
        size_t take = ZR_CKPT_CHUNK - w->cur_fill < left ? (size_t)(ZR_CKPT_CHUNK - w->cur_fill) : left;
        w->cur = zr_crc32c(w->cur, p, take);
        w->cur_fill += take;
        p += take;
        left -= take;
        if (w->cur_fill == ZR_CKPT_CHUNK && (rc = push_chunk_crc(w)) != 0) return rc;
    }
    return 0;
}

int zr_ckpt_blob_end(ZrCkptWriter *w)
{
    if (!w->open_blob) return zr_train_fail(-EINVAL, "checkpoint %s: blob_end without blob_begin", w->path);
    w->open_blob = 0;
    return w->cur_fill ? push_chunk_crc(w) : 0;
}

int zr_ckpt_add(ZrCkptWriter *w, const char *name, const void *data, size_t bytes)
{
    int rc = zr_ckpt_blob_begin(w, name);
    if (!rc) rc = zr_ckpt_blob_write(w, data, bytes);
    if (!rc) rc = zr_ckpt_blob_end(w);
    return rc;
}

void zr_ckpt_writer_abort(ZrCkptWriter *w)
{
    if (!w) return;
    zr_afile_abort(&w->af);
    free(w->b);
    free(w->cc);
    free(w);
}

int zr_ckpt_writer_commit(ZrCkptWriter *w)
{
    size_t n = (size_t)w->nb * ENTRY_BYTES + TRAILER_BYTES;
    uint8_t *f;
    uint64_t table_off;
    uint32_t crc;
    int i, rc;
    if (w->open_blob) {
        rc = zr_train_fail(-EINVAL, "checkpoint %s: commit inside blob %s", w->path, w->b[w->nb - 1].name);
        zr_ckpt_writer_abort(w);
        return rc;
    }
    if (!(f = calloc(1, n))) {
        zr_ckpt_writer_abort(w);
        return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    }
    {   /* the chunk CRCs, blob after blob, right after the data; each blob's list has its own CRC */
        size_t k = 0;
        rc = 0;
        uint8_t le[4];
        for (i = 0; i < w->nb; i++) {
            uint64_t nc = (w->b[i].bytes + ZR_CKPT_CHUNK - 1) / ZR_CKPT_CHUNK, c;
            uint32_t crc_list = 0;
            for (c = 0; c < nc; c++, k++) {
                put32(le, w->cc[k]);
                crc_list = zr_crc32c(crc_list, le, 4);
                if ((rc = zr_afile_write(&w->af, le, 4)) != 0) break;
            }
            w->b[i].chunks_crc = crc_list;
            if (rc) break;
        }
        if (!rc && k != w->ncc)
            rc = zr_train_fail(-EINVAL, "checkpoint %s: internal: %zu chunk CRCs for %zu chunks", w->path,
                               w->ncc, k);
        if (rc) { free(f); zr_ckpt_writer_abort(w); return rc; }
    }
    table_off = w->af.bytes;
    for (i = 0; i < w->nb; i++) {
        uint8_t *e = f + (size_t)i * ENTRY_BYTES;
        memcpy(e, w->b[i].name, ZR_CKPT_NAMELEN);
        put64(e + ZR_CKPT_NAMELEN, w->b[i].offset);
        put64(e + ZR_CKPT_NAMELEN + 8, w->b[i].bytes);
        put32(e + ZR_CKPT_NAMELEN + 16, w->b[i].crc);
        put32(e + ZR_CKPT_NAMELEN + 20, w->b[i].chunks_crc);
    }
    {
        uint8_t *t = f + (size_t)w->nb * ENTRY_BYTES;
        put32(t, (uint32_t)w->nb);
        put32(t + 4, SHARD_VERSION);
        put32(t + 8, (uint32_t)w->rank);
        put32(t + 12, (uint32_t)w->world);
        put64(t + 16, (uint64_t)w->step);
        put64(t + 24, table_off);
        crc = zr_crc32c(0, f, (size_t)w->nb * ENTRY_BYTES + 32);
        put32(t + 32, crc);
        put32(t + 36, ZR_CKPT_CHUNK);
        memcpy(t + 40, SHARD_MAGIC, 8);
    }
    rc = zr_afile_write(&w->af, f, n);
    free(f);
    if (rc) { zr_ckpt_writer_abort(w); return rc; }
    rc = zr_afile_commit(&w->af);
    free(w->b);
    free(w->cc);
    free(w);
    return rc;
}

/* }===== */

/* {===== shard footers (shared by finish and open) */

/* Validates the footer of a shard of `size` bytes whose last tail_len bytes are at tail (the whole
** mapping when reading, just the footer when building the manifest) and fills *blobs (malloc'd). */
int zr_ckpt_parse_footer(const char *path, const uint8_t *tail, uint64_t tail_len, uint64_t size,
                         int rank, int world, int64_t step, Blob **blobs, int *nb, uint32_t *footer_crc)
{
    const uint8_t *t, *table;
    uint64_t nblob, table_off, base = size - tail_len, data_end, nchunks = 0;
    uint32_t crc, version, chunk;
    Blob *b;
    uint64_t i;
    *blobs = NULL;
    if (tail_len < TRAILER_BYTES || memcmp(tail + tail_len - 8, SHARD_MAGIC, 8) != 0)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: no shard trailer at its end (truncated or "
                             "not a shard)", path);
    t = tail + tail_len - TRAILER_BYTES;
    nblob = get32(t);
    table_off = get64(t + 24);
    version = get32(t + 4);
    if (version != 1 && version != SHARD_VERSION)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: format version %u; this build reads 1 and %u "
                             "(HINT: written by a newer zgen? read it with that one)", path, version,
                             SHARD_VERSION);
    chunk = version >= 2 ? get32(t + 36) : 0;
    if (version >= 2 && (chunk == 0 || chunk % 64))
        return zr_train_fail(-EINVAL, "checkpoint shard %s: chunk size %u in its trailer is not a "
                             "multiple of 64: the file is corrupted", path, chunk);
    if (nblob > (tail_len - TRAILER_BYTES) / ENTRY_BYTES ||
        table_off != size - TRAILER_BYTES - nblob * ENTRY_BYTES)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: footer does not fit the file (%llu bytes)",
                             path, (unsigned long long)size);
    table = tail + (table_off - base);
    crc = zr_crc32c(0, table, (size_t)(nblob * ENTRY_BYTES) + 32);
    if (crc != get32(t + 32))
        return zr_train_fail(-EINVAL, "checkpoint shard %s: footer CRC32C mismatch (stored %08x, "
                             "computed %08x): the file is corrupted", path, get32(t + 32), crc);
    if ((int)get32(t + 8) != rank || (int)get32(t + 12) != world || (int64_t)get64(t + 16) != step)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: holds rank %u of %u at step %lld, expected "
                             "rank %d of %d at step %lld", path, get32(t + 8), get32(t + 12),
                             (long long)get64(t + 16), rank, world, (long long)step);
    if (!(b = calloc(nblob ? nblob : 1, sizeof *b))) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    for (i = 0; i < nblob; i++) {
        const uint8_t *e = table + i * ENTRY_BYTES;
        memcpy(b[i].name, e, ZR_CKPT_NAMELEN);
        b[i].name[ZR_CKPT_NAMELEN - 1] = 0;
        b[i].offset = get64(e + ZR_CKPT_NAMELEN);
        b[i].bytes = get64(e + ZR_CKPT_NAMELEN + 8);
        b[i].crc = get32(e + ZR_CKPT_NAMELEN + 16);
        b[i].chunk_bytes = chunk;
        if (b[i].bytes > size) {
            int rc = zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s lies outside the data", path,
                                   b[i].name);
            free(b);
            return rc;
        }
        if (chunk) {
            b[i].chunks_crc = get32(e + ZR_CKPT_NAMELEN + 20);
            b[i].chunks_at = nchunks * 4;       /* relative for now: the list's start is known last */
            nchunks += blob_nchunks(&b[i]);
        }
    }
    if (nchunks > table_off / 4) {
        free(b);
        return zr_train_fail(-EINVAL, "checkpoint shard %s: its chunk checksums do not fit the file", path);
    }
    data_end = table_off - nchunks * 4;
    for (i = 0; i < nblob; i++) {
        if (chunk) b[i].chunks_at += data_end;
        if (b[i].offset > data_end || b[i].bytes > data_end - b[i].offset) {
            int rc = zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s lies outside the data", path,
                                   b[i].name);
            free(b);
            return rc;
        }
    }
    *blobs = b;
    *nb = (int)nblob;
    *footer_crc = crc;
    return 0;
}

/* Reads just the footer of a shard file (no data) for the manifest. */
static int read_footer(const char *path, int rank, int world, int64_t step, Blob **b, int *nb,
                       uint32_t *crc, uint64_t *size)
{
    struct stat st;
    uint8_t tr[TRAILER_BYTES], *buf;
    uint64_t nblob, tail;
    int fd = open(path, O_RDONLY), rc;
    if (fd < 0) {
        int e = errno;
        return zr_train_fail(-e, "checkpoint shard %s: cannot open: %s (did every rank commit before "
                             "the barrier?)", path, strerror(e));
    }
    if (fstat(fd, &st) != 0 || st.st_size < TRAILER_BYTES ||
        pread(fd, tr, TRAILER_BYTES, st.st_size - TRAILER_BYTES) != TRAILER_BYTES) {
        close(fd);
        return zr_train_fail(-EINVAL, "checkpoint shard %s: too short for a trailer", path);
    }
    *size = (uint64_t)st.st_size;
    nblob = get32(tr);
    if (nblob > ((uint64_t)st.st_size - TRAILER_BYTES) / ENTRY_BYTES) {
        close(fd);
        return zr_train_fail(-EINVAL, "checkpoint shard %s: footer does not fit the file", path);
    }
    tail = nblob * ENTRY_BYTES + TRAILER_BYTES;
    if (!(buf = malloc(tail))) { close(fd); return zr_train_fail(-ENOMEM, "checkpoint: out of memory"); }
    if (pread(fd, buf, tail, st.st_size - (off_t)tail) != (ssize_t)tail) {
        free(buf);
        close(fd);
        return zr_train_fail(-EIO, "checkpoint shard %s: footer read failed", path);
    }
    close(fd);
    rc = zr_ckpt_parse_footer(path, buf, tail, (uint64_t)st.st_size, rank, world, step, b, nb, crc);
    free(buf);
    return rc;
}

/* }===== */

/* {===== manifest, rename, latest */

static void rm_flat_dir(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    char p[PATHLEN + 300];
    if (!dp) return;
    while ((e = readdir(dp)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        unlink(p);
    }
    closedir(dp);
    rmdir(d);
}

static void put_json_str(ZrAfile *a, const char *s)
{
    zr_afile_printf(a, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') zr_afile_printf(a, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) zr_afile_printf(a, "\\u%04x", (unsigned char)*s);
        else zr_afile_printf(a, "%c", *s);
    }
    zr_afile_printf(a, "\"");
}

int zr_ckpt_finish(const char *dir, int64_t step, int world, const char *meta)
{
    char tdir[PATHLEN], fdir[PATHLEN], old[PATHLEN + 40], p[PATHLEN + 40], latest[PATHLEN + 40];
    char line[64];
    ZrAfile a;
    struct stat st;
    int r, i, rc, have_old = 0;
    if (meta && meta[0]) {
        ZrJson j;
        char err[128];
        if (zr_json_parse(&j, meta, strlen(meta), err, sizeof err) != 0 || j.t[0].type != ZR_JSON_OBJ) {
            if (j.t) zr_json_free(&j);
            return zr_train_fail(-EINVAL, "checkpoint %s: meta is not a JSON object", dir);
        }
        zr_json_free(&j);
    }
    step_dir(tdir, dir, step, 1);
    step_dir(fdir, dir, step, 0);
    snprintf(p, sizeof p, "%s/manifest.json", tdir);
    if ((rc = zr_afile_open(&a, p)) != 0) return rc;
    zr_afile_printf(&a, "{\n  \"format\": \"zrt-checkpoint\",\n  \"version\": 2,\n  \"step\": %lld,\n"
                    "  \"world\": %d,\n  \"shards\": [\n", (long long)step, world);
    for (r = 0; r < world; r++) {
        Blob *b;
        int nb;
        uint32_t crc = 0;
        uint64_t size = 0;
        char sp[PATHLEN];
        shard_path(sp, tdir, r);
        if ((rc = read_footer(sp, r, world, step, &b, &nb, &crc, &size)) != 0) {
            zr_afile_abort(&a);
            return rc;
        }
        zr_afile_printf(&a, "    {\"rank\": %d, \"file\": \"rank_%05d.zrs\", \"bytes\": %llu, "
                        "\"footer_crc32c\": %u, \"blobs\": {", r, r, (unsigned long long)size, crc);
        for (i = 0; i < nb; i++) {
            zr_afile_printf(&a, "%s", i ? ", " : "");
            put_json_str(&a, b[i].name);
            zr_afile_printf(&a, ": %llu", (unsigned long long)b[i].bytes);
        }
        zr_afile_printf(&a, "}}%s\n", r + 1 < world ? "," : "");
        free(b);
    }
    zr_afile_printf(&a, "  ],\n  \"meta\": %s\n}\n", meta && meta[0] ? meta : "{}");
    if ((rc = zr_afile_commit(&a)) != 0) return rc;
    if (stat(fdir, &st) == 0) { /* re-saving a step: move the old one aside until latest is updated */
        snprintf(old, sizeof old, "%s.old.%ld", fdir, (long)getpid());
        if (rename(fdir, old) != 0) {
            int e = errno;
            return zr_train_fail(-e, "checkpoint: cannot move %s aside: %s", fdir, strerror(e));
        }
        have_old = 1;
    }
    if (rename(tdir, fdir) != 0) {
        int e = errno;
        return zr_train_fail(-e, "checkpoint: rename %s -> %s failed: %s", tdir, fdir, strerror(e));
    }
    if ((rc = zr_fsync_dir(dir)) != 0) return rc;
    snprintf(latest, sizeof latest, "%s/latest", dir);
    snprintf(line, sizeof line, "step_%lld\n", (long long)step);
    if ((rc = zr_afile_put(latest, line, strlen(line))) != 0) return rc;
    if (have_old) rm_flat_dir(old);
    return 0;
}

int zr_ckpt_latest(const char *dir, int64_t *step)
{
    char p[PATHLEN + 40], buf[64], *end;
    FILE *f;
    size_t n;
    long long s;
    snprintf(p, sizeof p, "%s/latest", dir);
    if (!(f = fopen(p, "r"))) return zr_train_fail(-ENOENT, "checkpoint %s: no 'latest' file", dir);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strncmp(buf, "step_", 5) != 0 || (s = strtoll(buf + 5, &end, 10)) < 0 || end == buf + 5 ||
        (*end && *end != '\n'))
        return zr_train_fail(-EINVAL, "checkpoint %s: 'latest' holds '%.40s', expected step_<N>", p, buf);
    *step = s;
    return 0;
}

/* }===== */
