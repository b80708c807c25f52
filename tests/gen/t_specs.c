/*
** t_specs.c — every spec and config shipped under specs/ is accepted or rejected as docs/CONFIG.md
** says, and the accepted ones mean what their comments claim (shapes, parameter counts computed here
** by hand from the GPT-2 formula, batch sizes, offload tiers). A file under specs/ missing from the
** tables below fails the test, so nothing ships undocumented.
*/
#include "zg.h"
#include "zt.h"
#include <dirent.h>

typedef struct Case {
    const char *spec;           /* spec file */
    const char *config;         /* -c override, NULL = the spec's deepspeed: */
    bool accept;
    const char *frag;           /* rejected: message fragment */
    int line;                   /* rejected: its line in the config */
} Case;

static const Case cases[] = {
    {"specs/tiny.yaml", NULL, true, NULL, 0},
    {"specs/gpt2-124m.yaml", NULL, true, NULL, 0},
    {"specs/gpt2-1.5b.yaml", NULL, true, NULL, 0},
    {"specs/gpt2-10b.yaml", NULL, true, NULL, 0},
    {"specs/gpt3-175b.yaml", NULL, true, NULL, 0},
    {"specs/gpt-1t.yaml", NULL, true, NULL, 0},
    {"specs/llama-tiny.yaml", NULL, true, NULL, 0},       /* llama: tests/gen/t_llama.c */
    {"specs/llama2-7b.yaml", NULL, true, NULL, 0},
    {"specs/llama3-8b.yaml", NULL, true, NULL, 0},
    {"specs/qwen2-tiny.yaml", NULL, true, NULL, 0},       /* qwen2: tests/trainer/t_qwen2_train_parity.sh */
    {"specs/gpt2-124m.yaml", "specs/configs/hf_auto_zero3.yaml", true, NULL, 0},
    {"specs/tiny.yaml", "specs/configs/hf_auto.json", true, NULL, 0},      /* with --steps 20 */
    {"specs/tiny.yaml", "specs/configs/hf_auto.json", false, "zgen was given no --steps", 28},
    {"specs/gpt2-124m-bf16.yaml", NULL, true, NULL, 0},
    {"specs/gpt2-10b-ckpt.yaml", "specs/configs/zero_offload_tutorial_mb10.json", true, NULL, 0},
    {"specs/tiny.yaml", "specs/configs/rejected_stage2_offload_param.json", false,
     "offload_param needs ZeRO stage 3 (stage is 2)", 6},
    {"specs/tiny.yaml", "specs/configs/rejected_stage2_nvme_optimizer.json", false,
     "offload_optimizer device nvme needs ZeRO stage 3", 6},
    {"specs/tiny.yaml", "specs/configs/rejected_fp16_bf16.json", false, "fp16 and bf16 are both enabled", 4},
    {"specs/tiny.yaml", "specs/configs/rejected_invented_keys.json", false,
     "zero_optimization.offload_param.nvme_path", 5},
    {"specs/tiny.yaml", "specs/configs/rejected_invented_keys.json", false, "device: nvme", 6},
    {"specs/tiny.yaml", "specs/configs/rejected_ratio.json", false, "ratio 0.3 < 1 needs ZeRO stage 3", 5},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int run_steps(const char *spec, const char *config, int64_t steps, ZgModel *m, ZgZero *z)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    const ZgNode *ds = zg_spec_load(spec, m);
    m->steps = steps;
    if (config) zg_zero_load_file(config, m, z);
    else zg_zero_load(ds, m, z);
    zg_check(m, z);
    return zg_error_count();
}

static int run(const char *spec, const char *config, ZgModel *m, ZgZero *z)
{
    return run_steps(spec, config, 0, m, z);
}

static double gpt2_params(const ZgModel *m)
{
    double V = (double)m->vocab_size, C = (double)m->context, d = (double)m->d_model, L = (double)m->n_layers;
    /* wte + wpe + per block (2 LayerNorms, qkv, proj, fc, fc-proj, with biases) + ln_f; d_ff = 4d */
    return V * d + C * d + L * (12 * d * d + 13 * d) + 2 * d;
}

