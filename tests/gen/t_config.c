/*
** t_config.c — the DeepSpeed config front end: defaults equal DeepSpeed's code defaults (the
** expected values below are docs/CONFIG.md's, written out by hand), keys take effect, the batch
** triple is derived on every branch of DeepSpeed's rule, "auto" is filled as documented, and the
** helpers (sizes, numbers, edit distance, JSON through the YAML parser) behave.
*/
#include <unistd.h>
#include "zg.h"
#include "zt.h"

/* A model with the train.* values "auto" may take; world size ws. */
static ZgModel model(int ws)
{
    ZgModel m;
    zg_model_defaults(&m);
    m.name = "t";
    m.vocab_size = 256, m.context = 128, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.d_ff = 256;
    m.seq_len = 128;
    zg_model_set_world_size(&m, ws);
    return m;
}

/* Loads a config text (JSON or YAML) and runs zg_check; returns the number of errors. */
static int load(const char *text, const ZgModel *m, ZgZero *z)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    ZgNode *root = zg_node_load_string(text, "t.json");
    if (root) zg_zero_load_node(root, "t.json", m, z);
    else zg_zero_defaults(z);
    if (root) zg_check(m, z);
    return zg_error_count();
}

static void t_defaults_are_deepspeeds(void)
{
    ZgZero z;
    zg_zero_defaults(&z);
    /* zero_optimization (deepspeed/runtime/zero/config.py) */
    ZT_EQ_INT(z.stage, 0);
    ZT_CHECK(z.contiguous_gradients == true);
    ZT_CHECK(z.reduce_scatter == true);
    ZT_EQ_INT(z.reduce_bucket_size, 500000000);
    ZT_EQ_INT(z.allgather_bucket_size, 500000000);
    ZT_CHECK(z.overlap_comm == false);               /* stage 0; true for stage 3 (below) */
    ZT_EQ_INT(z.sub_group_size, 1000000000);
    ZT_EQ_INT(z.prefetch_bucket_size, 50000000);     /* the code's 5e7, not the docs' 5e8 */
    ZT_EQ_INT(z.param_persistence_threshold, 100000);
    ZT_EQ_INT(z.model_persistence_threshold, 9223372036854775807LL);   /* sys.maxsize */
    ZT_EQ_INT(z.max_live_parameters, 1000000000);
    ZT_EQ_INT(z.max_reuse_distance, 1000000000);
    /* offload configs: device none (docs say cpu), pin_memory true since #8207 */
    ZT_EQ_INT(z.offload_param.device, ZG_OFFLOAD_NONE);
    ZT_CHECK(z.offload_param.pin_memory == true);
    ZT_EQ_INT(z.offload_param.buffer_count, 5);
    ZT_EQ_INT(z.offload_param.buffer_size, 100000000);
    ZT_EQ_INT(z.offload_param.max_in_cpu, 1000000000);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_NONE);
    ZT_CHECK(z.offload_optimizer.pin_memory == true);
    ZT_EQ_INT(z.offload_optimizer.buffer_count, 4);
    ZT_CHECK(!z.offload_optimizer.pipeline_read && !z.offload_optimizer.pipeline_write);
    ZT_NEAR(z.offload_optimizer.ratio, 1.0, 0, 0);
    /* aio */
    ZT_EQ_INT(z.aio_block_size, 1048576);
    ZT_EQ_INT(z.aio_queue_depth, 8);
    ZT_EQ_INT(z.aio_intra_op_parallelism, 1);
    ZT_CHECK(z.aio_single_submit == false);
    ZT_CHECK(z.aio_overlap_events == true);
    /* precision: fp16 dynamic scaler defaults; no mixed precision unless enabled */
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP32);
    ZT_NEAR(z.loss_scale, 0, 0, 0);
    ZT_EQ_INT(z.initial_scale_power, 16);
    ZT_EQ_INT(z.loss_scale_window, 1000);
    ZT_EQ_INT(z.hysteresis, 2);
    ZT_CHECK(z.consecutive_hysteresis == false);
    ZT_NEAR(z.min_loss_scale, 1, 0, 0);
    ZT_NEAR(z.gradient_clipping, 1.0, 0, 0);         /* #8068: 1.0, previously 0 */
    /* Adam: adam_w_mode true; torch/FusedAdam defaults */
    ZT_CHECK(z.adam_w_mode == true);
    ZT_NEAR(z.beta1, 0.9, 0, 0);
    ZT_NEAR(z.beta2, 0.999, 0, 0);
    ZT_NEAR(z.eps, 1e-8, 0, 0);
    ZT_NEAR(z.weight_decay, 0, 0, 0);
    ZT_NEAR(z.lr, 1e-3, 0, 0);
    /* schedules: WarmupLR(min 0, steps 1000, log), WarmupCosineLR(cos_min_ratio 1e-4, warmup_min_ratio 0) */
    ZT_EQ_INT(z.sched, ZG_SCHED_NONE);
    ZT_NEAR(z.warmup_min_lr, 0, 0, 0);
    ZT_EQ_INT(z.warmup_num_steps, 1000);
    ZT_CHECK(z.warmup_linear == false);
    ZT_NEAR(z.cos_min_ratio, 1e-4, 0, 0);
    ZT_NEAR(z.warmup_min_ratio, 0, 0, 0);
}

