/*
** cuda_main.c — the CUDA trainer's backend table (train.h, TrBackend): where train-cuda departs
** from the host trainer.
**
** train-cuda is the host trainer's program (train_main.c, the one main of every build, with
** train_layout.c, train_optim.c, train_params.c, train_ckpt.c and train_exec.c unchanged) with
** this file's table, cz_backend, in place of train_backend_host.c's. Its entries, so that the
** device follows what the host code does to the plan's memory:
**   layout_init      tr_layout_init, then open the GPU, one device allocation of the device tier,
**                      streams, events, the pinned tier registered, the collectives' communicator
**   params_init,     the host's, then the working copy to the device
**   ckpt_load
**   ops              cuda_exec.c's cz_ops: the executor's op table on the device's streams
**   optim_step       where gen places Adam on the device (ZG_ADAM_DEVICE): the host trainer's
**                      step (train_optim.c's tr_step: norm all-reduce, fp16 scaler, clipping, lr)
**                      with the sum of squares on the device (sumsq.cu; 8 bytes D2H), then
**                      zd_adamw on the device shards (the bits of zr_adam_step) and the parameter
**                      gathers on the device; nothing is copied H2D. Otherwise the CPU optimizer
**                      (tr_optim_step_with) on the parts the executor brought down into
**                      "grad_land", each sub-group's update up from "param_land" as soon as Adam
**                      leaves it, and the gathers on the device. --check compares the first step
**   layout_free      the GPU closed, then tr_layout_free
**   flag             --check, --sync-debug
** --check: runs the first step's micro-steps on the device and then on the host reference (the
** executor's loop with the host's op table, tr_host_ops) from the same parameters and batch,
** prints the largest difference of every gradient tensor of this rank's shard, and exits 0 when
** all are within the tolerance gen decided (zk_shapes.h's ZG_CHECK_RTOL, ZG_CHECK_LOSS_RTOL: looser
** for bf16 activations), 3 otherwise. Without a GPU (real build) it says so and exits 1, as
** soon as the flag is read.
** --sync-debug: zr_gpu_set_sync_debug: the device is synchronised after each launch, so a fault is
** reported naming the kernel that raised it (slow; for finding a faulting kernel).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"
#include "../kernels/zk_shapes.h"   /* --check's tolerances (gen/cuda_dec.c) */
#include "../kernels/zk_sumsq.h"    /* sumsq.cu's grid: the device norm's bits depend on it */
#include "cuda/zg_kernels_bin.h"

void cz_die_gpu(const char *what, int rc)
{
    tr_die("GPU (%s): %s failed (%d): %s", zr_gpu_backend(), what, rc, zr_gpu_strerror(CZ.gpu));
}

static int local_rank(void)
{
    ZrEnv env;
    char err[256];
    if (zr_env_from_mpi(&env, err, sizeof err) == 0 && env.local_rank >= 0) return env.local_rank;
    return T.rank;
}

/* The pinned "param_land" (gen/memplan.c: two sub-groups of the working copy), where the host's
** Adam writes a sub-group's update for its H2D (CZ.ev_land[j]: slot j's last H2D is done). */
static char *param_land;

/* ---------------------------------------------------------------------- the optimizer on the device */
static int dev(const void *p) { return p && cz_is_dev(p); }

/* zd_adamw's constants (adamw.cu's ZdAdamK, passed by value), as runtime/zr_adam.c computes them. */
typedef struct { float gs, b1, b2, omb1, omb2, eps, lrwd, step_size, rbc2, wd; int decay, adamw; } CzAdamK;

static CzAdamK adam_consts(float lr, float wd)
{
    CzAdamK k;
    double t = ZG_BIAS_CORRECTION ? (double)(T.applied + 1) : (double)INT64_MAX;   /* as train_optim.c */
    k.gs = T.grad_scale;
    k.b1 = (float)ZG_BETA1;
    k.b2 = (float)ZG_BETA2;
    k.omb1 = 1.0f - k.b1;
    k.omb2 = 1.0f - k.b2;
    k.eps = (float)ZG_EPS;
    k.lrwd = lr * wd;
    k.step_size = (float)((double)lr / (1.0 - pow((double)k.b1, t)));
    k.rbc2 = (float)(1.0 / sqrt(1.0 - pow((double)k.b2, t)));
    k.wd = wd;
    k.decay = wd != 0.0f;
    k.adamw = ZG_ADAM_W_MODE;
    return k;
}

