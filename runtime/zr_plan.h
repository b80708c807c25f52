/*
** zr_plan.h — the types of the static tables that zgen emits into out/<name>/zg_tables.c.
** The emitted trainer executes these tables; it decides nothing at run time. They mirror the
** generator's plan (gen/zg_plan.h: read its comments for the meaning of every field, the gradient
** flow and the region names) with everything a run needs. Element counts/offsets are int64_t
** elements unless named _bytes. Indices (module, bucket, gather, ...) are 0-based table indices;
** -1 means none. Enumerators come from zr_enums.h, the list the generator uses too, and emitted
** tables use the names, never the numbers. docs/TEMPLATES.md lists the tables and ZG_* constants.
*/
#ifndef ZR_PLAN_H
#define ZR_PLAN_H
#include <stdint.h>

#include "zr_enums.h"         /* defines: the enumerator lists shared with the generator */

#define ZR_E_DT(u, s) ZR_DT_##u,
#define ZR_E_TIER(u, s) ZR_TIER_##u,
#define ZR_E_MOD(u, s) ZR_MOD_##u,
#define ZR_E_INIT(u, s) ZR_INIT_##u,
#define ZR_E_MEM(u, s) ZR_MEM_##u,
#define ZR_E_OP(u, s) ZR_OP_##u,
#define ZR_E_XFER(u, s) ZR_XFER_##u,
#define ZR_E_STREAM(u, s) ZR_STREAM_##u,
typedef enum { ZR_DTYPE_LIST(ZR_E_DT) } ZrDtype;
typedef enum { ZR_TIER_LIST(ZR_E_TIER) ZR_NTIERS } ZrTier;
typedef enum { ZR_MODKIND_LIST(ZR_E_MOD) } ZrModKind;
typedef enum { ZR_INIT_LIST(ZR_E_INIT) } ZrInit;

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

typedef enum { ZR_MEMCAT_LIST(ZR_E_MEM) ZR_NMEM } ZrMemCat;

typedef struct ZrRegionRow {
    const char *name;           /* "master", "adam_m", "acts", "gather_slot_0", ... */
    int cat;                    /* ZrMemCat */
    int tier;                   /* ZrTier */
    int64_t offset_bytes, bytes;
} ZrRegionRow;

typedef enum { ZR_OP_LIST(ZR_E_OP) ZR_NOPS } ZrOpKind;
typedef enum { ZR_XFER_LIST(ZR_E_XFER) ZR_NXFERS } ZrXfer;
typedef enum { ZR_STREAM_LIST(ZR_E_STREAM) ZR_NSTREAMS } ZrStream;

/* Name of each enumerator, indexed by the enum (the same strings plan.json uses). */
static const char *const zr_tier_names[ZR_NTIERS] = {ZR_TIER_LIST(ZR_ENUM_NAME)};
static const char *const zr_op_names[ZR_NOPS] = {ZR_OP_LIST(ZR_ENUM_NAME)};
static const char *const zr_xfer_names[ZR_NXFERS] = {ZR_XFER_LIST(ZR_ENUM_NAME)};

typedef struct ZrOpRow {
    int kind;                   /* ZrOpKind */
    int arg;                    /* module, bucket, gather group or sub-group index */
    int slot;                   /* GATHER, WAIT_GATHER, RELEASE, PARAM_SWAP_IN: gather slot;
                                ** FORWARD: ZR_RECOMPUTE for a recompute; else -1 */
    /* The lowered row (gen/lower.c): what the op moves, complete; NONE moves nothing. */
    int xfer;                   /* ZrXfer */
    int stream;                 /* ZrStream */
    int src, dst;               /* zg_regions indices, -1 none */
    int64_t src_off, dst_off;   /* elements of src_dt / dst_dt from the region's start */
    int64_t count;              /* elements; per rank for ALL_GATHER and REDUCE_SCATTER */
    int src_dt, dst_dt;         /* ZrDtype */
    int accumulate;             /* dst += src (widened) instead of dst = src */
    int64_t flat;               /* >= 0: [flat, flat + count) is a flat parameter range of which
                                ** only this rank's optimizer-shard part moves (to dst_off + its
                                ** start in the shard); -1: the whole range */
} ZrOpRow;

/* ZrOpRow.slot of a FORWARD that recomputes a block right before its BACKWARD (activation
** checkpointing; = the generator's ZG_RECOMPUTE). */
#define ZR_RECOMPUTE 1

#endif
