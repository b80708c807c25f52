/*
** t_llama.c — arch llama in the front end and the model IR: the Hugging Face LlamaForCausalLM tensor
** names and [out, in] shapes, grouped-query k/v sizes, tied and untied lm_head, the published
** parameter counts of LLaMA 2 7B and LLaMA 3 8B (figures from Meta's model cards, not from zgen), and
** the plan of fine-tuning the 7B on one GPU: ZeRO-3 with CPU offload fits 80 GB; without offload a
** 24 GB GPU is refused with the offload advice. Each case builds the plan as bin/zgen does.
*/
#include "zg_plan.h"
#include "zt.h"
#include <stdlib.h>
#include <unistd.h>

static ZgModel M;
static ZgZero Z;
static ZgPlan P;

/* Front end + IR + plan on a spec file, with an optional config override. Errors stay in diag. */
static bool plan_file(const char *spec, const char *config)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    memset(&P, 0, sizeof P);
    const ZgNode *ds = zg_spec_load(spec, &M);
    if (config) zg_zero_load_file(config, &M, &Z);
    else zg_zero_load(ds, &M, &Z);
    zg_check(&M, &Z);
    if (zg_error_count()) return false;
    return zg_model_build(&M, &P) && zg_plan_build(&M, &Z, &P);
}

