/*
** zero_keys.c — every DeepSpeed config key zgen recognises, with DeepSpeed's code default and what
** zgen does with it (docs/CONFIG.md is the source of keys and defaults; where DeepSpeed's docs
** and code disagree the code wins).
**
** One table rather than code per key: zero.c walks a config against it, so adding a key is one line,
** "did you mean" searches every section (zg_zero_unknown_key, below), and docs/CONFIG.md is checked
** against it by tests/gen/t_config.c. Supported keys that are a plain field of ZgZero name the field
** (offset + store); the rest (enums, batch sizes, "auto", keys whose default depends on others) are
** handled by name in zero.c.
*/
#include "zg.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OFF(f) offsetof(ZgZero, f)
#define BIG 1e18
/* supported, stored directly */
#define SUP(sec, nm, ty, def, st, f, lo, hi) \
    {sec, nm, ty, ZG_KS_SUPPORTED, def, NULL, NULL, lo, hi, NULL, OFF(f), st}
/* supported, handled by zero.c */
#define SPC(sec, nm, ty, def, lo, hi, ch) {sec, nm, ty, ZG_KS_SUPPORTED, def, NULL, NULL, lo, hi, ch, 0, 0}
#define ACC(sec, nm, ty, def, why) {sec, nm, ty, ZG_KS_ACCEPTED, def, NULL, why, 0, 0, NULL, 0, 0}
#define IGN(sec, nm, ty, def, why) {sec, nm, ty, ZG_KS_IGNORED, def, NULL, why, 0, 0, NULL, 0, 0}
#define UNS(sec, nm, ty, def, why) {sec, nm, ty, ZG_KS_UNSUPPORTED, def, NULL, why, 0, 0, NULL, 0, 0}
#define ALI(sec, nm, ty, to) {sec, nm, ty, ZG_KS_ALIAS, NULL, to, NULL, 0, 0, NULL, 0, 0}
#define DEP(sec, nm, ty, to, why) {sec, nm, ty, ZG_KS_DEPRECATED, NULL, to, why, 0, 0, NULL, 0, 0}
#define SEC(sec, nm) {sec, nm, ZG_KT_SECTION, ZG_KS_SUPPORTED, NULL, NULL, NULL, 0, 0, NULL, 0, 0}
#define B ZG_KT_BOOL
#define I ZG_KT_INT
#define N ZG_KT_NUM
#define S ZG_KT_STR
#define ANY ZG_KT_ANY

#define ZO "zero_optimization"
#define OP "zero_optimization.offload_param"
#define OO "zero_optimization.offload_optimizer"
#define MONITOR "monitoring is not part of the zgen trainer; it writes one JSON line per step to --log"
#define ZEROPP "ZeRO++ (quantized or hierarchical communication) is not implemented by zgen; remove it"
#define MICS "MiCS sharding is not implemented by zgen; remove it"
#define NOFEAT "this DeepSpeed feature is not implemented by zgen; remove the section"
#define ONE_DIV "zgen averages gradients once, in fp32, after the reduction; remove it"
#define ACT_PLANNED "zgen's activations live in one planned arena per rank (plan.txt); nothing is freed early"
#define SYNC_PLANNED "zgen's executor orders every collective as plan.txt lists it"

