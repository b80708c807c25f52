/*
** hf.c — `zgen --spec-from-hf config.json|DIR [-o SPEC.yaml] [--name NAME]`: writes the spec of a
** Hugging Face model from its config.json, so a user starts from the model they have (its weights
** then load with the trainer's --init-from). Which config keys map to which spec keys, and which
** values the arch refuses, are the arch file's tables (ZgArch hf_keys, hf_refusals; gen/arch_*.c);
** a config zgen cannot train (biases in a llama, another activation, a sliding window, a head size
** other than hidden_size / num_attention_heads, rope scaling other than llama3) is refused naming
** the key, not approximated.
** The written spec has no `deepspeed:` line (the user names a config with -c or adds the line) and
** trains at world size 1 with seq_len = min(context, 2048); both are the user's to change.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "zg_arch.h"

typedef struct Buf {
    char *s;
    size_t n, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *t = NULL;
    int k = vasprintf(&t, fmt, ap);
    va_end(ap);
    if (k < 0) zg_unreachable();
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = zg_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, t, (size_t)k + 1);
    b->n += (size_t)k;
    free(t);
}

/* A scalar value as spec text, checked for its type; NULL after reporting. */
static const char *value(const ZgNode *v, const char *key, char type)
{
    int64_t i;
    double d;
    if (v->kind == ZG_NSCALAR && !v->quoted) {
        if (type == 'i' && zg_parse_int64(v->scalar, &i) && i > 0) return v->scalar;
        if (type == 'n' && zg_parse_double(v->scalar, &d) && d > 0) return v->scalar;
        if (type == 'b' && (!strcmp(v->scalar, "true") || !strcmp(v->scalar, "false"))) return v->scalar;
    }
    zg_error(v->loc, "config.json \"%s\" must be %s", key,
             type == 'i' ? "a positive integer" : type == 'n' ? "a positive number" : "true or false");
    return NULL;
}

static const ZgNode *get(const ZgNode *root, const char *key)
{
    const ZgNode *v = zg_node_get(root, key);
    return v && !zg_node_is_null(v) ? v : NULL;
}

/* The value of a config.json scalar as JSON text ("true", "\"silu\""); a kind name otherwise. */
static char *json_text(const ZgNode *v)
{
    if (v->kind != ZG_NSCALAR) return zg_xstrdup(zg_node_kind_name(v));
    return v->quoted ? zg_fmt("\"%s\"", v->scalar) : zg_xstrdup(v->scalar);
}

/* What the arch cannot express: refused by name. */
static void refusals(const ZgArch *a, const ZgNode *root)
{
    for (int i = 0; i < a->n_hf_refusals; i++) {
        const ZgHfRefusal *r = &a->hf_refusals[i];
        const ZgNode *v = get(root, r->key);
        if (!v) continue;
        char *got = json_text(v);
        if (strcmp(got, r->want) != 0) {
            zg_error(v->loc, "config.json \"%s\": %s is not supported", r->key, got);
            zg_note(v->loc, "\"%s\" must be %s%s for arch %s: %s", r->key, r->want,
                    strcmp(r->want, "null") ? "" : " or absent", a->name, r->why);
        }
        free(got);
    }
}

/* Rotary archs: the head size is d_model / n_heads. */
static void head_dim(const ZgNode *root)
{
    const ZgNode *hd = get(root, "head_dim"), *c = get(root, "hidden_size"), *h = get(root, "num_attention_heads");
    int64_t vhd, vc, vh;
    if (hd && c && h && hd->kind == ZG_NSCALAR && c->kind == ZG_NSCALAR && h->kind == ZG_NSCALAR &&
        zg_parse_int64(hd->scalar, &vhd) && zg_parse_int64(c->scalar, &vc) && zg_parse_int64(h->scalar, &vh) &&
        vh > 0 && vhd * vh != vc) {
        zg_error(hd->loc, "config.json \"head_dim\" %lld is not hidden_size / num_attention_heads = %lld",
                 (long long)vhd, (long long)(vc / vh));
        zg_note(hd->loc, "zgen's head size is d_model / n_heads");
    }
}

static void rope_scaling(const ZgNode *root, Buf *b)
{
    const ZgNode *rs = get(root, "rope_scaling");
    if (!rs) {
        put(b, "  rope_scaling: none\n");
        return;
    }
    if (rs->kind != ZG_NMAP) {
        zg_error(rs->loc, "config.json \"rope_scaling\" must be null or a mapping");
        return;
    }
    const ZgNode *t = get(rs, "rope_type");
    if (!t) t = get(rs, "type");
    if (!t || t->kind != ZG_NSCALAR || strcmp(t->scalar, "llama3") != 0) {
        zg_error(t ? t->loc : rs->loc, "config.json rope_scaling type %s is not supported",
                 t && t->kind == ZG_NSCALAR ? t->scalar : "(none)");
        zg_note(t ? t->loc : rs->loc, "zgen implements LLaMA 3's frequency scaling (rope_type \"llama3\")");
        return;
    }
    static const char *const hf[] = {"factor", "low_freq_factor", "high_freq_factor",
                                     "original_max_position_embeddings"};
    static const char *const spec[] = {"factor", "low_freq_factor", "high_freq_factor", "original_context"};
    put(b, "  rope_scaling: {type: llama3");
    for (int i = 0; i < 4; i++) {
        const ZgNode *v = get(rs, hf[i]);
        const char *s = NULL;
        if (!v) zg_error(rs->loc, "config.json rope_scaling has no \"%s\"", hf[i]);
        else s = value(v, hf[i], i == 3 ? 'i' : 'n');
        put(b, ", %s: %s", spec[i], s ? s : "?");
    }
    put(b, "}\n");
}

