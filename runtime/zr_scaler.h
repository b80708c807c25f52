/*
** zr_scaler.h — fp16 dynamic loss scaling with DeepSpeed's rules (runtime/fp16/loss_scaler.py,
** DynamicLossScaler.update_scale), and a static scale when loss_scale > 0.
** After each step's overflow check: overflow -> the step is skipped; if hysteresis is exhausted
** (cur_hysteresis == 1) the scale halves (not below min_loss_scale), else cur_hysteresis -= 1; the
** overflow iteration is remembered. Clean step -> with consecutive_hysteresis cur_hysteresis is reset;
** when (iter - last_overflow_iter) % loss_scale_window == 0 the scale doubles (and, without
** consecutive_hysteresis, cur_hysteresis is reset). iter counts every update, skipped or not.
*/
#ifndef ZR_SCALER_H
#define ZR_SCALER_H
#include <stdint.h>

typedef struct ZrScalerConfig {
    double loss_scale;          /* > 0: static scale; 0: dynamic (DeepSpeed default) */
    int initial_scale_power;    /* 16 */
    int64_t loss_scale_window;  /* 1000 */
    int hysteresis;             /* 2 */
    int consecutive_hysteresis; /* 0 */
    double min_loss_scale;      /* 1 */
    int raise_at_min;           /* 1: an overflow at min_loss_scale with hysteresis spent is an error */
} ZrScalerConfig;

typedef struct ZrScaler {
    ZrScalerConfig cfg;
    double scale;               /* current loss scale */
    int cur_hysteresis;
    int64_t iter;               /* updates so far */
    int64_t last_overflow_iter; /* -1 before any */
    int64_t skipped;            /* steps skipped so far */
} ZrScaler;

void zr_scaler_defaults(ZrScalerConfig *c);
int zr_scaler_init(ZrScaler *s, const ZrScalerConfig *c);
/* Records the outcome of a step. *skip = 1 when the optimizer step must be skipped (overflow).
** Returns 0, or -ERANGE when overflowing at the minimum scale with raise_at_min (DeepSpeed raises). */
int zr_scaler_update(ZrScaler *s, int overflow, int *skip);
/* Nonzero when any of n values is inf or NaN. */
int zr_scaler_has_overflow(const float *g, int64_t n);

/* Fixed little-endian serialisation for the checkpoint blob "scaler". */
#define ZR_SCALER_STATE_BYTES 64
void zr_scaler_save(const ZrScaler *s, uint8_t out[ZR_SCALER_STATE_BYTES]);
/* Restores the dynamic state; the config must match the saved one (-EINVAL otherwise). */
int zr_scaler_load(ZrScaler *s, const uint8_t in[ZR_SCALER_STATE_BYTES]);
#endif
