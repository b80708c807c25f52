/*
** zr_coll_common.c — what every collective transport shares: the operations' names (in messages)
** and the rank-order sum. It references no transport, so the MPI core, the shared-memory and NCCL
** transports and the watchdog all depend on it and it on none of them.
*/
#include <string.h>
#include "zr_coll_int.h"      /* defines: zr_coll_reduce */
#include "zr_half.h"          /* defines: zr_bf16_to_f32 & co. */

const char *zr_coll_op_name(ZrCollOp op)
{
    static const char *names[] = {"all_gather", "reduce_scatter", "all_reduce", "broadcast",
                                  "barrier"};
    return (unsigned)op < ZR_COLL_NOPS ? names[op] : "?";
}

/* out[j] = sum over r = 0..W-1 of in[r][j], in rank order, accumulated in fp32 and rounded once.
** Chunked so that the accumulator stays in L1: each input is read once and out written once. */
void zr_coll_reduce(const void *const *in, void *out, int64_t n, int world, ZrDtype dt)
{
    enum { CH = 2048 };
    float acc[CH];
    for (int64_t j0 = 0; j0 < n; j0 += CH) {
        int64_t k = n - j0 < CH ? n - j0 : CH;
        if (dt == ZR_DT_FP32) {
            memcpy(acc, (const float *)in[0] + j0, (size_t)k * 4);
            for (int r = 1; r < world; r++) {
                const float *b = (const float *)in[r] + j0;
                for (int64_t j = 0; j < k; j++) acc[j] += b[j];
            }
            memcpy((float *)out + j0, acc, (size_t)k * 4);
            continue;
        }
        for (int r = 0; r < world; r++) {
            const uint16_t *b = (const uint16_t *)in[r] + j0;
            if (dt == ZR_DT_BF16) {
                if (r == 0) for (int64_t j = 0; j < k; j++) acc[j] = zr_bf16_to_f32(b[j]);
                else for (int64_t j = 0; j < k; j++) acc[j] += zr_bf16_to_f32(b[j]);
            } else {
                if (r == 0) for (int64_t j = 0; j < k; j++) acc[j] = zr_fp16_to_f32(b[j]);
                else for (int64_t j = 0; j < k; j++) acc[j] += zr_fp16_to_f32(b[j]);
            }
        }
        if (dt == ZR_DT_BF16) zr_f32_to_bf16_n((uint16_t *)out + j0, acc, k);
        else zr_f32_to_fp16_n((uint16_t *)out + j0, acc, k);
    }
}
