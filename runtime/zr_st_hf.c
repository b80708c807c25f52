/*
** zr_st_hf.c — Hugging Face model folders on top of zr_st.c: reading a folder (config.json plus one
** model.safetensors, or the shards named by model.safetensors.index.json) with every name, shape,
** shard and config key checked and each problem located; writing one (config.json, one file or
** shards plus the index, fp32 or bf16) so that transformers' from_pretrained loads it.
** The config.json keys come as rows from the emitted tables (ZrHfKey: zgen decided them per arch);
** nothing here knows an arch.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_half.h"
#include "zr_json.h"
#include "zr_err.h"
#include "zr_st.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
#define MAX_JSON (64u << 20)    /* an index of a 1T-parameter model is a few MB */
/* The list of problems in a message: what fits beside the HINT in zr_train_error()'s 1024 bytes. */
#define MSG_CAP 560

/* The whole of a small text file, NUL-terminated; NULL with the message set. */
static char *slurp(const char *path, size_t *len, int *rc)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    long n;
    if (!f) {
        int e = errno;
        *rc = zr_train_fail(-e, "%s: cannot open: %s", path, strerror(e));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || (unsigned long)n > MAX_JSON ||
        fseek(f, 0, SEEK_SET) != 0 || !(b = malloc((size_t)n + 1)) || fread(b, 1, (size_t)n, f) != (size_t)n) {
        *rc = zr_train_fail(-EINVAL, "%s: cannot read it (larger than %u bytes, or an I/O error)", path,
                            MAX_JSON);
        free(b);
        fclose(f);
        return NULL;
    }
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static int is_file(const char *p) { struct stat s; return stat(p, &s) == 0 && S_ISREG(s.st_mode); }

/* {===== reading a folder */

void zr_st_model_close(ZrStModel *m)
{
    for (int i = 0; i < m->nf; i++) zr_st_close(&m->f[i]);
    free(m->f);
    m->f = NULL;
    m->nf = 0;
}

/* Opens the shards the index names and checks that index and files agree. */
static int open_index(ZrStModel *m, const char *dir)
{
    ZrJson j = { 0 };
    char err[200], name[ZR_ST_NAMELEN], file[256], other[256];
    char (*files)[256] = NULL;
    size_t len;
    int rc = 0, wm, nm, nf = 0;
    char *text = slurp(m->index, &len, &rc);
    if (!text) return rc;
    if ((rc = zr_json_parse(&j, text, len, err, sizeof err)) != 0) {
        rc = zr_train_fail(rc, "%s: not valid JSON: %s", m->index, err);
        goto out;
    }
    wm = j.t[0].type == ZR_JSON_OBJ ? zr_json_get(&j, 0, "weight_map") : -1;
    if (wm < 0 || j.t[wm].type != ZR_JSON_OBJ || j.t[wm].n == 0) {
        rc = zr_train_fail(-EINVAL, "%s: no \"weight_map\" object naming each tensor's file", m->index);
        goto out;
    }
    nm = j.t[wm].n;
    files = calloc((size_t)nm, sizeof *files);
    m->f = calloc((size_t)nm, sizeof *m->f);
    if (!files || !m->f) { rc = zr_train_fail(-ENOMEM, "%s: out of memory", m->index); goto out; }
    for (int k = 0; k < nm; k++) {      /* the distinct files, plain names only */
        int v = zr_json_item(&j, wm, 2 * k + 1), f;
        if (j.t[v].type != ZR_JSON_STR || zr_json_str(&j, v, file, sizeof file) != 0 || !file[0] ||
            strchr(file, '/') || file[0] == '.') {
            zr_json_str(&j, zr_json_item(&j, wm, 2 * k), name, sizeof name);
            rc = zr_train_fail(-EINVAL, "%s: weight_map[\"%s\"] is not a file name of this folder", m->index,
                               name);
            goto out;
        }
        for (f = 0; f < nf && strcmp(files[f], file); f++) {}
        if (f == nf) snprintf(files[nf++], sizeof files[0], "%s", file);
    }
    for (int f = 0; f < nf; f++) {
        char p[800];
        snprintf(p, sizeof p, "%s/%s", dir, files[f]);
        if ((rc = zr_st_open(&m->f[f], p)) != 0) goto out;
        m->nf++;
    }
    for (int k = 0; k < nm; k++) {      /* every entry where the index says */
        int key = zr_json_item(&j, wm, 2 * k), f, found = 0;
        if (zr_json_str(&j, key, name, sizeof name) != 0) {
            rc = zr_train_fail(-EINVAL, "%s: a weight_map name is longer than %d bytes", m->index,
                               ZR_ST_NAMELEN - 1);
            goto out;
        }
        zr_json_str(&j, key + 1, file, sizeof file);
        for (f = 0; f < nf && strcmp(files[f], file); f++) {}
        for (int i = 0; i < m->f[f].n && !found; i++) found = !strcmp(m->f[f].e[i].name, name);
        if (!found) {
            rc = zr_train_fail(-EINVAL, "%s: weight_map puts %s in %s, which holds no such tensor "
                               "(HINT: the index and the shards are of different saves)", m->index, name,
                               m->f[f].path);
            goto out;
        }
    }
    for (int f = 0; f < nf; f++)        /* and no shard tensor the index does not put there */
        for (int i = 0; i < m->f[f].n; i++) {
            int v = zr_json_get(&j, wm, m->f[f].e[i].name);
            if (v < 0 || zr_json_str(&j, v, other, sizeof other) != 0 || strcmp(other, files[f])) {
                rc = zr_train_fail(-EINVAL, "%s: holds %s, which %s %s%s (HINT: the index and the "
                                   "shards are of different saves)", m->f[f].path, m->f[f].e[i].name,
                                   m->index, v < 0 ? "does not list" : "puts in ", v < 0 ? "" : other);
                goto out;
            }
        }
out:
    zr_json_free(&j);
    free(text);
    free(files);
    return rc;
}

