/*
** zr_st.c — safetensors writer (fp32, deterministic bytes) and validating reader (F32/BF16/F16 to
** fp32), plus the GPT-2 config.json of an export. The reader maps the file and trusts nothing in it:
** every length and offset is checked against the file before it is used.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_half.h"
#include "zr_json.h"
#include "zr_err.h"
#include "zr_plan.h"
#include "zr_st.h"

#define MAX_HEADER (100u << 20) /* the format's own limit on the JSON header */

/* {===== writing */

/* A growable text buffer for the header. */
typedef struct { char *p; size_t n, cap; int oom; } Buf;

static void bput(Buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *q;
        while (cap < b->n + n + 1) cap *= 2;
        if (!(q = realloc(b->p, cap))) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void bputs(Buf *b, const char *s) { bput(b, s, strlen(s)); }
static void bputstr(Buf *b, const char *s) /* JSON string with escapes */
{
    bputs(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char e[8];
        if (c == '"' || c == '\\') { e[0] = '\\'; e[1] = (char)c; bput(b, e, 2); }
        else if (c < 0x20) { snprintf(e, sizeof e, "\\u%04x", c); bputs(b, e); }
        else bput(b, s, 1);
    }
    bputs(b, "\"");
}

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    int k;
    for (k = 0; k < ndim; k++) {
        if (shape[k] < 0 || (shape[k] && n > INT64_MAX / 4 / shape[k])) return -1;
        n *= shape[k];
    }
    return n;
}

void zr_st_from_row(ZrStTensor *t, const ZrTensorRow *row, const float *data)
{
    int k;
    memset(t, 0, sizeof *t);
    t->name = row->name;
    t->ndim = row->ndim < 0 ? 0 : row->ndim > 2 ? 2 : row->ndim;
    for (k = 0; k < t->ndim; k++) t->shape[k] = row->shape[k];
    t->data = data;
}

/* The header (length-prefixed JSON, padded to 8) for tensors of dtype `dt` ("F32", "BF16") of esize
** bytes; need_data: every non-empty tensor must have data. *total: the data bytes that follow. */
static int build_header(Buf *b, const char *path, const ZrStTensor *t, int n, const char *const *metadata,
                        const char *dt, int esize, int need_data, uint64_t *total)
{
    char num[64];
    uint64_t off = 0;
    int i, k;
    bputs(b, "{");
    if (metadata && metadata[0]) {
        bputs(b, "\"__metadata__\":{");
        for (k = 0; metadata[k] && metadata[k + 1]; k += 2) {
            if (k) bputs(b, ",");
            bputstr(b, metadata[k]);
            bputs(b, ":");
            bputstr(b, metadata[k + 1]);
        }
        bputs(b, "}");
    }
    for (i = 0; i < n; i++) {
        int64_t ne = t[i].ndim >= 0 && t[i].ndim <= ZR_ST_MAXDIM ? numel_of(t[i].ndim, t[i].shape) : -1;
        if (!t[i].name || !t[i].name[0] || strlen(t[i].name) >= ZR_ST_NAMELEN ||
            strcmp(t[i].name, "__metadata__") == 0)
            return zr_train_fail(-EINVAL, "safetensors %s: tensor %d has no usable name", path, i);
        if (ne < 0 || (need_data && ne > 0 && !t[i].data))
            return zr_train_fail(-EINVAL, "safetensors %s: tensor %s has a bad shape or no data", path,
                                 t[i].name);
        for (k = 0; k < i; k++)
            if (strcmp(t[k].name, t[i].name) == 0)
                return zr_train_fail(-EINVAL, "safetensors %s: tensor %s given twice", path, t[i].name);
        if (i || (metadata && metadata[0])) bputs(b, ",");
        bputstr(b, t[i].name);
        bputs(b, ":{\"dtype\":\"");
        bputs(b, dt);
        bputs(b, "\",\"shape\":[");
        for (k = 0; k < t[i].ndim; k++) {
            snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)t[i].shape[k]);
            bputs(b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + (uint64_t)ne * (uint64_t)esize));
        bputs(b, num);
        off += (uint64_t)ne * (uint64_t)esize;
    }
    bputs(b, "}");
    while (b->n % 8) bputs(b, " "); /* data starts 8-byte aligned; trailing spaces are valid JSON */
    if (b->oom) return zr_train_fail(-ENOMEM, "safetensors %s: out of memory", path);
    *total = off;
    return 0;
}

static int write_header(ZrAfile *a, const Buf *b)
{
    uint8_t le[8];
    int k, rc;
    for (k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)b->n >> (8 * k));
    rc = zr_afile_write(a, le, 8);
    return rc ? rc : zr_afile_write(a, b->p, b->n);
}

