/*
** node.c — YAML and JSON documents as ZgNode trees that remember where every key and value is.
**
** JSON is YAML's flow style, so one libyaml event parser reads both (DeepSpeed's ds_config.json and a
** spec's inline `deepspeed:` mapping go through the same code). We walk events rather than use
** libyaml's document API because the document API resolves aliases silently, and we want to refuse
** them: an alias makes one config value appear under two keys, which no DeepSpeed config needs and
** which would make "the key at this line" ambiguous. Duplicate keys are errors, as in DeepSpeed
** (hjson), and the second one is reported with a note pointing at the first.
** Limits (file size, nesting depth) keep a hostile input from exhausting memory or the stack, and
** only regular files are read: a FIFO would block zgen forever, /dev/zero never ends, and a
** directory reads as an error nobody understands. The file is opened without blocking (O_NONBLOCK
** makes open() of a FIFO return at once) and refused by fstat before a byte is read.
*/
#include "zg.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_FILE_BYTES (16 << 20)
#define MAX_DEPTH 64
/* Values in one document and keys in one mapping: a DeepSpeed config has a few hundred values and
** its largest section about 60 keys. The bounds keep the duplicate-key check (linear per key) and
** the key walk of zero.c bounded on hostile input (a 16 MiB file of distinct keys). */
#define MAX_NODES (1 << 17)
#define MAX_MAP_KEYS 1024

typedef struct Parser {
    yaml_parser_t yp;
    yaml_event_t ev;            /* current event (valid while have_ev) */
    bool have_ev;
    const char *file;
    bool failed;
    long nodes;                 /* values built so far (MAX_NODES) */
} Parser;

static ZgLoc mark_loc(const Parser *p, yaml_mark_t m)
{
    return (ZgLoc){p->file, (int)m.line + 1, (int)m.column + 1};
}

/* Advances to the next event; false (after reporting) on a syntax error. */
static bool next(Parser *p)
{
    if (p->have_ev) yaml_event_delete(&p->ev);
    p->have_ev = false;
    if (!yaml_parser_parse(&p->yp, &p->ev)) {
        ZgLoc at = mark_loc(p, p->yp.problem_mark);
        zg_error(at, "malformed YAML/JSON: %s%s%s", p->yp.problem ? p->yp.problem : "syntax error",
                 p->yp.context ? " " : "", p->yp.context ? p->yp.context : "");
        if (p->yp.context && p->yp.context_mark.line != p->yp.problem_mark.line)
            zg_note(mark_loc(p, p->yp.context_mark), "the construct started here");
        p->failed = true;
        return false;
    }
    p->have_ev = true;
    return true;
}

static ZgNode *new_node(ZgNodeKind k, ZgLoc at)
{
    ZgNode *n = zg_xcalloc(1, sizeof *n);
    n->kind = k;
    n->loc = at;
    return n;
}

static bool refuse_anchor(Parser *p, const yaml_char_t *anchor, ZgLoc at)
{
    if (!anchor) return true;
    zg_error(at, "YAML anchors (&%s) and aliases are not supported", (const char *)anchor);
    zg_note(at, "write the value out in full at each place it is used");
    p->failed = true;
    return false;
}

static ZgNode *parse_node(Parser *p, int depth);

static ZgNode *parse_map(Parser *p, ZgLoc at, int depth)
{
    ZgNode *n = new_node(ZG_NMAP, at);
    int cap = 0;
    for (;;) {
        if (!next(p)) return NULL;
        if (p->ev.type == YAML_MAPPING_END_EVENT) return n;
        ZgLoc kat = mark_loc(p, p->ev.start_mark);
        if (p->ev.type != YAML_SCALAR_EVENT) {
            zg_error(kat, "a mapping key must be a plain name, not %s",
                     p->ev.type == YAML_ALIAS_EVENT ? "an alias" : "a mapping or list");
            p->failed = true;
            return NULL;
        }
        if (!refuse_anchor(p, p->ev.data.scalar.anchor, kat)) return NULL;
        if (n->n >= MAX_MAP_KEYS) {
            zg_error(kat, "more than %d keys in one mapping; no spec or DeepSpeed config has that many",
                     MAX_MAP_KEYS);
            p->failed = true;
            return NULL;
        }
        char *key = zg_xstrdup((const char *)p->ev.data.scalar.value);
        if (n->n == cap) {
            cap = cap ? 2 * cap : 8;
            n->keys = zg_xrealloc(n->keys, (size_t)cap * sizeof *n->keys);
            n->key_locs = zg_xrealloc(n->key_locs, (size_t)cap * sizeof *n->key_locs);
            n->vals = zg_xrealloc(n->vals, (size_t)cap * sizeof *n->vals);
        }
        int dup = zg_node_index(n, key);
        if (!next(p)) return NULL;
        ZgNode *v = parse_node(p, depth + 1);
        if (!v) return NULL;
        if (dup >= 0) {
            /* Keep the first value; report the second key (DeepSpeed refuses the file too). */
            zg_error(kat, "duplicate key '%s'", key);
            zg_note(n->key_locs[dup], "'%s' was first set at line %d; remove one of them", key,
                    n->key_locs[dup].line);
            continue;
        }
        n->keys[n->n] = key;
        n->key_locs[n->n] = kat;
        n->vals[n->n] = v;
        n->n++;
    }
}

