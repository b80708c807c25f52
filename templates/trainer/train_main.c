/*
** train_main.c — the trainer's entry point: docs/SPEC.md's command line, the world-size check, setup
** (arenas, data, schedule state, init or resume), the step loop (micro-steps, then the optimizer
** step), the JSONL log, progress on stderr, --trace, --save/--save-every, --export.
**
**   train --data FILE [--val FILE] [--steps N | --more-steps K] [--eval-every K] [--eval-only]
**         [--log FILE.jsonl] [--init-from F.safetensors|DIR] [--export F.safetensors|DIR]
**         [--tokenizer DIR] [--save DIR] [--save-every K] [--resume DIR] [--trace FILE.json]
**         [--threads N] [--dump-grads F.safetensors] [--quiet] [the backend's flags]
** Everything a backend does differently goes through tr_backend (train.h, TrBackend): this file
** is the one main of every build, the host trainer's and train-cuda's.
** Launch with mpirun -np <the plan's world size>; ZG_NVME_DIR overrides the swap-file directory.
** Fault injection for tests (docs/TRAINER.md, Faults): ZG_FAULT_EXIT_RANK=r ZG_FAULT_EXIT_STEP=s
** makes rank r raise ZG_FAULT_SIGNAL (KILL, default, or STOP: a hung rank) as step s begins.
*/
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

Trainer T;
const TrBackend *tr_backend;

/* One write() per message, so the ranks' reports of the same fault do not interleave. */
void tr_die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "train (rank %d): error: ", T.rank);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(msg);
    msg[n++] = '\n';
    fflush(stdout);
    fflush(stderr);
    if (write(STDERR_FILENO, msg, (size_t)n) < 0) exit(1);
    exit(1);
}

double tr_now(void) { return T.trace ? zr_trace_now_us() : 0; }

/* Spans come from the driver and, with the speculative step on train-cuda, its host thread. */
void tr_span(int track, const char *name, double t0)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (!T.trace) return;
    pthread_mutex_lock(&mu);
    zr_trace_span(T.trace, track, name, t0);
    pthread_mutex_unlock(&mu);
}

/* The stage number here and in the start-up banner is text for the user, who configured a stage: nothing
** in the run depends on it (the tables decide), but the user recognises the plan by it. */
static void usage(void)
{
    fprintf(stderr,
            "usage: train --data FILE [--val FILE] [--steps N | --more-steps K] [--eval-every K]\n"
            "             [--eval-only] [--log FILE.jsonl] [--init-from F.safetensors|DIR]\n"
            "             [--export F.safetensors|DIR] [--tokenizer DIR] [--save DIR] [--save-every K]\n"
            "             [--resume DIR] [--trace FILE.json] [--threads N] [--dump-grads F.safetensors]\n"
            "             [--quiet] %s\n"
            "  --data/--val: a document file of bin/zgen data (docs/DATA.md) or a token file\n"
            "  --steps N: train until step N (a total, also on --resume); --more-steps K: K more steps\n"
            "  --init-from: a .safetensors file or a Hugging Face model folder; --export: F.safetensors,\n"
            "  or a folder [--export-dtype fp32|bf16] [--export-shard-size 5GB] with the tokenizer of\n"
            "  --tokenizer DIR (else the --init-from folder's)\n"
            "plan %s: %d ranks, ZeRO stage %d, %s, micro-batch %d x %d steps of accumulation\n",
            tr_backend->usage, ZG_NAME, ZG_WORLD_SIZE, ZG_STAGE, ZG_DTYPE_NAME, ZG_MICRO_BATCH, ZG_GRAD_ACCUM);
    exit(2);
}

