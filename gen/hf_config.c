/*
** hf_config.c — the Hugging Face config.json of the planned model, as key/value rows the emitted
** trainer carries in its tables (zg_hf_config[], zg_hf_ignore[]; docs/TRAINER_FORMATS.md): the rows
** marked `write` are the config.json that `--export DIR` writes (transformers' from_pretrained reads
** it), the rows marked `check` are what an `--init-from DIR` config.json must agree with. The trainer
** walks the rows and never asks which arch it runs: what differs per arch is its rows (ZgArch
** hf_rows, in the arch's file gen/arch_*.c); this file turns them into values for the model.
**
** Values are JSON text. A row's `absent` is what transformers assumes when the key is missing or
** null (its config class default), so a config.json that leaves a key out is checked against that;
** NULL means the key must be there. Keys "a.b" name member b of object a (checked only).
** Also per arch (ZgArch hf_ignore): tensors a Hugging Face checkpoint may hold that are not
** parameters of the model (GPT-2's causal-mask buffers, an old rotary inv_freq, a tied lm_head saved
** anyway); --init-from skips those and names any other extra tensor.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include "zg_arch.h"
#include "zg_lua_plan.h"

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

static char *text(const ZgModel *m, ZgHfSrc s, const char *lit)
{
    const ZgArch *a = zg_arch_find(m->arch);
    switch (s) {
    case ZG_HF_LIT: return zg_xstrdup(lit);
    case ZG_HF_NONE: case ZG_HF_ANY: return NULL;
    case ZG_HF_CLASS: return zg_fmt("[\"%s\"]", a ? a->hf_class : "?");
    case ZG_HF_VOCAB: return zg_fmt("%lld", (long long)m->vocab_size);
    case ZG_HF_CONTEXT: return zg_fmt("%lld", (long long)m->context);
    case ZG_HF_D_MODEL: return zg_fmt("%lld", (long long)m->d_model);
    case ZG_HF_N_LAYERS: return zg_fmt("%lld", (long long)m->n_layers);
    case ZG_HF_N_HEADS: return zg_fmt("%lld", (long long)m->n_heads);
    case ZG_HF_N_KV_HEADS: return zg_fmt("%lld", (long long)m->n_kv_heads);
    case ZG_HF_D_FF: return zg_fmt("%lld", (long long)m->d_ff);
    case ZG_HF_4D_MODEL: return zg_fmt("%lld", (long long)(4 * m->d_model));
    case ZG_HF_HEAD_DIM: return zg_fmt("%lld", (long long)(m->n_heads > 0 ? m->d_model / m->n_heads : 0));
    case ZG_HF_NORM_EPS: return num(m->norm_eps);
    case ZG_HF_TIE: return zg_xstrdup(m->tie_embeddings ? "true" : "false");
    case ZG_HF_ROPE_THETA: return num(m->rope_theta);
    case ZG_HF_ROPE_FACTOR: return num(m->rope_factor);
    case ZG_HF_ROPE_LOW: return num(m->rope_low_freq_factor);
    case ZG_HF_ROPE_HIGH: return num(m->rope_high_freq_factor);
    case ZG_HF_ROPE_ORIG: return zg_fmt("%lld", (long long)m->rope_original_context);
    case ZG_HF_ROPE_SCALING: {
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
    const ZgArch *a = zg_arch_find(m->arch);
    *out = NULL;
    if (!a || !a->n_hf_rows) return 0;
    ZgHfKey *k = zg_xmalloc((size_t)a->n_hf_rows * sizeof *k);
    int n = 0;
    for (int i = 0; i < a->n_hf_rows; i++) {
        const ZgHfRow *r = &a->hf_rows[i];
        if (r->llama3_only && !m->rope_llama3) continue;
        /* with llama3 scaling, the members are checked one by one instead of `null` */
        if (m->rope_llama3 && r->check && !r->write && !strcmp(r->key, "rope_scaling")) continue;
        ZgHfKey *x = &k[n++];
        x->key = r->key;
        x->alt = r->alt;
        x->value = text(m, r->value, r->lit);
        x->absent = r->absent == ZG_HF_NONE ? NULL : r->absent == ZG_HF_ANY ? "" : text(m, r->absent, r->absent_lit);
        x->write = r->write;
        x->check = r->check;
    }
    *out = k;
    return n;
}

int zg_hf_ignore(const ZgModel *m, const char ***out)
{
    static const char *list[8];
    const ZgArch *a = zg_arch_find(m->arch);
    int n = 0;
    for (const char *const *ig = a && a->hf_ignore ? a->hf_ignore : NULL; ig && *ig && n < 7; ig++) list[n++] = *ig;
    if (a && a->hf_ignore_head_if_tied && m->tie_embeddings) list[n++] = "lm_head.weight";
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
