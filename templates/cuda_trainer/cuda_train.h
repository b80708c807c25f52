/*
** cuda_train.h — the CUDA trainer's state beside the host trainer's (train.h), and the interface
** between its files. The CUDA trainer is the host trainer's program (its main, train_main.c) with
** its own backend table (train.h, TrBackend) in place of train_backend_host.c's:
**   cuda_exec.c   the executor's op table (train.h, TrOps: cz_ops, the backend table's ops): each
**                 op of the plan on the device's streams; the loop is train_exec.c's, which runs
**                 the host's table (tr_host_ops) as --check's reference
**   cuda_model.c  the model on the device, the part every arch shares (cuda_model.h); the arch's
**                 adapter (cuda_gpt2.c, cuda_llama.c) runs its modules: zd_* kernels + gemm on the
**                 compute stream
**   cuda_main.c   the table itself: device set-up and the other hand-over points with the host
**                 code (layout init/free, params init, checkpoint load, optimizer step), the
**                 flags --check and --sync-debug
** Memory. The plan's device tier is ONE device allocation; a region at offset o of the device tier
** is at dev_base + o. The host trainer's files keep their arena of the device tier as a host copy
** with the same offsets (cz_dev maps its pointers to the device's): host code that knows nothing of
** the device reads and writes it (init, checkpoints, the export, --check, and the host's Adam where
** the plan leaves its state in the device tier), and only those cold paths copy between it and the
** device. Every per-step copy runs between the device and pinned memory the plan holds (the
** landings of docs/PLAN.md, the pinned arena) or the registered batch and loss pages.
*/
#ifndef CUDA_TRAIN_H
#define CUDA_TRAIN_H
#include "train.h"
#include "zr_gpu.h"
#include "../kernels/zk_tokbucket.h"

/* Device activations, carved from "acts" / "scratch": void * are activations in the storage that
** gen chose (ZK_IO: fp32, or the plan's 16-bit dtype), float * are always fp32 (statistics, lse, D,
** losses). CZ_ACT_NAME names that storage on the start-up and --check lines. These are the arrays
** every arch has, which cuda_model.c's shared code reads; an adapter carves them with its own. */
#define CZ_ACT_NAME (ZK_IO ? ZG_DTYPE_NAME : "fp32")
typedef struct CzDevActs {
    void *encoded;              /* the embedding's output: block 0's input */
    void *lnf, *logits;         /* the final norm's output; logits (dlogits after the head's forward) */
    float *losses;              /* per token */
    void *kept;                 /* activation checkpointing: block l's output at kept + l * kept_stride */
    size_t kept_stride;
    void *dresidual, *dln;      /* the residual stream's gradient; a norm output's gradient */
    float *colsum;              /* the column sums' partials (zk_colsum.h) */
    int *tokens, *targets, *tok_buckets;
    int *pos;                   /* each token's position in its document (train.h T.pos) */
    int *pos_buckets;           /* the positions grouped by position (zk_tokbucket.h), for a learned
                                ** position table's gradient (gpt2); NULL where the arch has none */
    size_t acts_bytes, scratch_bytes;
} CzDevActs;

