/*
** zr_gpu_emu_coll.h — the GPU stand-in's collectives: libzrt's MPI collectives on a communicator of
** their own (as NCCL has its own), blocking inside the queued operation, and collective groups,
** which queue nothing until their end and then their members as one operation. A part of
** zr_gpu_emu.cpp, included once at its end (it enqueues through push() and refuses through
** refuse_in_capture()); apart as runtime/zr_gpu_coll.c is apart from zr_gpu_cuda.c.
*/
extern "C" int zr_gpu_coll_init(ZrGpu *g, ZrComm *comm, ZrGpuStream *s)
{
    (void)comm; (void)s;
    if (g->comm) return 0;
    int rc = zr_comm_create(&g->comm);
    return rc < 0 ? fail(g, rc, "emulated GPU: communicator") : 0;
}

extern "C" int zr_gpu_coll(ZrGpuStream *s, ZrCollOp op, const void *send, void *recv, int64_t count,
                           ZrDtype dt)
{
    ZrGpu *g = s->g;
    if (s->cap) return refuse_in_capture(g, s, "zr_gpu_coll (a collective)");
    if (!g->comm) return fail(g, -EINVAL, "zr_gpu_coll before zr_gpu_coll_init");
    size_t es = dt == ZR_DT_FP32 ? 4 : 2, ws = (size_t)zr_comm_world(g->comm), n = (size_t)count * es;
    std::vector<Fp> fp;
    std::string what;
    switch (op) {
    case ZR_COLL_ALL_GATHER: fp = {rd(send, n), wr(recv, n * ws)}; what = "all_gather"; break;
    case ZR_COLL_REDUCE_SCATTER: fp = {rd(send, n * ws), wr(recv, n)}; what = "reduce_scatter"; break;
    default: fp = {rd(send, n), wr(recv, n)}; what = "all_reduce"; break;
    }
    what += " of " + std::to_string(count) + " elements";
    auto run = [=]() {
        switch (op) {
        case ZR_COLL_ALL_GATHER: return zr_all_gather(g->comm, send, recv, count, dt, nullptr);
        case ZR_COLL_REDUCE_SCATTER: return zr_reduce_scatter(g->comm, send, recv, count, dt, nullptr);
        case ZR_COLL_ALL_REDUCE: return zr_all_reduce(g->comm, send, recv, count, dt, nullptr);
        default: return fail(g, -EINVAL, "emulated GPU: collective not supported");
        }
    };
    int64_t net = zr_gpu_coll_net_bytes(op, count, dt, (int)ws);
    if (!g->group_depth) {
        int rc = push(s, run, what, fp);
        if (!rc) g->moved.net += net;
        return rc;
    }
    if (g->group_s && g->group_s != s)
        return fail(g, -EINVAL, "emulated GPU: a collective group's members on two streams (" +
                    g->group_s->name + ", " + s->name + ")");
    g->group_s = s;
    g->group_fns.push_back(run);
    g->group_fp.insert(g->group_fp.end(), fp.begin(), fp.end());
    g->group_what += (g->group_what.empty() ? "" : " + ") + what;
    g->moved.net += net;
    return 0;
}

extern "C" int zr_gpu_group_begin(ZrGpu *g)
{
    g->group_depth++;
    return 0;
}

/* The members run back to back inside one queued operation: they complete together. */
extern "C" int zr_gpu_group_end(ZrGpu *g)
{
    if (!g->group_depth) return fail(g, -EINVAL, "emulated GPU: zr_gpu_group_end without zr_gpu_group_begin");
    if (--g->group_depth || !g->group_s) return 0;
    std::vector<std::function<int()>> fns;
    fns.swap(g->group_fns);
    std::string what = g->group_what + " (one group of " + std::to_string(fns.size()) + ")";
    ZrGpuStream *s = g->group_s;
    g->group_s = nullptr;
    g->group_what.clear();
    std::vector<Fp> fp;
    fp.swap(g->group_fp);
    return push(s, [fns]() {
        for (const auto &f : fns)
            if (int rc = f()) return rc;
        return 0;
    }, what, fp);
}
