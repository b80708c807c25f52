/*
** llama_host.h — LLaMA (Hugging Face LlamaForCausalLM; Qwen2ForCausalLM, which adds q, k, v biases)
** forward and backward on the CPU: RMSNorm, rotary embeddings in the rotate-half convention (with
** LLaMA 3's optional frequency scaling), grouped-query causal attention, SwiGLU MLP, untied or tied
** lm_head.
**
** The same contract as zk_host.h, whose threading helpers (zk_sgemm, zk_blas_solo) and zk_exp it
** uses: called MODULE BY MODULE (embedding, block l, final norm, head) with explicit parameter and
** gradient pointers, fp32, row-major, ONE thread pool (OpenMP's; OpenBLAS at one thread), parameter
** gradients ACCUMULATE (+=), dresidual carries dL/d(residual stream) between modules, dloss explicit.
** What differs from gpt2: linear weights are nn.Linear's [out, in] (y = x W^T, no biases but the
** optional q, k, v ones of Qwen2), and there are no learned positions (RoPE is applied to q and k
** inside the block, after their biases).
**
** Memory (fp32 floats; KV = n_kv_heads * head size, S = B*NH*T*T):
**   acts    = encoded BTC
**             + L x [ ln1 BTC, ln1_rstd BT, q BTC, k BT*KV, v BT*KV, att S, atty BTC, residual2 BTC,
**                     ln2 BTC, ln2_rstd BT, gate BTF, up BTF, h BTF, residual3 BTC ]
**             + lnf BTC, lnf_rstd BT, logits BTV, losses BT
**   scratch = dresidual BTC, dln BTC, dq BTC, dk BT*KV, dv BT*KV, datty BTC, datt S,
**             dgate BTF, dup BTF, dh BTF
** q and k are kept AFTER the rotation (what attention used); backward rotates their gradients back.
** att holds the causal softmax probabilities (0 above the diagonal); logits the probabilities after
** zl_head_forward and dL/dlogits after zl_head_backward; h = silu(gate) * up.
*/
#ifndef LLAMA_HOST_H
#define LLAMA_HOST_H

#include <stddef.h>

typedef struct ZlDims {
    int B, T;                   /* micro-batch sequences, sequence length */
    int C, NH, NKV;             /* d_model, query heads, key/value heads (NH % NKV == 0) */
    int F, V, L;                /* SwiGLU width, vocabulary, blocks */
    float eps;                  /* RMSNorm epsilon */
    double rope_theta;          /* RoPE base */
    int rope_llama3;            /* LLaMA 3 frequency scaling with the four values below */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_context;
    const int *pos;             /* (B,T) each token's position in its document (docs/DATA.md): RoPE's
                                ** angle, and attention over keys t-pos[t] .. t; NULL: 0 .. T-1 */
} ZlDims;

/* One block's parameters, HF names model.layers.{l}.<...>, shapes [out, in]. */
typedef struct ZlBlockParams {
    const float *ln1_w;                 /* input_layernorm.weight (C) */
    const float *q_w, *k_w, *v_w;       /* self_attn.q_proj (C, C), k_proj, v_proj (KV, C) */
    const float *o_w;                   /* self_attn.o_proj (C, C) */
    const float *ln2_w;                 /* post_attention_layernorm.weight (C) */
    const float *gate_w, *up_w;         /* mlp.gate_proj, up_proj (F, C) */
    const float *down_w;                /* mlp.down_proj (C, F) */
    const float *q_b, *k_b, *v_b;       /* self_attn.q_proj.bias (C), k_proj, v_proj (KV); NULL: none */
} ZlBlockParams;

typedef struct ZlBlockGrads {
    float *ln1_w, *q_w, *k_w, *v_w, *o_w, *ln2_w, *gate_w, *up_w, *down_w;
    float *q_b, *k_b, *v_b;             /* NULL exactly when the parameters' are */
} ZlBlockGrads;

typedef struct ZlLayerActs {
    float *ln1, *ln1_rstd, *q, *k, *v, *att, *atty, *residual2;
    float *ln2, *ln2_rstd, *gate, *up, *h, *residual3;
} ZlLayerActs;

typedef struct ZlActs {
    float *encoded, *layers;
    size_t layer_floats;
    float *lnf, *lnf_rstd, *logits, *losses;
    float *dresidual, *dln, *dq, *dk, *dv, *datty, *datt, *dgate, *dup, *dh;   /* scratch */
    float *rope_cos, *rope_sin; /* (T, hs/2) tables, filled by zl_acts_carve */
} ZlActs;

