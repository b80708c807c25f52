/*
** zr_scaler.c — fp16 loss scaling, DeepSpeed's DynamicLossScaler rules transcribed (zr_scaler.h),
** with the state kept in plain integers/doubles so a checkpoint restores it exactly.
*/
#include <errno.h>
#include <math.h>
#include <string.h>
#include "zr_err.h"
#include "zr_scaler.h"

#define SCALER_MAGIC 0x4353525Au /* "ZRSC" little endian */
#define SCALER_VERSION 1u

void zr_scaler_defaults(ZrScalerConfig *c)
{
    c->loss_scale = 0.0;
    c->initial_scale_power = 16;
    c->loss_scale_window = 1000;
    c->hysteresis = 2;
    c->consecutive_hysteresis = 0;
    c->min_loss_scale = 1.0;
    c->raise_at_min = 1;
}

int zr_scaler_init(ZrScaler *s, const ZrScalerConfig *c)
{
    memset(s, 0, sizeof *s);
    if (c->loss_scale < 0 || c->loss_scale_window < 1 || c->hysteresis < 1 ||
        !(c->min_loss_scale > 0) || c->initial_scale_power < 0 || c->initial_scale_power > 126)
        return zr_train_fail(-EINVAL,
                             "fp16: need loss_scale >= 0, loss_scale_window >= 1, hysteresis >= 1, "
                             "min_loss_scale > 0, 0 <= initial_scale_power <= 126");
    s->cfg = *c;
    s->scale = c->loss_scale > 0 ? c->loss_scale : ldexp(1.0, c->initial_scale_power);
    s->cur_hysteresis = c->hysteresis;
    s->iter = 0;
    s->last_overflow_iter = -1;
    return 0;
}

int zr_scaler_update(ZrScaler *s, int overflow, int *skip)
{
    int rc = 0;
    *skip = overflow ? 1 : 0;
    if (overflow) s->skipped++;
    if (s->cfg.loss_scale > 0) { /* static scale: overflow still skips, the scale never moves */
        s->iter++;
        return 0;
    }
    if (overflow) {
        if (s->cfg.hysteresis == 1 || s->cur_hysteresis == 1) {
            if (s->scale == s->cfg.min_loss_scale && s->cfg.raise_at_min)
                rc = zr_train_fail(-ERANGE, "fp16: gradient overflow with the loss scale already at "
                                   "min_loss_scale %g; lower the lr or use bf16", s->scale);
            else
                s->scale = fmax(s->scale / 2.0, s->cfg.min_loss_scale);
        } else {
            s->cur_hysteresis--;
        }
        s->last_overflow_iter = s->iter;
    } else {
        if (s->cfg.consecutive_hysteresis) s->cur_hysteresis = s->cfg.hysteresis;
        if ((s->iter - s->last_overflow_iter) % s->cfg.loss_scale_window == 0) {
            if (!s->cfg.consecutive_hysteresis) s->cur_hysteresis = s->cfg.hysteresis;
            s->scale *= 2.0;
        }
    }
    s->iter++;
    return rc;
}

int zr_scaler_has_overflow(const float *g, int64_t n)
{
    int64_t i;
    int bad = 0;
    /* x - x is 0 for finite x and NaN for inf/NaN: one branch-free test per element */
    for (i = 0; i < n; i++) bad |= (g[i] - g[i]) != 0.0f;
    return bad;
}

static void put64(uint8_t *p, uint64_t v)
{
    int k;
    for (k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    int k;
    for (k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}
static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Layout: magic u32, version u32, scale f64, cur_hysteresis u32, hysteresis u32, iter i64,
** last_overflow_iter i64, skipped i64, loss_scale_window i64, min_loss_scale f64. */
void zr_scaler_save(const ZrScaler *s, uint8_t out[ZR_SCALER_STATE_BYTES])
{
    memset(out, 0, ZR_SCALER_STATE_BYTES);
    put64(out, (uint64_t)SCALER_VERSION << 32 | SCALER_MAGIC);
    put64(out + 8, dbits(s->scale));
    put64(out + 16, (uint64_t)(uint32_t)s->cfg.hysteresis << 32 | (uint32_t)s->cur_hysteresis);
    put64(out + 24, (uint64_t)s->iter);
    put64(out + 32, (uint64_t)s->last_overflow_iter);
    put64(out + 40, (uint64_t)s->skipped);
    put64(out + 48, (uint64_t)s->cfg.loss_scale_window);
    put64(out + 56, dbits(s->cfg.min_loss_scale));
}

int zr_scaler_load(ZrScaler *s, const uint8_t in[ZR_SCALER_STATE_BYTES])
{
    uint64_t head = get64(in), hy = get64(in + 16);
    if ((uint32_t)head != SCALER_MAGIC || head >> 32 != SCALER_VERSION)
        return zr_train_fail(-EINVAL, "fp16 scaler state: bad magic or version");
    if ((int)(hy >> 32) != s->cfg.hysteresis || (int64_t)get64(in + 48) != s->cfg.loss_scale_window ||
        bitsd(get64(in + 56)) != s->cfg.min_loss_scale)
        return zr_train_fail(-EINVAL, "fp16 scaler state: saved with hysteresis %d, window %lld, "
                             "min_loss_scale %g; this run has %d, %lld, %g",
                             (int)(hy >> 32), (long long)get64(in + 48), bitsd(get64(in + 56)),
                             s->cfg.hysteresis, (long long)s->cfg.loss_scale_window,
                             s->cfg.min_loss_scale);
    s->scale = bitsd(get64(in + 8));
    s->cur_hysteresis = (int)(uint32_t)hy;
    s->iter = (int64_t)get64(in + 24);
    s->last_overflow_iter = (int64_t)get64(in + 32);
    s->skipped = (int64_t)get64(in + 40);
    return 0;
}
