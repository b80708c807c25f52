@@ local m, z = plan.model, plan.zero
@@ local op, of = z.offload_param, z.offload_optimizer
@@ local offload = {none = "ZG_OFFLOAD_NONE", cpu = "ZG_OFFLOAD_CPU", nvme = "ZG_OFFLOAD_NVME"}
@@ local sched_kind = {none = 0, warmup = 1, warmup_decay = 2, warmup_cosine = 3}
@@ local sched_name = {none = "constant", warmup = "WarmupLR", warmup_decay = "WarmupDecayLR", warmup_cosine = "WarmupCosineLR"}
@@ local dtype_size = {fp32 = 4, bf16 = 2, fp16 = 2}
/*
** zg_model.h — every constant of the ${m.name} trainer: model, batch, ZeRO stage, precision,
** optimizer, schedule, offload, table sizes. The names are listed in zgen's docs/TEMPLATES.md.
** Element and byte counts are int64_t (INT64_C); dims and counts are ints; flags are 0/1.
*/
#ifndef ZG_MODEL_H
#define ZG_MODEL_H
#include <stdint.h>
#include "zr_plan.h"       /* defines: ZrDtype (ZG_DTYPE) */

/* ---------------------------------------------------------------------- identity */
#define ZG_NAME                         ${cfmt.str(m.name)}
#define ZG_SPEC                         ${cfmt.str(m.spec_path)}
/* zgen's arguments as given, minus -o and --world-size, each word quoted for a POSIX shell where it
** needs it: `bin/zgen ZG_GEN_ARGS --world-size N` regenerates this trainer for N ranks */
#define ZG_GEN_ARGS                     ${cfmt.str(m.gen_args)}
#define ZG_ARCH                         ${cfmt.str(m.arch)}

/* ---------------------------------------------------------------------- model */
#define ZG_VOCAB_SIZE                   ${cfmt.int(m.vocab_size)}
#define ZG_CONTEXT                      ${cfmt.int(m.context)}
#define ZG_D_MODEL                      ${cfmt.int(m.d_model)}
#define ZG_N_LAYERS                     ${cfmt.int(m.n_layers)}
#define ZG_N_HEADS                      ${cfmt.int(m.n_heads)}
#define ZG_HEAD_DIM                     ${cfmt.int(m.d_model // m.n_heads)}
#define ZG_D_FF                         ${cfmt.int(m.d_ff)}
#define ZG_SEQ_LEN                      ${cfmt.int(m.seq_len)}
#define ZG_NORM_EPS                     ${cfmt.double(m.norm_eps)}
#define ZG_TIE_EMBEDDINGS               ${cfmt.bool(m.tie_embeddings)}
#define ZG_N_PARAMS                     ${cfmt.i64(plan.n_params)}
#define ZG_LARGEST_LAYER                ${cfmt.i64(plan.largest_layer)}
#define ZG_TIED_TENSOR                  ${cfmt.int(plan.tied_tensor)}  /* tensor lm_head uses, -1 untied */
@@ if m.rope then

/* ---------------------------------------------------------------------- rotary archs (${m.arch}) */
#define ZG_N_KV_HEADS                   ${cfmt.int(m.n_kv_heads)}  /* key/value heads (grouped-query attention) */
#define ZG_ROPE_THETA                   ${cfmt.double(m.rope_theta)}
#define ZG_ROPE_LLAMA3                  ${cfmt.bool(m.rope_llama3)}  /* LLaMA 3 frequency scaling with the four below */
#define ZG_ROPE_FACTOR                  ${cfmt.double(m.rope_factor)}
#define ZG_ROPE_LOW_FREQ_FACTOR         ${cfmt.double(m.rope_low_freq_factor)}
#define ZG_ROPE_HIGH_FREQ_FACTOR        ${cfmt.double(m.rope_high_freq_factor)}
#define ZG_ROPE_ORIGINAL_CONTEXT        ${cfmt.int(m.rope_original_context)}
#define ZG_QKV_BIAS                     ${cfmt.bool(m.qkv_bias)}  /* q, k, v projections carry biases (zg_tables.h ZG_LT_*_BIAS) */
@@ end