static void adamw(ZrGpuStream *q, float *p, const float *g, float *m, float *v, int64_t n, CzAdamK k)
{
    long nn = (long)n;
    float *p16 = NULL;                      /* the 16-bit copy is convert.cu's (zr_half.h's bits) */
    const unsigned grid[3] = {(unsigned)((n + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    void *args[] = {&p, &p16, &g, &m, &v, &nn, &k, NULL};
    CZ_CHECK(zr_gpu_launch(q, "zd_adamw", grid, block, 0, args));
}

/* One OPTIMIZER op: zr_adam_step's pieces (whole tensor pieces of the sub-group, weight decay for
** tensors of 2+ dimensions) with zd_adamw, then the working copy rounded with convert.cu. Master,
** m, v, the gradients and the home are the sub-group's zg_optimizers row (gen/lower.c): with Adam on
** the device "master" (or the home itself), "adam_m", "adam_v" and grad32 or "grads"; with part of a
** CPU optimizer on the device (k < ZG_N_SG_DEV) the *_dev regions and the OPTIMIZER row's source,
** grad_keep (16-bit, one micro-step) or the device accumulator grad_acc (fp32). */
static void *dev_operand(int r, int64_t off, int ranked, int dt)
{
    return cz_dev(tr_opt_operand(r, off, ranked, dt, 0));
}

static void dev_optimizer(const ZrOpRow *op, float lr)
{
    int k = op->arg;
    const ZrSubGroupRow *sg = &zg_subgroups[k];
    const ZrOptRow *r = &zg_optimizers[k];
    int64_t s0 = sg->shard_offset, s1 = sg->shard_offset + sg->numel;
    ZrGpuStream *q = cz_queue(op);
    float *p = dev_operand(r->master, r->master_off, r->master_ranked, ZR_DT_FP32);
    float *m = dev_operand(r->m, r->m_off, 0, ZR_DT_FP32), *v = dev_operand(r->v, r->v_off, 0, ZR_DT_FP32);
    char *home = r->home >= 0 ? dev_operand(r->home, r->home_off, r->home_ranked, ZG_DTYPE) : NULL;
    int fp32_grads = r->grad_dt == ZR_DT_FP32;
    char *grad = dev_operand(r->grad, r->grad_off, r->grad_ranked, r->grad_dt);
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        int64_t lo = T.t[t].opt_lo > s0 ? T.t[t].opt_lo : s0;
        int64_t hi = T.t[t].opt_hi < s1 ? T.t[t].opt_hi : s1;
        if (hi <= lo) continue;
        CzAdamK c = adam_consts(lr, zg_tensors[t].decay ? (float)ZG_WEIGHT_DECAY : 0.0f);
        if (fp32_grads) {                   /* fp32 gradients (an fp32 plan's "W" too) */
            adamw(q, p + lo, (float *)grad + lo, m + lo, v + lo, hi - lo, c);
        } else {                            /* 16-bit gradients: widened piece by piece into the
                                            ** module gradient area, free during the step */
            float *g = cz_dev(T.grad_stage);
            int64_t cap = ZG_MAX_USE_NUMEL;
            for (int64_t a = lo; a < hi; a += cap) {
                int64_t n = hi - a < cap ? hi - a : cap;
                cz_convert(q, "zd_16_to_f32", g, grad + a * ZG_DTYPE_SIZE, n);
                adamw(q, p + a, g, m + a, v + a, n, c);
            }
        }
        if (!home) continue;
        if (ZG_MIXED) cz_convert(q, "zd_f32_to_16", home + lo * ZG_DTYPE_SIZE, p + lo, hi - lo);
        else CZ_CHECK(zr_gpu_copy(q, ZR_GPU_D2D, home + lo * 4, p + lo, (size_t)(hi - lo) * 4));
    }
}

/* One persistent tensor's slice into "persist" (the row's destination, on the device): from the
** shard on the device, or with the parameters offloaded from the pinned shard or, on NVMe, from
** where tr_persist_fill read it into the pinned "persist_land": only this rank's slices cross. */

static void dev_persist_slice(int64_t at, int64_t from, int64_t n, void *ctx)
{
    const ZrOpRow *op = ctx;
    void *dst = cz_dev(tr_region_at(op->dst, op->dst_off + at, op->dst_dt));
    if (cz_dev_region(op->src))
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2D, dst, cz_dev(tr_region_at(op->src, op->src_off + from, op->src_dt)),
                             (size_t)n * ZG_DTYPE_SIZE));
    else if (zg_regions[op->src].tier != ZR_TIER_NVME)
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, dst, tr_region_at(op->src, op->src_off + from, op->src_dt),
                             (size_t)n * ZG_DTYPE_SIZE));
    else
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, dst, tr_region_at(ZG_RG_PERSIST_LAND, at, op->dst_dt),
                             (size_t)n * ZG_DTYPE_SIZE));
}

