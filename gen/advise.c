/*
** advise.c — faster plans that fit: after --predict has priced the plan, each single change of the
** config or spec that a user would weigh next (keep parameters on the device, larger micro-batches
** at the same global batch, no recompute, the optimizer back on the device) is planned as zgen
** would plan it (zg_fit_plan_change: the sizing step, as fit.c plans a refusal's changes),
** kept only where it fits the declared hardware, and priced by the same cost model on the same
** profile. The fastest few that beat the plan by ADVICE_GAIN are reported, each labelled with
** whether the trained bits stay the same. Predictions, never measurements.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_fit.h"
#include "zg_predict.h"

/* a change is worth a line only if the model gives it at least this much of the step */
#define ADVICE_GAIN 0.03
#define MAX_CAND 8

typedef struct Cand {
    const char *what;
    int family;                 /* changes of one kind (the micro-batch sizes): only the fastest shown */
    bool same_bits;
    ZgModel m;
    ZgZero z;
} Cand;

static Cand *cand(Cand *c, int *n, const ZgModel *m, const ZgZero *z, const char *what, bool same_bits)
{
    Cand *a = &c[*n];
    a->family = (*n)++;
    a->m = *m;
    a->z = *z;
    a->what = what;
    a->same_bits = same_bits;
    return a;
}

/* The changes tried. Moving bytes between tiers and recomputing keep the bits (offload never changes
** numerics; a recompute is the same arithmetic); a larger micro-batch sums the same tokens' losses
** and gradients in another order, so its bits differ. */
static int candidates(const ZgPlan *p, Cand *c)
{
    const ZgModel *m = p->model;
    const ZgZero *z = p->zero;
    int n = 0;
    Cand *a;
    if (z->stage == 3 && z->offload_param.device != ZG_OFFLOAD_NONE) {
        int64_t largest = 0, total = 0;
        bool all = true;
        for (int t = 0; t < p->n_tensors; t++) {
            if (p->tensors[t].numel > largest) largest = p->tensors[t].numel;
            total += p->tensors[t].numel;
            all = all && p->tensors[t].persistent;
        }
        if (!all) {
            a = cand(c, &n, m, z, zg_fmt("set zero_optimization.stage3_param_persistence_threshold: %lld and "
                                         "stage3_model_persistence_threshold: %lld (every parameter stays on the "
                                         "device between steps)", (long long)largest, (long long)total), true);
            a->z.param_persistence_threshold = largest;
            a->z.model_persistence_threshold = total;
        }
        a = cand(c, &n, m, z, "set zero_optimization.offload_param.device: none", true);
        a->z.offload_param.device = ZG_OFFLOAD_NONE;
    }
    int mb_family = n;
    for (int64_t k = 2; k <= 8 && z->grad_accum % k == 0; k *= 2) {
        a = cand(c, &n, m, z, zg_fmt("set train_micro_batch_size_per_gpu: %lld and gradient_accumulation_steps: "
                                     "%lld (same train_batch_size)", (long long)(z->micro_batch * k),
                                     (long long)(z->grad_accum / k)), false);
        a->z.micro_batch = z->micro_batch * k;
        a->z.grad_accum = z->grad_accum / k;
        a->family = mb_family;
    }
    if (p->act_ckpt) {
        a = cand(c, &n, m, z, "set train.activation_checkpointing: false (in the spec)", true);
        a->m.activation_checkpointing = false;
    }
    if (z->offload_optimizer.device != ZG_OFFLOAD_NONE && z->stage > 0) {
        a = cand(c, &n, m, z, "set zero_optimization.offload_optimizer.device: none", true);
        a->z.offload_optimizer.device = ZG_OFFLOAD_NONE;
    }
    return n;
}

static int by_step(const void *x, const void *y)
{
    const ZgAdvice *a = x, *b = y;
    if (a->step_s != b->step_s) return a->step_s < b->step_s ? -1 : 1;
    return strcmp(a->what, b->what);        /* ties in a fixed order: the output is reproducible */
}

void zg_advise(const ZgPlan *p, const ZgHw *hw, const ZgPrediction *pr, ZgAdviceList *out)
{
    memset(out, 0, sizeof *out);
    if (p->model->device_memory <= 0) {
        out->why_none = "the spec declares no hardware.device_memory, so no change can be checked to fit";
        return;
    }
    Cand *c = zg_xcalloc(MAX_CAND, sizeof *c);
    int n = candidates(p, c);
    ZgAdvice found[MAX_CAND];
    int nf = 0, fam[MAX_CAND];
    for (int i = 0; i < n; i++) {
        /* the plan keeps pointers to its model and config: each candidate's stay where they are */
        ZgPlan *q = zg_xcalloc(1, sizeof *q);
        if (!zg_fit_plan_change(&c[i].m, &c[i].z, false, q)) continue;
        zg_lower_build(q);
        ZgPrediction qp;
        memset(&qp, 0, sizeof qp);
        zg_predict(q, hw, &qp);
        free(qp.ev);
        out->tried++;
        if (qp.step_s > pr->step_s * (1.0 - ADVICE_GAIN)) continue;
        int j = 0;
        while (j < nf && fam[j] != c[i].family) j++;
        if (j < nf && found[j].step_s <= qp.step_s) continue;
        if (j == nf) nf++;
        fam[j] = c[i].family;
        found[j] = (ZgAdvice){.what = c[i].what, .same_bits = c[i].same_bits, .step_s = qp.step_s,
                                 .mfu = qp.mfu, .tokens_per_s = qp.tokens_per_s,
                                 .device_bytes = zg_mem_device_need(q)};
    }
    qsort(found, (size_t)nf, sizeof found[0], by_step);
    out->n = nf < ZG_ADVICE_MAX ? nf : ZG_ADVICE_MAX;
    memcpy(out->a, found, (size_t)out->n * sizeof found[0]);
    if (!out->n)
        out->why_none = out->tried ? zg_fmt("no single change tried fits and is predicted faster by %.0f %% or more",
                                            100 * ADVICE_GAIN)
                                   : "no single change tried fits the declared hardware";
}
