/*
** t_trace.c — the run's outputs other than weights: the Chrome trace (per-rank files recorded from
** several threads, merged by rank 0, parsed and checked by Python's json) and the JSONL step log.
*/
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "zr.h"
#include "zt.h"
#include "zt_tmp.h"

#define PY "/usr/bin/python3"

static char dir[64];

static const char *tmp(const char *name) { return zt_tmp_in(dir, name); }

static int py(const char *args)
{
    char cmd[2048];
    const char *root = getenv("ZT_ROOT");
    snprintf(cmd, sizeof cmd, "%s %s/tests/runtime/train_ref.py %s", PY, root ? root : ".", args);
    return system(cmd);
}

typedef struct { ZrTrace *t; int track; } Job;

/* Each thread owns one track: B/E nesting on compute, spans on comm, instants on io. */
static void *worker(void *arg)
{
    Job *j = arg;
    char name[32];
    for (int i = 0; i < 50; i++) {
        double t0 = zr_trace_now_us();
        snprintf(name, sizeof name, "op \"%d\"", i); /* quotes must be escaped */
        if (j->track == ZR_TRACK_COMPUTE) {
            zr_trace_begin(j->t, j->track, "forward");
            zr_trace_begin(j->t, j->track, name);
            zr_trace_end(j->t, j->track, name);
            zr_trace_end(j->t, j->track, "forward");
        } else if (j->track == ZR_TRACK_COMM) {
            zr_trace_span(j->t, j->track, name, t0);
        } else {
            zr_trace_instant(j->t, j->track, name);
        }
    }
    return NULL;
}

static void t_trace_threads_merge(void)
{
    char rp[300], args[700], out[400];
    FILE *p;
    double origin = zr_trace_now_us();
    for (int r = 0; r < 2; r++) {
        ZrTrace *t;
        pthread_t th[3];
        Job jobs[3];
        ZT_EQ_INT(zr_trace_rank_path(rp, sizeof rp, tmp("run.json"), r), 0);
        ZT_EQ_INT(zr_trace_open(&t, rp, r, 1000, origin), 0);
        for (int k = 0; k < 3; k++) {
            jobs[k] = (Job){ t, k };
            pthread_create(&th[k], NULL, worker, &jobs[k]);
        }
        for (int k = 0; k < 3; k++) pthread_join(th[k], NULL);
        zr_trace_complete(t, ZR_TRACK_IO, "swap_in sub 0", origin + 10, 5.5);
        ZT_EQ_INT(zr_trace_dropped(t), 0);
        ZT_EQ_INT(zr_trace_close(t), 0);
    }
    ZT_EQ_INT(zr_trace_rank_path(rp, sizeof rp, tmp("run.json"), 1), 0);
    ZT_CHECK(strstr(rp, "run.rank1.json") != NULL);
    ZT_EQ_INT(zr_trace_merge(tmp("run.json"), 2), 0);
    if (access(PY, X_OK) != 0) ZT_SKIP("no %s", PY);
    /* 200 B/E + 50 X + 50 i + 1 X per rank */
    snprintf(args, sizeof args, "trace %s 2", tmp("run.json"));
    {
        char cmd[1200];
        const char *root = getenv("ZT_ROOT");
        snprintf(cmd, sizeof cmd, "%s %s/tests/runtime/train_ref.py %s", PY, root ? root : ".", args);
        p = popen(cmd, "r");
        ZT_CHECK(p && fgets(out, sizeof out, p));
        ZT_CHECK(p && pclose(p) == 0);
        ZT_CHECKM(strncmp(out, "ok 301 301", 10) == 0, "python says: %s", out);
    }
    /* each rank file is valid on its own too */
    snprintf(args, sizeof args, "trace %s 1 >/dev/null", tmp("run.rank0.json"));
    ZT_EQ_INT(py(args), 0);
    /* a rank file missing: merge refuses and leaves no partial output */
    unlink(tmp("run.rank1.json"));
    ZT_EQ_INT(zr_trace_merge(tmp("m2.json"), 2), -ENOENT);
    ZT_CHECK(access(tmp("m2.json"), F_OK) != 0);
}

static void t_trace_full_buffer(void)
{
    ZrTrace *t;
    char args[400];
    ZT_EQ_INT(zr_trace_open(&t, tmp("small.json"), 0, 10, 0), 0);
    for (int i = 0; i < 15; i++) zr_trace_instant(t, ZR_TRACK_COMPUTE, "x");
    ZT_EQ_INT(zr_trace_dropped(t), 5);
    ZT_EQ_INT(zr_trace_close(t), 0);
    ZT_EQ_INT(zr_trace_close(NULL), 0); /* tracing off */
    zr_trace_instant(NULL, 0, "ignored");
    if (access(PY, X_OK) != 0) ZT_SKIP("no %s", PY);
    snprintf(args, sizeof args, "json %s >/dev/null", tmp("small.json"));
    ZT_EQ_INT(py(args), 0);
}

