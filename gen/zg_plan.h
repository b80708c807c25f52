/*
** zg_plan.h — the plan: model IR, partition map, buckets, schedule and memory plan.
** Computed once by model.c, plan.c, sched.c and memplan.c from a validated (ZgModel, ZgZero);
** consumed by planout*.c (plan.json, plan.txt), by lua.c (handed to templates as tables) and by
** estimate.c. docs/PLAN.md explains how to read plan.txt / plan.json.
**
** Element counts and offsets are int64_t elements unless the name says _bytes.
** Parameter order is Hugging Face GPT-2's: wte, wpe, h.0.* ... h.{L-1}.*, ln_f.*; a layer's tensors
** in the order ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
** attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias, mlp.c_proj.weight,
** mlp.c_proj.bias. Linear weights are stored [in, out] (HF Conv1D layout).
**
** "16-bit" below means the config's dtype (zero->dtype): 2 bytes for bf16/fp16, 4 bytes for fp32.
** With fp32 there is no mixed precision: the working parameters ARE the fp32 values, so no separate
** master copy is planned unless the optimizer is offloaded (then "master" is the host-side copy the
** optimizer updates) and no fp32 upcast of the parameters exists (ZgMemPlan.host_stage_bytes 0).
**
** GRADIENT FLOW (what BACKWARD and GRAD_COPY mean; the host kernels compute in fp32):
**  - The module grad area G: stages 0/1 with fp32: the tensor's slot in "grads" (kernels += into
**    it, zeroed at the start of each optimizer step's first micro-step). Otherwise a per-module fp32
**    area written fresh by each BACKWARD, tensor t of module m at element
**    (t.flat_offset - flat_offset of m's first tensor used): "grad_stage" (16-bit dtypes, and fp32
**    at stages 2/3).
**  - Stages 0/1 with a 16-bit dtype: after BACKWARD the driver adds G (converted) into "grads".
**  - Tied lm_head (it owns no tensor and uses wte): stages 0/1 treat its wte gradient like any other
**    gradient of wte (accumulated into grads[wte]). Stages 2/3: lm_head's BACKWARD writes its wte
**    gradient into "tied_grad" (fp32, numel of wte); embed's BACKWARD adds tied_grad into wte's
**    gradient in G, so wte's gradient is complete after embed's BACKWARD (it is the last).
**  - Stages 2/3: GRAD_COPY k copies (downcasts) the gradients in G that belong to bucket k into
**    bucket buffer k % n_bucket_buffers; REDUCE k reduces that buffer; WAIT_REDUCE k waits and
**    accumulates this rank's part into "grad32" (the owned fp32 gradient shard; zeroed at the start
**    of each optimizer step).
*/
#ifndef ZG_PLAN_H
#define ZG_PLAN_H
#include "zg.h"               /* defines: ZgModel, ZgZero, ZgDtype, ZgTier, ZgLoc */

/* ----------------------------------------------------------------------- model IR (model.c) */
/* Module kinds: EMBED (wte + wpe), BLOCK (transformer block `layer`), FINAL_NORM (ln_f), HEAD
** (lm_head; tied: owns no tensor, uses wte). Inits: NORMAL (normal(0, 0.02), divided by
** sqrt(2*n_layers) if residual_proj), ZEROS (biases), ONES (LayerNorm gains). */
#define ZG_E_MOD(u, s) ZG_MOD_##u,
#define ZG_E_INIT(u, s) ZG_INIT_##u,
typedef enum { ZR_MODKIND_LIST(ZG_E_MOD) } ZgModKind;
typedef enum { ZR_INIT_LIST(ZG_E_INIT) } ZgInit;

typedef struct ZgTensor {
    const char *name;           /* Hugging Face name, e.g. "h.3.attn.c_attn.weight" */
    const char *field;          /* C identifier for emitted code, e.g. "attn_c_attn_weight" */
    int ndim;
    int64_t shape[2];           /* [in, out] for linear weights; shape[1] = 0 when ndim == 1 */
    int64_t numel;
    int module;                 /* index into ZgPlan.modules that owns it */
    int layer;                  /* block index, -1 outside blocks */
    bool decay;                 /* weight decay applies (ndim >= 2) */
    bool residual_proj;         /* init std scaled by 1/sqrt(2*n_layers) (c_proj weights) */
    int init;                   /* ZgInit */
    /* partition map (plan.c) */
    int64_t flat_offset;        /* start in the flat parameter space (all tensors, in order) */
    int64_t part_numel;         /* stage 3: ceil(numel/ws) elements held per rank; else 0 */
    bool persistent;            /* stage 3: kept gathered on every rank (see ZgShardMap) */
    int reduce_bucket;          /* the gradient bucket holding this tensor's gradient */
    int gather;                 /* stage 3: gather group (ZgPlan.gathers) or -1 (persistent) */
    int64_t gather_offset;      /* stage 3: start of the gathered tensor in its slot; -1 if none */
    int64_t persist_offset;     /* stage 3: start in the "persist" region (elements); -1 if none */
    int64_t bucket_offset;      /* start of its gradient in its bucket buffer (elements) */
} ZgTensor;

typedef struct ZgModule {
    ZgModKind kind;
    int layer;                  /* -1 unless block */
    const char *name;           /* "embed", "h.3", "ln_f", "lm_head" */
    int first_tensor, n_tensors;/* tensors owned (contiguous in the tensor table) */
    int64_t numel;              /* parameters owned (held directly) */
    int64_t use_numel;          /* parameters its forward reads (lm_head tied: numel of wte) */
    int gather_bucket;          /* stage 3: gather group it needs (tied lm_head: embed's), -1 */
} ZgModule;

