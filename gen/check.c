/*
** check.c — checks that need both the spec and the config: the batch triple against the final world
** size (DeepSpeed's _set_batch_related_parameters / _batch_assertion), and spec/config agreement.
**
** Runs after zero.c and after any --world-size override, which is why the batch derivation lives
** here and not in zero.c. Errors show the arithmetic, so the user sees which number to change.
** Every product of user-given numbers is checked (DeepSpeed's config model takes 1e18 for each batch
** key; their product must not overflow here), and the batch and one micro-batch's activations are
** bounded (zg.h "bounds") before the planner forms its own products from them.
*/
#include "zg_plan.h"

static long long ll(int64_t x) { return (long long)x; }

/* a * b * c; false when it does not fit in int64 */
static bool mul3(int64_t a, int64_t b, int64_t c, int64_t *out)
{
    int64_t ab;
    return !__builtin_mul_overflow(a, b, &ab) && !__builtin_mul_overflow(ab, c, out);
}

static void overflow(ZgLoc at, int64_t mb, int64_t gas, int64_t ws)
{
    zg_error(at, "train_micro_batch_size_per_gpu %lld x gradient_accumulation_steps %lld x world size %lld "
             "does not fit in 64 bits", ll(mb), ll(gas), ll(ws));
    zg_note(at, "DeepSpeed's config model accepts each number, but the trainer holds train_batch_size in an "
            "int: at most %d sequences per optimizer step", ZG_MAX_TRAIN_BATCH);
}

