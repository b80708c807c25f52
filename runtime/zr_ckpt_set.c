/*
** zr_ckpt_set.c — a checkpoint read as a whole, under any plan: every shard's footer and tensor index
** (blob "index": which elements of which tensor sit where in the shard's state blobs) are read at
** open, and a rank then asks for tensor element ranges. Each range is served with pread from the
** shards that hold it, checked chunk by chunk against the format-2 chunk CRC32Cs, so a rank of a
** different world size, stage or offload reads about its own share of the state and never maps or
** reads the whole model. This is what makes --resume at another plan, and consolidation without
** launching a job (zgen ckpt), plain arithmetic on the partition map.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_ckpt.h"
#include "zr_ckpt_int.h"
#include "zr_crc.h"
#include "zr_json.h"
#include "zr_err.h"

#define INDEX_MAGIC "ZRIX"
#define INDEX_HEAD 24
#define INDEX_TENSOR (ZR_CKPT_TNAMELEN + 8 + 32)
#define INDEX_RANGE 32

typedef struct Shard {
    int fd;
    char path[PATHLEN];
    uint64_t size;
    Blob *b;
    int nb;
    uint32_t **clist;           /* per blob: its chunk CRCs once loaded (checked), else NULL */
    ZrCkptRange *r;             /* its index ranges */
    int nr;
    int elem;                   /* index element size, bytes */
    int cblob;                  /* cached chunk: blob, chunk number, bytes; cblob -1: none */
    uint64_t cchunk;
    uint32_t clen;
    uint8_t *cbuf;
} Shard;

typedef struct Piece { int shard, range; } Piece;

struct ZrCkptSet {
    int64_t step;
    int world, version;
    char *meta;
    char dir[PATHLEN];
    Shard *sh;
    ZrCkptTensor *t;
    int nt;
    Piece **by_tensor;          /* per tensor: the pieces holding it, by first element */
    int *n_by_tensor;
    uint64_t bytes_read;
};

/* {===== index blob */

int zr_ckpt_add_index(ZrCkptWriter *w, const ZrCkptTensor *t, int nt, const ZrCkptRange *r, int nr,
                      int elem_bytes)
{
    size_t n = INDEX_HEAD + (size_t)nt * INDEX_TENSOR + (size_t)nr * INDEX_RANGE;
    uint8_t *buf = calloc(1, n), *p;
    int i, k, rc;
    if (!buf) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    memcpy(buf, INDEX_MAGIC, 4);
    put32(buf + 4, 1);
    put32(buf + 8, (uint32_t)nt);
    put32(buf + 12, (uint32_t)nr);
    put32(buf + 16, (uint32_t)elem_bytes);
    p = buf + INDEX_HEAD;
    for (i = 0; i < nt; i++, p += INDEX_TENSOR) {
        if (strlen(t[i].name) >= ZR_CKPT_TNAMELEN || t[i].ndim < 1 || t[i].ndim > 4) {
            free(buf);
            return zr_train_fail(-EINVAL, "checkpoint index: tensor '%s' has a name of %d+ chars or %d "
                                 "dimensions", t[i].name, ZR_CKPT_TNAMELEN, t[i].ndim);
        }
        memcpy(p, t[i].name, strlen(t[i].name));
        put32(p + ZR_CKPT_TNAMELEN, (uint32_t)t[i].ndim);
        for (k = 0; k < 4; k++) put64(p + ZR_CKPT_TNAMELEN + 8 + 8 * k, (uint64_t)(k < t[i].ndim ? t[i].shape[k] : 0));
    }
    for (i = 0; i < nr; i++, p += INDEX_RANGE) {
        put32(p, (uint32_t)r[i].tensor);
        put64(p + 8, (uint64_t)r[i].first);
        put64(p + 16, (uint64_t)r[i].n);
        put64(p + 24, (uint64_t)r[i].at);
    }
    rc = zr_ckpt_add(w, ZR_CKPT_INDEX, buf, n);
    free(buf);
    return rc;
}