static void parse_args(int argc, char **argv, TrArgs *a)
{
    memset(a, 0, sizeof *a);
    a->steps = 10;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (strcmp(k, "--quiet") == 0) { a->quiet = 1; continue; }
        if (strcmp(k, "--eval-only") == 0) { a->eval_only = 1; continue; }
        if (tr_backend->flag && tr_backend->flag(k)) continue;
        if (strcmp(k, "--help") == 0 || i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (strcmp(k, "--data") == 0) a->data = v;
        else if (strcmp(k, "--val") == 0) a->val = v;
        else if (strcmp(k, "--steps") == 0) a->steps = tr_count_arg(k, v), a->steps_given = 1;
        else if (strcmp(k, "--more-steps") == 0) a->more_steps = tr_count_arg(k, v);
        else if (strcmp(k, "--eval-every") == 0) a->eval_every = tr_count_arg(k, v);
        else if (strcmp(k, "--tokenizer") == 0) a->tokenizer = v;
        else if (strcmp(k, "--log") == 0) a->log = v;
        else if (strcmp(k, "--init-from") == 0) a->init_from = v;
        else if (strcmp(k, "--export") == 0) a->export_path = v;
        else if (strcmp(k, "--export-dtype") == 0) a->export_dtype = tr_export_dtype_arg(v);
        else if (strcmp(k, "--export-shard-size") == 0) a->export_shard_bytes = tr_size_arg(k, v);
        else if (strcmp(k, "--save") == 0) a->save = v;
        else if (strcmp(k, "--save-every") == 0) a->save_every = atoll(v);
        else if (strcmp(k, "--resume") == 0) a->resume = v;
        else if (strcmp(k, "--trace") == 0) a->trace = v;
        else if (strcmp(k, "--threads") == 0) a->threads = atoi(v);
        else if (strcmp(k, "--dump-grads") == 0) a->dump_grads = v;
        else { fprintf(stderr, "train: unknown option %s\n", k); usage(); }
    }
    if (!a->data) usage();
    if (a->more_steps && a->steps_given) {
        fprintf(stderr, "train: error: --steps and --more-steps both given; --steps N trains until step N, "
                "--more-steps K trains K steps past the resumed one: pass one\n");
        exit(2);
    }
    if ((a->eval_only || a->eval_every) && !a->val) {
        fprintf(stderr, "train: error: %s needs --val FILE, the data to score (bin/zgen data makes it)\n",
                a->eval_only ? "--eval-only" : "--eval-every");
        exit(2);
    }
}

/* The step and count flags: a whole number >= 0, or the run stops here saying which flag. */
int64_t tr_count_arg(const char *flag, const char *v)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < 0) {
        fprintf(stderr, "train: error: %s %s: expected a whole number >= 0\n", flag, v);
        exit(2);
    }
    return x;
}

/* The rank dies (or freezes) with no cleanup, as on a node failure: tests check that the others
** stop with a message and that the checkpoints saved before stay loadable. */
static void fault_maybe(void)
{
    static int armed = -1, sig;
    static long long at;
    if (armed < 0) {
        const char *r = getenv("ZG_FAULT_EXIT_RANK"), *s = getenv("ZG_FAULT_EXIT_STEP");
        const char *k = getenv("ZG_FAULT_SIGNAL");
        armed = r && s && atoi(r) == T.rank;
        at = s ? atoll(s) : 0;
        sig = k && strcmp(k, "STOP") == 0 ? SIGSTOP : SIGKILL;
    }
    if (armed && T.step == at) {
        fprintf(stderr, "train (rank %d): ZG_FAULT_EXIT_STEP: raising SIG%s at step %lld\n", T.rank,
                sig == SIGSTOP ? "STOP" : "KILL", at);
        fflush(stderr);
        raise(sig);
    }
}

static void setup_schedules(void)
{
    ZrLrSched *s = &T.lr;
    zr_lr_defaults(s, ZG_SCHED_KIND, ZG_LR);
    s->warmup_min_lr = ZG_WARMUP_MIN_LR;
    s->warmup_max_lr = ZG_WARMUP_MAX_LR;
    s->warmup_num_steps = ZG_WARMUP_NUM_STEPS;
    s->warmup_type = ZG_WARMUP_TYPE;
    s->total_num_steps = ZG_TOTAL_NUM_STEPS;
    s->warmup_min_ratio = ZG_WARMUP_MIN_RATIO;
    s->cos_min_ratio = ZG_COS_MIN_RATIO;
    if (zr_lr_check(s) < 0) tr_die("scheduler: %s", zr_train_error());
    ZrScalerConfig c;
    zr_scaler_defaults(&c);
    c.loss_scale = ZG_LOSS_SCALE;
    c.initial_scale_power = ZG_INITIAL_SCALE_POWER;
    c.loss_scale_window = ZG_LOSS_SCALE_WINDOW;
    c.hysteresis = ZG_HYSTERESIS;
    c.consecutive_hysteresis = ZG_CONSECUTIVE_HYSTERESIS;
    c.min_loss_scale = ZG_MIN_LOSS_SCALE;
    ZR_CHECK(zr_scaler_init(&T.scaler, &c));
}

static void mem_text(char *buf, size_t cap)
{
    const double G = 1024.0 * 1024.0;
    snprintf(buf, cap, "dev %.1f MiB pinned %.1f MiB host %.1f MiB nvme %.1f MiB",
             ZG_TIER_BYTES_DEVICE / G, ZG_TIER_BYTES_PINNED / G, ZG_TIER_BYTES_HOST / G,
             ZG_TIER_BYTES_NVME / G);
}

