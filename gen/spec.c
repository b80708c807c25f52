/*
** spec.c — the model spec (docs/SPEC.md "The model spec") -> ZgModel, with every check that needs the
** spec alone: key names (unknown -> "did you mean"), types, ranges, the model's own shape rules.
**
** The spec's name reaches emitted identifiers and the output folder, and its `deepspeed:` path is
** opened, so both are validated here (security: no spec text reaches code or paths unchecked).
** Ranges are chosen so that every product the planner forms (parameters x bytes x world size) fits in
** int64: a 1T-parameter spec at world size 1024 must plan, a 1e20-parameter typo must be refused.
*/
#include "zg.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PARAMS 1e14         /* 100T parameters: x 18 bytes x 1024 ranks still fits int64 */
#define MAX_VOCAB (1 << 24)     /* token ids are int32 in the 32-bit token files; fp32-exact */

/* Every spec key, as "section.key", for "did you mean" across sections. */
static const char *const spec_keys[] = {
    "name", "model", "train", "deepspeed", "hardware",
    "model.arch", "model.vocab_size", "model.context", "model.d_model", "model.n_layers",
    "model.n_heads", "model.d_ff", "model.norm_eps", "model.tie_embeddings",
    "model.n_kv_heads", "model.rope_theta", "model.rope_scaling",
    "train.seq_len", "train.world_size", "train.seed", "train.micro_batch_size",
    "train.batch_size", "train.grad_accum", "train.lr", "train.activation_checkpointing",
    "hardware.device_memory", "hardware.host_memory", "hardware.gpus_per_node",
    "hardware.device_headroom",
    "train.allow_tf32", "train.speculative_step", "train.device_grad_accum", "train.device_optimizer",
    "train.shuffle",
    "train.betas", "train.eps", "train.weight_decay", "train.warmup_steps", "train.max_grad_norm",
    "train.dtype",
};
#define N_SPEC_KEYS ((int)(sizeof spec_keys / sizeof spec_keys[0]))

/* Which keys were present (for defaults that depend on others and required keys). */
typedef struct Seen {
    bool name, model, arch, vocab, context, d_model, n_layers, n_heads, d_ff, seq_len, world, gpn;
    ZgLoc model_loc, seq_len_loc, n_heads_loc, d_ff_loc, vocab_loc, tie_loc, gpn_loc;
    /* rotary-arch keys (llama): given or not, and where, to refuse them for other archs */
    bool tie, n_kv_heads, rope_theta, rope_scaling;
    ZgLoc n_kv_heads_loc, rope_theta_loc, rope_scaling_loc;
} Seen;

void zg_model_defaults(ZgModel *m)
{
    memset(m, 0, sizeof *m);
    m->arch = zg_arch_at(0)->name;
    m->norm_eps = 1e-5;
    m->tie_embeddings = true;
    m->world_size = 1;
    m->seed = 1234;
    m->shuffle = true;
    m->rope_theta = 10000.0;
    m->speculative_step = -1;
    m->device_grad_accum = -1;
}

void zg_model_set_world_size(ZgModel *m, int ws)
{
    m->world_size = ws;
    if (!m->gpus_per_node_given) m->gpus_per_node = ws < 8 ? ws : 8;
}

static void unknown_key(const char *section, const char *key, ZgLoc at)
{
    char *full = section[0] ? zg_fmt("%s.%s", section, key) : zg_xstrdup(key);
    /* Same section first (a typo), then the key's own name in another section (misplaced). */
    const char *same[N_SPEC_KEYS], *leaf_in_other = NULL;
    int n_same = 0;
    size_t slen = strlen(section);
    for (int i = 0; i < N_SPEC_KEYS; i++) {
        const char *k = spec_keys[i], *dot = strchr(k, '.');
        bool in_section = slen ? (dot && (size_t)(dot - k) == slen && !strncmp(k, section, slen))
                               : !dot;
        if (in_section) same[n_same++] = slen ? dot + 1 : k;
        else if (!strcmp(dot ? dot + 1 : k, key)) leaf_in_other = k;
    }
    const char *s = zg_suggest(key, same, n_same);
    zg_error(at, "unknown key '%s' in the spec", full);
    if (leaf_in_other) zg_note(at, "did you mean '%s'? (it belongs in another section)", leaf_in_other);
    else if (s) zg_note(at, "did you mean '%s'?", s);
    else zg_note(at, "the spec's keys are listed in docs/SPEC.md \"The model spec\"");
    free(full);
}

