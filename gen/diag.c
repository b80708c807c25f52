/*
** diag.c — diagnostics for input errors, chibicc style: `file:line:col: error: message`, then the
** source line and a caret under the column, then optional `note:` lines saying what to do.
**
** zgen reports every input error before it exits (a user fixing a config wants the whole list, not
** one error per run), so errors are counted, not fatal. Tests run in quiet mode: nothing is printed
** and every message is kept with its notes, so a test can ask "is there an error containing X at
** line N" (zg_diag_count_matching) and print the whole log when it fails.
** Also the memory helpers every gen/ file uses: allocation failure is fatal for a compiler.
*/
#include "zg.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_ERROR, K_WARN, K_NOTE } Kind;
static const char *const kind_name[] = {"error", "warning", "note"};

typedef struct Msg {
    Kind kind;
    ZgLoc at;
    char *text;                 /* the message */
    char *notes;                /* notes that followed it, joined by " | "; NULL if none */
} Msg;

typedef struct Source {
    const char *file;
    const char *text;
} Source;

static int n_errors, n_warnings;
static bool quiet;
static char *last;
static Msg *msgs;
static int n_msgs, cap_msgs;
static Source *sources;
static int n_sources, cap_sources;
static char *log_text;

/* ======================================================================= memory */
static _Noreturn void out_of_memory(size_t n)
{
    fprintf(stderr, "zgen: out of memory (%zu bytes)\n", n);
    exit(1);
}

void *zg_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *zg_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory(n * size);
    return p;
}

void *zg_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

char *zg_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(zg_xmalloc(n), s, n);
}

/* A NULL fmt is a caller's bug, answered with an empty text. The test also matters to gcc's UBSan
** build with recovery: its nonnull check on vsnprintf's fmt leaves a NULL path behind, which
** -Wformat-truncation then reports as "null format string"; with fmt tested first that path is gone
** and the warning stays on everywhere. */
static char *vfmt(const char *fmt, va_list ap)
{
    if (!fmt) return zg_xstrdup("");
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    char *s = zg_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *zg_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    return s;
}

_Noreturn void zg_unreachable_at(const char *file, int line)
{
    fprintf(stderr, "zgen: internal error at %s:%d\n", file, line);
    abort();
}

/* ======================================================================= sources */
void zg_diag_add_source(const char *file, const char *text)
{
    if (!file || !text) return;
    for (int i = 0; i < n_sources; i++)
        if (strcmp(sources[i].file, file) == 0) { sources[i].text = text; return; }
    if (n_sources == cap_sources) {
        cap_sources = cap_sources ? 2 * cap_sources : 8;
        sources = zg_xrealloc(sources, (size_t)cap_sources * sizeof *sources);
    }
    sources[n_sources++] = (Source){zg_xstrdup(file), text};
}

/* The text of `line` (1-based) of a registered file, and its length; NULL if unknown. */
static const char *source_line(const char *file, int line, int *len)
{
    const char *text = NULL;
    for (int i = 0; i < n_sources; i++)
        if (strcmp(sources[i].file, file) == 0) text = sources[i].text;
    if (!text || line < 1) return NULL;
    const char *p = text;
    for (int l = 1; l < line; l++) {
        p = strchr(p, '\n');
        if (!p) return NULL;
        p++;
    }
    const char *e = strchr(p, '\n');
    *len = e ? (int)(e - p) : (int)strlen(p);
    if (*len > 0 && p[*len - 1] == '\r') (*len)--;
    return p;
}