/* Decodes and checks an index: names terminated, shapes positive, ranges inside their tensors. */
static int parse_index(const char *path, const uint8_t *buf, uint64_t n, ZrCkptTensor **tp, int *ntp,
                       ZrCkptRange **rp, int *nrp, int *elem)
{
    uint64_t nt, nr, i;
    ZrCkptTensor *t;
    ZrCkptRange *r;
    const uint8_t *p;
    if (n < INDEX_HEAD || memcmp(buf, INDEX_MAGIC, 4) || get32(buf + 4) != 1)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: blob index is not a version-1 tensor index", path);
    nt = get32(buf + 8);
    nr = get32(buf + 12);
    *elem = (int)get32(buf + 16);
    if (n != INDEX_HEAD + nt * INDEX_TENSOR + nr * INDEX_RANGE || *elem < 1 || *elem > 8)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: tensor index of %llu bytes does not hold "
                             "%llu tensors and %llu ranges", path, (unsigned long long)n,
                             (unsigned long long)nt, (unsigned long long)nr);
    t = calloc(nt ? nt : 1, sizeof *t);
    r = calloc(nr ? nr : 1, sizeof *r);
    if (!t || !r) { free(t); free(r); return zr_train_fail(-ENOMEM, "checkpoint: out of memory"); }
    p = buf + INDEX_HEAD;
    for (i = 0; i < nt; i++, p += INDEX_TENSOR) {
        int k;
        memcpy(t[i].name, p, ZR_CKPT_TNAMELEN);
        t[i].ndim = (int)get32(p + ZR_CKPT_TNAMELEN);
        t[i].numel = 1;
        if (t[i].name[ZR_CKPT_TNAMELEN - 1] || !t[i].name[0] || t[i].ndim < 1 || t[i].ndim > 4) goto bad;
        for (k = 0; k < 4; k++) {
            t[i].shape[k] = (int64_t)get64(p + ZR_CKPT_TNAMELEN + 8 + 8 * k);
            if (k >= t[i].ndim) continue;
            if (t[i].shape[k] < 1 || t[i].shape[k] > (INT64_C(1) << 40) / t[i].numel) goto bad;
            t[i].numel *= t[i].shape[k];
        }
    }
    for (i = 0; i < nr; i++, p += INDEX_RANGE) {
        r[i].tensor = (int32_t)get32(p);
        r[i].first = (int64_t)get64(p + 8);
        r[i].n = (int64_t)get64(p + 16);
        r[i].at = (int64_t)get64(p + 24);
        if (r[i].tensor < 0 || (uint64_t)r[i].tensor >= nt || r[i].first < 0 || r[i].n < 1 || r[i].at < 0 ||
            r[i].first > t[r[i].tensor].numel - r[i].n || r[i].at > (INT64_C(1) << 50))
            goto bad;
    }
    *tp = t; *ntp = (int)nt; *rp = r; *nrp = (int)nr;
    return 0;
bad:
    free(t);
    free(r);
    return zr_train_fail(-EINVAL, "checkpoint shard %s: tensor index entry %llu is malformed (name, shape "
                         "or a range outside its tensor): the file is corrupted", path, (unsigned long long)i);
}

/* }===== */

/* {===== open */