/* ----------------------------------------------------------------------- partition map (plan.c) */
/* Stages 0-2: one flat buffer of all parameters (tensor order, tensors back to back at
** flat_offset), padded to a multiple of align*ws (align = 2 elements, DeepSpeed's
** nccl_start_alignment_factor: every partition starts 4-byte aligned in 16-bit) and cut into ws
** equal partitions: rank r owns [r*part_numel, (r+1)*part_numel); a tensor may straddle ranks.
** At stage 0 the partition map exists (checkpoints, the estimator) but every rank updates the whole
** buffer (opt_numel = padded_numel).
** Stage 3: each tensor is padded to a multiple of ws and cut into ws slices of part_numel; rank r
** holds slice r of every tensor, and its shard is the concatenation of its slices in tensor order
** (shard_offset[t] = where tensor t's slice starts). A tensor is persistent when
** numel <= param_persistence_threshold, taken in tensor order while the running total of persistent
** numel stays <= model_persistence_threshold; persistent tensors are kept whole on every rank (region
** "persist"), re-gathered once after each optimizer step, and are in no gather group. */
typedef struct ZgShardMap {
    int ws;
    int align;                  /* elements; stages 0-2: 2; stage 3: 1 (per-tensor padding to ws) */
    int64_t flat_numel;         /* sum of numel (unpadded) */
    int64_t padded_numel;       /* stage 0-2: flat buffer incl. padding; stage 3: sum part*ws */
    int64_t part_numel;         /* elements each rank owns (every rank the same) */
    int64_t opt_numel;          /* elements each rank's optimizer updates (stage 0: padded_numel) */
    int64_t *shard_offset;      /* stage 3: per tensor, offset of its slice in each rank's shard */
    int64_t persist_numel;      /* stage 3: sum of numel of persistent tensors */
    /* Facts the emitted trainer reads instead of the stage (zg_model.h "partition facts"). */
    bool opt_replicated;        /* every rank's optimizer updates every element (stage 0) */
    int64_t opt_flat_stride;    /* rank r's optimizer shard starts at flat element r * this: part_numel
                                ** for a partitioned flat buffer (stages 1-2); 0 when replicated or
                                ** when the shard is per-tensor slices (stage 3: tensor part_numel) */
} ZgShardMap;

/* A contiguous run of gradients reduced together. Buckets are listed in reduction order, which is
** the order gradients become complete in backward: reverse tensor order (ln_f.bias first, wte last:
** the tied wte completes after embed's backward). So bucket k holds tensors
** [first_tensor, first_tensor+n_tensors) and buckets with higher k hold lower tensor indices.
** A bucket holds <= reduce_bucket_size elements (padded_numel at stage 3); a tensor larger than
** that is a bucket of its own.
** Bucket buffer layout (stages 2/3): stage 2: the bucket's gradients in flat order, tensor t at
** t.bucket_offset (= t.flat_offset - flat_offset of the bucket's first tensor). Stage 3: rank-major,
** ready for one reduce-scatter: chunk r (of padded_numel/ws elements) is the concatenation, in tensor
** order, of slice r of each tensor's padded gradient; t.bucket_offset is the start of t's slice
** within a chunk, so rank r's reduced chunk accumulates into grad32 at shard_offset[first_tensor].
** Stages 0/1 reduce in place in "grads" (flat order); bucket_offset is as in stage 2. */
typedef struct ZgBucket {
    int first_tensor, n_tensors;/* tensors [first, first+n) in tensor order, reduced as one */
    int64_t numel;              /* unpadded elements */
    int64_t padded_numel;       /* stage 3: sum of per-tensor padded sizes; else = numel */
    int64_t flat_offset;        /* stages 0-2: start in the flat buffer (of first_tensor) */
    int buffer;                 /* stages 2/3: bucket buffer it uses (k % n_bucket_buffers); else -1 */
} ZgBucket;

/* Stage-3 gather group: the non-persistent tensors among a module's tensors
** [first_tensor, first_tensor+n_tensors), gathered together. The gathered slot is tensor-major:
** tensor t (non-persistent, in the range) occupies [t.gather_offset, t.gather_offset + part*ws);
** rank r's slice lands at t.gather_offset + r*t.part_numel, so its first numel elements are the
** tensor. One GATHER = one all-gather per tensor of the group. */
typedef struct ZgGather {
    int module;
    int first_tensor, n_tensors;
    int64_t part_numel;         /* per-rank shard elements gathered (sum of part over the group) */
    int64_t numel;              /* full elements after gathering (padded: sum part*ws) */
    int slot;                   /* slot of its first GATHER in a micro-step (each GATHER op names
                                ** its slot in ZgOp.slot: a group may use another slot in backward) */
    int64_t shard_offset;       /* start of the group's span in the rank's shard (first tensor's) */
    int64_t shard_numel;        /* span length in the shard (includes persistent slices between) */
} ZgGather;

/* What SWAP_IN / SWAP_OUT move for a sub-group (ZgPlan.sg_swap). */
typedef enum {
    ZG_SWAP_NONE,               /* the optimizer state and the master are in memory: no swap ops */
    ZG_SWAP_OPTIMIZER,          /* optimizer on NVMe: master, m, v through "opt_buf_<b>" */
    ZG_SWAP_PARAMS,             /* fp32, stage 3, parameters on NVMe, optimizer in memory: the fp32
                                ** parameters ARE the master, so the sub-group's span of the NVMe
                                ** "params_shard" goes through "master_buf_<b>" (m, v stay put) */
} ZgSgSwap;