int zr_st_model_open(ZrStModel *m, const char *path)
{
    struct stat sb;
    char p[700];
    int rc;
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    if (stat(path, &sb) != 0) {
        int e = errno;
        return zr_train_fail(-e, "%s: %s", path, strerror(e));
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (!(m->f = calloc(1, sizeof *m->f))) return zr_train_fail(-ENOMEM, "%s: out of memory", path);
        if ((rc = zr_st_open(&m->f[0], path)) != 0) { zr_st_model_close(m); return rc; }
        m->nf = 1;
        return 0;
    }
    snprintf(m->config, sizeof m->config, "%s/config.json", path);
    if (!is_file(m->config)) m->config[0] = 0;
    snprintf(m->index, sizeof m->index, "%s/%s", path, INDEX_NAME);
    snprintf(p, sizeof p, "%s/%s", path, SINGLE_NAME);
    if (is_file(p)) {                   /* transformers prefers the single file too */
        m->index[0] = 0;
        if (!(m->f = calloc(1, sizeof *m->f))) return zr_train_fail(-ENOMEM, "%s: out of memory", path);
        if ((rc = zr_st_open(&m->f[0], p)) != 0) { zr_st_model_close(m); return rc; }
        m->nf = 1;
        return 0;
    }
    if (!is_file(m->index))
        return zr_train_fail(-ENOENT, "%s: a folder without %s or %s (HINT: pass a Hugging Face model "
                             "folder, one written by --export DIR, or a .safetensors file)", path,
                             SINGLE_NAME, INDEX_NAME);
    if ((rc = open_index(m, path)) != 0) zr_st_model_close(m);
    return rc;
}

int zr_st_model_find(const ZrStModel *m, const char *name, int *file, int *idx)
{
    for (int f = 0; f < m->nf; f++) {
        int i = zr_st_find(&m->f[f], name);
        if (i >= 0) { *file = f; *idx = i; return 0; }
    }
    return -ENOENT;
}

static void shape_str(char *out, size_t cap, int ndim, const int64_t *shape)
{
    size_t o = (size_t)snprintf(out, cap, "[");
    for (int k = 0; k < ndim && o < cap; k++)
        o += (size_t)snprintf(out + o, cap - o, "%s%lld", k ? ", " : "", (long long)shape[k]);
    if (o < cap) snprintf(out + o, cap - o, "]");
}

static int ignored(const char *name, const char *const *ignore, int ni)
{
    size_t n = strlen(name);
    for (int k = 0; k < ni; k++) {
        const char *s = ignore[k];
        size_t l = s ? strlen(s) : 0;
        if (!l) continue;
        if (s[0] == '.' ? n > l && !strcmp(name + n - l, s) : !strcmp(name, s)) return 1;
    }
    return 0;
}