int zr_st_write(const char *path, const ZrStTensor *t, int n, const char *const *metadata)
{
    Buf b = { 0 };
    uint64_t total;
    int i, rc;
    ZrAfile a;
    if ((rc = build_header(&b, path, t, n, metadata, "F32", 4, 1, &total)) != 0) goto out;
    if ((rc = zr_afile_open(&a, path)) != 0) goto out;
    rc = write_header(&a, &b);
    for (i = 0; i < n && !rc; i++)
        rc = zr_afile_write(&a, t[i].data, (size_t)numel_of(t[i].ndim, t[i].shape) * 4);
    if (rc) zr_afile_abort(&a);
    else rc = zr_afile_commit(&a);
out:
    free(b.p);
    return rc;
}

int zr_st_stream_begin(ZrStStream *s, const char *path, const ZrStTensor *t, int n, int dtype,
                       const char *const *metadata)
{
    Buf b = { 0 };
    int rc;
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    if (dtype != ZR_DT_FP32 && dtype != ZR_DT_BF16)
        return zr_train_fail(-EINVAL, "safetensors %s: streaming writes F32 or BF16 only", path);
    rc = build_header(&b, path, t, n, metadata, dtype == ZR_DT_FP32 ? "F32" : "BF16",
                      dtype == ZR_DT_FP32 ? 4 : 2, 0, &s->want);
    if (!rc && (rc = zr_afile_open(&s->a, path)) == 0) {
        if ((rc = write_header(&s->a, &b)) != 0) zr_afile_abort(&s->a);
        else s->open = 1;
    }
    free(b.p);
    return rc;
}

int zr_st_stream_write(ZrStStream *s, const void *data, size_t bytes)
{
    int rc;
    if (!s->open) return zr_train_fail(-EINVAL, "safetensors %s: write to a closed stream", s->path);
    if (bytes > s->want - s->got) {
        zr_st_stream_abort(s);
        return zr_train_fail(-EINVAL, "safetensors %s: more data than the header declares", s->path);
    }
    if ((rc = zr_afile_write(&s->a, data, bytes)) != 0) { zr_st_stream_abort(s); return rc; }
    s->got += bytes;
    return 0;
}

int zr_st_stream_end(ZrStStream *s)
{
    if (!s->open) return zr_train_fail(-EINVAL, "safetensors %s: stream not open", s->path);
    if (s->got != s->want) {
        zr_st_stream_abort(s);
        return zr_train_fail(-EINVAL, "safetensors %s: %llu data bytes written, the header declares %llu",
                             s->path, (unsigned long long)s->got, (unsigned long long)s->want);
    }
    s->open = 0;
    return zr_afile_commit(&s->a);
}

void zr_st_stream_abort(ZrStStream *s)
{
    if (s->open) zr_afile_abort(&s->a);
    s->open = 0;
}

/* }===== */

/* {===== reading */

void zr_st_close(ZrSt *st)
{
    if (st->map) munmap(st->map, st->map_bytes);
    if (st->fd >= 0 && st->map) close(st->fd);
    st->fd = -1;
    free(st->e);
    st->map = NULL;
    st->e = NULL;
    st->n = 0;
}

