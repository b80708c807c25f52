/*
** plan_build.c — zg_plan_build: the planning steps of main.c's pipeline() (sizing, bounds, the
** figures of DeepSpeed's defaults, the fit check and its refusal) in one call, for the callers that
** plan without main (the generator tests, the fuzzer, the benchmarks). The same steps in the same
** order as pipeline(), which spells them out.
*/
#include "zg_plan.h"
#include "zg_fit.h"
#include "zg_size.h"

bool zg_plan_build(const ZgModel *m, const ZgZero *z, ZgPlan *p)
{
    if (!p->tensors && !zg_model_build(m, p)) return false;
    zg_size_plan(m, z, p);
    if (!zg_plan_within_bounds(p)) return false;
    zg_size_ds_defaults(m, z, p);
    if (!zg_fit_ok(p)) {
        zg_fit_refuse(p);
        return false;
    }
    return true;
}
