/*
** spec_train.c — the spec's train.* keys that stand for Hugging Face TrainingArguments: the batch
** sizes, the optimizer's hyper-parameters, the warmup, the clipping norm and the precision. A
** DeepSpeed config written for HF's Trainer says "auto" where HF would put those arguments; zgen
** fills them from these keys (zero_auto.c), so the spec is where a run's numbers are written once.
**
** Each key is optional; ZgModel.loc_train[k] records whether and where the spec gives it, because
** for several of them 0 is a real value (weight decay, warmup steps, an off clipping norm).
*/
#include <string.h>
#include "zg.h"

static const char *const names[ZG_NTA] = {
    [ZG_TA_MICRO] = "micro_batch_size", [ZG_TA_BATCH] = "batch_size", [ZG_TA_GAS] = "grad_accum",
    [ZG_TA_LR] = "lr", [ZG_TA_BETAS] = "betas", [ZG_TA_EPS] = "eps", [ZG_TA_WD] = "weight_decay",
    [ZG_TA_WARMUP] = "warmup_steps", [ZG_TA_CLIP] = "max_grad_norm", [ZG_TA_DTYPE] = "dtype",
};

const char *zg_train_arg_name(ZgTrainArg k)
{
    static const char *const full[ZG_NTA] = {
        [ZG_TA_MICRO] = "train.micro_batch_size", [ZG_TA_BATCH] = "train.batch_size",
        [ZG_TA_GAS] = "train.grad_accum", [ZG_TA_LR] = "train.lr", [ZG_TA_BETAS] = "train.betas",
        [ZG_TA_EPS] = "train.eps", [ZG_TA_WD] = "train.weight_decay",
        [ZG_TA_WARMUP] = "train.warmup_steps", [ZG_TA_CLIP] = "train.max_grad_norm",
        [ZG_TA_DTYPE] = "train.dtype",
    };
    return (unsigned)k < ZG_NTA ? full[k] : "train.?";
}

bool zg_train_arg_set(const ZgModel *m, ZgTrainArg k)
{
    if (m->loc_train[k].file) return true;
    /* tests (and older callers) set these four directly, 0 meaning absent */
    switch (k) {
    case ZG_TA_MICRO: return m->train_micro_batch > 0;
    case ZG_TA_BATCH: return m->train_batch > 0;
    case ZG_TA_GAS: return m->train_grad_accum > 0;
    case ZG_TA_LR: return m->train_lr > 0;
    default: return false;
    }
}

static bool read_betas(const ZgNode *v, const char *what, ZgModel *m)
{
    double b[2];
    if (v->kind != ZG_NSEQ || v->n != 2) {
        zg_error(v->loc, "%s must be a list of two numbers, e.g. [0.9, 0.999]", what);
        return false;
    }
    for (int i = 0; i < 2; i++)
        if (!zg_node_num(v->vals[i], what, 0, 1, &b[i])) return false;
    if (b[0] >= 1 || b[1] >= 1) {
        zg_error(v->loc, "%s must be below 1, not [%g, %g]", what, b[0], b[1]);
        zg_note(v->loc, "Adam's bias correction divides by 1 - beta^t (HF's defaults: [0.9, 0.999])");
        return false;
    }
    m->train_beta1 = b[0], m->train_beta2 = b[1];
    return true;
}

static bool read_dtype(const ZgNode *v, const char *what, ZgModel *m)
{
    const char *s;
    if (!zg_node_str(v, what, &s)) return false;
    if (!strcmp(s, "bf16")) m->train_dtype = ZG_DTYPE_BF16;
    else if (!strcmp(s, "fp16")) m->train_dtype = ZG_DTYPE_FP16;
    else if (!strcmp(s, "fp32")) m->train_dtype = ZG_DTYPE_FP32;
    else {
        zg_error(v->loc, "%s must be bf16, fp16 or fp32, not '%s'", what, s);
        zg_note(v->loc, "it fills the config's bf16.enabled / fp16.enabled \"auto\" as HF's --bf16 / --fp16 do");
        return false;
    }
    return true;
}

bool zg_spec_train_arg(const char *key, const ZgNode *v, ZgModel *m)
{
    int k = 0;
    while (k < ZG_NTA && strcmp(names[k], key)) k++;
    if (k == ZG_NTA) return false;
    const char *what = zg_train_arg_name((ZgTrainArg)k);
    bool ok = false;
    double d;
    int64_t i;
    switch ((ZgTrainArg)k) {
    case ZG_TA_MICRO: ok = zg_node_int(v, what, 1, 1 << 20, &m->train_micro_batch); break;
    case ZG_TA_BATCH: ok = zg_node_int(v, what, 1, (int64_t)1 << 40, &m->train_batch); break;
    case ZG_TA_GAS: ok = zg_node_int(v, what, 1, 1 << 20, &m->train_grad_accum); break;
    case ZG_TA_LR:
        if ((ok = zg_node_num(v, what, 0, 10, &d)) && d <= 0) {
            zg_error(v->loc, "train.lr must be positive, not %g", d);
            ok = false;
        }
        if (ok) m->train_lr = d;
        break;
    case ZG_TA_BETAS: ok = read_betas(v, what, m); break;
    case ZG_TA_EPS: ok = zg_node_num(v, what, 0, 1, &m->train_eps); break;
    case ZG_TA_WD: ok = zg_node_num(v, what, 0, 1e6, &m->train_weight_decay); break;
    case ZG_TA_WARMUP:
        if ((ok = zg_node_int(v, what, 0, (int64_t)1e12, &i))) m->train_warmup_steps = i;
        break;
    case ZG_TA_CLIP: ok = zg_node_num(v, what, 0, 1e18, &m->train_max_grad_norm); break;
    case ZG_TA_DTYPE: ok = read_dtype(v, what, m); break;
    case ZG_NTA: zg_unreachable();
    }
    if (ok) m->loc_train[k] = v->loc;
    return true;
}