/* false after reporting an error (the later checks then have no batch to work with) */
static bool batch(const ZgModel *m, ZgZero *z)
{
    int64_t ws = m->world_size;
    bool tb = z->tb_given, mb = z->micro_given, gas = z->gas_given;
    /* "auto" train_batch_size without spec value: HF's rule, micro x accumulation x world size. */
    if (tb && mb && gas) {
        /* all given: only the assertion */
    } else if (tb && mb) {
        z->grad_accum = z->train_batch_size / z->micro_batch / ws;
    } else if (tb && gas) {
        z->micro_batch = z->train_batch_size / ws / z->grad_accum;
    } else if (mb && gas) {
        if (!mul3(z->micro_batch, z->grad_accum, ws, &z->train_batch_size)) {
            overflow(z->loc_micro, z->micro_batch, z->grad_accum, ws);
            return false;
        }
    } else if (tb) {
        z->grad_accum = 1;
        z->micro_batch = z->train_batch_size / ws;
    } else if (mb) {
        z->grad_accum = 1;
        if (!mul3(z->micro_batch, 1, ws, &z->train_batch_size)) {
            overflow(z->loc_micro, z->micro_batch, 1, ws);
            return false;
        }
    } else if (z->from[ZG_S_TB].kind == ZG_FROM_AUTO) {
        ZgLoc at = z->from[ZG_S_TB].at;
        zg_error(at, "train_batch_size is \"auto\" (micro x accumulation x world size, as HF computes it) but "
                 "the config has no train_micro_batch_size_per_gpu");
        zg_note(at, "add train_micro_batch_size_per_gpu: a number, or \"auto\" with train.micro_batch_size in the spec");
        return false;
    } else if (gas) {
        zg_error(z->loc_gas, "gradient_accumulation_steps alone does not fix the batch size");
        zg_note(z->loc_gas, "add train_micro_batch_size_per_gpu (or train.micro_batch_size in the spec with \"auto\")");
        return false;
    } else {
        zg_error(z->loc_root, "the config sets neither train_batch_size nor train_micro_batch_size_per_gpu");
        zg_note(z->loc_root, "add train_micro_batch_size_per_gpu (DeepSpeed needs one of them too)");
        return false;
    }
    ZgLoc at = tb ? z->loc_tb : mb ? z->loc_micro : z->loc_gas;
    if (z->micro_batch < 1 || z->grad_accum < 1) {
        zg_error(at, "train_batch_size %lld is too small for world size %lld: %s", ll(z->train_batch_size), ll(ws),
                 z->micro_batch < 1 ? "less than one sample per rank" : "less than one accumulation step");
        zg_note(at, "train_batch_size must be at least train_micro_batch_size_per_gpu x world size");
        return false;
    }
    int64_t prod;
    if (!mul3(z->micro_batch, z->grad_accum, ws, &prod)) {
        overflow(at, z->micro_batch, z->grad_accum, ws);
        return false;
    }
    if (z->train_batch_size != prod) {
        zg_error(at, "train_batch_size %lld != train_micro_batch_size_per_gpu %lld x gradient_accumulation_steps %lld x world size %lld = %lld",
                 ll(z->train_batch_size), ll(z->micro_batch), ll(z->grad_accum), ll(ws), ll(prod));
        if (tb && mb && !gas)
            zg_note(at, "%lld is not divisible by micro-batch %lld x world size %lld", ll(z->train_batch_size),
                    ll(z->micro_batch), ll(ws));
        else if (tb && gas && !mb)
            zg_note(at, "%lld is not divisible by accumulation steps %lld x world size %lld",
                    ll(z->train_batch_size), ll(z->grad_accum), ll(ws));
        else if (tb && !mb && !gas)
            zg_note(at, "%lld is not divisible by world size %lld", ll(z->train_batch_size), ll(ws));
        else
            zg_note(at, "DeepSpeed asserts train_batch_size = micro x accumulation x data-parallel world size");
        static const struct { ZgSetting s; const char *key; } b[] = {
            {ZG_S_MICRO, "train_micro_batch_size_per_gpu"}, {ZG_S_GAS, "gradient_accumulation_steps"},
            {ZG_S_TB, "train_batch_size"}};
        for (int i = 0; i < 3; i++)     /* a number the user did not write in the config */
            if (z->from[b[i].s].kind == ZG_FROM_SPEC || z->from[b[i].s].kind == ZG_FROM_AUTO)
                zg_note(at, "%s comes from %s", b[i].key, z->from[b[i].s].src ? z->from[b[i].s].src : "spec");
        return false;
    }
    /* where the derived ones came from (plan.txt "training") */
    const char *arith = zg_fmt("micro %lld x accumulation %lld x world size %lld", ll(z->micro_batch),
                               ll(z->grad_accum), ll(ws));
    if (z->from[ZG_S_TB].kind == ZG_FROM_AUTO && !z->from[ZG_S_TB].src) z->from[ZG_S_TB].src = arith;
    else if (!tb) z->from[ZG_S_TB] = (ZgFrom){ZG_FROM_DERIVED, arith, z->loc_root};
    if (!mb) z->from[ZG_S_MICRO] = (ZgFrom){ZG_FROM_DERIVED, gas ? "train_batch_size / (accumulation x world size)"
                                            : "train_batch_size / world size (1 accumulation step)", z->loc_root};
    if (!gas) z->from[ZG_S_GAS] = (ZgFrom){ZG_FROM_DERIVED, mb && tb ? "train_batch_size / (micro x world size)"
                                           : "1 (DeepSpeed's rule when one batch key is given)", z->loc_root};
    if (z->train_batch_size > ZG_MAX_TRAIN_BATCH) {
        zg_error(at, "train_batch_size %lld exceeds %d, the most sequences per step zgen plans",
                 ll(z->train_batch_size), ZG_MAX_TRAIN_BATCH);
        zg_note(at, "DeepSpeed accepts it, but the emitted trainer holds the batch sizes in an int; "
                "lower train_micro_batch_size_per_gpu or gradient_accumulation_steps");
        return false;
    }
    return true;
}

/* One micro-batch's activations and backward scratch in bytes (the terms memplan.c adds up from the
** arch's layout, ZgArch acts_fixed / acts_layer / scratch), in double so that absurd shapes are
** measured rather than overflowed; memplan.c forms those terms in int64 only after this holds. */
static double act_terms(const ZgModel *m, double B, const ZgActsTerms *t)
{
    double T = (double)m->seq_len, BT = B * T, C = (double)m->d_model, NH = (double)m->n_heads;
    double hs = m->n_heads > 0 ? C / NH : 0, kv = m->n_kv_heads > 0 ? (double)m->n_kv_heads * hs : C;
    return t->btc * BT * C + t->bt * BT + t->btkv * BT * kv + t->btf * BT * (double)m->d_ff
         + t->btv * BT * (double)m->vocab_size + t->att * B * NH * T * T + t->rope * T * hs;
}

