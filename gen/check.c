/*
** check.c — checks that need both the spec and the config: the batch triple against the final world
** size (DeepSpeed's _set_batch_related_parameters / _batch_assertion), and spec/config agreement.
**
** Runs after zero.c and after any --world-size override, which is why the batch derivation lives
** here and not in zero.c. Errors show the arithmetic, so the user sees which number to change.
*/
#include "zg.h"

static long long ll(int64_t x) { return (long long)x; }

static void batch(const ZgModel *m, ZgZero *z)
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
        z->train_batch_size = z->micro_batch * z->grad_accum * ws;
    } else if (tb) {
        z->grad_accum = 1;
        z->micro_batch = z->train_batch_size / ws;
    } else if (mb) {
        z->grad_accum = 1;
        z->train_batch_size = z->micro_batch * ws;
    } else if (gas) {
        zg_error(z->loc_gas, "gradient_accumulation_steps alone does not fix the batch size");
        zg_note(z->loc_gas, "add train_micro_batch_size_per_gpu (or train.micro_batch_size in the spec with \"auto\")");
        return;
    } else {
        zg_error(z->loc_root, "the config sets neither train_batch_size nor train_micro_batch_size_per_gpu");
        zg_note(z->loc_root, "add train_micro_batch_size_per_gpu (DeepSpeed needs one of them too)");
        return;
    }
    ZgLoc at = tb ? z->loc_tb : mb ? z->loc_micro : z->loc_gas;
    if (z->micro_batch < 1 || z->grad_accum < 1) {
        zg_error(at, "train_batch_size %lld is too small for world size %lld: %s", ll(z->train_batch_size), ll(ws),
                 z->micro_batch < 1 ? "less than one sample per rank" : "less than one accumulation step");
        zg_note(at, "train_batch_size must be at least train_micro_batch_size_per_gpu x world size");
        return;
    }
    if (z->train_batch_size != z->micro_batch * z->grad_accum * ws) {
        zg_error(at, "train_batch_size %lld != train_micro_batch_size_per_gpu %lld x gradient_accumulation_steps %lld x world size %lld = %lld",
                 ll(z->train_batch_size), ll(z->micro_batch), ll(z->grad_accum), ll(ws),
                 ll(z->micro_batch * z->grad_accum * ws));
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
    }
}

void zg_check(const ZgModel *m, ZgZero *z)
{
    if (!z->loc_root.file) return;      /* no config was parsed: its loader has reported why */
    if (m->world_size < 1) {
        zg_error(m->loc_world_size, "world size must be at least 1");
        return;
    }
    if (!z->batch_unresolved) batch(m, z);
    if (z->micro_batch > 0 && m->seq_len > 0 && z->micro_batch > ((int64_t)1 << 40) / m->seq_len)
        zg_error(z->loc_micro, "micro-batch %lld x seq_len %lld tokens is beyond what zgen plans",
                 ll(z->micro_batch), ll(m->seq_len));
}