static int cmp_begin(const void *a, const void *b)
{
    const ZrStEntry *x = *(const ZrStEntry *const *)a, *y = *(const ZrStEntry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int dtype_size(int dt) { return dt == ZR_DT_FP32 ? 4 : 2; }

/* Parses one entry value (object with dtype, shape, data_offsets) of key name into e. */
static int parse_entry(ZrSt *st, const ZrJson *j, int v, ZrStEntry *e)
{
    int dt = zr_json_get(j, v, "dtype"), sh = zr_json_get(j, v, "shape");
    int of = zr_json_get(j, v, "data_offsets"), k;
    uint64_t bytes;
    char dts[16];
    if (j->t[v].type != ZR_JSON_OBJ || dt < 0 || sh < 0 || of < 0 || j->t[v].n != 3)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: entry must hold exactly dtype, "
                             "shape and data_offsets", st->path, e->name);
    if (zr_json_str(j, dt, dts, sizeof dts) != 0) dts[0] = 0;
    if (!strcmp(dts, "F32")) e->dtype = ZR_DT_FP32;
    else if (!strcmp(dts, "BF16")) e->dtype = ZR_DT_BF16;
    else if (!strcmp(dts, "F16")) e->dtype = ZR_DT_FP16;
    else
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s has dtype %s; only F32, BF16 and F16 "
                             "are read (HINT: convert it to F32)", st->path, e->name,
                             dts[0] ? dts : "(not a short string)");
    if (j->t[sh].type != ZR_JSON_ARR || j->t[sh].n > ZR_ST_MAXDIM)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: shape must be an array of at most "
                             "%d sizes", st->path, e->name, ZR_ST_MAXDIM);
    e->ndim = j->t[sh].n;
    for (k = 0; k < e->ndim; k++) {
        uint64_t d;
        if (zr_json_u64(j, zr_json_item(j, sh, k), &d) != 0 || d > (uint64_t)INT64_MAX / 4)
            return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: shape[%d] is not a size",
                                 st->path, e->name, k);
        e->shape[k] = (int64_t)d;
    }
    if ((e->numel = numel_of(e->ndim, e->shape)) < 0)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: shape too large", st->path, e->name);
    if (j->t[of].type != ZR_JSON_ARR || j->t[of].n != 2 ||
        zr_json_u64(j, zr_json_item(j, of, 0), &e->begin) != 0 ||
        zr_json_u64(j, zr_json_item(j, of, 1), &e->end) != 0)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: data_offsets must be [begin, end]",
                             st->path, e->name);
    bytes = (uint64_t)e->numel * (uint64_t)dtype_size(e->dtype);
    if (e->begin > e->end || e->end > st->data_bytes)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: data_offsets [%llu, %llu] outside "
                             "the %llu data bytes (truncated file?)", st->path, e->name,
                             (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)st->data_bytes);
    if (e->end - e->begin != bytes)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: data_offsets span %llu bytes but "
                             "%s x %lld elements need %llu", st->path, e->name,
                             (unsigned long long)(e->end - e->begin), dts, (long long)e->numel,
                             (unsigned long long)bytes);
    return 0;
}

static int parse_header(ZrSt *st, const char *text, size_t len)
{
    ZrJson j;
    char err[256];
    int rc, m, i, cap;
    const ZrStEntry **order = NULL;
    if ((rc = zr_json_parse(&j, text, len, err, sizeof err)) != 0)
        return zr_train_fail(rc, "safetensors %s: header is not valid JSON: %s", st->path, err);
    if (j.t[0].type != ZR_JSON_OBJ) {
        rc = zr_train_fail(-EINVAL, "safetensors %s: header is not a JSON object", st->path);
        goto out;
    }
    cap = j.t[0].n;
    st->e = calloc(cap ? (size_t)cap : 1, sizeof *st->e);
    if (!st->e) { rc = zr_train_fail(-ENOMEM, "safetensors %s: out of memory", st->path); goto out; }
    for (m = 0; m < j.t[0].n; m++) {
        int key = zr_json_item(&j, 0, 2 * m), v = key + 1;
        ZrStEntry *e = &st->e[st->n];
        if (zr_json_str(&j, key, e->name, sizeof e->name) != 0) {
            rc = zr_train_fail(-EINVAL, "safetensors %s: a tensor name is longer than %d bytes",
                               st->path, ZR_ST_NAMELEN - 1);
            goto out;
        }
        if (!strcmp(e->name, "__metadata__")) {
            int k;
            for (k = 0; j.t[v].type == ZR_JSON_OBJ && k < j.t[v].n; k++)
                if (j.t[zr_json_item(&j, v, 2 * k + 1)].type != ZR_JSON_STR) break;
            if (j.t[v].type != ZR_JSON_OBJ || k < j.t[v].n) {
                rc = zr_train_fail(-EINVAL, "safetensors %s: __metadata__ must map strings to strings",
                                   st->path);
                goto out;
            }
            continue;
        }
        for (i = 0; i < st->n; i++)
            if (!strcmp(st->e[i].name, e->name)) {
                rc = zr_train_fail(-EINVAL, "safetensors %s: tensor %s appears twice", st->path, e->name);
                goto out;
            }
        if ((rc = parse_entry(st, &j, v, e)) != 0) goto out;
        st->n++;
    }
    /* no two tensors may share bytes */
    if (st->n > 1) {
        order = malloc((size_t)st->n * sizeof *order);
        if (!order) { rc = zr_train_fail(-ENOMEM, "safetensors %s: out of memory", st->path); goto out; }
        for (i = 0; i < st->n; i++) order[i] = &st->e[i];
        qsort(order, (size_t)st->n, sizeof *order, cmp_begin);
        for (i = 1; i < st->n; i++)
            if (order[i]->begin < order[i - 1]->end) {
                rc = zr_train_fail(-EINVAL, "safetensors %s: tensors %s and %s overlap", st->path,
                                   order[i - 1]->name, order[i]->name);
                goto out;
            }
    }
out:
    free(order);
    zr_json_free(&j);
    return rc;
}

