/*
** plan_int.h — what plan.c (the partition map) shares with the steps above it, size.c (the sizing
** step), fit.c (the fit check and a refusal's advice) and advise.c: DeepSpeed's defaults of the
** sizing keys and the partition's figures. Not part of the generator's interface (zg_plan.h).
*/
#ifndef ZG_PLAN_INT_H
#define ZG_PLAN_INT_H
#include "zg_plan.h"

/* DeepSpeed's defaults of the sizing keys the planner chooses itself when the config leaves them. */
#define DS_REDUCE_BUCKET 500000000
#define DS_PREFETCH 50000000
#define DS_MAX_LIVE 1000000000
#define DS_SUB_GROUP 1000000000

/* plan.c: a sizing key is the planner's to choose (the config did not set it, it holds ds). */
bool zg_plan_left_default(const ZgZero *z, unsigned bit, int64_t v, int64_t ds);
/* plan.c: ranks sharing a node's host memory (gpus_per_node, at most the world size) */
int zg_plan_ranks_per_node(const ZgModel *m);
/* plan.c: pinned staging bytes per sub-group element; the largest sub-group's elements */
int64_t zg_plan_swap_bytes_per_elem(const ZgPlan *p);
int64_t zg_plan_sg_largest(const ZgPlan *p);
/* plan.c: the device optimizer part is p's first k sub-groups (and what follows from that) */
void zg_plan_set_dev_opt(ZgPlan *p, int k);
/* plan.c: rows of the emitted tables; whether a per-step cost figure saturated int64 */
int64_t zg_plan_table_rows(const ZgPlan *p);
bool zg_plan_cost_saturated(const ZgCost *c);

/* Elements per block of the fused norm's order (train.h TrSq): large enough that the blocks' lanes
** crossing instead of the device part's gradients are 1/64 B per element, small enough that the
** device's lanes kernel has a thread per lane of every block. */
#define NORM_BLOCK 4096
#endif
