/*
** t_hf_config.c — the config.json rows zgen gives the trainer (gen/hf_config.c) against the
** config.json files the model publishers ship (values copied from Meta's Llama-2-7b-hf and
** Llama-3.1-8B and OpenAI's gpt2 on the Hugging Face hub, not from zgen): for specs/llama2-7b,
** llama3-8b and gpt2-124m every checked key agrees with the published file, read the way
** transformers reads it (a missing or null key means the config class default, the row's `absent`);
** every written key is in the published file with the same value; a changed spec disagrees on the
** key it changed; tied llama skips a stored lm_head.weight, untied does not.
*/
#include "zg_plan.h"
#include "zt.h"
#include <stdlib.h>

static ZgModel M;
static ZgZero Z;
static ZgPlan P;

static bool plan_file(const char *spec)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    memset(&P, 0, sizeof P);
    const ZgNode *ds = zg_spec_load(spec, &M);
    zg_zero_load(ds, &M, &Z);
    zg_check(&M, &Z);
    return !zg_error_count() && zg_model_build(&M, &P);
}

/* A published config.json, flattened: "a.b" for members of objects; NULL value = JSON null. */
typedef struct Kv { const char *key, *value; } Kv;

static const Kv llama2_7b[] = {   /* meta-llama/Llama-2-7b-hf */
    {"architectures", "[\"LlamaForCausalLM\"]"}, {"bos_token_id", "1"}, {"eos_token_id", "2"},
    {"hidden_act", "\"silu\""}, {"hidden_size", "4096"}, {"initializer_range", "0.02"},
    {"intermediate_size", "11008"}, {"max_position_embeddings", "4096"}, {"model_type", "\"llama\""},
    {"num_attention_heads", "32"}, {"num_hidden_layers", "32"}, {"num_key_value_heads", "32"},
    {"pretraining_tp", "1"}, {"rms_norm_eps", "1e-05"}, {"rope_scaling", NULL},
    {"tie_word_embeddings", "false"}, {"torch_dtype", "\"float16\""}, {"use_cache", "true"},
    {"vocab_size", "32000"}, {NULL, NULL}};
static const Kv llama31_8b[] = {  /* meta-llama/Llama-3.1-8B */
    {"architectures", "[\"LlamaForCausalLM\"]"}, {"attention_bias", "false"}, {"attention_dropout", "0.0"},
    {"bos_token_id", "128000"}, {"eos_token_id", "128001"}, {"hidden_act", "\"silu\""},
    {"hidden_size", "4096"}, {"initializer_range", "0.02"}, {"intermediate_size", "14336"},
    {"max_position_embeddings", "131072"}, {"mlp_bias", "false"}, {"model_type", "\"llama\""},
    {"num_attention_heads", "32"}, {"num_hidden_layers", "32"}, {"num_key_value_heads", "8"},
    {"pretraining_tp", "1"}, {"rms_norm_eps", "1e-05"}, {"rope_scaling.factor", "8.0"},
    {"rope_scaling.low_freq_factor", "1.0"}, {"rope_scaling.high_freq_factor", "4.0"},
    {"rope_scaling.original_max_position_embeddings", "8192"}, {"rope_scaling.rope_type", "\"llama3\""},
    {"rope_theta", "500000.0"}, {"tie_word_embeddings", "false"}, {"torch_dtype", "\"bfloat16\""},
    {"use_cache", "true"}, {"vocab_size", "128256"}, {NULL, NULL}};
static const Kv gpt2[] = {        /* openai-community/gpt2 */
    {"activation_function", "\"gelu_new\""}, {"architectures", "[\"GPT2LMHeadModel\"]"},
    {"attn_pdrop", "0.1"}, {"bos_token_id", "50256"}, {"embd_pdrop", "0.1"}, {"eos_token_id", "50256"},
    {"initializer_range", "0.02"}, {"layer_norm_epsilon", "1e-05"}, {"model_type", "\"gpt2\""},
    {"n_ctx", "1024"}, {"n_embd", "768"}, {"n_head", "12"}, {"n_layer", "12"}, {"n_positions", "1024"},
    {"resid_pdrop", "0.1"}, {"vocab_size", "50257"}, {NULL, NULL}};

static const Kv *find(const Kv *kv, const char *key)
{
    for (; key && kv->key; kv++)
        if (!strcmp(kv->key, key)) return kv;
    return NULL;
}

/* JSON scalars equal as transformers would see them: numbers by value, the rest by text. */
static bool same(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb) return x == y;
    return !strcmp(a, b);
}

