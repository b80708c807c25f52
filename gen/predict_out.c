/*
** predict_out.c — what the cost model writes: the predicted timeline as a Chrome/Perfetto trace
** (one track per resource, the same viewer as the trainer's --trace, so a measured run and its
** prediction can be opened side by side), the human summary and the --json object.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_predict.h"

static const char *mod_name(const ZgPlan *p, int i)
{
    return i >= 0 && i < p->n_modules ? p->modules[i].name : "?";
}

/* The op's label in the trace: its kind and what it acts on. */
static void label(const ZgPlan *p, const ZgPredEvent *e, char *buf, size_t cap)
{
    const char *k = zg_pred_kind_name(e->kind);
    switch (e->kind) {
    case ZG_OP_FORWARD: case ZG_OP_BACKWARD: case ZG_OP_GRAD_ADD:
        snprintf(buf, cap, "%s %s", k, mod_name(p, e->arg));
        break;
    case ZG_OP_GATHER: case ZG_OP_WAIT_GATHER: case ZG_OP_PARAM_SWAP_IN:
    case ZG_NOPS + ZG_PX_NVME_READ:
        snprintf(buf, cap, "%s %s", k, e->arg >= 0 && e->arg < p->n_gathers
                 ? mod_name(p, p->gathers[e->arg].module) : "?");
        break;
    case ZG_OP_REDUCE: case ZG_OP_WAIT_REDUCE: case ZG_OP_GRAD_COPY: case ZG_OP_GRAD_SHIP: case ZG_OP_GRAD_KEEP:
    case ZG_NOPS + ZG_PX_D2H: case ZG_NOPS + ZG_PX_ACCUM:
        snprintf(buf, cap, "%s bucket %d", k, e->arg);
        break;
    case ZG_OP_SWAP_IN: case ZG_OP_OPTIMIZER: case ZG_OP_SWAP_OUT: case ZG_NOPS + ZG_PX_H2D:
        snprintf(buf, cap, "%s sub-group %d", k, e->arg);
        break;
    default:
        snprintf(buf, cap, "%s", k);
    }
}

bool zg_predict_write_trace(const ZgPlan *p, const ZgPrediction *pr, const char *path)
{
    char *tmp = zg_fmt("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return false;
    fputs("{\"traceEvents\":[\n", f);
    fprintf(f, "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"zgen --predict "
            "%s (prediction, not a measurement)\"}}", p->model->name);
    for (int r = 0; r < ZG_NRES; r++)
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_name\",\"args\":"
                "{\"name\":\"%s\"}}", r, zg_res_name(r));
    char buf[160];
    for (int i = 0; i < pr->n_ev; i++) {
        const ZgPredEvent *e = &pr->ev[i];
        if (e->dur <= 0) continue;
        label(p, e, buf, sizeof buf);
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"micro_step\":%d}}", e->res, buf, e->start * 1e6, e->dur * 1e6, e->micro);
    }
    fputs("\n]}\n", f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (ok) ok = rename(tmp, path) == 0;
    else remove(tmp);
    return ok;
}

static const char *secs(double s, char *buf, size_t cap)
{
    if (s >= 1.0) snprintf(buf, cap, "%.2f s", s);
    else if (s >= 1e-3) snprintf(buf, cap, "%.1f ms", s * 1e3);
    else snprintf(buf, cap, "%.1f us", s * 1e6);
    return buf;
}

const char *zg_predict_verdict(const ZgPrediction *pr)
{
    static char out[256];
    char a[32], b[32];
    int r = pr->bottleneck, k = pr->bottleneck_kind;
    snprintf(out, sizeof out, "this plan is %s-bound: %s of %s per step is %s", zg_res_name(r),
             secs(pr->crit_s[r], a, sizeof a), secs(pr->step_s, b, sizeof b),
             r == ZG_RES_COMPUTE ? "compute" : zg_pred_kind_name(k));
    if (r == ZG_RES_COMPUTE)
        snprintf(out + strlen(out), sizeof out - strlen(out), " (mostly %s)", zg_pred_kind_name(k));
    return out;
}