static int pread_all(int fd, void *dst, uint64_t n, uint64_t off)
{
    uint8_t *p = dst;
    while (n) {
        ssize_t k = pread(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? -errno : -EIO;
        p += k; off += (uint64_t)k; n -= (uint64_t)k;
    }
    return 0;
}


static const Blob *blob_of(const Shard *s, const char *name, int *idx)
{
    for (int i = 0; i < s->nb; i++)
        if (!strcmp(s->b[i].name, name)) { if (idx) *idx = i; return &s->b[i]; }
    return NULL;
}

/* Footer (checked against the manifest's size and footer CRC) and index of shard `rank`. */
static int open_shard(ZrCkptSet *s, int rank, uint64_t mbytes, uint64_t mcrc)
{
    Shard *h = &s->sh[rank];
    uint8_t tr[TRAILER_BYTES], *tail;
    uint64_t nblob, tlen;
    uint32_t fcrc;
    struct stat st;
    const Blob *ib;
    int rc, ii;
    h->cblob = -1;
    shard_path(h->path, s->dir, rank);
    if ((h->fd = open(h->path, O_RDONLY)) < 0) {
        int e = errno;
        return zr_train_fail(-e, "checkpoint shard %s: cannot open: %s", h->path, strerror(e));
    }
    if (fstat(h->fd, &st) != 0 || (uint64_t)st.st_size != mbytes)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: %lld bytes, the manifest says %llu (%s)", h->path,
                             (long long)st.st_size, (unsigned long long)mbytes,
                             (uint64_t)st.st_size < mbytes ? "truncated" : "grown");
    h->size = mbytes;
    if (h->size < TRAILER_BYTES || pread_all(h->fd, tr, TRAILER_BYTES, h->size - TRAILER_BYTES) != 0)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: too short for a trailer", h->path);
    nblob = get32(tr);
    if (nblob > (h->size - TRAILER_BYTES) / ENTRY_BYTES)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: footer does not fit the file", h->path);
    tlen = nblob * ENTRY_BYTES + TRAILER_BYTES;
    if (!(tail = malloc(tlen))) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    if (pread_all(h->fd, tail, tlen, h->size - tlen) != 0) {
        free(tail);
        return zr_train_fail(-EIO, "checkpoint shard %s: footer read failed", h->path);
    }
    rc = zr_ckpt_parse_footer(h->path, tail, tlen, h->size, rank, s->world, s->step, &h->b, &h->nb, &fcrc);
    free(tail);
    if (rc) return rc;
    if (fcrc != (uint32_t)mcrc || mcrc > UINT32_MAX)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: footer CRC32C %08x, the manifest says %08llx "
                             "(shard from another save?)", h->path, fcrc, (unsigned long long)mcrc);
    if (!(h->clist = calloc((size_t)h->nb + 1, sizeof *h->clist)) || !(h->cbuf = malloc(ZR_CKPT_CHUNK)))
        return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    if (rank == 0) s->version = h->nb && h->b[0].chunk_bytes ? 2 : 1;
    if (!(ib = blob_of(h, ZR_CKPT_INDEX, &ii))) return 0;
    {
        uint8_t *buf = malloc(ib->bytes ? ib->bytes : 1);
        if (!buf) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        if (pread_all(h->fd, buf, ib->bytes, ib->offset) != 0 || zr_crc32c(0, buf, ib->bytes) != ib->crc) {
            free(buf);
            return zr_train_fail(-EINVAL, "checkpoint shard %s: blob index fails its CRC32C: the file is "
                                 "corrupted", h->path);
        }
        ZrCkptTensor *t = NULL;
        int nt = 0;
        rc = parse_index(h->path, buf, ib->bytes, &t, &nt, &h->r, &h->nr, &h->elem);
        free(buf);
        if (rc) return rc;
        if (!s->t) { s->t = t; s->nt = nt; return 0; }
        for (int i = 0; i < nt || i < s->nt; i++) {
            if (i < nt && i < s->nt && !strcmp(t[i].name, s->t[i].name) && t[i].ndim == s->t[i].ndim &&
                !memcmp(t[i].shape, s->t[i].shape, sizeof t[i].shape))
                continue;
            rc = zr_train_fail(-EINVAL, "checkpoint shard %s: its tensor table differs from rank 0's at "
                               "tensor %d (%s): shards of different models?", h->path, i,
                               i < nt ? t[i].name : "(missing)");
            break;
        }
        free(t);
        return rc;
    }
}

static int cmp_piece_first(const void *a, const void *b, void *ctx)
{
    const ZrCkptSet *s = ctx;
    const Piece *x = a, *y = b;
    int64_t fx = s->sh[x->shard].r[x->range].first, fy = s->sh[y->shard].r[y->range].first;
    if (fx != fy) return fx < fy ? -1 : 1;
    return x->shard - y->shard;
}