static void setup(int argc, char **argv)
{
    tr_backend = &tr_build_backend;
    parse_args(argc, argv, &T.a);
    /* Past `ulimit -f` a write fails with EFBIG, which the trainer reports naming the file, instead
    ** of SIGXFSZ killing the rank with no word. */
    signal(SIGXFSZ, SIG_IGN);
    ZR_CHECK(zr_comm_create(&T.comm));
    T.rank = zr_comm_rank(T.comm);
    T.ws = zr_comm_world(T.comm);
    if (T.ws != ZG_WORLD_SIZE) {
        if (T.rank == 0)
            fprintf(stderr, "train: error: this trainer was generated for %d ranks (plan %s) but was "
                    "launched on %d.\n---> HINT: launch with mpirun -np %d, or regenerate the plan "
                    "for this world size: bin/zgen %s --world-size %d\n", ZG_WORLD_SIZE, ZG_NAME,
                    T.ws, ZG_WORLD_SIZE, ZG_GEN_ARGS, T.ws);
        zr_comm_destroy(T.comm);
        exit(2);
    }
    ZrEnv env;
    char err[256];
    T.local_world = zr_env_from_mpi(&env, err, sizeof err) == 0 && env.local_world > 0
                    ? env.local_world : 1;
    int threads = T.a.threads;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = (int)(cores / T.local_world);
        if (threads < 1) threads = 1;
    }
    tr_model_threads_init(threads);   /* one pool: OpenMP's threads, OpenBLAS single-threaded */
    if (zr_data_open(&T.data, T.a.data, ZG_SEQ_LEN) < 0 ||
        zr_data_check_vocab(&T.data, ZG_VOCAB_SIZE) < 0)
        tr_die("--data: %s", zr_train_error());
    if (T.a.val && (zr_data_open(&T.val, T.a.val, ZG_SEQ_LEN) < 0 ||
                    zr_data_check_vocab(&T.val, ZG_VOCAB_SIZE) < 0))
        tr_die("--val: %s", zr_train_error());
    zr_data_set_order(&T.data, ZG_SEED, ZG_SHUFFLE);
    T.tok = T.data.ids;
    if (T.tok.eos < 0 && T.a.val) T.tok = T.val.ids;
    tr_backend->layout_init();
    if (T.rank == 0 && !T.a.quiet) {
        /* the stage number: a label for the user (see usage()) */
        fprintf(stderr, "train: plan %s, %d ranks, ZeRO-%d, %s; arenas per rank (bytes):", ZG_NAME,
                T.ws, ZG_STAGE, ZG_DTYPE_NAME);
        for (int t = 0; t < ZR_TIER_NVME; t++)
            fprintf(stderr, " %s %lld", zr_tier_names[t], (long long)(T.arena[t] ? zr_arena_bytes(T.arena[t]) : 0));
        fprintf(stderr, " nvme %lld%s\n", (long long)ZG_TIER_BYTES_NVME,
                zr_mem_debug() ? " (ZR_DEBUG_MEM: guards and poisoning on)" : "");
    }
    setup_schedules();
    if (T.a.resume) tr_backend->ckpt_load(T.a.resume);
    else tr_backend->params_init();
    if (T.a.more_steps) T.a.steps = T.step + T.a.more_steps;
    else if (T.a.resume && !T.a.eval_only && T.a.steps <= T.step && T.rank == 0)
        /* a load-and-export round trip is a use, so this is said, not refused */
        fprintf(stderr, "train: note: --resume %s is at step %lld and --steps %lld is not past it: no "
                "step to train (--steps counts from step 0, the run's total).\n---> HINT: --steps %lld or "
                "more, or --more-steps K for K steps past the checkpoint\n", T.a.resume, (long long)T.step,
                (long long)T.a.steps, (long long)T.step + 1);
    if (T.a.trace) {
        char path[1100];
        double origin = zr_trace_now_us();
        ZR_CHECK(zr_broadcast(T.comm, &origin, 2, ZR_DT_FP32, 0, NULL));   /* 8 bytes */
        ZR_CHECK(zr_trace_rank_path(path, sizeof path, T.a.trace, T.rank));
        ZR_CHECK(zr_trace_open(&T.trace, path, T.rank, 1 << 20, origin));
    }
}

static void finish(void)
{
    if (T.trace) {
        ZR_CHECK(zr_trace_close(T.trace));
        T.trace = NULL;
        ZR_CHECK(zr_barrier(T.comm, NULL));
        if (T.rank == 0) ZR_CHECK(zr_trace_merge(T.a.trace, T.ws));
    }
    tr_backend->layout_free();
    zr_data_close(&T.data);
    if (T.a.val) zr_data_close(&T.val);
    zr_comm_destroy(T.comm);
}

/* Progress on stderr: on a terminal one line rewritten in place (step, loss, tokens/s, ETA from the
** mean step time so far, memory per tier); otherwise (a log file, a test) libzrt's full line per
** step, which scripts parse. ZG_PROGRESS=line or =full overrides the choice. */
static int prog_tty = -1;
static double prog_ms;