/* The host's part of the persistent row with the shard on NVMe: the slices into "persist_land". */
static void persist_fill_land(const ZrOpRow *op)
{
    if (!ZG_HAS_PERSIST_LAND) tr_die("the plan keeps the parameters on NVMe but has no persist_land");
    ZrOpRow r = *op;
    r.dst = ZG_RG_PERSIST_LAND;
    r.dst_off = 0;
    CZ_CHECK(zr_gpu_event_sync(CZ.ev_opt2));     /* its last H2D (the previous step's) is done */
    tr_persist_fill(&r);
}

/* ALLGATHER_PARAMS on the device, as train_optim.c reads the row: in place, this rank's partition
** all-gathered; else the persistent tensors rebuilt (every rank's slices into a zeroed "persist",
** one all-reduce: x + 0 is exact). The collective runs on the row's queue (comm), after Adam. */
static void dev_allgather(const ZrOpRow *op)
{
    void *recv = cz_dev(tr_region_at(op->dst, op->dst_off, op->dst_dt)), *send;
    int64_t count = op->count;
    ZrCollOp coll = ZR_COLL_ALL_GATHER;
    if (op->src != op->dst) {
        count = tr_persist_slices(NULL, NULL);
        if (count == 0) return;
        if (zg_regions[op->src].tier == ZR_TIER_NVME) persist_fill_land(op);
        CZ_CHECK(zr_gpu_memset(CZ.compute, recv, 0, (size_t)count * ZG_DTYPE_SIZE));
        tr_persist_slices(dev_persist_slice, (void *)op);
        send = recv;
        coll = ZR_COLL_ALL_REDUCE;
    } else if (op->xfer == ZR_XFER_NONE) {
        return;
    } else {
        send = cz_dev(tr_region_at(op->src, op->src_off + T.rank * count, op->src_dt));
    }
    ZrGpuStream *q = cz_queue(op);
    CZ_CHECK(zr_gpu_record(CZ.ev_opt, CZ.compute));
    CZ_CHECK(zr_gpu_wait(q, CZ.ev_opt));
    if (T.ws > 1) CZ_CHECK(zr_gpu_coll(q, coll, send, recv, count, (ZrDtype)op->dst_dt));
    CZ_CHECK(zr_gpu_record(CZ.ev_opt2, q));
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_opt2));
}

/* Does host code read the state after this step (a checkpoint or the export)? */
static int state_read_after_step(void)
{
    int64_t done = T.step + 1;
    int last = done >= T.a.steps;
    if (T.a.save && ((T.a.save_every > 0 && done % T.a.save_every == 0) || last)) return 1;
    return T.a.export_path && last;
}

/* ---------------------------------------------------------------------- the norm on the device */
/* sumsq.cu's scratch: stage 1's partials and the result on the device (a small allocation of its
** own beside the plan's device tier, made at the first step and released with the context), and
** the result's landing on the host, registered (pinned), so that its D2H is a true async copy. */
static struct {
    ZrGpu *gpu;                 /* the context the buffers belong to */
    double *partials, *result;
    int64_t runs[2 * ZG_N_TENSORS];   /* [lo, hi) of each contiguous run of owned tensor pieces */
    int n_runs;
} NS;
static _Alignas(4096) double norm_host[4096 / sizeof(double)];

