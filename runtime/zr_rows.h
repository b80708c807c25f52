/*
** zr_rows.h — the columns of the emitted tables of tensors, modules, buckets, gather groups and
** sub-groups and the optimizer's operands, each listed once. Each X-macro entry is X(ctype, name, dims, kind, gen, meaning): the C
** type and field of zr_plan.h's row struct (dims: an array suffix, or empty), how the generator hands
** the value to the templates (kind: INT, BOOL, STR, INIT, MODKIND, DTYPE, REGION (an index into zg_regions, -1 none), DIMS), the generator's expression
** for it and what it means. The expression is written over the gen/zg_plan.h row `t`, the plan `p`
** and the row index `i`; only gen/lua_plan.c expands it. zr_plan.h builds the structs from these
** lists, gen/lua_plan.c each Lua row and the column lists the templates get
** (enums.columns.<table>), and templates/trainer/zg_tables.c.tpl the designated initializers: a new
** column is one line here plus its uses.
*/
#ifndef ZR_ROWS_H
#define ZR_ROWS_H

#define ZR_TENSOR_COLUMNS(X) \
    X(const char *, name, , STR, t->name, "Hugging Face name, e.g. h.0.attn.c_attn.weight") \
    X(int, ndim, , INT, t->ndim, "1 or 2") \
    X(int64_t, shape, [2], DIMS, t->shape, "[in, out] for linear weights; shape[1] = 0 when ndim == 1") \
    X(int64_t, numel, , INT, t->numel, "elements") \
    X(int, module, , INT, t->module, "owning module") \
    X(int, layer, , INT, t->layer, "block index, or -1") \
    X(int, decay, , BOOL, t->decay, "1: weight decay applies (ndim >= 2)") \
    X(int, init, , INIT, t->init, "ZrInit") \
    X(int, residual_proj, , BOOL, t->residual_proj, "1: init std scaled by 1/sqrt(2*n_layers)") \
    X(int64_t, flat_offset, , INT, t->flat_offset, "start in the flat parameter space") \
    X(int64_t, part_numel, , INT, t->part_numel, "stage 3: slice held per rank; 0 otherwise") \
    X(int64_t, shard_offset, , INT, p->shard.shard_offset ? p->shard.shard_offset[i] : 0, \
      "stage 3: offset of the slice in each rank's shard; 0 otherwise") \
    X(int, persistent, , BOOL, t->persistent, "stage 3: kept gathered on every rank (region persist)") \
    X(int, bucket, , INT, t->reduce_bucket, "gradient reduce bucket") \
    X(int, gather, , INT, t->gather, "stage 3: gather group, -1 if persistent / not stage 3") \
    X(int64_t, gather_offset, , INT, t->gather_offset, "stage 3: start of the gathered tensor in its slot; -1 if none") \
    X(int64_t, persist_offset, , INT, t->persist_offset, "stage 3: start in region persist; -1 if none") \
    X(int64_t, bucket_offset, , INT, t->bucket_offset, "start of its gradient in its bucket buffer")

#define ZR_MODULE_COLUMNS(X) \
    X(const char *, name, , STR, t->name, "embed, h.3, ln_f, lm_head") \
    X(int, kind, , MODKIND, t->kind, "ZrModKind") \
    X(int, layer, , INT, t->layer, "block index, or -1") \
    X(int, first_tensor, , INT, t->first_tensor, "its tensors: [first_tensor, first_tensor + n_tensors)") \
    X(int, n_tensors, , INT, t->n_tensors, "0 for a tied head") \
    X(int, gather, , INT, t->gather_bucket, "stage 3: the gather group it needs (tied lm_head: embed's), -1") \
    X(int64_t, numel, , INT, t->numel, "parameters owned") \
    X(int64_t, use_numel, , INT, t->use_numel, "parameters its forward reads (tied lm_head: numel of wte)")

#define ZR_BUCKET_COLUMNS(X) \
    X(int, first_tensor, , INT, t->first_tensor, "tensors [first_tensor, first_tensor + n_tensors), reduced as one") \
    X(int, n_tensors, , INT, t->n_tensors, "") \
    X(int64_t, numel, , INT, t->numel, "unpadded elements") \
    X(int64_t, padded_numel, , INT, t->padded_numel, "stage 3: sum of per-tensor padded sizes; else numel") \
    X(int64_t, flat_offset, , INT, t->flat_offset, "stages 0-2: start in the flat buffer") \
    X(int, buffer, , INT, t->buffer, "stages 2/3: bucket buffer bucket_<buffer>; else -1")

#define ZR_GATHER_COLUMNS(X) \
    X(int, module, , INT, t->module, "the module it feeds") \
    X(int, first_tensor, , INT, t->first_tensor, "its module's tensors [first_tensor, first_tensor + n_tensors)") \
    X(int, n_tensors, , INT, t->n_tensors, "") \
    X(int64_t, part_numel, , INT, t->part_numel, "per-rank elements gathered") \
    X(int64_t, numel, , INT, t->numel, "elements after gathering (padded)") \
    X(int, slot, , INT, t->slot, "slot of its first GATHER in a micro-step (ops carry theirs)") \
    X(int64_t, shard_offset, , INT, t->shard_offset, "start of the group's span in the rank's shard") \
    X(int64_t, shard_numel, , INT, t->shard_numel, "span length in the shard")

#define ZR_OPTIMIZER_COLUMNS(X) \
    X(int, master, , REGION, t->master, "region of the fp32 master Adam reads (the home itself for fp32 without one)") \
    X(int64_t, master_off, , INT, t->master_off, "its element holding shard element 0") \
    X(int, master_ranked, , BOOL, t->master_ranked, "1: add this rank's flat start (rank x ZG_OPT_FLAT_STRIDE)") \
    X(int, m, , REGION, t->m, "region of Adam's m") \
    X(int64_t, m_off, , INT, t->m_off, "its element holding shard element 0") \
    X(int, v, , REGION, t->v, "region of Adam's v") \
    X(int64_t, v_off, , INT, t->v_off, "its element holding shard element 0") \
    X(int, grad, , REGION, t->grad, "region of the gradients it reads") \
    X(int64_t, grad_off, , INT, t->grad_off, "its element holding shard element 0") \
    X(int, grad_dt, , DTYPE, t->grad_dt, "ZrDtype of the gradients") \
    X(int, grad_ranked, , BOOL, t->grad_ranked, "1: add this rank's flat start") \
    X(int, home, , REGION, t->home, "region the working copy is written to; -1: the master is the home") \
    X(int64_t, home_off, , INT, t->home_off, "its element holding shard element 0") \
    X(int, home_ranked, , BOOL, t->home_ranked, "1: add this rank's flat start") \
    X(int, home_nvme, , BOOL, t->home_nvme, "1: home is param_wb, written back to params_shard on NVMe") \
    X(int, next_master, , REGION, t->next_master, "the speculative step's output: master, m, v; -1 without") \
    X(int, next_m, , REGION, t->next_m, "") \
    X(int, next_v, , REGION, t->next_v, "") \
    X(int64_t, next_off, , INT, t->next_off, "their element holding shard element 0")

#define ZR_SUBGROUP_COLUMNS(X) \
    X(int64_t, shard_offset, , INT, t->shard_offset, "start in this rank's optimizer shard") \
    X(int64_t, numel, , INT, t->numel, "elements") \
    X(int64_t, nvme_offset_bytes, , INT, t->nvme_offset_bytes, "offset in the NVMe state regions; -1 when not on NVMe") \
    X(int, buffer, , INT, t->buffer, "staging buffer opt_buf_<b> or master_buf_<b>; else -1")

#endif
