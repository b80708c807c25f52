/*
** zr_trace.c — Chrome trace events (zr_trace.h). Recording is a fetch-add into a buffer sized at
** open and a copy of the name, so it is cheap enough to leave on around every schedule operation
** and safe from the I/O and communication threads. The file is written once, at close, one event
** per line, which is also what lets rank 0 merge the rank files without a JSON parser.
*/
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "zr_afile.h"
#include "zr_err.h"
#include "zr_trace.h"

#define NAMELEN 48
#define HEAD_LINE "{\"traceEvents\":["

typedef struct Event {
    double ts, dur;             /* us since the origin; dur for "X" only */
    char ph;                    /* 'X', 'B', 'E', 'i' */
    unsigned char track;
    char name[NAMELEN];
} Event;

struct ZrTrace {
    Event *ev;
    size_t cap;
    atomic_size_t n;            /* slots claimed, may pass cap */
    double origin;
    int rank;
    char path[1024];
};

static const char *const track_names[ZR_NTRACKS] = { "compute", "comm", "io" };

double zr_trace_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

int zr_trace_open(ZrTrace **tp, const char *rank_path, int rank, size_t max_events, double origin_us)
{
    ZrTrace *t;
    *tp = NULL;
    if (strlen(rank_path) >= sizeof t->path || max_events == 0)
        return zr_train_fail(-EINVAL, "trace %s: path too long or no room for events", rank_path);
    if (!(t = calloc(1, sizeof *t)) || !(t->ev = calloc(max_events, sizeof *t->ev))) {
        free(t);
        return zr_train_fail(-ENOMEM, "trace: no memory for %zu events", max_events);
    }
    t->cap = max_events;
    atomic_init(&t->n, 0);
    t->origin = origin_us > 0 ? origin_us : zr_trace_now_us();
    t->rank = rank;
    strcpy(t->path, rank_path);
    *tp = t;
    return 0;
}

static void record(ZrTrace *t, char ph, int track, const char *name, double ts, double dur)
{
    size_t i;
    Event *e;
    if (!t) return;
    i = atomic_fetch_add_explicit(&t->n, 1, memory_order_relaxed);
    if (i >= t->cap) return;
    e = &t->ev[i];
    e->ts = ts - t->origin;
    e->dur = dur;
    e->ph = ph;
    e->track = (unsigned char)(track >= 0 && track < ZR_NTRACKS ? track : ZR_TRACK_COMPUTE);
    snprintf(e->name, NAMELEN, "%s", name ? name : "");
}

void zr_trace_span(ZrTrace *t, int track, const char *name, double start_us)
{
    if (t) record(t, 'X', track, name, start_us, zr_trace_now_us() - start_us);
}
void zr_trace_complete(ZrTrace *t, int track, const char *name, double start_us, double dur_us)
{
    record(t, 'X', track, name, start_us, dur_us);
}
void zr_trace_begin(ZrTrace *t, int track, const char *name)
{
    if (t) record(t, 'B', track, name, zr_trace_now_us(), 0);
}
void zr_trace_end(ZrTrace *t, int track, const char *name)
{
    if (t) record(t, 'E', track, name, zr_trace_now_us(), 0);
}
void zr_trace_instant(ZrTrace *t, int track, const char *name)
{
    if (t) record(t, 'i', track, name, zr_trace_now_us(), 0);
}

size_t zr_trace_dropped(const ZrTrace *t)
{
    size_t n = atomic_load(&((ZrTrace *)t)->n);
    return n > t->cap ? n - t->cap : 0;
}

static void put_name(ZrAfile *a, const char *s)
{
    zr_afile_printf(a, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') zr_afile_printf(a, "\\%c", c);
        else if (c < 0x20) zr_afile_printf(a, "\\u%04x", c);
        else zr_afile_printf(a, "%c", c);
    }
    zr_afile_printf(a, "\"");
}

int zr_trace_close(ZrTrace *t)
{
    ZrAfile a;
    size_t n, i;
    int k, rc;
    if (!t) return 0;
    n = atomic_load(&t->n);
    if (n > t->cap) n = t->cap;
    if ((rc = zr_afile_open(&a, t->path)) != 0) goto out;
    /* metadata first: names for the process (rank) and its tracks */
    zr_afile_printf(&a, HEAD_LINE "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                    "\"args\":{\"name\":\"rank %d\"}}", t->rank, t->rank);
    for (k = 0; k < ZR_NTRACKS; k++)
        zr_afile_printf(&a, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"name\":\"%s\"}}", t->rank, k, track_names[k]);
    for (i = 0; i < n; i++) {
        const Event *e = &t->ev[i];
        zr_afile_printf(&a, ",\n{\"name\":");
        put_name(&a, e->name);
        zr_afile_printf(&a, ",\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", e->ph, t->rank, e->track,
                        e->ts);
        if (e->ph == 'X') zr_afile_printf(&a, ",\"dur\":%.3f", e->dur);
        if (e->ph == 'i') zr_afile_printf(&a, ",\"s\":\"t\"");
        zr_afile_printf(&a, "}");
    }
    zr_afile_printf(&a, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%zu}}\n",
                    zr_trace_dropped(t));
    rc = zr_afile_commit(&a);
out:
    free(t->ev);
    free(t);
    return rc;
}

int zr_trace_rank_path(char *out, size_t cap, const char *path, int rank)
{
    size_t n = strlen(path);
    int w;
    if (n >= 5 && !strcmp(path + n - 5, ".json"))
        w = snprintf(out, cap, "%.*s.rank%d.json", (int)(n - 5), path, rank);
    else
        w = snprintf(out, cap, "%s.rank%d", path, rank);
    if (w < 0 || (size_t)w >= cap) return zr_train_fail(-ENAMETOOLONG, "trace %s: path too long", path);
    return 0;
}

int zr_trace_merge(const char *path, int world)
{
    ZrAfile a;
    char rp[1100], *line = NULL;
    size_t lcap = 0;
    int r, rc, first = 1;
    if ((rc = zr_afile_open(&a, path)) != 0) return rc;
    zr_afile_printf(&a, HEAD_LINE);
    for (r = 0; r < world && !rc; r++) {
        FILE *f;
        ssize_t len;
        int lineno = 0;
        if ((rc = zr_trace_rank_path(rp, sizeof rp, path, r)) != 0) break;
        if (!(f = fopen(rp, "r"))) {
            int e = errno;
            rc = zr_train_fail(-e, "trace merge: cannot open %s: %s", rp, strerror(e));
            break;
        }
        while ((len = getline(&line, &lcap, f)) > 0) {
            lineno++;
            if (lineno == 1) {
                if (strncmp(line, HEAD_LINE, strlen(HEAD_LINE)) != 0) {
                    rc = zr_train_fail(-EINVAL, "trace merge: %s is not a zrt rank trace", rp);
                    break;
                }
                continue;
            }
            if (line[0] == ']') break;
            if (line[len - 1] == '\n') line[--len] = 0;
            if (len && line[len - 1] == ',') line[--len] = 0; /* events end in "," except the last */
            zr_afile_printf(&a, "%s\n%s", first ? "" : ",", line);
            first = 0;
        }
        fclose(f);
    }
    free(line);
    zr_afile_printf(&a, "\n],\"displayTimeUnit\":\"ms\"}\n");
    if (rc) { zr_afile_abort(&a); return rc; }
    return zr_afile_commit(&a);
}