static void norm_init(void)
{
    if (NS.gpu == CZ.gpu) return;
    void *p;
    CZ_CHECK(zr_gpu_malloc(CZ.gpu, &p, (ZK_SQ_MAX_BLOCKS + 1) * sizeof(double)));
    NS.partials = p;
    NS.result = NS.partials + ZK_SQ_MAX_BLOCKS;
    CZ_CHECK(zr_gpu_host_register(CZ.gpu, norm_host, sizeof norm_host));
    /* the tensors' pieces ascend through the shard; adjacent ones are summed as one range */
    NS.n_runs = 0;
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        int64_t lo = T.t[t].opt_lo, hi = T.t[t].opt_hi;
        if (hi <= lo) continue;
        if (NS.n_runs && NS.runs[2 * NS.n_runs - 1] == lo) NS.runs[2 * NS.n_runs - 1] = hi;
        else { NS.runs[2 * NS.n_runs] = lo; NS.runs[2 * NS.n_runs + 1] = hi; NS.n_runs++; }
    }
    NS.gpu = CZ.gpu;
}

/* This rank's sum of squares of its owned gradient, summed where Adam reads it (the device grad32,
** or at stages 0/1 without one the owned part of "grads", 16-bit in mixed plans) by sumsq.cu on the
** compute stream; only the 8-byte result crosses to the host. */
static double dev_owned_sumsq(void)
{
    norm_init();
    int fmt = ZG_HAS_GRAD32 ? ZR_DT_FP32 : ZG_DTYPE;
    size_t esz = ZG_HAS_GRAD32 ? 4 : ZG_DTYPE_SIZE;
    const char *g = cz_dev(ZG_HAS_GRAD32 ? (void *)T.grad32 : tr_w_at(T.grads, T.opt_flat0));
    for (int r = 0; r < NS.n_runs; r++) {
        int64_t lo = NS.runs[2 * r];
        long n = (long)(NS.runs[2 * r + 1] - lo);
        int blocks = ZK_SQ_BLOCKS(n), acc = r > 0, nb = blocks;
        long chunk = ZK_SQ_CHUNK(n, (long)blocks);
        const void *src = g + lo * esz;
        void *part = NS.partials, *res = NS.result;
        const unsigned grid[3] = {(unsigned)blocks, 1, 1}, one[3] = {1, 1, 1}, block[3] = {ZK_SQ_BLOCK, 1, 1};
        void *a1[] = {&part, &src, &n, &chunk, &fmt, NULL}, *a2[] = {&res, &part, &nb, &acc, NULL};
        CZ_CHECK(zr_gpu_footprint(CZ.compute, src, (size_t)n * esz, 0));
        CZ_CHECK(zr_gpu_footprint(CZ.compute, part, (size_t)blocks * sizeof(double), 1));
        CZ_CHECK(zr_gpu_launch(CZ.compute, "zd_sumsq_partial", grid, block, 0, a1));
        CZ_CHECK(zr_gpu_footprint(CZ.compute, part, (size_t)blocks * sizeof(double), 0));
        CZ_CHECK(zr_gpu_footprint(CZ.compute, res, sizeof(double), 1));
        CZ_CHECK(zr_gpu_launch(CZ.compute, "zd_sumsq_finish", one, block, 0, a2));
    }
    if (NS.n_runs == 0) return 0.0;
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2H, norm_host, NS.result, sizeof(double)));
    CZ_CHECK(zr_gpu_stream_sync(CZ.compute));
    return norm_host[0];
}

/* One step op on the device: Adam per sub-group, the gathers; no swaps (Adam is on the device only
** when nothing of its state is on NVMe). */
static void dev_step_op(const ZrOpRow *op, double lr)
{
    if (op->kind == ZR_OP_OPTIMIZER) dev_optimizer(op, (float)lr);
    else if (op->kind == ZR_OP_ALLGATHER_PARAMS) dev_allgather(op);
    else if (op->kind != ZR_OP_SWAP_IN && op->kind != ZR_OP_SWAP_OUT)
        tr_die("op kind %d in the optimizer step list", op->kind);
}

