/*
** zk_host_math.h — a vectorisable expf for the host kernels (GELU, softmax), private to them.
**
** libm's expf/tanhf are scalar calls, so the loops that use them never vectorise; GELU alone cost
** as much as the MLP's matmuls. zk_exp is branch-free: Cody-Waite reduction x = n ln2 + r, a
** degree-6 polynomial for e^r, 2^n built in the exponent bits; relative error about 2.5e-7 (2 ulp).
** Its clamps are float selects, which GCC if-converts only without -ftrapping-math (the default),
** so the loops that call it sit between ZK_VECTOR_BEGIN and ZK_VECTOR_END, which turn trapping-math
** off for those functions only (no effect on results: nothing here relies on FP exceptions).
*/
#ifndef ZK_HOST_MATH_H
#define ZK_HOST_MATH_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#define ZK_VECTOR_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"no-trapping-math\")")
#define ZK_VECTOR_END _Pragma("GCC pop_options")
#else
#define ZK_VECTOR_BEGIN
#define ZK_VECTOR_END
#endif

ZK_VECTOR_BEGIN
/* e^x for x in [-87, 88] (clamped outside: 0 < result < inf for any finite x). */
static inline float zk_exp(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504088896341f + 12582912.0f; /* 1.5*2^23: round(x/ln2) in the low bits */
    float n = t - 12582912.0f;
    float r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f; /* ln2 = hi + lo */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.16666667f + r * (0.041666668f +
                                                   r * (0.008333334f + r * 0.0013888889f)))));
    int32_t bits;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits - 0x4B400000 + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
ZK_VECTOR_END

#endif
