/*
** zr_json.c — strict JSON tokeniser for the few headers libzrt reads. Recursive descent over the
** text, tokens appended in document order; an object's members are key, value, key, value...
** Depth is bounded (64) so a hostile header cannot blow the stack.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zr_json.h"

typedef struct {
    ZrJson *j;
    size_t pos;
    char *err;
    size_t errcap;
} Parser;

static int fail(Parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Parser *p, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->errcap) snprintf(p->err, p->errcap, "offset %zu: %s", p->pos, msg);
    return -EINVAL;
}

static void skip_ws(Parser *p)
{
    const char *s = p->j->text;
    while (p->pos < p->j->len &&
           (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r'))
        p->pos++;
}

static int new_tok(Parser *p, int type, size_t start)
{
    ZrJson *j = p->j;
    if (j->nt == j->cap) {
        int cap = j->cap ? 2 * j->cap : 64;
        ZrJsonTok *t = realloc(j->t, (size_t)cap * sizeof *t);
        if (!t) return -ENOMEM;
        j->t = t;
        j->cap = cap;
    }
    j->t[j->nt] = (ZrJsonTok){ type, start, start, 0, 1 };
    return j->nt++;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int parse_string(Parser *p)
{
    const char *s = p->j->text;
    int i;
    p->pos++; /* opening quote */
    if ((i = new_tok(p, ZR_JSON_STR, p->pos)) < 0) return i;
    while (p->pos < p->j->len && s[p->pos] != '"') {
        unsigned char c = (unsigned char)s[p->pos];
        if (c < 0x20) return fail(p, "control character in string");
        if (c == '\\') {
            p->pos++;
            if (p->pos >= p->j->len) break;
            c = (unsigned char)s[p->pos];
            if (c == 'u') {
                int k;
                for (k = 1; k <= 4; k++)
                    if (p->pos + (size_t)k >= p->j->len || hexval(s[p->pos + (size_t)k]) < 0)
                        return fail(p, "bad \\u escape");
                p->pos += 4;
            } else if (!strchr("\"\\/bfnrt", c)) {
                return fail(p, "bad escape \\%c", c);
            }
        }
        p->pos++;
    }
    if (p->pos >= p->j->len) return fail(p, "unterminated string");
    p->j->t[i].end = p->pos;
    p->pos++;
    return i;
}

static int parse_number(Parser *p)
{
    const char *s = p->j->text;
    size_t n = p->j->len, b = p->pos;
    int i;
    if (p->pos < n && s[p->pos] == '-') p->pos++;
    if (p->pos >= n) return fail(p, "bad number");
    if (s[p->pos] == '0') p->pos++;
    else if (s[p->pos] >= '1' && s[p->pos] <= '9')
        while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    else return fail(p, "unexpected character '%c'", s[p->pos]);
    if (p->pos < n && s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= n || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "bad fraction");
        while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    if (p->pos < n && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < n && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
        if (p->pos >= n || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "bad exponent");
        while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    if ((i = new_tok(p, ZR_JSON_NUM, b)) < 0) return i;
    p->j->t[i].end = p->pos;
    return i;
}

static int parse_value(Parser *p, int depth);

static int parse_container(Parser *p, int depth, int obj)
{
    const char *s = p->j->text;
    char close = obj ? '}' : ']';
    int i = new_tok(p, obj ? ZR_JSON_OBJ : ZR_JSON_ARR, p->pos), r;
    if (i < 0) return i;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->j->len && s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_ws(p);
            if (obj) {
                if (p->pos >= p->j->len || s[p->pos] != '"') return fail(p, "expected a key string");
                if ((r = parse_string(p)) < 0) return r;
                skip_ws(p);
                if (p->pos >= p->j->len || s[p->pos] != ':') return fail(p, "expected ':'");
                p->pos++;
            }
            if ((r = parse_value(p, depth + 1)) < 0) return r;
            p->j->t[i].n++;
            skip_ws(p);
            if (p->pos < p->j->len && s[p->pos] == ',') { p->pos++; continue; }
            if (p->pos < p->j->len && s[p->pos] == close) { p->pos++; break; }
            return fail(p, "expected ',' or '%c'", close);
        }
    }
    p->j->t[i].end = p->pos;
    p->j->t[i].span = p->j->nt - i;
    return i;
}

static int parse_value(Parser *p, int depth)
{
    const char *s = p->j->text;
    static const struct { const char *w; int type; } words[] = {
        { "true", ZR_JSON_TRUE }, { "false", ZR_JSON_FALSE }, { "null", ZR_JSON_NULL } };
    size_t k;
    if (depth > 64) return fail(p, "nested too deeply");
    skip_ws(p);
    if (p->pos >= p->j->len) return fail(p, "unexpected end");
    switch (s[p->pos]) {
    case '{': return parse_container(p, depth, 1);
    case '[': return parse_container(p, depth, 0);
    case '"': return parse_string(p);
    default: break;
    }
    for (k = 0; k < 3; k++) {
        size_t wl = strlen(words[k].w);
        if (p->j->len - p->pos >= wl && memcmp(s + p->pos, words[k].w, wl) == 0) {
            int i = new_tok(p, words[k].type, p->pos);
            if (i < 0) return i;
            p->pos += wl;
            p->j->t[i].end = p->pos;
            return i;
        }
    }
    return parse_number(p);
}

