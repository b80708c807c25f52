/*
** train.h — the emitted trainer's shared state and the interface between its files.
**
** The trainer executes the tables zgen wrote (zg_tables.c): it allocates one arena per memory tier
** with the plan's sizes, turns every plan region into a pointer, and runs the plan's schedule op by
** op. Files:
**   train_main.c    command line, setup, the step loop, log/progress/trace, world-size check
**   train_layout.c  regions -> pointers, the derived per-tensor offsets, NVMe swap files
**   train_exec.c    the micro-step executor, the one op loop of every backend: runs the plan's op
**                   lists and hands each op to the backend's op table (TrOps below), with the
**                   address computations every backend shares
**   train_ops.c     the host backend's op table: gathers, forward/backward via the model adapter
**                   (train_model.h; one per arch, e.g. gpt2_model.c), gradient copies and reductions
**   train_optim.c   the optimizer step: norm, clipping, fp16 scaler, Adam per sub-group (device,
**                   CPU or NVMe), parameter all-gather
**   train_params.c  initialisation, --init-from / --export (safetensors), --dump-grads
**   train_ckpt.c    --save / --resume (per-rank shards + manifest, through libzrt)
**   train_backend_host.c  the host build's backend table (TrBackend below); train-cuda has its own
** Everything numeric goes through the same code whatever the offload choice: offload moves bytes,
** never changes the arithmetic or its order, so every offload choice gives the same bits.
*/
#ifndef TRAIN_H
#define TRAIN_H
#include <stdint.h>
#include <stdio.h>

#include "zg_tables.h"    /* defines: ZG_* constants (zg_model.h), the static tables */
#include "zr.h"           /* defines: libzrt (arenas, collectives, NVMe, Adam, data, checkpoints) */
#include "zr_check.h"     /* defines: ZR_CHECK, ZR_CHECK_PTR */
#include "train_model.h"  /* defines: the arch's model adapter (its host kernels, module by module) */

/* ---------------------------------------------------------------------- command line */
typedef struct TrArgs {
    const char *data, *val, *log, *init_from, *export_path, *save, *resume, *trace;
    const char *tokenizer;      /* --tokenizer DIR: the tokenizer files an export carries (else
                                ** --init-from's folder) */
    const char *dump_grads;     /* debug: after step 1's backward, write fp32 gradients (safetensors) */
    const char *export_dtype;   /* --export-dtype: "fp32" (NULL) or "bf16" */
    int64_t export_shard_bytes; /* --export-shard-size: folder shard limit; 0 = ZR_ST_SHARD_BYTES */
    int64_t steps;              /* optimizer steps to reach (from the resumed step if any) */
    int64_t more_steps;         /* --more-steps K: K steps past the resumed one (0: --steps rules) */
    int steps_given;            /* --steps was on the command line */
    int64_t eval_every;         /* --eval-every K: score --val every K steps (and at the last) */
    int eval_only;              /* --eval-only: score --val at the loaded weights, then exit */
    int64_t save_every;
    int threads;                /* per rank; 0 = cores / ranks on this node */
    int quiet;
} TrArgs;

/* ---------------------------------------------------------------------- derived layout */
/* Per-tensor facts that follow from the tables and this rank's index, computed once at start-up
** with the rules of gen/zg_plan.h (so no decision is made while training). */
typedef struct TrTensor {
    int64_t opt_lo, opt_hi;     /* [lo, hi): its elements in this rank's optimizer shard */
    int64_t opt_src;            /* tensor element at opt_lo */
} TrTensor;

#define TR_MAX_SLOTS 16
#define TR_MAX_BUFS 16

typedef struct TrReq {          /* one outstanding gather: one handle per tensor of the group */
    ZrCollReq *h[ZG_N_TENSORS];
    int n;
} TrReq;