/* tr_optim_step with Adam on the device: train_optim.c's step (the same rule: norm all-reduce, fp16
** scaler, clipping, lr) with the sum of squares and the step ops on the device. */
static void dev_optim_step(void)
{
    CZ_CHECK(zr_gpu_record(CZ.ev_opt, CZ.d2h));      /* the device grad32 is complete */
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_opt));
    if (tr_step(dev_owned_sumsq, dev_step_op)) {
        /* the next step's gathers (nccl) read what Adam wrote (compute) */
        CZ_CHECK(zr_gpu_record(CZ.ev_opt, CZ.compute));
        CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_opt));
    }
    if (state_read_after_step()) cz_pull_state();
}

/* The pages of CZ's batch and loss arrays (their anonymous struct is 4096-aligned, so its size
** is whole pages and no other object shares them: a page cannot be registered twice). */
static size_t host_io_bytes(void)
{
    size_t n = (size_t)((char *)&CZ.loss_h[ZG_GRAD_ACCUM] - (char *)CZ.tok_h);
    return (n + 4095) / 4096 * 4096;
}

/* Pre-flight, before the arena: the device must have the arena free, plus what is allocated after it
** (gen's NCCL and cuBLAS workspace budgets). A shortfall is refused here with the figures and the
** spec change that makes zgen plan what fits, not met as an out-of-memory deep in step 0. */
static void preflight(void)
{
    size_t fr = 0, tot = 0;
    CZ_CHECK(zr_gpu_mem_info(CZ.gpu, &fr, &tot));
    double gib = 1.0 / (1 << 30);
    int64_t late = ZG_HEADROOM_NCCL_BYTES + ZG_HEADROOM_CUBLAS_BYTES;
    int64_t need = ZG_TIER_BYTES_DEVICE + late;
    if ((int64_t)fr >= need) return;
    /* zgen fits arena + headroom into hardware.device_memory, its headroom counting the context this
    ** process already holds: that much more than the free memory is what to declare */
    int64_t declare = ((int64_t)fr + ZG_HEADROOM_CONTEXT_BYTES) >> 20;
    tr_die("the plan needs %.3f GiB free on the device (arena %.3f GiB + %.3f GiB allocated after it: NCCL "
           "%.0f MiB, cuBLAS workspace %.0f MiB), but %s has %.3f GiB free of %.3f GiB: declare "
           "hardware.device_memory: %lldMiB in the spec (the memory this GPU leaves after its context, plus "
           "zgen's %.0f MiB context budget) and run zgen again, which then plans what fits or says what to "
           "offload (docs/PLAN.md \"Device headroom\")",
           (double)need * gib, (double)ZG_TIER_BYTES_DEVICE * gib, (double)late * gib,
           (double)ZG_HEADROOM_NCCL_BYTES / (1 << 20), (double)ZG_HEADROOM_CUBLAS_BYTES / (1 << 20),
           zr_gpu_describe(CZ.gpu), (double)fr * gib, (double)tot * gib, (long long)declare,
           (double)ZG_HEADROOM_CONTEXT_BYTES / (1 << 20));
}

