@@ local function b(x) return cfmt.bool(x) end
@@ local function reg(i) return i < 0 and "-1" or "ZG_REGION_" .. cfmt.ident(plan.mem.regions[i + 1].name) end
@@ local tiers = enums.tiers
@@ local cats = enums.memcats
/*
** zg_tables.c — the static tables of the ${plan.model.name} trainer: the partition map, every
** buffer's place, and the schedule of a step, as zgen planned them for ${plan.model.world_size} rank(s),
** ZeRO stage ${plan.zero.stage}, ${plan.zero.dtype}. The trainer executes these; it decides nothing at
** run time. Row types: zr_plan.h; the columns and their meaning: zr_rows.h (and zgen's gen/zg_plan.h).
*/
#include "zg_tables.h"

/* ---------------------------------------------------------------------- tensors */
@@ -- a row of one of runtime/zr_rows.h's tables as designated initializers, each column as its kind writes it
@@ local column = {
@@   INT = function(t, n) return string.format("%d", t[n]) end,
@@   BOOL = function(t, n) return b(t[n]) end,
@@   STR = function(t, n) return cfmt.str(t[n]) end,
@@   INIT = function(t, n) return "ZR_INIT_" .. t[n]:upper() end,
@@   MODKIND = function(t, n) return "ZR_MOD_" .. t[n]:upper() end,
@@   DTYPE = function(t, n) return "ZR_DT_" .. t[n]:upper() end,
@@   REGION = function(t, n) return reg(t[n]) end,
@@   DIMS = function(t) return shape.c_dims(t) end,
@@ }
@@ local function cells(table_name, t)
@@   local out = {}
@@   for _, c in ipairs(enums.columns[table_name]) do out[#out + 1] = "." .. c.name .. " = " .. column[c.kind](t, c.name) end
@@   return out
@@ end
@@ local R = rows.new()
@@ for _, t in ipairs(plan.tensors) do
@@   R:add(cells("tensor", t), string.format("%d: ", t.index) .. describe.tensor(t))
@@ end
const ZrTensorRow zg_tensors[${R:size()}] = {
${R:render("    ", "no tensors")}
};

/* ---------------------------------------------------------------------- modules, forward order */
@@ R = rows.new()
@@ for _, m in ipairs(plan.modules) do
@@   R:add(cells("module", m), string.format("%d: ", m.index) .. describe.module(m))
@@ end
const ZrModuleRow zg_modules[${R:size()}] = {
${R:render("    ", "no modules")}
};

/* ---------------------------------------------------------------------- gradient buckets, reduction order */
@@ R = rows.new()
@@ for _, k in ipairs(plan.buckets) do
@@   R:add(cells("bucket", k), string.format("bucket %d: ", k.index) .. describe.bucket(k))
@@ end
const ZrBucketRow zg_buckets[${R:size()}] = {
${R:render("    ", "no gradient buckets")}
};

/* ---------------------------------------------------------------------- stage-3 gather groups */
@@ R = rows.new()
@@ for _, g in ipairs(plan.gathers) do
@@   R:add(cells("gather", g), string.format("group %d: ", g.index) .. describe.gather(g))
@@ end
const ZrGatherRow zg_gathers[${R:size()}] = {
${R:render("    ", "no gather groups below stage 3")}
};

/* ---------------------------------------------------------------------- optimizer sub-groups */
@@ R = rows.new()
@@ for _, s in ipairs(plan.subgroups) do
@@   R:add(cells("subgroup", s), string.format("sub-group %d: ", s.index) .. describe.subgroup(s))
@@ end
const ZrSubGroupRow zg_subgroups[${R:size()}] = {
${R:render("    ", "no optimizer sub-groups")}
};

/* Each sub-group's Adam operands (gen/lower.c): regions by index, offsets of shard element 0. */
@@ R = rows.new()
@@ for _, o in ipairs(plan.optimizers) do
@@   R:add(cells("optimizer", o), string.format("sub-group %d: ", o.index) .. describe.optimizer(o))
@@ end
const ZrOptRow zg_optimizers[${R:size()}] = {
${R:render("    ", "no optimizer sub-groups")}
};

/* ---------------------------------------------------------------------- memory regions */
@@ R = rows.new()
@@ for _, r in ipairs(plan.mem.regions) do
@@   R:add({cfmt.str(r.name), "ZR_MEM_" .. r.cat:upper(), "ZR_TIER_" .. r.tier:upper(), r.offset_bytes,
@@          r.bytes}, describe.region(r))
@@ end
/* name, cat, tier, offset_bytes, bytes */
const ZrRegionRow zg_regions[${R:size()}] = {
${R:render("    ", "no regions")}
};

/* The swap file of each region (NVMe tier: ZG_NVME_FILE_DIR_<file>; 0 for the other tiers). */
const int zg_region_file[${#plan.mem.regions > 0 and #plan.mem.regions or 1}] = {
@@ for _, r in ipairs(plan.mem.regions) do
    ${r.file},  /* ${r.name} */
@@ end
@@ if #plan.mem.regions == 0 then
    0,
@@ end
};

/* Arena bytes per tier per rank, and the peak over a step. */
const int64_t zg_tier_bytes[ZR_NTIERS] = {
@@ for _, t in ipairs(tiers) do
    ${cfmt.pad(plan.mem.tier_bytes[t] .. ",", 16)}/* ${t}: ${shape.bytes(plan.mem.tier_bytes[t])} */
@@ end
};
const int64_t zg_peak_bytes[ZR_NTIERS] = {
@@ for _, t in ipairs(tiers) do
    ${cfmt.pad(plan.mem.peak_bytes[t] .. ",", 16)}/* ${t} */
@@ end
};
/* Bytes per tier and category: ${table.concat(cats, ", ")}. */
const int64_t zg_cat_bytes[ZR_NTIERS][ZR_NMEM] = {
@@ for _, t in ipairs(tiers) do
@@   local v = {}
@@   for i, c in ipairs(cats) do v[i] = string.format("%d", plan.mem.cat_bytes[t][c]) end
    {${table.concat(v, ", ")}},  /* ${t} */
@@ end
};

/* ---------------------------------------------------------------------- the schedule */
@@ for _, l in ipairs({{"zg_micro_ops", plan.sched.micro, "every micro-step but the last of an optimizer step (only with gradient_accumulation_steps > 1)"},
@@                     {"zg_last_micro_ops", plan.sched.last, "the last micro-step of each optimizer step"},
@@                     {"zg_step_ops", plan.sched.step, "the optimizer step, after the last micro-step"}}) do
@@   R = rows.new()
@@   for _, o in ipairs(l[2]) do
@@     R:add({"ZR_OP_" .. o.kind:upper(), o.arg, o.slot, "ZR_XFER_" .. o.xfer:upper(),
@@            "ZR_STREAM_" .. o.stream:upper(), reg(o.src), reg(o.dst), o.src_off, o.dst_off, o.count,
@@            "ZR_DT_" .. o.src_dt:upper(), "ZR_DT_" .. o.dst_dt:upper(), b(o.accumulate), o.flat},
@@           describe.op(o, l[2]))
@@   end
/* ${l[3]}: kind, arg, slot, xfer, stream, src, dst, src_off, dst_off, count, src_dt, dst_dt,
** accumulate, flat (gen/lower.c) */
const ZrOpRow ${l[1]}[${R:size()}] = {
${R:render("    ", "no operations")}
};

@@ end
/* ---------------------------------------------------------------------- Hugging Face config.json */
@@ local function cs(x) return x and cfmt.str(x) or "NULL" end
@@ R = rows.new()
@@ for _, k in ipairs(plan.hf_config) do
@@   R:add({cs(k.key), cs(k.alt), cs(k.value), cs(k.absent), b(k.write), b(k.check)},
@@         k.write and k.check and "exported, checked" or k.write and "exported" or "checked")
@@ end
/* key, alt, value (JSON), absent (what transformers assumes when missing; NULL required, "" any),
** write (--export's config.json), check (an --init-from config.json must agree); gen/hf_config.c */
const ZrHfKey zg_hf_config[${R:size()}] = {
${R:render("    ", "no config.json for this arch")}
};
/* Tensors of a Hugging Face checkpoint that --init-from skips (".x": names ending in .x). */
const char *const zg_hf_ignore[${#plan.hf_ignore > 0 and #plan.hf_ignore or 1}] = {
@@ for _, s in ipairs(plan.hf_ignore) do
    ${cfmt.str(s)},
@@ end
@@ if #plan.hf_ignore == 0 then
    NULL,  /* none */
@@ end
};

/* Each table agrees with its count in zg_model.h (a placeholder row stands in for none). */
@@ for _, c in ipairs({{"zg_tensors", "TENSORS"}, {"zg_modules", "MODULES"}, {"zg_buckets", "BUCKETS"},
@@                     {"zg_gathers", "GATHERS"}, {"zg_subgroups", "SUBGROUPS"}, {"zg_optimizers", "SUBGROUPS"},
@@                     {"zg_regions", "REGIONS"},
@@                     {"zg_micro_ops", "MICRO_OPS"}, {"zg_last_micro_ops", "LAST_MICRO_OPS"},
@@                     {"zg_step_ops", "STEP_OPS"}, {"zg_hf_config", "HF_CONFIG"}, {"zg_hf_ignore", "HF_IGNORE"}}) do
_Static_assert(sizeof ${c[1]} / sizeof ${c[1]}[0] == (ZG_N_${c[2]} > 0 ? ZG_N_${c[2]} : 1), "${c[1]}");
@@ end
