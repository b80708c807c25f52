/*
** cuda_model.c — the part of the model on the device that every arch shares (cuda_model.h): the
** carving of the plan's "acts" / "scratch" regions, launches by name with their footprints, the
** row-major gemm, the batch upload, the head and the token table's gradient, and the CUDA-graph
** cache of block calls. The arch's adapter (gpt2/cuda_gpt2.c, llama/cuda_llama.c) runs the rest.
** Precision is gen's decision (cuda/kernels/zk_shapes.h, gen/cuda_dec.c):
**   ZK_IO 0  fp32 activations, every matmul an fp32 sgemm (cuBLAS pedantic): the host's arithmetic;
**   ZK_IO 1  bf16 plans, ZK_IO 2 fp16 plans: activations in the plan's 16-bit dtype (the kernels'
**            zk_io), parameters read as the 16-bit working copy itself, every matmul zr_gpu_gemm_ex
**            on tensor cores (16-bit operands, fp32 compute, a 16-bit result rounded once, or an
**            fp32 result for parameter gradients, which accumulate in the fp32 module gradient
**            area); norm statistics, lse, D and the per-token losses stay fp32
**            (docs/CUDA_TRAINER.md, the precision table).
** CUDA graphs (docs/CUDA_TRAINER.md, CUDA graphs): a block's forward or backward is one graph launch
** on the compute stream once it has been seen twice with the same arguments (layer, parameter and
** gradient pointers, the adapter's variant: the epilogues in use): the first call runs uncaptured
** (cuBLASLt chooses its algorithms and allocates its workspace then), the second is captured and
** launched, later ones launch the cached graph. ZR_CUDA_GRAPHS=0 and sync-debug run every call
** uncaptured.
*/
#include <stdlib.h>
#include <string.h>

#include "cuda_model.h"
#include "../kernels/zk_colsum.h"

/* ---------------------------------------------------------------------- carving */
void *cz_take(char **cur, size_t n, size_t es)
{
    void *p = *cur;
    *cur += (n * es + 255) & ~(size_t)255;   /* 256-byte alignment for every array */
    return p;
}

void *cz_carve_begin(char **acts, char **scratch, char **cur, size_t layer_bytes)
{
    /* the plan's device regions, which gen sized for the adapter's carving (ZG_ACTS_BYTES,
    ** ZG_SCRATCH_BYTES; the arch files' dev_* lists) */
    *acts = cz_dev(tr_region_named("acts"));
    *scratch = cz_dev(tr_region_named("scratch"));
    *cur = *acts;
    CZ.a.encoded = cz_take(cur, BTC_B, 1);
    return cz_take(cur, N_AREAS * layer_bytes, 1);
}

void cz_carve_kept(char **cur)
{
    CzDevActs *a = &CZ.a;
    a->kept_stride = (BTC_B + 255) & ~(size_t)255;
    a->kept = ZG_ACT_CKPT ? cz_take(cur, ZG_N_LAYERS * a->kept_stride, 1) : NULL;
}

void cz_carve_end(char *acts_start, char *acts_end, char *scratch_start, char *scratch_cur)
{
    CzDevActs *a = &CZ.a;
    char *cur = scratch_cur;
    a->tokens = cz_take(&cur, N_ROWS, 4);
    a->targets = cz_take(&cur, N_ROWS, 4);
    a->pos = cz_take(&cur, N_ROWS, 4);
    a->colsum = cz_take(&cur, (size_t)ZK_COLSUM_FLOATS(N_ROWS, ZG_D_MODEL, ZG_D_FF), 4);
    a->tok_buckets = cz_take(&cur, ZK_TOKBUCKET_INTS(N_ROWS), 4);
    a->acts_bytes = (size_t)(acts_end - acts_start);
    a->scratch_bytes = (size_t)(cur - scratch_start);
    if (a->acts_bytes != (size_t)ZG_ACTS_BYTES || a->scratch_bytes != (size_t)ZG_SCRATCH_BYTES)
        tr_die("device activations carved %zu/%zu bytes, but the plan's acts/scratch regions are %lld/%lld "
               "(gen/cuda_dec.c): regenerate with a matching zgen", a->acts_bytes, a->scratch_bytes,
               (long long)ZG_ACTS_BYTES, (long long)ZG_SCRATCH_BYTES);
}

/* ---------------------------------------------------------------------- launches */
void cz_launch_sh(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, unsigned shmem,
                  void **args)
{
    const unsigned grid[3] = {gx, gy, gz}, blk[3] = {block, 1, 1};
    CZ_CHECK(zr_gpu_launch(CZ.compute, k, grid, blk, shmem, args));
}

void cz_launch(const char *k, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args)
{
    cz_launch_sh(k, gx, gy, gz, block, 0, args);
}