typedef struct Trainer {
    TrArgs a;
    ZrComm *comm;
    int rank, ws, local_world;

    /* memory: one arena per tier; NVMe tier = one swap file per rank */
    ZrArena *arena[ZR_NTIERS];
    ZrNvme *nvme;               /* the swap file of the optimizer side (master, m, v, grad32) */
    char nvme_path[1024];
    ZrNvme *nvme_param;         /* the swap file of params_shard: T.nvme unless offload_param's
                                ** nvme_path differs from offload_optimizer's (ZG_NVME_FILES 2) */
    char nvme_param_path[1024];

    /* regions (NULL when the plan has none); element type W = ZG_DTYPE unless fp32 said */
    void *params16;             /* stages 0-2: all parameters, flat (W) */
    void *params_shard;         /* stage 3: owned shard (W); NULL when on NVMe */
    int64_t params_shard_nvme;  /* byte offset of params_shard in the swap file, -1 */
    void *persist;              /* stage 3: persistent tensors whole (W) */
    void *slot[TR_MAX_SLOTS];   /* gather slots (W) */
    const ZrRegionRow *slot_row[TR_MAX_SLOTS];
    void *param_buf[TR_MAX_SLOTS];  /* stage 3 + param offload: the span PARAM_SWAP_IN brings in */
    void *param_wb;             /* stage 3 + param NVMe: write-back buffer (W) */
    char *param_out;            /* set by a backend around one OPTIMIZER op: where Adam writes that
                                ** sub-group's working copy (train-cuda: a slot of the pinned
                                ** "param_land", then H2D), as the home's address of shard element 0;
                                ** NULL: the home itself */
    void *grads;                /* stages 0/1: every gradient, flat (W) */
    void *bucket[TR_MAX_BUFS];  /* stages 2/3 bucket buffers (W) */
    void *bucket_recv[TR_MAX_BUFS];  /* stage 3: this rank's reduce-scattered chunk (W), or NULL */
    float *grad32;              /* owned fp32 gradient shard, or NULL (absent, or on NVMe) */
    float *grad_acc;            /* ZG_GRAD_ACC_DEV: its accumulator in the device tier, or NULL */
    void *grad16;               /* ZG_GRAD16: the owned gradient shard kept 16-bit (W), or NULL */
    int64_t grad32_nvme;        /* byte offset of grad32 in the swap file (ZG_GRAD_NVME), -1 */
    float *master, *adam_m, *adam_v;   /* fp32 owned optimizer shard (NULL when on NVMe/absent) */
    float *master_dev, *adam_m_dev, *adam_v_dev;  /* ZG_N_SG_DEV: the shard's leading
                                ** ZG_OPT_DEV_NUMEL elements of the state, in the device tier; then
                                ** the three above hold the shard from ZG_OPT_DEV_NUMEL on */
    void *grad_keep;            /* ZG_GRAD_KEEP: their reduced gradients, kept on the device (W) */
    float *master_next, *adam_m_next, *adam_v_next;  /* ZG_SPECULATIVE: the speculative step's
                                ** output; committing swaps it with the three above */
    int spec_mode;              /* train_optim.c: how OPTIMIZER runs now (TR_SPEC_*) */
    int64_t spec_redone, spec_undone;  /* steps whose speculation was redone (clipped) or undone
                                ** (skipped), for the log */
    double norm_part[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];  /* ZG_NORM_FUSED: each bucket's sum of
                                ** squares of this rank's gradients, from the last hand-over */
    double *norm_pieces;        /* ZG_NORM_ADAM: "norm_pieces", the host part's piece sums that
                                ** the speculative Adam writes (train_ops.c tr_norm_sq) */
    int64_t n_norm_pieces;      /* its doubles */
    int64_t master_nvme, adam_m_nvme, adam_v_nvme;  /* byte offsets in the swap file, -1 */
    void *opt_buf[TR_MAX_BUFS]; /* optimizer on NVMe: staging for master|m|v of one sub-group */
    int64_t opt_buf_part;       /* floats per part of an opt_buf */
    float *master_buf[TR_MAX_BUFS];  /* fp32 stage 3, params on NVMe, optimizer in memory: one
                                ** sub-group's fp32 parameters (= master) between SWAP_IN and
                                ** SWAP_OUT (gen/zg_plan.h, ZG_SWAP_PARAMS) */
    float *stage_params;        /* 16-bit dtypes: the host kernels' fp32 copy of one module's
                                ** parameters (in the host buffer, ZG_HOST_STAGE_BYTES) */
    float *grad_stage;          /* the module gradient area: fp32 gradients of one module (16-bit
                                ** dtypes; fp32 at stages 2/3) */
    float *tied_grad;           /* stages 2/3: fp32 token-table gradient from the tied head until embed */
    float *acts, *scratch;
    int64_t acts_floats;        /* floats of the host activations (acts; scratch follows) */
    size_t host_acts_bytes;     /* the mapping of both and stage_params (tr_layout_init) */

    /* every plan region by zg_regions index (NULL on NVMe): the lowered op rows name regions */
    void *rg[ZG_N_REGIONS > 0 ? ZG_N_REGIONS : 1];

    /* derived */
    TrTensor t[ZG_N_TENSORS];
    int64_t opt_numel;          /* elements of this rank's optimizer shard */
    int64_t opt_flat0;          /* stages 0-2: flat index of the shard's first element */

    /* activation checkpointing (the host activations then hold the checkpointed layout of
    ** docs/PLAN.md): the adapter carves one block area, block l reads its input from the kept
    ** stream, and each block's output is kept at ckpt_out + l * B*T*C. area_layer: the executor's
    ** record of the block in the area, for either backend (train_exec.c) */
    int act_ckpt;
    float *ckpt_out;
    int area_layer;             /* the block whose activations the block area holds, -1 */
    int32_t inputs[ZG_MICRO_BATCH * ZG_SEQ_LEN], targets[ZG_MICRO_BATCH * ZG_SEQ_LEN];
    /* each input token's position in its document (docs/DATA.md): positions, and attention of the
    ** token at t over keys t - pos[t] .. t; 0, 1, .. seq_len-1 in every row of a token file */
    int32_t pos[ZG_MICRO_BATCH * ZG_SEQ_LEN];
    double step_targets;        /* targets of the whole global batch this step (or evaluation
                                ** chunk): the loss's divisor, the same on every rank */
    ZrTokIds tok;               /* bos/eos/pad of the data's tokenizer (-1: unknown), for the export */

    /* run state */
    TrReq gather_req[TR_MAX_SLOTS];          /* per gather slot */
    ZrCollReq *reduce_req[ZG_N_BUCKETS];
    ZrNvmeReq pswap_req[TR_MAX_SLOTS];
    ZrNvmeReq opt_req[TR_MAX_BUFS][4];      /* master, m, v (, gradients) of the sub-group in
                                            ** opt_buf b (master_buf b: part 0 only) */
    /* gradients on NVMe (train_optim.c): part 3 of opt_buf b holds sub-group gw_in[b]'s gradients
    ** (-1: nothing valid); gw_cur is the sub-group the hand-over adds into now (-1: none);
    ** gw_written[k]: this step's sums of sub-group k are in the swap file (else they are zero) */
    int gw_in[TR_MAX_BUFS];
    int gw_cur;
    unsigned char gw_written[ZG_N_SUBGROUPS > 0 ? ZG_N_SUBGROUPS : 1];
    ZrNvmeReq wb_req;
    int last_bwd_module;        /* module of the latest BACKWARD (the executor sets it) */
    int micro;                  /* the micro-step the executor is running */
    ZrData data, val;
    ZrLrSched lr;
    ZrScaler scaler;
    int64_t step;               /* optimizer steps done (skipped ones included) */
    int64_t applied;            /* optimizer steps applied (the lr schedule's count) */
    double loss_scale;          /* fp16: scale used for this step; 1 otherwise */
    float grad_scale;           /* Adam's g multiplier this step: 1/(scale * clip coefficient) */
    double grad_norm;
    float loss_sum;             /* sum of token losses this step (this rank) */
    ZrTrace *trace;
    int forward_only;           /* evaluation: the executor skips backward and reductions */
} Trainer;

