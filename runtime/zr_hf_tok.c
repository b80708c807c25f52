/*
** zr_hf_tok.c — the parts of a Hugging Face model folder that are not weights: the special-token
** ids that config.json and generation_config.json carry, the generation defaults of the model a
** run started from, and the tokenizer's own files. Without them AutoTokenizer.from_pretrained
** cannot load an export, and generate() falls back on LlamaConfig's ids (bos 1, eos 2) and stops
** on the wrong token. Every source is read and checked when it is added (zr_st.h), before the
** export writes anything; the files are then written one by one through zr_afile, as the weights
** and config.json are.
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_json.h"
#include "zr_err.h"
#include "zr_st.h"

#define MAX_JSON (64u << 20)
#define ID_LIST_MAX 32          /* eos lists in the wild hold 2-3 ids */
#define PATHCAP (2 * 4096 + 64)   /* a folder (ZrHfExtra.tok_dir) and a file name */

const char *const zr_hf_id_keys[ZR_HF_NIDS] = {"bos_token_id", "eos_token_id", "pad_token_id"};

/* The files transformers' tokenizers read from a folder, in the order copied; `loads` marks those
** a tokenizer can be built from (the others only configure one, so alone they are no tokenizer). */
static const struct { const char *name; int loads; } tok_names[] = {
    {"tokenizer.json", 1}, {"tokenizer.model", 1}, {"vocab.json", 1}, {"vocab.txt", 1},
    {"merges.txt", 0}, {"tokenizer_config.json", 0}, {"special_tokens_map.json", 0},
    {"added_tokens.json", 0}, {"chat_template.jinja", 0}, {"chat_template.json", 0},
};
#define N_TOK_NAMES ((int)(sizeof tok_names / sizeof tok_names[0]))
_Static_assert(N_TOK_NAMES <= ZR_HF_TOK_FILES, "ZrHfExtra.tok_files holds every known name");
#define LOADERS "tokenizer.json, tokenizer.model, vocab.json or vocab.txt"

void zr_hf_extra_init(ZrHfExtra *x) { memset(x, 0, sizeof *x); }

void zr_hf_extra_free(ZrHfExtra *x)
{
    free(x->gen_base);
    x->gen_base = NULL;
}

void zr_hf_extra_set_tokens(ZrHfExtra *x, const int *tok)
{
    for (int k = 0; k < ZR_HF_NIDS; k++)
        if (tok[k] >= 0 && !x->id[k][0]) {
            snprintf(x->id[k], sizeof x->id[k], "%d", tok[k]);
            x->id_from_tokens[k] = 1;
        }
}

/* A file that must be readable: stat follows links, so a dangling one is caught here too. */
static int check_readable(const char *path)
{
    struct stat sb;
    FILE *f;
    if (stat(path, &sb) != 0) {
        int e = errno;
        return zr_train_fail(-e, "%s: cannot read: %s%s", path, strerror(e),
                             e == ENOENT ? " (a link to nothing?)" : "");
    }
    if (!S_ISREG(sb.st_mode)) return zr_train_fail(-EINVAL, "%s: cannot read: not a regular file", path);
    if (!(f = fopen(path, "rb"))) {
        int e = errno;
        return zr_train_fail(-e, "%s: cannot read: %s", path, strerror(e));
    }
    fclose(f);
    return 0;
}

/* path's text when it holds a JSON object, malloc'd in *out; 0 with *out NULL when there is no
** such file. */
static int read_object(const char *path, char **out)
{
    struct stat sb;
    ZrJson j;
    char err[160];
    FILE *f;
    long n;
    int rc;
    *out = NULL;
    if (lstat(path, &sb) != 0 && errno == ENOENT) return 0;
    if ((rc = check_readable(path)) != 0) return rc;
    if (!(f = fopen(path, "rb"))) return zr_train_fail(-EIO, "%s: cannot read", path);
    char *b = NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || (unsigned long)n > MAX_JSON ||
        fseek(f, 0, SEEK_SET) != 0 || !(b = malloc((size_t)n + 1)) || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(b);
        return zr_train_fail(-EIO, "%s: cannot read it (larger than %u bytes, or an I/O error)", path, MAX_JSON);
    }
    fclose(f);
    b[n] = 0;
    if ((rc = zr_json_parse(&j, b, (size_t)n, err, sizeof err)) != 0 || j.t[0].type != ZR_JSON_OBJ) {
        if (!rc) zr_json_free(&j);
        free(b);
        return zr_train_fail(-EINVAL, "%s: not a JSON object%s%s", path, rc ? ": " : "", rc ? err : "");
    }
    zr_json_free(&j);
    *out = b;
    return 0;
}

