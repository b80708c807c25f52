/*
** t_k_norm.cpp — sumsq.cu (the optimizer step's sum of squares on the device) under the SIMT
** emulation:
**   lengths    1, 7, 255, 257, 4097, 12289, 100003 and 4096 x 1024 + 333 (the grid's cap of 1024
**              blocks, a chunk that is not a multiple of the block), fp32 inputs;
**   accuracy   against the exact sum (__float128 accumulation of the exact double squares) within
**              depth x 2^-53 relative, depth being the most additions any square passes through in
**              the kernels' grid (zk_sumsq.h); and against the host trainer's arithmetic (one double
**              sum in element order, train_optim.c's owned_sumsq) within (depth + n) x 2^-53, and
**              both rounded to fp32 (the all-reduce's input) equal or one fp32 ulp apart;
**   16-bit     bf16 and fp16 inputs widened exactly (references through runtime/zr_half.h);
**   specials   one +inf, one -inf: the sum is +inf; one NaN (with an inf too): NaN; the largest
**              finite floats: a finite double (no overflow before the fp32 rounding);
**   order      the same input twice gives the same bits, and so does the same data with the
**              partials scratch poisoned (NaN) first: every partial read is written;
**   accumulate two ranges summed into one result equal the sum over both within the bound;
**   lanes      zd_sumsq_lanes (the device optimizer part's norm lanes, which the host continues)
**              bit for bit against the order of train.h's TrSq, written out here.
*/
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "zk_test.h"
extern "C" {
#include "zr_half.h"
}
#include "kernels/sumsq.cu"

#include <math.h>

static const double U = 1.0 / 9007199254740992.0;   /* 2^-53 */

/* The most additions one square goes through: its thread's sequential loop, the block's tree, the
** finish's per-thread loop over partials and its tree (+ the accumulate). */
static double depth(long n)
{
    long blocks = ZK_SQ_BLOCKS(n), chunk = ZK_SQ_CHUNK(n, blocks);
    double tree = log2((double)ZK_SQ_BLOCK);
    return (double)CEIL_DIV(chunk, ZK_SQ_BLOCK) + tree + (double)CEIL_DIV(blocks, ZK_SQ_BLOCK) + tree + 1;
}

static double exact(const std::vector<float> &x)
{
    __float128 s = 0;
    for (float v : x) s += (__float128)((double)v * (double)v);
    return (double)s;
}

static double host_order(const std::vector<float> &x)
{
    double s = 0;
    for (float v : x) s += (double)v * v;
    return s;
}

static double dev_sum(const void *g, long n, int fmt)
{
    std::vector<double> partials(ZK_SQ_MAX_BLOCKS, NAN);
    double r = NAN;
    ZT_EQ_INT(zd_sumsq_launch(&r, partials.data(), g, n, fmt, 0), 0);
    return r;
}

static uint64_t bits64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

/* got within the bound of the exact sum and of the host's double sum. */
static void check_sum(const char *what, long n, double got, const std::vector<float> &x)
{
    double ex = exact(x), ho = host_order(x), d = depth(n);
    ZT_CHECKM(fabs(got - ex) <= d * U * ex, "%s n=%ld: %.17g vs exact %.17g (rel %.2e > depth %.0f x 2^-53)",
              what, n, got, ex, fabs(got - ex) / ex, d);
    ZT_CHECKM(fabs(got - ho) <= (d + (double)n) * U * ex, "%s n=%ld: %.17g vs host order %.17g", what, n, got, ho);
    float f = (float)got, h = (float)ho;
    ZT_CHECKM(f == h || nextafterf(f, h) == h, "%s n=%ld: fp32 %a vs host %a, more than one ulp", what, n, (double)f,
              (double)h);
}

static void lengths(void)
{
    const long ns[] = {1, 7, 255, 257, 4097, 12289, 100003, 4096L * 1024 + 333};
    for (long n : ns) {
        zk_seed((uint64_t)n);
        std::vector<float> x = zk_rand((size_t)n, -2.0f, 2.0f);
        for (long i = 0; i < n; i += 97) x[(size_t)i] *= 1e-20f;   /* terms far below the sum's ulp */
        double a = dev_sum(x.data(), n, 0);
        check_sum("fp32", n, a, x);
        double b = dev_sum(x.data(), n, 0);
        ZT_CHECKM(bits64(a) == bits64(b), "n=%ld: two runs differ: %a vs %a", n, a, b);
    }
}

static void sixteen_bit(void)
{
    const long ns[] = {7, 4097, 100003};
    for (int fmt = 1; fmt <= 2; fmt++)
        for (long n : ns) {
            zk_seed((uint64_t)(n * 3 + fmt));
            std::vector<uint16_t> h((size_t)n);
            std::vector<float> x((size_t)n);
            for (long i = 0; i < n; i++) {
                float v = zk_uniform(-3.0f, 3.0f);
                h[(size_t)i] = fmt == 1 ? zr_f32_to_bf16(v) : zr_f32_to_fp16(v);
                x[(size_t)i] = fmt == 1 ? zr_bf16_to_f32(h[(size_t)i]) : zr_fp16_to_f32(h[(size_t)i]);
            }
            h[1] = 0x0001;                                 /* the smallest subnormal */
            x[1] = fmt == 1 ? zr_bf16_to_f32(h[1]) : zr_fp16_to_f32(h[1]);
            check_sum(fmt == 1 ? "bf16" : "fp16", n, dev_sum(h.data(), n, fmt), x);
        }
}

