/*
** zg_size.h — the sizing step (gen/size.c), between the model IR and the fit check of main.c's
** pipeline().
*/
#ifndef ZG_SIZE_H
#define ZG_SIZE_H
#include "zg_plan.h"

/* Partition, schedule and memory plan of (m, z) into p (whose tensors zg_model_build made), with the
** planner's own choices re-planned until they fit the declared hardware or cannot be made smaller.
** Reports nothing: the bounds and the fit are checked after it. */
void zg_size_plan(const ZgModel *m, const ZgZero *z, ZgPlan *p);
/* p->ds_default_bytes: what DeepSpeed's defaults would have planned for the keys the sizing step
** chose (plan.txt); all 0 when it chose none. */
void zg_size_ds_defaults(const ZgModel *m, const ZgZero *z, ZgPlan *p);
#endif
