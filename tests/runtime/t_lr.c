/*
** t_lr.c — zr_lr_at against tests/runtime/train_ref.py, a transcription of DeepSpeed's scheduler
** classes driven the way the engine drives them (lr read by optimizer.step(), scheduler.step() after
** each applied step). Exact agreement is expected up to libm rounding (1e-15 relative).
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "zr.h"
#include "zt.h"

#define PY "/usr/bin/python3"
#define STEPS 60

typedef struct { ZrLrSched s; const char *kind; const char *mask; } Case;

static const char *script(void)
{
    static char p[1024];
    const char *root = getenv("ZT_ROOT");
    snprintf(p, sizeof p, "%s/tests/runtime/train_ref.py", root ? root : ".");
    return p;
}

static void t_against_deepspeed(void)
{
    Case c[12];
    int n = 0;
    char in[] = "/tmp/zt_lr_XXXXXX", cmd[2200], line[1 << 16];
    FILE *f, *p;
    int fd;
    if (access(PY, X_OK) != 0 || access(script(), R_OK) != 0) ZT_SKIP("no %s or %s", PY, script());
    /* WarmupLR log / linear, W below and above the run, W=0 and 1 (raised to 2 by DeepSpeed) */
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP, 1e-3); c[n].s.warmup_min_lr = 1e-5; c[n].s.warmup_num_steps = 20;
    c[n].kind = "warmup"; c[n++].mask = "0";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP, 6e-4); c[n].s.warmup_num_steps = 10; c[n].s.warmup_type = ZR_WARMUP_LINEAR;
    c[n].kind = "warmup"; c[n++].mask = "0";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP, 3e-4); c[n].s.warmup_num_steps = 0;
    c[n].kind = "warmup"; c[n++].mask = "0";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP, 3e-4); c[n].s.warmup_num_steps = 1; c[n].s.warmup_type = ZR_WARMUP_LINEAR;
    c[n].kind = "warmup"; c[n++].mask = "0";
    /* WarmupDecayLR: decays to 0 before the run ends, and T < W */
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_DECAY, 1e-3); c[n].s.warmup_num_steps = 8; c[n].s.total_num_steps = 40;
    c[n].s.warmup_min_lr = 1e-4; c[n].kind = "decay"; c[n++].mask = "0";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_DECAY, 1e-3); c[n].s.warmup_num_steps = 30; c[n].s.total_num_steps = 20;
    c[n].s.warmup_type = ZR_WARMUP_LINEAR; c[n].kind = "decay"; c[n++].mask = "0";
    /* WarmupCosineLR: min ratios, past T, T == W */
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_COSINE, 2e-3); c[n].s.warmup_num_steps = 5; c[n].s.total_num_steps = 50;
    c[n].s.warmup_min_ratio = 0.1; c[n].s.cos_min_ratio = 0.05; c[n].kind = "cosine"; c[n++].mask = "0";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_COSINE, 1e-3); c[n].s.warmup_num_steps = 12; c[n].s.total_num_steps = 12;
    c[n].s.warmup_type = ZR_WARMUP_LINEAR; c[n].kind = "cosine"; c[n++].mask = "0";
    /* fp16 skipped steps: the scheduler does not advance on them */
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_DECAY, 1e-3); c[n].s.warmup_num_steps = 6; c[n].s.total_num_steps = 30;
    c[n].kind = "decay"; c[n++].mask = "0010001";
    zr_lr_defaults(&c[n].s, ZR_LR_WARMUP_COSINE, 1e-3); c[n].s.warmup_num_steps = 4; c[n].s.total_num_steps = 25;
    c[n].kind = "cosine"; c[n++].mask = "1100";

    if ((fd = mkstemp(in)) < 0) ZT_SKIP("mkstemp");
    f = fdopen(fd, "w");
    for (int i = 0; i < n; i++) {
        const ZrLrSched *s = &c[i].s;
        ZT_EQ_INT(zr_lr_check(s), 0);
        fprintf(f, "%s %.17g %.17g %.17g %lld %s %lld %.17g %.17g %d %s\n", c[i].kind, s->lr,
                s->warmup_min_lr, s->warmup_max_lr, (long long)s->warmup_num_steps,
                s->warmup_type == ZR_WARMUP_LOG ? "log" : "linear", (long long)s->total_num_steps,
                s->warmup_min_ratio, s->cos_min_ratio, STEPS, c[i].mask);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s lr < %s", PY, script(), in);
    p = popen(cmd, "r");
    for (int i = 0; i < n && p; i++) {
        char *tok, *save = NULL;
        int64_t applied = 0;
        size_t ml = strlen(c[i].mask);
        if (!fgets(line, sizeof line, p)) { ZT_CHECKM(0, "python gave %d lines", i); break; }
        tok = strtok_r(line, " \n", &save);
        for (int k = 0; k < STEPS; k++) {
            double want = tok ? strtod(tok, NULL) : NAN, got = zr_lr_at(&c[i].s, applied);
            ZT_CHECKM(fabs(got - want) <= 1e-15 * fabs(want) + 1e-300 || (got == 0 && want == 0),
                      "case %d (%s) step %d (applied %lld): %.17g vs DeepSpeed %.17g", i, c[i].kind, k,
                      (long long)applied, got, want);
            if (c[i].mask[k % ml] != '1') applied++;
            tok = strtok_r(NULL, " \n", &save);
        }
    }
    ZT_CHECK(p && pclose(p) == 0);
    unlink(in);
}

