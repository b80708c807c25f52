/*
** util.c — small text utilities of the front end: edit distance for "did you mean", numbers as
** YAML/JSON write them, byte sizes ("80GiB", "512GB", "1.5e9"), and the path sanity check.
**
** Sizes accept SI (kB, MB, GB, TB = powers of 1000) and binary (KiB .. TiB = powers of 1024) units;
** a bare "80G" is refused because users mean both. Everything is checked against int64 overflow:
** a 1T-parameter plan counts bytes in the tens of terabytes.
*/
#include "zg.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int zg_edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 256 || nb > 256) return (int)(na > nb ? na : nb);
    int row[257];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* Decimal number: [+-]digits[.digits][e[+-]digits], nothing else (no hex, inf, nan, spaces). */
static bool is_decimal(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    int digits = 0;
    while (isdigit((unsigned char)*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++, digits++;
    }
    if (!digits) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return false;
        while (isdigit((unsigned char)*p)) p++;
    }
    return *p == 0;
}

bool zg_parse_double(const char *s, double *out)
{
    if (!s || !is_decimal(s)) return false;
    errno = 0;
    double d = strtod(s, NULL);
    if (errno == ERANGE || !isfinite(d)) return false;
    *out = d;
    return true;
}

bool zg_parse_int64(const char *s, int64_t *out)
{
    if (!s || !is_decimal(s)) return false;
    if (!strpbrk(s, ".eE")) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == ERANGE) return false;
        *out = v;
        return true;
    }
    double d;
    /* 2^63 is exactly representable; anything at or above it overflows. */
    if (!zg_parse_double(s, &d) || d != floor(d) || d >= 9223372036854775808.0 ||
        d < -9223372036854775808.0)
        return false;
    *out = (int64_t)d;
    return true;
}

bool zg_parse_size(const char *s, int64_t *out)
{
    static const struct { const char *unit; double mult; } units[] = {
        {"", 1}, {"B", 1},
        {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0},
    };
    if (!s) return false;
    size_t n = strlen(s);
    if (n == 0 || n > 64) return false;
    /* Split number and unit: the unit is the trailing run of letters. */
    size_t u = n;
    while (u > 0 && isalpha((unsigned char)s[u - 1])) u--;
    /* "1.5e9": a trailing 'e' belongs to no unit; the letters run must not end inside a number. */
    char num[65];
    size_t nlen = u;
    while (nlen > 0 && s[nlen - 1] == ' ') nlen--;
    memcpy(num, s, nlen);
    num[nlen] = 0;
    const char *unit = s + u;
    double mult = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i].unit) == 0) mult = units[i].mult;
    if (mult == 0) {
        /* Lower-case spellings of the same units (gb, gib); still no bare "G". */
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (units[i].unit[0] && units[i].unit[1] && strcasecmp(unit, units[i].unit) == 0)
                mult = units[i].mult;
    }
    if (mult == 0) return false;
    if (mult == 1 && !strpbrk(num, ".eE")) {
        int64_t v;
        if (!zg_parse_int64(num, &v) || v < 0) return false;
        *out = v;
        return true;
    }
    double d;
    if (!zg_parse_double(num, &d) || d < 0) return false;
    double bytes = d * mult;
    if (bytes >= 9.2e18 || bytes != floor(bytes)) {
        /* A fraction of a byte (e.g. "1.0000001kB") is a typo, not a size. */
        if (bytes >= 9.2e18 || fabs(bytes - floor(bytes + 0.5)) > 1e-6 * (bytes > 1 ? bytes : 1))
            return false;
        bytes = floor(bytes + 0.5);
    }
    *out = (int64_t)bytes;
    return true;
}

bool zg_path_is_sane(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 1024) return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\'' || *p == '`' || *p == '\\' ||
            *p == '$' || *p == ' ')
            return false;
    return true;
}

const char *zg_suggest(const char *key, const char *const *cands, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    size_t klen = strlen(key);
    for (int i = 0; i < n; i++) {
        int d = zg_edit_distance(key, cands[i]);
        if (d < best_d) best_d = d, best = cands[i];
    }
    if (!best) return NULL;
    size_t blen = strlen(best);
    int limit = (int)((klen < blen ? klen : blen) / 3);
    if (limit < 2) limit = klen >= 4 ? 2 : 1;
    if (best_d <= 1) return best;
    /* A key that is a prefix or suffix of the real one ("stage3_prefetch" for
    ** "stage3_prefetch_bucket_size") is a likely truncation: it beats a distant typo. */
    for (int i = 0; i < n; i++) {
        size_t cl = strlen(cands[i]);
        if (klen >= 5 && cl > klen &&
            (strncasecmp(cands[i], key, klen) == 0 || strcasecmp(cands[i] + cl - klen, key) == 0))
            return cands[i];
    }
    return best_d <= limit ? best : NULL;
}
