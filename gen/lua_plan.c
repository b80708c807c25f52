/*
** lua_plan.c — the plan as Lua tables for the templates (docs/TEMPLATES.md "Environment"): model,
** zero config, tensors, modules, buckets, gathers, sub-groups, the lowered op lists, memory and cost,
** presized and filled with raw sets, and enum values as the lower-case names of runtime/zr_enums.h.
** lua.c owns the Lua state and its sandbox; this file only builds values on a given stack.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include "zg_lua_plan.h"
#include "zg_cuda_dec.h"
#include "../runtime/zr_rows.h"   /* defines: the tensor table's columns */

/* {===================================================================== enum names */
/* Templates see the names of names.c in lower case: the C enum suffix (ZR_OP_<NAME>, ZR_MEM_<NAME>). */
static const char *lower_name(const char *upper, char *buf, size_t n)
{
    size_t i = 0;
    for (; upper[i] && i + 1 < n; i++) buf[i] = (char)((upper[i] >= 'A' && upper[i] <= 'Z') ? upper[i] + 32 : upper[i]);
    buf[i] = 0;
    return buf;
}

const char *zg_lua_op_name(int k)
{
    static char names[ZG_NOPS][32];
    return k >= 0 && k < ZG_NOPS ? lower_name(zg_op_name((ZgOpKind)k), names[k], sizeof names[k]) : NULL;
}
const char *zg_lua_tier_name(int t) { return t >= 0 && t < ZG_NTIERS ? zg_tier_name((ZgTier)t) : NULL; }
const char *zg_lua_memcat_name(int c) { return c >= 0 && c < ZG_NMEM ? zg_memcat_name((ZgMemCat)c) : NULL; }

static const char *dtype_str(ZgDtype d)
{
    return d == ZG_DTYPE_BF16 ? "bf16" : d == ZG_DTYPE_FP16 ? "fp16" : "fp32";
}
static const char *offload_str(ZgOffload o)
{
    return o == ZG_OFFLOAD_CPU ? "cpu" : o == ZG_OFFLOAD_NVME ? "nvme" : "none";
}
static const char *sched_str(ZgSchedKind k)
{
    static const char *const n[] = {"none", "warmup", "warmup_decay", "warmup_cosine"};
    return (unsigned)k < 4 ? n[k] : "none";
}
static const char *modkind_str(ZgModKind k)
{
    static const char *const n[] = {"embed", "block", "final_norm", "head"};
    return (unsigned)k < 4 ? n[k] : "unknown";
}
static const char *init_str(int init)
{
    return init == 1 ? "zeros" : init == 2 ? "ones" : "normal";
}
/* Unknown enumerators (the plan gained one this file does not know) still get a name. */
static void push_enum(lua_State *L, const char *name, int k)
{
    if (name) lua_pushstring(L, name);
    else lua_pushfstring(L, "unknown_%d", k);
}
/* }===================================================================== */

/* {===================================================================== the plan as tables */
#define SETI(k, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, (k)))
#define SETN(k, v) (lua_pushnumber(L, (double)(v)), lua_setfield(L, -2, (k)))
#define SETB(k, v) (lua_pushboolean(L, (v) ? 1 : 0), lua_setfield(L, -2, (k)))
#define SETS(k, v) ((v) ? (lua_pushstring(L, (v)), lua_setfield(L, -2, (k))) : (void)0)