/* Optimizer sub-group (sub_group_size): the unit of swap-in / Adam / swap-out. Sub-groups cut the
** rank's optimizer shard [0, opt_numel) into consecutive pieces of sub_group_size elements rounded
** up to a multiple of sg_align (so NVMe offsets stay aligned); the last may be shorter. */
/* What Adam reads and writes for one sub-group (lower.c, the OPTIMIZER row's operands; emitted as
** zg_optimizers, columns in runtime/zr_rows.h): each operand a region and the element of it that
** holds shard element 0, plus this rank's flat start (rank x opt_flat_stride) where _ranked. */
typedef struct ZgOptRow {
    int master, m, v;           /* fp32 master (the home itself for fp32 without one), Adam's m, v */
    int64_t master_off, m_off, v_off;
    bool master_ranked;
    int grad;                   /* the gradients it reads, in grad_dt */
    int64_t grad_off;
    ZgDtype grad_dt;
    bool grad_ranked;
    int home;                   /* where the working copy is written (-1: the master is the home) */
    int64_t home_off;
    bool home_ranked, home_nvme;/* home_nvme: home is param_wb, written back to params_shard on NVMe */
    int next_master, next_m, next_v;  /* the speculative step's second copy, -1 without */
    int64_t next_off;
} ZgOptRow;

typedef struct ZgSubGroup {
    int64_t shard_offset;       /* start in this rank's optimizer shard (elements) */
    int64_t numel;
    int64_t nvme_offset_bytes;  /* ZG_SWAP_OPTIMIZER: offset of this sub-group inside each of the
                                ** NVMe regions "master", "adam_m", "adam_v"; ZG_SWAP_PARAMS: inside
                                ** "params_shard" (both = shard_offset*4, aligned to
                                ** ZgPlan.nvme_align); -1 if none */
    int buffer;                 /* staging buffer: "opt_buf_<b>" (ZG_SWAP_OPTIMIZER) or
                                ** "master_buf_<b>" (ZG_SWAP_PARAMS); else -1 */
} ZgSubGroup;

/* ----------------------------------------------------------------------- schedule (sched.c) */
/* The ordered operations of one micro-step (same on every rank: collectives match by
** construction), then the optimizer step. Three lists: `micro` for micro-steps 0..gas-2, `last`
** for the last micro-step of an optimizer step (gas-1; the only one when gas == 1), `step` after it.
** Stages 0 and 1 reduce gradients only in `last` (they accumulate locally in the full "grads"
** buffer); stages 2 and 3 reduce in every micro-step, so there `last` equals `micro`.
** `arg` indexes modules, buckets, gather groups or sub-groups (per kind below).
** Implicit waits (kept out of the list because they are local): SWAP_IN into a staging buffer first
** waits for the SWAP_OUT still writing from it; OPTIMIZER waits for its SWAP_IN; the driver waits
** for every outstanding SWAP_OUT before the step ends. */
/* The operations (enumerators: runtime/zr_enums.h, ZR_OP_LIST):
**   GATHER             stage 3: start all-gather of gather group arg into slot `slot`
**   WAIT_GATHER        wait for it (right before the module that uses it)
**   RELEASE            gathered slot `slot` (group arg) may be reused
**   FORWARD            forward of module arg
**   BACKWARD           backward of module arg (gradients per GRADIENT FLOW above)
**   REDUCE             start reduction of gradient bucket arg: stages 0-2 all-reduce
**                      (each rank keeps its part), stage 3 reduce-scatter
**   WAIT_REDUCE        wait for it; stages 2/3 accumulate the owned part into grad32
**   SWAP_IN            start read of sub-group arg's master, m, v into opt_buf
**                      (ZG_SWAP_PARAMS: its fp32 parameters into master_buf)
**   OPTIMIZER          unscale/clip + Adam on sub-group arg, then its 16-bit params
**                      are written to their home (params16 / params_shard; param_wb
**                      then the swap file when params are on NVMe). Its gradient is
**                      grad32 when planned, else the owned part of "grads"; its master
**                      is "master" (opt_buf with NVMe) when planned, else the owned
**                      part of the fp32 working params (params16 / params_shard)
**   SWAP_OUT           start write-back of sub-group arg's master, m, v (ZG_SWAP_PARAMS:
**                      its updated fp32 parameters)
**   ALLGATHER_PARAMS   stages 1-2: all-gather updated params16 partitions;
**                      stage 3: re-gather the persistent tensors into "persist"
**   PARAM_SWAP_IN      stage 3 param offload: copy group arg's shard span from its
**                      tier into "param_buf_<slot>" (H2D, or NVMe read)
**   GRAD_COPY          stages 2/3: copy (downcast) the gradients of bucket arg's
**                      tensors owned by the module of the preceding BACKWARD from the
**                      module grad area (GRADIENT FLOW) into its bucket buffer; a bucket
**                      spanning k modules gets k GRAD_COPY ops
**   GRAD_SHIP          grad_acc_dev, last micro-step, right after WAIT_REDUCE arg: this
**                      rank's part of bucket arg's accumulated sums, device "grad_acc"
**                      -> pinned grad32 (D2H, fp32); the fused norm is summed over it.
**                      Its row's `flat` is WAIT_REDUCE's; src and dst are both indexed
**                      by the shard offset (the part sits at the same place in both)
**   GRAD_KEEP          grad_keep, last micro-step, right after WAIT_REDUCE arg: the part
**                      of the bucket's reduced sums inside this rank's device optimizer
**                      range (the shard's [0, opt_dev_numel)) copied on the device into
**                      "grad_keep", where that Adam reads it after the norm. Its row is
**                      WAIT_REDUCE's with that destination (indexed by the shard offset) */
#define ZG_E_OP(u, s) ZG_OP_##u,
typedef enum { ZR_OP_LIST(ZG_E_OP) ZG_NOPS } ZgOpKind;