extern Trainer T;

/* tracing helpers (no-ops without --trace) */
double tr_now(void);
void tr_span(int track, const char *name, double t0);

/* train_layout.c */
void tr_layout_init(void);              /* arenas, regions, swap file, derived offsets */
void tr_layout_free(void);
size_t tr_wsize(void);                  /* bytes of one working-precision element */
/* W <-> fp32 conversions of n elements */
void tr_w_to_f32(float *dst, const void *src, int64_t n);
void tr_f32_to_w(void *dst, const float *src, int64_t n);
void *tr_w_at(void *base, int64_t elem);
/* Element `elem` (of dtype dt, a ZrDtype) of plan region r (a zg_regions index): how every lowered
** op row's source and destination become addresses. */
void *tr_region_at(int r, int64_t elem, int dt);
int64_t tr_nvme_at(int r, int64_t elem, int dt);
/* An OPTIMIZER operand (zg_optimizers): shard element e in region r, whose element off (+ this
** rank's flat start where ranked) holds shard element 0 (train_optim.c). */
void *tr_opt_operand(int r, int64_t off, int ranked, int dt, int64_t e);   /* byte offset in its swap file of an NVMe region's element */
int tr_region_index(const char *name);  /* the plan's region `name`: its index, -1 when it has none */
void *tr_region_named(const char *name);  /* its memory; NULL when it has none or it is on NVMe */
/* d[i] (+)= widened element i of s (ZG_DTYPE), n elements: every gradient hand-over into fp32
** (train_ops.c) */
void tr_w_into_f32(float *d, const void *s, int64_t n, int add);
/* The fused norm's sum of squares of one bucket's hand-over range (ZG_NORM_FUSED), in one order
** that every backend repeats: the shard is cut into blocks of ZG_NORM_BLOCK elements (at multiples
** of it); within a block, element o's square goes into double lane o % 8 in ascending order; at
** the block's end the lanes are added ((0+1)+(2+3))+((4+5)+(6+7)) into the running sum. A range fed
** in any pieces sums the same; so does a block whose first part's lanes were summed on the device
** (sumsq.cu zd_sumsq_lanes over the device optimizer range, ZG_NORM_DEV_LANES) and handed over. */
typedef struct TrSq {
    double sum;                 /* the closed blocks, ascending */
    double lane[8];             /* the open block's lanes */
} TrSq;
void tr_sq_feed(TrSq *q, const float *x, int64_t off, int64_t n);   /* x[0] at shard offset off */
/* One block's lanes summed elsewhere, over its part that ends at shard offset end (exclusive):
** the block closes when end is its end, else the next elements continue its lanes. */
void tr_sq_lanes(TrSq *q, const double lane[8], int64_t end);
double tr_sq_total(const TrSq *q);
/* ZG_NORM_ADAM: the hand-over sums only the device part's squares (the shard's front, ZG_OPT_DEV_NUMEL);
** the host part's are summed by its speculative Adam (zr_adam_step_sq) into T.norm_pieces, pieces cut
** at the norm blocks and at this rank's bucket ends, so each is one bucket's part of one block. The
** rank's sum then adds each bucket's pieces in order after its device part: the hand-over's bits. */
void tr_norm_init(void);                /* lays out this rank's pieces (tr_layout_init) */
ZrAdamSq *tr_norm_sq(void);             /* the pieces' cuts for this rank, for zr_adam_step_sq */
double tr_norm_total(void);             /* the rank's sum of squares: the buckets' sums in bucket order */
void tr_nvme_rw(int write, void *buf, int64_t bytes, int64_t off);   /* blocking swap-file I/O */
void tr_nvme_rw_param(int write, void *buf, int64_t bytes, int64_t off);   /* same, params_shard's file */

