/*
** t_rng.c — Philox4x32-10 against the Random123 known-answer vectors, and the property the trainer
** relies on: a tensor's init values do not depend on how it is split across ranks.
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "zr.h"
#include "zt.h"

/* Random123 kat_vectors, philox4x32 with 10 rounds: counter, key, expected output. */
static void t_philox_kat(void)
{
    static const struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        { { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
        { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
          { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
        { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
          { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        zr_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int k = 0; k < 4; k++)
            ZT_CHECKM(out[k] == kat[i].out[k], "vector %zu word %d: %08x, expected %08x", i, k, out[k],
                      kat[i].out[k]);
    }
}

/* Whole tensor vs the slices of world sizes 1..7 (uneven splits as ZeRO-3 partitions make). */
static void t_shard_independent(void)
{
    enum { N = 1001 };
    static float whole[N], part[N];
    zr_rng_normal(1234, 5, 0, N, 0.02, whole);
    for (int ws = 1; ws <= 7; ws++) {
        int64_t chunk = (N + ws - 1) / ws;
        for (int r = 0; r < ws; r++) {
            int64_t b = r * chunk, e = b + chunk < N ? b + chunk : N;
            if (b < e) zr_rng_normal(1234, 5, b, e - b, 0.02, part + b);
        }
        ZT_CHECKM(memcmp(whole, part, sizeof whole) == 0, "world %d differs", ws);
    }
    /* reverse order of generation gives the same values too */
    for (int64_t i = N - 1; i >= 0; i--) zr_rng_normal(1234, 5, i, 1, 0.02, part + i);
    ZT_CHECK(memcmp(whole, part, sizeof whole) == 0);
}

/* Different seeds / tensors / elements give different streams. */
static void t_streams_differ(void)
{
    float a[64], b[64], c[64];
    int same_ab = 0, same_ac = 0;
    zr_rng_normal(1, 0, 0, 64, 1.0, a);
    zr_rng_normal(2, 0, 0, 64, 1.0, b);
    zr_rng_normal(1, 1, 0, 64, 1.0, c);
    for (int i = 0; i < 64; i++) { same_ab += a[i] == b[i]; same_ac += a[i] == c[i]; }
    ZT_CHECK(same_ab == 0);
    ZT_CHECK(same_ac == 0);
    /* element index above 2^32 uses the high counter word */
    zr_rng_normal(1, 0, (int64_t)1 << 32, 1, 1.0, b);
    ZT_CHECK(b[0] != a[0]);
}

/* Moments of normal(0, std): mean, std, 4th moment and tail mass within sampling error. */
static void t_normal_moments(void)
{
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    double *u = malloc(N * sizeof *u);
    double s1 = 0, s2 = 0, s4 = 0, us = 0;
    int tail = 0, u_out = 0;
    zr_rng_normal(42, 3, 0, N, 0.02, x);
    for (int i = 0; i < N; i++) {
        double v = x[i] / 0.02;
        s1 += v; s2 += v * v; s4 += v * v * v * v;
        tail += fabs(v) > 3.0;
    }
    s1 /= N; s2 /= N; s4 /= N;
    ZT_NEAR(s1, 0.0, 5.0 / sqrt(N), 0);          /* 5 sigma */
    ZT_NEAR(s2, 1.0, 5.0 * sqrt(2.0 / N), 0);
    ZT_NEAR(s4, 3.0, 5.0 * sqrt(96.0 / N), 0);
    ZT_NEAR(tail / (double)N, 0.0026998, 5.0 * sqrt(0.0027 / N), 0); /* P(|z|>3) */
    zr_rng_uniform(42, 3, 0, N, u);
    for (int i = 0; i < N; i++) { us += u[i]; u_out += u[i] < 0.0 || u[i] >= 1.0; }
    ZT_EQ_INT(u_out, 0);
    ZT_NEAR(us / N, 0.5, 5.0 * sqrt(1.0 / 12 / N), 0);
    free(x);
    free(u);
}

/* The mapping zr_rng.h and docs/TRAINER_FORMATS.md promise, rebuilt here from the Philox block. */
static void t_documented_mapping(void)
{
    const uint64_t seed = 0x123456789abcdefULL;
    const int64_t idx[] = { 0, 1, 77, ((int64_t)3 << 32) + 5 };
    for (size_t k = 0; k < sizeof idx / sizeof idx[0]; k++) {
        uint32_t ctr[4] = { (uint32_t)idx[k], (uint32_t)(idx[k] >> 32), 9, 0x5A52494E };
        uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) }, o[4];
        double u1, u2, z, u;
        float got;
        zr_philox4x32_10(ctr, key, o);
        u1 = ((double)((((uint64_t)o[0] << 32) | o[1]) >> 11) + 0.5) / 9007199254740992.0;
        u2 = (double)((((uint64_t)o[2] << 32) | o[3]) >> 11) / 9007199254740992.0;
        z = 0.5 * sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
        zr_rng_normal(seed, 9, idx[k], 1, 0.5, &got);
        ZT_CHECKM(got == (float)z, "element %lld: %.9g vs %.9g", (long long)idx[k], got, (double)(float)z);
        zr_rng_uniform(seed, 9, idx[k], 1, &u);
        ZT_CHECK(u == u2);
    }
}

static void t_init_slice(void)
{
    ZrTensorRow w = { .name = "h.0.attn.c_proj.weight", .ndim = 2, .shape = { 64, 64 }, .numel = 4096,
                      .init = ZR_INIT_NORMAL, .residual_proj = 1 };
    ZrTensorRow g = { .name = "h.0.ln_1.weight", .ndim = 1, .shape = { 64 }, .numel = 64, .init = ZR_INIT_ONES };
    ZrTensorRow bias = { .name = "h.0.ln_1.bias", .ndim = 1, .shape = { 64 }, .numel = 64, .init = ZR_INIT_ZEROS };
    static float a[4096], ref[4096];
    int ones = 1, zeros = 1;
    ZT_EQ_INT(zr_rng_init_slice(&w, 7, 99, 8, 0, 4096, a), 0);
    zr_rng_normal(99, 7, 0, 4096, 0.02 / sqrt(16.0), ref);
    ZT_CHECK(memcmp(a, ref, sizeof a) == 0);
    w.residual_proj = 0;
    ZT_EQ_INT(zr_rng_init_slice(&w, 7, 99, 8, 100, 50, a), 0);
    zr_rng_normal(99, 7, 100, 50, 0.02, ref);
    ZT_CHECK(memcmp(a, ref, 50 * sizeof *a) == 0);
    ZT_EQ_INT(zr_rng_init_slice(&g, 8, 99, 8, 0, 64, a), 0);
    for (int i = 0; i < 64; i++) ones &= a[i] == 1.0f;
    ZT_CHECK(ones);
    ZT_EQ_INT(zr_rng_init_slice(&bias, 9, 99, 8, 10, 54, a), 0);
    for (int i = 0; i < 54; i++) zeros &= a[i] == 0.0f;
    ZT_CHECK(zeros);
    ZT_EQ_INT(zr_rng_init_slice(&bias, 9, 99, 8, 10, 55, a), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "h.0.ln_1.bias") != NULL);
}

int main(void)
{
    ZT_RUN(t_philox_kat);
    ZT_RUN(t_shard_independent);
    ZT_RUN(t_streams_differ);
    ZT_RUN(t_normal_moments);
    ZT_RUN(t_documented_mapping);
    ZT_RUN(t_init_slice);
    return zt_end();
}