static void t_stage_dependent_defaults(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3}}", &m, &z), 0);
    ZT_CHECK(z.overlap_comm == true);                /* None -> true for stage 3 */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 2}}", &m, &z), 0);
    ZT_CHECK(z.overlap_comm == false);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, \"overlap_comm\": false}}", &m, &z), 0);
    ZT_CHECK(z.overlap_comm == false);
}

static void t_keys_take_effect(void)
{
    ZgModel m = model(4);
    ZgZero z;
    int e = load("train_micro_batch_size_per_gpu: 2\n"
                 "gradient_clipping: 0.5\n"
                 "zero_optimization:\n"
                 "  stage: 3\n"
                 "  reduce_bucket_size: 1e5\n"
                 "  stage3_prefetch_bucket_size: 2e4\n"
                 "  param_persistence_threshold: 100\n"       /* the pydantic field name */
                 "  sub_group_size: 3e6\n"
                 "  offload_param: {device: cpu, pin_memory: false, buffer_count: 6}\n"
                 "  offload_optimizer: {device: nvme, nvme_path: /mnt/nvme0, pipeline_read: true}\n"
                 "aio: {block_size: 262144, queue_depth: 32, intra_op_parallelism: 4, single_submit: true}\n"
                 "bfloat16: {enabled: true}\n"
                 "optimizer: {type: Adam, params: {lr: 3e-4, betas: [0.8, 0.95], eps: 1e-6, weight_decay: 0.05, adam_w_mode: false}}\n"
                 "scheduler: {type: WarmupCosineLR, params: {total_num_steps: 500, warmup_num_steps: 50, cos_min_ratio: 0.1, warmup_type: linear}}\n",
                 &m, &z);
    ZT_CHECKM(e == 0, "%s", zg_diag_log());
    ZT_EQ_INT(z.stage, 3);
    ZT_NEAR(z.gradient_clipping, 0.5, 0, 0);
    ZT_EQ_INT(z.reduce_bucket_size, 100000);
    ZT_EQ_INT(z.prefetch_bucket_size, 20000);
    ZT_EQ_INT(z.param_persistence_threshold, 100);
    ZT_EQ_INT(z.sub_group_size, 3000000);
    ZT_EQ_INT(z.offload_param.device, ZG_OFFLOAD_CPU);
    ZT_CHECK(z.offload_param.pin_memory == false);
    ZT_EQ_INT(z.offload_param.buffer_count, 6);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_NVME);
    ZT_EQ_STR(z.offload_optimizer.nvme_path, "/mnt/nvme0");
    ZT_CHECK(z.offload_optimizer.pipeline_read == true);
    ZT_EQ_INT(z.aio_block_size, 262144);
    ZT_EQ_INT(z.aio_queue_depth, 32);
    ZT_EQ_INT(z.aio_intra_op_parallelism, 4);
    ZT_CHECK(z.aio_single_submit == true);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_BF16);               /* bfloat16 is bf16's other name */
    ZT_EQ_STR(z.optimizer, "adam");
    ZT_CHECK(z.adam_w_mode == false);
    ZT_NEAR(z.lr, 3e-4, 0, 1e-15);
    ZT_NEAR(z.beta1, 0.8, 0, 0);
    ZT_NEAR(z.beta2, 0.95, 0, 0);
    ZT_NEAR(z.eps, 1e-6, 0, 0);
    ZT_NEAR(z.weight_decay, 0.05, 0, 0);
    ZT_EQ_INT(z.sched, ZG_SCHED_WARMUP_COSINE);
    ZT_EQ_INT(z.total_num_steps, 500);
    ZT_EQ_INT(z.warmup_num_steps, 50);
    ZT_NEAR(z.cos_min_ratio, 0.1, 0, 0);
    ZT_CHECK(z.warmup_linear == true);
    ZT_EQ_INT(z.train_batch_size, 8);
    /* fp16 section */
    e = load("{\"train_batch_size\": 8, \"fp16\": {\"enabled\": true, \"loss_scale\": 128, \"initial_scale_power\": 12,"
             " \"loss_scale_window\": 500, \"hysteresis\": 1, \"consecutive_hysteresis\": true, \"min_loss_scale\": 0.5}}", &m, &z);
    ZT_CHECKM(e == 0, "%s", zg_diag_log());
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP16);
    ZT_NEAR(z.loss_scale, 128, 0, 0);
    ZT_EQ_INT(z.initial_scale_power, 12);
    ZT_EQ_INT(z.loss_scale_window, 500);
    ZT_EQ_INT(z.hysteresis, 1);
    ZT_CHECK(z.consecutive_hysteresis);
    ZT_NEAR(z.min_loss_scale, 0.5, 0, 0);
    /* "AdamW" is always decoupled; optimizer type is case-insensitive as in DeepSpeed */
    e = load("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"ADAMW\", \"params\": {\"adam_w_mode\": false}}}", &m, &z);
    ZT_CHECKM(e == 0, "%s", zg_diag_log());
    ZT_EQ_STR(z.optimizer, "adamw");
    ZT_CHECK(z.adam_w_mode == true);
}