static void t_accept_reject(void)
{
    for (int i = 0; i < N_CASES; i++) {
        const Case *c = &cases[i];
        ZgModel m;
        ZgZero z;
        /* hf_auto.json's total_num_steps "auto" needs zgen --steps: accepted with it, refused without */
        bool steps = c->accept && c->config && !strcmp(c->config, "specs/configs/hf_auto.json");
        int e = run_steps(c->spec, c->config, steps ? 20 : 0, &m, &z);
        const char *name = c->config ? c->config : c->spec;
        if (c->accept) {
            ZT_CHECKM(e == 0, "%s must be accepted:\n%s", name, zg_diag_log());
        } else {
            ZT_CHECKM(e > 0, "%s must be rejected", name);
            ZT_CHECKM(zg_diag_count_matching(c->frag, c->line) > 0, "%s: no \"%s\" at line %d:\n%s", name,
                      c->frag, c->line, zg_diag_log());
        }
    }
}

/* Every file under specs/ and specs/configs/ is in the table. */
static void t_every_file_listed(void)
{
    static const char *const dirs[] = {"specs", "specs/configs"};
    int seen = 0;
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        ZT_CHECKM(dir != NULL, "cannot open %s (run from the repository root)", dirs[d]);
        if (!dir) continue;
        struct dirent *de;
        while ((de = readdir(dir))) {
            const char *n = de->d_name;
            size_t l = strlen(n);
            if (l < 5 || (strcmp(n + l - 5, ".yaml") && strcmp(n + l - 5, ".json"))) continue;
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dirs[d], n);
            bool listed = false;
            for (int i = 0; i < N_CASES; i++) {
                listed |= !strcmp(cases[i].spec, path) || (cases[i].config && !strcmp(cases[i].config, path));
                /* configs named by an accepted spec's deepspeed: key */
                if (!cases[i].config && cases[i].accept) {
                    ZgModel m;
                    ZgZero z;
                    run(cases[i].spec, NULL, &m, &z);
                    listed |= z.path && !strcmp(z.path, path);
                }
            }
            ZT_CHECKM(listed, "%s is not in t_specs.c's table (and docs/CONFIG.md)", path);
            seen++;
        }
        closedir(dir);
    }
    ZT_CHECK(seen >= 18);
}