/* ---------------------------------------------------------------------- the executor */
/* One op loop for every backend (train_exec.c): it walks the plan's op lists, keeps the executor's
** bookkeeping (which slot holds a gather group, the last BACKWARD, tracing spans, evaluation mode)
** and hands each op's work to a backend's op table. An entry gets the lowered op row (runtime/
** zr_plan.h, ZrOpRow: everything the op moves, decided by gen/lower.c) and does that on its
** backend's memory and queues. The host backend's table is tr_host_ops (train_ops.c), the
** CUDA backend's cz_ops (cuda/trainer/cuda_exec.c); NULL hooks do nothing. */
typedef void TrOpFn(const ZrOpRow *op);
typedef struct TrOps {
    const char *name;
    TrOpFn *swap_in;            /* PARAM_SWAP_IN */
    TrOpFn *gather;             /* GATHER: start the group's all-gathers */
    TrOpFn *wait_gather;        /* WAIT_GATHER: the slot is readable by compute after this */
    TrOpFn *release;            /* RELEASE: compute is done with the slot */
    TrOpFn *forward;            /* FORWARD (a recompute too: op->slot == ZR_RECOMPUTE) */
    TrOpFn *backward;           /* BACKWARD: the module's gradients into the row's destination */
    TrOpFn *grad_copy;          /* GRAD_COPY: module gradients into the bucket buffer */
    TrOpFn *reduce;             /* REDUCE: start the row's collective */
    TrOpFn *wait_reduce;        /* WAIT_REDUCE: the row's hand-over into grad32 */
    TrOpFn *optimizer;          /* OPTIMIZER in a micro-step list (ZG_SPECULATIVE) */
    TrOpFn *grad_ship;          /* GRAD_SHIP (ZG_GRAD_ACC_DEV): the bucket's sums into grad32 */
    TrOpFn *grad_keep;          /* GRAD_KEEP (ZG_GRAD_KEEP): the device range's sums into grad_keep */
    TrOpFn *grad_add;           /* GRAD_ADD (stages 0/1, 16-bit): the module's gradients into "grads" */
    void (*batch)(int micro);   /* hook: T.inputs / T.targets hold micro-step `micro`'s batch */
    void (*flush)(void);        /* hook: after the step's last micro-step and after an evaluation */
    void (*grads_zero)(void);   /* hook: start of a step, after the host accumulators are zeroed */
} TrOps;

