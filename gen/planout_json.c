/*
** planout_json.c — plan.json (the whole plan, machine-readable) and the writing of plan.json and
** plan.txt into the output folder. Output is a pure function of the plan: fixed key order, integers
** as integers, doubles in one fixed format, no timestamps, so the same inputs give the same bytes.
** Stage-3 slices follow a rule (rank r holds [r*part, min((r+1)*part, numel)) of every tensor) that
** is stated once instead of listed ws times per tensor, which keeps a 1024-rank plan small.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zg_plan.h"

typedef struct J {
    FILE *f;
    int depth;
    bool first[64];             /* no value yet at this depth */
} J;

static void jsep(J *j)
{
    if (!j->first[j->depth]) fputc(',', j->f);
    j->first[j->depth] = false;
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

static void jstr_raw(J *j, const char *s)
{
    fputc('"', j->f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(j->f, "\\%c", *c);
        else if (*c < 0x20) fprintf(j->f, "\\u%04x", *c);
        else fputc(*c, j->f);
    }
    fputc('"', j->f);
}

static void jkey(J *j, const char *k)
{
    jsep(j);
    if (k) {
        jstr_raw(j, k);
        fputs(": ", j->f);
    }
}

static void jopen(J *j, const char *k, char c)
{
    jkey(j, k);
    fputc(c, j->f);
    j->first[++j->depth] = true;
}

static void jclose(J *j, char c)
{
    bool empty = j->first[j->depth];
    j->depth--;
    if (!empty) {
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
    }
    fputc(c, j->f);
}

static void jint(J *j, const char *k, int64_t v) { jkey(j, k); fprintf(j->f, "%lld", (long long)v); }
static void jbool(J *j, const char *k, bool v) { jkey(j, k); fputs(v ? "true" : "false", j->f); }
static void jstr(J *j, const char *k, const char *v) { jkey(j, k); jstr_raw(j, v); }
static void jdbl(J *j, const char *k, double v)
{
    jkey(j, k);
    if (v != v || v > 1e308 || v < -1e308) fputs("null", j->f);
    else fprintf(j->f, "%.17g", v);
}

/* A compact one-line array of integers, e.g. an op [kind, arg, slot]. */
static void jline(J *j, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void jline(J *j, const char *k, const char *fmt, ...)
{
    jkey(j, k);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(j->f, fmt, ap);
    va_end(ap);
}

static void offload_json(J *j, const char *k, const ZgOffloadCfg *o)
{
    jopen(j, k, '{');
    jstr(j, "device", zg_offload_name(o->device));
    jstr(j, "nvme_path", o->nvme_path ? o->nvme_path : "");
    jbool(j, "pin_memory", o->pin_memory);
    jint(j, "buffer_count", o->buffer_count);
    jclose(j, '}');
}

static void ops_json(J *j, const char *k, const ZgOp *ops, int n)
{
    jopen(j, k, '[');
    for (int i = 0; i < n; i++)
        jline(j, NULL, "[\"%s\", %d, %d, {\"xfer\": \"%s\", \"stream\": \"%s\", \"src\": %d, "
              "\"dst\": %d, \"src_off\": %lld, \"dst_off\": %lld, \"count\": %lld, "
              "\"src_dt\": \"%s\", \"dst_dt\": \"%s\", \"accumulate\": %s, \"flat\": %lld}]",
              zg_op_name(ops[i].kind), ops[i].arg, ops[i].slot, zg_xfer_name(ops[i].xfer),
              zg_stream_name(ops[i].stream), ops[i].src, ops[i].dst, (long long)ops[i].src_off,
              (long long)ops[i].dst_off, (long long)ops[i].count, zg_dtype_name(ops[i].src_dt),
              zg_dtype_name(ops[i].dst_dt), ops[i].accumulate ? "true" : "false",
              (long long)ops[i].flat);
    jclose(j, ']');
}

/* Tier of the named region, or "" when the plan has none. */
static const char *region_tier(const ZgPlan *p, const char *name)
{
    for (int i = 0; i < p->mem.n_regions; i++)
        if (!strcmp(p->mem.regions[i].name, name)) return zg_tier_name(p->mem.regions[i].tier);
    return "";
}

bool zg_plan_write_json(const ZgPlan *p, FILE *f)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    const ZgShardMap *s = &p->shard;
    J jj = {.f = f}, *j = &jj;
    j->first[0] = true;
    fputc('{', f);
    j->first[1] = true;
    j->depth = 1;
    jint(j, "zgen_plan_version", 1);
    jopen(j, "model", '{');
    jstr(j, "name", m->name);
    jstr(j, "arch", m->arch);
    jint(j, "vocab_size", m->vocab_size);
    jint(j, "context", m->context);
    jint(j, "d_model", m->d_model);
    jint(j, "n_layers", m->n_layers);
    jint(j, "n_heads", m->n_heads);
    jint(j, "d_ff", m->d_ff);
    jint(j, "seq_len", m->seq_len);
    jbool(j, "tie_embeddings", m->tie_embeddings);
    const ZgArch *arch = zg_arch_find(m->arch);
    if (arch && arch->rope) {           /* rotary archs only: a gpt2 plan.json is unchanged */
        jint(j, "n_kv_heads", m->n_kv_heads);
        jdbl(j, "norm_eps", m->norm_eps);
        jdbl(j, "rope_theta", m->rope_theta);
        if (m->rope_llama3) {
            jopen(j, "rope_scaling", '{');
            jstr(j, "type", "llama3");
            jdbl(j, "factor", m->rope_factor);
            jdbl(j, "low_freq_factor", m->rope_low_freq_factor);
            jdbl(j, "high_freq_factor", m->rope_high_freq_factor);
            jint(j, "original_context", m->rope_original_context);
            jclose(j, '}');
        }
    }
    jint(j, "n_params", p->n_params);
    jint(j, "largest_layer", p->largest_layer);
    jint(j, "world_size", m->world_size);
    jint(j, "gpus_per_node", m->gpus_per_node);
    jint(j, "device_memory", m->device_memory);
    jint(j, "host_memory", m->host_memory);
    jclose(j, '}');

    jopen(j, "config", '{');
    jint(j, "stage", z->stage);
    jstr(j, "dtype", zg_dtype_name(z->dtype));
    jint(j, "train_batch_size", z->train_batch_size);
    jint(j, "micro_batch", z->micro_batch);
    jint(j, "grad_accum", z->grad_accum);
    jbool(j, "overlap_comm", z->overlap_comm);
    jbool(j, "contiguous_gradients", z->contiguous_gradients);
    jbool(j, "reduce_scatter", z->reduce_scatter);
    jint(j, "reduce_bucket_size", z->reduce_bucket_size);
    jint(j, "allgather_bucket_size", z->allgather_bucket_size);
    jint(j, "sub_group_size", z->sub_group_size);
    jint(j, "stage3_prefetch_bucket_size", z->prefetch_bucket_size);
    jint(j, "stage3_param_persistence_threshold", z->param_persistence_threshold);
    jint(j, "stage3_model_persistence_threshold", z->model_persistence_threshold);
    jint(j, "stage3_max_live_parameters", z->max_live_parameters);
    offload_json(j, "offload_param", &z->offload_param);
    offload_json(j, "offload_optimizer", &z->offload_optimizer);
    jint(j, "aio_block_size", z->aio_block_size);
    jint(j, "aio_queue_depth", z->aio_queue_depth);
    jclose(j, '}');

    /* each training setting with where it came from (planout_train.c) */
    ZgTrainRow rows[ZG_NS];
    int nrows = zg_plan_training_rows(z, rows);
    jopen(j, "training", '{');
    for (int i = 0; i < nrows; i++) {
        jopen(j, rows[i].key, '{');
        if (rows[i].json_string) jstr(j, "value", rows[i].value);
        else jline(j, "value", "%s", rows[i].value);
        jstr(j, "from", rows[i].from);
        if (rows[i].source) jstr(j, "source", rows[i].source);
        if (rows[i].line) jint(j, "line", rows[i].line);
        if (rows[i].note) jstr(j, "note", rows[i].note);
        jclose(j, '}');
    }
    jclose(j, '}');

    jopen(j, "partition", '{');
    jint(j, "world_size", s->ws);
    jint(j, "align", s->align);
    jint(j, "flat_numel", s->flat_numel);
    jint(j, "padded_numel", s->padded_numel);
    jint(j, "part_numel", s->part_numel);
    jint(j, "opt_numel", s->opt_numel);
    jint(j, "persist_numel", s->persist_numel);
    jstr(j, "rule", z->stage < 3
         ? "flat buffer in tensor order; rank r owns flat [r*part_numel, (r+1)*part_numel)"
         : "rank r holds elements [r*part, min((r+1)*part, numel)) of every tensor, at "
           "shard_offset in its shard");
    jint(j, "n_bucket_buffers", p->n_bucket_buffers);
    jint(j, "bucket_buffer_numel", p->bucket_buffer_numel);
    jint(j, "bucket_recv_numel", p->bucket_recv_numel);
    jint(j, "n_gather_slots", p->n_gather_slots);
    jint(j, "gather_slot_numel", p->gather_slot_numel);
    jint(j, "reduce_bucket_cap", p->reduce_bucket_cap);
    jint(j, "prefetch_numel", p->prefetch_numel);
    jint(j, "max_live_numel", p->max_live_numel);
    jint(j, "sub_group_numel", p->sub_group_numel > 0 ? p->sub_group_numel : z->sub_group_size);
    jint(j, "sized_by_zgen", p->sized_auto);
    jint(j, "sg_align", p->sg_align);
    jstr(j, "sg_swap", p->sg_swap == ZG_SWAP_OPTIMIZER ? "optimizer"
                       : p->sg_swap == ZG_SWAP_PARAMS ? "params" : "none");
    jint(j, "n_sg_buffers", p->n_sg_buffers);
    jbool(j, "grad_nvme", p->grad_nvme);
    jint(j, "nvme_align", p->nvme_align);
    jopen(j, "placement", '{');
    jstr(j, "param_shard", region_tier(p, z->stage < 3 ? "params16" : "params_shard"));
    jstr(j, "grad_shard", region_tier(p, p->grad16 ? "grad16"
                                      : z->stage < 2 && !*region_tier(p, "grad32") ? "grads" : "grad32"));
    jstr(j, "optimizer_state", region_tier(p, "adam_m"));
    jstr(j, "adam", p->adam_device ? "device" : "host");
    jbool(j, "speculative_step", p->speculative);
    jbool(j, "norm_fused", p->norm_fused);
    jbool(j, "device_grad_accum", p->grad_acc_dev);
    jint(j, "device_optimizer_subgroups", p->n_sg_dev);
    jint(j, "device_optimizer_numel", p->opt_dev_numel);
    jbool(j, "norm_device_lanes", p->norm_dev_lanes);
    jint(j, "norm_block", p->norm_block);
    jbool(j, "norm_in_adam", p->norm_adam);
    jclose(j, '}');
    jclose(j, '}');

    jopen(j, "modules", '[');
    for (int i = 0; i < p->n_modules; i++) {
        const ZgModule *md = &p->modules[i];
        jline(j, NULL, "{\"name\": \"%s\", \"kind\": \"%s\", \"layer\": %d, \"first_tensor\": %d, "
              "\"n_tensors\": %d, \"numel\": %lld, \"use_numel\": %lld, \"gather\": %d}",
              md->name, zg_modkind_name(md->kind), md->layer, md->first_tensor, md->n_tensors,
              (long long)md->numel, (long long)md->use_numel, md->gather_bucket);
    }
    jclose(j, ']');

    jopen(j, "tensors", '[');
    for (int i = 0; i < p->n_tensors; i++) {
        const ZgTensor *t = &p->tensors[i];
        jopen(j, NULL, '{');
        jstr(j, "name", t->name);
        jline(j, "shape", t->ndim == 2 ? "[%lld, %lld]" : "[%lld]", (long long)t->shape[0],
              (long long)t->shape[1]);
        jint(j, "numel", t->numel);
        jint(j, "module", t->module);
        jint(j, "layer", t->layer);
        jbool(j, "decay", t->decay);
        jstr(j, "init", zg_init_name(t->init));
        jbool(j, "residual_proj", t->residual_proj);
        jint(j, "flat_offset", t->flat_offset);
        jint(j, "bucket", t->reduce_bucket);
        jint(j, "bucket_offset", t->bucket_offset);
        if (z->stage == 3) {
            jint(j, "part_numel", t->part_numel);
            jint(j, "shard_offset", s->shard_offset[i]);
            jbool(j, "persistent", t->persistent);
            jint(j, "persist_offset", t->persist_offset);
            jint(j, "gather", t->gather);
            jint(j, "gather_offset", t->gather_offset);
        } else {
            /* owners: [rank, first element, end element) of this tensor */
            jopen(j, "owners", '[');
            if (t->numel > 0) {
                int64_t r0 = t->flat_offset / s->part_numel;
                int64_t r1 = (t->flat_offset + t->numel - 1) / s->part_numel;
                for (int64_t r = r0; r <= r1; r++) {
                    int64_t a = r * s->part_numel - t->flat_offset, b = a + s->part_numel;
                    if (a < 0) a = 0;
                    if (b > t->numel) b = t->numel;
                    jline(j, NULL, "[%lld, %lld, %lld]", (long long)r, (long long)a, (long long)b);
                }
            }
            jclose(j, ']');
        }
        jclose(j, '}');
    }
    jclose(j, ']');

    jopen(j, "buckets", '[');
    for (int k = 0; k < p->n_buckets; k++) {
        const ZgBucket *b = &p->buckets[k];
        jline(j, NULL, "{\"first_tensor\": %d, \"n_tensors\": %d, \"numel\": %lld, "
              "\"padded_numel\": %lld, \"flat_offset\": %lld, \"buffer\": %d}",
              b->first_tensor, b->n_tensors, (long long)b->numel, (long long)b->padded_numel,
              (long long)b->flat_offset, b->buffer);
    }
    jclose(j, ']');
    jopen(j, "gathers", '[');
    for (int g = 0; g < p->n_gathers; g++) {
        const ZgGather *ga = &p->gathers[g];
        jline(j, NULL, "{\"module\": %d, \"first_tensor\": %d, \"n_tensors\": %d, "
              "\"part_numel\": %lld, \"numel\": %lld, \"slot\": %d, \"shard_offset\": %lld, "
              "\"shard_numel\": %lld}", ga->module, ga->first_tensor, ga->n_tensors,
              (long long)ga->part_numel, (long long)ga->numel, ga->slot,
              (long long)ga->shard_offset, (long long)ga->shard_numel);
    }
    jclose(j, ']');
    jopen(j, "subgroups", '[');
    for (int i = 0; i < p->n_subgroups; i++) {
        const ZgSubGroup *sg = &p->subgroups[i];
        jline(j, NULL, "{\"shard_offset\": %lld, \"numel\": %lld, \"nvme_offset_bytes\": %lld, "
              "\"buffer\": %d}", (long long)sg->shard_offset, (long long)sg->numel,
              (long long)sg->nvme_offset_bytes, sg->buffer);
    }
    jclose(j, ']');

    jopen(j, "schedule", '{');
    jint(j, "prefetch_depth", p->sched.prefetch_depth);
    ops_json(j, "micro", p->sched.micro, p->sched.n_micro);
    ops_json(j, "last", p->sched.last, p->sched.n_last);
    ops_json(j, "step", p->sched.step, p->sched.n_step);
    jclose(j, '}');

    jopen(j, "regions", '[');
    for (int i = 0; i < p->mem.n_regions; i++) {
        const ZgRegion *r = &p->mem.regions[i];
        jline(j, NULL, "{\"name\": \"%s\", \"category\": \"%s\", \"tier\": \"%s\", "
              "\"offset_bytes\": %lld, \"bytes\": %lld}", r->name, zg_memcat_name(r->cat),
              zg_tier_name(r->tier), (long long)r->offset_bytes, (long long)r->bytes);
    }
    jclose(j, ']');
    jopen(j, "nvme_files", '[');         /* the swap files per rank, one per distinct nvme_path */
    for (int i = 0; i < p->mem.n_nvme_files; i++) {
        jopen(j, NULL, '{');
        jstr(j, "path", p->mem.nvme_file_path[i]);
        jint(j, "bytes", p->mem.nvme_file_bytes[i]);
        jopen(j, "regions", '[');
        for (int r = 0; r < p->mem.n_regions; r++)
            if (p->mem.regions[r].tier == ZG_TIER_NVME && p->mem.regions[r].file == i) {
                jsep(j);
                jstr_raw(j, p->mem.regions[r].name);
            }
        jclose(j, ']');
        jclose(j, '}');
    }
    jclose(j, ']');
    jopen(j, "tiers", '{');
    for (int t = 0; t < ZG_NTIERS; t++) {
        jopen(j, zg_tier_name((ZgTier)t), '{');
        jint(j, "bytes", p->mem.tier_bytes[t]);
        jint(j, "peak_bytes", p->mem.peak_bytes[t]);
        jopen(j, "categories", '{');
        for (int c = 0; c < ZG_NMEM; c++)
            if (p->mem.cat_bytes[t][c]) jint(j, zg_memcat_name((ZgMemCat)c), p->mem.cat_bytes[t][c]);
        jclose(j, '}');
        jclose(j, '}');
    }
    jclose(j, '}');
    jopen(j, "memory", '{');
    jint(j, "arena_align", p->mem.arena_align);
    jbool(j, "act_ckpt", p->act_ckpt);
    jint(j, "acts_bytes", p->mem.acts_bytes);
    jint(j, "scratch_bytes", p->mem.scratch_bytes);
    jstr(j, "device_acts_layout", p->mem.device_acts_layout);
    jint(j, "host_acts_bytes", p->mem.host_acts_bytes);
    jint(j, "host_scratch_bytes", p->mem.host_scratch_bytes);
    jint(j, "host_stage_bytes", p->mem.host_stage_bytes);
    jint(j, "grad_land_slots", p->mem.grad_land_slots);
    jint(j, "grad_land_numel", p->mem.grad_land_numel);
    jbool(j, "grad_land_direct", p->mem.grad_land_direct);
    jint(j, "param_land_numel", p->mem.param_land_numel);
    jint(j, "host_bytes_per_node", zg_mem_host_per_node(p));
    /* device memory a CUDA rank needs beside the arena (memplan.c); the parts are zgen's estimate,
    ** device_headroom_bytes their sum or hardware.device_headroom */
    jint(j, "device_headroom_bytes", p->mem.device_headroom);
    jopen(j, "device_headroom_parts", '{');
    jint(j, "cuda_context_bytes", p->mem.headroom_context);
    jint(j, "cublas_workspace_bytes", p->mem.headroom_cublas);
    jint(j, "nccl_bytes", p->mem.headroom_nccl);
    jclose(j, '}');
    jbool(j, "device_headroom_declared", p->model->device_headroom > 0);
    jint(j, "device_need_bytes", zg_mem_device_need(p));
    jclose(j, '}');
    jopen(j, "cost_per_step_per_rank", '{');
    jint(j, "net_bytes", p->cost.net_bytes);
    jint(j, "h2d_bytes", p->cost.h2d_bytes);
    jint(j, "d2h_bytes", p->cost.d2h_bytes);
    jint(j, "nvme_read_bytes", p->cost.nvme_read_bytes);
    jint(j, "nvme_write_bytes", p->cost.nvme_write_bytes);
    jint(j, "batch_h2d_bytes", p->cost.batch_h2d_bytes);
    jint(j, "loss_d2h_bytes", p->cost.loss_d2h_bytes);
    jint(j, "norm_d2h_bytes", p->cost.norm_d2h_bytes);
    jdbl(j, "flops", p->cost.flops);
    jclose(j, '}');
    j->depth = 0;
    fputs("\n}\n", f);
    return !ferror(f);
}

/* mkdir -p */
static bool make_dirs(const char *dir)
{
    char *d = zg_xstrdup(dir);
    for (char *c = d + 1; ; c++) {
        if (*c == '/' || *c == '\0') {
            char save = *c;
            *c = '\0';
            if (mkdir(d, 0777) != 0 && errno != EEXIST) {
                free(d);
                return false;
            }
            *c = save;
            if (!save) break;
        }
    }
    free(d);
    return true;
}

static bool write_one(const ZgPlan *p, const char *dir, const char *name,
                      bool (*fn)(const ZgPlan *, FILE *))
{
    char *path = zg_fmt("%s/%s", dir, name);
    char *tmp = zg_fmt("%s/.%s.tmp.%d", dir, name, (int)getpid());
    /* registered before it exists, so a signal during the write removes it (emit.c) */
    zg_emit_tmp_register(tmp);
    FILE *f = fopen(tmp, "w");
    ZgLoc none = {0};
    if (!f) {
        zg_error(none, "cannot write %s: %s", tmp, strerror(errno));
        zg_emit_tmp_unregister(tmp);
        return false;
    }
    bool ok = fn(p, f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        zg_error(none, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        zg_emit_tmp_unregister(tmp);
        return false;
    }
    zg_emit_tmp_unregister(tmp);
    return true;
}

bool zg_plan_write_files(const ZgPlan *p, const char *dir)
{
    if (!make_dirs(dir)) {
        ZgLoc none = {0};
        zg_error(none, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    return write_one(p, dir, "plan.json", zg_plan_write_json) &&
           write_one(p, dir, "plan.txt", zg_plan_write_txt);
}