/* What a lowered op moves and on which stream (lower.c; runtime/zr_enums.h). */
#define ZG_E_XFER(u, s) ZG_XFER_##u,
#define ZG_E_STREAM(u, s) ZG_STREAM_##u,
typedef enum { ZR_XFER_LIST(ZG_E_XFER) ZG_NXFERS } ZgXfer;
typedef enum { ZR_STREAM_LIST(ZG_E_STREAM) ZG_NSTREAMS } ZgStream;

typedef struct ZgOp {
    ZgOpKind kind;
    int arg;
    int slot;                   /* GATHER, WAIT_GATHER, RELEASE, PARAM_SWAP_IN: gather slot;
                                ** FORWARD: ZG_RECOMPUTE for a recompute; WAIT_REDUCE (lower.c):
                                ** the "grad_land" slot its D2H lands in, -1 none; else -1 */
    /* The lowered row (lower.c): the data movement this op starts (or, for a WAIT, finishes),
    ** complete, so a trainer executes it without re-deciding. xfer NONE: no data moves. */
    ZgXfer xfer;
    ZgStream stream;
    int src, dst;               /* region indices (ZgMemPlan.regions), -1 none */
    int64_t src_off, dst_off;   /* elements of src_dt / dst_dt from the region's start */
    int64_t count;              /* elements; per rank for ALL_GATHER (sent) and REDUCE_SCATTER
                                ** (received) */
    ZgDtype src_dt, dst_dt;
    bool accumulate;            /* dst += src (widened to dst_dt) instead of dst = src */
    int64_t flat;               /* >= 0: src element src_off is flat parameter `flat`, and only
                                ** this rank's optimizer-shard part of the flat range
                                ** [flat, flat + count) moves, to dst_off + (its start in the
                                ** shard) (stages 0-2 gradient hand-over); -1: the whole range */
} ZgOp;

/* ZgOp.slot of a FORWARD that recomputes a block in backward (activation checkpointing,
** ZgPlan.act_ckpt): it comes right before that block's BACKWARD, inside the same gather interval
** (the block's parameters are gathered once for recompute + backward), rebuilds the block's full
** activations in the one block area of "acts" from its kept input, and keeps nothing else.
** The last block has none: its activations are still in that area when its backward runs. */
#define ZG_RECOMPUTE 1

typedef struct ZgSchedule {
    ZgOp *micro;  int n_micro;  /* micro-steps 0..gas-2 (forward + backward + reductions) */
    ZgOp *last;   int n_last;   /* the last micro-step of each optimizer step */
    ZgOp *step;   int n_step;   /* ops of the optimizer step (after the last micro-step) */
    int prefetch_depth;         /* stage 3: gather groups issued ahead of the one in use:
                                ** 0 when stage3_prefetch_bucket_size is 0, else
                                ** max(1, prefetch_bucket_size / G) capped so that
                                ** (depth+1)*G <= max_live_parameters (G = largest group numel),
                                ** and by the number of GATHERs in a micro-step minus 1.
                                ** Slots = depth + 1; GATHER number j of a micro-step uses slot
                                ** j % (depth+1). stage3_max_reuse_distance is not used: a group
                                ** stays gathered only across immediately consecutive uses */
} ZgSchedule;

/* ----------------------------------------------------------------------- memory plan (memplan.c) */
/* Memory categories (runtime/zr_enums.h, ZR_MEMCAT_LIST): PARAM16 16-bit (or fp32 when no mixed
** precision) working parameters; MASTER fp32 master parameters (owned shard); GRAD gradients
** (working precision / fp32 accumulation); ADAM_M, ADAM_V; GATHER_SLOTS stage 3 gathered-parameter
** slots; COMM_BUCKETS reduce / all-gather buckets; SWAP_BUFFERS pinned NVMe / offload staging
** buffers; ACTIVATIONS one micro-batch ("acts") and backward scratch ("scratch"); STAGING fp32
** module-gradient staging ("grad_stage", ...). */
#define ZG_E_MEM(u, s) ZG_MEM_##u,
typedef enum { ZR_MEMCAT_LIST(ZG_E_MEM) ZG_NMEM } ZgMemCat;

