/*
** zr_gpu_state.c — the helpers every file of the GPU build shares (zr_gpu_cuda_int.h): the error
** text of a ZrGpu, a stream's GPU and handle, the refusal of a call during a graph capture. They
** read and write struct ZrGpu alone and call no other file of the build, so the driver core and the
** parts above it (graphs, collectives, cuBLASLt) all depend on this file and it on none of them.
** Built only in CUDA builds (-DZR_WITH_CUDA); compiles to nothing otherwise.
*/
#ifdef ZR_WITH_CUDA
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "zr_gpu.h"
#include "zr_gpu_cuda_int.h"  /* defines: struct ZrGpu, struct ZrGpuStream */

ZrGpu *zr_gpu_stream_gpu(const ZrGpuStream *s) { return s->g; }
void *zr_gpu_stream_handle(const ZrGpuStream *s) { return (void *)s->s; }

void zr_gpu_set_error(ZrGpu *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
}

int zr_gpu_blas_fail(ZrGpu *g, cublasStatus_t st, const char *what)
{
    snprintf(g->err, sizeof g->err, "%s: %s (%s)", what,
             cublasGetStatusName(st), cublasGetStatusString(st));
    return st == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : -EIO;
}

int zr_gpu_capture_refuse(ZrGpu *g, ZrGpuStream *s, const char *call)
{
    ZrGpuStream *c = s;
    for (int i = 0; !c && i < g->n_streams; i++) if (g->streams[i]->capturing) c = g->streams[i];
    zr_gpu_set_error(g, "%s while stream %s is capturing a graph (%s)", call, c ? c->name : "?",
                     s ? "not allowed on a capturing stream" : "not allowed during a capture");
    for (int i = 0; i < g->n_streams; i++) {
        ZrGpuStream *t = g->streams[i];
        if (t->capturing && (!s || t == s) && !t->cap_bad[0]) snprintf(t->cap_bad, sizeof t->cap_bad, "%.255s", g->err);
    }
    return -EINVAL;
}
#endif