/* [a-z][a-z0-9_]* from the config's folder name (Llama-2-7b-hf -> llama_2_7b_hf). */
static char *name_from_path(const char *path)
{
    char *p = zg_xstrdup(path), *slash = strrchr(p, '/');
    const char *base = "model";
    if (slash) {
        *slash = 0;
        const char *dir = strrchr(p, '/');
        dir = dir ? dir + 1 : p;
        if (*dir && strcmp(dir, ".") && strcmp(dir, "..")) base = dir;
    }
    char *out = zg_xmalloc(strlen(base) + 3), *o = out;
    for (const char *c = base; *c && o - out < 60; c++) {
        char ch = (char)tolower((unsigned char)*c);
        if (islower((unsigned char)ch) || isdigit((unsigned char)ch)) *o++ = ch;
        else if (o > out && o[-1] != '_') *o++ = '_';
    }
    while (o > out && o[-1] == '_') o--;
    *o = 0;
    if (!islower((unsigned char)out[0])) {
        char *m = zg_fmt("m_%s", out);
        return m;
    }
    return out;
}

/* The spec text for the config at `path`; NULL after reporting. */
static char *spec_from_hf(const char *path, const char *name)
{
    ZgNode *root = zg_node_load_file(path);
    if (!root) return NULL;
    if (root->kind != ZG_NMAP) {
        zg_error(root->loc, "a Hugging Face config.json is a JSON object, not %s", zg_node_kind_name(root));
        return NULL;
    }
    const ZgNode *mt = get(root, "model_type");
    const ZgArch *a = mt && mt->kind == ZG_NSCALAR ? zg_arch_find_hf(mt->scalar) : NULL;
    if (!a) {
        ZgLoc at = mt ? mt->loc : root->loc;
        zg_error(at, "config.json \"model_type\" %s%s%s is not one zgen trains", mt ? "\"" : "",
                 mt && mt->kind == ZG_NSCALAR ? mt->scalar : "(missing)", mt ? "\"" : "");
        char list[512] = "";
        for (int i = 0; zg_arch_at(i); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\" (%s)", i ? ", " : "",
                     zg_arch_at(i)->hf_model_type, zg_arch_at(i)->hf_class);
        zg_note(at, "zgen writes specs for model_type %s", list);
        return NULL;
    }
    Buf b = {0};
    put(&b, "# %s: written by zgen --spec-from-hf from %s (%s).\n", name, path, a->hf_class);
    put(&b, "# Name a DeepSpeed config with -c, or add `deepspeed: ds_config.json`; set train.world_size.\n");
    put(&b, "name: %s\nmodel:\n  arch: %s\n", name, a->name);
    int64_t context = 0;
    for (int i = 0; i < a->n_hf_keys; i++) {
        const ZgHfSpecKey *k = &a->hf_keys[i];
        const ZgNode *v = get(root, k->hf);
        if (!v && k->alt) v = get(root, k->alt);
        const char *s = NULL;
        if (v) s = value(v, k->hf, k->type);
        else if (!k->def) zg_error(root->loc, "config.json has no \"%s\" (needed for model.%s)", k->hf, k->spec);
        else if (k->def[0]) s = k->def;
        if (s) put(&b, "  %s: %s\n", k->spec, s);
        if (s && !strcmp(k->spec, "context")) zg_parse_int64(s, &context);
    }
    refusals(a, root);
    if (a->rope) head_dim(root);
    if (a->rope_scaling) rope_scaling(root, &b);
    put(&b, "train:\n  seq_len: %lld\n  world_size: 1\n", (long long)(context > 0 && context < 2048 ? context : 2048));
    return zg_error_count() ? NULL : b.s;
}

static const char HF_USAGE[] =
    "usage: zgen --spec-from-hf CONFIG.json|MODEL_DIR [-o SPEC.yaml] [--name NAME]\n"
    "Writes the zgen spec of a Hugging Face model (a model_type of an arch zgen trains) from its\n"
    "config.json: to SPEC.yaml, or to stdout. NAME defaults to the config's folder name.\n";

int zg_hf_main(int argc, char **argv)
{
    const char *cfg = NULL, *out = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(HF_USAGE, stdout);
            return 0;
        }
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--name")) && i + 1 < argc) {
            if (argv[i][1] == 'o') out = argv[++i];
            else name = argv[++i];
        } else if (argv[i][0] != '-' && !cfg) {
            cfg = argv[i];
        } else {
            fprintf(stderr, "zgen: bad argument: %s\n%s", argv[i], HF_USAGE);
            return 2;
        }
    }
    if (!cfg) {
        fprintf(stderr, "zgen: --spec-from-hf needs a config.json\n%s", HF_USAGE);
        return 2;
    }
    struct stat st;
    if (stat(cfg, &st) == 0 && S_ISDIR(st.st_mode)) cfg = zg_fmt("%s/config.json", cfg);  /* a model folder */
    char *nm = name ? zg_xstrdup(name) : name_from_path(cfg);
    char *text = spec_from_hf(cfg, nm);
    if (!text) {
        int n = zg_error_count();
        fprintf(stderr, "%d error%s\n", n, n == 1 ? "" : "s");
        return 1;
    }
    if (!out) {
        fputs(text, stdout);
        return 0;
    }
    FILE *f = fopen(out, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "zgen: cannot write %s\n", out);
        return 1;
    }
    fprintf(stderr, "zgen: wrote %s\n", out);
    return 0;
}