static void specials(void)
{
    const long n = 100003;
    zk_seed(11);
    std::vector<float> x = zk_rand((size_t)n);
    std::vector<float> y = x;
    y[5000] = INFINITY;
    y[n - 1] = -INFINITY;
    double r = dev_sum(y.data(), n, 0);
    ZT_CHECKM(isinf(r) && r > 0, "two infinities: %g, want +inf", r);
    y[70001] = NAN;
    r = dev_sum(y.data(), n, 0);
    ZT_CHECKM(isnan(r), "a NaN among infinities: %g, want NaN", r);
    std::vector<float> z = x;
    z[3] = NAN;
    r = dev_sum(z.data(), n, 0);
    ZT_CHECKM(isnan(r), "one NaN: %g, want NaN", r);
    std::vector<float> big(9, 3.4028235e38f);
    r = dev_sum(big.data(), 9, 0);
    ZT_CHECKM(isfinite(r) && fabs(r - exact(big)) <= depth(9) * U * r, "largest floats: %g, want %g", r, exact(big));
    std::vector<uint16_t> h(31, 0x3c00);                  /* fp16 1.0, one +inf */
    h[30] = 0x7c00;
    r = dev_sum(h.data(), 31, 2);
    ZT_CHECKM(isinf(r), "fp16 inf: %g", r);
}

/* Two ranges into one result (cuda_main.c sums each contiguous run of tensor pieces this way). */
static void accumulate(void)
{
    const long n1 = 5003, n2 = 70001;
    zk_seed(5);
    std::vector<float> x = zk_rand((size_t)(n1 + n2));
    std::vector<double> partials(ZK_SQ_MAX_BLOCKS, NAN);
    double r = NAN;
    ZT_EQ_INT(zd_sumsq_launch(&r, partials.data(), x.data(), n1, 0, 0), 0);
    ZT_EQ_INT(zd_sumsq_launch(&r, partials.data(), x.data() + n1, n2, 0, 1), 0);
    double ex = exact(x), d = depth(n2) + depth(n1);
    ZT_CHECKM(fabs(r - ex) <= d * U * ex, "accumulated %.17g vs exact %.17g", r, ex);
}

/* zd_sumsq_lanes against the order train.h's TrSq defines, written out element by element here:
** element o of [a, a + n) into set o / block - a / block, lane o % 8, ascending, from 0. Bit for bit
** (the host continues these lanes, so any other order would change the norm's bits), at offsets
** and lengths that start and end inside blocks, for fp32, bf16 and fp16, with the output poisoned. */
static void lanes(void)
{
    struct { long a, n, block; } cs[] = {{0, 1, 64}, {3, 7, 64}, {5, 1000, 64}, {64, 128, 64},
                                         {4093, 10000, 4096}, {4096L * 3, 8192, 4096}, {123457, 100003, 4096}};
    for (auto c : cs)
        for (int fmt = 0; fmt <= 2; fmt++) {
            zk_seed((uint64_t)(c.a * 7 + c.n + fmt));
            std::vector<float> x((size_t)c.n);
            std::vector<uint16_t> h((size_t)c.n);
            for (long i = 0; i < c.n; i++) {
                float v = zk_uniform(-3.0f, 3.0f) * (i % 13 == 0 ? 1e-6f : 1.0f);
                h[(size_t)i] = fmt == 1 ? zr_f32_to_bf16(v) : zr_f32_to_fp16(v);
                x[(size_t)i] = fmt == 0 ? v : fmt == 1 ? zr_bf16_to_f32(h[(size_t)i]) : zr_fp16_to_f32(h[(size_t)i]);
            }
            long sets = ZK_SQ_LANE_SETS(c.a, c.n, c.block);
            ZT_EQ_INT(sets, (c.a + c.n - 1) / c.block - c.a / c.block + 1);
            std::vector<double> want((size_t)sets * 8, 0.0), got((size_t)sets * 8, NAN);
            for (long o = c.a; o < c.a + c.n; o++) {
                double v = x[(size_t)(o - c.a)];
                want[(size_t)((o / c.block - c.a / c.block) * 8 + o % 8)] += v * v;
            }
            const void *g = fmt == 0 ? (const void *)x.data() : (const void *)h.data();
            ZT_EQ_INT(zd_sumsq_lanes_launch(got.data(), g, c.a, c.n, c.block, fmt), 0);
            int bad = 0;
            for (size_t i = 0; i < want.size() && !bad; i++)
                if (bits64(got[i]) != bits64(want[i])) {
                    ZT_CHECKM(0, "a=%ld n=%ld block=%ld fmt %d: set %zu lane %zu %a, want %a", c.a, c.n, c.block,
                              fmt, i / 8, i % 8, got[i], want[i]);
                    bad = 1;
                }
        }
}

int main(void)
{
    ZT_RUN(lanes);
    ZT_RUN(lengths);
    ZT_RUN(sixteen_bit);
    ZT_RUN(specials);
    ZT_RUN(accumulate);
    return zt_end();
}
