/*
** hf_config.c — the Hugging Face config.json of the planned model, as key/value rows the emitted
** trainer carries in its tables (zg_hf_config[], zg_hf_ignore[]; docs/TRAINER_FORMATS.md): the rows
** marked `write` are the config.json that `--export DIR` writes (transformers' from_pretrained reads
** it), the rows marked `check` are what an `--init-from DIR` config.json must agree with. The trainer
** walks the rows and never asks which arch it runs: what differs per arch is the table below.
**
** Values are JSON text. A row's `absent` is what transformers assumes when the key is missing or
** null (its config class default), so a config.json that leaves a key out is checked against that;
** NULL means the key must be there. Keys "a.b" name member b of object a (checked only).
** Also per arch: tensors a Hugging Face checkpoint may hold that are not parameters of the model
** (GPT-2's causal-mask buffers, an old rotary inv_freq, a tied lm_head saved anyway); --init-from
** skips those and names any other extra tensor.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include "zg_lua_plan.h"

/* Where a row's value comes from. */
typedef enum {
    V_LIT,                      /* the row's literal JSON text */
    V_NONE,                     /* absent: no value (required key, or `absent` unused) */
    V_ANY,                      /* absent: anything goes (not checked when missing) */
    V_HF_CLASS,                 /* ["<ZgArch.hf_class>"] */
    V_VOCAB, V_CONTEXT, V_D_MODEL, V_N_LAYERS, V_N_HEADS, V_N_KV_HEADS, V_D_FF, V_4D_MODEL,
    V_HEAD_DIM, V_NORM_EPS, V_TIE, V_ROPE_THETA,
    V_ROPE_SCALING,             /* null, or {"rope_type": "llama3", ...} */
    V_ROPE_FACTOR, V_ROPE_LOW, V_ROPE_HIGH, V_ROPE_ORIG,
} Src;

typedef struct Row {
    const char *key, *alt;
    Src value;
    const char *lit;            /* V_LIT value */
    Src absent;
    const char *absent_lit;     /* V_LIT absent */
    bool write, check;
    bool llama3_only;           /* only with rope_scaling llama3 */
} Row;

#define W true
#define C true
#define NO false

/* GPT2LMHeadModel. The order is the config.json's; torch_dtype is appended by the writer (it is
** the export's dtype, a run-time choice). */
static const Row gpt2_rows[] = {
    {"architectures", NULL, V_HF_CLASS, NULL, V_ANY, NULL, W, NO, false},
    {"model_type", NULL, V_LIT, "\"gpt2\"", V_NONE, NULL, W, C, false},
    {"vocab_size", NULL, V_VOCAB, NULL, V_LIT, "50257", W, C, false},
    {"n_positions", "n_ctx", V_CONTEXT, NULL, V_LIT, "1024", W, C, false},
    {"n_ctx", NULL, V_CONTEXT, NULL, V_ANY, NULL, W, NO, false},
    {"n_embd", NULL, V_D_MODEL, NULL, V_LIT, "768", W, C, false},
    {"n_layer", NULL, V_N_LAYERS, NULL, V_LIT, "12", W, C, false},
    {"n_head", NULL, V_N_HEADS, NULL, V_LIT, "12", W, C, false},
    {"n_inner", NULL, V_D_FF, NULL, V_4D_MODEL, NULL, W, C, false},
    {"activation_function", NULL, V_LIT, "\"gelu_new\"", V_LIT, "\"gelu_new\"", W, C, false},
    {"layer_norm_epsilon", NULL, V_NORM_EPS, NULL, V_LIT, "1e-05", W, C, false},
    {"tie_word_embeddings", NULL, V_TIE, NULL, V_LIT, "true", W, C, false},
};
static const char *const gpt2_ignore[] = {".attn.bias", ".attn.masked_bias", "lm_head.weight"};

