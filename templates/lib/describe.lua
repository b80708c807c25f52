-- describe.lua — what each emitted table row means, in words, for its trailing comment.
-- Reads the plan (the `plan` of the environment) only inside functions.
local M = {}

local function module_name(i) return plan.modules[i + 1].name end
local function tensor_name(i) return plan.tensors[i + 1].name end

-- "wte.weight" or "h.0.ln_1.weight .. h.0.mlp.c_proj.bias (12 tensors)"
local function tensor_span(first, n)
  if n == 1 then return tensor_name(first) end
  return string.format("%s .. %s (%d tensors)", tensor_name(first), tensor_name(first + n - 1), n)
end

function M.tensor(t)
  local init = t.init
  if init == "normal" and t.residual_proj then init = "normal/sqrt(2L)" end
  local s = string.format("%s of %s, %s init, %s", shape.text(t), module_name(t.module), init,
                          t.decay and "decayed" or "no decay")
  if plan.zero.stage == 3 then
    if t.persistent then
      s = s .. ", persistent"
    else
      s = s .. string.format(", gathered in group %d", t.gather)
    end
  end
  return s
end

function M.module(m)
  local s = m.name .. ": "
  if m.n_tensors == 0 then
    s = s .. "owns no tensor"
    if plan.tied_tensor >= 0 then s = s .. ", uses " .. tensor_name(plan.tied_tensor) .. " (tied)" end
  else
    s = s .. tensor_span(m.first_tensor, m.n_tensors) .. string.format(", %d parameters", m.numel)
  end
  if m.gather >= 0 then s = s .. string.format(", gather group %d", m.gather) end
  return s
end

function M.bucket(b)
  local s = string.format("%s, %d elements", tensor_span(b.first_tensor, b.n_tensors), b.numel)
  if b.padded_numel ~= b.numel then s = s .. string.format(" (%d padded)", b.padded_numel) end
  if b.buffer >= 0 then s = s .. string.format(", buffer bucket_%d", b.buffer) end
  return s
end

function M.gather(g)
  return string.format("%s's %s, %d per rank -> %d gathered, first in slot %d",
                       module_name(g.module), tensor_span(g.first_tensor, g.n_tensors),
                       g.part_numel, g.numel, g.slot)
end

-- fp32 stage 3 with the parameters on NVMe and the optimizer in memory: the NVMe parameter shard
-- is the master, so SWAP_IN / SWAP_OUT move it through master_buf_<b> (gen/zg_plan.h, ZgSgSwap).
local function params_are_master()
  local z = plan.zero
  return z.stage == 3 and z.dtype == "fp32" and z.offload_param.device == "nvme" and
         z.offload_optimizer.device == "none"
end

function M.subgroup(sg)
  local s = "shard elements " .. shape.range(sg.shard_offset, sg.numel)
  if sg.nvme_offset_bytes >= 0 then
    s = s .. string.format(", NVMe offset %d, staged in %s_%d", sg.nvme_offset_bytes,
                           params_are_master() and "master_buf" or "opt_buf", sg.buffer)
  end
  return s
end

local region_meaning = {
  params16 = "every parameter, working dtype, flat order",
  params_shard = "this rank's parameter shard, working dtype",
  persist = "persistent tensors, whole",
  gather_slot = "one gathered parameter group",
  param_buf = "parameter span brought in by PARAM_SWAP_IN",
  param_wb = "parameter write-back buffer of one sub-group",
  grads = "every gradient, flat order",
  bucket = "gradient bucket buffer",
  grad32 = "owned fp32 gradient shard",
  master = "fp32 master parameters, owned shard",
  adam_m = "Adam first moment, owned shard",
  adam_v = "Adam second moment, owned shard",
  opt_buf = "NVMe staging of one sub-group's master|m|v",
  master_buf = "NVMe staging of one sub-group's fp32 parameters (the master)",
  bucket_recv = "this rank's reduce-scattered chunk of a gradient bucket",
  grad_stage = "module gradient area: fp32 gradients of one module",
  tied_grad = "fp32 wte gradient from lm_head to embed's backward",
  acts = "activations of one micro-batch",
  scratch = "backward scratch",
}

-- An optimizer row: where Adam reads the master and the gradients and writes the working copy.
local function region_name(i) return i >= 0 and plan.mem.regions[i + 1].name or "none" end
function M.optimizer(o)
  local s = string.format("master in %s, m/v in %s/%s, gradients in %s (%s)", region_name(o.master),
                          region_name(o.m), region_name(o.v), region_name(o.grad), o.grad_dt)
  if o.home >= 0 then
    s = s .. ", working copy to " .. region_name(o.home) .. (o.home_nvme and " then NVMe" or "")
  end
  if o.next_master >= 0 then s = s .. ", speculative into " .. region_name(o.next_master) end
  return s