/* Per tensor, its pieces by first element; every element must be held by some shard. */
static int build_pieces(ZrCkptSet *s)
{
    int t, w, i;
    if (!s->t) return 0;
    if (!(s->by_tensor = calloc((size_t)s->nt, sizeof *s->by_tensor)) ||
        !(s->n_by_tensor = calloc((size_t)s->nt, sizeof *s->n_by_tensor)))
        return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    for (w = 0; w < s->world; w++) {
        if (!blob_of(&s->sh[w], ZR_CKPT_INDEX, NULL))
            return zr_train_fail(-EINVAL, "checkpoint shard %s: no tensor index while other shards have "
                                 "one", s->sh[w].path);
        for (i = 0; i < s->sh[w].nr; i++) s->n_by_tensor[s->sh[w].r[i].tensor]++;
    }
    for (t = 0; t < s->nt; t++) {
        if (!(s->by_tensor[t] = malloc(((size_t)s->n_by_tensor[t] + 1) * sizeof(Piece))))
            return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        s->n_by_tensor[t] = 0;
    }
    for (w = 0; w < s->world; w++)
        for (i = 0; i < s->sh[w].nr; i++) {
            int tt = s->sh[w].r[i].tensor;
            s->by_tensor[tt][s->n_by_tensor[tt]++] = (Piece){w, i};
        }
    for (t = 0; t < s->nt; t++) {
        int64_t covered = 0;
        qsort_r(s->by_tensor[t], (size_t)s->n_by_tensor[t], sizeof(Piece), cmp_piece_first, s);
        for (i = 0; i < s->n_by_tensor[t]; i++) {
            const ZrCkptRange *r = &s->sh[s->by_tensor[t][i].shard].r[s->by_tensor[t][i].range];
            if (r->first > covered) break;
            if (r->first + r->n > covered) covered = r->first + r->n;
        }
        if (covered < s->t[t].numel)
            return zr_train_fail(-EINVAL, "checkpoint %s: no shard holds elements %lld.. of tensor %s (of "
                                 "%lld): an incomplete checkpoint", s->dir, (long long)covered, s->t[t].name,
                                 (long long)s->t[t].numel);
    }
    return 0;
}

int zr_ckpt_set_open(ZrCkptSet **sp, const char *dir, int64_t step)
{
    char mp[PATHLEN + 40], err[200];
    size_t mlen = 0;
    char *mtext = NULL;
    ZrJson j = { 0 };
    ZrCkptSet *s;
    int64_t mstep = -1, mworld = -1;
    int shards, rc = -EINVAL, i;
    struct stat st;
    *sp = NULL;
    if (!(s = calloc(1, sizeof *s))) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    if (step < 0 && stat(mp, &st) == 0) {
        snprintf(s->dir, sizeof s->dir, "%s", dir);
    } else {
        if (step < 0 && (rc = zr_ckpt_latest(dir, &step)) != 0) { free(s); return rc; }
        step_dir(s->dir, dir, step, 0);
    }
    snprintf(mp, sizeof mp, "%s/manifest.json", s->dir);
    if (!(mtext = zr_ckpt_slurp(mp, &mlen))) {
        free(s);
        return zr_train_fail(-ENOENT, "checkpoint %s: cannot read %s (incomplete or missing checkpoint)", dir, mp);
    }
    if (zr_json_parse(&j, mtext, mlen, err, sizeof err) != 0) {
        rc = zr_train_fail(-EINVAL, "checkpoint manifest %s: bad JSON: %s", mp, err);
        goto fail;
    }
    if (j.t[0].type != ZR_JSON_OBJ || !zr_json_str_eq(&j, zr_json_get(&j, 0, "format"), "zrt-checkpoint") ||
        zr_json_i64(&j, zr_json_get(&j, 0, "step"), &mstep) != 0 ||
        zr_json_i64(&j, zr_json_get(&j, 0, "world"), &mworld) != 0 || mworld < 1 || mworld > (1 << 20) ||
        (shards = zr_json_get(&j, 0, "shards")) < 0 || j.t[shards].type != ZR_JSON_ARR) {
        rc = zr_train_fail(-EINVAL, "checkpoint manifest %s: missing format/step/world/shards", mp);
        goto fail;
    }
    if (step >= 0 && mstep != step) {
        rc = zr_train_fail(-EINVAL, "checkpoint manifest %s: says step %lld, directory says %lld", mp,
                           (long long)mstep, (long long)step);
        goto fail;
    }
    s->step = mstep;
    s->world = (int)mworld;
    {
        int mi = zr_json_get(&j, 0, "meta");
        size_t ml = mi >= 0 ? j.t[mi].end - j.t[mi].start : 0;
        if (!(s->meta = malloc(ml + 3))) { rc = zr_train_fail(-ENOMEM, "checkpoint: out of memory"); goto fail; }
        if (ml) { memcpy(s->meta, mtext + j.t[mi].start, ml); s->meta[ml] = 0; }
        else strcpy(s->meta, "{}");
    }
    if (!(s->sh = calloc((size_t)s->world, sizeof *s->sh))) {
        rc = zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        goto fail;
    }
    for (i = 0; i < s->world; i++) s->sh[i].fd = -1;
    for (i = 0; i < s->world; i++) {
        uint64_t mbytes = 0, mcrc = 0;
        int e = -1, k;
        for (k = 0; k < j.t[shards].n; k++) {
            int it = zr_json_item(&j, shards, k);
            int64_t rr;
            if (zr_json_i64(&j, zr_json_get(&j, it, "rank"), &rr) == 0 && rr == i) e = it;
        }
        if (e < 0 || zr_json_u64(&j, zr_json_get(&j, e, "bytes"), &mbytes) != 0 ||
            zr_json_u64(&j, zr_json_get(&j, e, "footer_crc32c"), &mcrc) != 0) {
            rc = zr_train_fail(-EINVAL, "checkpoint manifest %s: no complete entry for rank %d", mp, i);
            goto fail;
        }
        if ((rc = open_shard(s, i, mbytes, mcrc)) != 0) goto fail;
    }
    if ((rc = build_pieces(s)) != 0) goto fail;
    zr_json_free(&j);
    free(mtext);
    *sp = s;
    return 0;
fail:
    if (j.t) zr_json_free(&j);
    free(mtext);
    zr_ckpt_set_close(s);
    return rc;
}

