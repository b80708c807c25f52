/*
** t_scaler.c — the fp16 dynamic loss scaler against train_ref.py's transcription of DeepSpeed's
** DynamicLossScaler.update_scale on fixed and random overflow patterns; static scale; checkpoint
** round trip of the state.
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
#define NPAT 10
#define PATLEN 300

static const char *script(void)
{
    static char p[1024];
    const char *root = getenv("ZT_ROOT");
    snprintf(p, sizeof p, "%s/tests/runtime/train_ref.py", root ? root : ".");
    return p;
}

static void t_against_deepspeed(void)
{
    static char pat[NPAT][PATLEN + 1];
    static char line[1 << 16];
    ZrScalerConfig cfg[NPAT];
    char in[] = "/tmp/zt_scaler_XXXXXX", cmd[2200];
    FILE *f, *p;
    int fd;
    unsigned seed = 12345;
    if (access(PY, X_OK) != 0 || access(script(), R_OK) != 0) ZT_SKIP("no %s or %s", PY, script());
    for (int i = 0; i < NPAT; i++) {
        zr_scaler_defaults(&cfg[i]);
        cfg[i].initial_scale_power = 4 + i % 5;
        cfg[i].loss_scale_window = 3 + i % 4;
        cfg[i].hysteresis = 1 + i % 3;
        cfg[i].consecutive_hysteresis = i % 2;
        cfg[i].min_loss_scale = i % 3 == 0 ? 1.0 : 4.0;
        for (int k = 0; k < PATLEN; k++) { /* bursts of overflows, varying density per pattern */
            seed = seed * 1103515245u + 12345u;
            pat[i][k] = ((seed >> 16) % 100) < (unsigned)(5 + 8 * (i % 4)) ? '1' : '0';
        }
        pat[i][PATLEN] = 0;
    }
    memcpy(pat[0], "1111111111111111111111", 22); /* drive the scale to its minimum */
    if ((fd = mkstemp(in)) < 0) ZT_SKIP("mkstemp");
    f = fdopen(fd, "w");
    for (int i = 0; i < NPAT; i++)
        fprintf(f, "%d %lld %d %d %.17g %s\n", cfg[i].initial_scale_power, (long long)cfg[i].loss_scale_window,
                cfg[i].hysteresis, cfg[i].consecutive_hysteresis, cfg[i].min_loss_scale, pat[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s scaler < %s", PY, script(), in);
    p = popen(cmd, "r");
    for (int i = 0; i < NPAT && p; i++) {
        ZrScaler s;
        char *tok, *save = NULL;
        int skipped = 0;
        if (!fgets(line, sizeof line, p)) { ZT_CHECKM(0, "python gave %d lines", i); break; }
        ZT_EQ_INT(zr_scaler_init(&s, &cfg[i]), 0);
        tok = strtok_r(line, " \n", &save);
        for (int k = 0; k < PATLEN && tok; k++, tok = strtok_r(NULL, " \n", &save)) {
            int skip = -1, rc = zr_scaler_update(&s, pat[i][k] == '1', &skip);
            if (!strcmp(tok, "RAISE")) {
                ZT_CHECKM(rc == -ERANGE, "pattern %d step %d: DeepSpeed raises at min scale, rc %d", i, k, rc);
                skipped += skip; /* the step is not applied either way */
                break;
            }
            ZT_CHECKM(rc == 0, "pattern %d step %d: rc %d", i, k, rc);
            ZT_CHECKM(skip == (pat[i][k] == '1'), "pattern %d step %d: skip %d", i, k, skip);
            skipped += skip;
            {
                double want = strtod(tok, NULL);
                int wh = atoi(strchr(tok, ':') + 1);
                ZT_CHECKM(s.scale == want && s.cur_hysteresis == wh,
                          "pattern %d step %d: scale %g hyst %d, DeepSpeed %g hyst %d", i, k, s.scale,
                          s.cur_hysteresis, want, wh);
            }
        }
        ZT_EQ_INT(s.skipped, skipped);
    }
    ZT_CHECK(p && pclose(p) == 0);
    unlink(in);
}

/* Defaults: 2^16, window 1000, hysteresis 2 — hand-checked sequence. */
static void t_defaults_by_hand(void)
{
    ZrScalerConfig c;
    ZrScaler s;
    int skip;
    zr_scaler_defaults(&c);
    ZT_EQ_INT(zr_scaler_init(&s, &c), 0);
    ZT_CHECK(s.scale == 65536.0);
    zr_scaler_update(&s, 1, &skip);          /* first overflow eats hysteresis */
    ZT_CHECK(skip == 1 && s.scale == 65536.0 && s.cur_hysteresis == 1);
    zr_scaler_update(&s, 1, &skip);          /* second halves */
    ZT_CHECK(skip == 1 && s.scale == 32768.0);
    for (int k = 0; k < 999; k++) zr_scaler_update(&s, 0, &skip);
    ZT_CHECK(s.scale == 32768.0);            /* 999 clean steps since the overflow at iter 1 */
    zr_scaler_update(&s, 0, &skip);
    ZT_CHECK(skip == 0 && s.scale == 65536.0 && s.cur_hysteresis == 2);
}

static void t_static_scale(void)
{
    ZrScalerConfig c;
    ZrScaler s;
    int skip;
    zr_scaler_defaults(&c);
    c.loss_scale = 128;
    ZT_EQ_INT(zr_scaler_init(&s, &c), 0);
    for (int k = 0; k < 50; k++) {
        ZT_EQ_INT(zr_scaler_update(&s, k % 7 == 0, &skip), 0);
        ZT_EQ_INT(skip, k % 7 == 0);
    }
    ZT_CHECK(s.scale == 128.0);
    c.hysteresis = 0;
    ZT_EQ_INT(zr_scaler_init(&s, &c), -EINVAL);
}

static void t_state_roundtrip(void)
{
    ZrScalerConfig c;
    ZrScaler a, b;
    uint8_t buf[ZR_SCALER_STATE_BYTES];
    int skip;
    zr_scaler_defaults(&c);
    c.loss_scale_window = 5;
    zr_scaler_init(&a, &c);
    for (int k = 0; k < 23; k++) zr_scaler_update(&a, k % 9 == 4, &skip);
    zr_scaler_save(&a, buf);
    zr_scaler_init(&b, &c);
    ZT_EQ_INT(zr_scaler_load(&b, buf), 0);
    ZT_CHECK(memcmp(&a, &b, sizeof a) == 0);
    /* continuing both gives the same trajectory */
    for (int k = 0; k < 40; k++) {
        zr_scaler_update(&a, k % 11 == 3, &skip);
        zr_scaler_update(&b, k % 11 == 3, &skip);
    }
    ZT_CHECK(a.scale == b.scale && a.iter == b.iter && a.cur_hysteresis == b.cur_hysteresis);
    c.loss_scale_window = 6;
    zr_scaler_init(&b, &c);
    ZT_EQ_INT(zr_scaler_load(&b, buf), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "window 5") != NULL);
    buf[0] ^= 1;
    zr_scaler_init(&b, &c);
    ZT_EQ_INT(zr_scaler_load(&b, buf), -EINVAL);
}

static void t_overflow_scan(void)
{
    float g[100];
    for (int i = 0; i < 100; i++) g[i] = (float)i - 50.0f;
    ZT_EQ_INT(zr_scaler_has_overflow(g, 100), 0);
    g[77] = INFINITY;
    ZT_CHECK(zr_scaler_has_overflow(g, 100));
    g[77] = -INFINITY;
    ZT_CHECK(zr_scaler_has_overflow(g, 100));
    g[77] = NAN;
    ZT_CHECK(zr_scaler_has_overflow(g, 100));
    ZT_EQ_INT(zr_scaler_has_overflow(g, 77), 0);
    g[77] = 3.0e38f;
    ZT_EQ_INT(zr_scaler_has_overflow(g, 100), 0);
}

int main(void)
{
    ZT_RUN(t_defaults_by_hand);
    ZT_RUN(t_static_scale);
    ZT_RUN(t_state_roundtrip);
    ZT_RUN(t_overflow_scan);
    ZT_RUN(t_against_deepspeed);
    return zt_end();
}