/* LlamaForCausalLM (LlamaConfig's defaults as `absent`). */
static const Row llama_rows[] = {
    {"architectures", NULL, V_HF_CLASS, NULL, V_ANY, NULL, W, NO, false},
    {"model_type", NULL, V_LIT, "\"llama\"", V_NONE, NULL, W, C, false},
    {"vocab_size", NULL, V_VOCAB, NULL, V_LIT, "32000", W, C, false},
    {"max_position_embeddings", NULL, V_CONTEXT, NULL, V_LIT, "2048", W, C, false},
    {"hidden_size", NULL, V_D_MODEL, NULL, V_LIT, "4096", W, C, false},
    {"intermediate_size", NULL, V_D_FF, NULL, V_LIT, "11008", W, C, false},
    {"num_hidden_layers", NULL, V_N_LAYERS, NULL, V_LIT, "32", W, C, false},
    {"num_attention_heads", NULL, V_N_HEADS, NULL, V_LIT, "32", W, C, false},
    {"num_key_value_heads", NULL, V_N_KV_HEADS, NULL, V_N_HEADS, NULL, W, C, false},
    {"head_dim", NULL, V_HEAD_DIM, NULL, V_ANY, NULL, W, C, false},
    {"hidden_act", NULL, V_LIT, "\"silu\"", V_LIT, "\"silu\"", W, C, false},
    {"rms_norm_eps", NULL, V_NORM_EPS, NULL, V_LIT, "1e-06", W, C, false},
    {"rope_theta", NULL, V_ROPE_THETA, NULL, V_LIT, "10000.0", W, C, false},
    {"rope_scaling", NULL, V_ROPE_SCALING, NULL, V_LIT, "null", W, NO, false},
    {"rope_scaling", NULL, V_LIT, "null", V_LIT, "null", NO, C, false},   /* replaced with llama3 */
    {"rope_scaling.rope_type", "rope_scaling.type", V_LIT, "\"llama3\"", V_NONE, NULL, NO, C, true},
    {"rope_scaling.factor", NULL, V_ROPE_FACTOR, NULL, V_NONE, NULL, NO, C, true},
    {"rope_scaling.low_freq_factor", NULL, V_ROPE_LOW, NULL, V_NONE, NULL, NO, C, true},
    {"rope_scaling.high_freq_factor", NULL, V_ROPE_HIGH, NULL, V_NONE, NULL, NO, C, true},
    {"rope_scaling.original_max_position_embeddings", NULL, V_ROPE_ORIG, NULL, V_NONE, NULL, NO, C, true},
    {"attention_bias", NULL, V_LIT, "false", V_LIT, "false", W, C, false},
    {"mlp_bias", NULL, V_LIT, "false", V_LIT, "false", W, C, false},
    {"tie_word_embeddings", NULL, V_TIE, NULL, V_LIT, "false", W, C, false},
};
static const char *const llama_ignore[] = {".self_attn.rotary_emb.inv_freq"};

typedef struct ArchRows {
    const char *arch;
    const Row *rows;
    int n_rows;
    const char *const *ignore;
    int n_ignore;
    bool ignore_head_if_tied;   /* a tied checkpoint may still carry lm_head.weight */
} ArchRows;

#define N(a) ((int)(sizeof a / sizeof a[0]))
static const ArchRows arch_rows[] = {
    {"gpt2", gpt2_rows, N(gpt2_rows), gpt2_ignore, N(gpt2_ignore), false},
    {"llama", llama_rows, N(llama_rows), llama_ignore, N(llama_ignore), true},
};

/* Whole numbers as 500000.0; others the shortest decimal that reads back as the same double. */
static char *num(double v)
{
    char s[40];
    if (v == (double)(long long)v && fabs(v) < 1e15) return zg_fmt("%.1f", v);   /* 500000.0, not 5e+05 */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    if (!strpbrk(s, ".eE")) strcat(s, ".0");
    return zg_xstrdup(s);
}