/* DeepSpeed's _set_batch_related_parameters, every branch, at world size 4. */
static void t_batch_derivation(void)
{
    ZgModel m = model(4);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 4}", &m, &z), 0);
    ZT_EQ_INT(z.grad_accum, 4);                      /* 64 // 4 // 4 */
    ZT_EQ_INT(load("{\"train_batch_size\": 64, \"gradient_accumulation_steps\": 2}", &m, &z), 0);
    ZT_EQ_INT(z.micro_batch, 8);                     /* 64 // 4 // 2 */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 3, \"gradient_accumulation_steps\": 5}", &m, &z), 0);
    ZT_EQ_INT(z.train_batch_size, 60);               /* 3 * 5 * 4 */
    ZT_EQ_INT(load("{\"train_batch_size\": 32}", &m, &z), 0);
    ZT_EQ_INT(z.grad_accum, 1);
    ZT_EQ_INT(z.micro_batch, 8);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 6}", &m, &z), 0);
    ZT_EQ_INT(z.grad_accum, 1);
    ZT_EQ_INT(z.train_batch_size, 24);
    ZT_EQ_INT(load("{\"train_batch_size\": 48, \"train_micro_batch_size_per_gpu\": 3, \"gradient_accumulation_steps\": 4}", &m, &z), 0);
    ZT_EQ_INT(z.train_batch_size, 48);
    /* none: error */
    ZT_EQ_INT(load("{\"gradient_clipping\": 1.0}", &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("neither train_batch_size", 1) == 1);
    /* inconsistent: the arithmetic is shown */
    ZT_EQ_INT(load("{\"train_batch_size\": 50, \"train_micro_batch_size_per_gpu\": 3, \"gradient_accumulation_steps\": 4}", &m, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("x world size 4 = 48", 1) == 1, "%s", zg_diag_log());
    /* tb + mb not divisible: gas = 50 // 3 // 4 = 4, 3*4*4 = 48 != 50 */
    ZT_EQ_INT(load("{\"train_batch_size\": 50, \"train_micro_batch_size_per_gpu\": 3}", &m, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("= 48", 1) == 1, "%s", zg_diag_log());
    /* a batch smaller than one sample per rank */
    ZT_EQ_INT(load("{\"train_batch_size\": 2}", &m, &z), 1);
    /* --world-size changes the derivation: the same config at world size 8 */
    ZgModel m8 = model(8);
    ZT_EQ_INT(load("{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 4}", &m8, &z), 0);
    ZT_EQ_INT(z.grad_accum, 2);
    ZT_EQ_INT(m8.gpus_per_node, 8);
    ZgModel m16 = model(16);
    ZT_EQ_INT(m16.gpus_per_node, 8);                 /* default min(world_size, 8) */
    ZT_EQ_INT(m.gpus_per_node, 4);
}

static void t_auto(void)
{
    ZgModel m = model(2);
    ZgZero z;
    /* the sizing keys HF derives from the hidden size: zgen sizes the buckets and the prefetch
    ** itself (the stored value stays DeepSpeed's, unset), and takes HF's 10 x d_model (64) for the
    ** persistence threshold; tests/gen/t_auto.c has the rest */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": \"auto\","
                   " \"stage3_prefetch_bucket_size\": \"auto\", \"stage3_param_persistence_threshold\": \"auto\"}}", &m, &z), 0);
    ZT_EQ_INT(z.reduce_bucket_size, 500000000);
    ZT_EQ_INT(z.prefetch_bucket_size, 50000000);
    ZT_CHECK(!(z.sizes_set & (ZG_SET_REDUCE_BUCKET | ZG_SET_PREFETCH)));
    ZT_EQ_INT(z.param_persistence_threshold, 640);
    /* unquoted auto (YAML) is the same */
    ZT_EQ_INT(load("train_micro_batch_size_per_gpu: 1\ngradient_clipping: auto\n", &m, &z), 0);
    ZT_NEAR(z.gradient_clipping, 1.0, 0, 0);
    /* batch and lr from the spec */
    m.train_micro_batch = 5;
    m.train_grad_accum = 3;
    m.train_lr = 2.5e-4;
    const char *hf = "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\","
                     " \"gradient_accumulation_steps\": \"auto\", \"optimizer\": {\"type\": \"AdamW\","
                     " \"params\": {\"lr\": \"auto\", \"betas\": \"auto\", \"weight_decay\": \"auto\"}},"
                     " \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_max_lr\": \"auto\", \"warmup_num_steps\": 10}}}";
    ZT_CHECKM(load(hf, &m, &z) == 0, "%s", zg_diag_log());
    ZT_EQ_INT(z.micro_batch, 5);
    ZT_EQ_INT(z.grad_accum, 3);
    ZT_EQ_INT(z.train_batch_size, 30);               /* HF: micro x accumulation x world size */
    ZT_NEAR(z.lr, 2.5e-4, 0, 1e-15);
    ZT_NEAR(z.warmup_max_lr, 2.5e-4, 0, 1e-15);      /* WarmupLR peaks at the optimizer's lr */
    ZT_NEAR(z.beta2, 0.999, 0, 0);
    /* the spec's train.batch_size fills train_batch_size "auto" and must agree */
    m.train_batch = 40;
    ZT_EQ_INT(load(hf, &m, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("train_batch_size 40 !=", 0) == 1, "%s", zg_diag_log());
    /* train.grad_accum absent: HF's default accumulation 1 */
    m.train_batch = 0;
    m.train_grad_accum = 0;
    ZT_EQ_INT(load(hf, &m, &z), 0);
    ZT_EQ_INT(z.grad_accum, 1);
    ZT_EQ_INT(z.train_batch_size, 10);
    /* lr absent from the config's params: the spec's train.lr is used */
    ZT_EQ_INT(load("{\"train_batch_size\": 2, \"optimizer\": {\"type\": \"Adam\", \"params\": {}}}", &m, &z), 0);
    ZT_NEAR(z.lr, 2.5e-4, 0, 1e-15);
    /* no spec value for an "auto" that needs one: the error names the spec key */
    ZgModel bare = model(2);
    ZT_EQ_INT(load(hf, &bare, &z), 2);
    ZT_CHECK(zg_diag_count_matching("add train.micro_batch_size to the spec", 1) == 1);
    ZT_CHECK(zg_diag_count_matching("add train.lr to the spec", 1) == 1);
}

static void t_warnings_not_errors(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_batch_size\": 2, \"aio\": {\"thread_count\": 4}, \"tensorboard\": {\"enabled\": true},"
                   " \"zero_optimization\": {\"stage\": 2, \"cpu_offload\": true}, \"wandb\": {\"enabled\": false}}", &m, &z), 0);
    ZT_EQ_INT(zg_warn_count(), 3);                   /* thread_count, tensorboard, cpu_offload (wandb off) */
    ZT_CHECK(zg_diag_count_matching("DeepSpeed ignores it too", 1) == 1);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_CPU);   /* the deprecated key still takes effect */
    /* WarmupLR's warmup_num_steps is raised to 2 like DeepSpeed's max(2, n) */
    ZT_EQ_INT(load("{\"train_batch_size\": 2, \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": 1}}}", &m, &z), 0);
    ZT_EQ_INT(z.warmup_num_steps, 2);
    ZT_EQ_INT(zg_warn_count(), 1);
    /* recognised keys equal to DeepSpeed's default need no warning */
    ZT_EQ_INT(load("{\"train_batch_size\": 2, \"prescale_gradients\": false, \"zero_optimization\": {\"stage\": 1,"
                   " \"zero_quantized_weights\": false, \"mics_shard_size\": -1, \"round_robin_gradients\": false}}", &m, &z), 0);
    ZT_EQ_INT(zg_warn_count(), 0);
}