end

function M.region(r)
  local what = region_meaning[r.name] or region_meaning[r.name:gsub("_%d+$", "")] or r.cat
  return string.format("%s: %s, %s", r.tier, what, shape.bytes(r.bytes))
end

-- Compute ops (forward/backward) between position k and the next op of `kind` on `arg` in list;
-- returns that count and the position found (nil if none).
local function compute_until(list, k, kind, arg)
  local n = 0
  for j = k + 1, #list do
    local o = list[j]
    if o.kind == kind and o.arg == arg then return n, j end
    if o.kind == "forward" or o.kind == "backward" then n = n + 1 end
  end
  return n, nil
end

-- The forward/backward that follows position k: "forward of h.2".
local function next_use(list, k)
  for j = k + 1, #list do
    local o = list[j]
    if o.kind == "forward" or o.kind == "backward" then return o.kind .. " of " .. module_name(o.arg) end
  end
  return "nothing"
end

local function gather_owner(g) return module_name(plan.gathers[g + 1].module) end

local function opt_where()
  local d = plan.zero.offload_optimizer.device
  return d == "nvme" and "NVMe" or d == "cpu" and "host memory" or "memory"
end

-- The meaning of op `o`, the k-th (1-based) of `list`.
function M.op(o, list)
  local k, a = o.kind, o.arg
  if k == "gather" then
    local dist, w = compute_until(list, o.index + 1, "wait_gather", a)
    local use = w and next_use(list, w) or "a later micro-step"
    return string.format("all-gather %s's shards into slot %d for %s (prefetch distance %d)",
                         gather_owner(a), o.slot, use, dist)
  elseif k == "wait_gather" then
    return string.format("wait for %s's parameters in slot %d", gather_owner(a), o.slot)
  elseif k == "release" then
    return string.format("slot %d (%s's parameters) may be reused", o.slot, gather_owner(a))
  elseif k == "forward" then
    if o.slot == 1 then        -- ZR_RECOMPUTE: activation checkpointing, right before its backward
      return "recompute forward of " .. module_name(a) .. " from its kept input (activation checkpointing)"
    end
    return "forward of " .. module_name(a)
  elseif k == "backward" then
    return "backward of " .. module_name(a)
  elseif k == "grad_copy" then
    local b, from = plan.buckets[a + 1], "the module's"
    for j = o.index, 1, -1 do             -- the module of the preceding backward
      if list[j].kind == "backward" then from = module_name(list[j].arg) .. "'s"; break end
    end
    return string.format("copy %s gradients in bucket %d into bucket_%d", from, a, b.buffer)
  elseif k == "reduce" then
    local b = plan.buckets[a + 1]
    return string.format("%s bucket %d: %s", plan.zero.stage == 3 and "reduce-scatter" or "all-reduce",
                         a, tensor_span(b.first_tensor, b.n_tensors))
  elseif k == "wait_reduce" then
    if plan.zero.stage >= 2 then
      return string.format("wait for bucket %d; add this rank's part into grad32", a)
    end
    return string.format("wait for bucket %d's all-reduce", a)
  elseif k == "swap_in" then
    if params_are_master() then
      return string.format("read sub-group %d's fp32 parameters (the master) from NVMe into master_buf_%d",
                           a, plan.subgroups[a + 1].buffer)
    end
    return string.format("read sub-group %d's master, m, v from %s into opt_buf_%d",
                         a, opt_where(), plan.subgroups[a + 1].buffer)
  elseif k == "optimizer" then
    local sg = plan.subgroups[a + 1]
    return string.format("%s on sub-group %d: shard elements %s",
                         plan.zero.adam_w_mode and "AdamW" or "Adam", a, shape.range(sg.shard_offset, sg.numel))
  elseif k == "swap_out" then
    if params_are_master() then
      return string.format("write sub-group %d's updated fp32 parameters back to NVMe", a)
    end
    return string.format("write sub-group %d's master, m, v back to %s", a, opt_where())
  elseif k == "allgather_params" then
    if plan.zero.stage == 3 then
      return string.format("re-gather the persistent tensors (%d elements) into persist",
                           plan.shard.persist_numel)
    end
    return string.format("all-gather the updated parameters (%d per rank)", plan.shard.part_numel)
  elseif k == "param_swap_in" then
    return string.format("bring %s's shard span from %s into param_buf_%d", gather_owner(a),
                         plan.zero.offload_param.device == "nvme" and "NVMe" or "host memory", o.slot)
  end
  return k .. " " .. a
end

return M