/* Hand-derived values: step 0 runs at the initial lr, step 1 at it = 0, step s at it = s - 1. */
static void t_indexing(void)
{
    ZrLrSched s;
    zr_lr_defaults(&s, ZR_LR_WARMUP, 1.0);
    s.warmup_num_steps = 4;
    s.warmup_type = ZR_WARMUP_LINEAR;
    ZT_NEAR(zr_lr_at(&s, 0), 0.0, 0, 0);     /* init: warmup_min_lr */
    ZT_NEAR(zr_lr_at(&s, 1), 0.0, 0, 0);     /* it 0: 0/4 */
    ZT_NEAR(zr_lr_at(&s, 2), 0.25, 0, 0);    /* it 1 */
    ZT_NEAR(zr_lr_at(&s, 5), 1.0, 0, 0);     /* it 4 = W: warm */
    s.warmup_type = ZR_WARMUP_LOG;
    ZT_NEAR(zr_lr_at(&s, 4), log(4.0) / log(4.0), 1e-15, 0); /* it 3: ln(4)/ln(4) */
    ZT_NEAR(zr_lr_at(&s, 2), log(2.0) / log(4.0), 1e-15, 0);
    zr_lr_defaults(&s, ZR_LR_CONSTANT, 0.5);
    ZT_NEAR(zr_lr_at(&s, 0), 0.5, 0, 0);
    ZT_NEAR(zr_lr_at(&s, 1000), 0.5, 0, 0);
}

static void t_check(void)
{
    ZrLrSched s;
    zr_lr_defaults(&s, ZR_LR_WARMUP_DECAY, 1e-3);
    ZT_EQ_INT(zr_lr_check(&s), -EINVAL); /* no total_num_steps */
    ZT_CHECK(strstr(zr_train_error(), "total_num_steps") != NULL);
    s.total_num_steps = 100;
    ZT_EQ_INT(zr_lr_check(&s), 0);
    s.warmup_type = 7;
    ZT_EQ_INT(zr_lr_check(&s), -EINVAL);
    zr_lr_defaults(&s, ZR_LR_WARMUP_COSINE, 1e-3);
    s.total_num_steps = 10;
    s.cos_min_ratio = 1.5;
    ZT_EQ_INT(zr_lr_check(&s), -EINVAL);
}

int main(void)
{
    ZT_RUN(t_indexing);
    ZT_RUN(t_check);
    ZT_RUN(t_against_deepspeed);
    return zt_end();
}
