/*
** plan_int.h — what plan.c (the partition map and zg_plan_build) shares with fit.c (the fit check
** and a refusal's advice, which plans each alternative): DeepSpeed's defaults of the sizing keys
** and the planning steps. Not part of the generator's interface (zg_plan.h).
*/
#ifndef ZG_PLAN_INT_H
#define ZG_PLAN_INT_H
#include "zg.h"

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
/* plan.c: partition, schedule and memory plan of (m, z) into p, without the bound and fit checks */
void zg_plan_build_nocheck(const ZgModel *m, const ZgZero *z, ZgPlan *p);
/* plan.c: rows of the emitted tables; whether a per-step cost figure saturated int64 */
int64_t zg_plan_table_rows(const ZgPlan *p);
bool zg_plan_cost_saturated(const ZgCost *c);

/* fit.c: the plan fits hardware.device_memory (with the device headroom) and host_memory */
bool zg_fit_ok(const ZgPlan *p);
/* fit.c: plans (m, z), with activation checkpointing where ckpt, into q (which keeps pointers to m
** and z), as a changed config would be planned; true when it is within zgen's bounds and fits */
bool zg_fit_plan_change(const ZgModel *m, const ZgZero *z, bool ckpt, ZgPlan *q);
/* fit.c: reports why p does not fit and the first changes that do (zg_error / zg_note) */
void zg_fit_refuse(const ZgPlan *p);
#endif