static bool valid_name(const char *s)
{
    if (!islower((unsigned char)s[0])) return false;
    for (const char *p = s; *p; p++)
        if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_') return false;
    return strlen(s) <= 64;
}

static void load_name(const ZgNode *v, ZgModel *m)
{
    const char *s;
    if (!zg_node_str(v, "name", &s)) return;
    if (!valid_name(s)) {
        zg_error(v->loc, "name '%s' must match [a-z][a-z0-9_]* (at most 64 characters)", s);
        zg_note(v->loc, "it names the output folder and emitted C identifiers");
        return;
    }
    m->name = s;
}

static void load_arch(const ZgNode *v, ZgModel *m)
{
    const char *s;
    if (!zg_node_str(v, "model.arch", &s)) return;
    const ZgArch *a = zg_arch_find(s);
    if (a) {
        m->arch = a->name;
    } else {
        zg_error(v->loc, "unknown model.arch '%s'", s);
        zg_note(v->loc, "zgen supports arch %s", zg_arch_names());
    }
}

/* rope_scaling: none (or null), or {type: llama3, factor, low_freq_factor, high_freq_factor,
** original_context} as LLaMA 3.1's config.json (original_max_position_embeddings there). */
static void load_rope_scaling(const ZgNode *v, ZgModel *m)
{
    static const char *const keys[] = {"type", "factor", "low_freq_factor", "high_freq_factor",
                                       "original_context"};
    if (zg_node_is_null(v) || (v->kind == ZG_NSCALAR && !strcmp(v->scalar, "none"))) return;
    if (v->kind != ZG_NMAP) {
        zg_error(v->loc, "model.rope_scaling must be none or a mapping {type: llama3, factor, low_freq_factor, "
                 "high_freq_factor, original_context}, not %s", zg_node_kind_name(v));
        return;
    }
    bool seen[5] = {0};
    for (int i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        const ZgNode *x = v->vals[i];
        int j = 0;
        while (j < 5 && strcmp(keys[j], k)) j++;
        if (j == 5) {
            const char *sug = zg_suggest(k, keys, 5);
            zg_error(v->key_locs[i], "unknown key 'model.rope_scaling.%s' in the spec", k);
            if (!strcmp(k, "rope_type")) zg_note(v->key_locs[i], "zgen spells it 'type' (llama3)");
            else if (!strcmp(k, "original_max_position_embeddings"))
                zg_note(v->key_locs[i], "zgen spells it 'original_context'");
            else if (sug) zg_note(v->key_locs[i], "did you mean '%s'?", sug);
            else zg_note(v->key_locs[i], "rope_scaling takes type, factor, low_freq_factor, high_freq_factor, "
                         "original_context");
            continue;
        }
        seen[j] = true;
        const char *str;
        double d;
        char *what = zg_fmt("model.rope_scaling.%s", k);
        if (j == 0) {
            if (zg_node_str(x, what, &str)) {
                if (!strcmp(str, "llama3")) m->rope_llama3 = true;
                else {
                    zg_error(x->loc, "model.rope_scaling.type '%s' is not supported", str);
                    zg_note(x->loc, "zgen implements LLaMA 3's frequency scaling (type: llama3); linear, dynamic "
                            "and yarn scaling are not implemented; use rope_scaling: none for no scaling");
                }
            }
        } else if (j == 4) {
            zg_node_int(x, what, 1, 1 << 24, &m->rope_original_context);
        } else if (zg_node_num(x, what, 0, 1e6, &d)) {
            if (d <= 0) zg_error(x->loc, "%s must be positive, not %g", what, d);
            else if (j == 1) m->rope_factor = d;
            else if (j == 2) m->rope_low_freq_factor = d;
            else m->rope_high_freq_factor = d;
        }
        free(what);
    }
    for (int j = 0; j < 5; j++)
        if (!seen[j]) zg_error(v->loc, "missing key 'model.rope_scaling.%s'", keys[j]);
    if (seen[2] && seen[3] && m->rope_low_freq_factor > 0 &&
        m->rope_high_freq_factor <= m->rope_low_freq_factor) {
        zg_error(v->loc, "model.rope_scaling.high_freq_factor %g must exceed low_freq_factor %g",
                 m->rope_high_freq_factor, m->rope_low_freq_factor);
        zg_note(v->loc, "LLaMA 3 interpolates between the two wavelength bounds they set (LLaMA 3.1: 1 and 4)");
    }
}