static void print_advice(const ZgPlan *p, const ZgHw *hw, const ZgPrediction *pr, const ZgAdviceList *adv,
                         bool json, FILE *f)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (json) {
        fputs(", \"faster\": [", f);
        for (int i = 0; i < adv->n; i++) {
            const ZgAdvice *a = &adv->a[i];
            fprintf(f, "%s{\"change\": \"%s\", \"same_bits\": %s, \"step_s\": %.6g, \"tokens_per_s\": %.6g, "
                    "\"mfu\": %.4f, \"device_bytes\": %lld}", i ? ", " : "", a->what, a->same_bits ? "true" : "false",
                    a->step_s, a->tokens_per_s, a->mfu, (long long)a->device_bytes);
        }
        fputs("]", f);
        return;
    }
    if (!adv->n) {
        fprintf(f, "faster plans: none found (%s)\n", adv->why_none ? adv->why_none : "?");
        return;
    }
    char a[32], host[64] = "";
    if (p->model->host_memory > 0)
        snprintf(host, sizeof host, " and host_memory %.2f GiB", (double)p->model->host_memory / gib);
    fprintf(f, "faster plans that fit hardware.device_memory %.2f GiB%s, one change each (predicted on %s, "
            "not measured):\n", (double)p->model->device_memory / gib, host, hw->name);
    for (int i = 0; i < adv->n; i++) {
        const ZgAdvice *x = &adv->a[i];
        fprintf(f, "  %s (%+.0f %%), MFU %.1f %%, %.0f tokens/s, device %.2f GiB: %s%s\n",
                secs(x->step_s, a, sizeof a), 100.0 * (x->step_s / pr->step_s - 1.0), 100.0 * x->mfu,
                x->tokens_per_s, (double)x->device_bytes / gib, x->what,
                x->same_bits ? " (same bits)" : " (another order of the sums: not the same bits)");
    }
}

void zg_predict_print(const ZgPlan *p, const ZgHw *hw, const ZgPrediction *pr, const ZgAdviceList *adv,
                      bool json, FILE *f)
{
    const ZgZero *z = p->zero;
    const char *peak_name;
    double peak = zg_predict_peak(p, hw, &peak_name);
    if (json) {
        fprintf(f, "{\"model\": \"%s\", \"hardware\": \"%s\", \"dtype\": \"%s\", \"step_s\": %.6g, "
                "\"tokens_per_s\": %.6g, \"mfu\": %.4f, \"bottleneck\": \"%s\", "
                "\"bottleneck_op\": \"%s\", \"model_flops_per_rank\": %.6g, \"peak_flops\": %.6g, "
                "\"tokens_per_step\": %.6g, \"summary\": \"%s\"", p->model->name, hw->name,
                zg_dtype_name(z->dtype), pr->step_s, pr->tokens_per_s, pr->mfu,
                zg_res_name(pr->bottleneck), zg_pred_kind_name(pr->bottleneck_kind),
                pr->model_flops, peak, pr->tokens_per_step, zg_predict_verdict(pr));
        fprintf(f, ", \"peak\": \"%s\"", peak_name);
        fputs(", \"busy_s\": {", f);
        for (int r = 0; r < ZG_NRES; r++)
            fprintf(f, "%s\"%s\": %.6g", r ? ", " : "", zg_res_name(r), pr->busy_s[r]);
        fputs("}, \"critical_s\": {", f);
        for (int r = 0; r < ZG_NRES; r++)
            fprintf(f, "%s\"%s\": %.6g", r ? ", " : "", zg_res_name(r), pr->crit_s[r]);
        fputs("}", f);
        if (adv) print_advice(p, hw, pr, adv, true, f);
        fputs("}\n", f);
        return;
    }
    char a[32];
    fprintf(f, "zgen predict: %s on %s (%s) -- a prediction from the plan's schedule and the "
            "profile, not a measurement\n", p->model->name, hw->name,
            hw->host ? "host backend: the host kernels on the CPU"
                     : "target GPU design: 16-bit tensor-core matmuls, flash attention, fused elementwise");
    fprintf(f, "step %s (%lld micro-step%s of %lld x %lld tokens per rank, %d rank%s), %.0f tokens/s\n",
            secs(pr->step_s, a, sizeof a), (long long)z->grad_accum, z->grad_accum == 1 ? "" : "s",
            (long long)z->micro_batch, (long long)p->model->seq_len, p->model->world_size,
            p->model->world_size == 1 ? "" : "s", pr->tokens_per_s);
    fprintf(f, "MFU %.1f %% ((6N + 6LCT) x tokens = %.3e FLOP per rank per step against %.4g "
            "TFLOP/s %s peak%s)\n", 100.0 * pr->mfu, pr->model_flops, peak / 1e12,
            peak_name, hw->host ? ": the measured matmul rate of the host kernels" : "");
    fprintf(f, "%s\n", zg_predict_verdict(pr));
    fprintf(f, "  %-11s %12s %16s\n", "resource", "busy", "critical path");
    for (int r = 0; r < ZG_NRES; r++) {
        if (pr->busy_s[r] <= 0) continue;
        char b[32];
        fprintf(f, "  %-11s %12s %16s\n", zg_res_name(r), secs(pr->busy_s[r], a, sizeof a),
                secs(pr->crit_s[r], b, sizeof b));
    }    if (adv) print_advice(p, hw, pr, adv, false, f);
}