/* A named buffer at a fixed byte offset in its tier's single arena (one allocation per tier per
** rank; NVMe: the rank's swap file). Offsets are multiples of arena_align (64), and of nvme_align
** for every region that NVMe I/O touches (NVMe regions and the pinned buffers read/written with
** O_DIRECT). Region names (those present depend on stage, dtype and offload):
**   params16     stages 0-2: every parameter, 16-bit, flat order (padded_numel)
**   params_shard stage 3: the owned 16-bit shard (part_numel), tier from offload_param
**   persist      stage 3: persistent tensors, whole, 16-bit, tensor order (persist_offset)
**   gather_slot_<s>  stage 3: one gathered group (largest group numel), 16-bit
**   param_buf_<s>    stage 3 + offload_param: the group span brought in by PARAM_SWAP_IN
**   param_wb     stage 3 + offload_param nvme + a separate master: pinned 16-bit write-back
**                buffer of one sub-group
**   grads        stages 0/1: every gradient, 16-bit, flat order
**   bucket_<b>   stages 2/3: a gradient bucket buffer (largest bucket), 16-bit; 2 with overlap_comm
**   bucket_recv_<b>  stage 3 (ZgPlan.bucket_recv_numel > 0): this rank's reduce-scattered chunk of
**                bucket_<b>, 16-bit
**   grad32       owned fp32 gradient shard (stages 2/3, or any stage with the optimizer offloaded)
**   master, adam_m, adam_v  fp32 owned optimizer shard (opt_numel), tier from offload_optimizer
**   opt_buf_<b>  optimizer on NVMe: pinned staging for one sub-group's master|m|v (buffer_count);
**                with grad_nvme master|m|v|g, g also the gradient hand-over window in micro-steps
**   master_buf_<b>  ZG_SWAP_PARAMS: pinned staging for one sub-group's fp32 parameters (= master),
**                read by SWAP_IN, updated by OPTIMIZER, written back by SWAP_OUT (buffer_count
**                of offload_param, at most the number of sub-groups)
**   nvme_bounce  NVMe in the plan: the I/O engine's bounce buffers for unaligned pieces, pinned,
**                aio queue_depth x block_size per swap file (handed to zr_nvme_use_bounce)
**   grad_stage   the module gradient area: fp32 gradients of one module (max use_numel); 16-bit
**                dtypes, and fp32 at stages 2/3
**   tied_grad    stages 2/3, tied lm_head: fp32 wte gradient between lm_head and embed backward
**   acts, scratch  activations of one micro-batch and backward scratch (fp32; docs/PLAN.md) */
typedef struct ZgRegion {
    const char *name;           /* e.g. "master", "adam_m", "gather_slot_0" */
    ZgMemCat cat;
    ZgTier tier;
    int64_t offset_bytes;       /* in the tier's single arena (or swap file for NVME) */
    int64_t bytes;
    int file;                   /* NVME: the swap file it lives in (ZgMemPlan.nvme_file_path); else 0 */
} ZgRegion;

typedef struct ZgMemPlan {
    ZgRegion *regions; int n_regions;
    int64_t tier_bytes[ZG_NTIERS];              /* arena size per tier per rank */
    int64_t cat_bytes[ZG_NTIERS][ZG_NMEM];      /* by category */
    int64_t peak_bytes[ZG_NTIERS];              /* peak over a step: the arena is allocated once
                                                ** and every region lives for the whole run, so
                                                ** this equals tier_bytes */
    int64_t arena_align;                        /* every region offset is a multiple */
    int n_nvme_files;                           /* swap files per rank: one per distinct nvme_path
                                                ** (0, 1, or 2 when offload_param and
                                                ** offload_optimizer name different directories:
                                                ** file 0 under offload_param's, holding
                                                ** params_shard; file 1 under offload_optimizer's,
                                                ** holding grad32, master, adam_m, adam_v) */
    const char *nvme_file_path[2];              /* the directory of each */
    int64_t nvme_file_bytes[2];                 /* the size of each; tier_bytes[NVME] is the sum */
    /* The pinned landings of a GPU rank's per-step DMAs with Adam on the host (docs/PLAN.md
    ** "Landings"): "grad_land" holds grad_land_slots slots of grad_land_numel gradient elements
    ** (the reduced part a WAIT_REDUCE hands over, D2H, before the host adds it into grad32);
    ** "param_land" two sub-groups of the updated working copy on their way H2D. 0: none.
    ** grad_land_direct: the hand-over is a copy into a pinned grad16 (one micro-step), so the D2H
    ** lands there itself and the host only sums the norm's part in place: no grad_land. */
    int grad_land_slots;
    int64_t grad_land_numel, param_land_numel;
    bool grad_land_direct;
    /* Activations (docs/PLAN.md "Activations"): the device regions "acts" and "scratch" hold the
    ** GPU trainer's layout (gen/cuda_dec.c zg_cuda_acts_bytes) where the arch has one, else the
    ** host kernels' formula; host_acts/host_scratch are the host backend's own layout (the host
    ** kernels' formula), a buffer that trainer maps at start-up outside the tiers. Each is the
    ** checkpointed figure with ZgPlan.act_ckpt. device_acts_layout: "train-cuda" or "host". */
    int64_t acts_bytes, scratch_bytes;
    int64_t host_acts_bytes, host_scratch_bytes;
    /* 16-bit dtypes: the host backend's fp32 copy of one module's parameters (max use_numel x 4),
    ** which its fp32 kernels read; mapped with host_acts, outside the tiers. 0 with fp32 */
    int64_t host_stage_bytes;
    const char *device_acts_layout;
    /* Device memory a CUDA rank needs beside the device arena (memplan.c device_headroom; docs/
    ** PLAN.md "Device headroom"): the fit check keeps it free of hardware.device_memory. */
    int64_t headroom_context;                   /* the CUDA context */
    int64_t headroom_cublas;                    /* cuBLAS workspaces */
    int64_t headroom_nccl;                      /* NCCL's connection buffers */
    int64_t device_headroom;                    /* kept free: the three, or hardware.device_headroom */
} ZgMemPlan;