/* ======================================================================= reporting */
#define QUOTE_MAX 160           /* columns of a source line quoted under an error */
static void print_located(Kind k, ZgLoc at, const char *text)
{
    if (at.file && at.line > 0)
        fprintf(stderr, "%s:%d:%d: %s: %s\n", at.file, at.line, at.col > 0 ? at.col : 1,
                kind_name[k], text);
    else if (at.file)
        fprintf(stderr, "%s: %s: %s\n", at.file, kind_name[k], text);
    else
        fprintf(stderr, "zgen: %s: %s\n", kind_name[k], text);
    if (k == K_NOTE || !at.file || at.line < 1) return;
    int len;
    const char *src = source_line(at.file, at.line, &len);
    if (!src) return;
    /* A long line (a one-line JSON config, a minified file) is quoted as a window around the
    ** column, marked with "..." where cut, so one error prints one screen line, not megabytes. */
    int col = at.col > 0 ? at.col - 1 : 0;
    if (col > len) col = len;
    int lo = 0, hi = len;
    if (len > QUOTE_MAX) {
        lo = col - QUOTE_MAX / 2 < 0 ? 0 : col - QUOTE_MAX / 2;
        if (lo + QUOTE_MAX > len) lo = len - QUOTE_MAX;
        hi = lo + QUOTE_MAX;
    }
    const char *pre = lo > 0 ? "..." : "", *post = hi < len ? "..." : "";
    int w = fprintf(stderr, " %5d | ", at.line) - 2;
    fprintf(stderr, "%s%.*s%s\n%*s| %*s", pre, hi - lo, src + lo, post, w, "", (int)strlen(pre), "");
    /* Tabs stay tabs under the caret so it lines up with the quoted line. */
    for (int i = lo; i < col; i++) fputc(src[i] == '\t' ? '\t' : ' ', stderr);
    fputs("^\n", stderr);
}

static void keep(Kind k, ZgLoc at, char *text)
{
    if (k == K_NOTE) {
        if (n_msgs == 0) return;
        Msg *m = &msgs[n_msgs - 1];
        char *joined = m->notes ? zg_fmt("%s | %s", m->notes, text) : zg_xstrdup(text);
        free(m->notes);
        m->notes = joined;
        return;
    }
    if (n_msgs == cap_msgs) {
        cap_msgs = cap_msgs ? 2 * cap_msgs : 32;
        msgs = zg_xrealloc(msgs, (size_t)cap_msgs * sizeof *msgs);
    }
    msgs[n_msgs++] = (Msg){k, at, zg_xstrdup(text), NULL};
}

static void report(Kind k, ZgLoc at, const char *fmt, va_list ap)
{
    char *text = vfmt(fmt, ap);
    if (k == K_ERROR) n_errors++;
    if (k == K_WARN) n_warnings++;
    if (k != K_NOTE) {
        free(last);
        last = zg_xstrdup(text);
    }
    if (quiet) keep(k, at, text);
    else print_located(k, at, text);
    free(text);
}

void zg_error(ZgLoc at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(K_ERROR, at, fmt, ap);
    va_end(ap);
}

void zg_warn(ZgLoc at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(K_WARN, at, fmt, ap);
    va_end(ap);
}

void zg_note(ZgLoc at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(K_NOTE, at, fmt, ap);
    va_end(ap);
}

int zg_error_count(void) { return n_errors; }
int zg_warn_count(void) { return n_warnings; }
const char *zg_diag_last(void) { return last ? last : ""; }
void zg_diag_quiet(bool q) { quiet = q; }

void zg_diag_reset(void)
{
    for (int i = 0; i < n_msgs; i++) {
        free(msgs[i].text);
        free(msgs[i].notes);
    }
    n_msgs = 0;
    n_errors = n_warnings = 0;
    free(last);
    last = NULL;
}

int zg_diag_count_matching(const char *frag, int line)
{
    int n = 0;
    for (int i = 0; i < n_msgs; i++) {
        const Msg *m = &msgs[i];
        if (line && m->at.line != line) continue;
        if (strstr(m->text, frag) || (m->notes && strstr(m->notes, frag))) n++;
    }
    return n;
}

const char *zg_diag_log(void)
{
    free(log_text);
    log_text = zg_xstrdup("");
    for (int i = 0; i < n_msgs; i++) {
        const Msg *m = &msgs[i];
        char *s = zg_fmt("%s    %d:%d: %s: %s%s%s\n", log_text, m->at.line, m->at.col,
                         kind_name[m->kind], m->text, m->notes ? " [note: " : "",
                         m->notes ? m->notes : "");
        if (m->notes) {
            char *t = zg_fmt("%.*s]\n", (int)strlen(s) - 1, s);
            free(s);
            s = t;
        }
        free(log_text);
        log_text = s;
    }
    return log_text;
}