static void t_json_through_yaml(void)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    ZgNode *n = zg_node_load_string("{\"a\": {\"b\": [1, 2, {\"c\": true}], \"d\": false},\n \"e\": 5e8, \"f\": 1e-5, \"g\": \"s\", \"h\": null}", "x.json");
    ZT_CHECK(n && n->kind == ZG_NMAP && n->n == 5);
    if (!n) return;
    const ZgNode *a = zg_node_get(n, "a"), *b = zg_node_get(a, "b");
    ZT_CHECK(a->kind == ZG_NMAP && b->kind == ZG_NSEQ && b->n == 3);
    ZT_CHECK(b->vals[2]->kind == ZG_NMAP && !strcmp(zg_node_get(b->vals[2], "c")->scalar, "true"));
    bool v;
    ZT_CHECK(zg_node_bool(zg_node_get(a, "d"), "d", &v) && v == false);
    int64_t i;
    ZT_CHECK(zg_node_int(zg_node_get(n, "e"), "e", 0, INT64_MAX, &i) && i == 500000000);
    double d;
    ZT_CHECK(zg_node_num(zg_node_get(n, "f"), "f", 0, 1, &d) && d == 1e-5);
    ZT_CHECK(zg_node_get(n, "g")->quoted && !zg_node_get(n, "e")->quoted);
    ZT_CHECK(zg_node_is_null(zg_node_get(n, "h")));
    ZT_EQ_INT(zg_node_get(n, "e")->loc.line, 2);
    ZT_EQ_INT(zg_node_get(n, "e")->loc.col, 7);
    ZT_EQ_INT(n->key_locs[1].col, 2);
    ZT_EQ_INT(zg_error_count(), 0);
    /* tabs and no space after ':' as JSON allows */
    n = zg_node_load_string("{\n\t\"a\":1,\n\t\"b\":[true,false]\n}\n", "t.json");
    ZT_CHECK(n && n->n == 2 && n->key_locs[1].line == 3);
    ZT_CHECK(zg_node_load_string("", "empty.json") == NULL);
    ZT_CHECK(zg_diag_count_matching("empty", 1) == 1);
}

