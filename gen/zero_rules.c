/*
** zero_rules.c — the rules DeepSpeed enforces between config keys (offload_param needs stage 3, fp16
** and bf16 not both, NVMe needs a path, ...) and the generation-time judgement of nvme_path, applied
** after zero.c has walked every key, so each rule sees the final values and where they were written.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "zero_int.h"

/* ======================================================================= nvme_path */
static const char *file_kind(mode_t m)
{
    return S_ISREG(m) ? "a regular file" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a directory";
}

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0);
}

/* What can be judged about nvme_path on the machine that generates: an absolute path that no
** trainer could put its swap files in. A path that does not exist yet is fine (the trainer creates
** it, mkdir -p, and checks at start-up that it is a writable directory taking O_DIRECT); a relative
** path is resolved against the trainer's working directory, so it is left to the trainer. */
static void check_nvme_path(const char *path, ZgLoc at, const char *what)
{
    if (path[0] != '/') return;
    if (under(path, "/proc") || under(path, "/sys") || (under(path, "/dev") && !under(path, "/dev/shm"))) {
        zg_error(at, "%s '%s' is on %s, not on a file system that can hold swap files", what, path,
                 under(path, "/dev") ? "/dev (device nodes)" : "a kernel pseudo file system");
        zg_note(at, "give a directory on the NVMe drive's mounted file system, e.g. /local_nvme/zgen "
                "(DeepSpeed takes a directory too, never a device)");
        return;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOTDIR) {
            zg_error(at, "%s '%s': a component of the path is not a directory", what, path);
            zg_note(at, "nvme_path names a directory in which the trainer creates one swap file per rank");
        }
        return;                 /* absent (created by the trainer) or not ours to judge */
    }
    if (S_ISLNK(st.st_mode)) {
        struct stat t;
        if (stat(path, &t) != 0) {
            zg_error(at, "%s '%s' is a dangling symbolic link (%s)", what, path, strerror(errno));
            zg_note(at, "point the link at an existing directory or give the directory itself; the trainer "
                    "cannot create a directory through a dangling link");
            return;
        }
        st = t;
    }
    if (!S_ISDIR(st.st_mode)) {
        zg_error(at, "%s '%s' is %s, not a directory", what, path, file_kind(st.st_mode));
        zg_note(at, "nvme_path names a directory in which the trainer creates one swap file per rank "
                "(DeepSpeed takes a directory too)");
    }
}