static void load_model(const ZgNode *sec, ZgModel *m, Seen *seen)
{
    for (int i = 0; i < sec->n; i++) {
        const char *k = sec->keys[i];
        const ZgNode *v = sec->vals[i];
        char *what = zg_fmt("model.%s", k);
        if (!strcmp(k, "arch")) seen->arch = true, m->loc_arch = v->loc, load_arch(v, m);
        else if (!strcmp(k, "vocab_size")) {
            /* Tokens are uint16 in llm.c / nanoGPT files, int32 in zgen's 32-bit token files. */
            seen->vocab = true;
            seen->vocab_loc = v->loc;
            int64_t x;
            if (v->kind == ZG_NSCALAR && zg_parse_int64(v->scalar, &x) && x > MAX_VOCAB) {
                zg_error(v->loc, "model.vocab_size %lld exceeds %d: token ids are int32 and the logits fp32",
                         (long long)x, MAX_VOCAB);
            } else {
                zg_node_int(v, what, 1, MAX_VOCAB, &m->vocab_size);
            }
        } else if (!strcmp(k, "n_kv_heads")) {
            seen->n_kv_heads = true;
            seen->n_kv_heads_loc = v->loc;
            zg_node_int(v, what, 1, 1 << 16, &m->n_kv_heads);
        } else if (!strcmp(k, "rope_theta")) {
            seen->rope_theta = true;
            seen->rope_theta_loc = v->loc;
            double th;
            if (zg_node_num(v, what, 0, 1e12, &th)) {
                if (th <= 0) zg_error(v->loc, "model.rope_theta must be positive, not %g", th);
                else m->rope_theta = th;
            }
        } else if (!strcmp(k, "rope_scaling")) {
            seen->rope_scaling = true;
            seen->rope_scaling_loc = v->loc;
            load_rope_scaling(v, m);
        } else if (!strcmp(k, "context")) seen->context = true, zg_node_int(v, what, 1, 1 << 20, &m->context);
        else if (!strcmp(k, "d_model")) seen->d_model = true, zg_node_int(v, what, 1, 1 << 20, &m->d_model);
        else if (!strcmp(k, "n_layers")) {
            seen->n_layers = true;
            m->loc_n_layers = v->loc;
            zg_node_int(v, what, 1, 1 << 16, &m->n_layers);
        }
        else if (!strcmp(k, "n_heads")) {
            seen->n_heads = true;
            zg_node_int(v, what, 1, 1 << 16, &m->n_heads);
            seen->n_heads_loc = v->loc;
        } else if (!strcmp(k, "d_ff")) {
            seen->d_ff = true;
            zg_node_int(v, what, 1, 1 << 22, &m->d_ff);
            seen->d_ff_loc = v->loc;
        } else if (!strcmp(k, "norm_eps")) {
            double e;
            if (zg_node_num(v, what, 0, 1, &e)) {
                if (e <= 0) zg_error(v->loc, "model.norm_eps must be positive, not %g", e);
                else m->norm_eps = e;
            }
        } else if (!strcmp(k, "tie_embeddings")) {
            seen->tie_loc = v->loc;
            seen->tie = true;
            zg_node_bool(v, what, &m->tie_embeddings);
        } else unknown_key("model", k, sec->key_locs[i]);
        free(what);
    }
}

/* train.device_optimizer: auto, false, or the share of the optimizer state on the device, a
** fraction in (0, 1) (1 is offload_optimizer none, which the config says instead). */
static void device_optimizer(const ZgNode *v, ZgModel *m)
{
    const char *what = "train.device_optimizer";
    if (v->kind == ZG_NSCALAR && zg_node_is_auto(v)) { m->device_optimizer = -1; return; }
    bool b;
    if (v->kind == ZG_NSCALAR && (!strcasecmp(v->scalar, "false") || !strcasecmp(v->scalar, "true"))) {
        if (!zg_node_bool(v, what, &b)) return;
        if (!b) { m->device_optimizer = 0; return; }
        zg_error(v->loc, "%s must be auto, false or a fraction in (0, 1), not '%s'", what, v->scalar);
        zg_note(v->loc, "auto keeps on the device the leading optimizer sub-groups that fit "
                "hardware.device_memory; 0.4 keeps about 40 %% of the state there");
        return;
    }
    double x;
    if (!zg_node_num(v, what, 0, 1, &x)) return;
    if (x <= 0 || x >= 1) {
        zg_error(v->loc, "%s must be auto, false or a fraction in (0, 1), not %g", what, x);
        zg_note(v->loc, x >= 1 ? "the whole optimizer on the device is zero_optimization.offload_optimizer.device none"
                               : "false (or leaving the key out) keeps the whole optimizer state where the config puts it");
        return;
    }
    m->device_optimizer = x;
}

