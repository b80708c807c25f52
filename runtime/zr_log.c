/*
** zr_log.c — the JSONL run log and the progress line; failures are explained through zr_err.h.
** Numbers use fixed formats (%.9g for floats, which round-trips fp32 and
** keeps lines short) so two runs that computed the same values write the same bytes.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zr_afile.h"
#include "zr_err.h"
#include "zr_log.h"

/* %.9g, or null for inf/NaN, which JSON cannot spell. */
static int put_num(char *buf, size_t cap, double v)
{
    if (!isfinite(v)) return snprintf(buf, cap, "null");
    return snprintf(buf, cap, "%.9g", v);
}

int zr_log_format(char *buf, size_t cap, const ZrLogStep *s)
{
    static const char *const keys[] = { "loss", "lr", "grad_norm", "loss_scale" };
    double vals[4] = { s->loss, s->lr, s->grad_norm, s->loss_scale };
    size_t n = 0;
    int k;
#define ADD(expr)                                                   \
    do {                                                            \
        int w_ = (expr);                                            \
        if (w_ < 0 || (size_t)w_ >= cap - n) return -ENOSPC;        \
        n += (size_t)w_;                                            \
    } while (0)
    if (cap == 0) return -ENOSPC;
    ADD(snprintf(buf + n, cap - n, "{\"step\":%lld", (long long)s->step));
    for (k = 0; k < 4; k++) {
        ADD(snprintf(buf + n, cap - n, ",\"%s\":", keys[k]));
        ADD(put_num(buf + n, cap - n, vals[k]));
    }
    ADD(snprintf(buf + n, cap - n, ",\"skipped\":%d,\"tokens_per_s\":", s->skipped ? 1 : 0));
    ADD(put_num(buf + n, cap - n, s->tokens_per_s));
    ADD(snprintf(buf + n, cap - n, ",\"ms\":"));
    ADD(put_num(buf + n, cap - n, s->ms));
    if (s->speculation) ADD(snprintf(buf + n, cap - n, ",\"speculation\":\"%s\"", s->speculation));
    if (s->has_val) {
        ADD(snprintf(buf + n, cap - n, ",\"val_loss\":"));
        ADD(put_num(buf + n, cap - n, s->val_loss));
        ADD(snprintf(buf + n, cap - n, ",\"val_tokens\":%lld", (long long)s->val_tokens));
    }
    ADD(snprintf(buf + n, cap - n, "}"));
#undef ADD
    return (int)n;
}

int zr_log_open(ZrLog *lg, const char *path, int append)
{
    lg->f = fopen(path, append ? "a" : "w");
    if (!lg->f) {
        int e = errno;
        return zr_train_fail(-e, "log %s: cannot open: %s", path, strerror(e));
    }
    return 0;
}

int zr_log_open_at(ZrLog *lg, const char *path, int64_t first_step)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    ZrAfile a;
    int rc;
    lg->f = NULL;
    if (!f) {
        if (errno != ENOENT) {
            int e = errno;
            return zr_train_fail(-e, "log %s: cannot read: %s", path, strerror(e));
        }
        return zr_log_open(lg, path, 0);
    }
    if ((rc = zr_afile_open(&a, path)) != 0) { fclose(f); return rc; }
    while ((n = getline(&line, &cap, f)) > 0 && !rc) {
        long long step;
        if (sscanf(line, "{\"step\":%lld", &step) == 1 && step >= first_step) continue;
        rc = zr_afile_write(&a, line, (size_t)n);
    }
    free(line);
    fclose(f);
    if (rc) { zr_afile_abort(&a); return rc; }
    if ((rc = zr_afile_commit(&a)) != 0) return rc;
    return zr_log_open(lg, path, 1);
}

int zr_log_step(ZrLog *lg, const ZrLogStep *s)
{
    char line[512];
    int n = zr_log_format(line, sizeof line - 1, s);
    if (n < 0) return zr_train_fail(n, "log: line too long");
    line[n++] = '\n';
    if (!lg->f || fwrite(line, 1, (size_t)n, lg->f) != (size_t)n || fflush(lg->f) != 0)
        return zr_train_fail(-EIO, "log: write failed at step %lld", (long long)s->step);
    return 0;
}

int zr_log_close(ZrLog *lg)
{
    int rc = 0;
    if (lg->f && fclose(lg->f) != 0) rc = zr_train_fail(-EIO, "log: close failed");
    lg->f = NULL;
    return rc;
}

void zr_progress(FILE *f, const ZrLogStep *s, int64_t total_steps, const char *mem)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "step %6lld/%lld | loss %.6f | lr %.2e | norm %.4f | %.0f tok/s | %.1f ms",
                     (long long)s->step, (long long)total_steps, s->loss, s->lr, s->grad_norm,
                     s->tokens_per_s, s->ms);
    if (s->has_val && n > 0 && (size_t)n < sizeof buf)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " | val %.6f", s->val_loss);
    if (s->skipped && n > 0 && (size_t)n < sizeof buf)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " | skipped (overflow, scale %g)",
                      s->loss_scale);
    if (mem && *mem && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " | %s", mem);
    fprintf(f, "%s\n", buf);
    fflush(f);
}