static void push_model(lua_State *L, const ZgModel *m)
{
    lua_createtable(L, 0, 24);
    SETS("spec_path", m->spec_path); SETS("name", m->name); SETS("arch", m->arch);
    SETS("gen_args", m->gen_args ? m->gen_args : m->spec_path);     /* rendered without main.c: the spec */
    SETI("vocab_size", m->vocab_size); SETI("context", m->context);
    SETI("d_model", m->d_model); SETI("n_layers", m->n_layers); SETI("n_heads", m->n_heads);
    SETI("d_ff", m->d_ff); SETN("norm_eps", m->norm_eps); SETB("tie_embeddings", m->tie_embeddings);
    SETI("seq_len", m->seq_len); SETI("world_size", m->world_size);
    SETI("seed", m->seed);      /* seeds >= 2^63 wrap: cfmt.u64 prints them unsigned */
    SETB("shuffle", m->shuffle);
    SETI("device_memory", m->device_memory); SETI("host_memory", m->host_memory);
    SETI("gpus_per_node", m->gpus_per_node);
    SETI("train_micro_batch", m->train_micro_batch); SETI("train_batch", m->train_batch);
    SETI("train_grad_accum", m->train_grad_accum); SETN("train_lr", m->train_lr);
    /* rotary archs (gpt2 keeps the defaults: n_kv_heads = n_heads) and the arch table's train-cuda gap */
    SETI("n_kv_heads", m->n_kv_heads); SETN("rope_theta", m->rope_theta); SETB("rope_llama3", m->rope_llama3);
    SETN("rope_factor", m->rope_factor); SETN("rope_low_freq_factor", m->rope_low_freq_factor);
    SETN("rope_high_freq_factor", m->rope_high_freq_factor);
    SETI("rope_original_context", m->rope_original_context);
    const ZgArch *arch = zg_arch_find(m->arch);
    SETB("rope", arch && arch->rope);
    SETB("qkv_bias", arch && arch->qkv_bias);
}

static void push_offload(lua_State *L, const ZgOffloadCfg *o)
{
    lua_createtable(L, 0, 10);
    SETS("device", offload_str(o->device)); SETS("nvme_path", o->nvme_path);
    SETB("pin_memory", o->pin_memory); SETI("buffer_count", o->buffer_count);
    SETI("buffer_size", o->buffer_size); SETI("max_in_cpu", o->max_in_cpu);
    SETB("pipeline_read", o->pipeline_read); SETB("pipeline_write", o->pipeline_write);
    SETN("ratio", o->ratio);
}

static void push_zero(lua_State *L, const ZgZero *z)
{
    lua_createtable(L, 0, 56);
    SETS("path", z->path); SETI("stage", z->stage);
    SETI("train_batch_size", z->train_batch_size); SETI("micro_batch", z->micro_batch);
    SETI("grad_accum", z->grad_accum);
    SETS("dtype", dtype_str(z->dtype)); SETS("comm_dtype", dtype_str(z->comm_dtype));
    SETN("loss_scale", z->loss_scale); SETI("initial_scale_power", z->initial_scale_power);
    SETI("loss_scale_window", z->loss_scale_window); SETI("hysteresis", z->hysteresis);
    SETB("consecutive_hysteresis", z->consecutive_hysteresis);
    SETN("min_loss_scale", z->min_loss_scale); SETN("gradient_clipping", z->gradient_clipping);
    SETS("optimizer", z->optimizer); SETN("lr", z->lr); SETN("beta1", z->beta1);
    SETN("beta2", z->beta2); SETN("eps", z->eps); SETN("weight_decay", z->weight_decay);
    SETB("adam_w_mode", z->adam_w_mode);
    SETB("bias_correction", z->bias_correction);
    SETS("sched", sched_str(z->sched)); SETN("warmup_min_lr", z->warmup_min_lr);
    SETN("warmup_max_lr", z->warmup_max_lr); SETN("warmup_min_ratio", z->warmup_min_ratio);
    SETN("cos_min_ratio", z->cos_min_ratio); SETI("warmup_num_steps", z->warmup_num_steps);
    SETI("total_num_steps", z->total_num_steps); SETB("warmup_linear", z->warmup_linear);
    SETB("contiguous_gradients", z->contiguous_gradients); SETB("reduce_scatter", z->reduce_scatter);
    SETB("overlap_comm", z->overlap_comm); SETI("reduce_bucket_size", z->reduce_bucket_size);
    SETI("allgather_bucket_size", z->allgather_bucket_size);
    SETI("sub_group_size", z->sub_group_size); SETI("prefetch_bucket_size", z->prefetch_bucket_size);
    SETI("param_persistence_threshold", z->param_persistence_threshold);
    SETI("model_persistence_threshold", z->model_persistence_threshold);
    SETI("max_live_parameters", z->max_live_parameters);
    SETI("max_reuse_distance", z->max_reuse_distance);
    push_offload(L, &z->offload_param); lua_setfield(L, -2, "offload_param");
    push_offload(L, &z->offload_optimizer); lua_setfield(L, -2, "offload_optimizer");
    SETI("aio_block_size", z->aio_block_size); SETI("aio_queue_depth", z->aio_queue_depth);
    SETI("aio_intra_op_parallelism", z->aio_intra_op_parallelism);
    SETB("aio_single_submit", z->aio_single_submit); SETB("aio_overlap_events", z->aio_overlap_events);
}