extern const TrOps tr_host_ops;         /* train_ops.c */

/* train_exec.c: the loop, run with a backend's op table */
void tr_exec_micro(const TrOps *ops, int micro, int last);  /* loads its batch, runs its op list */
/* The step's loss divisor into T.step_targets: the targets of the whole global batch of T.step. */
void tr_step_targets(void);
/* Every row of d scored once at the current weights: the mean loss over its targets, *targets their
** count (docs/DATA.md, Evaluation). */
double tr_eval(const TrOps *ops, const ZrData *d, int64_t *targets);
void tr_grads_zero(const TrOps *ops);   /* start of an optimizer step */
/* train_exec.c: the address computations every backend shares. Pointers are plan addresses (a
** region's place in its tier's arena); a backend maps them to its own memory (the CUDA backend's
** device tier through cz_dev), and pointer arithmetic on a mapped base is the same arithmetic. */
/* Tensors module m reads: its own, or the token table (ZG_TIED_TENSOR) for the tied head. */
void tr_module_tensors(int m, int *first, int *n);
/* The working copy (W elements) of tensor t as module m sees it: "persist", the slot its gather
** group was waited into, or its place in "params16" (the tensor rows say which). */
void *tr_param_at(int m, int t);
/* BACKWARD's gradient views: G[t] = area + t's offset in the module, for the module's tensors.
** Returns the tensor whose G starts from the tied head's token-table gradient ("tied_grad": it
** completes at embed), or -1. */
int tr_grad_views(const ZrOpRow *op, float *area, float **G);
int tr_bucket_buf(int k);               /* bucket k's buffer index (bucket_<b>, bucket_recv_<b>) */
/* GRAD_COPY's pieces: put(dst, src, n, pad) for each, dst in the bucket buffer at buf: n elements
** of fp32 src rounded to W, then pad W zeros (stage 3's rank-major slices; the tensor rows say). */
typedef void TrPut(char *dst, const float *src, int64_t n, int64_t pad);
void tr_grad_copy_each(const ZrOpRow *op, char *buf, float *const *G, TrPut *put);
/* A hand-over row's elements: returns n, with the first source element to take (skip, from the
** row's source) and the destination element (dst, in the row's destination): a flat range's part in
** this rank's optimizer shard, or the whole row. */
int64_t tr_hand_over_range(const ZrOpRow *op, int64_t *skip, int64_t *dst);
/* GRAD_KEEP's elements: tr_hand_over_range's, clipped to the device optimizer range (the shard's
** [0, ZG_OPT_DEV_NUMEL)); dst indexes grad_keep. */
int64_t tr_keep_range(const ZrOpRow *op, int64_t *skip, int64_t *dst);
/* train_ops.c: the row's hand-over on the host: grad32 (+)= the W source (NVMe: through
** tr_grad_take's sub-group windows). */
void tr_hand_over(const ZrOpRow *op);
/* The same, its norm part continuing pre (the device's lanes of the range's front, which the row's
** range then leaves out: ZG_NORM_DEV_LANES); pre NULL is tr_hand_over. */
void tr_hand_over_after(const ZrOpRow *op, const TrSq *pre);
/* train_ops.c: GRAD_SHIP's host side: copy (copy 1: the host backend; 0: the D2H already landed
** them) this rank's part of the bucket's sums from grad_acc into grad32, and with ZG_NORM_FUSED
** sum their squares as the last hand-over would have (continuing pre, as tr_hand_over_after). */
void tr_grad_ship(const ZrOpRow *op, int copy, const TrSq *pre);