int zr_st_model_check(const ZrStModel *m, const ZrStTensor *want, int n, const char *const *ignore, int ni)
{
    char msg[MSG_CAP], a[80], b[80];
    size_t o = 0;
    int bad = 0, total = 0;
    char **seen = calloc((size_t)m->nf + 1, sizeof *seen);
    int oom = !seen;
    for (int f = 0; !oom && f < m->nf; f++) {
        total += m->f[f].n;
        oom = !(seen[f] = calloc((size_t)m->f[f].n + 1, 1));
    }
    if (oom) {
        for (int f = 0; seen && f < m->nf; f++) free(seen[f]);
        free(seen);
        return zr_train_fail(-ENOMEM, "%s: out of memory", m->path);
    }
    msg[0] = 0;
#define NOTE(...)                                                                        \
    do {                                                                                 \
        bad++;                                                                           \
        if (o < sizeof msg) o += (size_t)snprintf(msg + o, sizeof msg - o, __VA_ARGS__); \
    } while (0)
    for (int i = 0; i < n; i++) {
        int f, idx, same;
        if (zr_st_model_find(m, want[i].name, &f, &idx) != 0) {
            NOTE("; missing %s", want[i].name);
            continue;
        }
        const ZrStEntry *e = &m->f[f].e[idx];
        seen[f][idx] = 1;
        same = e->ndim == want[i].ndim;
        for (int d = 0; same && d < want[i].ndim; d++) same = e->shape[d] == want[i].shape[d];
        if (!same) {
            shape_str(a, sizeof a, e->ndim, e->shape);
            shape_str(b, sizeof b, want[i].ndim, want[i].shape);
            NOTE("; %s: %s has shape %s, expected %s", m->f[f].path, e->name, a, b);
        }
    }
    for (int f = 0; f < m->nf; f++)
        for (int i = 0; i < m->f[f].n; i++)
            if (!seen[f][i] && !ignored(m->f[f].e[i].name, ignore, ni))
                NOTE("; %s: unexpected tensor %s", m->f[f].path, m->f[f].e[i].name);
#undef NOTE
    for (int f = 0; f < m->nf; f++) free(seen[f]);
    free(seen);
    if (o >= sizeof msg) memcpy(msg + sizeof msg - 5, " ...", 5);
    if (bad)
        return zr_train_fail(-EINVAL, "%s: %d problem%s in %d tensor%s of %d file%s%s (HINT: these weights "
                             "are not of this model: use a checkpoint with the spec's tensor names and "
                             "shapes, e.g. one written by --export of this plan, or generate the trainer "
                             "from its config.json with bin/zgen --spec-from-hf)", m->path, bad,
                             bad > 1 ? "s" : "", total, total == 1 ? "" : "s", m->nf, m->nf == 1 ? "" : "s",
                             msg);
    return 0;
}

/* }===== */

/* {===== config.json */

/* JSON values equal: numbers as doubles, strings decoded, containers member by member. */
static int jeq(const ZrJson *a, int ia, const ZrJson *b, int ib)
{
    const ZrJsonTok *x = &a->t[ia], *y = &b->t[ib];
    if (x->type != y->type) return 0;
    switch (x->type) {
    case ZR_JSON_NUM: {
        double u, v;
        if (zr_json_num(a, ia, &u) != 0 || zr_json_num(b, ib, &v) != 0) return 0;
        return u == v || fabs(u - v) <= 1e-12 * fabs(v);
    }
    case ZR_JSON_STR: {
        char s[256], t[256];
        return zr_json_str(a, ia, s, sizeof s) == 0 && zr_json_str(b, ib, t, sizeof t) == 0 && !strcmp(s, t);
    }
    case ZR_JSON_ARR:
        if (x->n != y->n) return 0;
        for (int k = 0; k < x->n; k++)
            if (!jeq(a, zr_json_item(a, ia, k), b, zr_json_item(b, ib, k))) return 0;
        return 1;
    case ZR_JSON_OBJ:
        if (x->n != y->n) return 0;
        for (int k = 0; k < x->n; k++) {
            char key[128];
            int kb;
            if (zr_json_str(a, zr_json_item(a, ia, 2 * k), key, sizeof key) != 0) return 0;
            if ((kb = zr_json_get(b, ib, key)) < 0 || !jeq(a, zr_json_item(a, ia, 2 * k + 1), b, kb)) return 0;
        }
        return 1;
    default:
        return 1;
    }
}

/* The value at key "k" or "a.b" (member b of object a); -1 when missing or null. */
static int lookup(const ZrJson *j, const char *key)
{
    char head[128];
    const char *dot;
    int v;
    if (!key) return -1;
    dot = strchr(key, '.');
    if (!dot) v = zr_json_get(j, 0, key);
    else {
        snprintf(head, sizeof head, "%.*s", (int)(dot - key), key);
        v = zr_json_get(j, 0, head);
        v = v >= 0 && j->t[v].type == ZR_JSON_OBJ ? zr_json_get(j, v, dot + 1) : -1;
    }
    return v >= 0 && j->t[v].type != ZR_JSON_NULL ? v : -1;
}