static void cz_layout_init(void)
{
    tr_layout_init();
    if (zr_gpu_open(&CZ.gpu, local_rank(), (const ZrGpuBlob *)zg_kernel_blobs, zg_n_kernel_blobs) < 0)
        tr_die("no GPU: %s", zr_gpu_strerror(NULL));
    if (CZ.sync_debug) zr_gpu_set_sync_debug(CZ.gpu, 1);   /* else ZR_SYNC_DEBUG decides */
    CZ_CHECK(zr_gpu_set_tf32(CZ.gpu, ZK_TF32));           /* gen's decision (train.allow_tf32, fp32 plans) */
    CZ_CHECK(zr_gpu_stream_create(CZ.gpu, &CZ.compute, "compute"));
    CZ_CHECK(zr_gpu_stream_create(CZ.gpu, &CZ.nccl, "nccl"));
    CZ_CHECK(zr_gpu_stream_create(CZ.gpu, &CZ.h2d, "h2d"));
    CZ_CHECK(zr_gpu_stream_create(CZ.gpu, &CZ.d2h, "d2h"));
    ZrGpuEvent **evs[] = {CZ.ev_gather, CZ.ev_release, CZ.ev_pswap, CZ.ev_buf_free};
    int nev[] = {TR_MAX_SLOTS, TR_MAX_SLOTS, TR_MAX_SLOTS, TR_MAX_BUFS};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < nev[i]; j++) CZ_CHECK(zr_gpu_event_create(CZ.gpu, &evs[i][j]));
    for (int k = 0; k < ZG_N_BUCKETS; k++) {
        CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_reduced[k]));
        CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_d2h[k]));
    }
    for (int m = 0; m < ZG_GRAD_ACCUM; m++) CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_loss[m]));
    CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_compute));
    CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_opt));
    CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_opt2));
    CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_h2d));
    for (int j = 0; j < 2; j++) CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_land[j]));
    param_land = tr_region_named("param_land");
    preflight();
    void *base = NULL;
    CZ_CHECK(zr_gpu_malloc(CZ.gpu, &base, (size_t)(ZG_TIER_BYTES_DEVICE > 0 ? ZG_TIER_BYTES_DEVICE : 1)));
    CZ.dev_base = base;
    if (T.arena[ZR_TIER_PINNED])
        CZ_CHECK(zr_gpu_host_register(CZ.gpu, zr_arena_at(T.arena[ZR_TIER_PINNED], 0, 1),
                                      (size_t)zr_arena_bytes(T.arena[ZR_TIER_PINNED])));
    CZ_CHECK(zr_gpu_host_register(CZ.gpu, CZ.tok_h, host_io_bytes()));
    CZ_CHECK(zr_gpu_coll_init(CZ.gpu, T.comm, CZ.nccl));
    cz_regions_init();
    CZ.dev_opt = ZG_ADAM_DEVICE;                             /* gen's placement */
    cz_acts_init();
    if (T.rank == 0 && (!T.a.quiet || getenv("ZR_CUDA_VERBOSE")))
        fprintf(stderr, "train-cuda: %s; device allocation %lld bytes (the plan's device tier); activations %s "
                "(%lld + %lld bytes: the plan's acts and scratch%s, %s); Adam on the %s\n",
                zr_gpu_describe(CZ.gpu), (long long)ZG_TIER_BYTES_DEVICE, CZ_ACT_NAME,
                (long long)ZG_ACTS_BYTES, (long long)ZG_SCRATCH_BYTES, ZG_ACT_CKPT ? ", checkpointed" : "",
                cz_attention_kernels, CZ.dev_opt ? "device" : "host");
}

static void cz_layout_free(void)
{
    if (CZ.gpu) {
        zr_gpu_host_unregister(CZ.gpu, CZ.tok_h);
        if (T.arena[ZR_TIER_PINNED])
            zr_gpu_host_unregister(CZ.gpu, zr_arena_at(T.arena[ZR_TIER_PINNED], 0, 1));
        zr_gpu_close(CZ.gpu);
        CZ.gpu = NULL;
    }
    tr_layout_free();
}

static void cz_params_init(void)
{
    tr_params_init();
    cz_push_params();
}

static void cz_ckpt_load(const char *dir)
{
    tr_ckpt_load(dir);
    cz_push_params();
}

/* ---------------------------------------------------------------------- --check */
static int tensor_of(int64_t i)      /* tensor whose opt-shard range holds element i, or -1 */
{
    for (int t = 0; t < ZG_N_TENSORS; t++)
        if (i >= T.t[t].opt_lo && i < T.t[t].opt_hi) return t;
    return -1;
}