/* The raw text of token i: a string with its quotes, a container with its brackets. */
static void span(const ZrJson *j, int i, size_t *a, size_t *b)
{
    *a = j->t[i].start;
    *b = j->t[i].end;
    if (j->t[i].type == ZR_JSON_STR) { (*a)--; (*b)++; }
}

/* Value token v as id text ("2" or "[1, 2]") in out; 1 when it is null or negative; -EINVAL when it is neither
** a token id nor a list of them. *list: the list's ids, for the eos rule. */
static int id_text(const ZrJson *j, int v, char *out, size_t cap, int64_t *list, int *nlist)
{
    int64_t id;
    size_t o = 0;
    *nlist = 0;
    if (j->t[v].type == ZR_JSON_NULL) return 1;
    if (j->t[v].type == ZR_JSON_NUM) {
        if (zr_json_i64(j, v, &id) != 0 || id > INT32_MAX) return -EINVAL;
        if (id < 0) return 1;   /* old LLaMA configs say "pad_token_id": -1 for none */
        snprintf(out, cap, "%lld", (long long)id);
        return 0;
    }
    if (j->t[v].type != ZR_JSON_ARR || j->t[v].n < 1 || j->t[v].n > ID_LIST_MAX) return -EINVAL;
    o += (size_t)snprintf(out, cap, "[");
    for (int k = 0; k < j->t[v].n; k++) {
        if (zr_json_i64(j, zr_json_item(j, v, k), &id) != 0 || id < 0 || id > INT32_MAX) return -EINVAL;
        list[(*nlist)++] = id;
        o += (size_t)snprintf(out + o, cap - o, "%s%lld", k ? ", " : "", (long long)id);
    }
    snprintf(out + o, cap - o, "]");
    return 0;
}

/* The ids of object `obj` (a config.json, a generation_config.json or a checkpoint's record) fill
** those still unset; with fill = 0 only the eos rule applies. `what` names the source. */
static int take_ids(ZrHfExtra *x, const ZrJson *j, int obj, const char *what, int fill)
{
    for (int k = 0; k < ZR_HF_NIDS; k++) {
        char text[ZR_HF_ID_TEXT];
        int64_t list[ID_LIST_MAX];
        int nl, v = zr_json_get(j, obj, zr_hf_id_keys[k]), rc;
        if (v < 0) continue;
        if ((rc = id_text(j, v, text, sizeof text, list, &nl)) < 0) {
            size_t a, b;
            span(j, v, &a, &b);
            if (b - a > 60) b = a + 60;
            return zr_train_fail(-EINVAL, "%s: \"%s\" is %.*s, not a token id or a list of them", what,
                                 zr_hf_id_keys[k], (int)(b - a), j->text + a);
        }
        if (rc == 1) continue;
        if (!x->id[k][0]) {
            if (fill) snprintf(x->id[k], sizeof x->id[k], "%s", text);
        } else if (k == ZR_HF_EOS && x->id_from_tokens[k] && x->id[k][0] != '[') {
            long ours = strtol(x->id[k], NULL, 10);
            for (int i = 0; i < nl; i++)
                if (list[i] == ours) { snprintf(x->id[k], sizeof x->id[k], "%s", text); break; }
        }
    }
    return 0;
}