const ZgKey zg_zero_keys[] = {
    /* ---- top level (loose in DeepSpeed: unknown keys would be silently ignored there) */
    SPC("", "train_batch_size", I, NULL, 1, BIG, NULL),
    SPC("", "train_micro_batch_size_per_gpu", I, NULL, 1, BIG, NULL),
    SPC("", "gradient_accumulation_steps", I, NULL, 1, BIG, NULL),
    SUP("", "gradient_clipping", N, "1.0", 'd', gradient_clipping, 0, BIG),
    SPC("", "communication_data_type", S, NULL, 0, 0, "fp16|bf16|fp32"),
    SPC("", "gradient_allreduce_op", S, "mean", 0, 0, "mean|sum"),
    UNS("", "prescale_gradients", B, "false", ONE_DIV),
    UNS("", "gradient_predivide_factor", N, "1.0", ONE_DIV),
    IGN("", "steps_per_print", I, "10", "the zgen trainer logs every step (--log)"),
    IGN("", "wall_clock_breakdown", B, "false", "use the trainer's --trace for timings"),
    IGN("", "memory_breakdown", B, "false", "zgen's plan.txt gives the exact memory per tier"),
    IGN("", "dump_state", B, "false", "zgen's plan.json is the full state description"),
    ACC("", "zero_allow_untested_optimizer", B, "false", "zgen runs Adam/AdamW only"),
    ACC("", "zero_force_ds_cpu_optimizer", B, "true", "zgen always uses its own CPU Adam"),
    IGN("", "dataloader_drop_last", B, "false", "the trainer reads batches as docs/SPEC.md's order"),
    SEC("", "zero_optimization"),
    SEC("", "aio"),
    SEC("", "fp16"),
    SEC("", "bf16"),
    ALI("", "bfloat16", ZG_KT_SECTION, "bf16"),
    SEC("", "optimizer"),
    SEC("", "scheduler"),
    SEC("", "activation_checkpointing"),
    SEC("", "compile"),
    IGN("", "tensorboard", ANY, "off", MONITOR),
    IGN("", "wandb", ANY, "off", MONITOR),
    IGN("", "csv_monitor", ANY, "off", MONITOR),
    IGN("", "comet", ANY, "off", MONITOR),
    IGN("", "comms_logger", ANY, "off", MONITOR),
    IGN("", "flops_profiler", ANY, "off", MONITOR),
    IGN("", "timers", ANY, "off", MONITOR),
    IGN("", "autotuning", ANY, "off", "zgen's plan is computed, not tuned at run time"),
    IGN("", "checkpoint", ANY, "off", "zgen writes its own sharded checkpoints (--save/--resume)"),
    IGN("", "nebula", ANY, "off", "zgen writes its own sharded checkpoints (--save/--resume)"),
    UNS("", "amp", ANY, "off", "NVIDIA Apex AMP is not supported; use bf16 or fp16 instead"),
    UNS("", "torch_autocast", ANY, "off", "use bf16 or fp16 instead"),
    UNS("", "pipeline", ANY, "off", "zgen does data parallelism with ZeRO only (no pipeline)"),
    UNS("", "tensor_parallel", ANY, "off", "zgen does data parallelism with ZeRO only"),
    UNS("", "elasticity", ANY, "off", "the world size is fixed in the plan (train.world_size)"),
    UNS("", "compression_training", ANY, "off", NOFEAT),
    UNS("", "data_efficiency", ANY, "off", NOFEAT),
    UNS("", "curriculum_learning", ANY, "off", NOFEAT),
    UNS("", "sparse_attention", ANY, "off", NOFEAT),
    UNS("", "eigenvalue", ANY, "off", NOFEAT),
    UNS("", "progressive_layer_drop", ANY, "off", NOFEAT),
    UNS("", "quantize_training", ANY, "off", NOFEAT),
    UNS("", "weight_quantization", ANY, "off", NOFEAT),
    UNS("", "hybrid_engine", ANY, "off", NOFEAT),
    UNS("", "data_types", ANY, "off", "gradients accumulate in fp32 in zgen; remove it"),
    UNS("", "sparse_gradients", B, "false", "GPT-2 has no sparse gradients in zgen; remove it"),
    UNS("", "disable_allgather", B, "false", "the plan needs its all-gathers; remove it"),

    /* ---- zero_optimization (strict in DeepSpeed) */
    SPC(ZO, "stage", I, "0", 0, 3, NULL),
    SUP(ZO, "contiguous_gradients", B, "true", 'b', contiguous_gradients, 0, 0),
    SUP(ZO, "reduce_scatter", B, "true", 'b', reduce_scatter, 0, 0),
    SUP(ZO, "reduce_bucket_size", I, "5e8", 'l', reduce_bucket_size, 0, BIG),
    ACC(ZO, "use_multi_rank_bucket_allreduce", B, "true", "zgen's reduction pattern is planned"),
    ACC(ZO, "allgather_partitions", B, "true", "DeepSpeed parses it but does not use it"),
    SPC(ZO, "allgather_bucket_size", I, "5e8", 0, BIG, NULL),
    SPC(ZO, "overlap_comm", B, NULL, 0, 0, NULL),
    ACC(ZO, "load_from_fp32_weights", B, "true", "zgen checkpoints always hold fp32 master weights"),
    UNS(ZO, "elastic_checkpoint", B, "false", "legacy DeepSpeed checkpoints are not read by zgen"),
    SEC(ZO, "offload_param"),
    SEC(ZO, "offload_optimizer"),
    SUP(ZO, "sub_group_size", I, "1e9", 'l', sub_group_size, 0, BIG),
    SUP(ZO, "stage3_prefetch_bucket_size", I, "5e7", 'l', prefetch_bucket_size, 0, BIG),
    ALI(ZO, "prefetch_bucket_size", I, "stage3_prefetch_bucket_size"),
    SUP(ZO, "stage3_param_persistence_threshold", I, "1e5", 'l', param_persistence_threshold, 0, BIG),
    ALI(ZO, "param_persistence_threshold", I, "stage3_param_persistence_threshold"),
    SUP(ZO, "stage3_model_persistence_threshold", I, "9223372036854775807", 'l',
        model_persistence_threshold, 0, 9.3e18),
    ALI(ZO, "model_persistence_threshold", I, "stage3_model_persistence_threshold"),
    SUP(ZO, "stage3_max_live_parameters", I, "1e9", 'l', max_live_parameters, 0, BIG),
    ALI(ZO, "max_live_parameters", I, "stage3_max_live_parameters"),
    SUP(ZO, "stage3_max_reuse_distance", I, "1e9", 'l', max_reuse_distance, 0, BIG),
    ALI(ZO, "max_reuse_distance", I, "stage3_max_reuse_distance"),
    ACC(ZO, "stage3_gather_16bit_weights_on_model_save", B, "false",
        "the trainer's --export always writes the full weights"),
    ALI(ZO, "gather_16bit_weights_on_model_save", B, "stage3_gather_16bit_weights_on_model_save"),
    DEP(ZO, "stage3_gather_fp16_weights_on_model_save", B,
        "stage3_gather_16bit_weights_on_model_save", "renamed by DeepSpeed"),
    UNS(ZO, "stage3_module_granularity_threshold", I, "0",
        "zgen gathers per module (the GPT-2 block); remove it"),
    ALI(ZO, "module_granularity_threshold", I, "stage3_module_granularity_threshold"),
    UNS(ZO, "stage3_use_all_reduce_for_fetch_params", B, "false",
        "zgen gathers parameters with all-gather; remove it"),
    ALI(ZO, "use_all_reduce_for_fetch_params", B, "stage3_use_all_reduce_for_fetch_params"),
    UNS(ZO, "stage3_allgather_sequential", B, "false", "zgen's gathers are planned; remove it"),
    ACC(ZO, "stage3_partition_stream_chunk_size", I, "0",
        "zgen initialises every parameter shard on its own rank; no full parameter is ever materialised"),
    ALI(ZO, "partition_stream_chunk_size", I, "stage3_partition_stream_chunk_size"),
    UNS(ZO, "zenflow", ANY, NULL, "ZenFlow (stall-free offload with selective updates) is not implemented by zgen; remove it"),
    ACC(ZO, "leaf_module", ANY, NULL, "zgen already gathers per module (the GPT-2 block) from its plan"),
    ACC(ZO, "ignore_unused_parameters", B, "true", "every GPT-2 parameter is used"),
    IGN(ZO, "round_robin_gradients", B, "false", "zgen's gradient copy order is planned"),
    UNS(ZO, "legacy_stage1", B, "false", "zgen implements the current stage 1 only"),
    UNS(ZO, "zero_hpz_partition_size", I, "1", ZEROPP),
    UNS(ZO, "zero_quantized_weights", B, "false", ZEROPP),
    UNS(ZO, "zero_quantized_nontrainable_weights", B, "false", ZEROPP),
    UNS(ZO, "zero_quantized_gradients", B, "false", ZEROPP),
    UNS(ZO, "zeropp_loco_param", ANY, NULL, ZEROPP),
    UNS(ZO, "mics_shard_size", I, "-1", MICS),
    UNS(ZO, "mics_hierarchical_params_gather", B, "false", MICS),
    ACC(ZO, "memory_efficient_linear", B, "true", "a DeepSpeed autograd detail without effect here"),
    ACC(ZO, "override_module_apply", B, "true", "a DeepSpeed hook detail without effect here"),
    ACC(ZO, "log_trace_cache_warnings", B, "false", "zgen has no run-time trace cache"),
    ACC(ZO, "enable_sanity_checks", B, "false", "zgen checks the plan at generation time"),
    ACC(ZO, "pipeline_loading_checkpoint", B, "false", "no pipeline parallelism in zgen"),
    ACC(ZO, "save_muon_momentum_buffer_in_memory", B, "false", "zgen has no Muon optimizer"),
    DEP(ZO, "cpu_offload", B, "offload_optimizer", "use offload_optimizer: {device: cpu}"),
    DEP(ZO, "cpu_offload_param", B, "offload_param", "use offload_param: {device: cpu}"),
    DEP(ZO, "cpu_offload_use_pin_memory", B, "offload_optimizer",
        "use pin_memory inside offload_param / offload_optimizer"),

    /* ---- offload_param / offload_optimizer (strict) */
    SPC(OP, "device", S, "none", 0, 0, "none|cpu|nvme"),
    SPC(OP, "nvme_path", ZG_KT_PATH, NULL, 0, 0, NULL),
    SUP(OP, "pin_memory", B, "true", 'b', offload_param.pin_memory, 0, 0),
    SPC(OP, "buffer_count", I, "5", 0, BIG, NULL),
    SUP(OP, "buffer_size", I, "1e8", 'l', offload_param.buffer_size, 0, BIG),
    SUP(OP, "max_in_cpu", I, "1e9", 'l', offload_param.max_in_cpu, 0, BIG),
    SPC(OO, "device", S, "none", 0, 0, "none|cpu|nvme"),
    SPC(OO, "nvme_path", ZG_KT_PATH, NULL, 0, 0, NULL),
    SUP(OO, "pin_memory", B, "true", 'b', offload_optimizer.pin_memory, 0, 0),
    SPC(OO, "buffer_count", I, "4", 0, BIG, NULL),
    SUP(OO, "pipeline_read", B, "false", 'b', offload_optimizer.pipeline_read, 0, 0),
    SUP(OO, "pipeline_write", B, "false", 'b', offload_optimizer.pipeline_write, 0, 0),
    ACC(OO, "fast_init", B, "false", "zgen lays out the swap files at generation time"),
    SPC(OO, "ratio", N, "1.0", 0, 1, NULL),
    UNS(OO, "super_offload", B, "false", "SuperOffload (GH200) is not implemented by zgen"),
    ACC(OO, "convert_grad_on_cpu", B, "true", "a SuperOffload detail; zgen converts gradients where plan.txt says"),
    IGN(OO, "cpuadam_cores_perc", N, "0.8", "zgen's CPU Adam uses the rank's share of the cores"),

    /* ---- aio (loose) */
    SUP("aio", "block_size", I, "1048576", 'l', aio_block_size, 512, BIG),
    SUP("aio", "queue_depth", I, "8", 'l', aio_queue_depth, 1, 65536),
    SUP("aio", "intra_op_parallelism", I, "1", 'l', aio_intra_op_parallelism, 1, 1024),
    SUP("aio", "single_submit", B, "false", 'b', aio_single_submit, 0, 0),
    SUP("aio", "overlap_events", B, "true", 'b', aio_overlap_events, 0, 0),
    UNS("aio", "use_gds", B, "false", "GPUDirect Storage is not used by zgen (io_uring into pinned buffers)"),
    IGN("aio", "thread_count", I, NULL,
        "DeepSpeed ignores it too since it was renamed intra_op_parallelism (#7056)"),

    /* ---- fp16 / bf16 (strict) */
    SPC("fp16", "enabled", B, "false", 0, 0, NULL),
    UNS("fp16", "auto_cast", B, "false", "zgen casts inside its own kernels; remove it"),
    SUP("fp16", "loss_scale", N, "0", 'd', loss_scale, 0, BIG),
    SUP("fp16", "initial_scale_power", I, "16", 'i', initial_scale_power, 0, 62),
    SUP("fp16", "loss_scale_window", I, "1000", 'i', loss_scale_window, 1, 1e9),
    SUP("fp16", "hysteresis", I, "2", 'i', hysteresis, 1, 1e9),
    SUP("fp16", "consecutive_hysteresis", B, "false", 'b', consecutive_hysteresis, 0, 0),
    SUP("fp16", "min_loss_scale", N, "1", 'd', min_loss_scale, 0, BIG),
    UNS("fp16", "fp16_master_weights_and_grads", B, "false", "zgen keeps fp32 master weights"),
    SPC("bf16", "enabled", B, "false", 0, 0, NULL),
    UNS("bf16", "immediate_grad_update", B, "false", "zgen accumulates gradients in fp32"),
    ACC("bf16", "check_grad_overflow", B, "true", "zgen does not skip bf16 steps"),
    UNS("bf16", "bf16_master_weights_and_grads", B, "false", "zgen keeps fp32 master weights"),
    UNS("bf16", "bf16_optimizer_states", B, "false", "zgen keeps fp32 Adam states"),

    /* ---- optimizer / scheduler (loose; params become constructor arguments) */
    SPC("optimizer", "type", S, NULL, 0, 0, NULL),
    SEC("optimizer", "params"),
    ACC("optimizer", "legacy_fusion", B, "false", "a DeepSpeed fusion detail without effect here"),
    SPC("optimizer.params", "lr", N, "1e-3", 0, BIG, NULL),
    SPC("optimizer.params", "betas", ZG_KT_PAIR, "[0.9, 0.999]", 0, 1, NULL),
    SUP("optimizer.params", "eps", N, "1e-8", 'd', eps, 0, BIG),
    SUP("optimizer.params", "weight_decay", N, "0", 'd', weight_decay, 0, BIG),
    SPC("optimizer.params", "adam_w_mode", B, "true", 0, 0, NULL),
    ACC("optimizer.params", "torch_adam", B, "false", "zgen's Adam has the same update rule"),
    ACC("optimizer.params", "fp32_optimizer_states", B, "true", "zgen keeps fp32 Adam states"),
    ACC("optimizer.params", "set_grad_none", B, "true", "a PyTorch detail without effect here"),
    UNS("optimizer.params", "amsgrad", B, "false", "zgen's Adam has no AMSGrad variant"),
    SPC("optimizer.params", "bias_correction", B, "true", 0, 0, NULL),
    SPC("optimizer.params", "max_grad_norm", N, NULL, 0, 0, NULL),
    SPC("scheduler", "type", S, NULL, 0, 0, NULL),
    SEC("scheduler", "params"),
    SPC("scheduler.params", "warmup_min_lr", N, "0", 0, BIG, "WarmupLR|WarmupDecayLR"),
    SPC("scheduler.params", "warmup_max_lr", N, "0.001", 0, BIG, "WarmupLR|WarmupDecayLR"),
    SPC("scheduler.params", "warmup_num_steps", I, "1000", -1e12, 1e12,
        "WarmupLR|WarmupDecayLR|WarmupCosineLR"),
    SPC("scheduler.params", "warmup_type", S, "log", 0, 0, "WarmupLR|WarmupDecayLR|WarmupCosineLR"),
    SPC("scheduler.params", "total_num_steps", I, NULL, 0, 1e12, "WarmupDecayLR|WarmupCosineLR"),
    SPC("scheduler.params", "warmup_min_ratio", N, "0", 0, 1, "WarmupCosineLR"),
    SPC("scheduler.params", "cos_min_ratio", N, "1e-4", 0, 1, "WarmupCosineLR"),
    {"scheduler.params", "last_batch_iteration", I, ZG_KS_UNSUPPORTED, "-1", NULL,
     "zgen resumes schedules from its checkpoints (--resume); remove it", 0, 0,
     "WarmupLR|WarmupDecayLR|WarmupCosineLR", 0, 0},

    /* ---- activation_checkpointing (loose) */
    IGN("activation_checkpointing", "partition_activations", B, "false",
        "it only matters with model parallelism, which zgen does not do"),
    UNS("activation_checkpointing", "cpu_checkpointing", B, "false",
        "zgen keeps one micro-batch of activations on the device (the memory plan counts them)"),
    IGN("activation_checkpointing", "contiguous_memory_optimization", B, "false",
        "zgen's activations already live in one planned arena"),
    IGN("activation_checkpointing", "number_checkpoints", I, NULL,
        "zgen checkpoints every block's input when the spec sets train.activation_checkpointing: true"),
    IGN("activation_checkpointing", "synchronize_checkpoint_boundary", B, "false",
        "zgen's recompute is a step of the static schedule"),
    IGN("activation_checkpointing", "profile", B, "false", "use the trainer's --trace"),

    /* ---- compile (strict: DeepSpeed's CompileConfig). DeepCompile traces the model and schedules
    ** ZeRO's gathers, releases and offloads at run time; zgen's plan is that schedule, made ahead of
    ** time, so turning DeepCompile on asks for nothing new (a note), while the keys that ask for
    ** a placement zgen plans elsewhere say where. */
    SPC("compile", "deepcompile", B, "false", 0, 0, NULL),
    IGN("compile", "free_activation", B, "false", ACT_PLANNED),
    IGN("compile", "free_activation_threshold", I, "10485760", ACT_PLANNED),
    UNS("compile", "offload_activation", B, "false",
        "zgen keeps one micro-batch of activations on the device; set train.activation_checkpointing: true "
        "in the spec to shrink them"),
    UNS("compile", "offload_opt_states", B, "false",
        "zgen plans optimizer offload from zero_optimization.offload_optimizer: use {device: cpu} there"),
    UNS("compile", "offload_parameters", B, "false",
        "zgen plans parameter offload from zero_optimization.offload_param (stage 3): use {device: cpu} there"),
    IGN("compile", "double_buffer", B, "true", "zgen's gather slots follow from stage3_prefetch_bucket_size"),
    IGN("compile", "symmetric_memory", B, "false", "zgen's communication buffers are regions of its memory plan"),
    IGN("compile", "debug_log", B, "false", "zgen's schedule is plan.txt (--dump=plan prints it)"),
    IGN("compile", "sync_before_reduce", B, "false", SYNC_PLANNED),
    IGN("compile", "sync_after_reduce", B, "false", SYNC_PLANNED),
    IGN("compile", "sync_before_allgather", B, "false", SYNC_PLANNED),
    IGN("compile", "sync_after_allgather", B, "false", SYNC_PLANNED),
    ACC("compile", "keep_int_input_tensors", B, "true", "zgen traces no graph and keeps no graph inputs"),
    ACC("compile", "keep_all_input_tensors", B, "false", "zgen traces no graph and keeps no graph inputs"),
    UNS("compile", "passes", ANY, NULL,
        "zgen runs its own passes (partition, schedule, memory plan) ahead of time; remove it"),
    UNS("compile", "sp_size", I, "1", "sequence parallelism (AutoSP) is not implemented by zgen"),
    ACC("compile", "dp_size", I, "1", "zgen's data-parallel size is the world size (train.world_size)"),
};
const int zg_zero_nkeys = (int)(sizeof zg_zero_keys / sizeof zg_zero_keys[0]);

