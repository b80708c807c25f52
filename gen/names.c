/*
** names.c — enum -> name functions of the plan. These names appear in plan.json, plan.txt and the
** emitted tables' comments, so they are part of the output format: change them only on purpose.
*/
#include "zg.h"

const char *zg_tier_name(ZgTier t)
{
    switch (t) {
    case ZG_TIER_DEVICE: return "device";
    case ZG_TIER_PINNED: return "pinned";
    case ZG_TIER_HOST: return "host";
    case ZG_TIER_NVME: return "nvme";
    case ZG_NTIERS: break;
    }
    zg_unreachable();
}

const char *zg_memcat_name(ZgMemCat c)
{
    switch (c) {
    case ZG_MEM_PARAM16: return "param16";
    case ZG_MEM_MASTER: return "master";
    case ZG_MEM_GRAD: return "grad";
    case ZG_MEM_ADAM_M: return "adam_m";
    case ZG_MEM_ADAM_V: return "adam_v";
    case ZG_MEM_GATHER_SLOTS: return "gather_slots";
    case ZG_MEM_COMM_BUCKETS: return "comm_buckets";
    case ZG_MEM_SWAP_BUFFERS: return "swap_buffers";
    case ZG_MEM_ACTIVATIONS: return "activations";
    case ZG_MEM_STAGING: return "staging";
    case ZG_NMEM: break;
    }
    zg_unreachable();
}

const char *zg_op_name(ZgOpKind k)
{
    switch (k) {
    case ZG_OP_GATHER: return "GATHER";
    case ZG_OP_WAIT_GATHER: return "WAIT_GATHER";
    case ZG_OP_RELEASE: return "RELEASE";
    case ZG_OP_FORWARD: return "FORWARD";
    case ZG_OP_BACKWARD: return "BACKWARD";
    case ZG_OP_REDUCE: return "REDUCE";
    case ZG_OP_WAIT_REDUCE: return "WAIT_REDUCE";
    case ZG_OP_SWAP_IN: return "SWAP_IN";
    case ZG_OP_OPTIMIZER: return "OPTIMIZER";
    case ZG_OP_SWAP_OUT: return "SWAP_OUT";
    case ZG_OP_ALLGATHER_PARAMS: return "ALLGATHER_PARAMS";
    case ZG_OP_PARAM_SWAP_IN: return "PARAM_SWAP_IN";
    case ZG_OP_GRAD_COPY: return "GRAD_COPY";
    case ZG_NOPS: break;
    }
    zg_unreachable();
}

const char *zg_dtype_name(ZgDtype d)
{
    switch (d) {
    case ZG_DTYPE_FP32: return "fp32";
    case ZG_DTYPE_BF16: return "bf16";
    case ZG_DTYPE_FP16: return "fp16";
    }
    zg_unreachable();
}

int zg_dtype_size(ZgDtype d)
{
    return d == ZG_DTYPE_FP32 ? 4 : 2;
}

const char *zg_offload_name(ZgOffload o)
{
    switch (o) {
    case ZG_OFFLOAD_NONE: return "none";
    case ZG_OFFLOAD_CPU: return "cpu";
    case ZG_OFFLOAD_NVME: return "nvme";
    }
    zg_unreachable();
}

const char *zg_modkind_name(ZgModKind k)
{
    switch (k) {
    case ZG_MOD_EMBED: return "embed";
    case ZG_MOD_BLOCK: return "block";
    case ZG_MOD_FINAL_NORM: return "final_norm";
    case ZG_MOD_HEAD: return "head";
    }
    zg_unreachable();
}

const char *zg_init_name(int init)
{
    switch (init) {
    case ZG_INIT_NORMAL: return "normal";
    case ZG_INIT_ZEROS: return "zeros";
    case ZG_INIT_ONES: return "ones";
    }
    zg_unreachable();
}
