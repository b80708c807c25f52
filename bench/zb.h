/*
** zb.h — helpers every benchmark in bench/ shares: a monotonic clock, the median of a set of
** repetitions, the one-line JSON result (printed and appended to $ZB_RESULTS, the file bench/run.sh
** tabulates), and one timed zr_nvme pass over a set of shards.
** Why one header: the benchmarks each had their own copy of these, and a figure is only comparable
** with its peer if both are timed and reduced the same way in every benchmark. Static inline so each
** benchmark stays one translation unit (the Makefile's bin/bench/% rule) with no extra object.
*/
#ifndef ZB_H
#define ZB_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zr_nvme.h"

#define ZB_MAX_REPS 64                    /* the most repetitions zb_median takes */

/* Seconds on the monotonic clock. */
static inline double zb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort order for doubles, ascending. */
static inline int zb_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) (n <= ZB_MAX_REPS; mean of the middle two for even n). Sorts a copy, so the
** caller's array keeps its order (a rep-by-rep table may still be printed from it). */
static inline double zb_median(const double *v, int n)
{
    double c[ZB_MAX_REPS];
    if (n < 1) return 0.0;
    if (n > ZB_MAX_REPS) n = ZB_MAX_REPS;
    memcpy(c, v, (size_t)n * sizeof *v);
    qsort(c, (size_t)n, sizeof *c, zb_cmp_d);
    return n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
}

/* Prints one result line (a JSON object ending in a newline) and appends it to $ZB_RESULTS if set. */
static inline void zb_emit_line(const char *line)
{
    const char *path = getenv("ZB_RESULTS");
    FILE *o = path ? fopen(path, "a") : NULL;
    fputs(line, stdout);
    if (o) { fputs(line, o); fclose(o); }
}

/* Appends one formatted result line to $ZB_RESULTS only (for a benchmark whose stdout is its own
** summary); 0, also when $ZB_RESULTS is unset, or -1 after perror when the file cannot be opened. */
__attribute__((format(printf, 1, 2))) static inline int zb_append(const char *fmt, ...)
{
    const char *path = getenv("ZB_RESULTS");
    if (!path) return 0;
    FILE *o = fopen(path, "a");
    if (!o) { perror(path); return -1; }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o, fmt, ap);
    va_end(ap);
    fclose(o);
    return 0;
}

/* One alternated pair of a throughput figure against its stream bound: n items in ta seconds (the
** figure) and ts seconds (the bound) give rate[r] and bound[r] in M items/s and ratio[r] = ts / ta,
** printed as one "  pair" line (GB/s = M items/s times gb_per_mitem). */
static inline void zb_pair(int r, int64_t n, double ta, double ts, const char *what,
                           double gb_per_mitem, double *rate, double *bound, double *ratio)
{
    rate[r] = (double)n / ta / 1e6;
    bound[r] = (double)n / ts / 1e6;
    ratio[r] = ts / ta;
    printf("  pair %d: %s %.0f Mparam/s (%.1f GB/s), stream %.0f Mparam/s (%.1f GB/s)\n",
           r, what, rate[r], rate[r] * gb_per_mitem, bound[r], bound[r] * gb_per_mitem);
}

/* The result line of a bandwidth figure in GB/s against a named peer. */
static inline void zb_emit_gbs(const char *name, double v, const char *peer, double peer_v,
                               double ratio, const char *note)
{
    char line[1024];
    snprintf(line, sizeof line,
             "{\"name\": \"%s\", \"value\": %.4f, \"unit\": \"GB/s\", \"peer\": \"%s\", "
             "\"peer_value\": %.4f, \"ratio\": %.4f, \"note\": \"%s\"}\n",
             name, v, peer, peer_v, ratio, note);
    zb_emit_line(line);
}

/* GB/s of one pass of zr_nvme over `shards` buffers of `sz` bytes each at offsets s * sz, every
** shard queued before waiting; -1 (after a message naming `who`) on failure. */
static inline double zb_nvme_pass(ZrNvme *f, char **buf, int shards, int64_t sz, int write,
                                  const char *who)
{
    ZrNvmeReq *req = calloc((size_t)shards, sizeof *req);
    if (!req) { fprintf(stderr, "%s: out of memory\n", who); return -1; }
    double t0 = zb_now();
    for (int s = 0; s < shards; s++) {
        int rc = write ? zr_nvme_write_async(f, buf[s], sz, s * sz, &req[s])
                       : zr_nvme_read_async(f, buf[s], sz, s * sz, &req[s]);
        if (rc) {
            fprintf(stderr, "%s: submit: %s\n", who, strerror(-rc));
            zr_nvme_wait_all(f);
            free(req);
            return -1;
        }
    }
    int rc = zr_nvme_wait_all(f);
    double t = zb_now() - t0;
    free(req);
    if (rc) { fprintf(stderr, "%s: %s\n", who, zr_nvme_strerror(f)); return -1; }
    return (double)sz * shards / t / 1e9;
}

#endif
