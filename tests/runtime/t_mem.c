/*
** t_mem.c — tier arenas (zr_mem.h): bounds checks, plan offsets, the pinned budget, and the debug
** mode (guards that name the overrun region, NaN poisoning of released ranges, alignment kept).
*/
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "zr_check.h"
#include "zr_half.h"
#include "zr_mem.h"
#include "zt.h"

/* Captures what the code under test prints on stderr between begin and end. */
static char captured[8192];
static int saved_fd = -1;
static FILE *cap;
static void capture_begin(void)
{
    fflush(stderr);
    cap = tmpfile();
    saved_fd = dup(2);
    dup2(fileno(cap), 2);
}
static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    rewind(cap);
    size_t n = fread(captured, 1, sizeof captured - 1, cap);
    captured[n] = 0;
    fclose(cap);
    return captured;
}

static const ZrRegionRow rows[] = {
    {"master", 0, ZR_TIER_HOST, 0, 1000},
    {"adam_m", 0, ZR_TIER_HOST, 1000, 3000},
    {"acts", 0, ZR_TIER_HOST, 8192, 4096},
    {"acts_alias", 0, ZR_TIER_HOST, 10000, 4000},   /* overlaps acts: shares its bytes */
    {"pinned_buf", 0, ZR_TIER_PINNED, 0, 4096},     /* other tier: ignored by a host arena */
};
enum { NROWS = sizeof rows / sizeof rows[0], ARENA = 20000 };

static void t_bounds(void)
{
    zr_mem_set_debug(0);
    ZrArena *a;
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_HOST, ARENA, rows, NROWS), 0);
    char *base = zr_arena_at(a, 0, ARENA);
    ZT_CHECK(base != NULL);
    ZT_EQ_INT((uintptr_t)base % 4096, 0);
    ZT_CHECK(zr_arena_at(a, 1000, 3000) == base + 1000);
    ZT_CHECK(zr_arena_at(a, ARENA, 0) == base + ARENA);      /* empty range at the end */
    int zero = 1;
    for (int i = 0; i < ARENA; i++) zero &= base[i] == 0;
    ZT_CHECKM(zero, "new arena is not zeroed");
    capture_begin();
    void *p1 = zr_arena_at(a, ARENA - 10, 11);
    void *p2 = zr_arena_at(a, -1, 4);
    void *p3 = zr_arena_at(a, 8, INT64_MAX);                  /* off + bytes overflows */
    const char *msg = capture_end();
    ZT_CHECK(p1 == NULL && p2 == NULL && p3 == NULL);
    ZT_CHECKM(strstr(msg, "outside the host arena of 20000 bytes") != NULL, "message: %s", msg);
    ZT_CHECKM(strstr(msg, "at offset 8 is outside the host arena of 20000 bytes (starts in master)"),
              "message names no region: %s", msg);
    int64_t rb = 0;
    ZT_CHECK(zr_arena_region(a, "adam_m", &rb) == base + 1000);
    ZT_EQ_INT(rb, 3000);
    capture_begin();
    ZT_CHECK(zr_arena_region(a, "pinned_buf", NULL) == NULL);    /* belongs to another tier */
    capture_end();
    ZT_EQ_INT(zr_arena_release(a, 0, 1000), 0);                  /* no-op outside debug */
    ZT_EQ_INT(zr_arena_check(a), 0);
    zr_arena_destroy(a);
}

static void t_bad_create(void)
{
    ZrArena *a = NULL;
    ZrRegionRow bad = {"too_far", 0, ZR_TIER_HOST, 100, 1000};
    capture_begin();
    int rc = zr_arena_create(&a, ZR_TIER_HOST, 1000, &bad, 1);
    const char *msg = capture_end();
    ZT_EQ_INT(rc, -EINVAL);
    ZT_CHECKM(strstr(msg, "too_far") != NULL, "message: %s", msg);
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_NVME, 1000, NULL, 0), -EINVAL);
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_HOST, -1, NULL, 0), -EINVAL);
}

static void t_pinned_budget(void)
{
    ZrArena *a = NULL, *b = NULL;
    zr_pinned_budget(0);
    capture_begin();
    int rc0 = zr_arena_create(&a, ZR_TIER_PINNED, 4096, NULL, 0);
    const char *msg = capture_end();
    ZT_EQ_INT(rc0, -ENOMEM);
    ZT_CHECKM(strstr(msg, "pinned budget") != NULL, "message: %s", msg);
    zr_pinned_budget(1 << 20);
    capture_begin();                                             /* mlock may be refused */
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_PINNED, 600 << 10, NULL, 0), 0);
    ZT_EQ_INT(zr_pinned_used(), 600 << 10);
    ZT_EQ_INT(zr_arena_create(&b, ZR_TIER_PINNED, 500 << 10, NULL, 0), -ENOMEM);
    void *buf = NULL;
    ZT_EQ_INT(zr_pinned_alloc(&buf, 424 << 10), 0);             /* exactly the rest */
    void *buf2 = NULL;
    ZT_EQ_INT(zr_pinned_alloc(&buf2, 1), -ENOMEM);
    capture_end();
    ZT_EQ_INT((uintptr_t)buf % 4096, 0);
    memset(buf, 1, 424 << 10);
    zr_pinned_free(buf, 424 << 10);
    zr_arena_destroy(a);
    ZT_EQ_INT(zr_pinned_used(), 0);
}