#define NVME_BOTH "zero_optimization.offload_param.nvme_path or zero_optimization.offload_optimizer.nvme_path"
const ZgInventedKey zg_invented_keys[] = {
    {"nvme_offload_path", NVME_BOTH},
    {"nvme_swap_dir", NVME_BOTH},
    {"swap_folder", NVME_BOTH},
    {"offload_param_nvme", "zero_optimization.offload_param: {device: nvme, nvme_path: ...}"},
    {"offload_optimizer_nvme", "zero_optimization.offload_optimizer: {device: nvme, nvme_path: ...}"},
    {"offload_param_cpu", "zero_optimization.offload_param: {device: cpu}"},
    {"offload_optimizer_cpu", "zero_optimization.offload_optimizer: {device: cpu}"},
    {"cpu_offload_optimizer", "zero_optimization.offload_optimizer: {device: cpu}"},
    {"offload_device", "zero_optimization.offload_param.device or zero_optimization.offload_optimizer.device"},
    {"zero_stage", "zero_optimization.stage"},
    {"zero", "zero_optimization"},
    {"micro_batch_size", "train_micro_batch_size_per_gpu"},
    {"micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu"},
    {"per_device_train_batch_size", "train_micro_batch_size_per_gpu"},
    {"batch_size", "train_batch_size"},
    {"global_batch_size", "train_batch_size"},
    {"gradient_accumulation", "gradient_accumulation_steps"},
    {"grad_accum_steps", "gradient_accumulation_steps"},
    {"accumulation_steps", "gradient_accumulation_steps"},
    {"max_grad_norm", "gradient_clipping (top level)"},
    {"grad_clip", "gradient_clipping"},
    {"clip_grad", "gradient_clipping"},
    {"learning_rate", "optimizer.params.lr"},
    {"fp16_enabled", "fp16: {enabled: true}"},
    {"bf16_enabled", "bf16: {enabled: true}"},
    {"mixed_precision", "bf16: {enabled: true} or fp16: {enabled: true}"},
    {"grad_hooks", "nothing: DeepSpeed's docs list grad_hooks but its code rejects it; remove it"},
};
const int zg_n_invented_keys = (int)(sizeof zg_invented_keys / sizeof zg_invented_keys[0]);