static void push_dims(lua_State *L, const char *key, const int64_t *shape, int ndim)
{
    lua_createtable(L, ndim, 0);
    for (int d = 0; d < ndim && d < 2; d++) {
        lua_pushinteger(L, shape[d]);
        lua_rawseti(L, -2, d + 1);
    }
    lua_setfield(L, -2, key);
}

/* A row of an emitted table: every column of runtime/zr_rows.h under its name, and its index. */
#define PUSH_INT(k, v) SETI(k, v)
#define PUSH_BOOL(k, v) SETB(k, v)
#define PUSH_STR(k, v) SETS(k, v)
#define PUSH_INIT(k, v) SETS(k, init_str(v))
#define PUSH_MODKIND(k, v) SETS(k, modkind_str(v))
#define PUSH_DTYPE(k, v) SETS(k, zg_dtype_name(v))
#define PUSH_REGION(k, v) SETI(k, v)
#define PUSH_DIMS(k, v) push_dims(L, k, v, t->ndim)
#define PUSH_COLUMN(ctype, name, dims, kind, gen, what) PUSH_##kind(#name, gen);

static void push_tensor(lua_State *L, const ZgPlan *p, int i)
{
    const ZgTensor *t = &p->tensors[i];
    lua_createtable(L, 0, 20);
    SETI("index", i); SETS("field", t->field);
    ZR_TENSOR_COLUMNS(PUSH_COLUMN)
}

static void push_ops(lua_State *L, const ZgOp *ops, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 4);
        SETI("index", i);
        push_enum(L, zg_lua_op_name((int)ops[i].kind), (int)ops[i].kind);
        lua_setfield(L, -2, "kind");
        SETI("arg", ops[i].arg); SETI("slot", ops[i].slot);
        SETS("xfer", zg_xfer_name(ops[i].xfer)); SETS("stream", zg_stream_name(ops[i].stream));
        SETI("src", ops[i].src); SETI("dst", ops[i].dst);
        SETI("src_off", ops[i].src_off); SETI("dst_off", ops[i].dst_off);
        SETI("count", ops[i].count);
        SETS("src_dt", zg_dtype_name(ops[i].src_dt)); SETS("dst_dt", zg_dtype_name(ops[i].dst_dt));
        SETB("accumulate", ops[i].accumulate); SETI("flat", ops[i].flat);
        lua_rawseti(L, -2, i + 1);
    }
}

/* A table keyed by tier name of v[tier]. */
static void push_tier_ints(lua_State *L, const int64_t *v)
{
    lua_createtable(L, 0, ZG_NTIERS);
    for (int t = 0; t < ZG_NTIERS; t++) SETI(zg_lua_tier_name(t), v[t]);
}