static void t_log_format(void)
{
    char buf[512];
    ZrLogStep s = { .step = 12, .loss = 5.123456789012, .lr = 6e-4, .grad_norm = 1.5, .loss_scale = 65536,
                    .skipped = 0, .tokens_per_s = 10234.5, .ms = 101.25 };
    ZT_CHECK(zr_log_format(buf, sizeof buf, &s) > 0);
    ZT_EQ_STR(buf, "{\"step\":12,\"loss\":5.12345679,\"lr\":0.0006,\"grad_norm\":1.5,\"loss_scale\":65536,"
                   "\"skipped\":0,\"tokens_per_s\":10234.5,\"ms\":101.25}");
    s.loss = NAN;
    s.grad_norm = INFINITY;
    s.skipped = 1;
    s.has_val = 1;
    s.val_loss = 4.25;
    s.val_tokens = 3071;
    ZT_CHECK(zr_log_format(buf, sizeof buf, &s) > 0);
    ZT_EQ_STR(buf, "{\"step\":12,\"loss\":null,\"lr\":0.0006,\"grad_norm\":null,\"loss_scale\":65536,"
                   "\"skipped\":1,\"tokens_per_s\":10234.5,\"ms\":101.25,\"val_loss\":4.25,\"val_tokens\":3071}");
    ZT_EQ_INT(zr_log_format(buf, 20, &s), -ENOSPC);
}

static void t_log_file(void)
{
    ZrLog lg;
    ZrLogStep s = { .loss = 3.0, .lr = 1e-3, .grad_norm = 0.5, .loss_scale = 1, .tokens_per_s = 1e5, .ms = 3 };
    char args[400], line[256];
    FILE *f;
    int n = 0;
    ZT_EQ_INT(zr_log_open(&lg, tmp("log.jsonl"), 0), 0);
    for (s.step = 0; s.step < 3; s.step++) ZT_EQ_INT(zr_log_step(&lg, &s), 0);
    ZT_EQ_INT(zr_log_close(&lg), 0);
    ZT_EQ_INT(zr_log_open(&lg, tmp("log.jsonl"), 1), 0); /* resume appends */
    for (; s.step < 5; s.step++) ZT_EQ_INT(zr_log_step(&lg, &s), 0);
    ZT_EQ_INT(zr_log_close(&lg), 0);
    f = fopen(tmp("log.jsonl"), "r");
    while (f && fgets(line, sizeof line, f)) {
        char want[32];
        snprintf(want, sizeof want, "{\"step\":%d,", n++);
        ZT_CHECK(strncmp(line, want, strlen(want)) == 0);
    }
    if (f) fclose(f);
    ZT_EQ_INT(n, 5);
    /* resume at step 3 after a run that logged 0..4 and died: 3 and 4 are dropped, then re-logged */
    ZT_EQ_INT(zr_log_open_at(&lg, tmp("log.jsonl"), 3), 0);
    for (s.step = 3; s.step < 6; s.step++) ZT_EQ_INT(zr_log_step(&lg, &s), 0);
    ZT_EQ_INT(zr_log_close(&lg), 0);
    f = fopen(tmp("log.jsonl"), "r");
    n = 0;
    while (f && fgets(line, sizeof line, f)) {
        char want[32];
        snprintf(want, sizeof want, "{\"step\":%d,", n++);
        ZT_CHECKM(strncmp(line, want, strlen(want)) == 0, "line %d: %s", n, line);
    }
    if (f) fclose(f);
    ZT_EQ_INT(n, 6);
    ZT_EQ_INT(zr_log_open_at(&lg, tmp("fresh.jsonl"), 7), 0); /* no earlier log: created */
    ZT_EQ_INT(zr_log_close(&lg), 0);
    ZT_CHECK(access(tmp("fresh.jsonl"), F_OK) == 0);
    ZT_EQ_INT(zr_log_open(&lg, tmp("nodir/log.jsonl"), 0), -ENOENT);
    ZT_CHECK(strstr(zr_train_error(), "nodir/log.jsonl") != NULL);
    if (access(PY, X_OK) != 0) ZT_SKIP("no %s", PY);
    snprintf(args, sizeof args, "json --lines %s >/dev/null", tmp("log.jsonl"));
    ZT_EQ_INT(py(args), 0);
}

static void t_progress(void)
{
    char buf[512] = { 0 };
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ZrLogStep s = { .step = 7, .loss = 2.5, .lr = 3e-4, .grad_norm = 0.75, .loss_scale = 1024, .skipped = 1,
                    .tokens_per_s = 12345.6, .ms = 41.5 };
    zr_progress(f, &s, 100, "dev 1.0 GiB host 2.0 GiB");
    fclose(f);
    ZT_CHECK(strstr(buf, "step      7/100") != NULL);
    ZT_CHECK(strstr(buf, "loss 2.500000") != NULL);
    ZT_CHECK(strstr(buf, "12346 tok/s") != NULL);
    ZT_CHECK(strstr(buf, "skipped (overflow, scale 1024)") != NULL);
    ZT_CHECK(strstr(buf, "| dev 1.0 GiB host 2.0 GiB\n") != NULL);
}

int main(void)
{
    if (zt_tmpdir_make(dir, sizeof dir, "trace")) return 1;
    ZT_RUN(t_trace_threads_merge);
    ZT_RUN(t_trace_full_buffer);
    ZT_RUN(t_log_format);
    ZT_RUN(t_log_file);
    ZT_RUN(t_progress);
    zt_tmpdir_remove(dir);
    return zt_end();
}
