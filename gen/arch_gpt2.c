/*
** arch_gpt2.c — GPT-2 as Hugging Face's GPT2LMHeadModel, all of it: the tensor table (transformer.*
** prefix dropped, as in its safetensors; Conv1D weights [in, out]), the trainer's files, the host
** and device activation layouts, and the Hugging Face config.json keys, refusals and rows.
** LayerNorm with biases, learned positions, a fused q|k|v with bias, tanh-GELU MLP, tied head.
*/
#include "zg_arch.h"

#define T(n, a, b, i) {.name = n, .d0 = ZG_DIM_##a, .d1 = ZG_DIM_##b, .init = ZG_INIT_##i}
#define T_RES(n, a, b) {.name = n, .d0 = ZG_DIM_##a, .d1 = ZG_DIM_##b, .init = ZG_INIT_NORMAL, .residual_proj = true}

static const ZgArchTensor embed[] = {
    T("wte.weight", VOCAB, MODEL, NORMAL),
    T("wpe.weight", CONTEXT, MODEL, NORMAL),
};
static const ZgArchTensor block[] = {
    T("ln_1.weight", MODEL, NONE, ONES),
    T("ln_1.bias", MODEL, NONE, ZEROS),
    T("attn.c_attn.weight", MODEL, QKV, NORMAL),
    T("attn.c_attn.bias", QKV, NONE, ZEROS),
    T_RES("attn.c_proj.weight", MODEL, MODEL),
    T("attn.c_proj.bias", MODEL, NONE, ZEROS),
    T("ln_2.weight", MODEL, NONE, ONES),
    T("ln_2.bias", MODEL, NONE, ZEROS),
    T("mlp.c_fc.weight", MODEL, FF, NORMAL),
    T("mlp.c_fc.bias", FF, NONE, ZEROS),
    T_RES("mlp.c_proj.weight", FF, MODEL),
    T("mlp.c_proj.bias", MODEL, NONE, ZEROS),
};
static const ZgArchTensor final[] = {
    T("ln_f.weight", MODEL, NONE, ONES),
    T("ln_f.bias", MODEL, NONE, ZEROS),
};
static const ZgArchModule modules[] = {
    {.kind = ZG_MOD_EMBED, .name = "embed", .tensors = embed, .n_tensors = ZG_ARCH_N(embed)},
    {.kind = ZG_MOD_BLOCK, .name = "h.%d", .tensors = block, .n_tensors = ZG_ARCH_N(block)},
    {.kind = ZG_MOD_FINAL_NORM, .name = "ln_f", .tensors = final, .n_tensors = ZG_ARCH_N(final)},
    {.kind = ZG_MOD_HEAD, .name = "lm_head"},      /* tied: owns nothing, reads wte */
};

/* templates/host/, emitted flat: the host kernels (zk_host.h) and the model adapter. */
static const char *const host_files[] = {
    "zk_host.c", "zk_host.h", "zk_host_attn.c", "zk_host_math.h", "zk_host_ops.c", "gpt2/gpt2_model.c", NULL,
};

/* train-cuda's device layout, array by array as templates/cuda_trainer/gpt2/cuda_gpt2.c carves it
** (the activation dtype unless f32). */
#define A(k, t) {.n = k, .term = ZG_DA_##t}
#define F(k, t) {.n = k, .term = ZG_DA_##t, .f32 = true}
static const ZgDevArr dev_fixed[] = {   /* encoded, lnf, lnf mean/rstd, logits, losses */
    A(1, BTC), A(1, BTC), F(1, BT), F(1, BT), A(1, BTV), F(1, BT), {0},
};
static const ZgDevArr dev_layer[] = {   /* ln1, mean, rstd, qkv, atty, lse, residual2,
                                        ** ln2, mean, rstd, fch, fch_gelu, residual3 */
    A(1, BTC), F(1, BT), F(1, BT), A(3, BTC), A(1, BTC), F(1, LSE), A(1, BTC),
    A(1, BTC), F(1, BT), F(1, BT), A(1, BTF), A(1, BTF), A(1, BTC), {0},
};
static const ZgDevArr dev_scratch[] = { /* dresidual, dln, dqkv, datty, D, dfch, dfch_gelu,
                                        ** ones, position buckets, tokens, targets,
                                        ** positions, colsum, token buckets */
    A(1, BTC), A(1, BTC), A(3, BTC), A(1, BTC), F(1, LSE), A(1, BTF), A(1, BTF),
    A(1, BT), F(1, TOKBKT), F(1, BT), F(1, BT), F(1, BT), F(1, COLSUM), F(1, TOKBKT), {0},
};

