/*
** zr_coll_watchdog.c — collective timeouts: who has not arrived, said out loud, then MPI_Abort.
**
** Each rank publishes {seq started, op, step, seq completed} in its slot of an MPI RMA window
** (MPI_Win_allocate over the communicator, written locally with plain stores: unified memory
** model). A rank whose collective exceeds the timeout reads every slot one-sidedly (passive
** target: the peers need not cooperate, which matters because the late rank is by definition
** not in a collective), prints the collective, its sequence number, the step and the ranks that
** have not reached it, and aborts the job. The first line is printed before any RMA read, so
** even a transport that cannot read a busy peer leaves the essential message behind.
*/
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "zr_coll_int.h"      /* defines: ZrComm, ZrCollReq internals */

#define ZR_COLL_TIMEOUT_DEFAULT 300.0

static ZrComm *err_comm;      /* the communicator the fatal MPI error handler describes */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double zr_coll_default_timeout(void)
{
    const char *e = getenv("ZR_COLL_TIMEOUT_S");
    if (e && *e) {
        char *end;
        double s = strtod(e, &end);
        if (*end == 0 && s > 0) return s;
        fprintf(stderr, "zr_coll: ignoring ZR_COLL_TIMEOUT_S=%s (want seconds > 0); using %g\n",
                e, ZR_COLL_TIMEOUT_DEFAULT);
    }
    return ZR_COLL_TIMEOUT_DEFAULT;
}

void zr_coll_watch_init(ZrComm *c)
{
    c->win = MPI_WIN_NULL;
    c->pub = NULL;
    int64_t *base = NULL;
    int rc = MPI_Win_allocate((MPI_Aint)(ZR_PUB_WORDS * sizeof(int64_t)), sizeof(int64_t),
                              MPI_INFO_NULL, c->mpi, &base, &c->win);
    if (rc != MPI_SUCCESS) {
        if (c->rank == 0)
            fprintf(stderr, "zr_coll: no RMA window (MPI error %d): timeouts will not name the "
                    "missing ranks\n", rc);
        c->win = MPI_WIN_NULL;
        return;
    }
    MPI_Win_set_errhandler(c->win, MPI_ERRORS_RETURN);
    c->pub = base;
    memset(c->pub, 0, ZR_PUB_WORDS * sizeof(int64_t));
    c->pub[1] = -1;
    MPI_Barrier(c->mpi);                     /* every slot initialised before anyone reads */
}

void zr_coll_watch_fini(ZrComm *c)
{
    if (err_comm == c) err_comm = NULL;
    if (c->win != MPI_WIN_NULL) MPI_Win_free(&c->win);
    c->pub = NULL;
}

void zr_coll_watch_start(ZrComm *c, ZrCollReq *q)
{
    q->t0 = now_s();
    if (!c->pub) return;
    __atomic_store_n(&c->pub[2], q->step, __ATOMIC_RELAXED);
    __atomic_store_n(&c->pub[1], (int64_t)q->op, __ATOMIC_RELAXED);
    __atomic_store_n(&c->pub[0], q->seq, __ATOMIC_RELEASE);
}

void zr_coll_watch_done(ZrComm *c, ZrCollReq *q)
{
    if (c->pub) __atomic_store_n(&c->pub[3], q->seq, __ATOMIC_RELEASE);
}

static const char *dt_name(ZrDtype dt)
{
    return dt == ZR_DT_FP32 ? "fp32" : dt == ZR_DT_BF16 ? "bf16" : "fp16";
}