static void push_mem(lua_State *L, const ZgMemPlan *m)
{
    lua_createtable(L, 0, 5);
    lua_createtable(L, m->n_regions, 0);
    for (int i = 0; i < m->n_regions; i++) {
        const ZgRegion *r = &m->regions[i];
        lua_createtable(L, 0, 6);
        SETI("index", i); SETS("name", r->name);
        push_enum(L, zg_lua_memcat_name((int)r->cat), (int)r->cat); lua_setfield(L, -2, "cat");
        push_enum(L, zg_lua_tier_name((int)r->tier), (int)r->tier); lua_setfield(L, -2, "tier");
        SETI("offset_bytes", r->offset_bytes); SETI("bytes", r->bytes);
        SETI("file", r->file);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "regions");
    lua_createtable(L, m->n_nvme_files, 0);            /* the swap files: {path, bytes} */
    for (int i = 0; i < m->n_nvme_files; i++) {
        lua_createtable(L, 0, 2);
        SETS("path", m->nvme_file_path[i]); SETI("bytes", m->nvme_file_bytes[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "nvme_files");
    push_tier_ints(L, m->tier_bytes); lua_setfield(L, -2, "tier_bytes");
    push_tier_ints(L, m->peak_bytes); lua_setfield(L, -2, "peak_bytes");
    lua_createtable(L, 0, ZG_NTIERS);
    for (int t = 0; t < ZG_NTIERS; t++) {
        lua_createtable(L, 0, ZG_NMEM);
        for (int c = 0; c < ZG_NMEM; c++) SETI(zg_lua_memcat_name(c), m->cat_bytes[t][c]);
        lua_setfield(L, -2, zg_lua_tier_name(t));
    }
    lua_setfield(L, -2, "cat_bytes");
    SETI("arena_align", m->arena_align);
    SETI("acts_bytes", m->acts_bytes); SETI("scratch_bytes", m->scratch_bytes);
    SETI("host_acts_bytes", m->host_acts_bytes); SETI("host_scratch_bytes", m->host_scratch_bytes);
    SETI("host_stage_bytes", m->host_stage_bytes);
    SETI("grad_land_slots", m->grad_land_slots); SETI("grad_land_numel", m->grad_land_numel);
    SETB("grad_land_direct", m->grad_land_direct);
    SETI("param_land_numel", m->param_land_numel);
    SETI("headroom_nccl", m->headroom_nccl); SETI("headroom_context", m->headroom_context);
    SETI("headroom_cublas", m->headroom_cublas);
}

/* Pushes an array of n rows made by row(L, p, i). */
static void push_rows(lua_State *L, const ZgPlan *p, int n, void (*row)(lua_State *, const ZgPlan *, int))
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        row(L, p, i);
        lua_rawseti(L, -2, i + 1);
    }
}

static void push_module(lua_State *L, const ZgPlan *p, int i)
{
    const ZgModule *t = &p->modules[i];
    lua_createtable(L, 0, 9);
    SETI("index", i);
    ZR_MODULE_COLUMNS(PUSH_COLUMN)
}
static void push_bucket(lua_State *L, const ZgPlan *p, int i)
{
    const ZgBucket *t = &p->buckets[i];
    lua_createtable(L, 0, 7);
    SETI("index", i);
    ZR_BUCKET_COLUMNS(PUSH_COLUMN)
}
static void push_gather(lua_State *L, const ZgPlan *p, int i)
{
    const ZgGather *t = &p->gathers[i];
    lua_createtable(L, 0, 9);
    SETI("index", i);
    ZR_GATHER_COLUMNS(PUSH_COLUMN)
}
static void push_optimizer(lua_State *L, const ZgPlan *p, int i)
{
    const ZgOptRow *t = &p->optim[i];
    lua_createtable(L, 0, 20);
    SETI("index", i);
    ZR_OPTIMIZER_COLUMNS(PUSH_COLUMN)
}
static void push_subgroup(lua_State *L, const ZgPlan *p, int i)
{
    const ZgSubGroup *t = &p->subgroups[i];
    lua_createtable(L, 0, 5);
    SETI("index", i);
    ZR_SUBGROUP_COLUMNS(PUSH_COLUMN)
}

/* enums.<list>: the enumerator names of runtime/zr_enums.h in enum order (1-based), so a template
** iterates the same list the C enums are built from (enums.tiers, enums.memcats, ...). */
static void push_names(lua_State *L, const char *const *n, int count, const char *field)
{
    lua_createtable(L, count, 0);
    for (int i = 0; i < count; i++) {
        lua_pushstring(L, n[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, field);
}

static void push_columns(lua_State *L, const char *const cols[][2], int n, const char *table)
{
    lua_createtable(L, n, 0);
    for (int c = 0; c < n; c++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, cols[c][0]);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, cols[c][1]);
        lua_setfield(L, -2, "kind");
        lua_rawseti(L, -2, c + 1);
    }
    lua_setfield(L, -2, table);
}

