/*
** t_gpu_graph.cpp — the GPU stand-in's graphs (templates/cuda_trainer/zr_gpu_emu.cpp,
** zr_gpu_capture_begin/end, zr_gpu_graph_launch): a captured sequence (kernel, sgemm, memset, D2D
** copy) runs nothing at capture and gives, launched twice, the same bits as the sequence run twice
** directly; every call a CUDA capture cannot hold is refused with a message naming it and
** invalidates the capture (record, wait, host waits, a pageable copy, a collective, allocation, a
** nested capture, a graph launch inside a capture, capture under sync-debug), while other streams
** keep working; the race checker sees a replay's footprints (a planted missing wait before a
** launch fails naming the graph's operation, and passes with the wait); bytes per link are counted
** per launch, not at capture. The collectives are stubbed as one-rank copies (no MPI).
*/
#define ZK_C 64                /* small shapes: the kernels are compiled, only convert.cu runs */
#define ZK_NH 2
#define ZK_T 16
#define ZK_V 64
#define ZK_F 256
#define ZK_L 1
#include "../../templates/cuda_trainer/zr_gpu_emu.cpp"

#include "zt.h"

extern "C" {
static char fake_comm;
int zr_comm_create(ZrComm **c) { *c = (ZrComm *)&fake_comm; return 0; }
void zr_comm_destroy(ZrComm *c) { (void)c; }
int zr_comm_world(const ZrComm *c) { (void)c; return 1; }
int zr_all_gather(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; memmove(r, s, (size_t)n * (d == ZR_DT_FP32 ? 4 : 2)); return 0; }
int zr_reduce_scatter(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; memmove(r, s, (size_t)n * (d == ZR_DT_FP32 ? 4 : 2)); return 0; }
int zr_all_reduce(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)q; memmove(r, s, (size_t)n * (d == ZR_DT_FP32 ? 4 : 2)); return 0; }
}

enum { N = 64 };               /* floats per array */

struct Rig {
    ZrGpu *g = nullptr;
    ZrGpuStream *h = nullptr, *c = nullptr;
    ZrGpuEvent *e = nullptr;
    float *x = nullptr, *y = nullptr, *w = nullptr, *z = nullptr;   /* device */
    float host[4 * N];
    Rig()
    {
        zr_gpu_open(&g, 0, nullptr, 0);
        zr_gpu_stream_create(g, &h, "h2d");
        zr_gpu_stream_create(g, &c, "compute");
        zr_gpu_event_create(g, &e);
        char *d = nullptr;
        zr_gpu_malloc(g, (void **)&d, 4 * N * sizeof(float));
        x = (float *)d; y = x + N; w = y + N; z = w + N;
        zr_gpu_host_register(g, host, sizeof host);
        for (int i = 0; i < 4 * N; i++) host[i] = (float)((i * 37) % 23) / 8.0f - 1.0f;
        zr_gpu_copy(h, ZR_GPU_H2D, x, host, sizeof host);
        zr_gpu_stream_sync(h);
    }
    ~Rig()
    {
        zr_gpu_event_destroy(e);
        zr_gpu_close(g);
    }
    /* y += x (convert.cu); z (8x8) = y (8x8) @ w (8x8) + z; x[0..16) = 0; w = z: every kind of
    ** operation a module's graph holds */
    int sequence(ZrGpuStream *s)
    {
        long n = N;
        int fmt = 1;
        float *acc = y;
        const float *src = x;
        void *args[] = {&acc, &src, &n, &fmt, nullptr};
        const unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
        int rc;
        if ((rc = zr_gpu_footprint(s, x, N * 4, 0)) || (rc = zr_gpu_footprint(s, y, N * 4, 1)) ||
            (rc = zr_gpu_launch(s, "zd_add_f32", grid, block, 0, args)))
            return rc;
        if ((rc = zr_gpu_sgemm(s, 0, 0, 8, 8, 8, 1.0f, y, 8, w, 8, 1.0f, z, 8))) return rc;
        if ((rc = zr_gpu_memset(s, x, 0, 16 * 4))) return rc;
        return zr_gpu_copy(s, ZR_GPU_D2D, w, z, N * 4);
    }
    std::vector<float> read()
    {
        std::vector<float> out(4 * N);
        zr_gpu_copy(c, ZR_GPU_D2H, host, x, sizeof host);
        zr_gpu_stream_sync(c);
        memcpy(out.data(), host, sizeof host);
        return out;
    }
};

static bool has(const char *msg, const char *s) { return strstr(msg, s) != nullptr; }

