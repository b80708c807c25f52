/*
** zg_plan.h — the plan: model IR, partition map, buckets, schedule and memory plan.
** Computed once by plan*.c from a validated (ZgModel, ZgZero); consumed by planout*.c (plan.json,
** plan.txt), by lua.c (handed to templates as tables) and by the estimator.
**
** Element counts and offsets are int64_t elements unless the name says _bytes.
** Parameter order is Hugging Face GPT-2's: wte, wpe, h.0.* ... h.{L-1}.*, ln_f.*; a layer's tensors
** in the order ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
** attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias, mlp.c_proj.weight,
** mlp.c_proj.bias. Linear weights are stored [in, out] (HF Conv1D layout).
*/
#ifndef ZG_PLAN_H
#define ZG_PLAN_H

/* ----------------------------------------------------------------------- model IR (model.c) */
typedef enum {
    ZG_MOD_EMBED,               /* wte + wpe: token and position embedding */
    ZG_MOD_BLOCK,               /* transformer block `layer` */
    ZG_MOD_FINAL_NORM,          /* ln_f */
    ZG_MOD_HEAD,                /* lm_head; tied: owns no tensor, uses wte */
} ZgModKind;

typedef struct ZgTensor {
    const char *name;           /* Hugging Face name, e.g. "h.3.attn.c_attn.weight" */
    const char *field;          /* C identifier for emitted code, e.g. "attn_c_attn_weight" */
    int ndim;
    int64_t shape[2];           /* [in, out] for linear weights */
    int64_t numel;
    int module;                 /* index into ZgPlan.modules that owns it */
    int layer;                  /* block index, -1 outside blocks */
    bool decay;                 /* weight decay applies (ndim >= 2) */
    bool residual_proj;         /* init std scaled by 1/sqrt(2*n_layers) (c_proj weights) */
    int init;                   /* 0 normal(0,0.02), 1 zeros, 2 ones */
    /* partition map (plan.c) */
    int64_t flat_offset;        /* start in the flat parameter space (all tensors, in order) */
    int64_t part_numel;         /* stage 3: ceil(numel/ws) elements held per rank; else 0 */
    bool persistent;            /* stage 3: numel <= param_persistence_threshold: kept gathered */
    int reduce_bucket;          /* the gradient bucket holding this tensor's gradient */
} ZgTensor;

typedef struct ZgModule {
    ZgModKind kind;
    int layer;                  /* -1 unless block */
    const char *name;           /* "embed", "h.3", "ln_f", "lm_head" */
    int first_tensor, n_tensors;/* tensors owned (contiguous in the tensor table) */
    int64_t numel;              /* parameters held directly (DeepSpeed's "largest layer" count) */
    int gather_bucket;          /* stage 3: gather bucket of this module's non-persistent params, -1 */
} ZgModule;

/* ----------------------------------------------------------------------- partition map (plan.c) */
/* Stages 0-2: one flat buffer per dtype of all parameters, padded to a multiple of align*ws and cut
** into ws equal partitions (rank r owns [r*part, (r+1)*part)); a tensor may straddle ranks.
** Stage 3: each tensor is padded to a multiple of ws and cut into ws slices of part_numel; rank r's
** shard space is the concatenation of its slices (tensor order), and shard_offset[t] gives where. */
typedef struct ZgShardMap {
    int ws;
    int align;                  /* elements; start alignment of every partition (2 for 16-bit) */
    int64_t flat_numel;         /* sum of numel (unpadded) */
    int64_t padded_numel;       /* stage 0-2: flat buffer incl. padding; stage 3: sum part*ws */
    int64_t part_numel;         /* elements each rank owns (every rank the same) */
    int64_t *shard_offset;      /* stage 3: per tensor, offset of its slice in each rank's shard */
} ZgShardMap;

/* A contiguous run of gradients reduced together (in backward order). */
typedef struct ZgBucket {
    int first_tensor, n_tensors;/* tensors [first, first+n) in tensor order, reduced as one */
    int64_t numel;              /* unpadded elements */
    int64_t padded_numel;       /* stage 3: sum of per-tensor padded sizes; else = numel */
} ZgBucket;

/* Stage-3 gather group: a module's non-persistent tensors gathered with one all-gather. */
typedef struct ZgGather {
    int module;
    int first_tensor, n_tensors;
    int64_t part_numel;         /* per-rank shard elements gathered */
    int64_t numel;              /* full elements after gathering (padded) */
    int slot;                   /* gathered-parameter slot it lands in (memory plan) */
} ZgGather;

/* Optimizer sub-group (sub_group_size): the unit of swap-in / Adam / swap-out. */
typedef struct ZgSubGroup {
    int64_t shard_offset;       /* start in this rank's optimizer shard (elements) */
    int64_t numel;
    int64_t nvme_offset_bytes;  /* offset in the optimizer swap file (O_DIRECT aligned), -1 if none */
} ZgSubGroup;

