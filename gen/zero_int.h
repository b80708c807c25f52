/*
** zero_int.h — what zero.c (the walk of a DeepSpeed config against the key table) hands to
** zero_rules.c (the rules between keys, checked once the walk has seen every key): where each key
** was found and the facts the rules need. Not part of the generator's interface (zg.h).
*/
#ifndef ZG_ZERO_INT_H
#define ZG_ZERO_INT_H
#include "zg.h"

typedef struct Ctx {
    const ZgModel *m;
    ZgZero *z;
    bool fp16, bf16, overlap_set, sum_op, lr_given;
    ZgLoc fp16_loc, bf16_loc, sum_loc, ratio_loc, agb_loc;
    ZgLoc bc_loc[2];            /* buffer_count of offload_param [0] / offload_optimizer [1] */
    ZgLoc nvme_loc[2];          /* nvme_path of offload_param [0] / offload_optimizer [1] */
    bool nvme_set[2];
    const char *comm;           /* communication_data_type, NULL = default */
    ZgLoc comm_loc;
    const char *sched;          /* scheduler type */
    bool total_given;
    bool stopped;               /* MAX_REPORTED errors: the walk stopped */
    /* "auto" keys resolved once the walk has seen every key (zero_auto.c) */
    bool fp16_auto, bf16_auto, wmax_auto, rbs_auto, prefetch_auto, persist_auto;
} Ctx;

void zg_zero_rules(Ctx *c);
/* zero_auto.c: a config key read with a value (where the setting came from); an "auto" value,
** filled as HF's Trainer fills it or refused; after the walk, what depends on other keys or on the
** spec (the spec's train.* for keys the config leaves out, agreement with the ones it sets, the
** precision, the sizing keys). */
void zg_zero_mark(Ctx *c, const char *what, ZgLoc at);
void zg_zero_auto(Ctx *c, const char *what, const ZgKey *k, const ZgNode *v);
void zg_zero_auto_finish(Ctx *c);
/* amp: {enabled: "auto"}: off (HF enables it only for its Apex backend), recorded; else false. */
bool zg_zero_amp_auto(Ctx *c, const ZgNode *v);
#endif
