/*
** train_model.h — the model adapter: everything the executor (train_exec.c) and the layout
** (train_layout.c) need of an architecture's host kernels, and nothing else. One implementation per
** arch (templates/host/gpt2/gpt2_model.c, templates/host/llama/llama_model.c); zgen emits the one the arch
** file names (gen/arch_<name>.c, ZgArch.host_files), so the executor never names an architecture.
**
** Module by module, as the plan's FORWARD / BACKWARD rows run them: every call takes the module's
** parameter pointers p and gradient pointers g, indexed from the module's first tensor in the IR's
** order (P + first_tensor; the tied head gets the token table as its only tensor), fp32. Parameter
** gradients accumulate (+=); the residual stream's gradient travels inside the adapter's scratch.
**
** Activations live in the plan's "acts" and "scratch" regions, carved once at start-up for a block
** area of `layers` blocks: every block (ZG_N_LAYERS), or one block for activation checkpointing,
** where the executor keeps each block's input itself and runs block l as block 0 of the area.
** For that the block and final-norm calls take `in`, the residual stream entering them: NULL means
** the carved area's own (the embedding output for block 0, else block l-1's output; the last
** block's output for the final norm). The same kernels run on the same input either way, so a
** recompute gives the forward's bits.
*/
#ifndef TRAIN_MODEL_H
#define TRAIN_MODEL_H
#include <stdint.h>

/* The kernels' thread pool: n threads (n <= 0: leave it). */
void tr_model_threads_init(int n);

/* ---------------------------------------------------------------------- activations */
/* Floats of "acts" for a block area of `layers` blocks, and of "scratch" (the plan's formula,
** gen/memplan.c, must give at least these). */
int64_t tr_model_acts_floats(int layers);
int64_t tr_model_scratch_floats(void);
/* Views into acts and scratch for a block area of `layers` blocks (and anything the kernels
** precompute there once, e.g. RoPE tables). */
void tr_model_carve(float *acts, float *scratch, int layers);
float *tr_model_stream0(void);          /* (B,T,C) the embedding's output: block 0's input */
float *tr_model_block_out(int l);       /* (B,T,C) block l's output in the carved area */

/* ---------------------------------------------------------------------- forward, in this order */
/* pos: each token's position in its document (T.pos, docs/DATA.md), which the blocks' attention
** (and RoPE) of this micro-step read too: the adapter keeps the pointer until the next call. */
void tr_model_embed_forward(const int *tokens, const int *pos, const float *const *p);
void tr_model_block_forward(int l, const float *in, const float *const *p);
/* Activation checkpointing's recompute: block l's forward less its last linear layer, whose only
** product is the block's output (already kept), which no backward reads. */
void tr_model_block_recompute(int l, const float *in, const float *const *p);
void tr_model_final_norm_forward(const float *in, const float *const *p);
/* Mean loss over the micro-batch's counted targets (target < 0 ignored); *count gets how many. */
float tr_model_head_forward(const int *targets, const float *const *p, int *count);

/* ---------------------------------------------------------------------- backward, in this order */
/* dloss = d(total loss)/d(one token's loss): 1/(target tokens of the global batch) [* loss scale]. */
void tr_model_head_backward(const int *targets, const float *const *p, float *const *g, float dloss);
void tr_model_final_norm_backward(const float *in, const float *const *p, float *const *g);
void tr_model_block_backward(int l, const float *in, const float *const *p, float *const *g);
void tr_model_embed_backward(const int *tokens, const int *pos, float *const *g);

#endif
