/*
** t_estimate.c — DeepSpeed's estimator figures (DeepSpeed's estimators, docs/PLAN.md "Estimate") recomputed by hand here,
** written out per formula, for GPT-2 124M on one node of 8 GPUs and GPT-2 1.5B on two nodes of 8,
** against zgen's implementation; plus the --estimate text/JSON carrying those figures.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zt.h"

static ZgPlan *plan_for(int64_t V, int64_t ctx, int64_t C, int64_t L, int64_t NH, int ws, int gpn)
{
    static ZgModel m[4];
    static ZgZero z[4];
    static int n;
    ZgModel *mm = &m[n];
    ZgZero *zz = &z[n++];
    zg_model_defaults(mm);
    mm->name = "e";
    mm->vocab_size = V; mm->context = ctx; mm->d_model = C; mm->n_layers = L; mm->n_heads = NH;
    mm->d_ff = 4 * C; mm->seq_len = ctx;
    mm->gpus_per_node = gpn;
    mm->gpus_per_node_given = true;
    zg_model_set_world_size(mm, ws);
    zg_zero_defaults(zz);
    zz->stage = 2; zz->micro_batch = 1; zz->grad_accum = 1; zz->train_batch_size = ws;
    ZgPlan *p = calloc(1, sizeof *p);
    if (!zg_model_build(mm, p) || !zg_plan_build(mm, zz, p)) return NULL;
    return p;
}

#define NEAR(a, b) ZT_NEAR(a, b, 0.5, 1e-12)

static void t_gpt2_124m_one_node(void)
{
    ZgPlan *p = plan_for(50257, 1024, 768, 12, 12, 8, 8);
    ZT_CHECK(p != NULL);
    if (!p) return;
    const double psi = 124439808.0, L = 50257.0 * 768.0;
    ZT_EQ_INT(p->n_params, 124439808);
    ZT_EQ_INT(p->largest_layer, 50257 * 768);
    double gpu, cpu;
    /* zero2, offload: GPU 2psi; CPU psi * max(4G, 16) * 1.5 with G = 8 */
    zg_ds_zero2_mem(p->n_params, 8, 1, true, &gpu, &cpu);
    NEAR(gpu, 2 * psi);
    NEAR(cpu, psi * 32 * 1.5);
    /* zero2, none: GPU 2psi + 18psi/G; CPU 4psi * gpn * 1.5 */
    zg_ds_zero2_mem(p->n_params, 8, 1, false, &gpu, &cpu);
    NEAR(gpu, 2 * psi + 279989568.0);             /* 18 * 124439808 / 8 = 279989568 exactly */
    NEAR(cpu, 4 * psi * 8 * 1.5);
    /* zero3, params + optimizer offloaded */
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, true, true, true, &gpu, &cpu);
    NEAR(gpu, 4 * L);
    NEAR(cpu, 18 * psi * 1.0 * 1.5);
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, true, true, false, &gpu, &cpu);
    NEAR(cpu, psi * 32 * 1.5);                     /* max(4*8, 18*1) = 32 */
    /* zero3, optimizer only */
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, false, true, true, &gpu, &cpu);
    NEAR(gpu, 4 * L + 31109952.0);                 /* 2 * psi / 8 */
    NEAR(cpu, 16 * psi * 1.5);
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, false, true, false, &gpu, &cpu);
    NEAR(cpu, psi * 32 * 1.5);
    /* zero3, nothing offloaded */
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, false, false, true, &gpu, &cpu);
    NEAR(gpu, 4 * L + 279989568.0);
    NEAR(cpu, 4 * L * 8 * 1.5);
    zg_ds_zero3_mem(p->n_params, p->largest_layer, 8, 1, false, false, false, &gpu, &cpu);
    NEAR(cpu, 4 * psi * 8 * 1.5);
}

static void t_gpt2_1p5b_two_nodes(void)
{
    ZgPlan *p = plan_for(50257, 1024, 1600, 48, 25, 16, 8);
    ZT_CHECK(p != NULL);
    if (!p) return;
    /* 50257*1600 + 1024*1600 + 48*(12*1600^2 + 13*1600) + 2*1600 */
    const int64_t n = 50257LL * 1600 + 1024LL * 1600 + 48LL * (12LL * 1600 * 1600 + 13LL * 1600) + 3200;
    ZT_EQ_INT(p->n_params, n);
    ZT_EQ_INT(n, 1557611200LL);                      /* Hugging Face gpt2-xl */
    const double psi = (double)n, L = 50257.0 * 1600.0, g = 0.5;
    double gpu, cpu;
    zg_ds_zero2_mem(n, 8, 2, true, &gpu, &cpu);
    NEAR(gpu, 2 * psi);
    NEAR(cpu, psi * 64 * 1.5);                       /* max(4*16, 16) */
    zg_ds_zero2_mem(n, 8, 2, false, &gpu, &cpu);
    NEAR(gpu, 2 * psi + (double)(18 * n / 16));
    NEAR(cpu, 4 * psi * 8 * 1.5);
    zg_ds_zero3_mem(n, p->largest_layer, 8, 2, true, true, true, &gpu, &cpu);
    NEAR(gpu, 4 * L);
    NEAR(cpu, 18 * psi * g * 1.5);
    zg_ds_zero3_mem(n, p->largest_layer, 8, 2, true, true, false, &gpu, &cpu);
    NEAR(cpu, psi * 32 * 1.5);                       /* max(32, 9) */
    zg_ds_zero3_mem(n, p->largest_layer, 8, 2, false, true, true, &gpu, &cpu);
    NEAR(gpu, 4 * L + (double)(2 * n / 16));
    NEAR(cpu, 16 * psi * g * 1.5);
    zg_ds_zero3_mem(n, p->largest_layer, 8, 2, false, false, false, &gpu, &cpu);
    NEAR(gpu, 4 * L + (double)(18 * n / 16));
    NEAR(cpu, 4 * psi * 8 * 1.5);
}

static void t_printed(void)
{
    ZgPlan *p = plan_for(50257, 1024, 768, 12, 12, 8, 8);
    ZT_CHECK(p != NULL);
    if (!p) return;
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    zg_estimate_print(p, false, f);
    fclose(f);
    /* 124439808 * 48 bytes = 5.56 GiB (zero2 CPU); 4 * 38597376 = 0.14 GiB (zero3 GPU, all offloaded) */
    ZT_CHECKM(strstr(buf, "DeepSpeed") && strstr(buf, "5.56GB") && strstr(buf, "0.14GB"), "%s", buf);
    ZT_CHECKM(strstr(buf, "124M total params, 38M largest layer params"), "%s", buf);
    ZT_CHECKM(strstr(buf, "zgen's plan"), "%s", buf);
    free(buf);
    f = open_memstream(&buf, &len);
    zg_estimate_print(p, true, f);
    fclose(f);
    ZT_CHECKM(strstr(buf, "\"gpu_bytes\": 248879616.0") && strstr(buf, "\"device_bytes\""), "%s", buf);
    free(buf);
}

int main(void)
{
    zg_diag_quiet(true);
    ZT_RUN(t_gpt2_124m_one_node);
    ZT_RUN(t_gpt2_1p5b_two_nodes);
    ZT_RUN(t_printed);
    return zt_end();
}
