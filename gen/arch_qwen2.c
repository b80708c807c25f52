/*
** arch_qwen2.c — Qwen2 as Hugging Face's Qwen2ForCausalLM, all of it: LLaMA's shape (RMSNorm, rotary
** positions, grouped-query attention, SwiGLU, nn.Linear weights [out, in]) plus biases on the q, k
** and v projections (none on o_proj or the MLP). It runs on llama's kernels and adapters, which add
** the biases where the tables say ZG_QKV_BIAS. Qwen2's sliding-window attention and rope scaling
** are refused: the kernels attend over the whole causal prefix with plain RoPE.
*/
#include "zg_arch.h"

#define T(n, a, b, i) {.name = n, .d0 = ZG_DIM_##a, .d1 = ZG_DIM_##b, .init = ZG_INIT_##i}
#define T_RES(n, a, b) {.name = n, .d0 = ZG_DIM_##a, .d1 = ZG_DIM_##b, .init = ZG_INIT_NORMAL, .residual_proj = true}

static const ZgArchTensor embed[] = {
    T("model.embed_tokens.weight", VOCAB, MODEL, NORMAL),
};
static const ZgArchTensor block[] = {
    T("input_layernorm.weight", MODEL, NONE, ONES),
    T("self_attn.q_proj.weight", MODEL, MODEL, NORMAL),
    T("self_attn.q_proj.bias", MODEL, NONE, ZEROS),
    T("self_attn.k_proj.weight", KV, MODEL, NORMAL),
    T("self_attn.k_proj.bias", KV, NONE, ZEROS),
    T("self_attn.v_proj.weight", KV, MODEL, NORMAL),
    T("self_attn.v_proj.bias", KV, NONE, ZEROS),
    T_RES("self_attn.o_proj.weight", MODEL, MODEL),
    T("post_attention_layernorm.weight", MODEL, NONE, ONES),
    T("mlp.gate_proj.weight", FF, MODEL, NORMAL),
    T("mlp.up_proj.weight", FF, MODEL, NORMAL),
    T_RES("mlp.down_proj.weight", MODEL, FF),
};
static const ZgArchTensor final[] = {
    T("model.norm.weight", MODEL, NONE, ONES),
};
static const ZgArchTensor head[] = {
    {.name = "lm_head.weight", .d0 = ZG_DIM_VOCAB, .d1 = ZG_DIM_MODEL, .init = ZG_INIT_NORMAL, .untied_only = true},
};
static const ZgArchModule modules[] = {
    {.kind = ZG_MOD_EMBED, .name = "embed", .tensors = embed, .n_tensors = ZG_ARCH_N(embed)},
    {.kind = ZG_MOD_BLOCK, .name = "model.layers.%d", .tensors = block, .n_tensors = ZG_ARCH_N(block)},
    {.kind = ZG_MOD_FINAL_NORM, .name = "model.norm", .tensors = final, .n_tensors = ZG_ARCH_N(final)},
    {.kind = ZG_MOD_HEAD, .name = "lm_head", .tensors = head, .n_tensors = ZG_ARCH_N(head)},
};

/* templates/host/, emitted flat: llama's (the bias adds are in its kernels). */
static const char *const host_files[] = {
    "zk_host.c", "zk_host.h", "zk_host_attn.c", "zk_host_math.h", "zk_host_ops.c",
    "llama/llama_host.c", "llama/llama_host.h", "llama/llama_model.c", NULL,
};

/* train-cuda's device layout: llama's (templates/cuda_trainer/llama/cuda_llama.c) with the ones
** vector the bias gemms use after the RoPE tables. */
#define A(k, t) {.n = k, .term = ZG_DA_##t}
#define F(k, t) {.n = k, .term = ZG_DA_##t, .f32 = true}
static const ZgDevArr dev_fixed[] = {   /* encoded, lnf, lnf rstd, logits, losses */
    A(1, BTC), A(1, BTC), F(1, BT), A(1, BTV), F(1, BT), {0},
};
static const ZgDevArr dev_layer[] = {   /* ln1, rstd, q, k, v, atty, lse, residual2,
                                        ** ln2, rstd, gate, up, h, residual3 */
    A(1, BTC), F(1, BT), A(1, BTC), A(1, BTKV), A(1, BTKV), A(1, BTC), F(1, LSE), A(1, BTC),
    A(1, BTC), F(1, BT), A(1, BTF), A(1, BTF), A(1, BTF), A(1, BTC), {0},
};
static const ZgDevArr dev_scratch[] = { /* dresidual, dln, dq, dk, dv, datty, D, dgate, dup,
                                        ** dh, RoPE cos, sin, ones, tokens, targets, positions,
                                        ** colsum, token buckets */
    A(1, BTC), A(1, BTC), A(1, BTC), A(1, BTKV), A(1, BTKV), A(1, BTC), F(1, LSE), A(1, BTF), A(1, BTF),
    A(1, BTF), F(1, ROPE), F(1, ROPE), A(1, BT), F(1, BT), F(1, BT), F(1, BT), F(1, COLSUM), F(1, TOKBKT), {0},
};

