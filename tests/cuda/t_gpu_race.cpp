/*
** t_gpu_race.cpp — the GPU stand-in's race checker (templates/cuda_trainer/zr_gpu_emu.cpp): planted
** ordering bugs fail at the enqueue that completes them, deterministically, with a message naming
** both operations — a missing stream wait (a consumer reads what another stream's copy writes), a
** buffer reused across streams (a write over what another stream still reads), an async copy from
** pageable host memory (ZR_GPU_EMU_PAGEABLE=1) — and the same sequences with their
** record/wait (or host sync, or registration) pass. Collectives are not used: the stand-in's
** libzrt calls are stubbed so the test needs no MPI.
*/
#define ZK_C 64                /* small shapes: the kernels are compiled, only convert.cu runs */
#define ZK_NH 2
#define ZK_T 16
#define ZK_V 64
#define ZK_F 256
#define ZK_L 1
#include "../../templates/cuda_trainer/zr_gpu_emu.cpp"

#include "zt.h"

/* The stand-in's collectives call libzrt; nothing here reaches them. */
extern "C" {
int zr_comm_create(ZrComm **c) { *c = nullptr; return -ENOSYS; }
void zr_comm_destroy(ZrComm *c) { (void)c; }
int zr_comm_world(const ZrComm *c) { (void)c; return 1; }
int zr_all_gather(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
int zr_reduce_scatter(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
int zr_all_reduce(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
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

int main(void)
{
    ZT_RUN(t_missing_wait);
    ZT_RUN(t_reuse_across_streams);
    ZT_RUN(t_declared_kernel_footprint);
    ZT_RUN(t_pageable_copy);
    return zt_end();
}
