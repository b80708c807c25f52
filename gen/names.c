/*
** names.c — enum -> name functions of the plan. These names appear in plan.json, plan.txt and the
** emitted tables' comments, so they are part of the output format: change them only on purpose.
*/
#include "zg_plan.h"

/* Every list comes from runtime/zr_enums.h, the one the runtime and the templates use too. */
#define NAME_FN(fn, type, list, count)                                                 \
    const char *fn(type k)                                                             \
    {                                                                                  \
        static const char *const n[] = {list(ZR_ENUM_NAME)};                           \
        if ((unsigned)k >= sizeof n / sizeof n[0] || (count) != sizeof n / sizeof n[0]) \
            zg_unreachable();                                                          \
        return n[k];                                                                   \
    }

NAME_FN(zg_tier_name, ZgTier, ZR_TIER_LIST, ZG_NTIERS)
NAME_FN(zg_memcat_name, ZgMemCat, ZR_MEMCAT_LIST, ZG_NMEM)
NAME_FN(zg_op_name, ZgOpKind, ZR_OP_LIST, ZG_NOPS)
NAME_FN(zg_dtype_name, ZgDtype, ZR_DTYPE_LIST, ZG_DTYPE_FP16 + 1)
NAME_FN(zg_modkind_name, ZgModKind, ZR_MODKIND_LIST, ZG_MOD_HEAD + 1)
NAME_FN(zg_init_name, int, ZR_INIT_LIST, ZG_INIT_ONES + 1)
NAME_FN(zg_xfer_name, int, ZR_XFER_LIST, ZG_NXFERS)
NAME_FN(zg_stream_name, int, ZR_STREAM_LIST, ZG_NSTREAMS)

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
