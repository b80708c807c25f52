@@ local W = 32
/*
** zg_tables.h — the static tables of the ${plan.model.name} trainer (defined in zg_tables.c) and
** index names into them. Loop with the ZG_N_* counts of zg_model.h, never sizeof: a table without
** rows holds one placeholder row.
*/
#ifndef ZG_TABLES_H
#define ZG_TABLES_H
#include <stdint.h>
#include "zr_plan.h"       /* defines: the row types */
#include "zg_model.h"      /* defines: ZG_* constants, the table sizes */
#include "zr_st.h"         /* defines: ZrHfKey */

extern const ZrTensorRow   zg_tensors[];        /* ZG_N_TENSORS, Hugging Face order */
extern const ZrModuleRow   zg_modules[];        /* ZG_N_MODULES, forward order */
extern const ZrBucketRow   zg_buckets[];        /* ZG_N_BUCKETS, reduction order */
extern const ZrGatherRow   zg_gathers[];        /* ZG_N_GATHERS (stage 3) */
extern const ZrSubGroupRow zg_subgroups[];      /* ZG_N_SUBGROUPS of this rank's optimizer shard */
extern const ZrOptRow      zg_optimizers[];     /* ZG_N_SUBGROUPS: each one's Adam operands */
extern const ZrRegionRow   zg_regions[];        /* ZG_N_REGIONS, every buffer of every tier */
extern const int           zg_region_file[];    /* ZG_N_REGIONS: swap file of each NVMe region */
extern const ZrOpRow       zg_micro_ops[];      /* ZG_N_MICRO_OPS: micro-steps 0 .. accum-2 */
extern const ZrOpRow       zg_last_micro_ops[]; /* ZG_N_LAST_MICRO_OPS: the last micro-step */
extern const ZrOpRow       zg_step_ops[];       /* ZG_N_STEP_OPS: the optimizer step */
extern const int64_t zg_tier_bytes[ZR_NTIERS];  /* arena bytes per tier per rank */
extern const int64_t zg_peak_bytes[ZR_NTIERS];  /* peak bytes per tier per rank */
extern const int64_t zg_cat_bytes[ZR_NTIERS][ZR_NMEM];  /* bytes per tier and ZrMemCat */
extern const ZrHfKey       zg_hf_config[];      /* ZG_N_HF_CONFIG: config.json keys (zr_st.h) */
extern const char *const   zg_hf_ignore[];      /* ZG_N_HF_IGNORE: checkpoint names --init-from skips */

/* Regions: index in zg_regions. */
enum {
@@ for _, r in ipairs(plan.mem.regions) do
    ${cfmt.pad("ZG_REGION_" .. cfmt.ident(r.name), W)}= ${cfmt.pad(r.index .. ",", 4)}/* ${r.tier}, ${shape.bytes(r.bytes)} */
@@ end
    ZG_REGION_END_ = ${#plan.mem.regions}
};

/* Every region name of runtime/zr_enums.h's ZR_REGION_LIST: its index in zg_regions, -1 when the
** plan has none (zg_model.h's ZG_HAS_* say which). */
@@ local at = {}
@@ for _, r in ipairs(plan.mem.regions) do at[r.name] = r.index end
@@ for _, n in ipairs(enums.regions) do
#define ${cfmt.pad("ZG_RG_" .. n:upper(), W)}${at[n] or -1}
@@ end

/* Modules: index in zg_modules; block l is ZG_MODULE_BLOCK0 + l. */
enum {
@@ for _, m in ipairs(plan.modules) do
@@   if m.kind ~= "block" then
    ${cfmt.pad("ZG_MODULE_" .. cfmt.ident(m.name), W)}= ${m.index},
@@   elseif m.layer == 0 then
    ${cfmt.pad("ZG_MODULE_BLOCK0", W)}= ${m.index},
@@   end
@@ end
};

/* Tensors outside the blocks: index in zg_tensors. */
enum {
@@ for _, t in ipairs(plan.tensors) do
@@   if t.layer < 0 then
    ${cfmt.pad("ZG_T_" .. cfmt.ident(t.name), W)}= ${t.index},
@@   end
@@ end
};

/* A block's tensors: offset from its module's first_tensor (the same for every block). */
enum {
@@ local b0 = nil
@@ for _, m in ipairs(plan.modules) do if m.kind == "block" and m.layer == 0 then b0 = m end end
@@ if b0 then
@@   for i = 0, b0.n_tensors - 1 do
@@     local t = plan.tensors[b0.first_tensor + i + 1]
    ${cfmt.pad("ZG_LT_" .. cfmt.ident(t.field), W)}= ${i},
@@   end
@@ end
    ${cfmt.pad("ZG_LT_COUNT", W)}= ${b0 and b0.n_tensors or 0}
};

#endif