static void t_replay_equals_direct(void)
{
    Rig d, g;
    std::vector<float> before = g.read();
    ZT_EQ_INT(d.sequence(d.c), 0);        /* the first run uncaptured, as the trainer does */
    ZT_EQ_INT(d.sequence(d.c), 0);
    ZT_EQ_INT(d.sequence(d.c), 0);
    ZT_EQ_INT(g.sequence(g.c), 0);
    ZrGpuGraph *gr = nullptr;
    ZT_EQ_INT(zr_gpu_capture_begin(g.c), 0);
    ZT_EQ_INT(g.sequence(g.c), 0);
    ZT_EQ_INT(zr_gpu_capture_end(g.c, &gr), 0);
    ZT_CHECK(gr != nullptr);
    std::vector<float> mid = g.read();    /* nothing of the capture ran */
    std::vector<float> want_mid;
    {
        Rig o;
        ZT_EQ_INT(o.sequence(o.c), 0);
        want_mid = o.read();
    }
    ZT_CHECK(memcmp(mid.data(), want_mid.data(), mid.size() * 4) == 0);
    ZT_CHECK(memcmp(mid.data(), before.data(), mid.size() * 4) != 0);
    ZT_EQ_INT(zr_gpu_graph_launch(g.c, gr), 0);
    ZT_EQ_INT(zr_gpu_graph_launch(g.c, gr), 0);
    std::vector<float> a = d.read(), b = g.read();
    ZT_CHECK(memcmp(a.data(), b.data(), a.size() * 4) == 0);
    ZT_EQ_INT((int)g.g->graph_launches, 2);
    ZT_EQ_INT((int)g.g->graph_ops, 8);
    zr_gpu_graph_destroy(gr);
}

/* Each call runs inside a fresh capture on compute; it must fail, name itself, and make the
** capture's end fail naming it. */
static void refused(const char *name, const std::function<int(Rig &)> &call, const char *want)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_capture_begin(r.c), 0);
    ZT_EQ_INT(r.sequence(r.c), 0);
    int rc = call(r);
    std::string m = zr_gpu_strerror(r.g);
    ZT_CHECKM(rc == -EINVAL && has(m.c_str(), want) && has(m.c_str(), "is capturing a graph"),
              "%s: rc %d, message: %s", name, rc, m.c_str());
    ZrGpuGraph *gr = nullptr;
    rc = zr_gpu_capture_end(r.c, &gr);
    m = zr_gpu_strerror(r.g);
    ZT_CHECKM(rc == -EINVAL && !gr && has(m.c_str(), "was invalidated") && has(m.c_str(), want),
              "%s: end rc %d, message: %s", name, rc, m.c_str());
    ZT_EQ_INT(r.sequence(r.c), 0);          /* the stream works uncaptured again */
    ZT_EQ_INT(zr_gpu_stream_sync(r.c), 0);
}

static void t_illegal_in_capture(void)
{
    static float pageable[N];
    refused("record", [](Rig &r) { return zr_gpu_record(r.e, r.c); }, "zr_gpu_record");
    refused("wait", [](Rig &r) { return zr_gpu_wait(r.c, r.e); }, "zr_gpu_wait");
    refused("event_sync", [](Rig &r) { zr_gpu_record(r.e, r.h); return zr_gpu_event_sync(r.e); }, "zr_gpu_event_sync");
    refused("stream_sync other", [](Rig &r) { return zr_gpu_stream_sync(r.h); }, "zr_gpu_stream_sync");
    refused("stream_sync", [](Rig &r) { return zr_gpu_stream_sync(r.c); }, "zr_gpu_stream_sync");
    refused("pageable", [](Rig &r) { return zr_gpu_copy(r.c, ZR_GPU_D2H, pageable, r.x, sizeof pageable); },
            "copy D2H of 256 bytes with pageable host memory");
    refused("collective", [](Rig &r) {
        zr_gpu_coll_init(r.g, nullptr, r.h);
        return zr_gpu_coll(r.c, ZR_COLL_ALL_REDUCE, r.x, r.y, 4, ZR_DT_FP32);
    }, "zr_gpu_coll");
    refused("malloc", [](Rig &r) { void *p; return zr_gpu_malloc(r.g, &p, 64); }, "zr_gpu_malloc");
    refused("register", [](Rig &r) { return zr_gpu_host_register(r.g, pageable, sizeof pageable); },
            "zr_gpu_host_register");
    refused("nested", [](Rig &r) { return zr_gpu_capture_begin(r.c); }, "nested capture");
    refused("graph in capture", [](Rig &r) {
        ZrGpuGraph *other = nullptr;
        ZT_EQ_INT(zr_gpu_capture_begin(r.h), 0);
        ZT_EQ_INT(zr_gpu_capture_end(r.h, &other), 0);
        return zr_gpu_graph_launch(r.c, other);
    }, "graph inside a capture");
}