static ZgNode *parse_seq(Parser *p, ZgLoc at, int depth)
{
    ZgNode *n = new_node(ZG_NSEQ, at);
    int cap = 0;
    for (;;) {
        if (!next(p)) return NULL;
        if (p->ev.type == YAML_SEQUENCE_END_EVENT) return n;
        ZgNode *v = parse_node(p, depth + 1);
        if (!v) return NULL;
        if (n->n == cap) {
            cap = cap ? 2 * cap : 4;
            n->vals = zg_xrealloc(n->vals, (size_t)cap * sizeof *n->vals);
        }
        n->vals[n->n++] = v;
    }
}

/* Builds the node whose first event is current. */
static ZgNode *parse_node(Parser *p, int depth)
{
    ZgLoc at = mark_loc(p, p->ev.start_mark);
    if (depth > MAX_DEPTH) {
        zg_error(at, "nesting deeper than %d levels", MAX_DEPTH);
        p->failed = true;
        return NULL;
    }
    if (++p->nodes > MAX_NODES) {
        zg_error(at, "more than %d values in one file; no spec or DeepSpeed config has that many", MAX_NODES);
        p->failed = true;
        return NULL;
    }
    switch (p->ev.type) {
    case YAML_SCALAR_EVENT: {
        if (!refuse_anchor(p, p->ev.data.scalar.anchor, at)) return NULL;
        ZgNode *n = new_node(ZG_NSCALAR, at);
        n->scalar = zg_xstrdup((const char *)p->ev.data.scalar.value);
        n->quoted = p->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        return n;
    }
    case YAML_MAPPING_START_EVENT:
        if (!refuse_anchor(p, p->ev.data.mapping_start.anchor, at)) return NULL;
        return parse_map(p, at, depth);
    case YAML_SEQUENCE_START_EVENT:
        if (!refuse_anchor(p, p->ev.data.sequence_start.anchor, at)) return NULL;
        return parse_seq(p, at, depth);
    case YAML_ALIAS_EVENT:
        zg_error(at, "YAML aliases (*%s) are not supported", (const char *)p->ev.data.alias.anchor);
        zg_note(at, "write the value out in full at each place it is used");
        p->failed = true;
        return NULL;
    default:
        zg_error(at, "unexpected YAML event");
        p->failed = true;
        return NULL;
    }
}

ZgNode *zg_node_load_string(const char *text, const char *name)
{
    Parser p = {.file = name};
    zg_diag_add_source(name, text);
    if (!yaml_parser_initialize(&p.yp)) {
        zg_error((ZgLoc){name, 0, 0}, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)text, strlen(text));
    ZgNode *root = NULL;
    bool ok = next(&p) && p.ev.type == YAML_STREAM_START_EVENT && next(&p);
    if (ok && p.ev.type == YAML_STREAM_END_EVENT) {
        zg_error((ZgLoc){name, 1, 1}, "the file is empty");
        ok = false;
    }
    if (ok && p.ev.type == YAML_DOCUMENT_START_EVENT && next(&p)) {
        root = parse_node(&p, 0);
        ok = root && next(&p) && p.ev.type == YAML_DOCUMENT_END_EVENT && next(&p);
        if (ok && p.ev.type != YAML_STREAM_END_EVENT) {
            zg_error(mark_loc(&p, p.ev.start_mark), "more than one YAML document in the file");
            zg_note(mark_loc(&p, p.ev.start_mark), "remove the '---' separator and what follows");
            ok = false;
        }
    } else {
        ok = false;
    }
    if (p.have_ev) yaml_event_delete(&p.ev);
    yaml_parser_delete(&p.yp);
    return ok && !p.failed ? root : NULL;
}