/* ---------------------------------------------------------------------- batch and run */
#define ZG_MICRO_BATCH                  ${cfmt.int(z.micro_batch)}
#define ZG_GRAD_ACCUM                   ${cfmt.int(z.grad_accum)}
#define ZG_TRAIN_BATCH_SIZE             ${cfmt.int(z.train_batch_size)}  /* micro x accum x world */
#define ZG_WORLD_SIZE                   ${cfmt.int(m.world_size)}
#define ZG_GPUS_PER_NODE                ${cfmt.int(m.gpus_per_node)}
#define ZG_TOKENS_PER_STEP              ${cfmt.i64(z.train_batch_size * m.seq_len)}
#define ZG_SEED                         ${cfmt.u64(m.seed)}
#define ZG_SHUFFLE                      ${m.shuffle and 1 or 0}
#define ZG_DEVICE_MEMORY                ${cfmt.i64(m.device_memory)}  /* bytes per rank, 0 = undeclared */
#define ZG_HOST_MEMORY                  ${cfmt.i64(m.host_memory)}  /* bytes per node, 0 = undeclared */

/* ---------------------------------------------------------------------- stage and precision */
/* The stage is a label the trainer records (checkpoint manifest, usage and banner text); what it
** does follows the tables and the facts named below ("partition facts"), never this number. */
#define ZG_STAGE                        ${cfmt.int(z.stage)}
#define ZG_DTYPE                        ZR_DT_${z.dtype:upper()}
#define ZG_DTYPE_NAME                   ${cfmt.str(z.dtype)}
#define ZG_DTYPE_SIZE                   ${dtype_size[z.dtype]}  /* bytes of a working element */
#define ZG_COMM_DTYPE                   ZR_DT_${z.comm_dtype:upper()}  /* gradient communication */
#define ZG_MIXED                        ${cfmt.bool(z.dtype ~= "fp32")}
#define ZG_FP16                         ${cfmt.bool(z.dtype == "fp16")}
#define ZG_BF16                         ${cfmt.bool(z.dtype == "bf16")}

/* ---------------------------------------------------------------------- fp16 loss scaler */
#define ZG_LOSS_SCALE                   ${cfmt.double(z.loss_scale)}  /* 0.0 = dynamic */
#define ZG_DYNAMIC_LOSS_SCALE           ${cfmt.bool(z.loss_scale == 0)}
#define ZG_INITIAL_SCALE_POWER          ${cfmt.int(z.initial_scale_power)}
#define ZG_LOSS_SCALE_WINDOW            ${cfmt.int(z.loss_scale_window)}
#define ZG_HYSTERESIS                   ${cfmt.int(z.hysteresis)}
#define ZG_CONSECUTIVE_HYSTERESIS       ${cfmt.bool(z.consecutive_hysteresis)}
#define ZG_MIN_LOSS_SCALE               ${cfmt.double(z.min_loss_scale)}
#define ZG_GRADIENT_CLIPPING            ${cfmt.double(z.gradient_clipping)}  /* global norm; 0.0 = off */

/* ---------------------------------------------------------------------- optimizer */
#define ZG_OPTIMIZER                    ${cfmt.str(z.optimizer)}
#define ZG_ADAM_W_MODE                  ${cfmt.bool(z.adam_w_mode)}
/* optimizer.params.bias_correction: 0 = DeepSpeed's Adam without bias correction (step size lr, no
** 1/sqrt(1-b2^t)); the trainer passes zr_adam step INT64_MAX, where b^t is exactly 0 for b < 1 */
#define ZG_BIAS_CORRECTION              ${cfmt.bool(z.bias_correction)}
#define ZG_LR                           ${cfmt.double(z.lr)}
#define ZG_BETA1                        ${cfmt.double(z.beta1)}
#define ZG_BETA2                        ${cfmt.double(z.beta2)}
#define ZG_EPS                          ${cfmt.double(z.eps)}
#define ZG_WEIGHT_DECAY                 ${cfmt.double(z.weight_decay)}

/* ---------------------------------------------------------------------- lr schedule (ZrLrKind) */
#define ZG_SCHED_KIND                   ${sched_kind[z.sched]}
#define ZG_SCHED_NAME                   ${cfmt.str(sched_name[z.sched])}
#define ZG_WARMUP_MIN_LR                ${cfmt.double(z.warmup_min_lr)}
#define ZG_WARMUP_MAX_LR                ${cfmt.double(z.warmup_max_lr)}
#define ZG_WARMUP_NUM_STEPS             ${cfmt.i64(z.warmup_num_steps)}
#define ZG_TOTAL_NUM_STEPS              ${cfmt.i64(z.total_num_steps)}
#define ZG_WARMUP_TYPE                  ${z.warmup_linear and 1 or 0}  /* ZrWarmupType: 0 log, 1 linear */
#define ZG_WARMUP_MIN_RATIO             ${cfmt.double(z.warmup_min_ratio)}
#define ZG_COS_MIN_RATIO                ${cfmt.double(z.cos_min_ratio)}