/* ----------------------------------------------------------------------- schedule (sched.c) */
/* One micro-step's ordered operations (same on every rank: collectives match by construction),
** followed by the optimizer step. `arg` indexes modules, buckets, gathers or sub-groups. */
typedef enum {
    ZG_OP_GATHER,               /* start all-gather of gather group arg (stage 3) */
    ZG_OP_WAIT_GATHER,          /* wait for it */
    ZG_OP_RELEASE,              /* gathered slot of group arg may be reused */
    ZG_OP_FORWARD,              /* forward of module arg */
    ZG_OP_BACKWARD,             /* backward of module arg */
    ZG_OP_REDUCE,               /* start reduce(-scatter) of gradient bucket arg */
    ZG_OP_WAIT_REDUCE,          /* wait for it and accumulate into the owned gradient shard */
    ZG_OP_SWAP_IN,              /* start NVMe/host -> working read of sub-group arg */
    ZG_OP_OPTIMIZER,            /* Adam on sub-group arg (waits for its swap-in) */
    ZG_OP_SWAP_OUT,             /* start write-back of sub-group arg */
    ZG_OP_ALLGATHER_PARAMS,     /* stages 1-2: all-gather updated parameters */
    ZG_OP_PARAM_SWAP_IN,        /* stage 3 param offload: bring shard of gather group arg in */
    ZG_NOPS
} ZgOpKind;

typedef struct ZgOp {
    ZgOpKind kind;
    int arg;
} ZgOp;

typedef struct ZgSchedule {
    ZgOp *micro;  int n_micro;  /* ops of one micro-step (forward + backward + reductions) */
    ZgOp *step;   int n_step;   /* ops of the optimizer step (after the last micro-step) */
    int prefetch_depth;         /* gather groups in flight ahead of use (stage 3) */
} ZgSchedule;

/* ----------------------------------------------------------------------- memory plan (memplan.c) */
typedef enum {
    ZG_MEM_PARAM16,             /* 16-bit (or fp32 when no mixed precision) working parameters */
    ZG_MEM_MASTER,              /* fp32 master parameters (owned shard) */
    ZG_MEM_GRAD,                /* gradients (working precision / fp32 accumulation) */
    ZG_MEM_ADAM_M, ZG_MEM_ADAM_V,
    ZG_MEM_GATHER_SLOTS,        /* stage 3 gathered-parameter slots */
    ZG_MEM_COMM_BUCKETS,        /* reduce / all-gather buckets */
    ZG_MEM_SWAP_BUFFERS,        /* pinned NVMe staging buffers */
    ZG_MEM_ACTIVATIONS,         /* one micro-batch */
    ZG_NMEM
} ZgMemCat;

typedef struct ZgRegion {
    const char *name;           /* e.g. "master", "adam_m", "gather_slot_0" */
    ZgMemCat cat;
    ZgTier tier;
    int64_t offset_bytes;       /* in the tier's single arena (or swap file for NVME) */
    int64_t bytes;
} ZgRegion;

typedef struct ZgMemPlan {
    ZgRegion *regions; int n_regions;
    int64_t tier_bytes[ZG_NTIERS];              /* arena size per tier per rank */
    int64_t cat_bytes[ZG_NTIERS][ZG_NMEM];      /* by category */
    int64_t peak_bytes[ZG_NTIERS];              /* peak over a step */
    int64_t arena_align;                        /* every region offset is a multiple */
} ZgMemPlan;

/* ----------------------------------------------------------------------- the plan */
typedef struct ZgPlan {
    const ZgModel *model;
    const ZgZero *zero;
    ZgTensor *tensors; int n_tensors;
    ZgModule *modules; int n_modules;       /* forward order: embed, h.0..h.{L-1}, ln_f, lm_head */
    int64_t n_params;                       /* unique parameters */
    ZgShardMap shard;
    ZgBucket *buckets; int n_buckets;       /* gradient reduce buckets, in reduction order */
    ZgGather *gathers; int n_gathers;       /* stage 3 */
    int n_gather_slots;
    ZgSubGroup *subgroups; int n_subgroups; /* optimizer sub-groups of this rank's shard */
    ZgSchedule sched;
    ZgMemPlan mem;
} ZgPlan;

/* model.c: the tensor and module tables for m->arch. false after reporting an error. */
bool zg_model_build(const ZgModel *m, ZgPlan *p);
/* plan.c: everything else; false (after reporting) when the plan does not fit the declared memory. */
bool zg_plan_build(const ZgModel *m, const ZgZero *z, ZgPlan *p);
/* planout*.c */
bool zg_plan_write_json(const ZgPlan *p, FILE *f);
bool zg_plan_write_txt(const ZgPlan *p, FILE *f);
/* estimate.c: DeepSpeed's estimator figures beside zgen's; json=true for --json */
void zg_estimate_print(const ZgPlan *p, bool json, FILE *f);

const char *zg_tier_name(ZgTier t);
const char *zg_memcat_name(ZgMemCat c);
const char *zg_op_name(ZgOpKind k);
const char *zg_dtype_name(ZgDtype d);
int zg_dtype_size(ZgDtype d);

#endif
