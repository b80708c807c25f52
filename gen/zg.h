/*
** zg.h — the generator's shared types and the interface of each gen/ file.
**
** Pipeline (main.c): load spec (spec.c) -> load ZeRO config (zero.c) -> validate (check.c)
** -> model IR (model.c) -> partition map + schedule + memory plan (plan*.c) -> write plan.json /
** plan.txt (planout*.c) -> render templates (lua.c, tpl.c, emit.c).
** Conventions: prefix zg_ per file module; input errors go through diag.c with a location and are
** all reported before zgen exits 1; internal errors use assert/zg_unreachable. Memory is taken with
** zg_xmalloc & co. and generally not freed (zgen is a short-lived compiler, chibicc-style).
*/
#ifndef ZG_H
#define ZG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>

#include "../runtime/zr_enums.h"  /* defines: the enumerator lists (X-macros) */

/* ======================================================================= diag.c */
typedef struct ZgLoc {
    const char *file;           /* path as given by the user; NULL = no location */
    int line, col;              /* 1-based; 0 = unknown */
} ZgLoc;

void zg_error(ZgLoc at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zg_warn(ZgLoc at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A "note:" line following an error or warning (e.g. the arithmetic, or what to do). */
void zg_note(ZgLoc at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int zg_error_count(void);
void zg_diag_reset(void);               /* tests: forget counts */
void zg_diag_quiet(bool quiet);         /* tests: do not print */
const char *zg_diag_last(void);         /* tests: text of the last error/warning */
/* Added by the front end (diag.c): */
int zg_warn_count(void);
/* Tests (quiet mode keeps every error/warning with its notes): how many errors or warnings whose
** message or notes contain frag (case-sensitive) are at `line` (0 = any line). */
int zg_diag_count_matching(const char *frag, int line);
/* Tests: every kept message, one per line as "line:col: kind: message [notes]" (for failure output). */
const char *zg_diag_log(void);
/* Source text of a file, so errors can quote the line (node.c registers what it parses). */
void zg_diag_add_source(const char *file, const char *text);
_Noreturn void zg_unreachable_at(const char *file, int line);
#define zg_unreachable() zg_unreachable_at(__FILE__, __LINE__)
void *zg_xmalloc(size_t n);
void *zg_xcalloc(size_t n, size_t size);
void *zg_xrealloc(void *p, size_t n);
char *zg_xstrdup(const char *s);
char *zg_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* malloc'd */

/* ======================================================================= node.c */
/* A YAML/JSON document as a tree that keeps every node's location (libyaml). */
typedef enum { ZG_NSCALAR, ZG_NMAP, ZG_NSEQ } ZgNodeKind;
typedef struct ZgNode ZgNode;
struct ZgNode {
    ZgNodeKind kind;
    ZgLoc loc;
    const char *scalar;         /* ZG_NSCALAR: the text */
    bool quoted;                /* ZG_NSCALAR: was quoted ("auto" vs auto both mean auto) */
    int n;                      /* ZG_NMAP: pairs; ZG_NSEQ: items */
    const char **keys;          /* ZG_NMAP: n keys */
    ZgLoc *key_locs;            /* ZG_NMAP: where each key is */
    ZgNode **vals;              /* ZG_NMAP: n values; ZG_NSEQ: n items */
};
/* Loads a file (YAML or JSON; duplicate map keys are errors). NULL after reporting on failure. */
ZgNode *zg_node_load_file(const char *path);
ZgNode *zg_node_load_string(const char *text, const char *name);
ZgNode *zg_node_get(const ZgNode *map, const char *key);     /* NULL if absent */
/* Added by the front end: as zg_node_load_file, but a missing/unreadable file is reported at `from`
** (where the path was named, e.g. the spec's `deepspeed:` line); from.file NULL = no location. */
ZgNode *zg_node_load_file_at(const char *path, ZgLoc from);
int zg_node_index(const ZgNode *map, const char *key);       /* pair index, -1 if absent */
const char *zg_node_kind_name(const ZgNode *n);              /* "a mapping", "a list", "a scalar" */
/* Typed access to a value node; each reports "<what> must be ..." at the value and returns false.
** `what` names the key for the user, e.g. "model.d_model". */
bool zg_node_is_null(const ZgNode *v);                       /* null, ~ or empty (unquoted) */
bool zg_node_is_auto(const ZgNode *v);                       /* "auto" or auto */
bool zg_node_bool(const ZgNode *v, const char *what, bool *out);
bool zg_node_int(const ZgNode *v, const char *what, int64_t lo, int64_t hi, int64_t *out);
bool zg_node_num(const ZgNode *v, const char *what, double lo, double hi, double *out);
bool zg_node_str(const ZgNode *v, const char *what, const char **out);

/* ======================================================================= config types */
/* Byte and element counts are int64_t throughout: a 1T-parameter model overflows 32 bits. */
/* Enumerator lists shared with the runtime and the templates: runtime/zr_enums.h. */
#define ZG_E_DTYPE(u, s) ZG_DTYPE_##u,
#define ZG_E_TIER(u, s) ZG_TIER_##u,
typedef enum { ZR_DTYPE_LIST(ZG_E_DTYPE) } ZgDtype;
typedef enum { ZR_TIER_LIST(ZG_E_TIER) ZG_NTIERS } ZgTier;
typedef enum { ZG_OFFLOAD_NONE, ZG_OFFLOAD_CPU, ZG_OFFLOAD_NVME } ZgOffload;
typedef enum { ZG_SCHED_NONE, ZG_SCHED_WARMUP, ZG_SCHED_WARMUP_DECAY, ZG_SCHED_WARMUP_COSINE } ZgSchedKind;

/* Added by the "auto" work (spec_train.c): the spec's train.* keys that play the part of Hugging Face
** TrainingArguments, filling DeepSpeed "auto" values as HF's Trainer does (zero_auto.c). */
typedef enum {
    ZG_TA_MICRO,                /* train.micro_batch_size   (per_device_train_batch_size) */
    ZG_TA_BATCH,                /* train.batch_size         (zgen's own: the global batch) */
    ZG_TA_GAS,                  /* train.grad_accum         (gradient_accumulation_steps) */
    ZG_TA_LR,                   /* train.lr                 (learning_rate) */
    ZG_TA_BETAS,                /* train.betas              (adam_beta1, adam_beta2) */
    ZG_TA_EPS,                  /* train.eps                (adam_epsilon) */
    ZG_TA_WD,                   /* train.weight_decay       (weight_decay) */
    ZG_TA_WARMUP,               /* train.warmup_steps       (warmup_steps) */
    ZG_TA_CLIP,                 /* train.max_grad_norm      (max_grad_norm) */
    ZG_TA_DTYPE,                /* train.dtype              (--bf16 / --fp16) */
    ZG_NTA
} ZgTrainArg;

typedef struct ZgModel {
    const char *spec_path;      /* the spec file, as given */
    const char *name;           /* [a-z][a-z0-9_]* */
    const char *arch;           /* "gpt2" */
    int64_t vocab_size, context, d_model, n_layers, n_heads, d_ff;
    double norm_eps;
    bool tie_embeddings;
    int64_t seq_len;            /* tokens per sequence, <= context */
    int world_size;             /* ranks the plan is for (train.world_size or --world-size) */
    uint64_t seed;
    bool shuffle;               /* train.shuffle: document files' order drawn per epoch (docs/DATA.md) */
    int64_t device_memory;      /* bytes per rank; 0 = not declared */
    int64_t host_memory;        /* bytes per node; 0 = not declared */
    int gpus_per_node;          /* hardware.gpus_per_node; default min(world_size, 8) */
    bool activation_checkpointing;  /* train.activation_checkpointing: recompute blocks in backward */
    ZgLoc loc_name, loc_world_size, loc_device_memory, loc_host_memory;
    /* Added by the front end (spec.c). Optional train.* values that fill DeepSpeed "auto" keys;
    ** 0 = absent from the spec. */
    int64_t train_micro_batch;  /* train.micro_batch_size */
    int64_t train_batch;        /* train.batch_size (global, = micro * grad_accum * world_size) */
    int64_t train_grad_accum;   /* train.grad_accum */
    double train_lr;            /* train.lr */
    ZgLoc loc_deepspeed;        /* the spec's `deepspeed:` value */
    bool gpus_per_node_given;   /* hardware.gpus_per_node was in the spec */
    int64_t device_headroom;    /* hardware.device_headroom: bytes per rank kept free of the plan on
                                ** the device instead of zgen's estimate (memplan.c); 0 = estimate */
    ZgLoc loc_device_headroom;
    /* Added by the reliability work (spec.c): where model.n_layers is, for plan-size refusals. */
    ZgLoc loc_n_layers;
    /* Added by the llama work (spec.c). Archs without rotary embeddings leave n_kv_heads = n_heads
    ** and the rope fields at their defaults. */
    int64_t n_kv_heads;         /* key/value heads (grouped-query attention); divides n_heads */
    double rope_theta;          /* RoPE base (10000) */
    bool rope_llama3;           /* rope_scaling {type: llama3, ...}: LLaMA 3 frequency scaling */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int64_t rope_original_context;
    ZgLoc loc_arch;             /* model.arch (the spec's top level when absent) */
    /* Added by the TF32 work (spec.c): train.allow_tf32, the user accepts TF32 tensor-core GEMMs
    ** (inputs rounded to 11 significant bits, fp32 sums) for fp32 operands; where it applies is
    ** gen/cuda_dec.c's decision (zg_cuda_tf32: fp32 plans only). */
    bool allow_tf32;
    ZgLoc loc_allow_tf32;       /* the key (the spec's top level when absent) */
    /* Added by the speculative-step work (spec.c): train.speculative_step, the user's word on
    ** plan.c's speculative optimizer step: -1 left out (zgen decides), 0 false, 1 true. */
    int speculative_step;
    ZgLoc loc_speculative_step; /* the key (the spec's top level when absent) */
    /* Added by the device-accumulation work (spec.c): train.device_grad_accum, the user's word on
    ** plan.c's gradient accumulation in device memory: -1 left out (zgen decides), 0 false, 1 true. */
    int device_grad_accum;
    ZgLoc loc_device_grad_accum;
    /* Added by the split-optimizer work (spec.c): train.device_optimizer, the share of a CPU
    ** optimizer's state that plan.c keeps on the device: 0 left out or false, -1 auto (the leading
    ** sub-groups that fit hardware.device_memory), else a fraction in (0, 1). */
    double device_optimizer;
    ZgLoc loc_device_optimizer;
    /* Added by the "auto" work (spec_train.c, main.c). loc_train[k].file is NULL when train.<k> is
    ** absent (the four train_* fields above keep 0 = absent as well). */
    ZgLoc loc_train[ZG_NTA];
    double train_beta1, train_beta2, train_eps, train_weight_decay, train_max_grad_norm;
    int64_t train_warmup_steps;
    ZgDtype train_dtype;        /* meaningful when loc_train[ZG_TA_DTYPE].file is set */
    int64_t steps;              /* zgen --steps N (HF's max_steps): total_num_steps "auto"; 0 = not given */
    const char *gen_args;       /* zgen's arguments as given, minus -o and --world-size, shell-quoted
                                ** (ZG_GEN_ARGS); NULL = not run from the command line */
} ZgModel;

/* Added by the "auto" work: what gave a training setting its value. */
typedef enum {
    ZG_FROM_DEFAULT,            /* nobody set it: DeepSpeed's (or zgen's) default */
    ZG_FROM_CONFIG,             /* the config gives the value */
    ZG_FROM_AUTO,               /* the config says "auto"; filled as HF's Trainer fills it */
    ZG_FROM_SPEC,               /* the config leaves it out; the spec's train.* key gives it */
    ZG_FROM_DERIVED,            /* computed from other settings (the batch triple, warmup_max_lr) */
} ZgFromKind;
typedef struct ZgFrom {
    ZgFromKind kind;
    const char *src;            /* what gave it, for people: "spec train.lr", "zgen --steps", ... */
    ZgLoc at;                   /* CONFIG / AUTO: the key in the config */
} ZgFrom;
/* The settings plan.txt's "training" section lists (zero_auto.c names them). */
typedef enum {
    ZG_S_MICRO, ZG_S_GAS, ZG_S_TB, ZG_S_CLIP, ZG_S_BF16, ZG_S_FP16,
    ZG_S_LOSS_SCALE, ZG_S_INITIAL_SCALE_POWER, ZG_S_LOSS_SCALE_WINDOW, ZG_S_HYSTERESIS,
    ZG_S_CONSECUTIVE_HYSTERESIS, ZG_S_MIN_LOSS_SCALE,
    ZG_S_OPT_TYPE, ZG_S_LR, ZG_S_BETAS, ZG_S_EPS, ZG_S_WD, ZG_S_ADAM_W_MODE, ZG_S_BIAS_CORRECTION,
    ZG_S_SCHED_TYPE, ZG_S_WARMUP_MIN_LR, ZG_S_WARMUP_MAX_LR, ZG_S_WARMUP_NUM_STEPS, ZG_S_WARMUP_TYPE,
    ZG_S_TOTAL_NUM_STEPS, ZG_S_WARMUP_MIN_RATIO, ZG_S_COS_MIN_RATIO,
    ZG_NS
} ZgSetting;
/* One "auto" in the config: the key, and the setting it resolved (-1: a sizing key, whose outcome
** `text` states). */
typedef struct ZgAutoKey {
    ZgLoc at;
    const char *key;            /* dotted DeepSpeed name */
    int setting;                /* ZgSetting, or -1 */
    const char *text;           /* setting -1: what became of it */
} ZgAutoKey;

typedef struct ZgOffloadCfg {
    ZgOffload device;
    const char *nvme_path;      /* NULL unless device == NVME */
    bool pin_memory;            /* default true (DeepSpeed since #8207) */
    int64_t buffer_count;       /* param 5, optimizer 4 */
    int64_t buffer_size;        /* param: elements per swap buffer (1e8) */
    int64_t max_in_cpu;         /* param: 1e9 */
    bool pipeline_read, pipeline_write;   /* optimizer */
    double ratio;               /* optimizer: 1.0 */
    ZgLoc loc;                  /* the section */
    /* Added by the front end: */
    ZgLoc loc_device;           /* the device key (the section when absent) */
} ZgOffloadCfg;

typedef struct ZgZero {
    const char *path;           /* config file, or the spec when inline */
    int stage;                  /* 0..3 */
    /* batch: resolved so that train_batch_size = micro * gas * world_size */
    int64_t train_batch_size, micro_batch, grad_accum;
    /* precision */
    ZgDtype dtype;              /* dtype of the 16-bit working copy (FP32 = no mixed precision) */
    /* fp16 dynamic loss scaling (docs/CONFIG.md) */
    double loss_scale;          /* 0 = dynamic */
    int initial_scale_power, loss_scale_window, hysteresis;
    bool consecutive_hysteresis;
    double min_loss_scale;
    double gradient_clipping;   /* 0 = off; default 1.0 */
    /* optimizer: adam / adamw with DeepSpeed semantics */
    const char *optimizer;      /* "adam" | "adamw" (lower-cased) */
    double lr, beta1, beta2, eps, weight_decay;
    bool adam_w_mode;           /* true = decoupled weight decay */
    /* scheduler */
    ZgSchedKind sched;
    double warmup_min_lr, warmup_max_lr, warmup_min_ratio, cos_min_ratio;
    int64_t warmup_num_steps, total_num_steps;
    bool warmup_linear;         /* warmup_type "linear" (default "log") */
    /* zero_optimization */
    bool contiguous_gradients, reduce_scatter, overlap_comm;
    int64_t reduce_bucket_size, allgather_bucket_size;      /* elements */
    int64_t sub_group_size;
    int64_t prefetch_bucket_size;                           /* stage3_prefetch_bucket_size */
    int64_t param_persistence_threshold, model_persistence_threshold;
    int64_t max_live_parameters, max_reuse_distance;
    ZgOffloadCfg offload_param, offload_optimizer;
    /* aio */
    int64_t aio_block_size, aio_queue_depth, aio_intra_op_parallelism;
    bool aio_single_submit, aio_overlap_events;
    ZgLoc loc_stage, loc_batch;
    /* Added by the front end (zero.c/check.c). Which batch keys the config gave (after "auto" was
    ** filled from the spec); zg_check derives the others and sets all three. */
    bool tb_given, micro_given, gas_given;
    ZgLoc loc_tb, loc_micro, loc_gas;   /* the keys, or the config's top level when absent */
    bool warmup_max_lr_given;   /* scheduler.params.warmup_max_lr was set (else derived) */
    ZgDtype comm_dtype;         /* gradient communication dtype (= dtype unless configured) */
    ZgLoc loc_root;             /* the config's top-level mapping */
    ZgLoc loc_sched;            /* scheduler section (or loc_root) */
    bool batch_unresolved;      /* an "auto" batch key had no spec value (reported); skip derivation */
    /* Added by the reliability work (zero.c). */
    ZgLoc loc_sub_group_size;   /* zero_optimization.sub_group_size (or the config's top level) */
    bool bias_correction;       /* optimizer.params.bias_correction (DeepSpeed default true) */
    /* Added by the infinity work (zero.c): the sizing keys the config set (ZG_SET_* bits; "auto"
    ** does not count). The planner sizes the others from the model and the declared host memory
    ** (plan.c) and honours the ones set. */
    unsigned sizes_set;
    /* Added by the "auto" work (zero.c, zero_auto.c, check.c): where each training setting came
    ** from (plan.txt / plan.json "training"), and the config's "auto" keys in file order, each
    ** printed once as it was resolved. */
    ZgFrom from[ZG_NS];
    int64_t warmup_num_steps_in;    /* warmup_num_steps as written or filled, before DeepSpeed's max(2, n) */
    ZgAutoKey *autos;
    int n_autos;
} ZgZero;

enum {
    ZG_SET_REDUCE_BUCKET = 1 << 0,      /* zero_optimization.reduce_bucket_size */
    ZG_SET_PREFETCH = 1 << 1,           /* stage3_prefetch_bucket_size */
    ZG_SET_MAX_LIVE = 1 << 2,           /* stage3_max_live_parameters */
    ZG_SET_SUB_GROUP = 1 << 3,          /* sub_group_size */
    ZG_SET_PARAM_BUF_COUNT = 1 << 4,    /* offload_param.buffer_count */
    ZG_SET_PARAM_BUF_SIZE = 1 << 5,     /* offload_param.buffer_size */
    ZG_SET_OPT_BUF_COUNT = 1 << 6,      /* offload_optimizer.buffer_count */
};

/* ======================================================================= spec.c / zero.c / check.c */
/* Parse the model spec. On return *m is filled with defaults where keys are absent; errors are
** reported through diag; the return value is the spec's `deepspeed:` node (a scalar path or an
** inline mapping) or NULL when absent. */
const ZgNode *zg_spec_load(const char *path, ZgModel *m);
/* Parse a DeepSpeed config (a file path, or the inline node from the spec). Both start from
** zg_zero_defaults(z). Batch values are resolved later by zg_check (which needs the final world
** size); call zg_check after any --world-size override. false if any error was reported. */
bool zg_zero_load_file(const char *path, const ZgModel *m, ZgZero *z);
bool zg_zero_load_node(const ZgNode *root, const char *file, const ZgModel *m, ZgZero *z);
/* Defaults exactly as DeepSpeed's code (docs/CONFIG.md); used before parsing and by tests. */
void zg_zero_defaults(ZgZero *z);
/* Cross-checks between spec and config that need both (batch arithmetic, offload/stage, ...). */
void zg_check(const ZgModel *m, ZgZero *z);
/* Added by the front end: loads the config the spec's `deepspeed:` node names (a path relative to the
** spec's folder, or an inline mapping). ds NULL -> error asking for -c or deepspeed:. */
bool zg_zero_load(const ZgNode *ds, const ZgModel *m, ZgZero *z);
/* Added by the "auto" work. spec_train.c: the train.* keys of ZgTrainArg (train.micro_batch_size,
** train.lr, train.betas, ...); true when `key` (below train:) is one of them, the value read or
** reported. zg_train_arg_set: the spec gives train.<k>. */
bool zg_spec_train_arg(const char *key, const ZgNode *v, ZgModel *m);
bool zg_train_arg_set(const ZgModel *m, ZgTrainArg k);
const char *zg_train_arg_name(ZgTrainArg k);                /* "train.lr" */
/* zero_auto.c: the resolution of each "auto" as one line per key on f ("zgen: FILE:LINE: KEY:
** "auto" -> VALUE (WHERE FROM)"), in file order; the dotted DeepSpeed name of a setting; its value
** as plan.txt shows it (malloc'd); a double as the shortest text that reads back the same. */
void zg_zero_print_auto(const ZgZero *z, FILE *f);
/* A warning when the spec gives setting s but the run uses another value (the config's, a default,
** a derivation); nothing when the values agree or the spec's filled it. */
void zg_zero_spec_unused(const ZgModel *m, const ZgZero *z, ZgSetting s);
const char *zg_setting_key(ZgSetting s);
char *zg_setting_text(const ZgZero *z, ZgSetting s);
char *zg_num_text(double x);
/* gen_args.c: argv[1..] as a shell command line (each word quoted where the shell needs it),
** without -o DIR and --world-size N: what regenerates this trainer for another world size. */
char *zg_gen_args(int argc, char *const argv[]);
/* --world-size: sets m->world_size and re-derives the gpus_per_node default (min(ws, 8)). */
void zg_model_set_world_size(ZgModel *m, int ws);
/* Defaults of a ZgModel (before parsing; tests). */
void zg_model_defaults(ZgModel *m);
/* true when s is a path safe to write into emitted code, Makefiles and shell lines: non-empty, at
** most 1024 bytes, no control characters, quotes, backslashes, '$' or spaces. */
bool zg_path_is_sane(const char *s);
/* Numbers as YAML/JSON write them ("5e8", "1.0e-5", "1024"). false if malformed. int64 accepts an
** integral value written as a float ("5e8") like DeepSpeed's pydantic models. */
bool zg_parse_int64(const char *s, int64_t *out);
bool zg_parse_double(const char *s, double *out);

/* ======================================================================= model.c: architectures */
/* An architecture is data, one file each (gen/arch_<name>.c, in gen/zg_arch.h's vocabulary): its
** tensor table with Hugging Face names, shapes, module, init and decay, its capabilities, layouts,
** emitted files and Hugging Face keys. Adding an arch is that file, a line in model.c's list,
** kernels and tests; the rest of the generator reads only this struct. */
/* An activation size in floats: a sum of terms, each a count times one product of the shape
** (B = micro-batch, T = seq_len, C = d_model, KV = n_kv_heads * head size, NH = n_heads). */
typedef struct ZgActsTerms {
    int btc;                    /* x B*T*C */
    int bt;                     /* x B*T (per-row statistics, losses) */
    int btkv;                   /* x B*T*KV (llama's k and v) */
    int btf;                    /* x B*T*d_ff */
    int btv;                    /* x B*T*vocab (logits) */
    int att;                    /* x B*NH*T*T (attention probabilities) */
    int rope;                   /* x T*head size (RoPE cos and sin tables) */
} ZgActsTerms;

/* One array of train-cuda's device activations (gen/cuda_dec.c sizes "acts" / "scratch" from a list
** of them; the arch's CUDA model adapter carves the same list, and dies at start-up if the bytes
** differ): n x the term's count x (4 bytes when f32, else the activation dtype's size). Lists end
** with n == 0. */
typedef enum {
    ZG_DA_BTC, ZG_DA_BT, ZG_DA_BTKV, ZG_DA_BTF, ZG_DA_BTV,
    ZG_DA_LSE,                  /* B*NH*T (log-sum-exp, softmax row sums) */
    ZG_DA_ROPE,                 /* T*head size/2 (one RoPE table) */
    ZG_DA_COLSUM,               /* zk_colsum.h's partials for B*T rows (always fp32) */
    ZG_DA_TOKBKT,               /* zk_tokbucket.h's token grouping (ints) */
} ZgDevTerm;
typedef struct ZgDevArr { int n; ZgDevTerm term; bool f32; } ZgDevArr;

typedef struct ZgArch {
    const char *name;           /* model.arch */
    const char *hf_model_type;  /* Hugging Face config.json "model_type" */
    const char *hf_class;       /* Hugging Face architectures[0], e.g. "LlamaForCausalLM" */
    const char *linear_layout;  /* how linear weights are stored: "[in, out]" or "[out, in]" */
    /* What the arch's kernels do; the front end, the tables and the adapters follow these, never
    ** the arch's name. */
    bool rope;                  /* rotary positions and grouped-query attention: n_kv_heads,
                                ** rope_theta apply */
    bool rope_scaling;          /* model.rope_scaling (LLaMA 3's frequency scaling) applies */
    bool qkv_bias;              /* separate q, k, v projections carry biases (ZG_QKV_BIAS) */
    bool gated_mlp;             /* a gated MLP (SwiGLU): d_ff has no default (else 4 * d_model) */
    bool tie_required;          /* lm_head must be the token embedding (tie_embeddings: true) */
    bool tie_default;           /* tie_embeddings when the spec does not say */
    bool ckpt_legacy_config;    /* checkpoints saved before their meta held the config.json rows
                                ** were this arch's: `zgen ckpt` writes their config from the shape */
    const char *emit_missing;   /* NULL: the emitted trainer runs this arch; else what it lacks
                                ** (zgen plans, estimates and writes plan.txt but refuses to emit) */
    const struct ZgArchModule *modules;     /* the tensor table (gen/zg_arch.h) */
    int n_modules;
    /* The trainer's files for this arch under templates/host/ (NULL-terminated): its host kernels
    ** and its model adapter (templates/trainer/train_model.h); render.c emits these and no others. */
    const char *const *host_files;
    const char *cuda_missing;   /* NULL: train-cuda runs this arch; else why not (the emitted
                                ** Makefile's cuda targets refuse with it; zgen notes it). A plan
                                ** may still be refused: gen/cuda_dec.c zg_cuda_missing */
    /* train-cuda's model adapter for this arch (templates/cuda_trainer/<file>, emitted into
    ** cuda/trainer/ under its base name) and its device activation layout: outside the blocks,
    ** one block's area, the scratch (ZgDevArr). */
    const char *cuda_adapter;
    const ZgDevArr *dev_fixed, *dev_layer, *dev_scratch;
    /* The host kernels' activation layout (memplan.c sizes "acts" and "scratch" from it): outside
    ** the blocks, per block, and the scratch. */
    ZgActsTerms acts_fixed, acts_layer, scratch;
    /* Hugging Face: config.json -> spec keys (hf.c), the values refused, the config.json rows of
    ** an export and an --init-from (hf_config.c), the checkpoint names --init-from skips (".x":
    ** any name ending so; NULL-terminated) and whether a tied checkpoint may still hold lm_head. */
    const struct ZgHfSpecKey *hf_keys;
    int n_hf_keys;
    const struct ZgHfRefusal *hf_refusals;
    int n_hf_refusals;
    const struct ZgHfRow *hf_rows;
    int n_hf_rows;
    const char *const *hf_ignore;
    bool hf_ignore_head_if_tied;
} ZgArch;
/* The arch named `name`, or NULL. The one lookup by name. */
const ZgArch *zg_arch_find(const char *name);
/* The arch whose Hugging Face model_type is `model_type`, or NULL. */
const ZgArch *zg_arch_find_hf(const char *model_type);
/* Every arch in turn: i = 0, 1, ... until NULL. Arch 0 (gpt2) is the default. */
const ZgArch *zg_arch_at(int i);
/* "gpt2, llama, qwen2": every arch, for messages; with `rope`, those with rotary embeddings. */
const char *zg_arch_names(void);
const char *zg_arch_rope_names(void);
/* Parameters of m's shape from its arch's table, in double so that absurd shapes are measured, not
** overflowed (0 for an unknown arch). */
double zg_arch_params(const ZgModel *m);

/* hf.c: `zgen --spec-from-hf CONFIG.json [-o SPEC.yaml] [--name NAME]`; argv[0] is the option. */
int zg_hf_main(int argc, char **argv);

/* hf_config.c: the Hugging Face config.json of the model as rows (values are JSON text) that the
** trainer writes on --export and checks on --init-from; the tensors a checkpoint may hold beyond
** the parameters. */
typedef struct ZgHfKey {
    const char *key;            /* config.json key; "a.b" = member b of object a (check only) */
    const char *alt;            /* another spelling transformers reads, or NULL */
    char *value;                /* this model's value, JSON text */
    const char *absent;         /* what transformers assumes when missing/null; NULL: required;
                                ** "": not checked when missing */
    bool write;                 /* in the exported config.json */
    bool check;                 /* an --init-from config.json must agree */
} ZgHfKey;
int zg_hf_config(const ZgModel *m, ZgHfKey **out);     /* rows in *out; 0 for an unknown arch */
void zg_hf_config_free(ZgHfKey *k, int n);
/* Names (".suffix": any name ending so) --init-from skips; *out is static. */
int zg_hf_ignore(const ZgModel *m, const char ***out);

/* The table of every DeepSpeed config key zgen knows (zero_keys.c), read by zero.c. */
typedef enum {
    ZG_KT_SECTION,              /* a mapping of further keys (or null = absent) */
    ZG_KT_BOOL, ZG_KT_INT, ZG_KT_NUM,
    ZG_KT_STR,                  /* one of `choices` when set ("none|cpu|nvme") */
    ZG_KT_PATH,                 /* a file system path (checked by zg_path_is_sane) */
    ZG_KT_PAIR,                 /* two numbers, e.g. betas [0.9, 0.999] */
    ZG_KT_ANY,                  /* any value: a whole feature section (def "off" = absent/disabled) */
} ZgKeyType;
typedef enum {
    ZG_KS_SUPPORTED,            /* takes effect in ZgZero */
    ZG_KS_ACCEPTED,             /* accepted silently: no effect on a zgen run (`why` says why) */
    ZG_KS_IGNORED,              /* warning when set to a non-default value: zgen ignores it */
    ZG_KS_UNSUPPORTED,          /* error when set to a non-default value: zgen cannot do it */
    ZG_KS_ALIAS,                /* another accepted spelling of `alias` (same section) */
    ZG_KS_DEPRECATED,           /* deprecated spelling of `alias`: warning, then used as `alias` */
} ZgKeySupport;
typedef struct ZgKey {
    const char *section;        /* dotted path of the enclosing section; "" = top level */
    const char *name;
    ZgKeyType type;
    ZgKeySupport support;
    const char *def;            /* DeepSpeed's code default as text; NULL = None */
    const char *alias;          /* ALIAS/DEPRECATED: the key it stands for */
    const char *why;            /* why accepted/ignored/unsupported, or what to do instead */
    double min, max;            /* INT/NUM range; both 0 = unchecked */
    const char *choices;        /* STR: allowed values; scheduler.params: schedulers taking it */
    size_t off;                 /* SUPPORTED with store != 0: offsetof(ZgZero, field) */
    char store;                 /* 'b' bool, 'i' int, 'l' int64_t, 'd' double; 0 = zero.c does it */
} ZgKey;
extern const ZgKey zg_zero_keys[];
extern const int zg_zero_nkeys;
/* Keys people invent (or copy from other tools) and what they mean in DeepSpeed. */
typedef struct ZgInventedKey {
    const char *name;
    const char *fix;            /* "did you mean ..." text */
} ZgInventedKey;
extern const ZgInventedKey zg_invented_keys[];
extern const int zg_n_invented_keys;
/* Reports an unknown key of `section` with the best suggestion the tables give (zero_keys.c). */
void zg_zero_unknown_key(const char *section, const char *key, ZgLoc at);

/* The candidate closest to `key` by edit distance when close enough to be a likely typo, else NULL. */
const char *zg_suggest(const char *key, const char *const *cands, int n);
/* Edit distance for "did you mean" (Levenshtein, case-insensitive). */
int zg_edit_distance(const char *a, const char *b);
/* Sizes like "80GiB", "512GB", "1.5e9" -> bytes. false if malformed. */
bool zg_parse_size(const char *s, int64_t *out);

/* ======================================================================= bounds (check.c, plan.c) */
/* What zgen plans at most, so that every figure of a plan fits in int64 and zgen's time and memory
** are bounded on any input (docs/CONFIG.md "Bounds"). Each refusal names the number and the bound. */
#define ZG_MAX_TRAIN_BATCH 2147483647               /* sequences per step: an int in the trainer */
#define ZG_MAX_ACT_BYTES ((int64_t)1 << 46)         /* activations + scratch of one micro-batch */
#define ZG_MAX_TABLE_ROWS 65536                     /* rows of all emitted tables of one plan */

/* ======================================================================= emit.c: temporary files */
/* Output is written to a temp file and renamed. Each temp file is registered while it exists, so
** that zg_emit_cleanup_on_signals' handler can unlink it on SIGINT/SIGTERM/SIGHUP before the signal
** takes its default action. register returns false when the table is full (the caller still
** unlinks on its own failure paths). */
bool zg_emit_tmp_register(const char *path);
void zg_emit_tmp_unregister(const char *path);
void zg_emit_cleanup_on_signals(void);

#endif
