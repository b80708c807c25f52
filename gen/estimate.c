/*
** estimate.c — `zgen --estimate`: DeepSpeed's own memory estimator figures (docs/PLAN.md `zgen --estimate`:
** estimate_zero2_model_states_mem_needs and estimate_zero3_model_states_mem_needs, every offload
** combination in the order DeepSpeed prints them) beside zgen's exact per-rank plan for the spec's
** config. DeepSpeed's figures count model states only (no activations, no buffers), which is why
** users find them off (DeepSpeed #4527, #5102); showing both side by side makes the gap visible.
*/
#include "zg_plan.h"

#define ADDITIONAL_BUFFER_FACTOR 1.5    /* DeepSpeed's default additional_buffer_factor */

static double dmax(double a, double b) { return a > b ? a : b; }

void zg_ds_zero2_mem(int64_t params, int gpn, int nodes, bool cpu_offload, double *gpu, double *cpu)
{
    double psi = (double)params, f = ADDITIONAL_BUFFER_FACTOR;
    int64_t total_gpus = (int64_t)gpn * nodes;
    if (cpu_offload) {
        *gpu = 2.0 * psi;
        *cpu = psi * dmax(4.0 * (double)total_gpus, 16.0) * f;
    } else {
        *gpu = 2.0 * psi + (double)(18 * params / total_gpus);
        *cpu = 4.0 * psi * gpn * f;
    }
}

void zg_ds_zero3_mem(int64_t params, int64_t largest_layer, int gpn, int nodes, bool offload_param,
                     bool offload_optimizer, bool zero_init, double *gpu, double *cpu)
{
    double psi = (double)params, f = ADDITIONAL_BUFFER_FACTOR, g = 1.0 / nodes;
    double ll4 = 4.0 * (double)largest_layer;
    int64_t total_gpus = (int64_t)gpn * nodes;
    if (offload_param && offload_optimizer) {
        *gpu = ll4;
        *cpu = zero_init ? 18.0 * psi * g * f : psi * dmax(4.0 * gpn, 18.0 * g) * f;
    } else if (offload_optimizer) {
        *gpu = ll4 + (double)(2 * params / total_gpus);
        *cpu = zero_init ? 16.0 * psi * g * f : psi * dmax(4.0 * gpn, 16.0 * g) * f;
    } else {
        *gpu = ll4 + (double)(18 * params / total_gpus);
        *cpu = zero_init ? ll4 * gpn * f : 4.0 * psi * gpn * f;
    }
}

static double gb(double b) { return b / (1024.0 * 1024.0 * 1024.0); }

typedef struct Row3 { bool param, opt, init; } Row3;
static const Row3 ROWS3[] = {
    {true, true, true}, {true, true, false}, {false, true, true},
    {false, true, false}, {false, false, true}, {false, false, false},
};