/* What the next launch reads (w 0) or writes (w 1), for the stand-in's race checker. Parameters
** are zk_io (AB bytes an element), gradients fp32. */
void cz_fp(const void *p, size_t bytes, int w)
{
    CZ_CHECK(zr_gpu_footprint(CZ.compute, p, bytes, w));
}

void cz_gemm(int ta, int tb, int M, int N, int K, const void *A, int lda, const void *B, int ldb, float beta,
             void *C, int c32, int ldc)
{
#if ZK_IO
    CZ_CHECK(zr_gpu_gemm_ex(CZ.compute, ta, tb, M, N, K, 1.0f, A, ACT_DT, lda, B, ACT_DT, ldb, beta, C,
                            c32 ? ZR_DT_FP32 : ACT_DT, ldc, ZR_GPU_COMPUTE_32F));
#else
    (void)c32;
    CZ_CHECK(zr_gpu_sgemm(CZ.compute, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc));
#endif
}

/* ---------------------------------------------------------------------- batch */
/* The attention kernels rely on each row's documents being runs that restart at 0 (kernels/zk_doc.cuh:
** document starts never decrease along a row), and the position tables on pos < seq_len: the data
** layer guarantees both (train.h T.pos), so a violation is this program's fault. */
static void check_pos(const int32_t *pos, int micro)
{
    for (int i = 0; i < N_ROWS; i++) {
        int t = i % ZG_SEQ_LEN, want = t ? pos[i - 1] + 1 : 0;
        if (pos[i] != want && (pos[i] != 0 || !t))
            tr_die("internal: micro-step %d, row %d, token %d has document position %d (after %d)", micro,
                   i / ZG_SEQ_LEN, t, pos[i], t ? pos[i - 1] : -1);
    }
}

void cz_upload_batch(int micro)
{
    memcpy(CZ.tok_h[micro], T.inputs, sizeof CZ.tok_h[micro]);
    memcpy(CZ.tgt_h[micro], T.targets, sizeof CZ.tgt_h[micro]);
    memcpy(CZ.pos_h[micro], T.pos, sizeof CZ.pos_h[micro]);
    check_pos(CZ.pos_h[micro], micro);
    /* the token table's gradient grouping by token (encoder.cu): the data were checked against the
    ** vocabulary when opened (zr_data_check_vocab), so an id out of range here is this program's fault */
    if (zk_tok_buckets(CZ.tok_h[micro], N_ROWS, ZG_VOCAB_SIZE, CZ.tok_count, CZ.bkt_h[micro]) < 0)
        tr_die("internal: a token id of micro-step %d is outside the vocabulary of %d", micro, ZG_VOCAB_SIZE);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.tokens, CZ.tok_h[micro], sizeof CZ.tok_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.targets, CZ.tgt_h[micro], sizeof CZ.tgt_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.tok_buckets, CZ.bkt_h[micro], sizeof CZ.bkt_h[micro]));
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.pos, CZ.pos_h[micro], sizeof CZ.pos_h[micro]));
    if (CZ.a.pos_buckets) {   /* the position table's gradient, grouped the same way (check_pos: pos < T) */
        zk_tok_buckets(CZ.pos_h[micro], N_ROWS, ZG_SEQ_LEN, CZ.pos_count, CZ.pbkt_h[micro]);
        CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_H2D, CZ.a.pos_buckets, CZ.pbkt_h[micro], sizeof CZ.pbkt_h[micro]));
    }
}

/* ---------------------------------------------------------------------- head */
/* logits = lnf @ w^T, w = p[0] (V, C): gpt2's token table, llama's lm_head (or its token table when
** tied); fused softmax cross-entropy (dlogits in place when write_grad); the per-token losses go to
** the host for the step's loss. */
void cz_head_forward(int micro, const void *const *p, float dloss, int write_grad)
{
    cz_gemm(0, 1, N_ROWS, ZG_VOCAB_SIZE, ZG_D_MODEL, CZ.a.lnf, ZG_D_MODEL, p[0], ZG_D_MODEL, 0.0f, CZ.a.logits, 0,
            ZG_VOCAB_SIZE);
    void *lg = CZ.a.logits;
    float *ls = CZ.a.losses;
    const int *tg = CZ.a.targets;
    void *args[] = {&lg, &ls, &tg, &dloss, &write_grad, NULL};
    cz_fp(tg, N_ROWS * 4, 0); cz_fp(lg, (size_t)N_ROWS * ZG_VOCAB_SIZE * AB, 1); cz_fp(ls, N_ROWS * 4, 1);
    cz_launch("zd_crossentropy_fused", N_ROWS, 1, 1, 512, args);
    CZ_CHECK(zr_gpu_copy(CZ.compute, ZR_GPU_D2H, CZ.loss_h[micro], CZ.a.losses, sizeof CZ.loss_h[micro]));
    CZ_CHECK(zr_gpu_record(CZ.ev_loss[micro], CZ.compute));
    CZ.loss_pending[micro] = 1;
}