static void check_step(void)
{
    int64_t n = T.opt_numel;
    float *dev = malloc((size_t)n * 4), *host = malloc((size_t)n * 4);
    if (!dev || !host) tr_die("--check: out of memory");
    tr_opt_shard_grads(dev);
    float dev_loss = T.loss_sum;
    tr_grads_zero(&tr_host_ops);
    T.loss_sum = 0;
    for (int micro = 0; micro < ZG_GRAD_ACCUM; micro++)
        tr_exec_micro(&tr_host_ops, micro, micro == ZG_GRAD_ACCUM - 1);
    tr_opt_shard_grads(host);
    double maxd[ZG_N_TENSORS] = {0}, maxh[ZG_N_TENSORS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int t = tensor_of(i);
        if (t < 0) continue;
        double d = fabs((double)dev[i] - host[i]);
        if (!(d <= maxd[t])) maxd[t] = d;            /* NaN sticks */
        if (fabs(host[i]) > maxh[t]) maxh[t] = fabs(host[i]);
    }
    int bad = 0;
    double lrel = fabs((double)dev_loss - T.loss_sum) / (fabs((double)T.loss_sum) + 1e-30);
    if (!(lrel <= ZG_CHECK_LOSS_RTOL)) bad = 1;
    printf("check rank %d: tolerance (gen, %s activations%s): loss sum %.3g relative; per tensor "
           "max|dev-host| <= 1e-6 + %.3g max|host|\n", T.rank, CZ_ACT_NAME,
           ZK_TF32 ? ", TF32 gemms" : "", ZG_CHECK_LOSS_RTOL,
           ZG_CHECK_RTOL);
    printf("check rank %d (%s): loss sum device %.7g host %.7g (rel %.2e)\n", T.rank,
           zr_gpu_backend(), dev_loss, T.loss_sum, lrel);
    printf("check rank %d: %-28s %12s %12s %10s\n", T.rank, "tensor (this rank's shard)",
           "max|dev-host|", "max|host|", "rel");
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        if (T.t[t].opt_hi <= T.t[t].opt_lo) continue;
        double rel = maxd[t] / (maxh[t] + 1e-30);
        int ok = maxd[t] <= 1e-6 + ZG_CHECK_RTOL * maxh[t];
        bad |= !ok;
        printf("check rank %d: %-28s %12.3e %12.3e %10.2e%s\n", T.rank, zg_tensors[t].name, maxd[t],
               maxh[t], rel, ok ? "" : "  <-- over tolerance");
    }
    fflush(stdout);
    free(dev);
    free(host);
    cz_layout_free();
    zr_comm_destroy(T.comm);
    exit(bad ? 3 : 0);
}

/* ---------------------------------------------------------------------- the host's Adam */
/* One step op with Adam on the host (the optimizer state offloaded): the host's op, and then
** - OPTIMIZER k, where the working copy's home is on the device: Adam writes the sub-group's update
**   into a slot of "param_land" (T.param_out), which crosses H2D at once while Adam runs on the
**   next sub-group into the other slot: this rank's part only, from pinned memory;
** - ALLGATHER_PARAMS whose destination is on the device runs there, as lowered (the partitions'
**   all-gather, or stage 3's persistent tensors rebuilt from this rank's slices).
** So the step moves what the plan's cost counts, and only between pinned memory and the device. */
/* An OPTIMIZER op's device side, in two halves around the host's Adam (the speculative step runs
** the Adam between them on its host thread): begin frees the sub-group's landing slot and points
** T.param_out at it; end sends the slot H2D. begin returns 0 where the home is not on the device
** (Adam writes it where it is, and end is not called). */
/* Sub-group k's slot of "param_land" (two, alternating), or NULL when the plan has none (gen/memplan.c
** places one wherever Adam runs on the host; without it the update goes up from the home). */
static char *land_slot(int k)
{
    return param_land ? param_land + (int64_t)(k % 2) * ZG_PARAM_LAND_NUMEL * ZG_DTYPE_SIZE : NULL;
}

int cz_land_begin(const ZrOpRow *op)
{
    if (op->kind != ZR_OP_OPTIMIZER || !dev(tr_opt_home())) return 0;
    char *slot = land_slot(op->arg);
    if (slot) {
        cz_host_wait(CZ.ev_land[op->arg % 2], "H2D out of param_land for sub-group", op->arg);   /* its last H2D */
        T.param_out = slot - zg_subgroups[op->arg].shard_offset * ZG_DTYPE_SIZE;
    }
    return 1;
}

