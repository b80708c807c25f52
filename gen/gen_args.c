/*
** gen_args.c — zgen's own command line as the emitted trainer repeats it (ZG_GEN_ARGS in
** zg_model.h): when the trainer is launched on another world size it prints the zgen command that
** regenerates it, and that command must carry the user's -c, --steps and the rest, not just the spec.
**
** -o and --world-size are left out: the fix appends its own --world-size, and the output folder must
** not reach the emitted bytes (two runs into two folders emit the same files). Words are quoted for a
** POSIX shell only where needed, so the common line reads as typed; the C string escaping is the
** template's (cfmt.str).
*/
#include <stdlib.h>
#include <string.h>
#include "zg.h"

/* Characters a shell word may hold unquoted. */
static bool plain(const char *s)
{
    if (!*s) return false;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+@%-", *p))
            return false;
    return true;
}

/* s in single quotes, each ' written as '\'' */
static char *quoted(const char *s)
{
    size_t n = 2;
    for (const char *p = s; *p; p++) n += *p == '\'' ? 4 : 1;
    char *q = zg_xmalloc(n + 1), *o = q;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') memcpy(o, "'\\''", 4), o += 4;
        else *o++ = *p;
    }
    *o++ = '\'';
    *o = 0;
    return q;
}

char *zg_gen_args(int argc, char *const argv[])
{
    size_t cap = 1, len = 0;
    char *out = zg_xmalloc(cap);
    out[0] = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-o") || !strcmp(a, "--world-size")) && i + 1 < argc) {
            i++;
            continue;
        }
        if (!strncmp(a, "--world-size=", 13)) continue;
        char *w = plain(a) ? zg_xstrdup(a) : quoted(a);
        size_t wl = strlen(w);
        if (len + wl + 2 > cap) {
            cap = 2 * (len + wl + 2);
            out = zg_xrealloc(out, cap);
        }
        if (len) out[len++] = ' ';
        memcpy(out + len, w, wl + 1);
        len += wl;
        free(w);
    }
    return out;
}