static void t_numbers_and_sizes(void)
{
    int64_t x = 0;
    ZT_CHECK(zg_parse_size("80GiB", &x) && x == 85899345920LL);
    ZT_CHECK(zg_parse_size("512GB", &x) && x == 512000000000LL);
    ZT_CHECK(zg_parse_size("1.5e9", &x) && x == 1500000000LL);
    ZT_CHECK(zg_parse_size("1024", &x) && x == 1024);
    ZT_CHECK(zg_parse_size("1.5KiB", &x) && x == 1536);
    ZT_CHECK(zg_parse_size("2 TiB", &x) && x == 2199023255552LL);
    ZT_CHECK(zg_parse_size("1.5TB", &x) && x == 1500000000000LL);
    ZT_CHECK(zg_parse_size("64gib", &x) && x == 68719476736LL);
    ZT_CHECK(zg_parse_size("9223372036854775807", &x) && x == INT64_MAX);
    ZT_CHECK(!zg_parse_size("80G", &x));             /* ambiguous: GB or GiB? */
    ZT_CHECK(!zg_parse_size("-1GB", &x));
    ZT_CHECK(!zg_parse_size("1.5", &x));             /* half a byte */
    ZT_CHECK(!zg_parse_size("abc", &x));
    ZT_CHECK(!zg_parse_size("1e30", &x));
    ZT_CHECK(!zg_parse_size("", &x));
    ZT_CHECK(!zg_parse_size("9223372036854775808", &x));
    ZT_CHECK(zg_parse_int64("5e8", &x) && x == 500000000);
    ZT_CHECK(zg_parse_int64("-3", &x) && x == -3);
    ZT_CHECK(!zg_parse_int64("1.5", &x));
    ZT_CHECK(!zg_parse_int64("0x10", &x));
    ZT_CHECK(!zg_parse_int64("1e19", &x));
    double d;
    ZT_CHECK(zg_parse_double("1.0e-5", &d) && d == 1e-5);
    ZT_CHECK(!zg_parse_double("nan", &d) && !zg_parse_double("inf", &d) && !zg_parse_double("1e999", &d));
}

