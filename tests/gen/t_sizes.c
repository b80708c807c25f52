/*
** t_sizes.c — which sizing keys a DeepSpeed config sets (ZgZero.sizes_set, zero.c) and that the
** planner honours a set key even at DeepSpeed's default value while it sizes a key left out
** (issue 11): "auto" and absent keys are not set; aliases count as their key; each of the seven keys
** sets its own bit; a config that writes reduce_bucket_size 5e8 keeps one bucket of every gradient.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zt.h"

static void model(ZgModel *m)
{
    zg_model_defaults(m);
    m->name = "t";
    m->vocab_size = 8192; m->context = 128; m->d_model = 512; m->n_layers = 8; m->n_heads = 8;
    m->d_ff = 2048; m->seq_len = 128;
    zg_model_set_world_size(m, 4);
}

static unsigned load(const char *zo, ZgZero *z)
{
    ZgModel m;
    model(&m);
    char *text = zg_fmt("{\"train_batch_size\": 4, \"zero_optimization\": {%s}}", zo);
    zg_diag_reset();
    zg_diag_quiet(true);
    ZgNode *root = zg_node_load_string(text, "t.json");
    ZT_CHECK(root != NULL);
    if (!root) return ~0u;
    zg_zero_load_node(root, "t.json", &m, z);
    zg_check(&m, z);
    ZT_CHECKM(zg_error_count() == 0, "%s: %s", zo, zg_diag_log());
    return z->sizes_set;
}

static void t_bits(void)
{
    ZgZero z;
    ZT_EQ_INT(load("\"stage\": 3", &z), 0);
    ZT_EQ_INT(load("\"stage\": 3, \"reduce_bucket_size\": \"auto\"", &z), 0);
    ZT_EQ_INT(load("\"reduce_bucket_size\": 5e8", &z), ZG_SET_REDUCE_BUCKET);
    ZT_EQ_INT(load("\"stage\": 3, \"stage3_prefetch_bucket_size\": 5e7", &z), ZG_SET_PREFETCH);
    ZT_EQ_INT(load("\"stage\": 3, \"prefetch_bucket_size\": 1000", &z), ZG_SET_PREFETCH);   /* alias */
    ZT_EQ_INT(load("\"stage\": 3, \"stage3_max_live_parameters\": 1e9", &z), ZG_SET_MAX_LIVE);
    ZT_EQ_INT(load("\"stage\": 3, \"sub_group_size\": 1e9", &z), ZG_SET_SUB_GROUP);
    ZT_EQ_INT(load("\"stage\": 3, \"offload_param\": {\"device\": \"cpu\", \"buffer_count\": 5, "
                   "\"buffer_size\": 1e8}, \"offload_optimizer\": {\"device\": \"cpu\", \"buffer_count\": 4}", &z),
              ZG_SET_PARAM_BUF_COUNT | ZG_SET_PARAM_BUF_SIZE | ZG_SET_OPT_BUF_COUNT);
}

static ZgPlan *plan_of(const char *zo)
{
    ZgModel *m = calloc(1, sizeof *m);
    ZgZero *z = calloc(1, sizeof *z);
    model(m);
    load(zo, z);
    ZgPlan *p = calloc(1, sizeof *p);
    if (!zg_model_build(m, p) || !zg_plan_build(m, z, p)) return NULL;
    return p;
}

/* 8 layers of 12*512^2 + 13*512 = 3152384 parameters, the wte 8192*512; 29479936 in all */
static void t_honoured(void)
{
    ZgPlan *left = plan_of("\"stage\": 2"), *set = plan_of("\"stage\": 2, \"reduce_bucket_size\": 5e8");
    ZT_CHECK(left && set);
    if (!left || !set) return;
    ZT_EQ_INT(left->reduce_bucket_cap, 3152384);
    ZT_EQ_INT(left->bucket_buffer_numel, 8192 * 512);
    ZT_EQ_INT(set->reduce_bucket_cap, 500000000);
    ZT_EQ_INT(set->bucket_buffer_numel, 29479936);
    ZT_EQ_INT(set->n_buckets, 1);
    ZgPlan *s3 = plan_of("\"stage\": 3, \"stage3_max_live_parameters\": 1e9");
    ZT_CHECK(s3 != NULL);
    if (!s3) return;
    /* live set by the user: prefetch stays DeepSpeed's 5e7 (depth 11, 12 slots), not two slots */
    ZT_EQ_INT(s3->n_gather_slots, 12);
    ZT_CHECK(!(s3->sized_auto & ZG_SET_PREFETCH) && (s3->sized_auto & ZG_SET_REDUCE_BUCKET));
}

int main(void)
{
    ZT_RUN(t_bits);
    ZT_RUN(t_honoured);
    return zt_end();
}