void zg_lua_push_enums(lua_State *L)
{
    static const char *const tiers[] = {ZR_TIER_LIST(ZR_ENUM_NAME)};
    static const char *const memcats[] = {ZR_MEMCAT_LIST(ZR_ENUM_NAME)};
    static const char *const ops[] = {ZR_OP_LIST(ZR_ENUM_NAME)};
    static const char *const dtypes[] = {ZR_DTYPE_LIST(ZR_ENUM_NAME)};
    static const char *const modkinds[] = {ZR_MODKIND_LIST(ZR_ENUM_NAME)};
    static const char *const xfers[] = {ZR_XFER_LIST(ZR_ENUM_NAME)};
    static const char *const streams[] = {ZR_STREAM_LIST(ZR_ENUM_NAME)};
    static const char *const regions[] = {ZR_REGION_LIST(ZR_ENUM_NAME)};
    static const char *const region_families[] = {ZR_REGION_FAMILY_LIST(ZR_ENUM_NAME)};
    lua_createtable(L, 0, 10);
#define PUSH_NAMES(a) push_names(L, a, (int)(sizeof a / sizeof a[0]), #a)
    PUSH_NAMES(tiers); PUSH_NAMES(memcats); PUSH_NAMES(ops); PUSH_NAMES(dtypes);
    PUSH_NAMES(modkinds); PUSH_NAMES(xfers); PUSH_NAMES(streams); PUSH_NAMES(regions);
    PUSH_NAMES(region_families);
    /* enums.columns.<table>: runtime/zr_rows.h's columns in struct order, {name =, kind = "INT"} */
#define COLUMN_NAME(ctype, name, dims, kind, gen, what) {#name, #kind},
    static const char *const tensor[][2] = {ZR_TENSOR_COLUMNS(COLUMN_NAME)};
    static const char *const module[][2] = {ZR_MODULE_COLUMNS(COLUMN_NAME)};
    static const char *const bucket[][2] = {ZR_BUCKET_COLUMNS(COLUMN_NAME)};
    static const char *const gather[][2] = {ZR_GATHER_COLUMNS(COLUMN_NAME)};
    static const char *const subgroup[][2] = {ZR_SUBGROUP_COLUMNS(COLUMN_NAME)};
    static const char *const optimizer[][2] = {ZR_OPTIMIZER_COLUMNS(COLUMN_NAME)};
#undef COLUMN_NAME
    lua_createtable(L, 0, 6);
#define PUSH_COLUMNS(a) push_columns(L, a, (int)(sizeof a / sizeof a[0]), #a)
    PUSH_COLUMNS(tensor); PUSH_COLUMNS(module); PUSH_COLUMNS(bucket); PUSH_COLUMNS(gather);
    PUSH_COLUMNS(subgroup); PUSH_COLUMNS(optimizer);
#undef PUSH_COLUMNS
    lua_setfield(L, -2, "columns");
#undef PUSH_NAMES
}

