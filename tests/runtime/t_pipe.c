/*
** t_pipe.c — the pipelined NVMe optimizer step. The state after zr_pipe_step (read back from the swap
** file) and the 16-bit parameter copy must equal, bit for bit, one zr_adam_step over the same
** arrays held in memory; for several steps, gradient dtypes, buffer counts (1, 2, 3, 4) and odd
** sub-group sizes that span several Adam chunks. Also: the documented file layout, I/O-only mode,
** argument errors and an I/O error that names the file.
*/
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "zr_half.h"
#include "zr_pipe.h"
#include "zt.h"
#include "zt_tmp.h"

#define EQ ZT_EQ_CALL                   /* the short name, used on most lines here */

static char tmpdir[256];
static uint64_t rng = 88172645463325252ull;

static float frand(void)          /* uniform in [-1, 1) */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

enum { NSG = 6 };
static const int64_t sizes[NSG] = {2100003, 4097, 1, 600001, 1 << 20, 99999};   /* 2100003: 3 chunks */

struct state { int64_t n; float *p, *m, *v; };

static void init_state(struct state *s, int64_t n)
{
    s->n = n;
    s->p = malloc((size_t)n * 4); s->m = malloc((size_t)n * 4); s->v = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        s->p[i] = frand() * 0.1f;
        s->m[i] = frand() * 1e-3f;
        s->v[i] = (frand() + 1.0f) * 1e-6f;
    }
}

static void free_state(struct state *s) { free(s->p); free(s->m); free(s->v); }

static void *make_grad(int64_t n, ZrDtype dt)
{
    void *g = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        float x = frand() * 0.02f;
        if (dt == ZR_DT_FP32) ((float *)g)[i] = x;
        else if (dt == ZR_DT_BF16) ((uint16_t *)g)[i] = zr_f32_to_bf16(x);
        else ((uint16_t *)g)[i] = zr_f32_to_fp16(x);
    }
    return g;
}