/* Reads rank r's published words; 0 or -1 when the window is unavailable. */
static int read_pub(ZrComm *c, int r, int64_t w[ZR_PUB_WORDS])
{
    if (c->win == MPI_WIN_NULL) return -1;
    if (r == c->rank) {
        for (int i = 0; i < ZR_PUB_WORDS; i++) w[i] = __atomic_load_n(&c->pub[i], __ATOMIC_ACQUIRE);
        return 0;
    }
    if (MPI_Win_lock(MPI_LOCK_SHARED, r, 0, c->win) != MPI_SUCCESS) return -1;
    int rc = MPI_Get(w, ZR_PUB_WORDS, MPI_INT64_T, r, 0, ZR_PUB_WORDS, MPI_INT64_T, c->win);
    MPI_Win_unlock(r, c->win);
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* Appends to the message; it is written with one write() so ranks' reports do not interleave. */
static void addf(char *buf, size_t *len, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addf(char *buf, size_t *len, size_t cap, const char *fmt, ...)
{
    if (*len >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0) *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

static void timeout_abort(ZrComm *c, ZrCollReq *q, double waited)
{
    char msg[4000];
    size_t len = 0;
    addf(msg, &len, sizeof msg, "zr_coll: TIMEOUT after %.0f s in %s (seq %lld, step %lld, %lld x "
         "%s) on rank %d of %d\n", waited, zr_coll_op_name(q->op), (long long)q->seq,
         (long long)q->step, (long long)q->count, dt_name(q->dt), c->rank, c->world);
    fputs(msg, stderr);                      /* the essential line first, before any RMA read */
    fflush(stderr);
    int missing = 0, mismatch = 0, unknown = 0;
    char miss[2048];
    size_t ml = 0;
    miss[0] = 0;
    for (int r = 0; r < c->world && !unknown; r++) {
        int64_t w[ZR_PUB_WORDS];
        if (read_pub(c, r, w) < 0) { unknown = 1; break; }
        const char *op = w[1] >= 0 ? zr_coll_op_name((ZrCollOp)w[1]) : "none";
        if (w[0] < q->seq) {
            addf(miss, &ml, sizeof miss, "%s%d (at seq %lld %s, step %lld)", missing ? ", " : "",
                 r, (long long)w[0], op, (long long)w[2]);
            missing++;
        } else if (w[0] == q->seq && w[1] != (int64_t)q->op) {
            addf(msg, &len, sizeof msg, "zr_coll: [rank %d] rank %d issued %s as seq %lld "
                 "(mismatched schedule)\n", c->rank, r, op, (long long)q->seq);
            mismatch++;
        }
    }
    if (unknown)
        addf(msg, &len, sizeof msg, "zr_coll: [rank %d] ranks not arrived: unknown (peer state "
             "unreadable)\n", c->rank);
    else if (missing)
        addf(msg, &len, sizeof msg, "zr_coll: [rank %d] ranks not arrived: %s\n", c->rank, miss);
    else if (!mismatch)
        addf(msg, &len, sizeof msg, "zr_coll: [rank %d] ranks not arrived: none (all reached seq "
             "%lld; the transport itself is stuck)\n", c->rank, (long long)q->seq);
    addf(msg, &len, sizeof msg, "zr_coll: [rank %d] aborting all %d ranks (timeout %g s: "
         "ZR_COLL_TIMEOUT_S)\n", c->rank, c->world, c->timeout_s);
    /* skip the first line, already printed */
    const char *rest = strchr(msg, '\n') + 1;
    fputs(rest, stderr);
    fflush(stderr);
    zr_coll_dev_abort(c);                    /* GPU kernels waiting on a peer never finish */
    MPI_Abort(MPI_COMM_WORLD, 70);
    abort();                                 /* MPI_Abort does not return; if it did, stop */
}

static void fatal_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    char text[MPI_MAX_ERROR_STRING];
    int tl = 0;
    MPI_Error_string(*code, text, &tl);
    ZrComm *c = err_comm;
    if (c && c->pub)
        fprintf(stderr, "zr_coll: rank %d: MPI error in a collective: %s; last started: seq %lld "
                "%s (step %lld), last completed: seq %lld. A rank probably issued a different "
                "collective (mismatched schedule)\n", c->rank, text, (long long)c->pub[0],
                c->pub[1] >= 0 ? zr_coll_op_name((ZrCollOp)c->pub[1]) : "none",
                (long long)c->pub[2], (long long)c->pub[3]);
    else
        fprintf(stderr, "zr_coll: MPI error: %s\n", text);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 71);
}

void zr_coll_install_errhandler(ZrComm *c)
{
    MPI_Errhandler cur, mine;
    err_comm = c;
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &cur) != MPI_SUCCESS) return;
    int is_default = cur == MPI_ERRORS_ARE_FATAL;
    if (cur != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&cur);
    if (!is_default) return;                 /* the trainer chose its own: leave it */
    if (MPI_Comm_create_errhandler(fatal_handler, &mine) != MPI_SUCCESS) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine);
    MPI_Errhandler_free(&mine);
}

void zr_coll_watch_check(ZrComm *c, ZrCollReq *q)
{
    double waited = now_s() - q->t0;
    if (waited > c->timeout_s) timeout_abort(c, q, waited);
}

void zr_coll_backoff(unsigned polls)
{
    if (polls < 64) {
        __builtin_ia32_pause();
    } else if (polls < 1024) {
        sched_yield();
    } else {
        struct timespec ts = {0, polls < 4096 ? 20000 : 200000};
        nanosleep(&ts, NULL);
    }
}