static void load_train(const ZgNode *sec, ZgModel *m, Seen *seen)
{
    for (int i = 0; i < sec->n; i++) {
        const char *k = sec->keys[i];
        const ZgNode *v = sec->vals[i];
        char *what = zg_fmt("train.%s", k);
        int64_t x;
        if (!strcmp(k, "seq_len")) {
            seen->seq_len = true;
            zg_node_int(v, what, 1, 1 << 20, &m->seq_len);
            seen->seq_len_loc = v->loc;
        } else if (!strcmp(k, "world_size")) {
            if (zg_node_int(v, what, 1, 1 << 20, &x)) m->world_size = (int)x, seen->world = true;
            m->loc_world_size = v->loc;
        } else if (!strcmp(k, "seed")) {
            if (zg_node_int(v, what, 0, INT64_MAX, &x)) m->seed = (uint64_t)x;
        } else if (!strcmp(k, "shuffle")) {
            zg_node_bool(v, what, &m->shuffle);
        } else if (zg_spec_train_arg(k, v, m)) {
            /* the HF TrainingArguments keys (spec_train.c) */
        } else if (!strcmp(k, "activation_checkpointing")) {
            zg_node_bool(v, what, &m->activation_checkpointing);
        } else if (!strcmp(k, "allow_tf32")) {
            m->loc_allow_tf32 = v->loc;
            zg_node_bool(v, what, &m->allow_tf32);
        } else if (!strcmp(k, "speculative_step")) {
            bool b;
            m->loc_speculative_step = v->loc;
            if (zg_node_bool(v, what, &b)) m->speculative_step = b;
        } else if (!strcmp(k, "device_grad_accum")) {
            bool b;
            m->loc_device_grad_accum = v->loc;
            if (zg_node_bool(v, what, &b)) m->device_grad_accum = b;
        } else if (!strcmp(k, "device_optimizer")) {
            m->loc_device_optimizer = v->loc;
            device_optimizer(v, m);
        } else unknown_key("train", k, sec->key_locs[i]);
        free(what);
    }
}

static void load_size(const ZgNode *v, const char *what, int64_t *out, ZgLoc *loc)
{
    *loc = v->loc;
    int64_t b;
    if (v->kind != ZG_NSCALAR || !zg_parse_size(v->scalar, &b)) {
        zg_error(v->loc, "%s must be a size such as 80GiB, 512GB or 8e10 (bytes), not %s%s%s", what,
                 v->kind == ZG_NSCALAR ? "'" : "", v->kind == ZG_NSCALAR ? v->scalar : zg_node_kind_name(v),
                 v->kind == ZG_NSCALAR ? "'" : "");
        return;
    }
    if (b <= 0) {
        zg_error(v->loc, "%s must be positive", what);
        return;
    }
    *out = b;
}

static void load_hardware(const ZgNode *sec, ZgModel *m, Seen *seen)
{
    for (int i = 0; i < sec->n; i++) {
        const char *k = sec->keys[i];
        const ZgNode *v = sec->vals[i];
        int64_t x;
        if (!strcmp(k, "device_memory")) load_size(v, "hardware.device_memory", &m->device_memory, &m->loc_device_memory);
        else if (!strcmp(k, "host_memory")) load_size(v, "hardware.host_memory", &m->host_memory, &m->loc_host_memory);
        else if (!strcmp(k, "device_headroom"))
            load_size(v, "hardware.device_headroom", &m->device_headroom, &m->loc_device_headroom);
        else if (!strcmp(k, "gpus_per_node")) {
            seen->gpn_loc = v->loc;
            if (zg_node_int(v, "hardware.gpus_per_node", 1, 1024, &x)) m->gpus_per_node = (int)x, seen->gpn = true, m->gpus_per_node_given = true;
        } else unknown_key("hardware", k, sec->key_locs[i]);
    }
}