/* ======================================================================= "did you mean" */
static char *full_name(const char *section, const char *name)
{
    return section[0] ? zg_fmt("%s.%s", section, name) : zg_xstrdup(name);
}

/* DeepSpeed's strict sections reject unknown keys; loose ones ignore them silently. */
static bool strict_section(const char *section)
{
    return !strncmp(section, "zero_optimization", 17) || !strcmp(section, "fp16") ||
           !strcmp(section, "bf16") || !strcmp(section, "compile");
}

void zg_zero_unknown_key(const char *section, const char *key, ZgLoc at)
{
    char *full = full_name(section, key);
    zg_error(at, "unknown DeepSpeed key '%s'", full);
    free(full);
    for (int i = 0; i < zg_n_invented_keys; i++)
        if (!strcasecmp(zg_invented_keys[i].name, key)) {
            zg_note(at, "did you mean %s?", zg_invented_keys[i].fix);
            return;
        }
    const char *same[512];
    int n_same = 0;
    char *elsewhere = NULL;
    for (int i = 0; i < zg_zero_nkeys && n_same < 512; i++) {
        const ZgKey *k = &zg_zero_keys[i];
        if (!strcmp(k->section, section)) same[n_same++] = k->name;
        else if (!strcasecmp(k->name, key) && k->support != ZG_KS_DEPRECATED) {
            char *f = k->section[0] ? full_name(k->section, k->name) : zg_fmt("the top-level '%s'", k->name);
            char *e = elsewhere ? zg_fmt("%s or %s", elsewhere, f) : zg_xstrdup(f);
            free(elsewhere);
            free(f);
            elsewhere = e;
        }
    }
    const char *s = zg_suggest(key, same, n_same);
    if (s) {
        zg_note(at, "did you mean '%s'?", s);
    } else if (elsewhere) {
        zg_note(at, "did you mean %s? (the key belongs in another section)", elsewhere);
    } else {
        /* A typo of a key of another section: compare against full names too. */
        const char *all[512];
        char *names[512];
        int n = 0;
        for (int i = 0; i < zg_zero_nkeys && n < 512; i++)
            if (zg_zero_keys[i].support != ZG_KS_DEPRECATED)
                all[n] = names[n] = full_name(zg_zero_keys[i].section, zg_zero_keys[i].name), n++;
        const char *leaf[512];
        for (int i = 0; i < n; i++) {
            const char *dot = strrchr(all[i], '.');
            leaf[i] = dot ? dot + 1 : all[i];
        }
        const char *t = zg_suggest(key, leaf, n);
        for (int i = 0; t && i < n; i++)
            if (leaf[i] == t) {
                zg_note(at, "did you mean %s?", all[i]);
                break;
            }
        if (!t) zg_note(at, "docs/CONFIG.md lists every key zgen recognises");
        for (int i = 0; i < n; i++) free(names[i]);
    }
    if (strstr(section, ".params"))
        zg_note(at, "DeepSpeed passes params to the constructor and would fail with a TypeError");
    else if (!strict_section(section))
        zg_note(at, "DeepSpeed would silently ignore it here; zgen refuses so that the typo is seen");
    free(elsewhere);
}

