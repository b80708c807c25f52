/*
** zr_rng.c — Philox4x32-10 and the initialisers built on it. Counter-based: there is no generator
** state to carry, so any rank computes any element's value directly (zr_rng.h gives the mapping).
** Box-Muller keeps only the cosine branch so each element costs one Philox block and no element
** depends on its neighbour.
*/
#include <errno.h>
#include <math.h>
#include "zr_err.h"
#include "zr_rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */
#define STREAM_TAG 0x5A52494Eu /* "ZRIN": separates init numbers from any other use of the key */

static inline void philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)PHILOX_M0 * c[0], p1 = (uint64_t)PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

void zr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = { ctr[0], ctr[1], ctr[2], ctr[3] }, k[2] = { key[0], key[1] };
    int r;
    for (r = 0; r < 10; r++) {
        if (r) { k[0] += PHILOX_W0; k[1] += PHILOX_W1; }
        philox_round(c, k);
    }
    out[0] = c[0]; out[1] = c[1]; out[2] = c[2]; out[3] = c[3];
}

/* The four words of element i of tensor t. */
static inline void block(uint64_t seed, uint32_t t, int64_t i, uint32_t o[4])
{
    uint32_t ctr[4] = { (uint32_t)(uint64_t)i, (uint32_t)((uint64_t)i >> 32), t, STREAM_TAG };
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    zr_philox4x32_10(ctr, key, o);
}

#define TWO_M53 (1.0 / 9007199254740992.0) /* 2^-53 */

static inline uint64_t bits53(uint32_t hi, uint32_t lo) { return ((uint64_t)hi << 32 | lo) >> 11; }

void zr_rng_uniform(uint64_t seed, uint32_t tensor, int64_t first, int64_t n, double *dst)
{
    int64_t k;
    for (k = 0; k < n; k++) {
        uint32_t o[4];
        block(seed, tensor, first + k, o);
        dst[k] = (double)bits53(o[2], o[3]) * TWO_M53;
    }
}

void zr_rng_normal(uint64_t seed, uint32_t tensor, int64_t first, int64_t n, double std, float *dst)
{
    int64_t k;
    for (k = 0; k < n; k++) {
        uint32_t o[4];
        double u1, u2;
        block(seed, tensor, first + k, o);
        u1 = ((double)bits53(o[0], o[1]) + 0.5) * TWO_M53; /* (0,1): log never sees 0 */
        u2 = (double)bits53(o[2], o[3]) * TWO_M53;
        dst[k] = (float)(std * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
}

int zr_rng_init_slice(const ZrTensorRow *row, uint32_t tensor, uint64_t seed, int n_layers,
                      int64_t first, int64_t n, float *dst)
{
    int64_t k;
    if (first < 0 || n < 0 || first + n > row->numel)
        return zr_train_fail(-EINVAL, "init %s: elements [%lld, %lld) outside its %lld", row->name,
                             (long long)first, (long long)(first + n), (long long)row->numel);
    switch (row->init) {
    case ZR_INIT_NORMAL: {
        double std = 0.02;
        if (row->residual_proj) {
            if (n_layers < 1) return zr_train_fail(-EINVAL, "init %s: n_layers %d", row->name, n_layers);
            std /= sqrt(2.0 * n_layers);
        }
        zr_rng_normal(seed, tensor, first, n, std, dst);
        return 0;
    }
    case ZR_INIT_ZEROS:
        for (k = 0; k < n; k++) dst[k] = 0.0f;
        return 0;
    case ZR_INIT_ONES:
        for (k = 0; k < n; k++) dst[k] = 1.0f;
        return 0;
    default:
        return zr_train_fail(-EINVAL, "init %s: unknown init kind %d", row->name, row->init);
    }
}
