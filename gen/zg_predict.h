/*
** zg_predict.h — the cost model: a hardware profile (hw.c) and the predicted step of a plan on it
** (predict.c, predict_out.c). docs/PREDICT.md gives every figure's source and the arithmetic.
**
** The model replays the plan's schedule (ZgSchedule: micro-steps, the last micro-step, the
** optimizer step) as ops on resources ("streams"): each op gets a duration from the profile and
** starts when its stream is free and its dependencies (the schedule's waits, a bucket buffer or a
** gather slot being free again, a swap-in before Adam) have finished. The step is the time the
** last op ends; the critical path is walked back from it and the resource with the most time on
** it is the bottleneck. It is a prediction, never a measurement.
*/
#ifndef ZG_PREDICT_H
#define ZG_PREDICT_H
#include "zg.h"
#include "zg_plan.h"

/* The resources ops run on. With a host profile (no separate device) compute, collectives, H2D,
** D2H and the optimizer all run on the CPU cores, so they share ZG_RES_COMPUTE. */
typedef enum {
    ZG_RES_COMPUTE,             /* the device's kernels (host: the host kernels on the CPU cores) */
    ZG_RES_NET,                 /* collectives */
    ZG_RES_H2D, ZG_RES_D2H,     /* PCIe (or NVLink-C2C) copies */
    ZG_RES_NVME_READ, ZG_RES_NVME_WRITE,
    ZG_RES_CPU,                 /* CPU work of an offloaded optimizer: Adam, gradient accumulation */
    ZG_NRES
} ZgRes;

/* A hardware profile. Rates are what the model divides by (practical figures: a spec-sheet peak
** times the efficiency stated with it). Bandwidths in bytes/s, compute in FLOP/s. */
#define ZG_HW_MAX_WIDTHS 8
typedef struct ZgHw {
    const char *name;
    bool host;                  /* the host backend: the "device" is the CPU and its memory */
    double peak_flops[3];       /* dense matmul peak per ZgDtype (fp32, bf16, fp16): MFU's denominator */
    double mm_eff;              /* fraction of the peak matmuls reach */
    double attn_eff;            /* fraction of the peak attention reaches */
    double mem_bw;              /* device memory (HBM; host: DRAM) bandwidth, practical */
    double h2d_bw, d2h_bw;
    double nvme_read_bw, nvme_write_bw;
    double net_bw;              /* collective bus bandwidth (nccl-tests busbw) */
    double net_lat_s;           /* fixed cost of one collective */
    double cpu_adam_rate;       /* parameters/s of the fused CPU Adam (16-bit grads in and out) */
    double host_mem_bw;         /* host DRAM bandwidth (gradient accumulation, norm on the CPU) */
    double op_overhead_s;       /* fixed cost of one compute op of the schedule (launches, sync) */
    /* Host profiles: the host kernels' rates measured at a few model widths (bench/calibrate);
    ** a plan uses the entry whose d_model is nearest its own (ratio distance), else the figures
    ** above. Kernel efficiency depends on the shapes: small matmuls run slower. */
    int n_widths;
    struct ZgHwWidth {
        double d_model, matmul_flops, attn_flops, mem_bw;
    } widths[ZG_HW_MAX_WIDTHS];
    /* Added by the TF32 work: the dense TF32 tensor-core peak, what fp32 GEMMs reach when the plan
    ** allows TF32 (gen/cuda_dec.c's zg_cuda_tf32); host profiles: the fp32 figure (no TF32). */
    double tf32_flops;
} ZgHw;

/* Host kernels' elementwise bytes per token per block forward, in units of d_model x 4 bytes: the
** two LayerNorms (read x, write y); GELU and the residual adds are fused into the linear layers and
** timed with them. Backward moves twice as much. bench/calibrate times the LayerNorms with the same
** count, so the two stay consistent. */
#define ZG_HOST_ELEM_C 4.0
/* The same for the target GPU design: two fused residual+LayerNorm kernels, each reading x and the
** residual and writing the sum and the normalised output (activation dtype). */
#define ZG_DEV_ELEM_C 8.0
#define ZG_BWD_FACTOR 2.0

/* hw.c: the built-in profile `name` (h100-sxm, h100-pcie, a100-80gb, h200, gh200, host); false if
** there is none. */
bool zg_hw_builtin(const char *name, ZgHw *hw);
/* hw.c: "h100-sxm, h100-pcie, ..." for messages. */
const char *zg_hw_builtin_names(void);
/* hw.c: a profile file (JSON or YAML, the keys in docs/PREDICT.md). Keys absent from the file keep
** the values of the built-in profile named by its "base" key (default "host"). false after
** reporting each bad key at its file:line:col. */
bool zg_hw_load(const char *path, ZgHw *hw);
/* hw.c: a built-in name, else a file path; an unknown name that is no file is reported. */
bool zg_hw_get(const char *name_or_path, ZgHw *hw);
/* hw.c: writes hw as a profile file that zg_hw_load reads back (the calibration uses it). */
void zg_hw_write(const ZgHw *hw, FILE *f);