/* Bytes moved per rank per optimizer step and FLOPs (cost readable before launch; planout). */
typedef struct ZgCost {
    int64_t net_bytes;          /* collectives: bytes received per rank (ring algorithms) */
    int64_t h2d_bytes;          /* host -> device copies (PCIe): offloaded params in, updated params,
                                ** the batches */
    int64_t d2h_bytes;          /* device -> host copies (PCIe): reduced gradient shards out, the
                                ** losses, the sum of squares */
    int64_t nvme_read_bytes, nvme_write_bytes;
    int64_t batch_h2d_bytes;    /* of h2d_bytes: the micro-steps' token ids and targets */
    int64_t loss_d2h_bytes;     /* of d2h_bytes: the micro-steps' per-token losses */
    int64_t norm_d2h_bytes;     /* of d2h_bytes: the sum of squares when Adam runs on the device */
    double flops;               /* per rank per step: (6N + 6*L*C*T) * tokens */
} ZgCost;

/* ----------------------------------------------------------------------- the plan */
typedef struct ZgPlan {
    const ZgModel *model;
    const ZgZero *zero;
    ZgTensor *tensors; int n_tensors;
    ZgModule *modules; int n_modules;       /* forward order: embed, h.0..h.{L-1}, ln_f, lm_head */
    int64_t n_params;                       /* unique parameters */
    int64_t largest_layer;                  /* DeepSpeed's "largest layer": most parameters held
                                            ** directly by one HF module (gpt2: wte) */
    int tied_tensor;                        /* tensor lm_head uses when tied (wte), else -1 */
    ZgShardMap shard;
    ZgBucket *buckets; int n_buckets;       /* gradient reduce buckets, in reduction order */
    int n_bucket_buffers;                   /* stages 2/3: 2 with overlap_comm (and ws > 1), else 1; else 0 */
    int64_t bucket_buffer_numel;            /* stages 2/3: largest bucket padded_numel */
    int64_t bucket_recv_numel;              /* stage 3, ws > 1, unless one fp32 micro-step: one
                                            ** rank's chunk of a bucket buffer
                                            ** (bucket_buffer_numel / ws); REDUCE reduce-scatters
                                            ** into "bucket_recv_<b>" and WAIT_REDUCE adds it into
                                            ** grad32. 0 when there is none: one fp32 micro-step
                                            ** reduce-scatters straight into the zeroed grad32, and
                                            ** one rank reads its (only) chunk in place */
    ZgGather *gathers; int n_gathers;       /* stage 3 */
    int n_gather_slots;
    int64_t gather_slot_numel;              /* largest gather group numel */
    ZgSubGroup *subgroups; int n_subgroups; /* optimizer sub-groups of this rank's shard */
    ZgOptRow *optim;            /* per sub-group: the operands of its OPTIMIZER rows (lower.c) */
    ZgSgSwap sg_swap;                       /* what SWAP_IN / SWAP_OUT move (none: no swap ops) */
    int n_sg_buffers;                       /* staging buffers of sub-groups (opt_buf_<b> or
                                            ** master_buf_<b>); 0 with ZG_SWAP_NONE */
    int64_t sg_align;                       /* elements: sub-group boundaries are multiples */
    int64_t nvme_align;                     /* bytes: lcm(aio block_size, 4096) */
    int64_t max_use_numel;                  /* largest ZgModule.use_numel */
    bool act_ckpt;                          /* activation checkpointing: "acts" keeps each
                                            ** block's input and one block's activations; the
                                            ** schedule recomputes blocks (ZG_RECOMPUTE). Set by
                                            ** zg_plan_build from ZgModel.activation_checkpointing unless
                                            ** the caller set it before */
    ZgSchedule sched;
    ZgMemPlan mem;
    ZgCost cost;
    /* Added by the infinity work (plan.c): the sizes the plan used. A key the config left at
    ** DeepSpeed's default (ZgZero.sizes_set clear and the default value) is sized by the planner:
    ** its ZG_SET_* bit is in sized_auto, and ds_default_bytes says what DeepSpeed's default would
    ** have planned per rank (docs/PLAN.md "Sizes zgen chooses"). */
    unsigned sized_auto;
    int64_t reduce_bucket_cap;              /* elements a gradient bucket holds at most */
    int64_t prefetch_numel;                 /* stage3_prefetch_bucket_size the schedule used */
    int64_t max_live_numel;                 /* stage3_max_live_parameters the schedule used */
    int64_t sub_group_numel;                /* sub_group_size used; 0 before planning = config's */
    bool sg_for_spec;                       /* sized_auto's sub-group size is the speculative
                                            ** step's (one reduce bucket), not host memory's */
    int64_t ds_default_bytes[ZG_NMEM];      /* per rank, all tiers, by category, with every
                                            ** sized_auto key at DeepSpeed's default */
    bool reduce_direct;                     /* stage 3 reduce-scatters straight into grad32 (one
                                            ** fp32 micro-step, grad32 in device memory: plan.c) */
    bool adam_device;                       /* a GPU rank runs Adam on the device: the optimizer
                                            ** state is there and so is the working copy it
                                            ** updates (offload_optimizer none, and no
                                            ** offload_param). Otherwise the host runs it and the
                                            ** step's traffic is the offloaded one (memplan.c's
                                            ** landings and cost; docs/PLAN.md) */
    bool grad_nvme;                         /* stage 3 with the optimizer on NVMe (ZeRO-Infinity):
                                            ** "grad32" lives on NVMe, a fourth part of each
                                            ** opt_buf_<b> stages one sub-group's gradients
                                            ** (WAIT_REDUCE adds the reduced chunk into it and it is
                                            ** written through, nvme_write; SWAP_IN reads it with
                                            ** master, m, v), and REDUCE never lands in grad32
                                            ** directly (docs/PLAN.md "Gradients on NVMe") */
    /* Added by the speculative-step work (plan.c, docs/PLAN.md "Speculative optimizer step"). */
    bool speculative;                       /* Adam on the host runs each sub-group inside the last
                                            ** micro-step as soon as its gradients are final (an
                                            ** OPTIMIZER op in sched.last), assuming the step applies
                                            ** unclipped; the state is double-buffered ("*_next"),
                                            ** and the step rule commits it or redoes every
                                            ** sub-group from the untouched state */
    const char *spec_why;                   /* why not speculative (plan.txt), or NULL */
    bool norm_fused;                        /* the gradient norm is summed per bucket while the
                                            ** last micro-step hands the gradients over into grad32
                                            ** (no separate pass over the shard before Adam) */
    bool grad16;                            /* norm_fused with 16-bit gradients and one micro-step:
                                            ** the owned gradients stay 16-bit in host "grad16"
                                            ** (no fp32 grad32 to widen into), Adam reads them */
    /* Added by the device-accumulation work (plan.c, docs/PLAN.md "Gradient accumulation on the
    ** device"). */
    bool grad_acc_dev;                      /* stage 2/3, optimizer on the CPU, several micro-steps:
                                            ** WAIT_REDUCE adds the owned part into the device
                                            ** "grad_acc" (fp32) every micro-step, and only the
                                            ** last micro-step's GRAD_SHIP sends the sums D2H into
                                            ** the pinned grad32 (and sums the norm there), so
                                            ** PCIe carries 4 B per owned element per step instead
                                            ** of 2 B per micro-step, and the host adds nothing */
    const char *grad_acc_why;               /* why not (plan.txt), or NULL */
    /* Added by the split-optimizer work (plan.c, docs/PLAN.md "Part of the optimizer on the
    ** device"). */
    int n_sg_dev;                           /* stage 2, optimizer on the CPU: the leading
                                            ** sub-groups whose master, m and v live on the device
                                            ** ("master_dev", ...) and whose Adam runs there, in
                                            ** the step list after the norm (never speculated) */
    int64_t opt_dev_numel;                  /* their elements: the shard's [0, opt_dev_numel) */
    bool norm_dev_lanes;                    /* norm_fused with a device part: the device sums the
                                            ** norm's lanes of that part (sumsq.cu zd_sumsq_lanes)
                                            ** and only those cross, not its gradients */
    int64_t norm_block;                     /* norm_fused: elements per norm block (train.h TrSq) */
    bool norm_adam;                         /* speculative: the host part's squares are summed by
                                            ** its speculative Adam, which reads those gradients
                                            ** anyway (zr_adam_step_sq), not by the hand-over */
    int64_t norm_pieces;                    /* norm_adam: pieces of the shard ("norm_pieces", a
                                            ** double each): its norm blocks and the buckets' cuts */
    int64_t norm_lanes_sets;                /* norm_dev_lanes: lane sets (8 doubles) in "norm_lanes":
                                            ** the most any rank's buckets need, one per norm block
                                            ** each bucket's device part meets */
    bool grad_keep;                         /* one micro-step: their reduced gradients stay on the
                                            ** device in "grad_keep" (GRAD_KEEP); with device
                                            ** accumulation Adam reads grad_acc instead */
    const char *opt_dev_why;                /* why none (plan.txt), or NULL */
} ZgPlan;