/* --spec-from-hf: GPT2Config's keys. */
static const ZgHfSpecKey hf_keys[] = {
    {.hf = "vocab_size", .spec = "vocab_size", .type = 'i'},
    {.hf = "n_positions", .alt = "n_ctx", .spec = "context", .type = 'i'},
    {.hf = "n_embd", .spec = "d_model", .type = 'i'},
    {.hf = "n_layer", .spec = "n_layers", .type = 'i'},
    {.hf = "n_head", .spec = "n_heads", .type = 'i'},
    {.hf = "n_inner", .spec = "d_ff", .type = 'i', .def = ""},
    {.hf = "layer_norm_epsilon", .spec = "norm_eps", .type = 'n', .def = "1.0e-5"},
    {.hf = "tie_word_embeddings", .spec = "tie_embeddings", .type = 'b', .def = "true"},
};
static const ZgHfRefusal hf_refusals[] = {
    {.key = "activation_function", .want = "\"gelu_new\"", .why = "GPT-2's tanh GELU"},
};

/* The config.json of an export and what an --init-from must agree with (GPT2Config's defaults as
** `absent`). */
#define WC .write = true, .check = true
static const ZgHfRow hf_rows[] = {
    {.key = "architectures", .value = ZG_HF_CLASS, .absent = ZG_HF_ANY, .write = true},
    {.key = "model_type", .value = ZG_HF_LIT, .lit = "\"gpt2\"", .absent = ZG_HF_NONE, WC},
    {.key = "vocab_size", .value = ZG_HF_VOCAB, .absent = ZG_HF_LIT, .absent_lit = "50257", WC},
    {.key = "n_positions", .alt = "n_ctx", .value = ZG_HF_CONTEXT, .absent = ZG_HF_LIT, .absent_lit = "1024", WC},
    {.key = "n_ctx", .value = ZG_HF_CONTEXT, .absent = ZG_HF_ANY, .write = true},
    {.key = "n_embd", .value = ZG_HF_D_MODEL, .absent = ZG_HF_LIT, .absent_lit = "768", WC},
    {.key = "n_layer", .value = ZG_HF_N_LAYERS, .absent = ZG_HF_LIT, .absent_lit = "12", WC},
    {.key = "n_head", .value = ZG_HF_N_HEADS, .absent = ZG_HF_LIT, .absent_lit = "12", WC},
    {.key = "n_inner", .value = ZG_HF_D_FF, .absent = ZG_HF_4D_MODEL, WC},
    {.key = "activation_function", .value = ZG_HF_LIT, .lit = "\"gelu_new\"", .absent = ZG_HF_LIT,
     .absent_lit = "\"gelu_new\"", WC},
    {.key = "layer_norm_epsilon", .value = ZG_HF_NORM_EPS, .absent = ZG_HF_LIT, .absent_lit = "1e-05", WC},
    {.key = "tie_word_embeddings", .value = ZG_HF_TIE, .absent = ZG_HF_LIT, .absent_lit = "true", WC},
};
/* GPT-2's causal-mask buffers, and a tied lm_head saved anyway. */
static const char *const hf_ignore[] = {".attn.bias", ".attn.masked_bias", "lm_head.weight", NULL};

const ZgArch zg_arch_gpt2 = {
    .name = "gpt2",
    .hf_model_type = "gpt2",
    .hf_class = "GPT2LMHeadModel",
    .linear_layout = "[in, out]",
    .tie_required = true,
    .tie_default = true,
    .ckpt_legacy_config = true,
    .modules = modules,
    .n_modules = ZG_ARCH_N(modules),
    .host_files = host_files,
    .cuda_adapter = "gpt2/cuda_gpt2.c",
    .dev_fixed = dev_fixed,
    .dev_layer = dev_layer,
    .dev_scratch = dev_scratch,
    /* zk_host.h states them term by term ("Memory") */
    .acts_fixed = {.btc = 2, .bt = 3, .btv = 1},            /* encoded; lnf, mean, rstd, logits, losses */
    .acts_layer = {.btc = 8, .bt = 4, .att = 1, .btf = 2},
    .scratch = {.btc = 6, .att = 1, .btf = 2},
    .hf_keys = hf_keys,
    .n_hf_keys = ZG_ARCH_N(hf_keys),
    .hf_refusals = hf_refusals,
    .n_hf_refusals = ZG_ARCH_N(hf_refusals),
    .hf_rows = hf_rows,
    .n_hf_rows = ZG_ARCH_N(hf_rows),
    .hf_ignore = hf_ignore,
};
