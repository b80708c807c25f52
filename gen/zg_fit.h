/*
** zg_fit.h — does a plan fit the declared hardware, and the refusal with the changes that would
** (gen/fit.c). main.c checks and refuses; advise.c plans its changes with zg_fit_plan_change.
*/
#ifndef ZG_FIT_H
#define ZG_FIT_H
#include "zg_plan.h"

/* The plan fits hardware.device_memory (with the device headroom) and host_memory. */
bool zg_fit_ok(const ZgPlan *p);
/* Plans (m, z), with activation checkpointing where ckpt, into q (which keeps pointers to m and z),
** as a changed config would be planned (zg_size_plan); true when it is within zgen's bounds and
** fits. */
bool zg_fit_plan_change(const ZgModel *m, const ZgZero *z, bool ckpt, ZgPlan *q);
/* Reports why p does not fit and the first changes that do (zg_error / zg_note). */
void zg_fit_refuse(const ZgPlan *p);
#endif