static double acts_estimate(const ZgModel *m, double B)
{
    const ZgArch *a = zg_arch_find(m->arch);
    if (!a) a = zg_arch_at(0);          /* an unknown arch is reported by zg_model_build */
    double acts = act_terms(m, B, &a->acts_fixed) + (double)m->n_layers * act_terms(m, B, &a->acts_layer);
    return 4 * (acts + act_terms(m, B, &a->scratch));
}

void zg_check(const ZgModel *m, ZgZero *z)
{
    if (!z->loc_root.file) return;      /* no config was parsed: its loader has reported why */
    if (m->allow_tf32 && z->dtype != ZG_DTYPE_FP32) {
        /* Inert, not wrong: accepted with a warning, as zero.c treats keys zgen ignores. */
        zg_warn(m->loc_allow_tf32, "train.allow_tf32 has no effect in %s plan: zgen allows TF32 only for "
                "fp32 plans", z->dtype == ZG_DTYPE_BF16 ? "a bf16" : "an fp16");
        zg_note(m->loc_allow_tf32, "a%s plan's GEMMs take %s operands on tensor cores already (fp32 sums)",
                z->dtype == ZG_DTYPE_BF16 ? " bf16" : "n fp16", z->dtype == ZG_DTYPE_BF16 ? "bf16" : "fp16");
    }
    if (m->speculative_step == 1 && !zg_plan_host_state(z)) {
        /* Inert, like allow_tf32 above: the plan has no host-side Adam to speculate with. */
        zg_warn(m->loc_speculative_step, "train.speculative_step has no effect in this plan: the speculative "
                "optimizer step needs zero_optimization.offload_optimizer.device cpu at stage 1 or 2");
        zg_note(m->loc_speculative_step, "there Adam runs on the host after backward; elsewhere it runs on the "
                "device (or streams through NVMe), where there is nothing to overlap it with");
    }
    if (m->device_grad_accum == 1 && !zg_plan_grad_acc_applies(z)) {
        zg_warn(m->loc_device_grad_accum, "train.device_grad_accum has no effect in this plan: gradient "
                "accumulation on the device needs ZeRO stage 2 or 3, offload_optimizer.device cpu and "
                "gradient_accumulation_steps above 1");
        zg_note(m->loc_device_grad_accum, "elsewhere the gradients either accumulate on the device already "
                "(the optimizer on the device; stage 0/1's flat buffer) or reach the host once per step");
    }
    if (m->device_optimizer != 0 && !zg_plan_dev_opt_applies(z)) {
        zg_warn(m->loc_device_optimizer, "train.device_optimizer has no effect in this plan: it keeps part of "
                "a CPU optimizer's state on the device, at ZeRO stage 2 with offload_optimizer.device cpu");
        zg_note(m->loc_device_optimizer, "with offload_optimizer none the whole optimizer is on the device already; "
                "zgen does not split it at stages 0, 1 and 3 or with the state on NVMe");
    }
    if (m->world_size < 1) {
        zg_error(m->loc_world_size, "world size must be at least 1");
        return;
    }
    if (!z->batch_unresolved && !batch(m, z)) return;
    if (!z->batch_unresolved)
        for (ZgSetting s = ZG_S_MICRO; s <= ZG_S_TB; s++) zg_zero_spec_unused(m, z, s);
    if (z->micro_batch > 0 && m->seq_len > 0 && z->micro_batch > ((int64_t)1 << 40) / m->seq_len) {
        zg_error(z->loc_micro, "micro-batch %lld x seq_len %lld tokens is beyond what zgen plans",
                 ll(z->micro_batch), ll(m->seq_len));
        return;
    }
    double acts = acts_estimate(m, (double)z->micro_batch);
    if (z->micro_batch > 0 && acts > (double)ZG_MAX_ACT_BYTES) {
        zg_error(z->loc_micro, "one micro-batch's activations take %.3g bytes (micro-batch %lld x seq_len %lld, "
                 "d_model %lld, n_heads %lld, vocab_size %lld); zgen plans at most %lld bytes (64 TiB) per rank",
                 acts, ll(z->micro_batch), ll(m->seq_len), ll(m->d_model), ll(m->n_heads), ll(m->vocab_size),
                 ll(ZG_MAX_ACT_BYTES));
        zg_note(z->loc_micro, "lower train_micro_batch_size_per_gpu or train.seq_len (the attention scores alone "
                "are micro-batch x n_heads x seq_len^2 floats); no device holds more, and the bound keeps every "
                "byte count of the plan inside 64 bits");
    }
}