static void t_edit_distance(void)
{
    ZT_EQ_INT(zg_edit_distance("kitten", "sitting"), 3);
    ZT_EQ_INT(zg_edit_distance("", "abc"), 3);
    ZT_EQ_INT(zg_edit_distance("Stage", "stage"), 0);   /* case-insensitive */
    ZT_EQ_INT(zg_edit_distance("reduce_bucket_sise", "reduce_bucket_size"), 1);
    ZT_EQ_INT(zg_edit_distance("flaw", "lawn"), 2);
    const char *c[] = {"offload_param", "offload_optimizer", "stage"};
    ZT_EQ_STR(zg_suggest("offload_parm", c, 3), "offload_param");
    ZT_EQ_STR(zg_suggest("offload_optim", c, 3), "offload_optimizer");   /* truncated */
    ZT_CHECK(zg_suggest("tensorboard", c, 3) == NULL);
}

static void t_spec_defaults(void)
{
    ZgModel m;
    zg_diag_reset();
    zg_diag_quiet(true);
    FILE *f = fopen("out/t_config_spec.yaml", "w");
    if (!f) {
        ZT_CHECK(system("mkdir -p out") == 0);
        f = fopen("out/t_config_spec.yaml", "w");
    }
    ZT_CHECK(f != NULL);
    if (!f) return;
    fputs("name: d\nmodel: {arch: gpt2, vocab_size: 100, context: 64, d_model: 32, n_layers: 1, n_heads: 2}\n", f);
    fclose(f);
    const ZgNode *ds = zg_spec_load("out/t_config_spec.yaml", &m);
    ZT_CHECKM(zg_error_count() == 0, "%s", zg_diag_log());
    ZT_CHECK(ds == NULL);
    ZT_EQ_INT(m.d_ff, 128);                          /* 4 * d_model */
    ZT_NEAR(m.norm_eps, 1e-5, 0, 0);
    ZT_CHECK(m.tie_embeddings);
    ZT_EQ_INT(m.seq_len, 64);                        /* = context */
    ZT_EQ_INT(m.world_size, 1);
    ZT_EQ_INT((long long)m.seed, 1234);
    ZT_EQ_INT(m.gpus_per_node, 1);
    ZT_EQ_INT(m.device_memory, 0);
    ZT_EQ_INT(m.train_micro_batch, 0);
    remove("out/t_config_spec.yaml");
}

