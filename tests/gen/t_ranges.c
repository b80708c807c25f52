/*
** t_ranges.c — DeepSpeed's value ranges (issue 13): every size and threshold DeepSpeed's config model
** takes with ge=0 is accepted at 0 and at its maximum, and 0 is planned with DeepSpeed's meaning
** (a reduce bucket of 0 reduces tensor by tensor, a prefetch bucket of 0 or max_live_parameters of 0
** prefetches nothing, a persistence threshold of 0 persists nothing); the `compile` section is
** recognised; bias_correction: false is accepted and kept; the batch bound sits exactly at INT_MAX.
** Expected values are DeepSpeed's documented meanings, written out here, not read from zgen.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zt.h"

static ZgModel model(int ws)
{
    ZgModel m;
    zg_model_defaults(&m);
    m.name = "t";
    m.vocab_size = 97, m.context = 16, m.d_model = 24, m.n_layers = 3, m.n_heads = 2, m.d_ff = 96;
    m.seq_len = 16;
    zg_model_set_world_size(&m, ws);
    return m;
}

/* Loads a config text and runs zg_check; returns the number of errors (messages kept quietly). */
static int load(const char *text, const ZgModel *m, ZgZero *z)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    ZgNode *root = zg_node_load_string(text, "t.json");
    if (!root) return -1;
    zg_zero_load_node(root, "t.json", m, z);
    zg_check(m, z);
    return zg_error_count();
}

/* Plans `zo` (the body of zero_optimization) at world size 2; NULL after an error. */
static ZgPlan *plan_zero(const char *zo, ZgModel *m, ZgZero *z)
{
    *m = model(2);
    char *cfg = zg_fmt("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {%s}}", zo);
    int errs = load(cfg, m, z);
    ZT_CHECKM(errs == 0, "%s: %d errors:\n%s", zo, errs, zg_diag_log());
    free(cfg);
    if (errs) return NULL;
    ZgPlan *p = calloc(1, sizeof *p);
    if (!zg_model_build(m, p) || !zg_plan_build(m, z, p)) {
        ZT_CHECKM(0, "%s: not planned:\n%s", zo, zg_diag_log());
        return NULL;
    }
    return p;
}

/* Every ge=0 key of DeepSpeed's models at 0 and at a large value: accepted. */
static void t_zero_and_max_accepted(void)
{
    static const char *const zero_keys[] = {
        "\"reduce_bucket_size\": 0", "\"allgather_bucket_size\": 0", "\"sub_group_size\": 0",
        "\"stage3_prefetch_bucket_size\": 0", "\"stage3_param_persistence_threshold\": 0",
        "\"stage3_model_persistence_threshold\": 0", "\"stage3_max_live_parameters\": 0",
        "\"stage3_max_reuse_distance\": 0",
        "\"offload_param\": {\"device\": \"cpu\", \"buffer_count\": 0, \"buffer_size\": 0, \"max_in_cpu\": 0}",
        "\"offload_optimizer\": {\"device\": \"cpu\", \"buffer_count\": 0}",
        "\"reduce_bucket_size\": 1e18", "\"allgather_bucket_size\": 1e18", "\"sub_group_size\": 1e18",
        "\"stage3_prefetch_bucket_size\": 1e18", "\"stage3_param_persistence_threshold\": 1e18",
        "\"stage3_model_persistence_threshold\": 9223372036854775807", "\"stage3_max_live_parameters\": 1e18",
        "\"sub_group_size\": 1",
    };
    for (size_t i = 0; i < sizeof zero_keys / sizeof *zero_keys; i++) {
        ZgModel m;
        ZgZero z;
        char *zo = zg_fmt("\"stage\": 3, %s", zero_keys[i]);
        plan_zero(zo, &m, &z);
        free(zo);
    }
    /* optimizer and scheduler: 0 where torch and DeepSpeed take 0, no upper bound of zgen's own */
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"AdamW\", \"params\": "
                   "{\"lr\": 0, \"eps\": 0, \"weight_decay\": 100, \"betas\": [0, 0.999999]}}, \"scheduler\": "
                   "{\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": -5, \"total_num_steps\": 0, "
                   "\"warmup_max_lr\": 50}}}", &m, &z), 0);
    ZT_EQ_INT(z.warmup_num_steps, 2);           /* DeepSpeed's max(2, n) */
}

/* every tensor gathered (the test model's tensors are all below DeepSpeed's default threshold) */
#define NOPERSIST "\"stage3_param_persistence_threshold\": 0"