/* ======================================================================= rules between keys */
/* DeepSpeed's rules between keys, after the walk (every error reported). */
void zg_zero_rules(Ctx *c)
{
    ZgZero *z = c->z;
    ZgOffloadCfg *op = &z->offload_param, *oo = &z->offload_optimizer;
    zg_zero_auto_finish(c);     /* first: the precision and the schedule below depend on it */
    if (!c->overlap_set) z->overlap_comm = z->stage == 3;
    if (c->fp16 && c->bf16) {
        zg_error(c->bf16_loc, "fp16 and bf16 are both enabled");
        zg_note(c->fp16_loc, "enable one of them (DeepSpeed refuses both too)");
    }
    z->dtype = c->bf16 ? ZG_DTYPE_BF16 : c->fp16 ? ZG_DTYPE_FP16 : ZG_DTYPE_FP32;
    z->comm_dtype = z->dtype;
    if (c->comm) {
        ZgDtype want = !strcmp(c->comm, "fp32") ? ZG_DTYPE_FP32 : !strcmp(c->comm, "bf16") ? ZG_DTYPE_BF16 : ZG_DTYPE_FP16;
        if (want != z->dtype) {
            zg_error(c->comm_loc, "zgen does not support communication_data_type %s with %s training",
                     c->comm, z->dtype == ZG_DTYPE_FP32 ? "fp32" : z->dtype == ZG_DTYPE_BF16 ? "bf16" : "fp16");
            zg_note(c->comm_loc, "zgen communicates gradients in the training dtype; remove the key");
        }
    }
    if (c->sum_op) {
        zg_error(c->sum_loc, z->stage == 3 ? "gradient_allreduce_op \"sum\" is not allowed with ZeRO stage 3 (DeepSpeed refuses it)"
                                           : "zgen does not support gradient_allreduce_op \"sum\"");
        zg_note(c->sum_loc, "remove it: zgen averages gradients over the global batch (\"mean\")");
    }
    if (op->device != ZG_OFFLOAD_NONE && z->stage != 3) {
        zg_error(op->loc_device, "offload_param needs ZeRO stage 3 (stage is %d)", z->stage);
        zg_note(op->loc_device, "set zero_optimization.stage to 3, or remove offload_param (stages 1-2 keep parameters on the device)");
    }
    if (oo->device != ZG_OFFLOAD_NONE && z->stage == 0) {
        zg_error(oo->loc_device, "offload_optimizer needs ZeRO stage 1, 2 or 3 (stage is 0)");
        zg_note(oo->loc_device, "set zero_optimization.stage, or remove offload_optimizer");
    }
    if (oo->device == ZG_OFFLOAD_NVME && z->stage != 3 && z->stage != 0) {
        zg_error(oo->loc_device, "offload_optimizer device nvme needs ZeRO stage 3 (stage is %d)", z->stage);
        zg_note(oo->loc_device, "use device: cpu at stage %d, or set stage 3 (DeepSpeed has the same rule)", z->stage);
    }
    ZgOffloadCfg *o[2] = {op, oo};
    static const char *const sec[2] = {"offload_param", "offload_optimizer"};
    for (int w = 0; w < 2; w++) {
        if (o[w]->device == ZG_OFFLOAD_NVME && !c->nvme_set[w]) {
            zg_error(o[w]->loc_device, "%s device nvme needs nvme_path", sec[w]);
            zg_note(o[w]->loc_device, "add \"nvme_path\": \"/path/on/nvme\" to zero_optimization.%s", sec[w]);
        }
        if (o[w]->device == ZG_OFFLOAD_NVME && o[w]->nvme_path) {
            char *what = zg_fmt("zero_optimization.%s.nvme_path", sec[w]);
            check_nvme_path(o[w]->nvme_path, c->nvme_loc[w], what);
            free(what);
        }
        if (o[w]->device != ZG_OFFLOAD_NVME && c->nvme_set[w]) {
            zg_warn(c->nvme_loc[w], "%s.nvme_path is ignored: device is not nvme", sec[w]);
            o[w]->nvme_path = NULL;
        }
    }
    /* Swap buffers exist only with device nvme: there zgen needs them, whatever DeepSpeed's model takes. */
    if (oo->device == ZG_OFFLOAD_NVME && oo->buffer_count < 4) {
        zg_error(c->bc_loc[1], "offload_optimizer.buffer_count must be at least 4 with device nvme, not %lld",
                 (long long)oo->buffer_count);
        zg_note(c->bc_loc[1], "DeepSpeed's config model accepts it, but its docs ask for one buffer per Adam state "
                "(param, grad, m, v), and zgen's sub-group pipeline needs 4 to overlap reads, the step and writes");
    }
    if (op->device == ZG_OFFLOAD_NVME && op->buffer_count < 1) {
        zg_error(c->bc_loc[0], "offload_param.buffer_count must be at least 1 with device nvme, not %lld",
                 (long long)op->buffer_count);
        zg_note(c->bc_loc[0], "DeepSpeed's config model accepts 0, but parameters read from NVMe need a pinned "
                "buffer to land in");
    }
    for (int w = 0; w < 2; w++) {
        ZgOffloadCfg *ow = w ? oo : op;
        if (ow->buffer_count > ZG_MAX_TABLE_ROWS) {     /* emitted whatever the device */
            zg_error(c->bc_loc[w], "%s.buffer_count %lld: zgen plans one pinned staging region per buffer and "
                     "emits at most %d table rows", w ? "offload_optimizer" : "offload_param",
                     (long long)ow->buffer_count, ZG_MAX_TABLE_ROWS);
            zg_note(c->bc_loc[w], "DeepSpeed's config model accepts it; a few buffers overlap the reads and "
                    "writes as well as many (DeepSpeed's defaults: 5 for parameters, 4 for the optimizer)");
        }
    }
    if (oo->ratio < 1.0) {
        if (z->stage != 3)
            zg_error(c->ratio_loc, "offload_optimizer.ratio %g < 1 needs ZeRO stage 3 (DeepSpeed's rule)", oo->ratio);
        else
            zg_error(c->ratio_loc, "zgen does not support offload_optimizer.ratio %g", oo->ratio);
        zg_note(c->ratio_loc, "zgen offloads the whole optimizer state (ratio 1.0); remove the key (at stage 2, "
                "the spec's train.device_optimizer keeps a share of it on the device)");
    }
    if (z->sched == ZG_SCHED_WARMUP_DECAY || z->sched == ZG_SCHED_WARMUP_COSINE) {
        if (!c->total_given) {
            zg_error(z->loc_sched, "scheduler %s needs params.total_num_steps", c->sched);
            zg_note(z->loc_sched, "give the number of optimizer steps the schedule spans, or \"auto\" with "
                    "zgen --steps N");
        } else if (z->total_num_steps < z->warmup_num_steps) {
            zg_warn(z->loc_sched, "total_num_steps %lld is less than warmup_num_steps %lld",
                    (long long)z->total_num_steps, (long long)z->warmup_num_steps);
        }
    }
    /* DeepSpeed's "Adam" means decoupled weight decay unless adam_w_mode is false; AdamW always is. */
    if (!strcmp(z->optimizer, "adamw")) z->adam_w_mode = true;
}