static void t_other_streams_and_misuse(void)
{
    Rig r;
    ZT_EQ_INT(zr_gpu_capture_begin(r.c), 0);
    ZT_EQ_INT(zr_gpu_copy(r.h, ZR_GPU_D2H, r.host, r.z, 16), 0);   /* another stream: as usual */
    ZT_EQ_INT(zr_gpu_record(r.e, r.h), 0);
    ZrGpuGraph *gr = nullptr;
    ZT_EQ_INT(zr_gpu_capture_end(r.c, &gr), 0);                    /* an empty graph is legal */
    ZT_EQ_INT(zr_gpu_event_sync(r.e), 0);
    ZT_EQ_INT(zr_gpu_capture_end(r.c, &gr), -EINVAL);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "not capturing"), "message: %s", zr_gpu_strerror(r.g));
    zr_gpu_set_sync_debug(r.g, 1);
    ZT_EQ_INT(zr_gpu_capture_begin(r.c), -EINVAL);
    ZT_CHECKM(has(zr_gpu_strerror(r.g), "sync-debug"), "message: %s", zr_gpu_strerror(r.g));
}

/* The graph reads x; the h2d stream writes x. Without a wait between the copy and the launch the
** launch's first operation races; with record/wait it does not. */
static void t_race_around_replay(void)
{
    for (int with_wait = 0; with_wait < 2; with_wait++) {
        Rig r;
        ZT_EQ_INT(r.sequence(r.c), 0);
        ZT_EQ_INT(zr_gpu_stream_sync(r.c), 0);
        ZrGpuGraph *gr = nullptr;
        ZT_EQ_INT(zr_gpu_capture_begin(r.c), 0);
        ZT_EQ_INT(r.sequence(r.c), 0);
        ZT_EQ_INT(zr_gpu_capture_end(r.c, &gr), 0);
        ZT_EQ_INT(zr_gpu_copy(r.h, ZR_GPU_H2D, r.x, r.host, N * 4), 0);
        if (with_wait) {
            ZT_EQ_INT(zr_gpu_record(r.e, r.h), 0);
            ZT_EQ_INT(zr_gpu_wait(r.c, r.e), 0);
        }
        int rc = zr_gpu_graph_launch(r.c, gr);
        const char *m = zr_gpu_strerror(r.g);
        if (with_wait) {
            ZT_EQ_INT(rc, 0);
            ZT_EQ_INT(zr_gpu_stream_sync(r.c), 0);
        } else {
            ZT_CHECKM(rc == -EFAULT && has(m, "kernel zd_add_f32 (graph captured on compute)") &&
                      has(m, "copy H2D of 256 bytes (operation 2 on stream h2d) wrote"), "rc %d, message: %s", rc, m);
        }
    }
}

static void t_bytes_per_launch(void)
{
    Rig r;
    ZrGpuBytes b0, b1, b2;
    zr_gpu_bytes(r.g, &b0);
    ZrGpuGraph *gr = nullptr;
    ZT_EQ_INT(zr_gpu_capture_begin(r.c), 0);
    ZT_EQ_INT(r.sequence(r.c), 0);
    ZT_EQ_INT(zr_gpu_copy(r.c, ZR_GPU_D2H, r.host, r.x, 64), 0);   /* pinned: legal */
    ZT_EQ_INT(zr_gpu_capture_end(r.c, &gr), 0);
    zr_gpu_bytes(r.g, &b1);
    ZT_CHECK(b1.d2d == b0.d2d && b1.d2h == b0.d2h);
    ZT_EQ_INT(zr_gpu_graph_launch(r.c, gr), 0);
    ZT_EQ_INT(zr_gpu_graph_launch(r.c, gr), 0);
    zr_gpu_bytes(r.g, &b2);
    ZT_EQ_INT((int)(b2.d2d - b0.d2d), 2 * N * 4);
    ZT_EQ_INT((int)(b2.d2h - b0.d2h), 2 * 64);
    ZT_EQ_INT(zr_gpu_stream_sync(r.c), 0);
}

int main(void)
{
    ZT_RUN(t_replay_equals_direct);
    ZT_RUN(t_illegal_in_capture);
    ZT_RUN(t_other_streams_and_misuse);
    ZT_RUN(t_race_around_replay);
    ZT_RUN(t_bytes_per_launch);
    return zt_end();
}
