/*
** zr_rng.h — counter-based random numbers for initialisation: Philox4x32-10 (Salmon et al., SC'11).
** A value depends only on (seed, tensor index, element index), never on the order or the rank that
** computes it, so each shard generates its own slice and the weights are the same for every world
** size and ZeRO stage.
** Element i of tensor t: one Philox call with counter {lo32(i), hi32(i), t, 0x5A52494E} and key
** {lo32(seed), hi32(seed)}; words (x0,x1) give u1 = (53-bit integer + 0.5) / 2^53 in (0,1), words
** (x2,x3) give u2 = 53-bit integer / 2^53 in [0,1); the normal is Box-Muller's
** sqrt(-2 ln u1) * cos(2 pi u2), in double, times std, rounded once to fp32.
*/
#ifndef ZR_RNG_H
#define ZR_RNG_H
#include <stdint.h>
#include "zr_plan.h"

/* One Philox4x32-10 block: out = philox(ctr, key). */
void zr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* dst[k] = normal(0, std) of element first + k of tensor `tensor`, k = 0 .. n-1. */
void zr_rng_normal(uint64_t seed, uint32_t tensor, int64_t first, int64_t n, double std, float *dst);
/* dst[k] = uniform in [0,1) of element first + k (the u2 above). */
void zr_rng_uniform(uint64_t seed, uint32_t tensor, int64_t first, int64_t n, double *dst);

/* docs/SPEC.md's init for elements [first, first+n) of table row `row` (tensor index `tensor`):
** ZR_INIT_NORMAL: normal(0, 0.02), divided by sqrt(2 * n_layers) when residual_proj;
** ZR_INIT_ZEROS: 0; ZR_INIT_ONES: 1. -EINVAL when the range is outside the tensor. */
int zr_rng_init_slice(const ZrTensorRow *row, uint32_t tensor, uint64_t seed, int n_layers,
                      int64_t first, int64_t n, float *dst);
#endif
