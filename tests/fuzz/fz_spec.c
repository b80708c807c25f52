/*
** fz_spec.c — libFuzzer harness for the generator's front end through the plan: spec YAML (and a
** DeepSpeed config, JSON or YAML) -> checks -> model IR -> partition, schedule and memory plan, as
** bin/zgen runs them (gen/main.c's pipeline) but writing nothing. Input: the spec text, optionally
** followed by the separator line "#--config--" and a config, which is then written next to the
** spec as ds.json and loaded as `-c ds.json` would be. Diagnostics are kept quiet; a crash, a
** sanitizer report or a hang (libFuzzer's -timeout) is the finding.
** The generator frees nothing by design, so run with -detect_leaks=0 and, for long runs, -fork so
** each child's memory is returned (tests/fuzz/run.sh does both).
*/
#include "fz_util.h"
#include "zg_plan.h"
#include "zg_plan.h"

static const char SEP[] = "\n#--config--\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fz_scratch();
    zg_diag_quiet(true);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ZgModel m;
    static ZgZero z;
    static ZgPlan p;
    char spec[512], cfg[512];
    const uint8_t *cut = memmem(data, size, SEP, sizeof SEP - 1);
    size_t slen = cut ? (size_t)(cut - data) : size;
    const ZgNode *ds;
    memset(&m, 0, sizeof m);
    memset(&z, 0, sizeof z);
    memset(&p, 0, sizeof p);
    zg_diag_reset();
    snprintf(spec, sizeof spec, "%s/spec.yaml", fz_scratch());
    snprintf(cfg, sizeof cfg, "%s/ds.json", fz_scratch());
    fz_write(spec, data, slen);
    if (cut) fz_write(cfg, cut + sizeof SEP - 1, size - slen - (sizeof SEP - 1));
    else unlink(cfg);
    ds = zg_spec_load(spec, &m);
    if (zg_error_count() && !ds && !cut) return 0;
    if (cut) zg_zero_load_file(cfg, &m, &z);
    else zg_zero_load(ds, &m, &z);
    zg_check(&m, &z);
    if (zg_error_count()) return 0;
    if (!zg_model_build(&m, &p) || !zg_plan_build(&m, &z, &p)) return 0;
    return 0;
}