static void t_shapes(void)
{
    ZgModel m;
    ZgZero z;
    run("specs/tiny.yaml", NULL, &m, &z);
    ZT_EQ_STR(m.name, "tiny");
    ZT_CHECK(m.vocab_size == 256 && m.context == 128 && m.d_model == 128 && m.n_layers == 4 && m.n_heads == 4);
    ZT_EQ_INT(m.world_size, 2);
    ZT_EQ_INT(z.stage, 3);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_NVME);
    ZT_EQ_STR(z.offload_optimizer.nvme_path, "out/nvme");
    ZT_EQ_INT(z.offload_param.device, ZG_OFFLOAD_CPU);
    ZT_EQ_INT(z.micro_batch, 4);
    ZT_EQ_INT(z.grad_accum, 1);
    ZT_EQ_INT(z.train_batch_size, 8);
    ZT_EQ_STR(z.optimizer, "adamw");
    ZT_NEAR(z.lr, 1e-3, 0, 1e-12);
    ZT_NEAR(z.weight_decay, 0.1, 0, 1e-12);
    ZT_EQ_INT(z.sched, ZG_SCHED_WARMUP);

    run("specs/gpt2-124m.yaml", NULL, &m, &z);
    ZT_NEAR(gpt2_params(&m), 124439808.0, 0, 0);     /* Hugging Face gpt2 */
    ZT_EQ_INT(m.d_ff, 3072);
    ZT_EQ_INT(z.train_batch_size, 16 * 4 * 8);       /* "auto" from train.* */
    ZT_NEAR(z.lr, 6e-4, 0, 1e-12);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_BF16);

    run("specs/gpt2-1.5b.yaml", NULL, &m, &z);
    ZT_CHECK(m.d_model == 1600 && m.n_layers == 48 && m.n_heads == 25);
    ZT_NEAR(gpt2_params(&m), 1.558e9, 0, 0.001);
    ZT_EQ_INT(z.stage, 2);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_CPU);

    run("specs/gpt2-10b.yaml", NULL, &m, &z);
    ZT_CHECK(m.d_model == 4096 && m.n_layers == 50 && m.n_heads == 32 && m.world_size == 1);
    ZT_NEAR(gpt2_params(&m), 1.0e10, 0, 0.05);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP16);
    ZT_EQ_INT(m.device_memory, 80LL << 30);
    ZT_EQ_INT(z.grad_accum, 10);                     /* global batch 10 = 1 x 10 x 1 */
    ZT_CHECK(m.device_optimizer == -1);              /* train.device_optimizer: auto */

    run("specs/gpt3-175b.yaml", NULL, &m, &z);
    ZT_CHECK(m.d_model == 12288 && m.n_layers == 96 && m.n_heads == 96 && m.context == 2048);
    ZT_NEAR(gpt2_params(&m), 175e9, 0, 0.01);
    ZT_EQ_INT(z.offload_param.device, ZG_OFFLOAD_CPU);
    ZT_EQ_INT(z.grad_accum, 3);                      /* 1536 / (1 x 512) */

    run("specs/gpt-1t.yaml", NULL, &m, &z);
    ZT_NEAR(gpt2_params(&m), 1e12, 0, 0.02);
    ZT_EQ_INT(m.world_size, 1024);
    ZT_EQ_INT(m.gpus_per_node, 8);
    ZT_EQ_INT(z.offload_param.device, ZG_OFFLOAD_NVME);
    ZT_EQ_INT(z.offload_optimizer.device, ZG_OFFLOAD_NVME);
    ZT_EQ_INT(m.host_memory, 2LL << 40);

    run("specs/gpt2-124m.yaml", "specs/configs/hf_auto_zero3.yaml", &m, &z);
    ZT_EQ_INT(z.stage, 3);
    /* "auto" with stage3_max_live_parameters set: HF's 0.9 x d_model^2, rounded down; 10 x d_model */
    ZT_EQ_INT(z.prefetch_bucket_size, 530841);
    ZT_EQ_INT(z.param_persistence_threshold, 7680);

    ZT_EQ_INT(z.train_batch_size, 512);

    /* hf_auto.json's "auto" become what tiny_zero3.json writes out by hand (tiny.yaml's train.* keys
    ** agree with it); the schedule is HF's: no warmup in the spec (HF's 0), as long as --steps */
    ZgZero ex;
    ZT_EQ_INT(run("specs/tiny.yaml", NULL, &m, &ex), 0);
    ZT_EQ_INT(run_steps("specs/tiny.yaml", "specs/configs/hf_auto.json", 20, &m, &z), 0);
    ZT_EQ_INT(z.micro_batch, ex.micro_batch);
    ZT_EQ_INT(z.grad_accum, ex.grad_accum);
    ZT_EQ_INT(z.train_batch_size, ex.train_batch_size);
    ZT_CHECK(z.lr == ex.lr && z.beta1 == ex.beta1 && z.beta2 == ex.beta2 && z.eps == ex.eps);
    ZT_CHECK(z.weight_decay == ex.weight_decay && z.gradient_clipping == ex.gradient_clipping);
    ZT_CHECK(z.warmup_min_lr == ex.warmup_min_lr && z.warmup_max_lr == ex.warmup_max_lr);
    ZT_EQ_INT(z.warmup_num_steps_in, 0);
    ZT_EQ_INT(z.dtype, ex.dtype);
    ZT_EQ_INT(zg_warn_count(), 0);
    ZT_EQ_INT(z.sched, ZG_SCHED_WARMUP_DECAY);
    ZT_EQ_INT(z.total_num_steps, 20);
}

int main(void)
{
    ZT_RUN(t_accept_reject);
    ZT_RUN(t_every_file_listed);
    ZT_RUN(t_shapes);
    return zt_end();
}