typedef struct Cz {
    ZrGpu *gpu;
    ZrComm *gcomm;              /* the collectives' own communicator */
    ZrGpuStream *compute, *nccl, *h2d, *d2h;
    char *dev_base;             /* the device tier */
    CzDevActs a;
    ZrGpuEvent *ev_gather[TR_MAX_SLOTS], *ev_release[TR_MAX_SLOTS], *ev_pswap[TR_MAX_SLOTS];
    ZrGpuEvent *ev_reduced[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
    ZrGpuEvent *ev_d2h[ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1];
    ZrGpuEvent *ev_buf_free[TR_MAX_BUFS];
    ZrGpuEvent *ev_compute, *ev_h2d, *ev_loss[ZG_GRAD_ACCUM];
    ZrGpuEvent *ev_opt, *ev_opt2;           /* the device optimizer's hand-overs between streams */
    ZrGpuEvent *ev_land[2];                 /* the host optimizer's param_land slots: H2D done */
    struct {                    /* the batches' and losses' host side, registered (pinned) as
                                ** whole pages of their own (cz_host_io_register) */
        _Alignas(4096) int32_t tok_h[ZG_GRAD_ACCUM][ZG_MICRO_BATCH * ZG_SEQ_LEN];
        int32_t tgt_h[ZG_GRAD_ACCUM][ZG_MICRO_BATCH * ZG_SEQ_LEN];
        int32_t bkt_h[ZG_GRAD_ACCUM][ZK_TOKBUCKET_INTS(ZG_MICRO_BATCH * ZG_SEQ_LEN)];  /* zk_tokbucket.h */
        int32_t pos_h[ZG_GRAD_ACCUM][ZG_MICRO_BATCH * ZG_SEQ_LEN];
        int32_t pbkt_h[ZG_GRAD_ACCUM][ZK_TOKBUCKET_INTS(ZG_MICRO_BATCH * ZG_SEQ_LEN)]; /* with pos_buckets */
        float loss_h[ZG_GRAD_ACCUM][ZG_MICRO_BATCH * ZG_SEQ_LEN];
    };
    int tok_count[ZG_VOCAB_SIZE + 1];       /* zk_tok_buckets' workspace */
    int pos_count[ZG_SEQ_LEN + 1];          /* ... for the positions */
    int loss_pending[ZG_GRAD_ACCUM];
    int check;                  /* --check */
    int sync_debug;             /* --sync-debug */
    enum { CZ_ISSUING, CZ_FLUSHING, CZ_STEP } phase;   /* where the driver is (cz_host_wait's log) */
    int dev_opt;                /* Adam runs on the device: gen's placement (ZG_ADAM_DEVICE) */
} Cz;

extern Cz CZ;

void cz_die_gpu(const char *what, int rc) __attribute__((noreturn));
#define CZ_CHECK(call) do { int cz_rc_ = (call); if (cz_rc_ < 0) cz_die_gpu(#call, cz_rc_); } while (0)

/* cuda_exec.c */
void *cz_dev(const void *shadow);           /* device address of a device-tier shadow pointer */
int cz_is_dev(const void *shadow);
int cz_dev_region(int r);                   /* plan region r lives in the device tier */
ZrGpuStream *cz_queue(const ZrOpRow *op);   /* the stream of the row's lowered queue (gen/lower.c) */
void cz_regions_init(void);                 /* the shadow -> device map */
extern const TrOps cz_ops;                  /* the executor's op table on the device */
void cz_flush(void);                        /* host waits the step's copies, finishes its adds */
void cz_host_wait(ZrGpuEvent *e, const char *what, int arg);   /* a host wait, named (ZR_CUDA_WAIT_LOG=1) */
int cz_bucket_pending(int k);               /* bucket k's host copy is not yet handed over */
void cz_finish_bucket(int k);               /* ... its D2H waited for and its hand-over done */
/* cuda_norm.c: the device optimizer part's norm lanes (ZG_NORM_DEV_LANES). cz_norm_lanes, on the
** hand-over row h of bucket k whose range starts at dev_src on the device (fmt: 0 fp32, else the
** 16-bit format): sums the lanes of its device part on the d2h stream, copies them down, and
** rewrites h to the rest; returns the elements left out. cz_norm_pre: after that copy, the lanes
** as the start of the bucket's norm sum; 0 when bucket k has none pending. */
int64_t cz_norm_lanes(int k, ZrOpRow *h, const char *dev_src, int fmt);
int cz_norm_pre(int k, TrSq *pre);
/* cuda_spec.c: the speculative step's host Adams (ZG_SPECULATIVE) */
void cz_spec_optimizer(const ZrOpRow *op);  /* OPTIMIZER in the last micro-step: queued */
void cz_spec_issued(int k);                 /* bucket k's host copy was issued (its place in order) */
int cz_spec_pump(void);                     /* one poll of the queue; whether anything advanced */
void cz_spec_drain(void);                   /* the queue and every pending bucket done */
void cz_host_step_op(const ZrOpRow *op, double lr);   /* a step op with Adam on the host (cuda_main.c) */
int cz_land_begin(const ZrOpRow *op);       /* OPTIMIZER's landing slot ready, T.param_out on it */
void cz_land_end(const ZrOpRow *op);        /* ... and sent H2D */
void cz_push_params(void);                  /* working copy (+ device optimizer state): shadow -> device */
void cz_pull_state(void);                   /* device optimizer state and working copy -> shadow */
/* One convert.cu kernel (zd_f32_to_16, zd_16_to_f32, zd_add_16_to_f32, zd_add_f32_to_16,
** zd_add_f32) over n elements of device memory, on stream s, in the plan's 16-bit format. */
void cz_convert(ZrGpuStream *s, const char *kernel, void *dst, const void *src, int64_t n);

/* The model on the device, module by module as the plan's FORWARD / BACKWARD rows run them: the arch's
** adapter (gpt2/cuda_gpt2.c, llama/cuda_llama.c: cz_acts_init, embed, block, final norm) and
** cuda_model.c (the head, the batch). As train_model.h on the host: p and g are the module's
** parameter and gradient pointers from its first tensor in the IR's order (the tied head gets the
** token table as its only tensor; both archs' head reads p[0], a (V, C) table). Parameters: fp32
** (ZK_IO 0: fp32 plans), or the 16-bit working copy itself (ZK_IO 1 or 2). Gradients: fp32 (the
** module gradient area), accumulated (+=). */
void cz_acts_init(void);
extern const char cz_attention_kernels[];  /* the adapter's attention file (gen's ZK_ATT_TC), for the start-up line */
void cz_embed_forward(int micro, const void *const *p);
void cz_block_forward(int l, const void *const *p, int recompute);  /* recompute: checkpointing's */
void cz_final_norm_forward(const void *const *p);
void cz_head_forward(int micro, const void *const *p, float dloss, int write_grad);
void cz_head_backward(const void *const *p, float *const *g);
void cz_final_norm_backward(const void *const *p, float *const *g);
void cz_block_backward(int l, const void *const *p, float *const *g);
void cz_embed_backward(float *const *g);
void cz_upload_batch(int micro);
#endif
