/*
** train_backend_host.c — the host build's backend table (train.h, TrBackend): the host trainer's
** own functions, listed once. train-cuda is built without this file and brings its own table
** (cuda/trainer/cuda_main.c); docs/TRAINER.md, "Backends", puts the two side by side.
** --sync-debug is a CUDA trainer flag; the host trainer takes it, so one command line serves both
** builds, and says it changes nothing here.
*/
#include <string.h>

#include "train.h"

static int sync_debug;

static int host_flag(const char *arg)
{
    if (strcmp(arg, "--sync-debug") != 0) return 0;
    sync_debug = 1;
    return 1;
}

static void host_layout_init(void)
{
    tr_layout_init();
    if (sync_debug && T.rank == 0)
        fprintf(stderr, "train: --sync-debug has no effect in the host trainer (it synchronises "
                "after each kernel launch in train-cuda)\n");
}

const TrBackend tr_build_backend = {
    .name = "host",
    .usage = "[--sync-debug]",
    .flag = host_flag,
    .layout_init = host_layout_init,
    .layout_free = tr_layout_free,
    .params_init = tr_params_init,
    .ckpt_load = tr_ckpt_load,
    .ops = &tr_host_ops,
    .optim_step = tr_optim_step,
};
