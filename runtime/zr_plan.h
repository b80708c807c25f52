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
#include "zr_rows.h"          /* defines: the tensor table's columns */

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

/* A tensor's row: its fields and their meaning are zr_rows.h's ZR_TENSOR_COLUMNS. */
#define ZR_E_COLUMN(ctype, name, dims, kind, gen, what) ctype name dims;
typedef struct ZrTensorRow { ZR_TENSOR_COLUMNS(ZR_E_COLUMN) } ZrTensorRow;

/* Modules, buckets, gather groups, sub-groups: fields and meaning in zr_rows.h. */
typedef struct ZrModuleRow { ZR_MODULE_COLUMNS(ZR_E_COLUMN) } ZrModuleRow;
typedef struct ZrBucketRow { ZR_BUCKET_COLUMNS(ZR_E_COLUMN) } ZrBucketRow;
typedef struct ZrGatherRow { ZR_GATHER_COLUMNS(ZR_E_COLUMN) } ZrGatherRow;
typedef struct ZrSubGroupRow { ZR_SUBGROUP_COLUMNS(ZR_E_COLUMN) } ZrSubGroupRow;
/* The operands of sub-group k's OPTIMIZER rows (zg_optimizers[k]): zr_rows.h. */
typedef struct ZrOptRow { ZR_OPTIMIZER_COLUMNS(ZR_E_COLUMN) } ZrOptRow;

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
static const char *const zr_stream_names[ZR_NSTREAMS] = {ZR_STREAM_LIST(ZR_ENUM_NAME)};

typedef struct ZrOpRow {
    int kind;                   /* ZrOpKind */
    int arg;                    /* module, bucket, gather group or sub-group index */
    int slot;                   /* GATHER, WAIT_GATHER, RELEASE, PARAM_SWAP_IN: gather slot;
                                ** FORWARD: ZR_RECOMPUTE for a recompute; WAIT_REDUCE: the slot of
                                ** "grad_land" a GPU rank's D2H lands in (-1: none); else -1 */
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
