/*
** t_gpu_race.cpp — the GPU stand-in's race checker (templates/cuda_trainer/zr_gpu_emu.cpp): planted
** ordering bugs fail at the enqueue that completes them, deterministically, with a message naming
** both operations — a missing stream wait (a consumer reads what another stream's copy writes), a
** buffer reused across streams (a write over what another stream still reads), an async copy from
** pageable host memory (ZR_GPU_EMU_PAGEABLE=1) — and the same sequences with their
** record/wait (or host sync, or registration) pass. Collective groups (zr_gpu_group_begin/end):
** nothing of a group is queued before its end, its members then run as one operation (they
** complete together), the host may not wait inside one, and an end without a begin is refused.
** Bytes per link are counted as operations are enqueued. The stand-in's libzrt collectives are
** stubbed as one-rank copies, so the test needs no MPI.
*/
#define ZK_C 64                /* small shapes: the kernels are compiled, only convert.cu runs */
#define ZK_NH 2
#define ZK_T 16
#define ZK_V 64
#define ZK_F 256
#define ZK_L 1
#include "../../templates/cuda_trainer/zr_gpu_emu.cpp"

#include "zt.h"

/* The stand-in's collectives call libzrt: here one rank, a copy, logged in call order. */
static std::vector<std::string> coll_log;
static size_t esize(ZrDtype d) { return d == ZR_DT_FP32 ? 4 : 2; }
extern "C" {
static char fake_comm;
int zr_comm_create(ZrComm **c) { *c = (ZrComm *)&fake_comm; return 0; }
void zr_comm_destroy(ZrComm *c) { (void)c; }
int zr_comm_world(const ZrComm *c) { (void)c; return 1; }
static int one_rank(const char *what, const void *s, void *r, int64_t n, ZrDtype d)
{
    coll_log.push_back(std::string(what) + " " + std::to_string(n));
    memmove(r, s, (size_t)n * esize(d));
    return 0;
}
int zr_all_gather(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; return one_rank("all_gather", s, r, n, d); }
int zr_reduce_scatter(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; return one_rank("reduce_scatter", s, r, n, d); }
int zr_all_reduce(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; return one_rank("all_reduce", s, r, n, d); }
}

struct Rig {
    ZrGpu *g = nullptr;
    ZrGpuStream *a = nullptr, *b = nullptr;
    ZrGpuEvent *e = nullptr;
    char *dev = nullptr;
    char host[4096];
    Rig()
    {
        zr_gpu_open(&g, 0, nullptr, 0);
        zr_gpu_stream_create(g, &a, "h2d");
        zr_gpu_stream_create(g, &b, "compute");
        zr_gpu_event_create(g, &e);
        zr_gpu_malloc(g, (void **)&dev, 1 << 16);
        zr_gpu_host_register(g, host, sizeof host);
    }
    ~Rig()
    {
        zr_gpu_event_destroy(e);
        zr_gpu_close(g);
    }
};

static bool has(const char *msg, const char *s) { return strstr(msg, s) != nullptr; }

static void t_missing_wait(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev, r.host, 1024), 0);
    int rc = zr_gpu_copy(r.b, ZR_GPU_D2D, r.dev + 4096, r.dev + 512, 256);   /* reads what a writes */
    ZT_EQ_INT(rc, -EFAULT);
    const char *m = zr_gpu_strerror(r.g);
    ZT_CHECKM(has(m, "copy D2D of 256 bytes (operation 1 on stream compute) reads") &&
              has(m, "copy H2D of 1024 bytes (operation 1 on stream h2d) wrote"), "message: %s", m);
    /* the same with the wait: no race */
    Rig q;
    ZT_EQ_INT(zr_gpu_copy(q.a, ZR_GPU_H2D, q.dev, q.host, 1024), 0);
    ZT_EQ_INT(zr_gpu_record(q.e, q.a), 0);
    ZT_EQ_INT(zr_gpu_wait(q.b, q.e), 0);
    ZT_EQ_INT(zr_gpu_copy(q.b, ZR_GPU_D2D, q.dev + 4096, q.dev + 512, 256), 0);
    ZT_EQ_INT(zr_gpu_stream_sync(q.b), 0);
}