int zr_json_parse(ZrJson *j, const char *text, size_t len, char *err, size_t errcap)
{
    Parser p = { j, 0, err, errcap };
    int r;
    memset(j, 0, sizeof *j);
    j->text = text;
    j->len = len;
    if (err && errcap) err[0] = 0;
    r = parse_value(&p, 0);
    if (r >= 0) {
        skip_ws(&p);
        if (p.pos != len) r = fail(&p, "trailing characters");
    }
    if (r < 0) {
        if (r == -ENOMEM && err && errcap) snprintf(err, errcap, "out of memory");
        zr_json_free(j);
        return r;
    }
    return 0;
}

void zr_json_free(ZrJson *j)
{
    free(j->t);
    j->t = NULL;
    j->nt = j->cap = 0;
}

int zr_json_item(const ZrJson *j, int arr, int k)
{
    int i, c;
    if (arr < 0 || arr >= j->nt) return -1;
    if (j->t[arr].type == ZR_JSON_ARR ? k >= j->t[arr].n : k >= 2 * j->t[arr].n) return -1;
    if (j->t[arr].type != ZR_JSON_ARR && j->t[arr].type != ZR_JSON_OBJ) return -1;
    for (i = arr + 1, c = 0; c < k; c++) i += j->t[i].span;
    return i;
}

int zr_json_get(const ZrJson *j, int obj, const char *key)
{
    int i, m;
    if (obj < 0 || obj >= j->nt || j->t[obj].type != ZR_JSON_OBJ) return -1;
    for (i = obj + 1, m = 0; m < j->t[obj].n; m++) {
        int v = i + 1;
        if (zr_json_str_eq(j, i, key)) return v;
        i = v + j->t[v].span;
    }
    return -1;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static unsigned hex4(const char *s)
{
    return (unsigned)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

int zr_json_str(const ZrJson *j, int i, char *out, size_t cap)
{
    const char *s = j->text;
    size_t k, o = 0;
    if (i < 0 || i >= j->nt || j->t[i].type != ZR_JSON_STR || cap == 0) return -EINVAL;
    for (k = j->t[i].start; k < j->t[i].end; k++) {
        char tmp[4];
        size_t w = 1;
        tmp[0] = s[k];
        if (s[k] == '\\') {
            char c = s[++k];
            if (c == 'u') {
                unsigned cp = hex4(s + k + 1);
                k += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && k + 6 < j->t[i].end && s[k + 1] == '\\' &&
                    s[k + 2] == 'u') {
                    unsigned lo = hex4(s + k + 3);
                    if (lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        k += 6;
                    }
                }
                w = put_utf8(tmp, cp);
            } else {
                tmp[0] = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r'
                       : c == 't' ? '\t' : c;
            }
        }
        if (o + w >= cap) return -ENAMETOOLONG;
        memcpy(out + o, tmp, w);
        o += w;
    }
    out[o] = 0;
    return 0;
}

int zr_json_str_eq(const ZrJson *j, int i, const char *s)
{
    char buf[512];
    size_t n = strlen(s);
    if (i < 0 || i >= j->nt || j->t[i].type != ZR_JSON_STR) return 0;
    /* fast path: no escapes */
    if (j->t[i].end - j->t[i].start == n && memcmp(j->text + j->t[i].start, s, n) == 0) return 1;
    if (zr_json_str(j, i, buf, sizeof buf) != 0) return 0;
    return strcmp(buf, s) == 0;
}

int zr_json_u64(const ZrJson *j, int i, uint64_t *v)
{
    size_t k;
    uint64_t x = 0;
    if (i < 0 || i >= j->nt || j->t[i].type != ZR_JSON_NUM) return -EINVAL;
    for (k = j->t[i].start; k < j->t[i].end; k++) {
        char c = j->text[k];
        if (c < '0' || c > '9') return -EINVAL;
        if (x > (UINT64_MAX - (uint64_t)(c - '0')) / 10) return -ERANGE;
        x = x * 10 + (uint64_t)(c - '0');
    }
    *v = x;
    return 0;
}

int zr_json_i64(const ZrJson *j, int i, int64_t *v)
{
    uint64_t u;
    int neg, rc;
    ZrJsonTok t;
    ZrJson sub;
    if (i < 0 || i >= j->nt || j->t[i].type != ZR_JSON_NUM) return -EINVAL;
    neg = j->text[j->t[i].start] == '-';
    t = j->t[i];
    t.start += (size_t)neg;
    sub = *j;
    sub.t = &t;
    sub.nt = 1;
    if ((rc = zr_json_u64(&sub, 0, &u)) != 0) return rc;
    if (u > (uint64_t)INT64_MAX) return -ERANGE;
    *v = neg ? -(int64_t)u : (int64_t)u;
    return 0;
}

int zr_json_num(const ZrJson *j, int i, double *v)
{
    char buf[64];
    size_t n;
    if (i < 0 || i >= j->nt || j->t[i].type != ZR_JSON_NUM) return -EINVAL;
    n = j->t[i].end - j->t[i].start;
    if (n >= sizeof buf) return -EINVAL;
    memcpy(buf, j->text + j->t[i].start, n);
    buf[n] = 0;
    *v = strtod(buf, NULL);
    return 0;
}