/* ---------------------------------------------------------------------- ZeRO */
#define ZG_CONTIGUOUS_GRADIENTS         ${cfmt.bool(z.contiguous_gradients)}
#define ZG_REDUCE_SCATTER               ${cfmt.bool(z.reduce_scatter)}
#define ZG_OVERLAP_COMM                 ${cfmt.bool(z.overlap_comm)}
#define ZG_REDUCE_BUCKET_SIZE           ${cfmt.i64(z.reduce_bucket_size)}
#define ZG_ALLGATHER_BUCKET_SIZE        ${cfmt.i64(z.allgather_bucket_size)}
#define ZG_SUB_GROUP_SIZE               ${cfmt.i64(z.sub_group_size)}
#define ZG_PREFETCH_BUCKET_SIZE         ${cfmt.i64(z.prefetch_bucket_size)}
#define ZG_PARAM_PERSISTENCE_THRESHOLD  ${cfmt.i64(z.param_persistence_threshold)}
#define ZG_MODEL_PERSISTENCE_THRESHOLD  ${cfmt.i64(z.model_persistence_threshold)}
#define ZG_MAX_LIVE_PARAMETERS          ${cfmt.i64(z.max_live_parameters)}
#define ZG_MAX_REUSE_DISTANCE           ${cfmt.i64(z.max_reuse_distance)}
#define ZG_PREFETCH_DEPTH               ${cfmt.int(plan.sched.prefetch_depth)}  /* gather groups in flight ahead */

/* ---------------------------------------------------------------------- offload */
#define ZG_OFFLOAD_NONE                 0
#define ZG_OFFLOAD_CPU                  1
#define ZG_OFFLOAD_NVME                 2
#define ZG_OFFLOAD_OPTIMIZER            ${offload[of.device]}
#define ZG_OPT_NVME_PATH                ${cfmt.str(of.nvme_path or "")}
#define ZG_OPT_PIN_MEMORY               ${cfmt.bool(of.pin_memory)}
#define ZG_OPT_BUFFER_COUNT             ${cfmt.int(of.buffer_count)}
#define ZG_OPT_PIPELINE_READ            ${cfmt.bool(of.pipeline_read)}
#define ZG_OPT_PIPELINE_WRITE           ${cfmt.bool(of.pipeline_write)}
#define ZG_OPT_RATIO                    ${cfmt.double(of.ratio)}
#define ZG_OFFLOAD_PARAM                ${offload[op.device]}
#define ZG_PARAM_NVME_PATH              ${cfmt.str(op.nvme_path or "")}
#define ZG_PARAM_PIN_MEMORY             ${cfmt.bool(op.pin_memory)}
#define ZG_PARAM_BUFFER_COUNT           ${cfmt.int(op.buffer_count)}
#define ZG_PARAM_BUFFER_SIZE            ${cfmt.i64(op.buffer_size)}
#define ZG_PARAM_MAX_IN_CPU             ${cfmt.i64(op.max_in_cpu)}

/* ---------------------------------------------------------------------- aio (NVMe) */
#define ZG_AIO_BLOCK_SIZE               ${cfmt.i64(z.aio_block_size)}
#define ZG_AIO_QUEUE_DEPTH              ${cfmt.int(z.aio_queue_depth)}
#define ZG_AIO_INTRA_OP_PARALLELISM     ${cfmt.int(z.aio_intra_op_parallelism)}
#define ZG_AIO_SINGLE_SUBMIT            ${cfmt.bool(z.aio_single_submit)}
#define ZG_AIO_OVERLAP_EVENTS           ${cfmt.bool(z.aio_overlap_events)}