static char *text(const ZgModel *m, Src s, const char *lit)
{
    const ZgArch *a = zg_arch_find(m->arch);
    switch (s) {
    case V_LIT: return zg_xstrdup(lit);
    case V_NONE: case V_ANY: return NULL;
    case V_HF_CLASS: return zg_fmt("[\"%s\"]", a ? a->hf_class : "?");
    case V_VOCAB: return zg_fmt("%lld", (long long)m->vocab_size);
    case V_CONTEXT: return zg_fmt("%lld", (long long)m->context);
    case V_D_MODEL: return zg_fmt("%lld", (long long)m->d_model);
    case V_N_LAYERS: return zg_fmt("%lld", (long long)m->n_layers);
    case V_N_HEADS: return zg_fmt("%lld", (long long)m->n_heads);
    case V_N_KV_HEADS: return zg_fmt("%lld", (long long)m->n_kv_heads);
    case V_D_FF: return zg_fmt("%lld", (long long)m->d_ff);
    case V_4D_MODEL: return zg_fmt("%lld", (long long)(4 * m->d_model));
    case V_HEAD_DIM: return zg_fmt("%lld", (long long)(m->n_heads > 0 ? m->d_model / m->n_heads : 0));
    case V_NORM_EPS: return num(m->norm_eps);
    case V_TIE: return zg_xstrdup(m->tie_embeddings ? "true" : "false");
    case V_ROPE_THETA: return num(m->rope_theta);
    case V_ROPE_FACTOR: return num(m->rope_factor);
    case V_ROPE_LOW: return num(m->rope_low_freq_factor);
    case V_ROPE_HIGH: return num(m->rope_high_freq_factor);
    case V_ROPE_ORIG: return zg_fmt("%lld", (long long)m->rope_original_context);
    case V_ROPE_SCALING: {
        if (!m->rope_llama3) return zg_xstrdup("null");
        char *f = num(m->rope_factor), *lo = num(m->rope_low_freq_factor), *hi = num(m->rope_high_freq_factor);
        char *r = zg_fmt("{\"rope_type\": \"llama3\", \"factor\": %s, \"low_freq_factor\": %s, "
                         "\"high_freq_factor\": %s, \"original_max_position_embeddings\": %lld}",
                         f, lo, hi, (long long)m->rope_original_context);
        free(f); free(lo); free(hi);
        return r;
    }
    }
    zg_unreachable();
}

int zg_hf_config(const ZgModel *m, ZgHfKey **out)
{
    const ArchRows *a = NULL;
    for (int i = 0; i < N(arch_rows); i++)
        if (m->arch && !strcmp(arch_rows[i].arch, m->arch)) a = &arch_rows[i];
    *out = NULL;
    if (!a) return 0;
    ZgHfKey *k = zg_xmalloc((size_t)a->n_rows * sizeof *k);
    int n = 0;
    for (int i = 0; i < a->n_rows; i++) {
        const Row *r = &a->rows[i];
        if (r->llama3_only && !m->rope_llama3) continue;
        /* with llama3 scaling, the members are checked one by one instead of `null` */
        if (m->rope_llama3 && r->check && !r->write && !strcmp(r->key, "rope_scaling")) continue;
        ZgHfKey *x = &k[n++];
        x->key = r->key;
        x->alt = r->alt;
        x->value = text(m, r->value, r->lit);
        x->absent = r->absent == V_NONE ? NULL : r->absent == V_ANY ? "" : text(m, r->absent, r->absent_lit);
        x->write = r->write;
        x->check = r->check;
    }
    *out = k;
    return n;
}

int zg_hf_ignore(const ZgModel *m, const char ***out)
{
    static const char *list[8];
    int n = 0;
    for (int i = 0; i < N(arch_rows); i++) {
        const ArchRows *a = &arch_rows[i];
        if (!m->arch || strcmp(a->arch, m->arch)) continue;
        for (int k = 0; k < a->n_ignore && n < 7; k++) list[n++] = a->ignore[k];
        if (a->ignore_head_if_tied && m->tie_embeddings) list[n++] = "lm_head.weight";
    }
    *out = list;
    return n;
}

/* {===================================================================== as Lua tables */
/* plan.hf_config: {key, alt, value, absent, write, check} rows (alt/absent nil when NULL);
** plan.hf_ignore: strings. */
void zg_lua_push_hf(lua_State *L, const ZgModel *m)
{
    ZgHfKey *k;
    const char **ig;
    int n = zg_hf_config(m, &k), ni = zg_hf_ignore(m, &ig);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 6);
        lua_pushstring(L, k[i].key); lua_setfield(L, -2, "key");
        if (k[i].alt) { lua_pushstring(L, k[i].alt); lua_setfield(L, -2, "alt"); }
        lua_pushstring(L, k[i].value); lua_setfield(L, -2, "value");
        if (k[i].absent) { lua_pushstring(L, k[i].absent); lua_setfield(L, -2, "absent"); }
        lua_pushboolean(L, k[i].write); lua_setfield(L, -2, "write");
        lua_pushboolean(L, k[i].check); lua_setfield(L, -2, "check");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "hf_config");
    lua_createtable(L, ni, 0);
    for (int i = 0; i < ni; i++) {
        lua_pushstring(L, ig[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "hf_ignore");
    zg_hf_config_free(k, n);
}
/* }===================================================================== */

void zg_hf_config_free(ZgHfKey *k, int n)
{
    for (int i = 0; i < n; i++) {
        free(k[i].value);
        if (k[i].absent && k[i].absent[0]) free((char *)k[i].absent);
    }
    free(k);
}
