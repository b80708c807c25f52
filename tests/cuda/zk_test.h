/*
** zk_test.h — helpers for the kernel emulation tests (tests/cuda/t_k_*.cpp).
**
** A kernel test binary runs each kernel file at several shape sets and storage types. Shapes are
** compile-time macros, so the test includes the kernel file once per set, each time inside its own
** namespace, through the self-include pattern:
**     #ifndef ZK_BODY  ... main part: #define the set, namespace s1 { #include __FILE__ }, #undef ...
**     #else            ... the body: #include the kernel .cu, define `static void run(void)`
** zk_common.cuh is included here at global scope, once, so only its per-set part (the ZK_IO type)
** lands in the namespaces.
** Comparisons follow llm.c: |got - want| <= tol + eps |want|, eps chosen for the storage type.
*/
#ifndef ZK_TEST_H
#define ZK_TEST_H
#include <stdint.h>
#include <vector>
#include "zt.h"
#define ZK_NO_SHAPES
#include "kernels/zk_common.cuh"
#undef ZK_IO
extern "C" {
#include "zk_host.h"
}

/* Deterministic inputs: xorshift64*, uniform in [lo, hi). */
static uint64_t zk_rng_state = 0x9e3779b97f4a7c15ull;
static inline void zk_seed(uint64_t s) { zk_rng_state = s * 0x9e3779b97f4a7c15ull + 1; }
static inline float zk_uniform(float lo, float hi)
{
    zk_rng_state ^= zk_rng_state >> 12;
    zk_rng_state ^= zk_rng_state << 25;
    zk_rng_state ^= zk_rng_state >> 27;
    uint64_t r = zk_rng_state * 0x2545f4914f6cdd1dull;
    return lo + (hi - lo) * (float)(r >> 40) * (1.0f / 16777216.0f);
}
static inline std::vector<float> zk_rand(size_t n, float lo = -1.0f, float hi = 1.0f)
{
    std::vector<float> v(n);
    for (auto &x : v) x = zk_uniform(lo, hi);
    return v;
}

/* fp32 <-> storage type T; zk_round makes host inputs equal to what the kernel reads. */
template <typename T> static std::vector<T> zk_to(const std::vector<float> &v)
{
    std::vector<T> o(v.size());
    for (size_t i = 0; i < v.size(); i++) zk_st(&o[i], v[i]);
    return o;
}
template <typename T> static std::vector<float> zk_from(const std::vector<T> &v)
{
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = zk_ld(&v[i]);
    return o;
}
template <typename T> static void zk_round(std::vector<float> &v)
{
    for (auto &x : v) { T t; zk_st(&t, x); x = zk_ld(&t); }
}
/* Relative rounding of one store in T: 0 for fp32 (the fp32 tolerance covers it). */
template <typename T> static double zk_eps_of(void) { return 0.0; }
template <> inline double zk_eps_of<zk_bf16>(void) { return 1.0 / 128; }
template <> inline double zk_eps_of<zk_fp16>(void) { return 1.0 / 1024; }

/* Checks every element; prints the worst one on failure. Returns the largest |got - want|. */
static inline double zk_close(const char *what, const float *got, const float *want, size_t n, double tol, double eps)
{
    size_t bad = 0, worst = 0;
    double worst_excess = -1, max_err = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]), lim = tol + eps * fabs((double)want[i]);
        if (!(e <= lim)) bad++;
        if (e > max_err || e != e) max_err = e;
        if (!(e - lim <= worst_excess)) { worst_excess = e - lim; worst = i; }
    }
    ZT_CHECKM(bad == 0, "%s: %zu of %zu outside %g + %g|ref|; worst [%zu] %.9g vs %.9g", what, bad, n, tol, eps,
              worst, (double)got[worst], (double)want[worst]);
    return max_err;
}
static inline double zk_close(const char *what, const std::vector<float> &got, const std::vector<float> &want, double tol,
                       double eps)
{
    ZT_CHECKM(got.size() == want.size(), "%s: sizes %zu vs %zu", what, got.size(), want.size());
    return zk_close(what, got.data(), want.data(), got.size() < want.size() ? got.size() : want.size(), tol, eps);
}
static inline double zk_maxabs(const std::vector<float> &v)
{
    double m = 0;
    for (float x : v) m = fabs((double)x) > m ? fabs((double)x) : m;
    return m;
}
/* Positions of B rows of T tokens cut into documents. Row 0: documents of lengths 1, 2, 1, 29 (to 33,
** so the query tile 32..39 holds a row whose document began in an earlier key tile and rows whose
** documents begin in its own), 1, 29, 37 (63..99: across the 64 boundary), then from 100. Row 1: a
** document after 7 tokens, two of length 1, then documents from 32 and 64 (key-tile boundaries) and
** 67. Further rows alternate these, and each row b ends in a padding segment (a document of its own)
** from 3T/4 + b on. */
static inline std::vector<int> zk_doc_pos(int B, int T)
{
    static const int r0[] = {0, 1, 3, 4, 33, 34, 63, 100}, r1[] = {0, 7, 8, 9, 32, 64, 67};
    std::vector<int> pos((size_t)B * T);
    for (int b = 0; b < B; b++) {
        std::vector<char> start(T, 0);
        const int *r = b % 2 ? r1 : r0, n = b % 2 ? 7 : 8;
        for (int k = 0; k < n; k++)
            if (r[k] < T) start[r[k]] = 1;
        if (3 * T / 4 + b < T) start[3 * T / 4 + b] = 1;
        for (int t = 0; t < T; t++) pos[(size_t)b * T + t] = start[t] ? 0 : pos[(size_t)b * T + t - 1] + 1;
    }
    return pos;
}

/* Positions of B rows of T tokens cut into documents: row b % 3 == 0 has documents of lengths 1, 2,
** then from 3T/4 on a padding segment (a document of its own); b % 3 == 1 two halves; b % 3 == 2 a
** document per token. */
static inline std::vector<int> zk_doc_pos_small(int B, int T)
{
    std::vector<int> pos((size_t)B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            bool start = t == 0 || (b % 3 == 0 && (t == 1 || t == 3 || t == 3 * T / 4)) || (b % 3 == 1 && t == T / 2) ||
                         b % 3 == 2;
            pos[(size_t)b * T + t] = start ? 0 : pos[(size_t)b * T + t - 1] + 1;
        }
    return pos;
}

#endif
