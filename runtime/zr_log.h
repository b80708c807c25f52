/*
** zr_log.h — the run log (JSONL, one object per optimizer step) and the human progress line. Its
** calls fail with a negative errno and the text in zr_train_error() (zr_err.h).
** Log line, keys always in this order, floats with %.9g, non-finite values as null:
**   {"step":12,"loss":5.12,"lr":0.0006,"grad_norm":1.5,"loss_scale":65536,"skipped":0,
**    "tokens_per_s":10234.5,"ms":101.2}
** then ,"speculation":"kept"|"redone"|"undone" when the plan speculates (the speculative step's
** outcome: its second copy committed, redone because the step clipped, undone because it skipped),
** and ,"val_loss":x,"val_tokens":n before the closing brace when has_val (n: the targets scored). loss_scale is 1 without fp16.
** step counts optimizer steps from 0, skipped ones included.
*/
#ifndef ZR_LOG_H
#define ZR_LOG_H
#include <stdint.h>
#include <stdio.h>

typedef struct ZrLogStep {
    int64_t step;
    double loss;                /* mean cross-entropy over the global batch */
    double lr;                  /* lr used by this step */
    double grad_norm;           /* global norm before clipping (unscaled) */
    double loss_scale;          /* fp16 scale used for this step; 1 otherwise */
    int skipped;                /* 1: fp16 overflow, no update */
    double tokens_per_s;
    double ms;                  /* wall time of the step */
    const char *speculation;    /* "kept", "redone", "undone", or NULL (no speculative step) */
    int has_val;
    double val_loss;
    int64_t val_tokens;         /* targets the evaluation scored */
} ZrLogStep;

typedef struct ZrLog {
    FILE *f;
} ZrLog;

/* Opens path for the log (append != 0 keeps earlier lines, for --resume). */
int zr_log_open(ZrLog *lg, const char *path, int append);
/* For --resume at step first_step: keeps the lines of earlier steps, drops those of steps >=
** first_step (logged after the checkpoint by a run that then died), rewrites the file atomically
** and opens it for appending. A missing file is created. */
int zr_log_open_at(ZrLog *lg, const char *path, int64_t first_step);
/* Writes one line and flushes it. */
int zr_log_step(ZrLog *lg, const ZrLogStep *s);
int zr_log_close(ZrLog *lg);
/* The JSON object (no newline) into buf; returns its length or -ENOSPC. */
int zr_log_format(char *buf, size_t cap, const ZrLogStep *s);
/* One human line: "step   12/100 | loss 5.123456 | lr 6.00e-04 | norm 1.5000 | 10234 tok/s | 101.2 ms"
** then " | skipped (overflow, scale 32768)" and " | " mem when given (e.g. "dev 1.2 GiB host 3 GiB"). */
void zr_progress(FILE *f, const ZrLogStep *s, int64_t total_steps, const char *mem);
#endif