void zr_ckpt_set_close(ZrCkptSet *s)
{
    if (!s) return;
    for (int i = 0; s->sh && i < s->world; i++) {
        Shard *h = &s->sh[i];
        if (h->fd >= 0) close(h->fd);
        for (int k = 0; h->clist && k < h->nb; k++) free(h->clist[k]);
        free(h->clist);
        free(h->b);
        free(h->r);
        free(h->cbuf);
    }
    for (int t = 0; s->by_tensor && t < s->nt; t++) free(s->by_tensor[t]);
    free(s->by_tensor);
    free(s->n_by_tensor);
    free(s->sh);
    free(s->t);
    free(s->meta);
    free(s);
}

/* }===== */

/* {===== queries and reads */

int64_t zr_ckpt_set_step(const ZrCkptSet *s) { return s->step; }
int zr_ckpt_set_world(const ZrCkptSet *s) { return s->world; }
int zr_ckpt_set_version(const ZrCkptSet *s) { return s->version; }
const char *zr_ckpt_set_meta(const ZrCkptSet *s) { return s->meta; }
const char *zr_ckpt_set_dir(const ZrCkptSet *s) { return s->dir; }
uint64_t zr_ckpt_set_bytes_read(const ZrCkptSet *s) { return s->bytes_read; }

const ZrCkptTensor *zr_ckpt_set_tensors(const ZrCkptSet *s, int *n)
{
    *n = s->nt;
    return s->t;
}

int zr_ckpt_set_find(const ZrCkptSet *s, const char *name)
{
    for (int i = 0; i < s->nt; i++)
        if (!strcmp(s->t[i].name, name)) return i;
    return -1;
}

int zr_ckpt_set_blob_size(const ZrCkptSet *s, int shard, const char *name, uint64_t *bytes)
{
    const Blob *b;
    if (shard < 0 || shard >= s->world) return -EINVAL;
    if (!(b = blob_of(&s->sh[shard], name, NULL)))
        return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", s->sh[shard].path, name);
    *bytes = b->bytes;
    return 0;
}

int zr_ckpt_set_blob_at(const ZrCkptSet *s, int shard, const char *name, uint64_t *offset, uint64_t *bytes)
{
    const Blob *b;
    if (shard < 0 || shard >= s->world) return -EINVAL;
    if (!(b = blob_of(&s->sh[shard], name, NULL)))
        return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", s->sh[shard].path, name);
    *offset = b->offset;
    *bytes = b->bytes;
    return 0;
}

int zr_ckpt_set_get(ZrCkptSet *s, int shard, const char *name, void *dst, size_t bytes)
{
    const Blob *b;
    Shard *h;
    if (shard < 0 || shard >= s->world) return -EINVAL;
    h = &s->sh[shard];
    if (!(b = blob_of(h, name, NULL))) return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", h->path, name);
    if (b->bytes != bytes)
        return zr_train_fail(-EMSGSIZE, "checkpoint shard %s: blob %s holds %llu bytes, expected %zu", h->path,
                             name, (unsigned long long)b->bytes, bytes);
    if (pread_all(h->fd, dst, bytes, b->offset) != 0)
        return zr_train_fail(-EIO, "checkpoint shard %s: reading blob %s failed", h->path, name);
    s->bytes_read += bytes;
    if (zr_crc32c(0, dst, bytes) != b->crc)
        return zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s fails its CRC32C: the file is corrupted",
                             h->path, name);
    return 0;
}