void zg_estimate_print(const ZgPlan *p, bool json, FILE *f)
{
    const ZgModel *m = p->model;
    int gpn = m->gpus_per_node > 0 ? m->gpus_per_node : 1;
    if (gpn > m->world_size) gpn = m->world_size;
    int nodes = (m->world_size + gpn - 1) / gpn;
    double gpu, cpu;
    const ZgMemPlan *mp = &p->mem;
    if (json) {
        fprintf(f, "{\n  \"params\": %lld,\n  \"largest_layer\": %lld,\n  \"gpus_per_node\": %d,\n"
                "  \"nodes\": %d,\n  \"deepspeed\": {\n    \"zero2\": [\n", (long long)p->n_params,
                (long long)p->largest_layer, gpn, nodes);
        for (int i = 0; i < 2; i++) {
            zg_ds_zero2_mem(p->n_params, gpn, nodes, i == 0, &gpu, &cpu);
            fprintf(f, "      {\"offload_optimizer\": \"%s\", \"gpu_bytes\": %.1f, \"cpu_bytes\": %.1f}%s\n",
                    i == 0 ? "cpu" : "none", gpu, cpu, i == 0 ? "," : "");
        }
        fputs("    ],\n    \"zero3\": [\n", f);
        for (int i = 0; i < 6; i++) {
            const Row3 *r = &ROWS3[i];
            zg_ds_zero3_mem(p->n_params, p->largest_layer, gpn, nodes, r->param, r->opt, r->init,
                            &gpu, &cpu);
            fprintf(f, "      {\"offload_param\": \"%s\", \"offload_optimizer\": \"%s\", "
                    "\"zero_init\": %d, \"gpu_bytes\": %.1f, \"cpu_bytes\": %.1f}%s\n",
                    r->param ? "cpu" : "none", r->opt ? "cpu" : "none", r->init ? 1 : 0, gpu, cpu,
                    i < 5 ? "," : "");
        }
        fprintf(f, "    ]\n  },\n  \"zgen\": {\n    \"stage\": %d,\n    \"offload_param\": \"%s\",\n"
                "    \"offload_optimizer\": \"%s\",\n", p->zero->stage,
                zg_offload_name(p->zero->offload_param.device),
                zg_offload_name(p->zero->offload_optimizer.device));
        for (int t = 0; t < ZG_NTIERS; t++)
            fprintf(f, "    \"%s_bytes\": %lld,\n", zg_tier_name((ZgTier)t), (long long)mp->tier_bytes[t]);
        fprintf(f, "    \"activation_bytes\": %lld,\n    \"host_bytes_per_node\": %lld\n  }\n}\n",
                (long long)(mp->acts_bytes + mp->scratch_bytes), (long long)zg_mem_host_per_node(p));
        return;
    }
    fprintf(f, "DeepSpeed's estimator (its formulas, model states only; docs/PLAN.md, zgen --estimate):\n");
    fprintf(f, "HW: Setup with %d node%s, %d GPU%s per node.\n", nodes, nodes == 1 ? "" : "s", gpn,
            gpn == 1 ? "" : "s");
    fprintf(f, "SW: Model with %lldM total params, %lldM largest layer params.\n",
            (long long)(p->n_params / 1000000), (long long)(p->largest_layer / 1000000));
    fprintf(f, "\nestimate_zero2_model_states_mem_needs:\n  per CPU  |  per GPU |   Options\n");
    for (int i = 0; i < 2; i++) {
        zg_ds_zero2_mem(p->n_params, gpn, nodes, i == 0, &gpu, &cpu);
        fprintf(f, "  %7.2fGB | %7.2fGB | offload_optimizer=%s\n", gb(cpu), gb(gpu),
                i == 0 ? "cpu " : "none");
    }
    fprintf(f, "\nestimate_zero3_model_states_mem_needs:\n  per CPU  |  per GPU |   Options\n");
    for (int i = 0; i < 6; i++) {
        const Row3 *r = &ROWS3[i];
        zg_ds_zero3_mem(p->n_params, p->largest_layer, gpn, nodes, r->param, r->opt, r->init, &gpu, &cpu);
        fprintf(f, "  %7.2fGB | %7.2fGB | offload_param=%s, offload_optimizer=%s, zero_init=%d\n",
                gb(cpu), gb(gpu), r->param ? "cpu " : "none", r->opt ? "cpu " : "none", r->init ? 1 : 0);
    }
    fprintf(f, "\nzgen's plan for this config (exact, per rank; stage %d, %s, offload_optimizer=%s, "
            "offload_param=%s, micro batch %lld):\n", p->zero->stage, zg_dtype_name(p->zero->dtype),
            zg_offload_name(p->zero->offload_optimizer.device),
            zg_offload_name(p->zero->offload_param.device), (long long)p->zero->micro_batch);
    for (int t = 0; t < ZG_NTIERS; t++)
        fprintf(f, "  %-7s %9.2fGB\n", zg_tier_name((ZgTier)t), gb((double)mp->tier_bytes[t]));
    fprintf(f, "  of which activations (device): %.2fGB\n",
            gb((double)(mp->acts_bytes + mp->scratch_bytes)));
    fprintf(f, "  host per node (%d ranks): %.2fGB\n", gpn, gb((double)zg_mem_host_per_node(p)));
}