static void pipe_vs_memory(int nbuf, ZrDtype gdt, ZrDtype p16dt, int use_p16, int steps)
{
    char path[512];
    snprintf(path, sizeof path, "%s/opt_%d.swp", tmpdir, nbuf);
    ZrSubGroupRow sg[NSG];
    int64_t total = 0, maxn = 0;
    for (int i = 0; i < NSG; i++) {
        sg[i].shard_offset = total;
        sg[i].numel = sizes[i];
        total += sizes[i];
        if (sizes[i] > maxn) maxn = sizes[i];
    }
    int64_t end = zr_pipe_layout(sg, NSG, 0);
    ZrNvmeCfg cfg = {256 << 10, 8, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    ZrPipe *pp = NULL;
    EQ(zr_nvme_open(&f, path, end, &cfg), 0);
    if (!f) return;
    EQ(zr_pipe_create(&pp, f, nbuf, maxn, NULL, NULL), 0);
    if (!pp) { zr_nvme_close(f); return; }

    struct state ref, got, init;
    init_state(&ref, total);
    got.n = total;
    got.p = malloc((size_t)total * 4); got.m = malloc((size_t)total * 4);
    got.v = malloc((size_t)total * 4);
    init.p = malloc((size_t)total * 4);
    memcpy(init.p, ref.p, (size_t)total * 4);
    for (int i = 0; i < NSG; i++) {
        int64_t o = sg[i].shard_offset;
        EQ(zr_pipe_put(pp, &sg[i], ref.p + o, ref.m + o, ref.v + o), 0);
    }
    uint16_t *p16_pipe = use_p16 ? calloc((size_t)total, 2) : NULL;
    uint16_t *p16_ref = use_p16 ? calloc((size_t)total, 2) : NULL;
    for (int t = 1; t <= steps; t++) {
        ZrAdamCfg c = {1e-3f * (float)t, 0.9f, 0.999f, 1e-8f, t == 2 ? 0.0f : 0.01f, t != 3, t,
                       t == 1 ? 1.0f : 0.5f};
        void *g = make_grad(total, gdt);
        EQ(zr_pipe_step(pp, &c, sg, NSG, g, gdt, p16_pipe, p16dt), 0);
        EQ(zr_adam_step(&c, ref.p, ref.m, ref.v, g, gdt, p16_ref, p16dt, total), 0);
        free(g);
    }
    for (int i = 0; i < NSG; i++) {
        int64_t o = sg[i].shard_offset;
        EQ(zr_pipe_get(pp, &sg[i], got.p + o, got.m + o, got.v + o), 0);
    }
    ZT_CHECKM(memcmp(got.p, ref.p, (size_t)total * 4) == 0, "master differs (buffers %d)", nbuf);
    ZT_CHECKM(memcmp(got.m, ref.m, (size_t)total * 4) == 0, "m differs (buffers %d)", nbuf);
    ZT_CHECKM(memcmp(got.v, ref.v, (size_t)total * 4) == 0, "v differs (buffers %d)", nbuf);
    if (use_p16) ZT_CHECK(memcmp(p16_pipe, p16_ref, (size_t)total * 2) == 0);
    int64_t moved = 0;                      /* the step did something */
    for (int64_t i = 0; i < total; i++) moved += got.p[i] != init.p[i];
    ZT_CHECKM(moved > total * 9 / 10, "only %lld of %lld parameters changed", (long long)moved,
              (long long)total);
    ZrPipeStats st;
    zr_pipe_stats(pp, &st);
    EQ(st.bytes_read, 12 * total);        /* exactly p, m, v of every sub-group, once */
    EQ(st.bytes_written, 12 * total);
    free_state(&ref); free_state(&got); free(init.p); free(p16_pipe); free(p16_ref);
    zr_pipe_destroy(pp);
    { int rc_ = zr_nvme_close(f); EQ(rc_, 0); }
}

static void t_fp32_grad_bf16_out_4buf(void) { pipe_vs_memory(4, ZR_DT_FP32, ZR_DT_BF16, 1, 3); }
static void t_bf16_grad_fp16_out_3buf(void) { pipe_vs_memory(3, ZR_DT_BF16, ZR_DT_FP16, 1, 2); }
static void t_fp16_grad_2buf(void) { pipe_vs_memory(2, ZR_DT_FP16, ZR_DT_BF16, 0, 2); }
static void t_fp32_grad_1buf(void) { pipe_vs_memory(1, ZR_DT_FP32, ZR_DT_BF16, 1, 1); }

/* zgen's plan: regions master | adam_m | adam_v packed back to back (O odd, so the m and v regions
** start unaligned and sub-groups share sectors at their edges), nvme_offset_bytes = shard_offset*4,
** buffer = i % buffer_count, and the scheduler's op order SWAP_IN(0); for i: SWAP_IN(i+1),
** OPTIMIZER(i), SWAP_OUT(i). The regions read straight from the file must equal in-memory Adam. */
static void plan_ops(int nbuf)
{
    enum { SIZE = 200000 };
    const int64_t O = 3 * SIZE + 12345;
    const int n = 4;
    char path[512];
    snprintf(path, sizeof path, "%s/regions.swp", tmpdir);
    ZrSubGroupRow sg[4];
    for (int i = 0; i < n; i++) {
        sg[i].shard_offset = (int64_t)i * SIZE;
        sg[i].numel = i + 1 < n ? SIZE : O - sg[i].shard_offset;
        sg[i].nvme_offset_bytes = sg[i].shard_offset * 4;
        sg[i].buffer = i % nbuf;
    }
    ZrPipeLayout lay = {0, 0, O * 4, 2 * O * 4};
    ZrNvmeCfg cfg = {128 << 10, 8, ZR_NVME_F_UNLINK};
    ZrNvme *f = NULL;
    ZrPipe *pp = NULL;
    EQ(zr_nvme_open(&f, path, 3 * O * 4, &cfg), 0);
    if (!f) return;
    void *bufs[4];                            /* the caller's, as the plan's opt_buf_<b> regions */
    int64_t bb = zr_pipe_buf_bytes(SIZE);
    EQ(bb, 3 * 196 * 4096);                   /* 800000 bytes padded to 196 pages, three arrays */
    for (int b = 0; b < nbuf; b++) bufs[b] = zr_nvme_alloc((size_t)bb);
    void *odd[4] = {(char *)bufs[0] + 8, bufs[1], bufs[2], bufs[3]};
    EQ(zr_pipe_create(&pp, f, nbuf, SIZE, &lay, odd), -EINVAL);       /* not 4 KiB aligned */
    EQ(zr_pipe_create(&pp, f, nbuf, SIZE, &lay, bufs), 0);
    if (!pp) { zr_nvme_close(f); return; }
    struct state ref;
    init_state(&ref, O);
    EQ(zr_nvme_write(f, ref.p, O * 4, 0), 0);
    EQ(zr_nvme_write(f, ref.m, O * 4, O * 4), 0);
    EQ(zr_nvme_write(f, ref.v, O * 4, 2 * O * 4), 0);
    uint16_t *p16 = calloc((size_t)O, 2), *p16_ref = calloc((size_t)O, 2);
    for (int t = 1; t <= 2; t++) {
        ZrAdamCfg c = {2e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, t, 0.25f};
        void *g = make_grad(O, ZR_DT_BF16);
        EQ(zr_pipe_swap_in(pp, &sg[0]), 0);
        for (int i = 0; i < n; i++) {
            if (i + 1 < n) EQ(zr_pipe_swap_in(pp, &sg[i + 1]), 0);
            EQ(zr_pipe_optimize(pp, &c, &sg[i], g, ZR_DT_BF16, p16, ZR_DT_BF16), 0);
            EQ(zr_pipe_swap_out(pp, &sg[i]), 0);
        }
        EQ(zr_pipe_finish(pp), 0);
        EQ(zr_adam_step(&c, ref.p, ref.m, ref.v, g, ZR_DT_BF16, p16_ref, ZR_DT_BF16, O), 0);
        free(g);
    }
    float *back = malloc((size_t)O * 4);
    const float *want[3] = {ref.p, ref.m, ref.v};
    for (int k = 0; k < 3; k++) {
        memset(back, 0, (size_t)O * 4);
        EQ(zr_nvme_read(f, back, O * 4, k * O * 4), 0);
        ZT_CHECKM(memcmp(back, want[k], (size_t)O * 4) == 0, "region %d differs (buffers %d)", k,
                  nbuf);
    }
    ZT_CHECK(memcmp(p16, p16_ref, (size_t)O * 2) == 0);
    ZrPipeStats st;
    zr_pipe_stats(pp, &st);
    EQ(st.bytes_read, 12 * O);
    free(back); free(p16); free(p16_ref); free_state(&ref);
    zr_pipe_destroy(pp);
    for (int b = 0; b < nbuf; b++) zr_nvme_free(bufs[b], (size_t)bb);
    zr_nvme_close(f);
}

static void t_plan_ops_regions_2buf(void) { plan_ops(2); }
static void t_plan_ops_regions_4buf(void) { plan_ops(4); }

/* One buffer cannot take SWAP_IN(i+1) before sub-group i is swapped out: refused, not corrupted. */
static void t_plan_ops_one_buffer_refused(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/one.swp", tmpdir);
    ZrSubGroupRow sg[2] = {{.shard_offset = 0, .numel = 1000, .nvme_offset_bytes = 0, .buffer = 0},
                           {.shard_offset = 1000, .numel = 1000, .nvme_offset_bytes = 12288,
                            .buffer = 0}};
    ZrNvme *f = NULL;
    ZrPipe *pp = NULL;
    EQ(zr_nvme_open(&f, path, 1 << 16, NULL), 0);
    if (!f) return;
    EQ(zr_pipe_create(&pp, f, 1, 1000, NULL, NULL), 0);
    EQ(zr_pipe_swap_in(pp, &sg[0]), 0);
    EQ(zr_pipe_swap_in(pp, &sg[1]), -EBUSY);
    sg[1].buffer = 1;
    EQ(zr_pipe_swap_in(pp, &sg[1]), -EINVAL);         /* no such buffer */
    EQ(zr_pipe_optimize(pp, NULL, &sg[0], NULL, ZR_DT_FP32, NULL, ZR_DT_BF16), 0);
    EQ(zr_pipe_swap_out(pp, &sg[0]), 0);
    sg[1].buffer = 0;
    EQ(zr_pipe_swap_in(pp, &sg[1]), 0);
    EQ(zr_pipe_finish(pp), 0);
    zr_pipe_destroy(pp);
    zr_nvme_close(f);
    unlink(path);
}

/* Layout: [p | m | v] per sub-group, each array padded to 4096 bytes, sub-groups back to back. */
static void t_layout(void)
{
    ZrSubGroupRow sg[3] = {{.shard_offset = 0, .numel = 1000}, {.shard_offset = 1000, .numel = 1024},
                           {.shard_offset = 2024, .numel = 1025}};
    EQ(zr_pipe_layout(sg, 3, 100), 4096 + 3 * 4096 + 3 * 4096 + 3 * 8192);
    EQ(sg[0].nvme_offset_bytes, 4096);
    EQ(sg[1].nvme_offset_bytes, 4096 + 3 * 4096);
    EQ(sg[2].nvme_offset_bytes, 4096 + 6 * 4096);
    EQ(zr_pipe_array_bytes(1025), 8192);
    char path[512];
    snprintf(path, sizeof path, "%s/layout.swp", tmpdir);
    ZrNvme *f = NULL;
    ZrPipe *pp = NULL;
    EQ(zr_nvme_open(&f, path, 1 << 20, NULL), 0);
    if (!f) return;
    EQ(zr_pipe_create(&pp, f, 2, 1025, NULL, NULL), 0);
    float p[1025], m[1025], raw[3 * 2048];
    for (int i = 0; i < 1025; i++) { p[i] = (float)i; m[i] = -(float)i; }
    EQ(zr_pipe_put(pp, &sg[2], p, m, NULL), 0);
    EQ(zr_nvme_read(f, raw, sizeof raw, sg[2].nvme_offset_bytes), 0);
    ZT_CHECK(raw[0] == 0.0f && raw[1024] == 1024.0f && raw[1025] == 0.0f);   /* p, then padding */
    ZT_CHECK(raw[2048 + 5] == -5.0f && raw[2048 + 1024] == -1024.0f);       /* m at 8192 bytes */
    ZT_CHECK(raw[4096] == 0.0f && raw[4096 + 1024] == 0.0f);                /* v: zeros */
    /* I/O only (c == NULL): data pass through unchanged. */
    EQ(zr_pipe_step(pp, NULL, sg + 2, 1, NULL, ZR_DT_FP32, NULL, ZR_DT_BF16), 0);
    float q[1025];
    EQ(zr_pipe_get(pp, &sg[2], q, NULL, NULL), 0);
    ZT_CHECK(memcmp(p, q, sizeof p) == 0);
    /* errors: too large a sub-group; a sub-group beyond the end of the file */
    ZrSubGroupRow big = {.numel = 1026}, far = {.numel = 100, .nvme_offset_bytes = 2 << 20};
    ZrAdamCfg c = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1, 1.0f};
    EQ(zr_pipe_step(pp, &c, &big, 1, q, ZR_DT_FP32, NULL, ZR_DT_BF16), -EINVAL);
    EQ(zr_pipe_step(pp, &c, &far, 1, q, ZR_DT_FP32, NULL, ZR_DT_BF16), -ENODATA);
    ZT_CHECKM(strstr(zr_nvme_strerror(f), path) != NULL, "text: %s", zr_nvme_strerror(f));
    ZrPipe *none = NULL;
    EQ(zr_pipe_create(&none, f, 0, 10, NULL, NULL), -EINVAL);
    zr_pipe_destroy(pp);
    zr_nvme_close(f);
    unlink(path);
}

int main(void)
{
    if (zt_tmpdir_make(tmpdir, sizeof tmpdir, "pipe")) return 1;
    ZT_RUN(t_layout);
    ZT_RUN(t_fp32_grad_bf16_out_4buf);
    ZT_RUN(t_bf16_grad_fp16_out_3buf);
    ZT_RUN(t_fp16_grad_2buf);
    ZT_RUN(t_fp32_grad_1buf);
    ZT_RUN(t_plan_ops_regions_2buf);
    ZT_RUN(t_plan_ops_regions_4buf);
    ZT_RUN(t_plan_ops_one_buffer_refused);
    rmdir(tmpdir);
    return zt_end();
}