/* The tokenizer files of dir into x. required: a missing folder, or one without a file a
** tokenizer loads from, is an error; otherwise it just adds nothing. */
static int find_tok(ZrHfExtra *x, const char *dir, int required)
{
    struct stat sb;
    const char *found[ZR_HF_TOK_FILES];
    char p[PATHCAP];
    int n = 0, loads = 0, rc;
    if (stat(dir, &sb) != 0) {
        int e = errno;
        if (!required) return 0;
        return zr_train_fail(-e, "tokenizer folder %s: %s (HINT: give the folder holding the model's "
                             "tokenizer files, " LOADERS ", e.g. the base model's Hugging Face folder)",
                             dir, strerror(e));
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (!required) return 0;
        return zr_train_fail(-ENOTDIR, "tokenizer folder %s: not a folder (HINT: give the folder holding "
                             "the model's tokenizer files, " LOADERS ")", dir);
    }
    for (int k = 0; k < N_TOK_NAMES; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, tok_names[k].name);
        if (lstat(p, &sb) != 0) continue;
        if ((rc = check_readable(p)) != 0) return rc;
        found[n++] = tok_names[k].name;
        loads |= tok_names[k].loads;
    }
    if (!loads) {
        if (!required) return 0;
        return zr_train_fail(-ENOENT, "tokenizer folder %s: holds no " LOADERS " (HINT: give the folder "
                             "of the model's Hugging Face tokenizer, e.g. the base model's folder, or one "
                             "written by tokenizer.save_pretrained)", dir);
    }
    if (strlen(dir) >= sizeof x->tok_dir) return zr_train_fail(-ENAMETOOLONG, "%s: path too long", dir);
    if (!realpath(dir, x->tok_abs)) {
        int e = errno;
        return zr_train_fail(-e, "tokenizer folder %s: %s", dir, strerror(e));
    }
    snprintf(x->tok_dir, sizeof x->tok_dir, "%s", dir);
    memcpy(x->tok_files, found, (size_t)n * sizeof *found);
    x->n_tok = n;
    return 0;
}

int zr_hf_extra_add_tokenizer(ZrHfExtra *x, const char *dir)
{
    return x->tok_dir[0] ? 0 : find_tok(x, dir, 1);
}

int zr_hf_extra_add_folder(ZrHfExtra *x, const char *dir)
{
    struct stat sb;
    char p[PATHCAP], *text = NULL;
    int rc;
    if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return 0;
    snprintf(p, sizeof p, "%s/config.json", dir);
    if ((rc = read_object(p, &text)) != 0) return rc;
    if (text) {
        ZrJson j;
        char err[160];
        if ((rc = zr_json_parse(&j, text, strlen(text), err, sizeof err)) == 0) {
            rc = take_ids(x, &j, 0, p, 1);
            zr_json_free(&j);
        }
        free(text);
        if (rc) return rc;
    }
    snprintf(p, sizeof p, "%s/generation_config.json", dir);
    if ((rc = read_object(p, &text)) != 0) return rc;
    if (text) {
        ZrJson j;
        char err[160];
        if ((rc = zr_json_parse(&j, text, strlen(text), err, sizeof err)) == 0) {
            rc = take_ids(x, &j, 0, p, 0);
            zr_json_free(&j);
        }
        if (rc || x->gen_base) free(text);
        else x->gen_base = text;
        if (rc) return rc;
    }
    return x->tok_dir[0] ? 0 : find_tok(x, dir, 0);
}

int zr_hf_extra_add_meta(ZrHfExtra *x, const char *meta)
{
    ZrJson j;
    char err[160], dir[sizeof x->tok_abs];
    int rc, h, g, t;
    if (!meta || zr_json_parse(&j, meta, strlen(meta), err, sizeof err) != 0) return 0;
    h = j.t[0].type == ZR_JSON_OBJ ? zr_json_get(&j, 0, "hf_extra") : -1;
    if (h < 0 || j.t[h].type != ZR_JSON_OBJ) { zr_json_free(&j); return 0; }
    if ((rc = take_ids(x, &j, h, "checkpoint meta hf_extra", 1)) != 0) goto out;
    g = zr_json_get(&j, h, "generation_config");
    if (g >= 0 && j.t[g].type == ZR_JSON_OBJ && !x->gen_base) {
        size_t a, b;
        span(&j, g, &a, &b);
        if (!(x->gen_base = malloc(b - a + 1))) { rc = zr_train_fail(-ENOMEM, "out of memory"); goto out; }
        memcpy(x->gen_base, meta + a, b - a);
        x->gen_base[b - a] = 0;
    }
    t = zr_json_get(&j, h, "tokenizer");
    if (t >= 0 && !x->tok_dir[0] && zr_json_str(&j, t, dir, sizeof dir) == 0 && dir[0]) {
        if ((rc = find_tok(x, dir, 0)) != 0) {
            char why[1024];
            snprintf(why, sizeof why, "%s", zr_train_error());
            rc = zr_train_fail(rc, "the tokenizer folder the checkpoint records: %s (HINT: --tokenizer "
                               "DIR takes the tokenizer from another folder)", why);
            goto out;
        }
        if (!x->tok_dir[0]) snprintf(x->tok_gone, sizeof x->tok_gone, "%s", dir);
    }
out:
    zr_json_free(&j);
    return rc;
}