static bool section(const ZgNode *v, const char *name)
{
    if (v->kind == ZG_NMAP) return true;
    zg_error(v->loc, "'%s' must be a mapping of keys, not %s", name, zg_node_kind_name(v));
    return false;
}

/* The rotary-arch keys: refused for archs without RoPE, cross-checked for those with it. */
static void check_rope(ZgModel *m, const Seen *s, const ZgArch *arch)
{
    if (!arch) return;
    if (!arch->rope) {
        const bool given[3] = {s->n_kv_heads, s->rope_theta, s->rope_scaling};
        const ZgLoc locs[3] = {s->n_kv_heads_loc, s->rope_theta_loc, s->rope_scaling_loc};
        static const char *const names[3] = {"n_kv_heads", "rope_theta", "rope_scaling"};
        for (int i = 0; i < 3; i++)
            if (given[i]) {
                zg_error(locs[i], "model.%s applies to archs with rotary embeddings (%s), not %s", names[i],
                         zg_arch_rope_names(), arch->name);
                zg_note(locs[i], "%s has no rotary embeddings or grouped-query attention; remove the key",
                        arch->name);
            }
        return;
    }
    if (!arch->rope_scaling && m->rope_llama3) {
        zg_error(s->rope_scaling_loc, "model.rope_scaling (LLaMA 3's frequency scaling) does not apply to arch %s",
                 arch->name);
        zg_note(s->rope_scaling_loc, "%s has plain RoPE; remove the key or write rope_scaling: none", arch->name);
    }
    if (m->n_heads <= 0 || m->d_model <= 0) return;
    if (m->n_kv_heads > 0 && m->n_heads % m->n_kv_heads != 0) {
        zg_error(s->n_kv_heads_loc, "model.n_heads %lld is not divisible by model.n_kv_heads %lld",
                 (long long)m->n_heads, (long long)m->n_kv_heads);
        zg_note(s->n_kv_heads_loc, "each key/value head serves n_heads / n_kv_heads query heads; pick a "
                "divisor of %lld (n_heads for plain attention, 1 for multi-query)", (long long)m->n_heads);
    }
    if (m->d_model % m->n_heads == 0 && (m->d_model / m->n_heads) % 2 != 0) {
        zg_error(s->n_heads_loc, "the head size d_model / n_heads = %lld / %lld = %lld is odd",
                 (long long)m->d_model, (long long)m->n_heads, (long long)(m->d_model / m->n_heads));
        zg_note(s->n_heads_loc, "rotary embeddings rotate pairs of dimensions (rotate-half): the head size "
                "must be even");
    }
    if (m->rope_original_context > 0 && m->context > 0 &&
        m->rope_original_context > m->context) {
        zg_error(s->rope_scaling_loc, "model.rope_scaling.original_context %lld exceeds model.context %lld",
                 (long long)m->rope_original_context, (long long)m->context);
        zg_note(s->rope_scaling_loc, "scaling extends a model trained on original_context positions to "
                "context; LLaMA 3.1: 8192 -> 131072");
    }
}