static void t_reuse_across_streams(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_memset(r.b, r.dev, 0, 2048), 0);
    ZT_EQ_INT(zr_gpu_record(r.e, r.b), 0);
    ZT_EQ_INT(zr_gpu_wait(r.a, r.e), 0);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_D2H, r.host, r.dev, 2048), 0);     /* a reads the buffer */
    int rc = zr_gpu_memset(r.b, r.dev + 1024, 1, 64);                     /* b refills it: no wait */
    ZT_EQ_INT(rc, -EFAULT);
    const char *m = zr_gpu_strerror(r.g);
    ZT_CHECKM(has(m, "memset of 64 bytes (operation 3 on stream compute) writes") &&
              has(m, "copy D2H of 2048 bytes (operation 1 on stream h2d) read"), "message: %s", m);
    /* a host sync on the reader orders it too */
    Rig q;
    ZT_EQ_INT(zr_gpu_memset(q.b, q.dev, 0, 2048), 0);
    ZT_EQ_INT(zr_gpu_record(q.e, q.b), 0);
    ZT_EQ_INT(zr_gpu_wait(q.a, q.e), 0);
    ZT_EQ_INT(zr_gpu_copy(q.a, ZR_GPU_D2H, q.host, q.dev, 2048), 0);
    ZT_EQ_INT(zr_gpu_stream_sync(q.a), 0);
    ZT_EQ_INT(zr_gpu_memset(q.b, q.dev + 1024, 1, 64), 0);
    ZT_EQ_INT(zr_gpu_stream_sync(q.b), 0);
}

/* A kernel's declared footprint takes part like a copy's. */
static void t_declared_kernel_footprint(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev, r.host, 256), 0);
    float *x = (float *)r.dev;
    long n = 64;
    int fmt = 1;
    void *args[] = {&x, &x, &n, &fmt, nullptr};
    const unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    ZT_EQ_INT(zr_gpu_footprint(r.b, x, 256, 1), 0);
    ZT_EQ_INT(zr_gpu_launch(r.b, "zd_add_f32", grid, block, 0, args), -EFAULT);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "kernel zd_add_f32"), "message: %s", zr_gpu_strerror(r.g));
}

static void t_pageable_copy(void)
{
    setenv("ZR_GPU_EMU_PAGEABLE", "1", 1);
    Rig r;
    char *pageable = (char *)malloc(4096);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev, r.host, 512), 0);         /* registered: fine */
    int rc = zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev, pageable, 512);
    ZT_EQ_INT(rc, -EFAULT);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "copy H2D of 512 bytes (operation 2 on stream h2d) reads pageable"),
              "message: %s", zr_gpu_strerror(r.g));
    ZT_EQ_INT(zr_gpu_stream_sync(r.a), 0);
    free(pageable);
    unsetenv("ZR_GPU_EMU_PAGEABLE");
}

/* Two all-gathers in one group: nothing is queued until the end, then one operation on the
** stream runs both (the log shows them back to back inside it), and a consumer ordered after the
** group by an event reads both results without a race. */
static void t_group_members_complete_together(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_coll_init(r.g, nullptr, r.a), 0);
    float *x = (float *)r.dev, *y = (float *)(r.dev + 4096);
    ZT_EQ_INT(zr_gpu_memset(r.a, x, 0, 64), 0);
    ZT_EQ_INT(zr_gpu_stream_sync(r.a), 0);
    coll_log.clear();
    size_t queued = r.a->q.size();
    ZT_EQ_INT(zr_gpu_group_begin(r.g), 0);
    ZT_EQ_INT(zr_gpu_coll(r.a, ZR_COLL_ALL_GATHER, x, y, 4, ZR_DT_FP32), 0);
    ZT_EQ_INT(zr_gpu_coll(r.a, ZR_COLL_ALL_GATHER, x + 4, y + 4, 8, ZR_DT_FP32), 0);
    ZT_EQ_INT((int)(r.a->q.size() - queued), 0);            /* nothing launched inside the group */
    ZT_EQ_INT(zr_gpu_stream_sync(r.a), -EINVAL);            /* the host may not wait inside it */
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "inside an open collective group"), "message: %s", zr_gpu_strerror(r.g));
    ZT_EQ_INT(zr_gpu_group_end(r.g), 0);
    ZT_EQ_INT((int)(r.a->q.size() - queued), 1);            /* the members are one operation */
    ZT_EQ_INT((int)coll_log.size(), 0);
    ZT_EQ_INT(zr_gpu_record(r.e, r.a), 0);
    ZT_EQ_INT(zr_gpu_wait(r.b, r.e), 0);
    ZT_EQ_INT(zr_gpu_copy(r.b, ZR_GPU_D2H, r.host, y, 48), 0);   /* reads what both wrote: ordered */
    long before = r.g->ops_run;
    ZT_EQ_INT(zr_gpu_stream_sync(r.b), 0);
    ZT_EQ_INT((int)coll_log.size(), 2);
    ZT_CHECKM(coll_log.size() == 2 && coll_log[0] == "all_gather 4" && coll_log[1] == "all_gather 8",
              "members ran as %s, %s", coll_log.size() > 0 ? coll_log[0].c_str() : "-",
              coll_log.size() > 1 ? coll_log[1].c_str() : "-");
    ZT_CHECKM(r.g->ops_run - before <= 4, "%ld operations ran for group, record, wait and copy",
              r.g->ops_run - before);
    /* without the event the consumer races with the group, and the message names the group */
    Rig q;
    ZT_EQ_INT(zr_gpu_coll_init(q.g, nullptr, q.a), 0);
    ZT_EQ_INT(zr_gpu_group_begin(q.g), 0);
    ZT_EQ_INT(zr_gpu_coll(q.a, ZR_COLL_ALL_GATHER, q.dev, q.dev + 4096, 4, ZR_DT_FP32), 0);
    ZT_EQ_INT(zr_gpu_coll(q.a, ZR_COLL_ALL_GATHER, q.dev + 16, q.dev + 4112, 4, ZR_DT_FP32), 0);
    ZT_EQ_INT(zr_gpu_group_end(q.g), 0);
    ZT_EQ_INT(zr_gpu_copy(q.b, ZR_GPU_D2H, q.host, q.dev + 4112, 16), -EFAULT);
    ZT_CHECKM(has(zr_gpu_strerror(q.g), "all_gather of 4 elements + all_gather of 4 elements (one group of 2)"),
              "message: %s", zr_gpu_strerror(q.g));
}