void cz_land_end(const ZrOpRow *op)
{
    const ZrSubGroupRow *sg = &zg_subgroups[op->arg];
    char *at = (char *)tr_opt_home() + sg->shard_offset * ZG_DTYPE_SIZE, *slot = land_slot(op->arg);
    T.param_out = NULL;
    CZ_CHECK(zr_gpu_copy(CZ.h2d, ZR_GPU_H2D, cz_dev(at), slot ? slot : at, (size_t)sg->numel * ZG_DTYPE_SIZE));
    CZ_CHECK(zr_gpu_record(CZ.ev_land[op->arg % 2], CZ.h2d));
}

void cz_host_step_op(const ZrOpRow *op, double lr)
{
    if (op->kind == ZR_OP_OPTIMIZER && op->arg < ZG_N_SG_DEV) {   /* this part of the state is on
                                                                  ** the device: its Adam too */
        CZ_CHECK(zr_gpu_record(CZ.ev_opt, CZ.d2h));   /* the kept gradients (d2h stream) are there */
        CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_opt));
        dev_optimizer(op, (float)lr);
        return;
    }
    if (op->kind == ZR_OP_ALLGATHER_PARAMS && cz_dev_region(op->dst)) {
        CZ_CHECK(zr_gpu_record(CZ.ev_h2d, CZ.h2d));         /* every sub-group's update has landed */
        CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_h2d));
        dev_allgather(op);
        return;
    }
    int landed = cz_land_begin(op);
    tr_step_op(op, lr);
    if (landed) cz_land_end(op);
}

static void host_optim_step(void)
{
    CZ_CHECK(zr_gpu_event_sync(CZ.ev_h2d));    /* the last push out of the shadow is done */
    CZ_CHECK(zr_gpu_record(CZ.ev_compute, CZ.compute));
    CZ_CHECK(zr_gpu_wait(CZ.h2d, CZ.ev_compute));   /* the device has stopped reading the working copy */
    CZ.phase = CZ_STEP;
    tr_optim_step_with(cz_host_step_op);
    CZ.phase = CZ_ISSUING;
    /* the next step's work waits for the updates (compute, and nccl for the gathers) */
    CZ_CHECK(zr_gpu_record(CZ.ev_h2d, CZ.h2d));
    CZ_CHECK(zr_gpu_wait(CZ.compute, CZ.ev_h2d));
    CZ_CHECK(zr_gpu_record(CZ.ev_opt, CZ.compute));
    CZ_CHECK(zr_gpu_wait(CZ.nccl, CZ.ev_opt));
    if (state_read_after_step()) cz_pull_state();
}

static void cz_optim_step(void)
{
    if (CZ.check) check_step();
    if (CZ.dev_opt) dev_optim_step();
    else host_optim_step();
}

/* --check probes for a GPU at once (before MPI and the data), as its no-GPU answer is the point. */
static int cz_flag(const char *arg)
{
    if (strcmp(arg, "--sync-debug") == 0) { CZ.sync_debug = 1; return 1; }
    if (strcmp(arg, "--check") != 0) return 0;
    CZ.check = 1;
    ZrGpu *g = NULL;
    if (zr_gpu_open(&g, 0, NULL, 0) < 0) {
        fprintf(stderr, "train-cuda --check: no GPU on this machine (%s); the check runs the first "
                "step on a CUDA device and on the host reference, so it needs a GPU.\n",
                zr_gpu_strerror(NULL));
        exit(1);
    }
    zr_gpu_close(g);
    return 1;
}

const TrBackend tr_build_backend = {
    .name = "cuda",
    .usage = "[--check] [--sync-debug]",
    .flag = cz_flag,
    .layout_init = cz_layout_init,
    .layout_free = cz_layout_free,
    .params_init = cz_params_init,
    .ckpt_load = cz_ckpt_load,
    .ops = &cz_ops,
    .optim_step = cz_optim_step,
};