static void progress(const ZrLogStep *s, int64_t done, int64_t left, const char *mem)
{
    if (prog_tty < 0) {           /* mpirun hands ranks a pipe: ZG_PROGRESS=line asks for it anyway */
        const char *e = getenv("ZG_PROGRESS"), *term = getenv("TERM");
        prog_tty = e && *e ? strcmp(e, "line") == 0
                           : isatty(STDERR_FILENO) && term && strcmp(term, "dumb") != 0;
    }
    if (!prog_tty) {
        zr_progress(stderr, s, T.a.steps, mem);
        return;
    }
    prog_ms += s->ms;
    double eta = done > 0 ? prog_ms / (double)done * (double)left / 1000.0 : 0;
    char val[32] = "";
    if (s->has_val) snprintf(val, sizeof val, " | val %.4f", s->val_loss);
    fprintf(stderr, "\rstep %lld/%lld | loss %.4f | %.0f tok/s | ETA %02d:%02d:%02d%s%s | %s\033[K",
            (long long)s->step + 1, (long long)T.a.steps, s->loss, s->tokens_per_s, (int)(eta / 3600),
            (int)(eta / 60) % 60, (int)eta % 60, s->skipped ? " | skipped" : "", val, mem);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    setup(argc, argv);
    if (T.a.eval_only) {
        int64_t n;
        double v = tr_eval(tr_backend->ops, &T.val, &n);
        if (T.rank == 0) printf("{\"step\":%lld,\"val_loss\":%.9g,\"val_tokens\":%lld}\n", (long long)T.step, v,
                                (long long)n);
        finish();
        return 0;
    }
    ZrLog lg = {0};
    /* on --resume the log keeps the steps before the checkpoint and drops any a run logged past it */
    if (T.rank == 0 && T.a.log &&
        (T.a.resume ? zr_log_open_at(&lg, T.a.log, T.step) : zr_log_open(&lg, T.a.log, 0)) < 0)
        tr_die("--log: %s", zr_train_error());
    char mem[160];
    mem_text(mem, sizeof mem);
    int64_t first = T.step;
    while (T.step < T.a.steps) {
        double t0 = zr_trace_now_us();
        zr_comm_set_step(T.comm, T.step);
        fault_maybe();
        tr_grads_zero(tr_backend->ops);
        T.loss_sum = 0;
        T.loss_scale = ZG_FP16 ? T.scaler.scale : 1.0;
        double lr = zr_lr_at(&T.lr, T.applied);
        int64_t skipped = T.scaler.skipped, redone = T.spec_redone, undone = T.spec_undone;
        tr_step_targets();
        for (int micro = 0; micro < ZG_GRAD_ACCUM; micro++)
            tr_exec_micro(tr_backend->ops, micro, micro == ZG_GRAD_ACCUM - 1);
        if (T.a.dump_grads && T.step == first) tr_dump_grads(T.a.dump_grads);
        tr_backend->optim_step();
        T.step++;
        ZrLogStep ls = {0};
        ls.step = T.step - 1;
        ls.loss = T.loss_sum / T.step_targets;
        ls.lr = lr;
        ls.grad_norm = T.grad_norm;
        ls.loss_scale = T.loss_scale;
        ls.skipped = T.scaler.skipped != skipped;
        if (ZG_SPECULATIVE)
            ls.speculation = T.spec_undone != undone ? "undone" : T.spec_redone != redone ? "redone" : "kept";
        ls.ms = (zr_trace_now_us() - t0) / 1000.0;
        ls.tokens_per_s = ZG_TOKENS_PER_STEP / (ls.ms / 1000.0);
        if (T.a.val && (T.step == T.a.steps || (T.a.eval_every > 0 && T.step % T.a.eval_every == 0))) {
            ls.has_val = 1;
            ls.val_loss = tr_eval(tr_backend->ops, &T.val, &ls.val_tokens);
        }
        if (T.rank == 0) {
            if (T.a.log && zr_log_step(&lg, &ls) < 0) tr_die("--log: %s", zr_train_error());
            if (!T.a.quiet) progress(&ls, T.step - first, T.a.steps - T.step, mem);
        }
        if (T.a.save && T.a.save_every > 0 && T.step % T.a.save_every == 0) tr_ckpt_save(T.a.save);
    }
    if (T.a.save && (T.a.save_every <= 0 || T.step % T.a.save_every != 0)) tr_ckpt_save(T.a.save);
    if (T.a.export_path) tr_export(T.a.export_path);
    if (T.rank == 0 && T.a.log) zr_log_close(&lg);
    if (T.rank == 0 && !T.a.quiet && prog_tty) fputc('\n', stderr);   /* end the in-place line */
    finish();
    return 0;
}
