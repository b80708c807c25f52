/*
** zk_host.h — the host backend's numeric core: GPT-2's modules forward and backward on the CPU, and
** the pieces every arch's host kernels share (the one thread pool, zk_sgemm, the linear layer, the
** softmax cross-entropy); llama_host.h builds on them.
**
** The emitted trainer calls these MODULE BY MODULE (embedding, block l, final norm, head), because
** under ZeRO-3 only one module's parameters are gathered at a time: every call takes that module's
** parameter and gradient pointers explicitly and touches nothing else of the model.
**
** Conventions
**   - fp32 everywhere; row-major; linear weights in Hugging Face's Conv1D layout [in, out], so a
**     layer is y = x @ W + b with x [B*T, in]. Matmuls go to cblas_sgemm with that layout as is.
**   - Parameter gradients ACCUMULATE (+=) so micro-steps of gradient accumulation add up; the caller
**     zeroes them once per optimizer step. Activation gradients in the scratch are overwritten, except
**     dresidual, which carries dL/d(residual stream) from module to module during backward.
**   - The loss scale is explicit: zk_head_backward takes dloss = d(total loss)/d(one token's loss),
**     i.e. 1/(target tokens of the GLOBAL batch), times the fp16 loss scale when one is used.
**   - Threads: ONE pool, OpenMP's. OpenBLAS (the pthread build) is kept at one thread and every
**     matmul is cut into parts run by the OpenMP threads, each a single-threaded cblas_sgemm (zk_sgemm);
**     attention calls sgemm per (sequence, head) inside its parallel loop. So OpenBLAS's own workers,
**     which spin after each call, never compete with OpenMP's for the cores (docs/KERNELS.md has
**     the measurements). zk_threads_init sets this up; the kernels also enforce it per call.
**   - Results are deterministic for a given thread count (partitions depend only on the shapes and
**     the thread count, never on which thread runs a part). Attention
**     and the reductions that cross rows (bias and LayerNorm weight gradients, embedding gradients,
**     split by column) do not depend on the thread count at all; matmuls do, by rounding only,
**     because OpenBLAS uses other kernels for small parts.
**
** Memory (all fp32, sizes in floats; the generator's memory plan uses exactly this layout):
**   acts    = encoded BTC
**             + L x [ ln1 BTC, ln1_mean BT, ln1_rstd BT, qkv 3BTC, atty BTC, att B*NH*T*T, residual2 BTC,
**                     ln2 BTC, ln2_mean BT, ln2_rstd BT, fch BTF, fch_gelu BTF, residual3 BTC ]
**             + lnf BTC, lnf_mean BT, lnf_rstd BT, logits BTV, losses BT
**   scratch = dresidual BTC, dln BTC, dqkv 3BTC, datty BTC, datt B*NH*T*T, dfch BTF, dfch_gelu BTF
** att holds the causal softmax probabilities: j <= i meaningful, 0 above the diagonal inside each
** 32-row block, the rest never written nor read (datt likewise). logits holds, after
** zk_head_forward, the probabilities and, after zk_head_backward, dL/dlogits.
*/
#ifndef ZK_HOST_H
#define ZK_HOST_H

#include <stddef.h>

typedef struct ZkDims {
    int B;                      /* micro-batch sequences */
    int T;                      /* sequence length */
    int C;                      /* d_model */
    int NH;                     /* heads; C % NH == 0 */
    int F;                      /* d_ff */
    int V;                      /* vocabulary */
    int L;                      /* blocks */
    float eps;                  /* LayerNorm epsilon */
    const int *pos;             /* (B,T) each token's position in its document (docs/DATA.md): the
                                ** position table's row, and attention over keys t-pos[t] .. t;
                                ** NULL: 0 .. T-1 in every row */
} ZkDims;

/* One block's parameters, Hugging Face names h.{l}.<...> in brackets, shapes [in, out]. */
typedef struct ZkBlockParams {
    const float *ln1_w, *ln1_b;         /* ln_1.weight/bias              (C) */
    const float *qkv_w, *qkv_b;         /* attn.c_attn.weight (C, 3C), bias (3C) */
    const float *attproj_w, *attproj_b; /* attn.c_proj.weight (C, C),  bias (C) */
    const float *ln2_w, *ln2_b;         /* ln_2.weight/bias              (C) */
    const float *fc_w, *fc_b;           /* mlp.c_fc.weight   (C, F),   bias (F) */
    const float *fcproj_w, *fcproj_b;   /* mlp.c_proj.weight (F, C),   bias (C) */
} ZkBlockParams;

