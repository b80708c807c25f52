/*
** cuda_spec.c — the speculative step's host side in train-cuda (ZG_SPECULATIVE, docs/PLAN.md
** "Speculative optimizer step"): the queue of the last micro-step's host Adams, run on a host thread
** beside the driver and advanced by the driver's polls, so the driver never waits for an Adam
** while it issues the backward (docs/CUDA_TRAINER.md, the speculative step's queue).
** cuda_exec.c's op table calls in: OPTIMIZER (cz_spec_optimizer), WAIT_REDUCE and GRAD_SHIP
** (cz_spec_issued, cz_spec_pump), the end of the micro-step (cz_spec_drain).
*/
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"

/* Each bucket's place in the order the driver issued the host's copies (WAIT_REDUCE, GRAD_SHIP):
** a queued Adam needs the buckets issued before it. */
static int64_t n_issued, issue_mark[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];

void cz_spec_issued(int k) { issue_mark[k] = ++n_issued; }

/* OPTIMIZER in the last micro-step (ZG_SPECULATIVE), off the driver's path. Sub-group k's Adam is
** queued with the buckets whose D2H the driver had issued by then (its gradients are among them: the
** op follows their WAIT_REDUCE), and the driver goes on issuing the backward: it never waits for an
** Adam, nor for a D2H it does not reuse the landing of, inside the micro-step. One host thread runs
** the queue's Adams in order, each into a slot of "param_land" (two, alternating). The driver
** advances the queue by polling (cz_spec_pump, at each WAIT_REDUCE and OPTIMIZER): a bucket whose D2H
** is done is handed over (cz_finish_bucket: the copy into grad16 or grad32 and the norm's part), a
** finished Adam's slot is sent H2D, and the head is posted once the thread is idle, the buckets it
** needs are handed over and its slot's last H2D is done. cz_flush pumps to the end, waiting. Every
** GPU call stays on the driver's thread (the stand-in's device is single-threaded). The Adam thread
** touches nothing the driver writes meanwhile: later hand-overs write other ranges of the gradient
** shard and other norm parts, T.param_out changes only while the thread is idle, and the step's own
** uses of the state come after the flush. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, busy;          /* the thread is running the last posted job */
    const ZrOpRow *op[ZG_N_SUBGROUPS > 0 ? ZG_N_SUBGROUPS : 1];
    int64_t need[ZG_N_SUBGROUPS > 0 ? ZG_N_SUBGROUPS : 1];  /* buckets issued up to this mark */
    int n_jobs, posted, sent;   /* queued; posted to the thread; their slots sent H2D */
} spec = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, {0}, {0}, 0, 0, 0};

static void *spec_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&spec.mu);
    for (;;) {
        while (!spec.busy) pthread_cond_wait(&spec.cv, &spec.mu);
        const ZrOpRow *op = spec.op[spec.posted - 1];
        pthread_mutex_unlock(&spec.mu);
        tr_spec_optimizer(op, tr_step_op);
        pthread_mutex_lock(&spec.mu);
        spec.busy = 0;
        pthread_cond_broadcast(&spec.cv);
    }
    return NULL;
}

static int spec_busy(void)
{
    pthread_mutex_lock(&spec.mu);
    int b = spec.busy;
    pthread_mutex_unlock(&spec.mu);
    return b;
}

/* Job j can start: every bucket it needs is handed over, and its slot's last H2D is done. */
static int spec_ready(int j)
{
    for (int k = 0; k < ZG_N_BUCKETS; k++)
        if (cz_bucket_pending(k) && issue_mark[k] <= spec.need[j]) return 0;
    int q = zr_gpu_event_query(CZ.ev_land[spec.op[j]->arg % 2]);
    CZ_CHECK(q);
    return q;
}

static void spec_post(int j)
{
    if (!cz_land_begin(spec.op[j])) tr_die("internal: a queued OPTIMIZER without a device home");
    if (!spec.started) {
        pthread_t th;
        if (pthread_create(&th, NULL, spec_thread, NULL) != 0) tr_die("cannot start the speculative step's host thread");
        pthread_detach(th);
        spec.started = 1;
    }
    pthread_mutex_lock(&spec.mu);
    spec.posted = j + 1;
    spec.busy = 1;
    pthread_cond_broadcast(&spec.cv);
    pthread_mutex_unlock(&spec.mu);
}

/* One pass over the queue without waiting; returns whether anything advanced. */
int cz_spec_pump(void)
{
    int moved = 0;
    for (int k = 0; k < ZG_N_BUCKETS; k++) {
        if (!cz_bucket_pending(k)) continue;
        int q = zr_gpu_event_query(CZ.ev_d2h[k]);
        CZ_CHECK(q);
        if (q) { cz_finish_bucket(k); moved = 1; }
    }
    if (spec.sent == spec.posted && spec.posted == spec.n_jobs) return moved;
    if (spec_busy()) return moved;
    if (spec.sent < spec.posted) {              /* the thread finished the posted job */
        double t0 = tr_now();
        cz_land_end(spec.op[spec.sent++]);
        tr_span(ZR_TRACK_COMM, "speculative update H2D", t0);
        moved = 1;
    }
    if (spec.posted < spec.n_jobs && spec_ready(spec.posted)) {
        spec_post(spec.posted);
        moved = 1;
    }
    return moved;
}

/* Every queued Adam done and sent, every bucket handed over: polling, with short sleeps while only
** the Adam thread or the device has something left. */
void cz_spec_drain(void)
{
    for (;;) {
        int left = spec.sent < spec.n_jobs;
        for (int k = 0; !left && k < ZG_N_BUCKETS; k++) left = cz_bucket_pending(k);
        if (!left) break;
        if (!cz_spec_pump()) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
    spec.n_jobs = spec.posted = spec.sent = 0;
}

void cz_spec_optimizer(const ZrOpRow *op)
{
    if (!tr_opt_home() || !cz_is_dev(tr_opt_home())) {   /* no device home: Adam writes it where it is, here */
        cz_spec_drain();
        tr_spec_optimizer(op, tr_step_op);
        return;
    }
    if (spec.n_jobs == ZG_N_SUBGROUPS) tr_die("internal: more OPTIMIZER ops than sub-groups in a micro-step");
    spec.op[spec.n_jobs] = op;
    spec.need[spec.n_jobs++] = n_issued;
    cz_spec_pump();
}