static const char *write_tmp(const char *name, const char *text)
{
    char *path = zg_fmt("/tmp/t_llama_%d_%s", (int)getpid(), name);
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

static const ZgTensor *tensor(const char *name)
{
    for (int i = 0; i < P.n_tensors; i++)
        if (!strcmp(P.tensors[i].name, name)) return &P.tensors[i];
    return NULL;
}

/* LLaMA block by hand: q, o [C, C]; k, v [KV, C]; gate, up [F, C]; down [C, F]; two RMSNorm gains. */
static double llama_params(double V, double C, double L, double F, double KV, bool tied)
{
    return V * C * (tied ? 1 : 2) + L * (2 * C * C + 2 * KV * C + 3 * C * F + 2 * C) + C;
}

static void t_published_counts(void)
{
    ZT_CHECKM(plan_file("specs/llama2-7b.yaml", NULL), "llama2-7b must plan:\n%s", zg_diag_log());
    ZT_CHECKM(P.n_params == 6738415616LL, "llama2-7b: %lld parameters, Meta publishes 6,738,415,616",
              (long long)P.n_params);
    ZT_CHECK(P.n_params == (int64_t)llama_params(32000, 4096, 32, 11008, 4096, false));
    ZT_CHECKM(plan_file("specs/llama3-8b.yaml", NULL), "llama3-8b must plan:\n%s", zg_diag_log());
    ZT_CHECKM(P.n_params == 8030261248LL, "llama3-8b: %lld parameters, Meta publishes 8,030,261,248",
              (long long)P.n_params);
    ZT_EQ_INT(M.n_kv_heads, 8);
    ZT_CHECK(M.rope_llama3 && M.rope_factor == 8.0 && M.rope_low_freq_factor == 1.0 &&
             M.rope_high_freq_factor == 4.0 && M.rope_original_context == 8192 && M.rope_theta == 500000.0);
    ZT_EQ_INT(M.vocab_size, 128256);
}

static void t_hf_names_and_shapes(void)
{
    ZT_CHECKM(plan_file("specs/llama-tiny.yaml", NULL), "llama-tiny must plan:\n%s", zg_diag_log());
    int64_t V = 256, C = 128, F = 344, KV = 2 * (128 / 4);
    ZT_CHECK(!M.tie_embeddings);
    ZT_EQ_INT(P.n_tensors, 1 + 4 * 9 + 1 + 1);
    ZT_EQ_STR(P.tensors[0].name, "model.embed_tokens.weight");
    ZT_EQ_STR(P.tensors[P.n_tensors - 1].name, "lm_head.weight");
    ZT_EQ_STR(P.tensors[P.n_tensors - 2].name, "model.norm.weight");
    static const struct { const char *name; int64_t d0, d1; bool decay, resid; int init; } want[] = {
        {"model.layers.0.input_layernorm.weight", 128, 0, false, false, ZG_INIT_ONES},
        {"model.layers.0.self_attn.q_proj.weight", 128, 128, true, false, ZG_INIT_NORMAL},
        {"model.layers.1.self_attn.k_proj.weight", 64, 128, true, false, ZG_INIT_NORMAL},
        {"model.layers.2.self_attn.v_proj.weight", 64, 128, true, false, ZG_INIT_NORMAL},
        {"model.layers.3.self_attn.o_proj.weight", 128, 128, true, true, ZG_INIT_NORMAL},
        {"model.layers.3.post_attention_layernorm.weight", 128, 0, false, false, ZG_INIT_ONES},
        {"model.layers.0.mlp.gate_proj.weight", 344, 128, true, false, ZG_INIT_NORMAL},
        {"model.layers.0.mlp.up_proj.weight", 344, 128, true, false, ZG_INIT_NORMAL},
        {"model.layers.0.mlp.down_proj.weight", 128, 344, true, true, ZG_INIT_NORMAL},
        {"model.norm.weight", 128, 0, false, false, ZG_INIT_ONES},
        {"lm_head.weight", 256, 128, true, false, ZG_INIT_NORMAL},
        {"model.embed_tokens.weight", 256, 128, true, false, ZG_INIT_NORMAL},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ZgTensor *t = tensor(want[i].name);
        ZT_CHECKM(t != NULL, "no tensor %s", want[i].name);
        if (!t) continue;
        ZT_CHECKM(t->shape[0] == want[i].d0 && t->shape[1] == want[i].d1 && t->decay == want[i].decay &&
                  t->residual_proj == want[i].resid && t->init == want[i].init,
                  "%s: [%lld, %lld] decay %d resid %d init %d", t->name, (long long)t->shape[0],
                  (long long)t->shape[1], t->decay, t->residual_proj, t->init);
    }
    ZT_EQ_STR(tensor("model.layers.2.mlp.up_proj.weight")->field, "mlp_up_proj_weight");
    ZT_EQ_INT(tensor("model.layers.2.mlp.up_proj.weight")->layer, 2);
    ZT_CHECK(P.n_params == (int64_t)llama_params((double)V, (double)C, 4, (double)F, (double)KV, false));
    /* modules: embed, 4 blocks, final norm, an lm_head owning its own weight (untied) */
    ZT_EQ_INT(P.n_modules, 7);
    ZT_EQ_STR(P.modules[1].name, "model.layers.0");
    ZT_EQ_INT(P.modules[6].kind, ZG_MOD_HEAD);
    ZT_EQ_INT(P.modules[6].n_tensors, 1);
    ZT_EQ_INT(P.tied_tensor, -1);
    ZT_EQ_INT(P.modules[6].use_numel, V * C);
}

static const char TIED[] =
    "name: tied\nmodel:\n  arch: llama\n  vocab_size: 300\n  context: 64\n  d_model: 96\n  n_layers: 2\n"
    "  n_heads: 6\n  n_kv_heads: 1\n  d_ff: 200\n  tie_embeddings: true\ntrain:\n  world_size: 2\n"
    "deepspeed: %s/specs/configs/tiny_zero3.json\n";

static void t_tied_mqa(void)
{
    char cwd[512];
    ZT_CHECK(getcwd(cwd, sizeof cwd) != NULL);
    const char *spec = write_tmp("tied.yaml", zg_fmt(TIED, cwd));
    ZT_CHECKM(plan_file(spec, NULL), "tied MQA llama must plan:\n%s", zg_diag_log());
    ZT_EQ_INT(M.n_kv_heads, 1);
    ZT_CHECK(tensor("lm_head.weight") == NULL);
    ZT_EQ_INT(P.tied_tensor, 0);
    ZT_EQ_INT(tensor("model.layers.1.self_attn.k_proj.weight")->shape[0], 16);
    ZT_CHECK(P.n_params == (int64_t)llama_params(300, 96, 2, 200, 16, true));
    ZT_EQ_INT(P.modules[P.n_modules - 1].use_numel, 300 * 96);
    remove(spec);
}

/* The seed's case: 7B fine-tuning on one GPU. */
static void t_fit_7b(void)
{
    ZT_CHECKM(plan_file("specs/llama2-7b.yaml", NULL), "llama2-7b must fit 80 GiB:\n%s", zg_diag_log());
    ZT_EQ_INT(Z.stage, 3);
    ZT_EQ_INT(Z.offload_param.device, ZG_OFFLOAD_CPU);
    ZT_EQ_INT(Z.offload_optimizer.device, ZG_OFFLOAD_CPU);
    ZT_CHECK(P.mem.tier_bytes[ZG_TIER_DEVICE] <= 80LL << 30);
    /* master, m, v in fp32 alone are 3 x 4 x 6.7e9 bytes: they must be off the device */
    ZT_CHECK(P.mem.tier_bytes[ZG_TIER_PINNED] + P.mem.tier_bytes[ZG_TIER_HOST] >= 12 * 6738415616LL);

    FILE *f = fopen("specs/llama2-7b.yaml", "r");
    ZT_CHECK(f != NULL);
    if (!f) return;
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char cwd[512];
    ZT_CHECK(getcwd(cwd, sizeof cwd) != NULL);
    /* the same model on a 24 GB GPU, its config without offload: the spec is cut at its config path
    ** (its hardware section follows) and a new tail names the config and the device */
    char *d = strstr(text, "configs/llama_zero3_offload_cpu.json");
    ZT_CHECK(d != NULL);
    if (!d) return;
    *d = 0;
    const char *cfg = write_tmp("noff.json",
        "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 16, \"bf16\": {\"enabled\": true},\n"
        " \"zero_optimization\": {\"stage\": 3},\n"
        " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 2e-5}}}\n");
    const char *spec = write_tmp("24g.yaml", zg_fmt("%s%s\nhardware:\n  device_memory: 24GiB\n", text, cfg));
    ZT_CHECK(!plan_file(spec, NULL));
    ZT_CHECKM(zg_diag_count_matching("hardware.device_memory is 24.00 GiB", 0) > 0, "no refusal:\n%s",
              zg_diag_log());
    /* the advice is the first re-planned change that fits (docs/PLAN.md): offloading the optimizer
    ** or the parameters to the CPU, whichever the ranking reaches first */
    ZT_CHECKM(zg_diag_count_matching("offload_optimizer.device: cpu", 0) +
              zg_diag_count_matching("offload_param.device: cpu", 0) > 0, "no offload advice:\n%s",
              zg_diag_log());
    remove(spec);
    remove(cfg);
}

int main(void)
{
    ZT_RUN(t_published_counts);
    ZT_RUN(t_hf_names_and_shapes);
    ZT_RUN(t_tied_mqa);
    ZT_RUN(t_fit_7b);
    return zt_end();
}