/* train_optim.c */
void tr_optim_step(void);               /* after the last micro-step: norm, scaler, Adam, gathers */
/* tr_optim_step with another runner of the step ops (a backend that moves some of them, e.g.
** train-cuda with the host's Adam: each sub-group's update to the device, the gathers there). */
void tr_optim_step_with(void (*run_op)(const ZrOpRow *op, double lr));
void tr_step_op(const ZrOpRow *op, double lr);   /* the host's: swaps, Adam, gathers */
/* ZG_SPECULATIVE: OPTIMIZER in the last micro-step's list, through the backend's run_op (the
** lr and grad_scale of an unclipped step); run_op is tr_step_op or a backend's wrapper of it. */
void tr_spec_optimizer(const ZrOpRow *op, void (*run_op)(const ZrOpRow *op, double lr));
/* How OPTIMIZER runs: in place (not speculative), into the *_next state (the speculation and its
** redo), or only rewriting the working copy from the current master (a skipped step). */
enum { TR_SPEC_OFF, TR_SPEC_NEXT, TR_SPEC_RESTORE };
float *tr_opt_state_at(int part, int64_t i);  /* in-memory master (0), m (1), v (2) element i */
/* n elements of part from shard element lo: into the state from buf (into_state 1) or out to buf
** (a range may cross from the device's *_dev regions into the host's). */
void tr_opt_state_copy(int part, int64_t lo, int64_t n, float *buf, int into_state);
void tr_opt_shard_grads(float *dst);    /* this rank's owned gradient shard as fp32 */
void tr_params_gather(void);            /* all-gather the working copy from the owned parts */
/* The step rule every backend runs (train_optim.c): all-reduce of {owned(), loss}, fp16 scaler,
** norm, clipping, grad_scale, lr. owned: this rank's sum of squares of its owned gradient (not
** called where only rank 0's counts). 1: the step applies at *lr; 0: skipped. */
int tr_step_rule(double (*owned)(void), double *lr);
/* tr_step_rule, then run_op for each of the plan's step ops, then T.applied++; 1 when applied. */
int tr_step(double (*owned)(void), void (*run_op)(const ZrOpRow *op, double lr));
/* The working copy's owned part (params16 at this rank's partition, or params_shard); NULL on NVMe. */
void *tr_opt_home(void);
/* The persistent tensors' owned slices: f(persist element, shard element, n, ctx) each, in tensor
** order (f may be NULL); returns the elements of "persist" they span, 0 when there are none. */
typedef void TrSlice(int64_t at, int64_t from, int64_t n, void *ctx);
int64_t tr_persist_slices(TrSlice *f, void *ctx);
/* ALLGATHER_PARAMS's persistent row, this rank's part: its slices, read from the shard wherever it
** lives (memory or NVMe), into the row's destination zeroed first; returns its elements (0: none). */
int64_t tr_persist_fill(const ZrOpRow *op);
/* The gradient hand-over into the owned fp32 shard: elements [off, off+n) (+)= the W elements of
** src. grad32 in memory: straight in; on NVMe (ZG_GRAD_NVME): through the sub-group windows, each
** written through when the hand-over moves on (read back first once this step has written it). */
void tr_grad_take(int64_t off, const void *src, int64_t n, int add);
void tr_grad_window_reset(void);        /* start of an optimizer step: every sub-group's sum is 0 */