/* 0 means what DeepSpeed makes of it. */
static void t_zero_meanings(void)
{
    ZgModel m;
    ZgZero z;
    for (int stage = 1; stage <= 3; stage++) {
        char *zo = zg_fmt("\"stage\": %d, \"reduce_bucket_size\": 0", stage);
        ZgPlan *p = plan_zero(zo, &m, &z);
        free(zo);
        if (!p) continue;
        /* DeepSpeed reduces as soon as the bucket would exceed 0 elements: one tensor per bucket */
        ZT_EQ_INT(p->n_buckets, p->n_tensors);
        for (int k = 0; k < p->n_buckets; k++) ZT_EQ_INT(p->buckets[k].n_tensors, 1);
    }
    ZgPlan *p = plan_zero("\"stage\": 3, \"reduce_bucket_size\": 1e18", &m, &z);
    if (p) ZT_EQ_INT(p->n_buckets, 1);
    /* nothing prefetched: a prefetch bucket of 0, or no parameters allowed to stay live */
    p = plan_zero("\"stage\": 3, \"stage3_prefetch_bucket_size\": 0, " NOPERSIST, &m, &z);
    if (p) ZT_EQ_INT(p->sched.prefetch_depth, 0);
    p = plan_zero("\"stage\": 3, \"stage3_max_live_parameters\": 0, " NOPERSIST, &m, &z);
    if (p) ZT_EQ_INT(p->sched.prefetch_depth, 0);
    p = plan_zero("\"stage\": 3, \"stage3_prefetch_bucket_size\": 1e18, " NOPERSIST, &m, &z);
    if (p) ZT_CHECKM(p->sched.prefetch_depth >= 1, "depth %d", p->sched.prefetch_depth);
    /* nothing persists: a parameter threshold of 0, or a model budget of 0 */
    static const char *const none[] = {"\"stage3_param_persistence_threshold\": 0",
                                       "\"stage3_param_persistence_threshold\": 1e18, "
                                       "\"stage3_model_persistence_threshold\": 0"};
    for (int c = 0; c < 2; c++) {
        char *zo = zg_fmt("\"stage\": 3, %s", none[c]);
        p = plan_zero(zo, &m, &z);
        free(zo);
        for (int i = 0; p && i < p->n_tensors; i++) ZT_CHECK(!p->tensors[i].persistent);
    }
    /* everything persists with both unbounded */
    p = plan_zero("\"stage\": 3, \"stage3_param_persistence_threshold\": 1e18", &m, &z);
    for (int i = 0; p && i < p->n_tensors; i++) ZT_CHECK(p->tensors[i].persistent);
    /* a sub-group size of 0 or 1: the smallest sub-groups zgen plans (sg_align elements, equal slices;
    ** DeepSpeed makes one per tensor); the maximum: one sub-group */
    for (int v = 0; v <= 1; v++) {
        char *zo = zg_fmt("\"stage\": 3, \"sub_group_size\": %d", v);
        p = plan_zero(zo, &m, &z);
        free(zo);
        if (!p) continue;
        ZT_CHECK(p->n_subgroups > 1);
        ZT_EQ_INT(p->subgroups[0].numel, p->sg_align);
    }
    p = plan_zero("\"stage\": 3, \"sub_group_size\": 1e18", &m, &z);
    if (p) ZT_EQ_INT(p->n_subgroups, 1);
}

/* compile: recognised; deepcompile is a note (a warning, no error), free_activation is ignored with a
** warning, graph-input keys are silent, offload keys and passes are errors naming where to plan it. */
static void t_compile_section(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"deepcompile\": true}}", &m, &z), 0);
    ZT_EQ_INT(zg_warn_count(), 1);
    ZT_CHECK(zg_diag_count_matching("nothing to turn on", 0) == 1);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"deepcompile\": false, "
                   "\"keep_int_input_tensors\": false, \"dp_size\": 2, \"passes\": null}}", &m, &z), 0);
    ZT_EQ_INT(zg_warn_count(), 0);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"free_activation\": true, "
                   "\"sync_before_reduce\": true}}", &m, &z), 0);
    ZT_EQ_INT(zg_warn_count(), 2);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"offload_opt_states\": true}}", &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("zero_optimization.offload_optimizer", 1) == 1);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"sp_size\": 4}}", &m, &z), 1);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"compile\": {\"deepcompil\": true}}", &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("did you mean 'deepcompile'", 1) == 1);
}

/* Keys of DeepSpeed's current ZeRO models beyond docs/CONFIG.md's table are recognised. */
static void t_current_keys(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, "
                   "\"stage3_partition_stream_chunk_size\": 1000, \"leaf_module\": {\"classes\": []}, "
                   "\"zenflow\": null, \"offload_optimizer\": {\"device\": \"cpu\", \"convert_grad_on_cpu\": false}}}",
                   &m, &z), 0);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, "
                   "\"zenflow\": {\"topk_ratio\": 0.1}}}", &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("ZenFlow", 1) == 1);
}

static void t_bias_correction(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1}", &m, &z), 0);
    ZT_CHECK(z.bias_correction == true);                     /* DeepSpeed's default */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"Adam\", \"params\": "
                   "{\"bias_correction\": false}}}", &m, &z), 0);
    ZT_CHECK(z.bias_correction == false);
    ZT_EQ_INT(zg_warn_count(), 0);
}

/* The batch bound is the trainer's int: 2^31 - 1 sequences pass, 2^31 do not; no product overflows. */
static void t_batch_edges(void)
{
    ZgModel m = model(1);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 2147483647}", &m, &z), 0);
    ZT_EQ_INT(z.train_batch_size, 2147483647);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 1073741824}", &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("exceeds 2147483647", 1) == 1);
    ZT_EQ_INT(load("{\"train_batch_size\": 9e18, \"train_micro_batch_size_per_gpu\": 9e18, "
                   "\"gradient_accumulation_steps\": 9e18}", &m, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("does not fit in 64 bits", 0) == 1, "%s", zg_diag_log());
    m = model(1 << 20);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1e18}", &m, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("does not fit in 64 bits", 1) == 1, "%s", zg_diag_log());
}

int main(void)
{
    ZT_RUN(t_zero_and_max_accepted);
    ZT_RUN(t_zero_meanings);
    ZT_RUN(t_compile_section);
    ZT_RUN(t_current_keys);
    ZT_RUN(t_bias_correction);
    ZT_RUN(t_batch_edges);
    return zt_end();
}