static void t_path_sanity(void)
{
    ZT_CHECK(zg_path_is_sane("/local_nvme"));
    ZT_CHECK(zg_path_is_sane("out/nvme"));
    ZT_CHECK(zg_path_is_sane("../configs/a-b_c.json"));
    ZT_CHECK(!zg_path_is_sane(""));
    ZT_CHECK(!zg_path_is_sane("/a\nb"));
    ZT_CHECK(!zg_path_is_sane("/a\"b"));
    ZT_CHECK(!zg_path_is_sane("/a'b"));
    ZT_CHECK(!zg_path_is_sane("/a b"));
    ZT_CHECK(!zg_path_is_sane("$HOME/x"));
    ZT_CHECK(!zg_path_is_sane("a\\b"));
    ZT_CHECK(!zg_path_is_sane("a`id`"));
}

/* nvme_path judged at generation time (issue 13): a dangling link, a regular file, /proc are refused
** with the key's line; a directory, a path that does not exist yet (the trainer creates it) and a
** relative path (the trainer's working directory decides) are accepted. */
static int nvme_errors(const char *path, const char *frag)
{
    ZgModel m = model(2);
    ZgZero z;
    char *cfg = zg_fmt("{\"train_micro_batch_size_per_gpu\": 1,\n \"zero_optimization\": {\"stage\": 3,\n"
                       "  \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"%s\"}}}\n", path);
    int n = load(cfg, &m, &z);
    if (frag) ZT_CHECKM(zg_diag_count_matching(frag, 3) == 1, "%s: no \"%s\" at line 3:\n%s", path, frag, zg_diag_log());
    return n;
}

static void t_nvme_path(void)
{
    char dir[] = "/tmp/zg_nvme_XXXXXX";
    ZT_CHECK(mkdtemp(dir) != NULL);
    char *link = zg_fmt("%s/dangling", dir), *file = zg_fmt("%s/file", dir), *missing = zg_fmt("%s/new/swap", dir);
    ZT_CHECK(symlink("/nonexistent/zg_target", link) == 0);
    FILE *f = fopen(file, "w");
    ZT_CHECK(f != NULL);
    if (f) fclose(f);
    ZT_EQ_INT(nvme_errors(link, "is a dangling symbolic link"), 1);
    ZT_EQ_INT(nvme_errors(file, "is a regular file, not a directory"), 1);
    ZT_EQ_INT(nvme_errors("/proc/self/fd", "kernel pseudo file system"), 1);
    ZT_EQ_INT(nvme_errors("/dev/null", "/dev (device nodes)"), 1);
    ZT_EQ_INT(nvme_errors(dir, NULL), 0);
    ZT_EQ_INT(nvme_errors(missing, NULL), 0);
    ZT_EQ_INT(nvme_errors("relative/swap", NULL), 0);
    unlink(link);
    unlink(file);
    rmdir(dir);
}

/* docs/CONFIG.md documents every key of the table (a key added without documentation fails). */
static void t_config_md_lists_every_key(void)
{
    FILE *f = fopen("docs/CONFIG.md", "r");
    ZT_CHECKM(f != NULL, "cannot open docs/CONFIG.md (run from the repository root)");
    if (!f) return;
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    for (int i = 0; i < zg_zero_nkeys; i++) {
        char *want = zg_fmt("| `%s` |", zg_zero_keys[i].name);
        ZT_CHECKM(strstr(text, want) != NULL, "docs/CONFIG.md does not list %s.%s", zg_zero_keys[i].section,
                  zg_zero_keys[i].name);
        free(want);
    }
    for (int i = 0; i < zg_n_invented_keys; i++) {
        char *want = zg_fmt("| `%s` |", zg_invented_keys[i].name);
        ZT_CHECKM(strstr(text, want) != NULL, "docs/CONFIG.md does not list invented key %s", zg_invented_keys[i].name);
        free(want);
    }
}

int main(void)
{
    ZT_RUN(t_defaults_are_deepspeeds);
    ZT_RUN(t_stage_dependent_defaults);
    ZT_RUN(t_keys_take_effect);
    ZT_RUN(t_batch_derivation);
    ZT_RUN(t_auto);
    ZT_RUN(t_warnings_not_errors);
    ZT_RUN(t_json_through_yaml);
    ZT_RUN(t_numbers_and_sizes);
    ZT_RUN(t_edit_distance);
    ZT_RUN(t_spec_defaults);
    ZT_RUN(t_path_sanity);
    ZT_RUN(t_nvme_path);
    ZT_RUN(t_config_md_lists_every_key);
    return zt_end();
}