/* ---------------------------------------------------------------------- partition */
#define ZG_SHARD_ALIGN                  ${cfmt.int(plan.shard.align)}
#define ZG_FLAT_NUMEL                   ${cfmt.i64(plan.shard.flat_numel)}
#define ZG_PADDED_NUMEL                 ${cfmt.i64(plan.shard.padded_numel)}
#define ZG_PART_NUMEL                   ${cfmt.i64(plan.shard.part_numel)}  /* elements each rank owns */
#define ZG_OPT_NUMEL                    ${cfmt.i64(plan.shard.opt_numel)}  /* elements each rank's optimizer updates */
#define ZG_PERSIST_NUMEL                ${cfmt.i64(plan.shard.persist_numel)}
/* partition facts (gen/plan.c partition_params decides them): the trainer lays out its optimizer
** shard with these and the zg_tensors rows (part_numel > 0: the shard holds that tensor's slice)
** instead of asking which ZeRO stage it runs */
#define ZG_OPT_REPLICATED               ${cfmt.bool(plan.shard.opt_replicated)}  /* 1: every rank's optimizer updates every element */
#define ZG_OPT_FLAT_STRIDE              ${cfmt.i64(plan.shard.opt_flat_stride)}  /* rank r's shard starts at flat element r * this */
#define ZG_N_BUCKET_BUFFERS             ${cfmt.int(plan.n_bucket_buffers)}
#define ZG_BUCKET_BUFFER_NUMEL          ${cfmt.i64(plan.bucket_buffer_numel)}
#define ZG_GATHER_SLOT_NUMEL            ${cfmt.i64(plan.gather_slot_numel)}
#define ZG_MAX_USE_NUMEL                ${cfmt.i64(plan.max_use_numel)}
#define ZG_ACT_CKPT                     ${cfmt.bool(plan.act_ckpt)}  /* the activations hold the checkpointed layout; FORWARD rows with slot ZR_RECOMPUTE rebuild blocks */
#define ZG_ADAM_DEVICE                  ${cfmt.bool(plan.adam_device)}  /* a GPU rank runs Adam on the device (gen/plan.c) */
#define ZG_SPECULATIVE                  ${cfmt.bool(plan.speculative)}  /* OPTIMIZER ops in the last micro-step, state double-buffered (gen/plan.c) */
#define ZG_NORM_FUSED                   ${cfmt.bool(plan.norm_fused)}  /* the norm summed per bucket in the last hand-over (gen/plan.c) */
#define ZG_NORM_BLOCK                   ${plan.norm_block}  /* elements per block of the fused norm's order (train.h TrSq) */
#define ZG_NORM_ADAM                    ${cfmt.bool(plan.norm_adam)}  /* the speculative Adam sums the host part's squares into norm_pieces (gen/plan.c) */
#define ZG_NORM_DEV_LANES               ${cfmt.bool(plan.norm_dev_lanes)}  /* the device optimizer part's norm lanes summed on the device (gen/plan.c) */
#define ZG_GRAD_ACC_DEV                 ${cfmt.bool(plan.grad_acc_dev)}  /* WAIT_REDUCE adds into the device grad_acc; the last micro-step's GRAD_SHIP brings the sums to grad32 and sums the norm (gen/plan.c) */
#define ZG_N_SG_DEV                     ${cfmt.int(plan.n_sg_dev)}  /* the leading sub-groups whose master, m, v live on the device and whose Adam runs there (gen/plan.c) */
#define ZG_OPT_DEV_NUMEL                ${cfmt.i64(plan.opt_dev_numel)}  /* their elements: the shard's [0, ZG_OPT_DEV_NUMEL); the host regions hold the rest */
#define ZG_GRAD_KEEP                    ${cfmt.bool(plan.grad_keep)}  /* GRAD_KEEP copies their reduced gradients into the device grad_keep */
#define ZG_GRAD_NVME                    ${cfmt.bool(plan.grad_nvme)}  /* grad32 on NVMe, staged per sub-group through part 3 of opt_buf_<b> (WAIT_REDUCE rows nvme_write) */
#define ZG_OPT_BUF_PARTS                ${plan.grad_nvme and 4 or 3}  /* fp32 parts of an opt_buf_<b>: master, m, v (, gradients with ZG_GRAD_NVME) */
#define ZG_SG_ALIGN                     ${cfmt.i64(plan.sg_align)}
#define ZG_NVME_ALIGN                   ${cfmt.i64(plan.nvme_align)}
#define ZG_NVME_FILES                   ${#plan.mem.nvme_files}  /* swap files per rank: one per distinct nvme_path (param's first) */
@@ for i = 0, 1 do
@@   local nf = plan.mem.nvme_files[i + 1] or {path = "", bytes = 0}
#define ${cfmt.pad("ZG_NVME_FILE_DIR_" .. i, 32)}${cfmt.str(nf.path)}
#define ${cfmt.pad("ZG_NVME_FILE_BYTES_" .. i, 32)}${cfmt.i64(nf.bytes)}
@@ end

