/*
** zt.h — the project's test harness (after greatest.h), header only.
**
** A test binary defines test functions `static void t_name(void)` and lists them in main():
**     int main(void) { ZT_RUN(t_one); ZT_RUN(t_two); return zt_end(); }
** Each test prints "name ... ok|FAIL|skip" and, on failure, every failed check with file:line.
** zt_end() prints exactly "N passed, N failed, N skipped" and returns 0, 1, or 77 when all skipped.
*/
#ifndef ZT_H
#define ZT_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int zt_passed, zt_failed, zt_skipped;
static int zt_cur_failed, zt_cur_skipped;
static const char *zt_cur_name;

/* A failed check records the failure and keeps going, so one run shows every broken check. */
#define ZT_CHECK(cond) ZT_CHECKM(cond, "%s", #cond)
#define ZT_CHECKM(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            if (!zt_cur_failed) printf("%s ... FAIL\n", zt_cur_name);         \
            zt_cur_failed++;                                                  \
            printf("  %s:%d: ", __FILE__, __LINE__);                          \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
        }                                                                     \
    } while (0)
#define ZT_EQ_INT(a, b)                                                       \
    ZT_CHECKM((long long)(a) == (long long)(b), "%s == %s (%lld vs %lld)",    \
              #a, #b, (long long)(a), (long long)(b))
/* Like ZT_EQ_INT for a call with side effects: evaluates it once (ZT_EQ_INT repeats it in its message). */
#define ZT_EQ_CALL(call, want)                                                \
    do {                                                                      \
        long long r_ = (long long)(call);                                     \
        ZT_CHECKM(r_ == (long long)(want), "%s = %lld, want %lld", #call, r_, \
                  (long long)(want));                                         \
    } while (0)
#define ZT_EQ_STR(a, b)                                                       \
    ZT_CHECKM(strcmp((a), (b)) == 0, "%s == %s (\"%s\" vs \"%s\")", #a, #b, (a), (b))
/* |a-b| <= atol + rtol*|b| */
#define ZT_NEAR(a, b, atol, rtol)                                             \
    ZT_CHECKM(fabs((double)(a) - (double)(b)) <=                              \
                  (atol) + (rtol) * fabs((double)(b)),                        \
              "%s ~ %s (%.9g vs %.9g)", #a, #b, (double)(a), (double)(b))
#define ZT_SKIP(...)                                                          \
    do {                                                                      \
        printf("%s ... skip (", zt_cur_name);                                 \
        printf(__VA_ARGS__);                                                  \
        printf(")\n");                                                        \
        zt_cur_skipped = 1;                                                   \
        return;                                                               \
    } while (0)

#define ZT_RUN(fn) zt_run(fn, #fn)
static inline void zt_run(void (*fn)(void), const char *name)
{
    zt_cur_name = name;
    zt_cur_failed = zt_cur_skipped = 0;
    fflush(stdout);
    fn();
    if (zt_cur_failed) zt_failed++;
    else if (zt_cur_skipped) zt_skipped++;
    else { zt_passed++; printf("%s ... ok\n", name); }
    fflush(stdout);
}

static inline int zt_end(void)
{
    printf("%d passed, %d failed, %d skipped\n", zt_passed, zt_failed, zt_skipped);
    if (zt_failed) return 1;
    if (zt_passed == 0 && zt_skipped > 0) return 77;
    return 0;
}
#endif