/* Value token i as text for a message (strings quoted; long values cut). */
static void show(const ZrJson *j, int i, char *out, size_t cap)
{
    const ZrJsonTok *t = &j->t[i];
    size_t s = t->start, e = t->end;
    int q = t->type == ZR_JSON_STR;
    if (e - s > 60) e = s + 60;
    snprintf(out, cap, "%s%.*s%s%s", q ? "\"" : "", (int)(e - s), j->text + s, q ? "\"" : "",
             e < t->end ? "..." : "");
}

int zr_st_hf_config_check(const char *path, const ZrHfKey *k, int n)
{
    ZrJson j = { 0 };
    char err[200], msg[MSG_CAP], got[80];
    size_t len, o = 0;
    int rc = 0, bad = 0;
    char *text = slurp(path, &len, &rc);
    if (!text) return rc;
    if ((rc = zr_json_parse(&j, text, len, err, sizeof err)) != 0 || j.t[0].type != ZR_JSON_OBJ) {
        rc = zr_train_fail(-EINVAL, "config.json %s: not a JSON object%s%s", path, rc ? ": " : "", rc ? err : "");
        goto out;
    }
    msg[0] = 0;
    for (int r = 0; r < n; r++) {
        ZrJson want = { 0 }, dflt = { 0 };
        const char *used = k[r].key;
        int v;
        if (!k[r].check) continue;
        if (zr_json_parse(&want, k[r].value, strlen(k[r].value), err, sizeof err) != 0) {
            rc = zr_train_fail(-EINVAL, "config.json %s: the trainer's value of \"%s\" is not JSON: %s (a "
                               "zgen bug)", path, k[r].key, err);
            goto out;
        }
        v = lookup(&j, k[r].key);
        if (v < 0 && k[r].alt) { v = lookup(&j, k[r].alt); used = k[r].alt; }
        if (v >= 0 && !jeq(&j, v, &want, 0)) {
            show(&j, v, got, sizeof got);
            bad++;
            if (o < sizeof msg)
                o += (size_t)snprintf(msg + o, sizeof msg - o, "; \"%s\" is %s, the model has %s", used, got,
                                      k[r].value);
        } else if (v < 0 && !k[r].absent) {
            bad++;
            if (o < sizeof msg)
                o += (size_t)snprintf(msg + o, sizeof msg - o, "; no \"%s\", the model has %s", k[r].key,
                                      k[r].value);
        } else if (v < 0 && k[r].absent[0] &&
                   (zr_json_parse(&dflt, k[r].absent, strlen(k[r].absent), err, sizeof err) != 0 ||
                    !jeq(&dflt, 0, &want, 0))) {
            bad++;
            if (o < sizeof msg)
                o += (size_t)snprintf(msg + o, sizeof msg - o, "; \"%s\" is missing, which means %s, the "
                                      "model has %s", k[r].key, k[r].absent, k[r].value);
        }
        zr_json_free(&dflt);
        zr_json_free(&want);
    }
    if (o >= sizeof msg) memcpy(msg + sizeof msg - 5, " ...", 5);
    if (bad)
        rc = zr_train_fail(-EINVAL, "config.json %s: %d key%s disagree%s with the model%s (HINT: these "
                           "weights are of another model: generate the trainer from this config.json with "
                           "bin/zgen --spec-from-hf, or load the folder of this model)", path, bad,
                           bad > 1 ? "s" : "", bad > 1 ? "" : "s", msg);
out:
    zr_json_free(&j);
    free(text);
    return rc;
}

int zr_st_hf_config_write(const char *path, const ZrHfKey *k, int n, const char *torch_dtype)
{
    ZrAfile a;
    ZrJson j = { 0 };
    char err[200];
    size_t cap = 64 + strlen(torch_dtype), len = 0;
    int rc;
    for (int r = 0; r < n; r++)
        if (k[r].write) cap += strlen(k[r].key) + strlen(k[r].value) + 8;
    char *text = malloc(cap);
    if (!text) return zr_train_fail(-ENOMEM, "config.json %s: out of memory", path);
    len += (size_t)snprintf(text + len, cap - len, "{\n");
    for (int r = 0; r < n; r++)
        if (k[r].write) len += (size_t)snprintf(text + len, cap - len, "  \"%s\": %s,\n", k[r].key, k[r].value);
    len += (size_t)snprintf(text + len, cap - len, "  \"torch_dtype\": \"%s\"\n}\n", torch_dtype);
    /* the rows come from zgen; a malformed one must not reach a file transformers would reject */
    if ((rc = zr_json_parse(&j, text, len, err, sizeof err)) != 0) {
        free(text);
        return zr_train_fail(rc, "config.json %s: the text would not be JSON: %s (a zgen bug)", path, err);
    }
    zr_json_free(&j);
    rc = zr_afile_open(&a, path);
    if (!rc && (rc = zr_afile_write(&a, text, len)) != 0) zr_afile_abort(&a);
    else if (!rc) rc = zr_afile_commit(&a);
    free(text);
    return rc;
}