ZgNode *zg_node_load_file_at(const char *path, ZgLoc from)
{
    ZgLoc at = from.file ? from : (ZgLoc){path, 0, 0};
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        zg_error(at, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st = {0};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const char *kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                         : S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device"
                         : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
        zg_error(at, "'%s' is %s; a spec or DeepSpeed config must be a regular file", path, kind);
        zg_note(at, "zgen reads only regular files (a pipe or device could block it or never end); "
                "write the text to a file and give its path");
        close(fd);
        return NULL;
    }
    /* A regular file never blocks; reads go through stdio as before. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        zg_error(at, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    /* Size first (a spec is a few KiB; do not take 16 MiB for it), then read at most the limit. */
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    rewind(f);
    size_t cap = size >= 0 && size < MAX_FILE_BYTES ? (size_t)size + 1 : (size_t)MAX_FILE_BYTES + 1;
    char *buf = zg_xmalloc(cap + 1);
    size_t n = fread(buf, 1, cap, f);
    bool err = ferror(f);
    fclose(f);
    if (err) {
        zg_error(at, "cannot read '%s'", path);
        free(buf);
        return NULL;
    }
    if (n > MAX_FILE_BYTES) {
        zg_error(at, "'%s' is larger than %d MiB; a spec or config never is", path,
                 MAX_FILE_BYTES >> 20);
        free(buf);
        return NULL;
    }
    if (memchr(buf, 0, n)) {
        zg_error(at, "'%s' contains NUL bytes; it is not a YAML or JSON text file", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    /* Parsed text stays alive: diag quotes source lines from it. */
    return zg_node_load_string(buf, zg_xstrdup(path));
}

ZgNode *zg_node_load_file(const char *path)
{
    return zg_node_load_file_at(path, (ZgLoc){0});
}

int zg_node_index(const ZgNode *map, const char *key)
{
    if (!map || map->kind != ZG_NMAP) return -1;
    for (int i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0) return i;
    return -1;
}

ZgNode *zg_node_get(const ZgNode *map, const char *key)
{
    int i = zg_node_index(map, key);
    return i < 0 ? NULL : map->vals[i];
}

const char *zg_node_kind_name(const ZgNode *n)
{
    switch (n->kind) {
    case ZG_NMAP: return "a mapping";
    case ZG_NSEQ: return "a list";
    case ZG_NSCALAR: return "a scalar";
    }
    return "?";
}

/* ======================================================================= typed access */
bool zg_node_is_null(const ZgNode *v)
{
    return v->kind == ZG_NSCALAR && !v->quoted &&
           (v->scalar[0] == 0 || strcmp(v->scalar, "null") == 0 || strcmp(v->scalar, "~") == 0 ||
            strcmp(v->scalar, "Null") == 0 || strcmp(v->scalar, "NULL") == 0);
}

bool zg_node_is_auto(const ZgNode *v)
{
    return v->kind == ZG_NSCALAR && strcmp(v->scalar, "auto") == 0;
}

/* A scalar for a number or bool: quoted "5" is a string in JSON, and DeepSpeed's pydantic models
** would coerce it, so we accept it too; only the kind (scalar) matters. */
static bool need_scalar(const ZgNode *v, const char *what, const char *expect)
{
    if (v->kind == ZG_NSCALAR) return true;
    zg_error(v->loc, "%s must be %s, not %s", what, expect, zg_node_kind_name(v));
    return false;
}

bool zg_node_bool(const ZgNode *v, const char *what, bool *out)
{
    if (!need_scalar(v, what, "true or false")) return false;
    const char *s = v->scalar;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) *out = true;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) *out = false;
    else {
        zg_error(v->loc, "%s must be true or false, not '%s'", what, s);
        return false;
    }
    return true;
}

bool zg_node_int(const ZgNode *v, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    if (!need_scalar(v, what, "an integer")) return false;
    int64_t x;
    if (!zg_parse_int64(v->scalar, &x)) {
        zg_error(v->loc, "%s must be an integer, not '%s'", what, v->scalar);
        return false;
    }
    if (x < lo || x > hi) {
        if (hi == INT64_MAX) zg_error(v->loc, "%s must be at least %lld, not %lld", what, (long long)lo, (long long)x);
        else zg_error(v->loc, "%s must be in [%lld, %lld], not %lld", what, (long long)lo, (long long)hi,
                      (long long)x);
        return false;
    }
    *out = x;
    return true;
}

bool zg_node_num(const ZgNode *v, const char *what, double lo, double hi, double *out)
{
    if (!need_scalar(v, what, "a number")) return false;
    double x;
    if (!zg_parse_double(v->scalar, &x)) {
        zg_error(v->loc, "%s must be a number, not '%s'", what, v->scalar);
        return false;
    }
    if (x < lo || x > hi) {
        if (hi == INFINITY) zg_error(v->loc, "%s must be at least %g, not %g", what, lo, x);
        else zg_error(v->loc, "%s must be in [%g, %g], not %g", what, lo, hi, x);
        return false;
    }
    *out = x;
    return true;
}

bool zg_node_str(const ZgNode *v, const char *what, const char **out)
{
    if (!need_scalar(v, what, "a string")) return false;
    *out = v->scalar;
    return true;
}