int zr_st_open(ZrSt *st, const char *path)
{
    struct stat sb = { 0 };
    uint64_t hlen = 0;
    int fd, rc, k;
    memset(st, 0, sizeof *st);
    st->fd = -1;
    snprintf(st->path, sizeof st->path, "%s", path);
    if ((fd = open(path, O_RDONLY)) < 0) {
        int e = errno;
        return zr_train_fail(-e, "safetensors %s: cannot open: %s", path, strerror(e));
    }
    if (fstat(fd, &sb) != 0 || sb.st_size < 8) {
        close(fd);
        return zr_train_fail(-EINVAL, "safetensors %s: %lld bytes, shorter than the 8-byte header "
                             "length", path, (long long)sb.st_size);
    }
    st->map_bytes = (size_t)sb.st_size;
    st->map = mmap(NULL, st->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (st->map == MAP_FAILED) {
        int e = errno;
        st->map = NULL;
        close(fd);
        return zr_train_fail(-e, "safetensors %s: mmap failed: %s", path, strerror(e));
    }
    st->fd = fd;
    /* the map serves the header only and pread the data ranges: neither may pull in the data
    ** around them (read-ahead is 8 MiB on some disks) */
    madvise(st->map, st->map_bytes, MADV_RANDOM);
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    for (k = 7; k >= 0; k--) hlen = hlen << 8 | ((const uint8_t *)st->map)[k];
    if (hlen > st->map_bytes - 8 || hlen > MAX_HEADER || hlen < 2) {
        rc = zr_train_fail(-EINVAL, "safetensors %s: header length %llu does not fit the %zu-byte file "
                           "(not a safetensors file, or truncated)", path, (unsigned long long)hlen,
                           st->map_bytes);
        goto err;
    }
    st->data = (const uint8_t *)st->map + 8 + hlen;
    st->data_off = 8 + hlen;
    st->data_bytes = st->map_bytes - 8 - hlen;
    if ((rc = parse_header(st, (const char *)st->map + 8, (size_t)hlen)) != 0) goto err;
    return 0;
err:
    zr_st_close(st);
    return rc;
}

int zr_st_find(const ZrSt *st, const char *name)
{
    int i;
    for (i = 0; i < st->n; i++)
        if (!strcmp(st->e[i].name, name)) return i;
    for (i = 0; i < st->n; i++)
        if (!strncmp(st->e[i].name, "transformer.", 12) && !strcmp(st->e[i].name + 12, name)) return i;
    return -1;
}

int zr_st_read_range(const ZrSt *st, int idx, int64_t first, int64_t n, float *dst)
{
    const ZrStEntry *e;
    const uint8_t *p;
    int64_t k;
    if (idx < 0 || idx >= st->n) return zr_train_fail(-EINVAL, "safetensors %s: no tensor %d", st->path, idx);
    e = &st->e[idx];
    if (first < 0 || n < 0 || n > e->numel || first > e->numel - n)
        return zr_train_fail(-EINVAL, "safetensors %s: tensor %s: %lld elements from %lld are outside its %lld",
                             st->path, e->name, (long long)n, (long long)first, (long long)e->numel);
    /* 16-bit data lands in the upper half of dst and widens upwards: element k is read (bytes
    ** 2n+2k..) before any write reaches it (a write to dst[k] ends at byte 4k+4 <= 2n+2k+2). */
    size_t bytes = (size_t)n * (size_t)dtype_size(e->dtype);
    uint8_t *buf = (uint8_t *)dst + (e->dtype == ZR_DT_FP32 ? 0 : bytes);
    uint64_t off = st->data_off + e->begin + (uint64_t)first * (uint64_t)dtype_size(e->dtype);
    for (size_t got = 0; got < bytes;) {
        ssize_t r = pread(st->fd, buf + got, bytes - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int err = r < 0 ? errno : EIO;
            return zr_train_fail(-err, "safetensors %s: tensor %s: read of %zu bytes at %llu failed: %s",
                                 st->path, e->name, bytes, (unsigned long long)(off + got), strerror(err));
        }
        got += (size_t)r;
    }
    p = buf;
    if (e->dtype == ZR_DT_BF16) {
        for (k = 0; k < n; k++) dst[k] = zr_bf16_to_f32((uint16_t)(p[2 * k] | p[2 * k + 1] << 8));
    } else if (e->dtype == ZR_DT_FP16) {
        for (k = 0; k < n; k++) dst[k] = zr_fp16_to_f32((uint16_t)(p[2 * k] | p[2 * k + 1] << 8));
    }
    return 0;
}

static void shape_str(char *out, size_t cap, int ndim, const int64_t *shape)
{
    size_t o = 0;
    int k;
    o += (size_t)snprintf(out, cap, "[");
    for (k = 0; k < ndim && o < cap; k++)
        o += (size_t)snprintf(out + o, cap - o, "%s%lld", k ? ", " : "", (long long)shape[k]);
    if (o < cap) snprintf(out + o, cap - o, "]");
}

int zr_st_check(const ZrSt *st, const ZrStTensor *want, int n, int allow_extra)
{
    char msg[1000], a[80], b[80];
    size_t o = 0;
    int i, k, bad = 0;
    char *seen = calloc(st->n ? (size_t)st->n : 1, 1);
    if (!seen) return zr_train_fail(-ENOMEM, "safetensors %s: out of memory", st->path);
    msg[0] = 0;
#define NOTE(...)                                                                    \
    do {                                                                             \
        bad++;                                                                       \
        if (o < sizeof msg) o += (size_t)snprintf(msg + o, sizeof msg - o, __VA_ARGS__); \
    } while (0)
    for (i = 0; i < n; i++) {
        int idx = zr_st_find(st, want[i].name);
        if (idx < 0) { NOTE("; missing %s", want[i].name); continue; }
        seen[idx] = 1;
        k = st->e[idx].ndim == want[i].ndim;
        for (int d = 0; k && d < want[i].ndim; d++) k = st->e[idx].shape[d] == want[i].shape[d];
        if (!k) {
            shape_str(a, sizeof a, st->e[idx].ndim, st->e[idx].shape);
            shape_str(b, sizeof b, want[i].ndim, want[i].shape);
            NOTE("; %s has shape %s, expected %s", want[i].name, a, b);
        }
    }
    for (i = 0; i < st->n && !allow_extra; i++)
        if (!seen[i]) NOTE("; unexpected tensor %s", st->e[i].name);
#undef NOTE
    free(seen);
    if (bad)
        return zr_train_fail(-EINVAL, "safetensors %s: %d problem%s%s (HINT: these weights are not of "
                             "this model: use a file with the spec's tensor names and shapes, e.g. "
                             "one written by --export of this plan)", st->path, bad,
                             bad > 1 ? "s" : "", msg);
    return 0;
}

int zr_st_read_all(const char *path, const ZrStTensor *want, int n, float *const *dst, int allow_extra)
{
    ZrSt st;
    int rc = zr_st_open(&st, path), i;
    if (rc) return rc;
    rc = zr_st_check(&st, want, n, allow_extra);
    for (i = 0; i < n && !rc; i++) {
        int idx = zr_st_find(&st, want[i].name);
        rc = zr_st_read_range(&st, idx, 0, st.e[idx].numel, dst[i]);
    }
    zr_st_close(&st);
    return rc;
}

/* }===== */

int zr_st_write_gpt2_config(const char *path, const ZrGpt2Config *c)
{
    ZrAfile a;
    int rc;
    if (c->vocab_size < 1 || c->n_positions < 1 || c->n_embd < 1 || c->n_layer < 1 || c->n_head < 1 ||
        c->n_embd % c->n_head || c->n_inner < 1)
        return zr_train_fail(-EINVAL, "config.json %s: sizes must be positive and n_embd divisible by "
                             "n_head", path);
    if ((rc = zr_afile_open(&a, path)) != 0) return rc;
    rc = zr_afile_printf(&a,
        "{\n"
        "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
        "  \"model_type\": \"gpt2\",\n"
        "  \"vocab_size\": %d,\n"
        "  \"n_positions\": %d,\n"
        "  \"n_ctx\": %d,\n"
        "  \"n_embd\": %d,\n"
        "  \"n_layer\": %d,\n"
        "  \"n_head\": %d,\n"
        "  \"n_inner\": %d,\n"
        "  \"activation_function\": \"gelu_new\",\n"
        "  \"layer_norm_epsilon\": %.9g,\n"
        "  \"tie_word_embeddings\": %s,\n"
        "  \"torch_dtype\": \"float32\"\n"
        "}\n",
        c->vocab_size, c->n_positions, c->n_positions, c->n_embd, c->n_layer, c->n_head, c->n_inner,
        c->layer_norm_epsilon, c->tie_word_embeddings ? "true" : "false");
    if (rc) { zr_afile_abort(&a); return rc; }
    return zr_afile_commit(&a);
}