/* s as a JSON string body (quotes and backslashes escaped, control bytes as \u00XX). */
static size_t put_escaped(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { out[o++] = '\\'; out[o++] = (char)c; }
        else if (c < 0x20) o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        else out[o++] = (char)c;
    }
    out[o] = 0;
    return o;
}

char *zr_hf_extra_meta(const ZrHfExtra *x)
{
    size_t cap = 64 + ZR_HF_NIDS * (ZR_HF_ID_TEXT + 24) + (x->gen_base ? strlen(x->gen_base) + 24 : 0) +
                 6 * strlen(x->tok_abs) + 24, o;
    const char *sep = "";
    char *out = malloc(cap);
    if (!out) return NULL;
    o = (size_t)snprintf(out, cap, "{");
    for (int k = 0; k < ZR_HF_NIDS; k++)
        if (x->id[k][0]) {
            o += (size_t)snprintf(out + o, cap - o, "%s\"%s\":%s", sep, zr_hf_id_keys[k], x->id[k]);
            sep = ",";
        }
    if (x->gen_base) {
        o += (size_t)snprintf(out + o, cap - o, "%s\"generation_config\":%s", sep, x->gen_base);
        sep = ",";
    }
    if (x->n_tok) {
        o += (size_t)snprintf(out + o, cap - o, "%s\"tokenizer\":\"", sep);
        o += put_escaped(out + o, cap - o, x->tok_abs);
        o += (size_t)snprintf(out + o, cap - o, "\"");
    }
    snprintf(out + o, cap - o, "}");
    return out;
}

int zr_hf_extra_config_write(const char *path, const ZrHfKey *k, int n, const char *torch_dtype,
                             const ZrHfExtra *x)
{
    ZrHfKey *rows = malloc(((size_t)n + ZR_HF_NIDS) * sizeof *rows);
    int m = 0, rc;
    if (!rows) return zr_train_fail(-ENOMEM, "config.json %s: out of memory", path);
    for (int r = 0; r < n; r++) {
        int ours = 0;
        for (int i = 0; x && i < ZR_HF_NIDS; i++) ours |= x->id[i][0] && !strcmp(k[r].key, zr_hf_id_keys[i]);
        if (!ours) rows[m++] = k[r];
    }
    for (int i = 0; x && i < ZR_HF_NIDS; i++)
        if (x->id[i][0]) rows[m++] = (ZrHfKey){zr_hf_id_keys[i], NULL, x->id[i], NULL, 1, 0};
    rc = zr_st_hf_config_write(path, rows, m, torch_dtype);
    free(rows);
    return rc;
}