/* ---------------------------------------------------------------------- memory */
size_t zl_layer_floats(const ZlDims *d);
size_t zl_acts_floats(const ZlDims *d);
/* includes the RoPE tables (T * head size floats) */
size_t zl_scratch_floats(const ZlDims *d);
/* Views into acts and scratch; computes the RoPE cos/sin tables (positions 0..T-1). */
void zl_acts_carve(const ZlDims *d, float *acts, float *scratch, ZlActs *out);
ZlLayerActs zl_layer_acts(const ZlDims *d, const ZlActs *a, int l);
/* RoPE inverse frequencies (hs/2 of them), with LLaMA 3 scaling when d->rope_llama3 (as Hugging
** Face's _compute_llama3_parameters). */
void zl_rope_inv_freq(const ZlDims *d, double *inv_freq);

/* ---------------------------------------------------------------------- forward, in this order */
/* encoded[b,t] = embed[tokens[b,t]]; embed (V, C). */
void zl_embed_forward(const ZlDims *d, const int *tokens, const float *embed, const ZlActs *a);
void zl_block_forward(const ZlDims *d, int l, const ZlBlockParams *p, const ZlActs *a);
/* zl_block_forward less the down projection: what backward reads (activation checkpointing). */
void zl_block_recompute(const ZlDims *d, int l, const ZlBlockParams *p, const ZlActs *a);
void zl_final_norm_forward(const ZlDims *d, const float *norm_w, const ZlActs *a);
/* logits = lnf @ w^T, w (V, C): lm_head.weight, or embed_tokens.weight when tied. Mean loss over
** targets >= 0 (0 if none); *count (may be NULL) gets how many. */
float zl_head_forward(const ZlDims *d, const float *w, const int *targets, const ZlActs *a, int *count);

/* ---------------------------------------------------------------------- backward, in this order */
void zl_head_backward(const ZlDims *d, const float *w, float *dw, const int *targets, const ZlActs *a,
                      float dloss);
/* dresidual = RMSNorm backward of dln (overwrites: the start of the residual stream's gradient). */
void zl_final_norm_backward(const ZlDims *d, const float *norm_w, float *dnorm_w, const ZlActs *a);
void zl_block_backward(const ZlDims *d, int l, const ZlBlockParams *p, const ZlBlockGrads *g,
                       const ZlActs *a);
/* dembed[tokens[b,t]] += dresidual[b,t]. */
void zl_embed_backward(const ZlDims *d, const int *tokens, float *dembed, const ZlActs *a);

/* ---------------------------------------------------------------------- building blocks */
/* y = x * rstd * w per row of c, rstd = 1/sqrt(mean(x^2) + eps). */
void zl_rmsnorm_forward(int n, int c, float eps, const float *x, const float *w, float *y, float *rstd);
/* dx += RMSNorm backward (dx is the residual stream); dw += (may be NULL). */
void zl_rmsnorm_backward(int n, int c, const float *x, const float *w, const float *rstd, const float *dy,
                         float *dx, float *dw);
/* x (B*T rows of nh heads of hs) rotated in place by position pos[b,t] (pos NULL: t); inverse = 1
** rotates back (the transpose: what backward applies to gradients). */
void zl_rope(int B, int T, int nh, int hs, const int *pos, const float *cos_t, const float *sin_t, float *x,
             int inverse);
/* Grouped-query causal attention: q (B,T,NH*hs), k, v (B,T,NKV*hs) -> y (B,T,NH*hs); att (B,NH,T,T).
** The query at t sees keys t - pos[t] .. t (pos NULL: 0 .. t); the others get probability 0. */
void zl_attention_forward(int B, int T, int NH, int NKV, int hs, const int *pos, const float *q,
                          const float *k, const float *v, float *att, float *y);
/* dq, dk, dv overwritten; datt (B,NH,T,T) scratch. */
void zl_attention_backward(int B, int T, int NH, int NKV, int hs, const int *pos, const float *q,
                           const float *k, const float *v, const float *att, const float *dy, float *datt,
                           float *dq, float *dk, float *dv);
/* h = silu(gate) * up; backward: dgate, dup from dh (overwrite). */
void zl_swiglu_forward(size_t n, const float *gate, const float *up, float *h);
void zl_swiglu_backward(size_t n, const float *gate, const float *up, const float *dh, float *dgate,
                        float *dup);

#endif