/* One predicted op on the timeline. */
typedef struct ZgPredEvent {
    int res;                    /* ZgRes */
    int kind;                   /* ZgOpKind, or ZG_NOPS + ZgPredExtra */
    int arg;
    int micro;                  /* micro-step index (gas = the optimizer step) */
    double start, dur;          /* seconds from the start of the step */
    int pred;                   /* the event whose end decided this start; -1 at t = 0 */
} ZgPredEvent;

/* Work the schedule implies without a separate op (ZgPredEvent.kind - ZG_NOPS). */
typedef enum {
    ZG_PX_D2H,                  /* reduced gradient part to the host (optimizer offloaded) */
    ZG_PX_ACCUM,                /* adding it into grad32 (host with an offloaded optimizer) */
    ZG_PX_H2D,                  /* updated 16-bit parameters back to the device */
    ZG_PX_NVME_READ,            /* a parameter span read from NVMe before its H2D */
    ZG_PX_NORM,                 /* gradient norm / overflow check before Adam */
    ZG_NPX
} ZgPredExtra;

typedef struct ZgPrediction {
    double step_s;              /* one optimizer step (gas micro-steps + the optimizer step) */
    double tokens_per_step;     /* all ranks */
    double tokens_per_s;
    double model_flops;         /* per rank per step: (6N + 6*L*C*T) * tokens (no recompute) */
    double mfu;                 /* model_flops / step_s / peak_flops[dtype] */
    double busy_s[ZG_NRES];     /* total busy time of each resource */
    double crit_s[ZG_NRES];     /* time of each resource on the critical path */
    double crit_kind_s[ZG_NOPS + ZG_NPX];   /* time of each op kind on the critical path */
    int bottleneck;             /* ZgRes with the most critical-path time */
    int bottleneck_kind;        /* the op kind with the most critical-path time on it */
    ZgPredEvent *ev; int n_ev;
} ZgPrediction;

/* predict.c */
void zg_predict(const ZgPlan *p, const ZgHw *hw, ZgPrediction *out);
/* predict.c: the matmul peak the plan runs at on hw (FLOP/s) and its name: the TF32 peak for an fp32
** plan that allows TF32 on a GPU profile ("tf32"), else the plan's dtype's ("fp32", "bf16", "fp16").
** The op times and MFU use it. */
double zg_predict_peak(const ZgPlan *p, const ZgHw *hw, const char **which);
const char *zg_res_name(int r);
/* "forward", "H2D of parameters", ...: what an event kind is, for the summary */
const char *zg_pred_kind_name(int kind);
/* predict_out.c: Chrome/Perfetto trace of the predicted step (temp + rename); false on I/O error. */
bool zg_predict_write_trace(const ZgPlan *p, const ZgPrediction *pr, const char *path);
/* advise.c: faster plans that fit. Each single change zgen tries (every parameter persistent on
** the device, the parameters not offloaded, 2x/4x/8x the micro-batch at the same train_batch_size,
** no activation checkpointing, the optimizer not offloaded) is planned, kept where it fits the
** spec's declared hardware (hardware.device_memory must be declared), and predicted on the same
** profile; those at least 3 % faster than pr, fastest first. */
#define ZG_ADVICE_MAX 3
typedef struct ZgAdvice {
    const char *what;           /* the change, as the user would write it */
    bool same_bits;             /* it moves bytes or recomputes: the trained bits stay the same */
    double step_s, tokens_per_s, mfu;
    int64_t device_bytes;       /* device memory the changed plan needs per rank, with the headroom */
} ZgAdvice;
typedef struct ZgAdviceList {
    int n, tried;               /* reported; planned that fit */
    ZgAdvice a[ZG_ADVICE_MAX];
    const char *why_none;       /* n == 0: why (for the summary) */
} ZgAdviceList;
void zg_advise(const ZgPlan *p, const ZgHw *hw, const ZgPrediction *pr, ZgAdviceList *out);
/* predict_out.c: the summary (text) or one JSON object (json); adv (may be NULL): zg_advise's
** faster plans, after the summary (JSON: "faster", a list of {change, same_bits, step_s,
** tokens_per_s, mfu, device_bytes}). */
void zg_predict_print(const ZgPlan *p, const ZgHw *hw, const ZgPrediction *pr, const ZgAdviceList *adv,
                      bool json, FILE *f);
/* predict_out.c: the one-line verdict, e.g. "this plan is PCIe H2D-bound: 0.9 s of 2.1 s per
** step is H2D of parameters" (static buffer). */
const char *zg_predict_verdict(const ZgPrediction *pr);

#endif
