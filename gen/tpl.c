/*
** tpl.c — compiles a template into Lua source (docs/TEMPLATES.md).
**
** Two constructs only: statement lines ("@@ lua code") and ${expr} in text lines. Each template
** line becomes exactly one Lua line: a statement line is its code, a text line is one call
**     _o("text", _s((expr), "expr"), "more text\n")
** and line 1 is prefixed with "local _o, _s = ...; ". So the chunk's line k is the template's line
** k and Lua's own positions (syntax errors, runtime errors, traceback frames) are template
** positions: the line map is the identity, which needs no rewriting of any message.
** _o appends to the output, _s converts an expression's value (lua.c); the expression's text rides
** along so "is nil" errors can name it.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "zg_render.h"

/* A growable string. */
typedef struct Buf { char *p; size_t n, cap; } Buf;

static void put(Buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2 + 64;
        b->p = zg_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void puts_(Buf *b, const char *s) { put(b, s, strlen(s)); }

/* Appends s[0..n) as a Lua double-quoted string literal (decimal escapes: never ambiguous). */
static void put_quoted(Buf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '\\' || c == '"') { esc[0] = '\\'; esc[1] = (char)c; put(b, esc, 2); }
        else if (c == '\n') put(b, "\\n", 2);
        else if (c == '\t') put(b, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) { snprintf(esc, sizeof esc, "\\%03u", c); puts_(b, esc); }
        else put(b, (const char *)&c, 1);
    }
    put(b, "\"", 1);
}

static char *fail(const char *name, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *fail(const char *name, int line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zg_fmt("%s:%d: %s", name, line, msg);
}

/* Given s[i] at the opening of a Lua long bracket "[=*[", returns its level (number of '='),
** or -1 if it is not one. */
static int long_bracket(const char *s, size_t i, size_t n)
{
    size_t j = i + 1;
    while (j < n && s[j] == '=') j++;
    return (j < n && s[j] == '[') ? (int)(j - i - 1) : -1;
}

/* Scans the expression of a ${ starting at s[i] (just after "${") to its closing brace, skipping
** nested braces and Lua strings. Returns the index of the '}' or (size_t)-1 if the line ends. */
static size_t expr_end(const char *s, size_t i, size_t n)
{
    int depth = 1;
    while (i < n) {
        char c = s[i];
        if (c == '"' || c == '\'') {
            for (i++; i < n && s[i] != c; i++)
                if (s[i] == '\\') i++;
            if (i >= n) return (size_t)-1;
        } else if (c == '[' && long_bracket(s, i, n) >= 0) {
            int lv = long_bracket(s, i, n);
            i += (size_t)lv + 2;
            for (;; i++) {
                if (i >= n) return (size_t)-1;
                if (s[i] == ']') {
                    size_t j = i + 1;
                    while (j < n && s[j] == '=') j++;
                    if (j < n && s[j] == ']' && (int)(j - i - 1) == lv) { i = j; break; }
                }
            }
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && --depth == 0) {
            return i;
        }
        i++;
    }
    return (size_t)-1;
}

/* Is the line s[0..n) a statement line? Sets *code to the Lua code after the "@@". */
static bool is_stmt(const char *s, size_t n, size_t *code)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i + 2 > n || s[i] != '@' || s[i + 1] != '@') return false;
    if (i + 2 < n && s[i + 2] != ' ' && s[i + 2] != '\t' && s[i + 2] != '\r') return false;
    *code = i + 2;
    return true;
}

/* Appends the _o(...) call for text line s[0..n) (nl: the line ended with a newline). */
static char *text_line(Buf *b, const char *name, int line, const char *s, size_t n, bool nl)
{
    size_t lit = 0, i = 0;
    int pieces = 0;
    puts_(b, "_o(");
    while (i < n) {
        if (s[i] != '$' || i + 1 >= n || s[i + 1] != '{') { i++; continue; }
        size_t e = expr_end(s, i + 2, n);
        if (e == (size_t)-1)
            return fail(name, line, "unclosed ${ (an expression must end on its own line)");
        size_t a = i + 2;
        while (a < e && (s[a] == ' ' || s[a] == '\t')) a++;
        if (a == e) return fail(name, line, "empty ${}");
        if (i > lit) {
            if (pieces++) puts_(b, ", ");
            put_quoted(b, s + lit, i - lit);
        }
        if (pieces++) puts_(b, ", ");
        puts_(b, "_s((");
        put(b, s + i + 2, e - i - 2);
        puts_(b, "), ");
        put_quoted(b, s + i + 2, e - i - 2);
        puts_(b, ")");
        i = lit = e + 1;
    }
    if (n > lit || nl) {
        if (pieces++) puts_(b, ", ");
        Buf t = {0};
        put(&t, s + lit, n - lit);
        if (nl) put(&t, "\n", 1);
        put_quoted(b, t.p, t.n);
        free(t.p);
    }
    puts_(b, ")");
    return NULL;
}

bool zg_tpl_compile(const char *name, const char *text, size_t len, ZgTpl *out, char **err)
{
    Buf b = {0};
    int line = 0;
    size_t pos = 0;
    *err = NULL;
    memset(out, 0, sizeof *out);
    puts_(&b, "local _o, _s = ...; ");
    while (pos < len) {
        const char *s = text + pos;
        const char *nlp = memchr(s, '\n', len - pos);
        size_t n = nlp ? (size_t)(nlp - s) : len - pos;
        size_t code;
        line++;
        if (memchr(s, '\0', n)) {
            *err = fail(name, line, "NUL byte in template");
            free(b.p);
            return false;
        }
        if (is_stmt(s, n, &code)) {
            put(&b, s + code, n - code);
        } else if ((*err = text_line(&b, name, line, s, n, nlp != NULL)) != NULL) {
            free(b.p);
            return false;
        }
        put(&b, "\n", 1);
        pos += n + (nlp ? 1 : 0);
    }
    out->name = zg_xstrdup(name);
    out->lua = b.p ? b.p : zg_xstrdup("");
    out->lua_len = b.n;
    out->n_lines = line;
    return true;
}

void zg_tpl_free(ZgTpl *t)
{
    free(t->name);
    free(t->lua);
    memset(t, 0, sizeof *t);
}