/* The chunk CRC list of blob bi of h, read and checked once. */
static const uint32_t *chunk_list(ZrCkptSet *s, Shard *h, int bi)
{
    const Blob *b = &h->b[bi];
    uint64_t nc = blob_nchunks(b), k;
    uint8_t *raw;
    if (h->clist[bi]) return h->clist[bi];
    if (!b->chunk_bytes) {
        zr_train_fail(-EINVAL, "checkpoint shard %s: format 1 has no chunk checksums, so blob %s cannot be "
                      "read in ranges (HINT: resume it with the plan that wrote it)", h->path, b->name);
        return NULL;
    }
    if (!(raw = malloc(nc * 4 + 4)) || !(h->clist[bi] = malloc(nc * 4 + 4))) {
        free(raw);
        zr_train_fail(-ENOMEM, "checkpoint: out of memory");
        return NULL;
    }
    if (pread_all(h->fd, raw, nc * 4, b->chunks_at) != 0 || zr_crc32c(0, raw, nc * 4) != b->chunks_crc) {
        free(raw);
        free(h->clist[bi]);
        h->clist[bi] = NULL;
        zr_train_fail(-EINVAL, "checkpoint shard %s: the chunk checksums of blob %s fail their CRC32C: the "
                      "file is corrupted", h->path, b->name);
        return NULL;
    }
    s->bytes_read += nc * 4;
    for (k = 0; k < nc; k++) h->clist[bi][k] = get32(raw + 4 * k);
    free(raw);
    return h->clist[bi];
}

static int chunk_bad(const Shard *h, const Blob *b, uint64_t c, uint32_t got, uint32_t want)
{
    return zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s bytes %llu..%llu fail their CRC32C (stored "
                         "%08x, computed %08x): the file is corrupted", h->path, b->name,
                         (unsigned long long)(c * b->chunk_bytes),
                         (unsigned long long)((c + 1) * b->chunk_bytes), want, got);
}

/* Bytes [off, off+len) of blob bi of shard h into dst: whole chunks straight into dst, the partial
** chunks at the edges through the shard's one-chunk cache (consecutive tensors share them). */
static int read_blob_bytes(ZrCkptSet *s, Shard *h, int bi, uint64_t off, uint64_t len, uint8_t *dst)
{
    const Blob *b = &h->b[bi];
    const uint32_t *cl = chunk_list(s, h, bi);
    uint64_t C, end = off + len;
    if (!cl) return -EINVAL;
    C = b->chunk_bytes;
    if (off > b->bytes || len > b->bytes - off)
        return zr_train_fail(-ERANGE, "checkpoint shard %s: blob %s: bytes [%llu, %llu) past its %llu (index "
                             "and blob disagree)", h->path, b->name, (unsigned long long)off,
                             (unsigned long long)end, (unsigned long long)b->bytes);
    while (off < end) {
        uint64_t c = off / C, cs = c * C, ce = cs + C < b->bytes ? cs + C : b->bytes;
        if (off == cs && end >= ce) {
            uint64_t e2 = end >= b->bytes ? b->bytes : end / C * C, k;
            if (pread_all(h->fd, dst, e2 - off, b->offset + off) != 0)
                return zr_train_fail(-EIO, "checkpoint shard %s: read of blob %s failed", h->path, b->name);
            s->bytes_read += e2 - off;
            for (k = c; k * C < e2; k++) {
                uint64_t n = (k + 1) * C < e2 ? C : e2 - k * C;
                uint32_t got = zr_crc32c(0, dst + (k * C - off), n);
                if (got != cl[k]) return chunk_bad(h, b, k, got, cl[k]);
            }
            dst += e2 - off;
            off = e2;
            continue;
        }
        if (h->cblob != bi || h->cchunk != c) {
            uint32_t got;
            h->cblob = -1;
            if (pread_all(h->fd, h->cbuf, ce - cs, b->offset + cs) != 0)
                return zr_train_fail(-EIO, "checkpoint shard %s: read of blob %s failed", h->path, b->name);
            s->bytes_read += ce - cs;
            if ((got = zr_crc32c(0, h->cbuf, ce - cs)) != cl[c]) return chunk_bad(h, b, c, got, cl[c]);
            h->cblob = bi;
            h->cchunk = c;
            h->clen = (uint32_t)(ce - cs);
        }
        {
            uint64_t n = (end < ce ? end : ce) - off;
            memcpy(dst, h->cbuf + (off - cs), n);
            dst += n;
            off += n;
        }
    }
    return 0;
}