/* model.c: the tensor and module tables for m->arch. false after reporting an error. */
bool zg_model_build(const ZgModel *m, ZgPlan *p);
/* plan_build.c: the planning steps of main.c's pipeline() in one call (size.c's sizing, the bounds,
** fit.c's check and refusal); false (after reporting) when the plan is out of bounds or does not
** fit the declared memory. Calls zg_model_build itself when p->tensors is NULL. */
bool zg_plan_build(const ZgModel *m, const ZgZero *z, ZgPlan *p);
/* plan.c: partition map, buckets, gathers, sub-groups (no schedule, no memory plan). */
void zg_plan_partition(ZgPlan *p);
/* plan.c: the bounds of zg.h on a built plan (table rows, per-step figures); false after reporting. */
bool zg_plan_within_bounds(const ZgPlan *p);
/* plan.c: whether the owned fp32 gradient shard lives on NVMe (ZgPlan.grad_nvme). */
bool zg_grads_on_nvme(const ZgZero *z);
/* sched.c: p->sched from the partition map. */
void zg_sched_build(ZgPlan *p);
/* lower.c: completes every op row of p->sched (ZgOp.xfer ... part) from the partition map and
** the memory plan. Run after zg_memplan_build; idempotent. */
void zg_lower_build(ZgPlan *p);
/* memplan.c: p->mem and p->cost. Does not check the hardware limits. */
void zg_memplan_build(ZgPlan *p);
/* memplan.c: the activation and scratch bytes of one micro-batch (the formula in docs/PLAN.md). */
int64_t zg_acts_bytes(const ZgModel *m, int64_t micro_batch);
/* memplan.c: the same with activation checkpointing (docs/PLAN.md): encoded, one block, the head's
** activations, then each block's output (the next block's input) */
int64_t zg_acts_ckpt_bytes(const ZgModel *m, int64_t micro_batch);
int64_t zg_scratch_bytes(const ZgModel *m, int64_t micro_batch);
/* The weights a recompute FORWARD does not multiply: the block's last linear layer (gpt2's MLP
** projection, llama's down projection: d_ff x d_model), whose only product is the block's output,
** kept already (tr_model_block_recompute, cz_block_forward). Its bias (gpt2) is still counted. */
int64_t zg_recompute_skip_numel(const ZgModel *m);
/* The device "acts" bytes of p's layout without activation checkpointing (plan.txt's comparison). */
int64_t zg_mem_acts_unckpt(const ZgPlan *p);
/* memplan.c: host bytes per node (pinned + host per rank times ranks per node). */
int64_t zg_mem_host_per_node(const ZgPlan *p);
/* plan.c: bytes per sub-group element of the pinned "param_land" (Adam on the host, the working
** copy on the device: memplan.c's landings, two 16-bit sub-groups); 0 when the plan has none. */
int64_t zg_plan_param_land(const ZgPlan *p);
/* plan.c: the optimizer state lives in host memory and the gradients are handed over into it
** (offload_optimizer cpu, ZeRO 1-2): where the speculative step, the fused norm and grad16 apply
** (check.c warns from it about train.speculative_step). */
bool zg_plan_host_state(const ZgZero *z);
/* plan.c: gradient accumulation on the device applies (ZgPlan.grad_acc_dev where it fits): stage
** 2 or 3, offload_optimizer cpu, more than one micro-step (check.c warns from it too). */
bool zg_plan_grad_acc_applies(const ZgZero *z);
/* plan.c: part of the optimizer state may live on the device (train.device_optimizer): ZeRO stage
** 2 with offload_optimizer cpu. */
bool zg_plan_dev_opt_applies(const ZgZero *z);
/* Is sub-group k's Adam on the device (one of the plan's leading n_sg_dev)? */
static inline bool zg_plan_sg_on_device(const ZgPlan *p, int k) { return k >= 0 && k < p->n_sg_dev; }
/* memplan.c: what one op row moves per rank per link, in bytes (the plan's cost sums these; the
** prediction times them). */
typedef struct ZgOpBytes { int64_t net, h2d, d2h, nvme_read, nvme_write; } ZgOpBytes;
ZgOpBytes zg_op_bytes(const ZgPlan *p, const ZgOp *o);
/* plan.c: rank r's part of bucket a in its device optimizer range, whose norm lanes cross instead
** of its gradients (norm_dev_lanes; else 0), with the lane sets (norm blocks it meets) into *sets. */
int64_t zg_bucket_dev_part(const ZgPlan *p, int a, int r, int64_t *sets);
/* memplan.c: elements of stage 3's "persist" region (0 without persistent tensors). */
int64_t zg_persist_region_numel(const ZgPlan *p);
/* Device bytes per rank the plan needs: the device arena plus the device headroom. */
int64_t zg_mem_device_need(const ZgPlan *p);
/* The headroom's parts as text ("CUDA context 512 MiB, cuBLAS workspace 32 MiB, NCCL 640 MiB", or
** "set by hardware.device_headroom"); zg_fmt'd. */
char *zg_mem_headroom_parts(const ZgPlan *p);
/* planout*.c */
bool zg_plan_write_json(const ZgPlan *p, FILE *f);
bool zg_plan_write_txt(const ZgPlan *p, FILE *f);
/* planout_train.c: the training settings with where each came from, one row per setting the plan
** uses (rows: room for ZG_NS); plan.txt's section of them. */
typedef struct ZgTrainRow {
    const char *key;            /* the DeepSpeed key, dotted */
    char *value;                /* as text; valid JSON unless json_string (then quote it) */
    bool json_string;
    const char *from;           /* "config", "auto", "spec", "derived", "default" */
    const char *source;         /* what gave it, for people; NULL for a plain config value */
    int line;                   /* config / auto: the key's line in the config; else 0 */
    const char *note;           /* what the value means when that is not obvious, or NULL */
} ZgTrainRow;
int zg_plan_training_rows(const ZgZero *z, ZgTrainRow *rows);
void zg_plan_training_txt(const ZgPlan *p, FILE *f);
/* planout_json.c: writes plan.json and plan.txt into dir (created if missing) via temp + rename. */
bool zg_plan_write_files(const ZgPlan *p, const char *dir);
/* estimate.c: DeepSpeed's estimator figures beside zgen's; json=true for --json */
void zg_estimate_print(const ZgPlan *p, bool json, FILE *f);
/* estimate.c: DeepSpeed's formulas (docs/PLAN.md `zgen --estimate`), bytes. gpn GPUs per node, nodes. */
void zg_ds_zero2_mem(int64_t params, int gpn, int nodes, bool cpu_offload, double *gpu, double *cpu);
void zg_ds_zero3_mem(int64_t params, int64_t largest_layer, int gpn, int nodes, bool offload_param,
                     bool offload_optimizer, bool zero_init, double *gpu, double *cpu);

const char *zg_tier_name(ZgTier t);
const char *zg_memcat_name(ZgMemCat c);
const char *zg_op_name(ZgOpKind k);
const char *zg_dtype_name(ZgDtype d);
const char *zg_offload_name(ZgOffload o);
const char *zg_modkind_name(ZgModKind k);
const char *zg_init_name(int init);
const char *zg_xfer_name(int x);         /* ZgXfer */
const char *zg_stream_name(int s);       /* ZgStream */
int zg_dtype_size(ZgDtype d);

#endif
