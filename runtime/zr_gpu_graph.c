/*
** zr_gpu_graph.c — graphs of runtime/zr_gpu.h on a real GPU: stream capture (cuStreamBeginCapture in
** THREAD_LOCAL mode, so that an unsafe call of this thread during a capture fails instead of
** silently escaping it, while other threads are not constrained), instantiation at the end
** (cuGraphInstantiateWithFlags) and one cuGraphLaunch per replay. The rules of what a capture may
** not hold are checked by the API itself before the driver sees the call (zr_gpu_capture_refuse),
** with the same words as the stand-in (templates/cuda_trainer/zr_gpu_emu.cpp), so both refuse the
** same calls. Built only with -DZR_WITH_CUDA, as zr_gpu_cuda.c, whose driver handle resolved the
** entry points (zr_gpu_cuda_int.h, ZC_GRAPH_FNS).
*/
#ifdef ZR_WITH_CUDA
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zr_gpu.h"
#include "zr_gpu_cuda_int.h"  /* defines: struct ZrGpu, zr_drv_cuGraphLaunch & co */

#define DRV(f) zr_drv_##f

struct ZrGpuGraph {
    ZrGpu *g;
    CUgraph graph;
    CUgraphExec exec;
    ZrGpuBytes moved;          /* per link, added at each launch */
    char last_kernel[64];      /* the capture's last kernel, for a fault's hint */
    ZrGpuGraph *next;
};

static void graphs_close(ZrGpu *g);
static const ZrGpuPart graph_part = {"graphs", graphs_close};

int zr_gpu_capture_begin(ZrGpuStream *s)
{
    ZrGpu *g = s->g;
    if (s->capturing) return zr_gpu_capture_refuse(g, s, "zr_gpu_capture_begin (a nested capture)");
    if (g->sync_debug) {
        zr_gpu_set_error(g, "zr_gpu_capture_begin under sync-debug (it runs uncaptured, to name a faulting kernel)");
        return -EINVAL;
    }
    if (g->group_depth) {
        zr_gpu_set_error(g, "zr_gpu_capture_begin inside an open collective group");
        return -EINVAL;
    }
    g->part[ZR_GPU_PART_GRAPH] = &graph_part;  /* zr_gpu_close ends what this capture leaves */
    CUresult r = DRV(cuStreamBeginCapture)(s->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) return zr_gpu_cu_fail(g, r, "cuStreamBeginCapture");
    s->capturing = 1;
    s->cap_bad[0] = 0;
    memset(&s->cap_moved, 0, sizeof s->cap_moved);
    s->last_kernel[0] = 0;
    g->n_capturing++;
    return 0;
}

/* Ends the driver's capture whatever happened, so the stream is usable again. */
static CUresult end_capture(ZrGpuStream *s, CUgraph *graph)
{
    *graph = NULL;
    CUresult r = DRV(cuStreamEndCapture)(s->s, graph);
    s->capturing = 0;
    s->g->n_capturing--;
    return r;
}

int zr_gpu_capture_end(ZrGpuStream *s, ZrGpuGraph **out)
{
    ZrGpu *g = s->g;
    *out = NULL;
    if (!s->capturing) {
        zr_gpu_set_error(g, "zr_gpu_capture_end on stream %s, which is not capturing", s->name);
        return -EINVAL;
    }
    CUgraph graph;
    CUresult r = end_capture(s, &graph);
    char what[320];
    if (s->cap_bad[0]) {
        if (graph) DRV(cuGraphDestroy)(graph);
        snprintf(what, sizeof what, "%s", s->cap_bad);
        zr_gpu_set_error(g, "the capture on stream %s was invalidated: %s", s->name, what);
        return -EINVAL;
    }
    snprintf(what, sizeof what, "cuStreamEndCapture on stream %s", s->name);
    if (r != CUDA_SUCCESS) return zr_gpu_cu_fail(g, r, what);
    ZrGpuGraph *gr = calloc(1, sizeof *gr);
    if (!gr) { DRV(cuGraphDestroy)(graph); return -ENOMEM; }
    r = DRV(cuGraphInstantiateWithFlags)(&gr->exec, graph, 0);
    if (r != CUDA_SUCCESS) {
        DRV(cuGraphDestroy)(graph);
        free(gr);
        return zr_gpu_cu_fail(g, r, "cuGraphInstantiateWithFlags");
    }
    gr->g = g;
    gr->graph = graph;
    gr->moved = s->cap_moved;
    snprintf(gr->last_kernel, sizeof gr->last_kernel, "%s", s->last_kernel);
    gr->next = g->graphs;
    g->graphs = gr;
    *out = gr;
    return 0;
}

int zr_gpu_graph_launch(ZrGpuStream *s, ZrGpuGraph *gr)
{
    ZrGpu *g = s->g;
    if (s->capturing) return zr_gpu_capture_refuse(g, s, "zr_gpu_graph_launch (a graph inside a capture)");
    if (!gr || gr->g != g) {
        zr_gpu_set_error(g, "zr_gpu_graph_launch of a graph of another GPU");
        return -EINVAL;
    }
    char what[96];
    snprintf(what, sizeof what, "cuGraphLaunch on stream %s", s->name);
    CUresult r = DRV(cuGraphLaunch)(gr->exec, s->s);
    if (r != CUDA_SUCCESS) return zr_gpu_cu_fail(g, r, what);
    if (gr->last_kernel[0]) snprintf(s->last_kernel, sizeof s->last_kernel, "%.40s (in a graph)", gr->last_kernel);
    g->moved.h2d += gr->moved.h2d;
    g->moved.d2h += gr->moved.d2h;
    g->moved.d2d += gr->moved.d2d;
    g->moved.net += gr->moved.net;
    return 0;
}

/* As cudaGraphExecDestroy: a launch already enqueued still completes. */
void zr_gpu_graph_destroy(ZrGpuGraph *gr)
{
    if (!gr) return;
    ZrGpu *g = gr->g;
    for (ZrGpuGraph **p = &g->graphs; *p; p = &(*p)->next)
        if (*p == gr) { *p = gr->next; break; }
    CUresult r = DRV(cuGraphExecDestroy)(gr->exec);
    if (r == CUDA_SUCCESS) r = DRV(cuGraphDestroy)(gr->graph);
    if (r != CUDA_SUCCESS) {
        char keep[sizeof g->err];
        memcpy(keep, g->err, sizeof keep);
        zr_gpu_cu_fail(g, r, "destroying a graph");
        fprintf(stderr, "zr_gpu: %s\n", g->err);
        memcpy(g->err, keep, sizeof keep);
    }
    free(gr);
}

/* Ends the captures still open and destroys every graph (zr_gpu_close, before the context goes). */
static void graphs_close(ZrGpu *g)
{
    for (int i = 0; i < g->n_streams; i++)
        if (g->streams[i]->capturing) {
            CUgraph graph;
            if (end_capture(g->streams[i], &graph) == CUDA_SUCCESS && graph) DRV(cuGraphDestroy)(graph);
        }
    while (g->graphs) zr_gpu_graph_destroy(g->graphs);
}
#endif