/* ---------------------------------------------------------------------- memory per rank */
#define ZG_ARENA_ALIGN                  ${cfmt.i64(plan.mem.arena_align)}
@@ for _, t in ipairs(enums.tiers) do
#define ${cfmt.pad("ZG_TIER_BYTES_" .. t:upper(), 32)}${cfmt.i64(plan.mem.tier_bytes[t])}  /* ${shape.bytes(plan.mem.tier_bytes[t])} */
@@ end
@@ for _, t in ipairs(enums.tiers) do
#define ${cfmt.pad("ZG_PEAK_BYTES_" .. t:upper(), 32)}${cfmt.i64(plan.mem.peak_bytes[t])}
@@ end
/* gen/memplan.c's device headroom parts (plan.txt "device headroom"): what a CUDA rank holds beside
** the arena. NCCL's buffers (communicator set-up) and the cuBLASLt workspace (first fused GEMM) are
** allocated after the arena, so train-cuda's pre-flight keeps them free; the context is already in
** the free memory it reads, and its budget only sizes the device_memory it advises. */
#define ZG_HEADROOM_CONTEXT_BYTES       ${cfmt.i64(plan.mem.headroom_context)}
#define ZG_HEADROOM_CUBLAS_BYTES        ${cfmt.i64(plan.mem.headroom_cublas)}
#define ZG_HEADROOM_NCCL_BYTES          ${cfmt.i64(plan.mem.headroom_nccl)}
/* the device regions "acts"/"scratch" hold the GPU trainer's layout; the host backend's own
** activations (the host kernels' layout) are a buffer of these sizes it maps at start-up */
#define ZG_ACTS_BYTES                   ${cfmt.i64(plan.mem.acts_bytes)}
#define ZG_SCRATCH_BYTES                ${cfmt.i64(plan.mem.scratch_bytes)}
#define ZG_HOST_ACTS_BYTES              ${cfmt.i64(plan.mem.host_acts_bytes)}
#define ZG_HOST_SCRATCH_BYTES           ${cfmt.i64(plan.mem.host_scratch_bytes)}
#define ZG_HOST_STAGE_BYTES             ${cfmt.i64(plan.mem.host_stage_bytes)}
/* the pinned landings of a GPU's per-step DMAs with Adam on the host (gen/memplan.c); 0: none */
#define ZG_GRAD_LAND_SLOTS              ${plan.mem.grad_land_slots}
#define ZG_GRAD_LAND_NUMEL              ${cfmt.i64(plan.mem.grad_land_numel)}
#define ZG_GRAD_LAND_DIRECT             ${cfmt.bool(plan.mem.grad_land_direct)}  /* a GPU rank's D2H lands in grad16 itself (gen/memplan.c) */
#define ZG_PARAM_LAND_NUMEL             ${cfmt.i64(plan.mem.param_land_numel)}

/* ---------------------------------------------------------------------- regions present */
/* Which regions the plan lays out (runtime/zr_enums.h's ZR_REGION_LIST): ZG_HAS_<NAME> 1 when in
** memory (a tier but NVMe), ZG_ON_NVME_<NAME> 1 when on NVMe; ZG_N_REGIONS_<FAMILY> numbered ones.
** The trainer asks these, never whether a pointer is set. */
@@ local where = {}
@@ for _, r in ipairs(plan.mem.regions) do where[r.name] = r.tier end
@@ for _, n in ipairs(enums.regions) do
#define ${cfmt.pad("ZG_HAS_" .. n:upper(), 32)}${cfmt.bool(where[n] ~= nil and where[n] ~= "nvme")}
#define ${cfmt.pad("ZG_ON_NVME_" .. n:upper(), 32)}${cfmt.bool(where[n] == "nvme")}
@@ end
@@ for _, f in ipairs(enums.region_families) do
@@   local count = 0
@@   for _, r in ipairs(plan.mem.regions) do
@@     if r.name:sub(1, #f) == f and r.name:sub(#f + 1):match("^%d+$") then count = count + 1 end
@@   end
#define ${cfmt.pad("ZG_N_REGIONS_" .. f:sub(1, -2):upper(), 32)}${count}
@@ end

/* ---------------------------------------------------------------------- table sizes */
#define ZG_N_TENSORS                    ${#plan.tensors}
#define ZG_N_MODULES                    ${#plan.modules}
#define ZG_N_BUCKETS                    ${#plan.buckets}
#define ZG_N_GATHERS                    ${#plan.gathers}
#define ZG_N_GATHER_SLOTS               ${plan.n_gather_slots}
#define ZG_N_SUBGROUPS                  ${#plan.subgroups}
#define ZG_N_REGIONS                    ${#plan.mem.regions}
#define ZG_N_MICRO_OPS                  ${#plan.sched.micro}
#define ZG_N_LAST_MICRO_OPS             ${#plan.sched.last}
#define ZG_N_STEP_OPS                   ${#plan.sched.step}
#define ZG_HAS_LAST_MICRO_OPS           1  /* zg_last_micro_ops is the plan's own list */
#define ZG_N_HF_CONFIG                  ${#plan.hf_config}  /* zg_hf_config rows */
#define ZG_N_HF_IGNORE                  ${#plan.hf_ignore}

#endif