static void t_debug_guards(void)
{
    zr_mem_set_debug(1);
    ZrArena *a;
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_HOST, ARENA, rows, NROWS), 0);
    char *m = zr_arena_at(a, 0, 1000), *am = zr_arena_at(a, 1000, 3000);
    char *acts = zr_arena_at(a, 8192, 4096), *alias = zr_arena_at(a, 10000, 4000);
    ZT_CHECK(m && am && acts && alias);
    ZT_CHECKM(am != m + 1000, "debug mode should separate regions with guards");
    ZT_EQ_INT((uintptr_t)acts % 4096, 0);                        /* plan alignment kept */
    ZT_CHECK(alias == acts + (10000 - 8192));                     /* overlapping regions stay one */
    memset(m, 0, 1000);
    memset(am, 0, 3000);
    ZT_EQ_INT(zr_arena_check(a), 0);
    capture_begin();
    void *cross = zr_arena_at(a, 900, 200);                      /* master into adam_m */
    const char *msg = capture_end();
    ZT_CHECK(cross == NULL);
    ZT_CHECKM(strstr(msg, "past the end of master") != NULL, "message: %s", msg);
    m[1000 + 3] = 1;                                             /* overrun master by 4 bytes */
    capture_begin();
    int rc = zr_arena_check(a);
    msg = capture_end();
    ZT_EQ_INT(rc, -EFAULT);
    ZT_CHECKM(strstr(msg, "guard AFTER master") != NULL && strstr(msg, "up to 4 bytes") != NULL,
              "message: %s", msg);
    m[1000 + 3] = (char)0xfd;                                    /* the guard pattern: repaired */
    am[-2] = 7;                                                  /* underrun adam_m */
    capture_begin();
    rc = zr_arena_release(a, 1000, 3000);
    msg = capture_end();
    ZT_EQ_INT(rc, -EFAULT);
    ZT_CHECKM(strstr(msg, "guard BEFORE adam_m") != NULL, "message: %s", msg);
    am[-2] = (char)0xfd;
    ZT_EQ_INT(zr_arena_check(a), 0);
    zr_arena_destroy(a);
    zr_mem_set_debug(0);
}

static void t_debug_poison(void)
{
    zr_mem_set_debug(1);
    ZrArena *a;
    ZT_EQ_INT(zr_arena_create(&a, ZR_TIER_DEVICE, ARENA, NULL, 0), 0);
    float *f = zr_arena_at(a, 4096, 4096);
    for (int i = 0; i < 1024; i++) f[i] = 1.0f;
    ZT_EQ_INT(zr_arena_release(a, 4096 + 64, 400), 0);
    ZT_CHECK(f[15] == 1.0f && f[16 + 100] == 1.0f);
    int nan32 = 1, nan16 = 1;
    for (int i = 16; i < 116; i++) nan32 &= isnan(f[i]);
    const uint16_t *h = (const uint16_t *)(f + 16);
    for (int i = 0; i < 200; i++)
        nan16 &= isnan(zr_bf16_to_f32(h[i])) && isnan(zr_fp16_to_f32(h[i]));
    ZT_CHECKM(nan32, "released fp32 values are not NaN");
    ZT_CHECKM(nan16, "released 16-bit values are not NaN as bf16 and fp16");
    /* an fp32 at an odd 2-byte offset is still NaN */
    float g;
    memcpy(&g, (char *)f + 66, 4);
    ZT_CHECK(isnan(g));
    ZT_EQ_INT(zr_arena_check(a), 0);
    zr_arena_destroy(a);
    zr_mem_set_debug(0);
}

static void t_debug_from_env(void)
{
    zr_mem_set_debug(-1);                /* follow the environment */
    unsetenv("ZR_DEBUG_MEM");
    ZT_EQ_INT(zr_mem_debug(), 0);
    setenv("ZR_DEBUG_MEM", "1", 1);
    ZT_EQ_INT(zr_mem_debug(), 1);
    setenv("ZR_DEBUG_MEM", "0", 1);
    ZT_EQ_INT(zr_mem_debug(), 0);
    setenv("ZR_DEBUG_MEM", "1", 1);
    zr_mem_set_debug(0);                 /* the API overrides the environment */
    ZT_EQ_INT(zr_mem_debug(), 0);
    unsetenv("ZR_DEBUG_MEM");
}

/* ZR_CHECK (zr_check.h) in a child: file:line, the call, the error, a HINT, exit status 1. */
static void t_check_macro(void)
{
    int fd[2];
    ZT_CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        ZrArena *a = NULL;
        ZR_CHECK(zr_arena_create(&a, ZR_TIER_HOST, 4096, NULL, 0));     /* passes */
        ZR_CHECK(zr_arena_create(&a, ZR_TIER_NVME, 4096, NULL, 0));     /* fails: exits */
        _exit(9);
    }
    close(fd[1]);
    char buf[1024];
    ssize_t n = read(fd[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    ZT_CHECKM(WIFEXITED(st) && WEXITSTATUS(st) == 1, "child status %d", st);
    ZT_CHECKM(strstr(buf, "t_mem.c:") && strstr(buf, "zr_arena_create(&a, ZR_TIER_NVME") &&
              strstr(buf, "Invalid argument (-22)") && strstr(buf, "\n---> HINT: "),
              "message: %s", buf);
}

int main(void)
{
    ZT_RUN(t_bounds);
    ZT_RUN(t_bad_create);
    ZT_RUN(t_pinned_budget);
    ZT_RUN(t_debug_guards);
    ZT_RUN(t_debug_poison);
    ZT_RUN(t_debug_from_env);
    ZT_RUN(t_check_macro);
    return zt_end();
}