/* --spec-from-hf: Qwen2Config's keys (its num_key_value_heads defaults to 32, not to the heads). */
static const ZgHfSpecKey hf_keys[] = {
    {.hf = "vocab_size", .spec = "vocab_size", .type = 'i'},
    {.hf = "max_position_embeddings", .spec = "context", .type = 'i'},
    {.hf = "hidden_size", .spec = "d_model", .type = 'i'},
    {.hf = "num_hidden_layers", .spec = "n_layers", .type = 'i'},
    {.hf = "num_attention_heads", .spec = "n_heads", .type = 'i'},
    {.hf = "num_key_value_heads", .spec = "n_kv_heads", .type = 'i', .def = "32"},
    {.hf = "intermediate_size", .spec = "d_ff", .type = 'i'},
    {.hf = "rms_norm_eps", .spec = "norm_eps", .type = 'n', .def = "1.0e-6"},
    {.hf = "rope_theta", .spec = "rope_theta", .type = 'n', .def = "10000.0"},
    {.hf = "tie_word_embeddings", .spec = "tie_embeddings", .type = 'b', .def = "false"},
};
static const ZgHfRefusal hf_refusals[] = {
    {.key = "use_sliding_window", .want = "false", .why = "zgen's qwen2 attends over the whole causal prefix "
     "(no sliding window)"},
    {.key = "rope_scaling", .want = "null", .why = "zgen's qwen2 has plain RoPE (rope_scaling applies to arch "
     "llama)"},
    {.key = "hidden_act", .want = "\"silu\"", .why = "SwiGLU"},
};

/* The config.json of an export and what an --init-from must agree with (Qwen2Config's defaults as
** `absent`). */
#define WC .write = true, .check = true
#define LIT(v) .value = ZG_HF_LIT, .lit = v
#define ABSENT(v) .absent = ZG_HF_LIT, .absent_lit = v
static const ZgHfRow hf_rows[] = {
    {.key = "architectures", .value = ZG_HF_CLASS, .absent = ZG_HF_ANY, .write = true},
    {.key = "model_type", LIT("\"qwen2\""), .absent = ZG_HF_NONE, WC},
    {.key = "vocab_size", .value = ZG_HF_VOCAB, ABSENT("151936"), WC},
    {.key = "max_position_embeddings", .value = ZG_HF_CONTEXT, ABSENT("32768"), WC},
    {.key = "hidden_size", .value = ZG_HF_D_MODEL, ABSENT("4096"), WC},
    {.key = "intermediate_size", .value = ZG_HF_D_FF, ABSENT("22016"), WC},
    {.key = "num_hidden_layers", .value = ZG_HF_N_LAYERS, ABSENT("32"), WC},
    {.key = "num_attention_heads", .value = ZG_HF_N_HEADS, ABSENT("32"), WC},
    {.key = "num_key_value_heads", .value = ZG_HF_N_KV_HEADS, ABSENT("32"), WC},
    {.key = "hidden_act", LIT("\"silu\""), ABSENT("\"silu\""), WC},
    {.key = "rms_norm_eps", .value = ZG_HF_NORM_EPS, ABSENT("1e-06"), WC},
    {.key = "rope_theta", .value = ZG_HF_ROPE_THETA, ABSENT("10000.0"), WC},
    {.key = "rope_scaling", LIT("null"), ABSENT("null"), .check = true},
    {.key = "use_sliding_window", LIT("false"), ABSENT("false"), WC},
    {.key = "tie_word_embeddings", .value = ZG_HF_TIE, ABSENT("false"), WC},
};
/* An old rotary inv_freq buffer (and, tied, an lm_head saved anyway: hf_ignore_head_if_tied). */
static const char *const hf_ignore[] = {".self_attn.rotary_emb.inv_freq", NULL};

const ZgArch zg_arch_qwen2 = {
    .name = "qwen2",
    .hf_model_type = "qwen2",
    .hf_class = "Qwen2ForCausalLM",
    .linear_layout = "[out, in]",
    .rope = true,
    .qkv_bias = true,
    .gated_mlp = true,
    .modules = modules,
    .n_modules = ZG_ARCH_N(modules),
    .host_files = host_files,
    .cuda_adapter = "llama/cuda_llama.c",
    .dev_fixed = dev_fixed,
    .dev_layer = dev_layer,
    .dev_scratch = dev_scratch,
    /* llama_host.h's layout: the biases add in place into q, k, v */
    .acts_fixed = {.btc = 2, .bt = 2, .btv = 1},            /* encoded; lnf, rstd, logits, losses */
    .acts_layer = {.btc = 6, .bt = 2, .btkv = 2, .att = 1, .btf = 3},
    .scratch = {.btc = 4, .btkv = 2, .att = 1, .btf = 3, .rope = 1},
    .hf_keys = hf_keys,
    .n_hf_keys = ZG_ARCH_N(hf_keys),
    .hf_refusals = hf_refusals,
    .n_hf_refusals = ZG_ARCH_N(hf_refusals),
    .hf_rows = hf_rows,
    .n_hf_rows = ZG_ARCH_N(hf_rows),
    .hf_ignore = hf_ignore,
    .hf_ignore_head_if_tied = true,
};
