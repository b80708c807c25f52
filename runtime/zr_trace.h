/*
** zr_trace.h — Chrome trace (chrome://tracing, Perfetto) of a run, for --trace FILE.json.
** pid = rank, tid = track (0 compute, 1 comm, 2 io), names given by metadata events; ts and dur in
** microseconds since the origin passed to zr_trace_open (broadcast rank 0's zr_trace_now_us() so the
** ranks line up). Events go to a buffer fixed at open (no allocation while tracing; when it is full,
** later events are counted and dropped), safe to record from several threads.
** Files: each rank writes its own complete JSON object {"traceEvents":[...]} to
** zr_trace_rank_path(FILE, rank) = FILE with ".rank<R>" before a trailing ".json"; after a barrier
** rank 0 calls zr_trace_merge to write FILE with every rank's events (the rank files stay).
*/
#ifndef ZR_TRACE_H
#define ZR_TRACE_H
#include <stddef.h>
#include <stdint.h>

typedef enum { ZR_TRACK_COMPUTE, ZR_TRACK_COMM, ZR_TRACK_IO, ZR_NTRACKS } ZrTrack;
typedef struct ZrTrace ZrTrace;

/* Wall clock in microseconds (CLOCK_REALTIME, comparable across ranks of a node). */
double zr_trace_now_us(void);
/* rank_path: this rank's file (see zr_trace_rank_path); max_events: buffer size; origin_us: t = 0. */
int zr_trace_open(ZrTrace **t, const char *rank_path, int rank, size_t max_events, double origin_us);
/* A complete event ("X") that started at start_us (a zr_trace_now_us() value) and ends now. */
void zr_trace_span(ZrTrace *t, int track, const char *name, double start_us);
/* A complete event with explicit times (absolute zr_trace_now_us() values). */
void zr_trace_complete(ZrTrace *t, int track, const char *name, double start_us, double dur_us);
/* Begin/end ("B"/"E") pairs; must nest within a track. */
void zr_trace_begin(ZrTrace *t, int track, const char *name);
void zr_trace_end(ZrTrace *t, int track, const char *name);
/* Instant event ("i"), e.g. "overflow". */
void zr_trace_instant(ZrTrace *t, int track, const char *name);
/* Events dropped because the buffer was full. */
size_t zr_trace_dropped(const ZrTrace *t);
/* Writes the file (temp + rename) and frees t; t may be NULL (tracing off). */
int zr_trace_close(ZrTrace *t);

/* out = path with ".rank<R>" inserted before a trailing ".json" (appended otherwise). */
int zr_trace_rank_path(char *out, size_t cap, const char *path, int rank);
/* Rank 0: concatenates the events of zr_trace_rank_path(path, r), r < world, into path. */
int zr_trace_merge(const char *path, int world);
#endif