void zg_lua_push_plan(lua_State *L, const ZgPlan *p)
{
    lua_createtable(L, 0, 32);
    push_model(L, p->model);
    SETS("cuda_missing", zg_cuda_missing(p));   /* the plan's, not only the arch's */
    SETS("cuda_adapter", zg_cuda_adapter_file(p, NULL));   /* its file name in cuda/trainer/ */
    lua_setfield(L, -2, "model");
    zg_lua_push_hf(L, p->model);       /* hf_config, hf_ignore */
    push_zero(L, p->zero); lua_setfield(L, -2, "zero");
    push_rows(L, p, p->n_tensors, push_tensor); lua_setfield(L, -2, "tensors");
    push_rows(L, p, p->n_modules, push_module); lua_setfield(L, -2, "modules");
    SETI("n_params", p->n_params); SETI("largest_layer", p->largest_layer);
    SETI("tied_tensor", p->tied_tensor);
    lua_createtable(L, 0, 7);
    SETI("ws", p->shard.ws); SETI("align", p->shard.align); SETI("flat_numel", p->shard.flat_numel);
    SETI("padded_numel", p->shard.padded_numel); SETI("part_numel", p->shard.part_numel);
    SETI("opt_numel", p->shard.opt_numel); SETI("persist_numel", p->shard.persist_numel);
    SETB("opt_replicated", p->shard.opt_replicated); SETI("opt_flat_stride", p->shard.opt_flat_stride);
    lua_setfield(L, -2, "shard");
    push_rows(L, p, p->n_buckets, push_bucket); lua_setfield(L, -2, "buckets");
    SETI("n_bucket_buffers", p->n_bucket_buffers); SETI("bucket_buffer_numel", p->bucket_buffer_numel);
    push_rows(L, p, p->n_gathers, push_gather); lua_setfield(L, -2, "gathers");
    SETI("n_gather_slots", p->n_gather_slots); SETI("gather_slot_numel", p->gather_slot_numel);
    push_rows(L, p, p->n_subgroups, push_subgroup); lua_setfield(L, -2, "subgroups");
    push_rows(L, p, p->optim ? p->n_subgroups : 0, push_optimizer); lua_setfield(L, -2, "optimizers");
    SETI("sg_align", p->sg_align); SETI("nvme_align", p->nvme_align);
    SETI("max_use_numel", p->max_use_numel);
    SETB("act_ckpt", p->act_ckpt);
    SETB("grad_nvme", p->grad_nvme);
    SETB("adam_device", p->adam_device);
    SETB("speculative", p->speculative);
    SETB("norm_fused", p->norm_fused);
    SETB("grad16", p->grad16);
    SETB("grad_acc_dev", p->grad_acc_dev);
    SETI("n_sg_dev", p->n_sg_dev); SETI("opt_dev_numel", p->opt_dev_numel); SETB("grad_keep", p->grad_keep);
    SETB("norm_dev_lanes", p->norm_dev_lanes); SETI("norm_block", p->norm_block);
    SETI("norm_lanes_sets", p->norm_lanes_sets);
    SETB("norm_adam", p->norm_adam); SETI("norm_pieces", p->norm_pieces);
    lua_createtable(L, 0, 4);
    push_ops(L, p->sched.micro, p->sched.n_micro); lua_setfield(L, -2, "micro");
    push_ops(L, p->sched.last, p->sched.n_last); lua_setfield(L, -2, "last");
    push_ops(L, p->sched.step, p->sched.n_step); lua_setfield(L, -2, "step");
    SETI("prefetch_depth", p->sched.prefetch_depth);
    lua_setfield(L, -2, "sched");
    push_mem(L, &p->mem); lua_setfield(L, -2, "mem");
    lua_createtable(L, 0, 5);
    SETI("net_bytes", p->cost.net_bytes); SETI("h2d_bytes", p->cost.h2d_bytes); SETI("d2h_bytes", p->cost.d2h_bytes);
    SETI("nvme_read_bytes", p->cost.nvme_read_bytes); SETI("nvme_write_bytes", p->cost.nvme_write_bytes);
    SETN("flops", p->cost.flops);
    lua_setfield(L, -2, "cost");
}

void zg_lua_push_gen(lua_State *L, const ZgGenInfo *g)
{
    lua_createtable(L, 0, 8);
    SETS("root", g->root); SETS("spec", g->spec); SETS("name", g->name);
    SETS("template", g->template_path); SETS("output", g->output);
    lua_createtable(L, g->n_outputs, 0);
    for (int i = 0; i < g->n_outputs; i++) {
        lua_pushstring(L, g->outputs[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "outputs");
    lua_newtable(L);
    int n = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        size_t len = strlen(g->outputs[i]);
        if (len > 2 && strcmp(g->outputs[i] + len - 2, ".c") == 0) {
            lua_pushstring(L, g->outputs[i]);
            lua_rawseti(L, -2, ++n);
        }
    }
    lua_setfield(L, -2, "sources");
}
/* }===================================================================== */