/* The same fields for gradients; every one is accumulated with +=. */
typedef struct ZkBlockGrads {
    float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *attproj_w, *attproj_b;
    float *ln2_w, *ln2_b, *fc_w, *fc_b, *fcproj_w, *fcproj_b;
} ZkBlockGrads;

/* Views of one block's activations inside the acts buffer. */
typedef struct ZkLayerActs {
    float *ln1, *ln1_mean, *ln1_rstd;   /* (B,T,C), (B,T), (B,T) */
    float *qkv;                         /* (B,T,3C): q | k | v, head h at columns h*C/NH */
    float *atty;                        /* (B,T,C) attention output before c_proj */
    float *att;                         /* (B,NH,T,T) softmax probabilities, lower triangle */
    float *residual2;                   /* (B,T,C) x + attention branch */
    float *ln2, *ln2_mean, *ln2_rstd;   /* (B,T,C), (B,T), (B,T) */
    float *fch, *fch_gelu;              /* (B,T,F) before and after GELU */
    float *residual3;                   /* (B,T,C) block output */
} ZkLayerActs;

/* The carved acts and scratch buffers (pointers into the caller's two allocations). */
typedef struct ZkActs {
    float *encoded;                     /* (B,T,C) wte[tok] + wpe[t] */
    float *layers;                      /* start of block 0's activations */
    size_t layer_floats;                /* floats per block */
    float *lnf, *lnf_mean, *lnf_rstd;   /* (B,T,C), (B,T), (B,T) */
    float *logits;                      /* (B,T,V) logits -> probabilities -> dlogits */
    float *losses;                      /* (B,T) per-token loss (0 for ignored targets) */
    /* scratch */
    float *dresidual;                   /* (B,T,C) dL/d(residual stream), carried between modules */
    float *dln;                         /* (B,T,C) dL/d(LayerNorm output) */
    float *dqkv;                        /* (B,T,3C) */
    float *datty;                       /* (B,T,C) */
    float *datt;                        /* (B,NH,T,T) dL/d(scores), lower triangle */
    float *dfch, *dfch_gelu;            /* (B,T,F) */
} ZkActs;

/* ---------------------------------------------------------------------- memory */
size_t zk_layer_floats(const ZkDims *d);    /* one block's activations */
size_t zk_acts_floats(const ZkDims *d);     /* the whole acts buffer */
size_t zk_scratch_floats(const ZkDims *d);  /* the whole scratch buffer */
/* Fills *out with views into acts (zk_acts_floats) and scratch (zk_scratch_floats). */
void zk_acts_carve(const ZkDims *d, float *acts, float *scratch, ZkActs *out);
/* Views of block l's activations. */
ZkLayerActs zk_layer_acts(const ZkDims *d, const ZkActs *a, int l);

/* ---------------------------------------------------------------------- threads */
/* Sets the OpenMP pool to n threads (n <= 0: leaves it) and OpenBLAS to 1 thread. Returns 0
** (nothing left to warn about: with one pool, OMP_WAIT_POLICY no longer decides BLAS speed). */
int zk_threads_init(int n);
/* OpenBLAS to one thread; returns the previous count for zk_blas_restore. */
int zk_blas_solo(void);
void zk_blas_restore(int n);
/* C (M,N) = alpha op(A) op(B) + beta C, row-major, op = transpose when ta/tb; cut by rows of C
** (by columns when N > M) into about 2 parts per OpenMP thread (a multiple of the thread count
** while parts keep >= 128 rows), handed out dynamically, each a single-threaded cblas_sgemm.
** Call it outside parallel regions. */
void zk_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* ---------------------------------------------------------------------- forward, in this order */
/* encoded[b,t] = wte[tokens[b,t]] + wpe[pos[b,t]]; tokens (B,T) in [0, V); wte (V,C), wpe (>=T, C). */
void zk_embed_forward(const ZkDims *d, const int *tokens, const float *wte, const float *wpe,
                      const ZkActs *a);