/* An end without a begin, and members on two streams, are errors that say so. */
static void t_group_misuse(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_coll_init(r.g, nullptr, r.a), 0);
    ZT_EQ_INT(zr_gpu_group_end(r.g), -EINVAL);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "zr_gpu_group_end without zr_gpu_group_begin"), "message: %s",
              zr_gpu_strerror(r.g));
    ZT_EQ_INT(zr_gpu_group_begin(r.g), 0);
    ZT_EQ_INT(zr_gpu_group_begin(r.g), 0);                  /* nested: the outer end launches */
    ZT_EQ_INT(zr_gpu_coll(r.a, ZR_COLL_ALL_GATHER, r.dev, r.dev + 4096, 4, ZR_DT_FP32), 0);
    ZT_EQ_INT(zr_gpu_coll(r.b, ZR_COLL_ALL_GATHER, r.dev + 16, r.dev + 4112, 4, ZR_DT_FP32), -EINVAL);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "members on two streams (h2d, compute)"), "message: %s", zr_gpu_strerror(r.g));
    size_t queued = r.a->q.size();
    ZT_EQ_INT(zr_gpu_group_end(r.g), 0);
    ZT_EQ_INT((int)(r.a->q.size() - queued), 0);
    ZT_EQ_INT(zr_gpu_group_end(r.g), 0);
    ZT_EQ_INT((int)(r.a->q.size() - queued), 1);
    ZT_EQ_INT(zr_gpu_group_end(r.g), -EINVAL);
    ZT_EQ_INT(zr_gpu_stream_sync(r.a), 0);
}

/* Bytes per link, counted at enqueue: each copy's bytes on its link, collectives by the plan's cost
** rules (one rank receives nothing; an all_reduce over 4 ranks receives 2 x 3/4 of its bytes). */
static void t_bytes_per_link(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_coll_init(r.g, nullptr, r.a), 0);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev, r.host, 1000), 0);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_H2D, r.dev + 1024, r.host + 1024, 24), 0);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_D2H, r.host + 2048, r.dev, 512), 0);
    ZT_EQ_INT(zr_gpu_copy(r.a, ZR_GPU_D2D, r.dev + 8192, r.dev, 256), 0);
    ZT_EQ_INT(zr_gpu_group_begin(r.g), 0);
    ZT_EQ_INT(zr_gpu_coll(r.a, ZR_COLL_ALL_GATHER, r.dev, r.dev + 4096, 4, ZR_DT_FP32), 0);
    ZT_EQ_INT(zr_gpu_group_end(r.g), 0);
    ZT_EQ_INT(zr_gpu_stream_sync(r.a), 0);
    ZrGpuBytes b;
    zr_gpu_bytes(r.g, &b);
    ZT_EQ_INT((int)b.h2d, 1024);
    ZT_EQ_INT((int)b.d2h, 512);
    ZT_EQ_INT((int)b.d2d, 256);
    ZT_EQ_INT((int)b.net, 0);
    ZT_EQ_INT((int)zr_gpu_coll_net_bytes(ZR_COLL_ALL_REDUCE, 100, ZR_DT_BF16, 4), 300);
    ZT_EQ_INT((int)zr_gpu_coll_net_bytes(ZR_COLL_ALL_GATHER, 100, ZR_DT_FP32, 4), 1200);
    ZT_EQ_INT((int)zr_gpu_coll_net_bytes(ZR_COLL_REDUCE_SCATTER, 100, ZR_DT_FP16, 2), 200);
}

int main(void)
{
    ZT_RUN(t_missing_wait);
    ZT_RUN(t_reuse_across_streams);
    ZT_RUN(t_declared_kernel_footprint);
    ZT_RUN(t_pageable_copy);
    ZT_RUN(t_group_members_complete_together);
    ZT_RUN(t_group_misuse);
    ZT_RUN(t_bytes_per_link);
    return zt_end();
}
