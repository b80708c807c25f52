/*
** zr_plan.h — the types of the static tables that zgen emits into out/<name>/zg_tables.c.
** The emitted trainer executes these tables; it decides nothing at run time. They mirror the
** generator's plan (gen/zg_plan.h: read its comments for the meaning of every field, the gradient
** flow and the region names) with everything a run needs. Element counts/offsets are int64_t
** elements unless named _bytes. Indices (module, bucket, gather, ...) are 0-based table indices;
** -1 means none. Enumerators are in the generator's order (ZrOpKind = ZgOpKind, ...), and emitted
** tables use the names, never the numbers. docs/TEMPLATES.md lists the tables and ZG_* constants.
*/
#ifndef ZR_PLAN_H
#define ZR_PLAN_H
#include <stdint.h>

typedef enum { ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16 } ZrDtype;
typedef enum { ZR_TIER_DEVICE, ZR_TIER_PINNED, ZR_TIER_HOST, ZR_TIER_NVME, ZR_NTIERS } ZrTier;
typedef enum { ZR_MOD_EMBED, ZR_MOD_BLOCK, ZR_MOD_FINAL_NORM, ZR_MOD_HEAD } ZrModKind;
typedef enum { ZR_INIT_NORMAL, ZR_INIT_ZEROS, ZR_INIT_ONES } ZrInit;

typedef struct ZrTensorRow {
    const char *name;           /* Hugging Face GPT-2 name, e.g. "h.0.attn.c_attn.weight" */
    int ndim;
    int64_t shape[2];           /* [in, out] for linear weights; shape[1] = 0 when ndim == 1 */
    int64_t numel;
    int module, layer;          /* owning module; block index or -1 */
    int decay;                  /* 1: weight decay applies (ndim >= 2) */
    int init;                   /* ZrInit */
    int residual_proj;          /* 1: init std scaled by 1/sqrt(2*n_layers) */
    int64_t flat_offset;        /* start in the flat parameter space */
    int64_t part_numel;         /* stage 3: slice held per rank; 0 otherwise */
    int64_t shard_offset;       /* stage 3: offset of the slice in each rank's shard; 0 otherwise */
    int persistent;             /* stage 3: kept gathered on every rank (region "persist") */
    int bucket;                 /* gradient reduce bucket */
    int gather;                 /* stage 3: gather group, -1 if persistent / not stage 3 */
    int64_t gather_offset;      /* stage 3: start of the gathered tensor in its slot; -1 if none */
    int64_t persist_offset;     /* stage 3: start in region "persist"; -1 if none */
    int64_t bucket_offset;      /* start of its gradient in its bucket buffer */
} ZrTensorRow;

typedef struct ZrModuleRow {
    const char *name;           /* "embed", "h.3", "ln_f", "lm_head" */
    int kind;                   /* ZrModKind */
    int layer;
    int first_tensor, n_tensors;
    int gather;                 /* stage 3 gather group it needs (tied lm_head: embed's), -1 */
    int64_t numel;              /* parameters owned */
    int64_t use_numel;          /* parameters its forward reads (tied lm_head: numel of wte) */
} ZrModuleRow;

typedef struct ZrBucketRow {
    int first_tensor, n_tensors;
    int64_t numel, padded_numel;
    int64_t flat_offset;        /* stages 0-2: start in the flat buffer */
    int buffer;                 /* stages 2/3: bucket buffer "bucket_<buffer>"; else -1 */
} ZrBucketRow;

typedef struct ZrGatherRow {
    int module, first_tensor, n_tensors;
    int64_t part_numel, numel;
    int slot;                   /* slot of its first GATHER in a micro-step (ops carry theirs) */
    int64_t shard_offset;       /* start of the group's span in the rank's shard */
    int64_t shard_numel;        /* span length in the shard */
} ZrGatherRow;

typedef struct ZrSubGroupRow {
    int64_t shard_offset, numel;
    int64_t nvme_offset_bytes;  /* -1 when the optimizer state is not on NVMe */
    int buffer;                 /* optimizer on NVMe: staging buffer "opt_buf_<buffer>"; else -1 */
} ZrSubGroupRow;

typedef enum {
    ZR_MEM_PARAM16, ZR_MEM_MASTER, ZR_MEM_GRAD, ZR_MEM_ADAM_M, ZR_MEM_ADAM_V,
    ZR_MEM_GATHER_SLOTS, ZR_MEM_COMM_BUCKETS, ZR_MEM_SWAP_BUFFERS, ZR_MEM_ACTIVATIONS,
    ZR_MEM_STAGING, ZR_NMEM
} ZrMemCat;                     /* same order as the generator's ZgMemCat */

typedef struct ZrRegionRow {
    const char *name;           /* "master", "adam_m", "acts", "gather_slot_0", ... */
    int cat;                    /* ZrMemCat */
    int tier;                   /* ZrTier */
    int64_t offset_bytes, bytes;
} ZrRegionRow;

typedef enum {
    ZR_OP_GATHER, ZR_OP_WAIT_GATHER, ZR_OP_RELEASE, ZR_OP_FORWARD, ZR_OP_BACKWARD,
    ZR_OP_REDUCE, ZR_OP_WAIT_REDUCE, ZR_OP_SWAP_IN, ZR_OP_OPTIMIZER, ZR_OP_SWAP_OUT,
    ZR_OP_ALLGATHER_PARAMS, ZR_OP_PARAM_SWAP_IN, ZR_OP_GRAD_COPY, ZR_NOPS
} ZrOpKind;                     /* same order as the generator's ZgOpKind */

typedef struct ZrOpRow {
    int kind;                   /* ZrOpKind */
    int arg;                    /* module, bucket, gather group or sub-group index */
    int slot;                   /* GATHER, WAIT_GATHER, RELEASE, PARAM_SWAP_IN: gather slot;
                                ** FORWARD: ZR_RECOMPUTE for a recompute; else -1 */
} ZrOpRow;

/* ZrOpRow.slot of a FORWARD that recomputes a block right before its BACKWARD (activation
** checkpointing; = the generator's ZG_RECOMPUTE). */
#define ZR_RECOMPUTE 1

#endif