/* }===== */

/* {===== writing a folder */

static int64_t numel(const ZrStTensor *t)
{
    int64_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= t->shape[k];
    return n;
}

int zr_st_write_dtype(const char *path, const ZrStTensor *t, int n, int dtype, const char *const *metadata)
{
    enum { CHUNK = 1 << 18 };
    ZrStStream s;
    uint16_t *half = NULL;
    int rc;
    if (dtype == ZR_DT_FP32) return zr_st_write(path, t, n, metadata);
    if (dtype != ZR_DT_BF16) return zr_train_fail(-EINVAL, "safetensors %s: writes F32 or BF16 only", path);
    if (!(half = malloc(CHUNK * sizeof *half))) return zr_train_fail(-ENOMEM, "%s: out of memory", path);
    if ((rc = zr_st_stream_begin(&s, path, t, n, ZR_DT_BF16, metadata)) != 0) goto out;
    for (int i = 0; i < n && !rc; i++)
        for (int64_t lo = 0, ne = numel(&t[i]); lo < ne && !rc; lo += CHUNK) {
            int64_t c = ne - lo < CHUNK ? ne - lo : CHUNK;
            zr_f32_to_bf16_n(half, t[i].data + lo, c);
            rc = zr_st_stream_write(&s, half, (size_t)c * 2);   /* aborts the stream on error */
        }
    if (!rc) rc = zr_st_stream_end(&s);
out:
    free(half);
    return rc;
}

int zr_st_write_model(const char *dir, const ZrStTensor *t, int n, int dtype, uint64_t shard_bytes,
                      const char *const *metadata)
{
    char p[800], file[64];
    uint64_t total = 0, cur = 0;
    int esize = dtype == ZR_DT_FP32 ? 4 : 2, nshard = 0, rc = 0;
    int *first = malloc(((size_t)n + 2) * sizeof *first);
    ZrAfile a;
    if (!first) return zr_train_fail(-ENOMEM, "%s: out of memory", dir);
    if (!shard_bytes) shard_bytes = ZR_ST_SHARD_BYTES;
    /* transformers' rule: a shard takes tensors in order while they fit; one too large goes alone */
    for (int i = 0; i < n; i++) {
        uint64_t b = (uint64_t)numel(&t[i]) * (uint64_t)esize;
        if (i == 0 || (cur > 0 && cur + b > shard_bytes)) { first[nshard++] = i; cur = 0; }
        cur += b;
        total += b;
    }
    first[nshard] = n;
    if (nshard <= 1) {
        snprintf(p, sizeof p, "%s/%s", dir, INDEX_NAME);
        unlink(p);                      /* a stale index beside the single file would mislead readers */
        snprintf(p, sizeof p, "%s/%s", dir, SINGLE_NAME);
        rc = zr_st_write_dtype(p, t, n, dtype, metadata);
        free(first);
        return rc;
    }
    for (int s = 0; s < nshard && !rc; s++) {
        snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, nshard);
        snprintf(p, sizeof p, "%s/%s", dir, file);
        rc = zr_st_write_dtype(p, t + first[s], first[s + 1] - first[s], dtype, metadata);
    }
    if (rc) { free(first); return rc; }
    snprintf(p, sizeof p, "%s/%s", dir, INDEX_NAME);
    if ((rc = zr_afile_open(&a, p)) == 0) {
        rc = zr_afile_printf(&a, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n",
                             (unsigned long long)total);
        for (int s = 0; s < nshard && !rc; s++)
            for (int i = first[s]; i < first[s + 1] && !rc; i++)
                rc = zr_afile_printf(&a, "    \"%s\": \"model-%05d-of-%05d.safetensors\"%s\n", t[i].name, s + 1,
                                     nshard, i + 1 < n ? "," : "");
        if (!rc) rc = zr_afile_printf(&a, "  }\n}\n");
        if (rc) zr_afile_abort(&a);
        else rc = zr_afile_commit(&a);
    }
    snprintf(p, sizeof p, "%s/%s", dir, SINGLE_NAME);
    if (!rc) unlink(p);                 /* transformers would load a stale single file first */
    free(first);
    return rc;
}

/* }===== */