/* Every problem of rows k[n] against a published config, in buf; the count. */
static int disagree(const ZgHfKey *k, int n, const Kv *pub, char *buf, size_t cap)
{
    int bad = 0;
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        const Kv *p = find(pub, k[i].key);
        if (p && !p->value) p = NULL;             /* null reads as absent */
        if (!p && k[i].alt) p = find(pub, k[i].alt);
        if (k[i].check) {
            const char *have = p ? p->value : k[i].absent;
            if (!have || (have[0] && !same(have, k[i].value))) {
                bad++;
                o += (size_t)snprintf(buf + o, cap - o, " [%s: published %s, zgen %s]", k[i].key,
                                      have ? have : "(missing)", k[i].value);
            }
        }
        /* a written scalar the publisher also writes must be written the same */
        if (k[i].write && p && k[i].value[0] != '{' && !same(p->value, k[i].value)) {
            bad++;
            o += (size_t)snprintf(buf + o, cap - o, " [written %s: published %s, zgen %s]", k[i].key,
                                  p->value, k[i].value);
        }
        if (o >= cap) o = cap - 1;
    }
    return bad;
}

static void against(const char *spec, const Kv *pub)
{
    ZgHfKey *k;
    char buf[2000];
    ZT_CHECKM(plan_file(spec), "%s must plan:\n%s", spec, zg_diag_log());
    int n = zg_hf_config(&M, &k);
    ZT_CHECK(n > 8);
    ZT_CHECKM(disagree(k, n, pub, buf, sizeof buf) == 0, "%s:%s", spec, buf);
    zg_hf_config_free(k, n);
}

static void t_llama2_7b(void) { against("specs/llama2-7b.yaml", llama2_7b); }
static void t_llama3_8b(void) { against("specs/llama3-8b.yaml", llama31_8b); }
static void t_gpt2_124m(void) { against("specs/gpt2-124m.yaml", gpt2); }

static void t_changed_spec_disagrees(void)
{
    ZgHfKey *k;
    char buf[2000];
    ZT_CHECK(plan_file("specs/llama3-8b.yaml"));
    M.n_kv_heads = 4;
    M.rope_factor = 16.0;
    M.tie_embeddings = true;
    int n = zg_hf_config(&M, &k);
    /* 3 checked; num_key_value_heads and tie_word_embeddings also written (the factor is inside
    ** the written rope_scaling object, compared by its checked row) */
    ZT_EQ_INT(disagree(k, n, llama31_8b, buf, sizeof buf), 5);
    ZT_CHECKM(strstr(buf, "[num_key_value_heads: published 8, zgen 4]") != NULL, "%s", buf);
    ZT_CHECKM(strstr(buf, "[rope_scaling.factor: published 8.0, zgen 16.0]") != NULL, "%s", buf);
    ZT_CHECKM(strstr(buf, "[tie_word_embeddings: published false, zgen true]") != NULL, "%s", buf);
    zg_hf_config_free(k, n);
    M.rope_llama3 = false;                         /* no scaling: rope_scaling must be null */
    n = zg_hf_config(&M, &k);
    bool null_row = false;
    for (int i = 0; i < n; i++) {
        ZT_CHECKM(strncmp(k[i].key, "rope_scaling.", 13) != 0, "%s without llama3 scaling", k[i].key);
        if (!strcmp(k[i].key, "rope_scaling") && k[i].write) ZT_EQ_STR(k[i].value, "null");
        if (!strcmp(k[i].key, "rope_scaling") && k[i].check) null_row = !strcmp(k[i].value, "null");
    }
    ZT_CHECK(null_row);
    zg_hf_config_free(k, n);
}

static void t_ignore_lists(void)
{
    const char **ig;
    bool head;
    ZT_CHECK(plan_file("specs/llama-tiny.yaml"));
    int n = zg_hf_ignore(&M, &ig);
    head = false;
    for (int i = 0; i < n; i++) head = head || !strcmp(ig[i], "lm_head.weight");
    ZT_CHECKM(!head, "untied llama: a stored lm_head.weight is the model's own, never skipped");
    M.tie_embeddings = true;
    n = zg_hf_ignore(&M, &ig);
    head = false;
    for (int i = 0; i < n; i++) head = head || !strcmp(ig[i], "lm_head.weight");
    ZT_CHECKM(head, "tied llama: a checkpoint's lm_head.weight (saved anyway) is skipped");
    ZT_CHECK(plan_file("specs/tiny.yaml"));
    n = zg_hf_ignore(&M, &ig);
    head = false;
    for (int i = 0; i < n; i++) head = head || !strcmp(ig[i], ".attn.bias");
    ZT_CHECKM(head, "gpt2: the causal-mask buffers h.N.attn.bias of HF checkpoints are skipped");
}

int main(void)
{
    ZT_RUN(t_llama2_7b);
    ZT_RUN(t_llama3_8b);
    ZT_RUN(t_gpt2_124m);
    ZT_RUN(t_changed_spec_disagrees);
    ZT_RUN(t_ignore_lists);
    return zt_end();
}