static void check_model(ZgModel *m, const Seen *s, ZgLoc root)
{
    ZgLoc at = s->model ? s->model_loc : root;
    if (!s->name) zg_error(root, "missing key 'name' (the model's name, [a-z][a-z0-9_]*)");
    if (!s->model) {
        zg_error(root, "missing section 'model' (arch, vocab_size, context, d_model, n_layers, n_heads)");
        return;
    }
    if (!s->arch) zg_error(at, "missing key 'model.arch' (%s)", zg_arch_names());
    if (!s->vocab) zg_error(at, "missing key 'model.vocab_size'");
    if (!s->context) zg_error(at, "missing key 'model.context' (maximum positions)");
    if (!s->d_model) zg_error(at, "missing key 'model.d_model'");
    if (!s->n_layers) zg_error(at, "missing key 'model.n_layers'");
    if (!s->n_heads) zg_error(at, "missing key 'model.n_heads'");
    const ZgArch *arch = zg_arch_find(m->arch);
    if (!s->d_ff) {
        if (arch && arch->gated_mlp && s->arch)
            zg_error(at, "missing key 'model.d_ff' (the %s gated MLP's intermediate size; LLaMA 2 7B: 11008)",
                     arch->name);
        m->d_ff = 4 * m->d_model;
    }
    if (!s->tie && arch) m->tie_embeddings = arch->tie_default;
    if (!s->n_kv_heads) m->n_kv_heads = m->n_heads;
    check_rope(m, s, arch);
    if (!s->seq_len) m->seq_len = m->context;
    if (m->d_model > 0 && m->n_heads > 0 && m->d_model % m->n_heads != 0) {
        zg_error(s->n_heads_loc, "model.d_model %lld is not divisible by model.n_heads %lld",
                 (long long)m->d_model, (long long)m->n_heads);
        zg_note(s->n_heads_loc, "each head gets d_model / n_heads dimensions; pick n_heads dividing %lld",
                (long long)m->d_model);
    }
    if (s->seq_len && m->context > 0 && m->seq_len > m->context) {
        zg_error(s->seq_len_loc, "train.seq_len %lld exceeds model.context %lld", (long long)m->seq_len,
                 (long long)m->context);
        zg_note(s->seq_len_loc, "the model has positions for %lld tokens; lower seq_len or raise context",
                (long long)m->context);
    }
    if (!m->tie_embeddings && arch && arch->tie_required) {
        zg_error(s->tie_loc, "model.tie_embeddings must be true for arch %s", arch->name);
        zg_note(s->tie_loc, "GPT-2's lm_head is the token embedding (wte); remove the key or set true");
    }
    if (m->vocab_size > 0 && m->context > 0 && m->d_model > 0 && m->n_layers > 0 && m->d_ff > 0) {
        double p = zg_arch_params(m);
        if (p > MAX_PARAMS)
            zg_error(at, "the model has %.3g parameters; zgen plans models up to %.0e", p, MAX_PARAMS);
    }
    if (!s->gpn) m->gpus_per_node = m->world_size < 8 ? m->world_size : 8;
    else if (m->world_size > m->gpus_per_node && m->world_size % m->gpus_per_node != 0) {
        zg_error(s->gpn_loc, "train.world_size %d is not a multiple of hardware.gpus_per_node %d",
                 m->world_size, m->gpus_per_node);
        zg_note(s->gpn_loc, "every node runs gpus_per_node ranks; make world_size a multiple of it");
    }
}

const ZgNode *zg_spec_load(const char *path, ZgModel *m)
{
    zg_model_defaults(m);
    m->spec_path = path;
    ZgNode *root = zg_node_load_file(path);
    if (!root) return NULL;
    ZgLoc rat = {path, root->loc.line, root->loc.col};
    m->loc_n_layers = rat;
    m->loc_arch = rat;
    m->loc_allow_tf32 = rat;
    m->loc_speculative_step = rat;
    m->loc_device_grad_accum = rat;
    m->loc_device_optimizer = rat;
    if (root->kind != ZG_NMAP) {
        zg_error(root->loc, "a spec is a mapping (name, model, train, deepspeed, hardware), not %s",
                 zg_node_kind_name(root));
        return NULL;
    }
    Seen seen = {0};
    const ZgNode *ds = NULL;
    for (int i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        const ZgNode *v = root->vals[i];
        if (!strcmp(k, "name")) {
            seen.name = true;
            m->loc_name = v->loc;
            load_name(v, m);
        } else if (!strcmp(k, "model")) {
            seen.model = true;
            seen.model_loc = root->key_locs[i];
            if (section(v, "model")) load_model(v, m, &seen);
        } else if (!strcmp(k, "train")) {
            if (section(v, "train")) load_train(v, m, &seen);
        } else if (!strcmp(k, "hardware")) {
            if (section(v, "hardware")) load_hardware(v, m, &seen);
        } else if (!strcmp(k, "deepspeed")) {
            m->loc_deepspeed = v->loc;
            if (v->kind == ZG_NMAP) ds = v;
            else if (v->kind == ZG_NSCALAR && !zg_node_is_null(v)) {
                if (!zg_path_is_sane(v->scalar)) {
                    zg_error(v->loc, "deepspeed: '%s' is not a usable path", v->scalar);
                    zg_note(v->loc, "use a path without spaces, quotes, '$', backslashes or control characters");
                } else ds = v;
            } else {
                zg_error(v->loc, "deepspeed: must be a config file path or an inline mapping, not %s",
                         zg_node_kind_name(v));
            }
        } else unknown_key("", k, root->key_locs[i]);
    }
    check_model(m, &seen, rat);
    return ds;
}