/* generation_config.json: our ids, then the source's other members as they were. */
static int write_genconf(const ZrHfExtra *x, const char *path)
{
    ZrJson j = {0};
    char err[160];
    size_t cap = 64 + ZR_HF_NIDS * (ZR_HF_ID_TEXT + 24), o, a, b, ka, kb;
    int members = 0, rc;
    if (x->gen_base) {
        if ((rc = zr_json_parse(&j, x->gen_base, strlen(x->gen_base), err, sizeof err)) != 0)
            return zr_train_fail(rc, "%s: the source's generation_config is not JSON: %s", path, err);
        cap += 2 * strlen(x->gen_base);
    }
    char *out = malloc(cap);
    if (!out) { zr_json_free(&j); return zr_train_fail(-ENOMEM, "%s: out of memory", path); }
    o = (size_t)snprintf(out, cap, "{");
    for (int k = 0; k < ZR_HF_NIDS; k++)
        if (x->id[k][0])
            o += (size_t)snprintf(out + o, cap - o, "%s\n  \"%s\": %s", members++ ? "," : "", zr_hf_id_keys[k],
                                  x->id[k]);
    for (int m = 0; x->gen_base && m < j.t[0].n; m++) {
        int key = zr_json_item(&j, 0, 2 * m), val = zr_json_item(&j, 0, 2 * m + 1), ours = 0;
        /* transformers sets it on a config it derived from config.json itself; this one is ours */
        if (zr_json_str_eq(&j, key, "_from_model_config")) continue;
        for (int k = 0; k < ZR_HF_NIDS; k++) ours |= x->id[k][0] && zr_json_str_eq(&j, key, zr_hf_id_keys[k]);
        if (ours) continue;
        span(&j, key, &ka, &kb);
        span(&j, val, &a, &b);
        o += (size_t)snprintf(out + o, cap - o, "%s\n  %.*s: %.*s", members++ ? "," : "", (int)(kb - ka),
                              x->gen_base + ka, (int)(b - a), x->gen_base + a);
    }
    o += (size_t)snprintf(out + o, cap - o, "\n}\n");
    zr_json_free(&j);
    rc = members ? zr_afile_put(path, out, o) : 0;
    free(out);
    return rc;
}

/* src into dst through a temp file and rename; nothing to do when they are one file (an export
** into the tokenizer's own folder). */
static int copy_file(const char *src, const char *dst)
{
    enum { CHUNK = 1 << 20 };
    struct stat a, b;
    ZrAfile o;
    FILE *in;
    char *buf;
    size_t n;
    int rc;
    if (stat(src, &a) == 0 && stat(dst, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return 0;
    if (!(in = fopen(src, "rb"))) {
        int e = errno;
        return zr_train_fail(-e, "%s: cannot read: %s", src, strerror(e));
    }
    if (!(buf = malloc(CHUNK))) { fclose(in); return zr_train_fail(-ENOMEM, "%s: out of memory", dst); }
    if ((rc = zr_afile_open(&o, dst)) == 0) {
        while (!rc && (n = fread(buf, 1, CHUNK, in)) > 0) rc = zr_afile_write(&o, buf, n);
        if (!rc && ferror(in)) rc = zr_train_fail(-EIO, "%s: read failed", src);
        if (rc) zr_afile_abort(&o);
        else rc = zr_afile_commit(&o);
    }
    free(buf);
    fclose(in);
    return rc;
}

int zr_hf_extra_write(const ZrHfExtra *x, const char *dir)
{
    char p[PATHCAP], s[PATHCAP];
    struct stat sb;
    int rc;
    snprintf(p, sizeof p, "%s/generation_config.json", dir);
    if ((rc = write_genconf(x, p)) != 0) return rc;
    for (int k = 0; k < x->n_tok; k++) {
        snprintf(s, sizeof s, "%s/%s", x->tok_dir, x->tok_files[k]);
        snprintf(p, sizeof p, "%s/%s", dir, x->tok_files[k]);
        if ((rc = copy_file(s, p)) != 0) return rc;
    }
    for (int k = 0; x->n_tok && k < N_TOK_NAMES; k++) {
        int ours = 0;
        for (int i = 0; i < x->n_tok; i++) ours |= !strcmp(x->tok_files[i], tok_names[k].name);
        snprintf(p, sizeof p, "%s/%s", dir, tok_names[k].name);
        if (!ours && lstat(p, &sb) == 0 && unlink(p) != 0) {
            int e = errno;
            return zr_train_fail(-e, "%s: cannot remove this stale tokenizer file: %s", p, strerror(e));
        }
    }
    return 0;
}

void zr_hf_extra_note(const ZrHfExtra *x, const char *dir, char *out, size_t cap)
{
    char why[PATHCAP];
    if (x->tok_gone[0])
        snprintf(why, sizeof why, "the tokenizer folder the checkpoint records, %s, holds none now", x->tok_gone);
    else
        snprintf(why, sizeof why, "no --tokenizer DIR, and none in the model folder or checkpoint it comes from");
    snprintf(out, cap, "%s carries no tokenizer (%s): AutoTokenizer.from_pretrained on it will fail.\n"
             "---> HINT: pass --tokenizer DIR, the folder holding the model's tokenizer files (" LOADERS
             ", tokenizer_config.json, ...), or copy them into %s", dir, why, dir);
}