/* dln = dlogits @ w; dw += dlogits^T lnf */
void cz_head_backward(const void *const *p, float *const *g)
{
    cz_gemm(0, 0, N_ROWS, ZG_D_MODEL, ZG_VOCAB_SIZE, CZ.a.logits, ZG_VOCAB_SIZE, p[0], ZG_D_MODEL, 0.0f, CZ.a.dln, 0,
            ZG_D_MODEL);
    cz_gemm(1, 0, ZG_VOCAB_SIZE, ZG_D_MODEL, N_ROWS, CZ.a.logits, ZG_VOCAB_SIZE, CZ.a.lnf, ZG_D_MODEL, 1.0f, g[0],
            1, ZG_D_MODEL);
}

void cz_token_table_backward(float *dtok)
{
    const int *bkt = CZ.a.tok_buckets;
    const void *dout = CZ.a.dresidual;
    int n = N_ROWS;
    void *a1[] = {&dtok, &bkt, &dout, &n, NULL};
    cz_fp(bkt, ZK_TOKBUCKET_INTS(N_ROWS) * 4, 0); cz_fp(dout, BTC_B, 0);
    cz_fp(dtok, (size_t)ZG_VOCAB_SIZE * ZG_D_MODEL * 4, 1);
    cz_launch("zd_encoder_backward_wte", N_ROWS, CEIL(ZG_D_MODEL, 256), 1, 256, a1);
}

/* ---------------------------------------------------------------------- graphs */
/* What a block's launches depend on beyond the compile-time shapes and the carved activations (fixed
** after cz_acts_init): the layer, the parameter and gradient pointers (ZeRO-3 gathers a layer's
** parameters into a slot: one graph per slot it is seen in), and the adapter's variant. */
#define CZ_LT_N (ZG_LT_COUNT > 0 ? ZG_LT_COUNT : 1)
#define CZ_MAX_GRAPHS (8 * (ZG_N_LAYERS > 0 ? ZG_N_LAYERS : 1))
typedef struct {
    int bwd, l;                 /* bwd: 0 forward, 1 backward, 2 recompute */
    unsigned variant;
    const void *p[CZ_LT_N];
    float *g[CZ_LT_N];
} GraphKey;
typedef struct { GraphKey k; int runs; ZrGpuGraph *graph; } ModGraph;
static ModGraph mod_graphs[CZ_MAX_GRAPHS];
static int n_mod_graphs;

static int graphs_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("ZR_CUDA_GRAPHS");
        on = !(e && strcmp(e, "0") == 0) && !zr_gpu_sync_debug(CZ.gpu);   /* sync-debug: uncaptured */
    }
    return on;
}

/* The cache entry of k (made on first sight), or NULL when the cache is full (then uncaptured). */
static ModGraph *mod_graph(const GraphKey *k)
{
    for (int i = 0; i < n_mod_graphs; i++)
        if (memcmp(&mod_graphs[i].k, k, sizeof *k) == 0) return &mod_graphs[i];
    if (n_mod_graphs == CZ_MAX_GRAPHS) return NULL;
    ModGraph *m = &mod_graphs[n_mod_graphs++];
    memcpy(&m->k, k, sizeof *k);         /* with its padding, which memcmp compares */
    return m;
}

void cz_block_run(int bwd, int l, const void *const *p, float *const *g, unsigned variant, CzBlockFn run)
{
    GraphKey k;
    memset(&k, 0, sizeof k);             /* padding too: the key is compared as bytes */
    k.bwd = bwd;
    k.l = l;
    k.variant = variant;
    for (int t = 0; t < ZG_LT_COUNT; t++) {
        k.p[t] = p[t];
        k.g[t] = g ? g[t] : NULL;
    }
    ModGraph *m = graphs_on() ? mod_graph(&k) : NULL;
    if (m && m->graph) {
        CZ_CHECK(zr_gpu_graph_launch(CZ.compute, m->graph));
        return;
    }
    if (!m || m->runs++ == 0) {          /* first sight: uncaptured */
        run(bwd, l, p, g);
        return;
    }
    CZ_CHECK(zr_gpu_capture_begin(CZ.compute));
    run(bwd, l, p, g);
    CZ_CHECK(zr_gpu_capture_end(CZ.compute, &m->graph));
    CZ_CHECK(zr_gpu_graph_launch(CZ.compute, m->graph));
}
