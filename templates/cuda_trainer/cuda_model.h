/*
** cuda_model.h — what the arch model adapters (gpt2/cuda_gpt2.c, llama/cuda_llama.c; zgen emits the
** one its arch table names, ZgArch.cuda_adapter) share, defined once in cuda_model.c: the carving,
** launches by name on the compute stream with their race-checker footprints, the row-major gemm in
** the activation dtype, the batch upload, the head (logits, fused cross-entropy, its backward), the
** token table's gradient and the CUDA-graph cache of block calls. An adapter adds its arch's
** layout and kernels and defines cuda_train.h's cz_* module calls.
*/
#ifndef CUDA_MODEL_H
#define CUDA_MODEL_H
#include <stddef.h>
#include "cuda_train.h"
#include "../kernels/zk_shapes.h"

#define N_ROWS (ZG_MICRO_BATCH * ZG_SEQ_LEN)
#define CEIL(a, b) (((a) + (b) - 1) / (b))
/* Activation checkpointing (the plan's ZG_ACT_CKPT): one block area, which the forward and each
** recompute fill for the block at hand, and every block's output kept apart (CzDevActs.kept), which
** is the next block's input; without it, one area per block and the output is the area's own. */
#define N_AREAS (ZG_ACT_CKPT ? 1 : ZG_N_LAYERS)
#if ZK_IO == 1
#define ACT_DT ZR_DT_BF16
#define AB 2                                  /* bytes of an activation */
#elif ZK_IO == 2
#define ACT_DT ZR_DT_FP16
#define AB 2
#else
#define ACT_DT ZR_DT_FP32
#define AB 4
#endif
#define BTC_B ((size_t)N_ROWS * ZG_D_MODEL * AB)

/* The next array of n elements of es bytes at *cur, which moves on by a multiple of 256 (every
** array 256-byte aligned: gen/cuda_dec.c sizes the regions the same way). */
void *cz_take(char **cur, size_t n, size_t es);
/* cz_carve_begin: the device addresses of the plan's "acts" and "scratch" regions, where the adapter
** carves its arrays (CzDevActs' and its own); it carves the first ones of "acts", the embedding's
** output and the N_AREAS block areas of layer_bytes each, returns the areas and leaves *cur after
** them. cz_carve_end: carves the scratch's common tail
** (tokens, targets, positions, colsum, token buckets) at scratch_cur, records both sizes in CZ.a and
** dies when they differ from the plan's regions (ZG_ACTS_BYTES, ZG_SCRATCH_BYTES: a plan from another
** zgen). An arch with a learned position table carves CZ.a.pos_buckets before it (the batch upload
** then fills it). */
void *cz_carve_begin(char **acts, char **scratch, char **cur, size_t layer_bytes);
void cz_carve_end(char *acts_start, char *acts_end, char *scratch_start, char *scratch_cur);
/* The kept block outputs of activation checkpointing (none without it), carved at *cur. */
void cz_carve_kept(char **cur);

/* Launches on the compute stream; footprints (w 0 read, 1 write) for the stand-in's race checker. */
void cz_launch_sh(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, unsigned shmem,
                  void **args);
void cz_launch(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args);
void cz_fp(const void *p, size_t bytes, int w);
/* C = op(A) op(B) + beta C, row-major; A, B activations or parameters (the activation dtype), C an
** activation, or fp32 when c32 (parameter gradients). */
void cz_gemm(int ta, int tb, int M, int N, int K, const void *A, int lda, const void *B, int ldb, float beta,
             void *C, int c32, int ldc);

/* dtoken += the rows of dresidual grouped by token (encoder.cu's zd_encoder_backward_wte). */
void cz_token_table_backward(float *dtok);

/* A block's forward (bwd 0), backward (1) or recompute (2) through the graph cache: run(bwd, l, p, g)
** issues its launches; variant says what else they depend on (the epilogues in use). */
typedef void (*CzBlockFn)(int bwd, int l, const void *const *p, float *const *g);
void cz_block_run(int bwd, int l, const void *const *p, float *const *g, unsigned variant, CzBlockFn run);
#endif
