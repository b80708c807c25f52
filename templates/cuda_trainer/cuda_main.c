/*
** cuda_main.c — the CUDA trainer's entry and its hand-over points with the host trainer's code.
**
** train-cuda is the host trainer's program (train_main.c compiled with -Dmain=tr_host_main,
** train_layout.c, train_optim.c, train_params.c, train_ckpt.c, unchanged) with cuda_exec.c as its
** executor. Five host functions are wrapped at link time (ld --wrap), so that the device follows
** what the host code does to the plan's memory:
**   tr_layout_init   + open the GPU, one device allocation of the device tier, streams, events,
**                      the pinned tier registered, the collectives' communicator
**   tr_params_init,  + the working copy to the device
**   tr_ckpt_load
**   tr_optim_step    the CPU optimizer (host code) on the shard the executor brought back, then the
**                      new working copy to the device; --check compares the first step here
**   tr_layout_free   + the GPU closed
** --check: runs the first step's micro-steps on the device and then on the host reference (the
** host trainer's executor, train_exec.c built as tr_host_*) from the same parameters and batch,
** prints the largest difference of every gradient tensor of this rank's shard, and exits 0 when
** all are within tolerance, 3 otherwise. Without a GPU (real build) it says so and exits 1.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_train.h"
#include "cuda/zg_kernels_bin.h"

void __real_tr_layout_init(void);
void __wrap_tr_layout_init(void);
void __real_tr_layout_free(void);
void __wrap_tr_layout_free(void);
void __real_tr_params_init(void);
void __wrap_tr_params_init(void);
void __real_tr_ckpt_load(const char *dir);
void __wrap_tr_ckpt_load(const char *dir);
void __real_tr_optim_step(void);
void __wrap_tr_optim_step(void);
int tr_host_main(int argc, char **argv);
void tr_host_exec_micro(int micro, int last);
void tr_host_grads_zero(void);

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

void __wrap_tr_layout_init(void)
{
    __real_tr_layout_init();
    if (ZG_MIXED) tr_die("train-cuda runs fp32 plans only (this plan is %s)", ZG_DTYPE_NAME);
    if (zr_gpu_open(&CZ.gpu, local_rank(), (const ZrGpuBlob *)zg_kernel_blobs, zg_n_kernel_blobs) < 0)
        tr_die("no GPU: %s", zr_gpu_strerror(NULL));
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
    CZ_CHECK(zr_gpu_event_create(CZ.gpu, &CZ.ev_h2d));
    void *base = NULL;
    CZ_CHECK(zr_gpu_malloc(CZ.gpu, &base, (size_t)(ZG_TIER_BYTES_DEVICE > 0 ? ZG_TIER_BYTES_DEVICE : 1)));
    CZ.dev_base = base;
    if (T.arena[ZR_TIER_PINNED])
        CZ_CHECK(zr_gpu_host_register(CZ.gpu, zr_arena_at(T.arena[ZR_TIER_PINNED], 0, 1),
                                      (size_t)zr_arena_bytes(T.arena[ZR_TIER_PINNED])));
    CZ_CHECK(zr_gpu_coll_init(CZ.gpu, T.comm, CZ.nccl));
    cz_regions_init();
    cz_acts_init();
    if (T.rank == 0 && !T.a.quiet)
        fprintf(stderr, "train-cuda: %s; device allocation %lld bytes (the plan's device tier)\n",
                zr_gpu_describe(CZ.gpu), (long long)ZG_TIER_BYTES_DEVICE);
}

void __wrap_tr_layout_free(void)
{
    if (CZ.gpu) {
        if (T.arena[ZR_TIER_PINNED])
            zr_gpu_host_unregister(CZ.gpu, zr_arena_at(T.arena[ZR_TIER_PINNED], 0, 1));
        zr_gpu_close(CZ.gpu);
        CZ.gpu = NULL;
    }
    __real_tr_layout_free();
}

void __wrap_tr_params_init(void)
{
    __real_tr_params_init();
    cz_push_params();
}

void __wrap_tr_ckpt_load(const char *dir)
{
    __real_tr_ckpt_load(dir);
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
    tr_host_grads_zero();
    T.loss_sum = 0;
    for (int micro = 0; micro < ZG_GRAD_ACCUM; micro++)
        tr_host_exec_micro(micro, micro == ZG_GRAD_ACCUM - 1);
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
    if (!(lrel <= 1e-4)) bad = 1;
    printf("check rank %d (%s): loss sum device %.7g host %.7g (rel %.2e)\n", T.rank,
           zr_gpu_backend(), dev_loss, T.loss_sum, lrel);
    printf("check rank %d: %-28s %12s %12s %10s\n", T.rank, "tensor (this rank's shard)",
           "max|dev-host|", "max|host|", "rel");
    for (int t = 0; t < ZG_N_TENSORS; t++) {
        if (T.t[t].opt_hi <= T.t[t].opt_lo) continue;
        double rel = maxd[t] / (maxh[t] + 1e-30);
        int ok = maxd[t] <= 1e-6 + 1e-3 * maxh[t];
        bad |= !ok;
        printf("check rank %d: %-28s %12.3e %12.3e %10.2e%s\n", T.rank, zg_tensors[t].name, maxd[t],
               maxh[t], rel, ok ? "" : "  <-- over tolerance");
    }
    fflush(stdout);
    free(dev);
    free(host);
    tr_layout_free();
    zr_comm_destroy(T.comm);
    exit(bad ? 3 : 0);
}

void __wrap_tr_optim_step(void)
{
    if (CZ.check) check_step();
    CZ_CHECK(zr_gpu_event_sync(CZ.ev_h2d));    /* the last push out of the shadow is done */
    __real_tr_optim_step();
    cz_push_params();
}

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--check") == 0) { CZ.check = 1; continue; }
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    if (CZ.check) {
        ZrGpu *g = NULL;
        if (zr_gpu_open(&g, 0, NULL, 0) < 0) {
            fprintf(stderr, "train-cuda --check: no GPU on this machine (%s); the check runs the first "
                    "step on a CUDA device and on the host reference, so it needs a GPU.\n",
                    zr_gpu_strerror(NULL));
            return 1;
        }
        zr_gpu_close(g);
    }
    return tr_host_main(n, argv);
}