int zr_ckpt_set_read(ZrCkptSet *s, const char *blob, int tensor, int64_t first, int64_t n, void *dst,
                     int prefer)
{
    uint8_t *out = dst;
    int64_t pos = first, end = first + n;
    if (!s->t) return zr_train_fail(-EINVAL, "checkpoint %s: no tensor index (format 1)", s->dir);
    if (tensor < 0 || tensor >= s->nt || first < 0 || n < 0 || first > s->t[tensor].numel - n)
        return zr_train_fail(-ERANGE, "checkpoint %s: elements [%lld, %lld) of tensor %d are outside it",
                             s->dir, (long long)first, (long long)end, tensor);
    prefer = prefer < 0 ? 0 : prefer % s->world;
    while (pos < end) {
        const Piece *best = NULL;
        int bestd = 0;
        for (int i = 0; i < s->n_by_tensor[tensor]; i++) {
            const Piece *p = &s->by_tensor[tensor][i];
            const ZrCkptRange *r = &s->sh[p->shard].r[p->range];
            int d = (p->shard - prefer + s->world) % s->world;
            if (r->first > pos) break;
            if (r->first + r->n <= pos) continue;
            if (!best || d < bestd) { best = p; bestd = d; }
        }
        if (!best) return zr_train_fail(-EINVAL, "checkpoint %s: no shard holds element %lld of %s", s->dir,
                                        (long long)pos, s->t[tensor].name);
        {
            Shard *h = &s->sh[best->shard];
            const ZrCkptRange *r = &h->r[best->range];
            int64_t take = (r->first + r->n < end ? r->first + r->n : end) - pos;
            int bi, rc;
            if (!blob_of(h, blob, &bi))
                return zr_train_fail(-ENOENT, "checkpoint shard %s: no blob %s", h->path, blob);
            rc = read_blob_bytes(s, h, bi, (uint64_t)(r->at + (pos - r->first)) * (uint64_t)h->elem,
                                 (uint64_t)take * (uint64_t)h->elem, out);
            if (rc) return rc;
            out += take * h->elem;
            pos += take;
        }
    }
    return 0;
}

int zr_ckpt_set_verify(ZrCkptSet *s, int shard, uint64_t *bytes)
{
    Shard *h;
    uint8_t *buf;
    int i;
    if (shard < 0 || shard >= s->world) return -EINVAL;
    h = &s->sh[shard];
    *bytes = h->size;
    if (!(buf = malloc(1u << 20))) return zr_train_fail(-ENOMEM, "checkpoint: out of memory");
    for (i = 0; i < h->nb; i++) {
        const Blob *b = &h->b[i];
        const uint32_t *cl = b->chunk_bytes ? chunk_list(s, h, i) : NULL;
        uint32_t crc = 0;
        uint64_t off = 0, step = b->chunk_bytes ? (1u << 20) / b->chunk_bytes * b->chunk_bytes : (1u << 20);
        if (b->chunk_bytes && !cl) { free(buf); return -EINVAL; }
        while (off < b->bytes) {
            uint64_t n = b->bytes - off < step ? b->bytes - off : step;
            if (pread_all(h->fd, buf, n, b->offset + off) != 0) {
                free(buf);
                return zr_train_fail(-EIO, "checkpoint shard %s: read of blob %s failed", h->path, b->name);
            }
            s->bytes_read += n;
            crc = zr_crc32c(crc, buf, n);
            for (uint64_t k = 0; cl && k < n; k += b->chunk_bytes) {
                uint64_t c = (off + k) / b->chunk_bytes, m = n - k < b->chunk_bytes ? n - k : b->chunk_bytes;
                uint32_t got = zr_crc32c(0, buf + k, m);
                if (got != cl[c]) { free(buf); return chunk_bad(h, b, c, got, cl[c]); }
            }
            off += n;
        }
        if (crc != b->crc) {
            free(buf);
            return zr_train_fail(-EINVAL, "checkpoint shard %s: blob %s fails its CRC32C (stored %08x, computed "
                                 "%08x): the file is corrupted", h->path, b->name, b->crc, crc);
        }
    }
    free(buf);
    return 0;
}

/* }===== */