/* Block l: reads encoded (l == 0) or block l-1's residual3, writes block l's activations. */
void zk_block_forward(const ZkDims *d, int l, const ZkBlockParams *p, const ZkActs *a);
/* zk_block_forward less the MLP projection: what backward reads (activation checkpointing). */
void zk_block_recompute(const ZkDims *d, int l, const ZkBlockParams *p, const ZkActs *a);
/* lnf = LayerNorm(residual3 of block L-1 (encoded if L == 0)). */
void zk_final_norm_forward(const ZkDims *d, const float *lnf_w, const float *lnf_b, const ZkActs *a);
/* Softmax + cross-entropy of BT rows of V logits in place (each row becomes its probabilities,
** losses[r] its token's loss, 0 where targets[r] < 0); returns the mean over counted targets. */
float zk_softmax_xent(int BT, int V, float *logits, const int *targets, float *losses, int *count);
/* logits = lnf @ wte^T (tied head), softmax cross-entropy against targets (B,T); a target < 0 is
** ignored. Leaves the probabilities in a->logits and per-token losses in a->losses. Returns the
** mean loss over the micro-batch's counted targets (0 if none); *count (may be NULL) gets that count. */
float zk_head_forward(const ZkDims *d, const float *wte, const int *targets, const ZkActs *a,
                      int *count);

/* ---------------------------------------------------------------------- backward, in this order */
/* dlogits = (probs - onehot) * dloss in place; dln = dlogits @ wte; dwte += dlogits^T @ lnf.
** dloss = 1/(target tokens of the global batch) [* loss scale]. */
void zk_head_backward(const ZkDims *d, const float *wte, float *dwte, const int *targets,
                      const ZkActs *a, float dloss);
/* dresidual = LayerNorm backward of dln (overwrites: the start of the residual stream's gradient). */
void zk_final_norm_backward(const ZkDims *d, const float *lnf_w, float *dlnf_w, float *dlnf_b,
                            const ZkActs *a);
/* Block l: dresidual holds dL/d(block output) on entry and dL/d(block input) on return. */
void zk_block_backward(const ZkDims *d, int l, const ZkBlockParams *p, const ZkBlockGrads *g,
                       const ZkActs *a);
/* dwte[tokens[b,t]] += dresidual[b,t]; dwpe[pos[b,t]] += dresidual[b,t], rows in (b,t) order. */
void zk_embed_backward(const ZkDims *d, const int *tokens, float *dwte, float *dwpe,
                       const ZkActs *a);

/* ---------------------------------------------------------------------- building blocks */
/* Exposed for the unit tests and for other architectures; n rows of width c. */
void zk_layernorm_forward(int n, int c, float eps, const float *x, const float *w, const float *b,
                          float *y, float *mean, float *rstd);
/* dx += LayerNorm backward (dx accumulates: it is the residual stream); dw, db += (may be NULL). */
void zk_layernorm_backward(int n, int c, const float *x, const float *w, const float *mean,
                           const float *rstd, const float *dy, float *dx, float *dw, float *db);
void zk_gelu_forward(size_t n, const float *x, float *y);
/* dx = dy * gelu'(x) (overwrites dx). */
void zk_gelu_backward(size_t n, const float *x, const float *dy, float *dx);
/* y (n,out) = res + x (n,in) @ w (in,out) + b; res (n,out) and b may be NULL, res may be y itself
** (accumulate). When y_gelu is not NULL, also y_gelu = gelu(y) (fused, per part of the matmul). */
void zk_linear_forward(int n, int in, int out, const float *x, const float *w, const float *b,
                       const float *res, float *y, float *y_gelu);
/* dx (n,in) = dy @ w^T (overwrite; dx may be NULL); dw (in,out) += x^T @ dy; db (out) += colsum dy
** (dw, db may be NULL). When gelu_x (n,in) is not NULL, also dgelu = dx * gelu'(gelu_x): the
** gradient through a GELU whose output was this layer's input (fused, per part). The parts of
** dx, dw and db share one parallel loop (one barrier). */
void zk_linear_backward(int n, int in, int out, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, const float *gelu_x, float *dgelu);
/* Causal self-attention of one block: qkv (B,T,3C) -> y (B,T,C), probabilities into att. The query
** at t sees keys t - pos[t] .. t (its document; pos NULL: 0 .. t); the others get probability 0. */
void zk_attention_forward(int B, int T, int C, int NH, const int *pos, const float *qkv, float *att,
                          float *y);
/* dqkv = gradient of qkv (overwrite); datt: (B,NH,T,T) scratch for dL/d(scores). */
void zk_attention_backward(int B, int T, int C, int NH, const int *pos, const float *qkv,
                           const float *att, const float *dy, float *datt, float *dqkv);

#endif
