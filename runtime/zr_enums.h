/*
** zr_enums.h — the one list of the plan's enumerations, shared by the generator (gen/zg.h,
** gen/zg_plan.h, gen/names.c), the runtime's table types (zr_plan.h) and the templates (gen/lua.c
** hands every list to Lua as `enums`). Each list is an X-macro: X(UPPER, "name") per enumerator, in
** enum order. The generator builds ZG_<KIND>_<UPPER>, the runtime ZR_<KIND>_<UPPER>, and both take
** the name strings from here, so the generator, the emitted tables and the trainer cannot drift
** apart: adding an enumerator here adds it everywhere. The names are part of the output format
** (plan.json, plan.txt, emitted comments): change them only on purpose.
** Meaning of each enumerator: gen/zg_plan.h (ops, regions, collectives) and gen/zg.h (config).
*/
#ifndef ZR_ENUMS_H
#define ZR_ENUMS_H

/* Memory tiers, fastest first. */
#define ZR_TIER_LIST(X) \
    X(DEVICE, "device") X(PINNED, "pinned") X(HOST, "host") X(NVME, "nvme")

/* Element types of parameters, gradients and communication. */
#define ZR_DTYPE_LIST(X) X(FP32, "fp32") X(BF16, "bf16") X(FP16, "fp16")

/* Memory categories of the plan's regions. */
#define ZR_MEMCAT_LIST(X) \
    X(PARAM16, "param16") X(MASTER, "master") X(GRAD, "grad") X(ADAM_M, "adam_m") \
    X(ADAM_V, "adam_v") X(GATHER_SLOTS, "gather_slots") X(COMM_BUCKETS, "comm_buckets") \
    X(SWAP_BUFFERS, "swap_buffers") X(ACTIVATIONS, "activations") X(STAGING, "staging")

/* Schedule operations (gen/zg_plan.h explains each). */
#define ZR_OP_LIST(X) \
    X(GATHER, "GATHER") X(WAIT_GATHER, "WAIT_GATHER") X(RELEASE, "RELEASE") \
    X(FORWARD, "FORWARD") X(BACKWARD, "BACKWARD") X(REDUCE, "REDUCE") \
    X(WAIT_REDUCE, "WAIT_REDUCE") X(SWAP_IN, "SWAP_IN") X(OPTIMIZER, "OPTIMIZER") \
    X(SWAP_OUT, "SWAP_OUT") X(ALLGATHER_PARAMS, "ALLGATHER_PARAMS") \
    X(PARAM_SWAP_IN, "PARAM_SWAP_IN") X(GRAD_COPY, "GRAD_COPY") X(GRAD_SHIP, "GRAD_SHIP") X(GRAD_KEEP, "GRAD_KEEP") \
    X(GRAD_ADD, "GRAD_ADD")

/* Module kinds of the model IR. */
#define ZR_MODKIND_LIST(X) \
    X(EMBED, "embed") X(BLOCK, "block") X(FINAL_NORM, "final_norm") X(HEAD, "head")

/* Parameter initialisations. */
#define ZR_INIT_LIST(X) X(NORMAL, "normal") X(ZEROS, "zeros") X(ONES, "ones")

/* What a lowered op row moves (gen/lower.c): the collective, copy or transfer it starts or ends. */
#define ZR_XFER_LIST(X) \
    X(NONE, "none") X(ALL_GATHER, "all_gather") X(ALL_REDUCE, "all_reduce") \
    X(REDUCE_SCATTER, "reduce_scatter") X(COPY, "copy") X(NVME_READ, "nvme_read") \
    X(NVME_WRITE, "nvme_write")

/* The stream (queue) a lowered op row runs on. */
#define ZR_STREAM_LIST(X) \
    X(HOST, "host") X(COMPUTE, "compute") X(COMM, "comm") X(H2D, "h2d") X(D2H, "d2h")

/* The plan's regions by name (gen/zg_plan.h, MEMORY, says what each holds): one X per name
** gen/memplan.c may lay out, so a trainer asks "is it there" of a compile-time constant
** (zg_model.h: ZG_HAS_<UPPER> in memory, ZG_ON_NVME_<UPPER> on NVMe), never of a pointer. */
#define ZR_REGION_LIST(X) \
    X(PARAMS16, "params16") X(PARAMS_SHARD, "params_shard") X(PERSIST, "persist") \
    X(PARAM_WB, "param_wb") X(GRADS, "grads") X(GRAD32, "grad32") X(GRAD16, "grad16") \
    X(GRAD_ACC, "grad_acc") X(MASTER, "master") X(ADAM_M, "adam_m") X(ADAM_V, "adam_v") \
    X(MASTER_NEXT, "master_next") X(ADAM_M_NEXT, "adam_m_next") X(ADAM_V_NEXT, "adam_v_next") \
    X(MASTER_DEV, "master_dev") X(ADAM_M_DEV, "adam_m_dev") X(ADAM_V_DEV, "adam_v_dev") \
    X(GRAD_KEEP, "grad_keep") X(NORM_LANES, "norm_lanes") X(NORM_LANES_LAND, "norm_lanes_land") \
    X(NORM_PIECES, "norm_pieces") X(NVME_BOUNCE, "nvme_bounce") X(GRAD_LAND, "grad_land") \
    X(PARAM_LAND, "param_land") X(PERSIST_LAND, "persist_land") X(GRAD_STAGE, "grad_stage") \
    X(TIED_GRAD, "tied_grad") X(ACTS, "acts") X(SCRATCH, "scratch")

/* Numbered regions "<prefix><i>", i = 0 .. n-1 (zg_model.h: ZG_N_<UPPER> = n). */
#define ZR_REGION_FAMILY_LIST(X) \
    X(GATHER_SLOT, "gather_slot_") X(PARAM_BUF, "param_buf_") X(MASTER_BUF, "master_buf_") \
    X(BUCKET, "bucket_") X(BUCKET_RECV, "bucket_recv_") X(OPT_BUF, "opt_buf_")

/* Helpers: X(UPPER, "name") -> the name string, for name tables indexed by the enum. */
#define ZR_ENUM_NAME(u, s) s,

#endif