/* train_params.c */
/* Chunked access to the optimizer state: part 0 master, 1 m, 2 v; [lo, lo+n) of the opt shard. */
typedef void TrFill(int part, int64_t lo, int64_t n, float *dst, void *ctx);
typedef void TrSink(int part, int64_t lo, int64_t n, const float *src, void *ctx);
void tr_state_load(TrFill *fill, void *ctx);   /* sets master, m, v and the working copy */
void tr_state_store(TrSink *sink, void *ctx);
void tr_params_init(void);              /* random init or --init-from */
void tr_export(const char *path);       /* rank 0 writes a file or a HF folder (+ config.json) */
/* Command-line values of --export-dtype / --export-shard-size, checked (exit 2 with a message). */
const char *tr_export_dtype_arg(const char *v);
int64_t tr_size_arg(const char *flag, const char *v);
int64_t tr_count_arg(const char *flag, const char *v);   /* a whole number >= 0, or exit 2 naming the flag */
void tr_dump_grads(const char *path);   /* debug: the reduced gradients, fp32, HF names */

/* train_ckpt.c */
void tr_ckpt_save(const char *dir);
void tr_ckpt_load(const char *dir);

/* ---------------------------------------------------------------------- backend table */
/* Every point where a backend's build departs from the host trainer's, as one table: train_main.c
** calls these through tr_backend and nothing else of a backend. The host build's table
** (train_backend_host.c) lists the host functions above; train-cuda's (cuda/trainer/cuda_main.c)
** lists its own, which call the host ones where the host code still does part of the work.
** docs/TRAINER.md, "Backends", tabulates both. */
typedef struct TrBackend {
    const char *name;
    const char *usage;                          /* its flags, for usage() */
    /* a flag of this backend's (no value): 1 when taken, 0 when not one of its flags */
    int (*flag)(const char *arg);
    void (*layout_init)(void);                  /* after the arenas and regions exist */
    void (*layout_free)(void);
    void (*params_init)(void);
    void (*ckpt_load)(const char *dir);
    const TrOps *ops;                           /* the executor's op table (train_exec.c runs it) */
    void (*optim_step)(void);
} TrBackend;

extern const TrBackend tr_build_backend;        /* this build's: one per-build file defines it */
extern const TrBackend *tr_backend;             /* = &tr_build_backend, set by main at start-up */

/* main: fatal error from rank code with a message */
void tr_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#endif
