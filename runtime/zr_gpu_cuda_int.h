/*
** zr_gpu_cuda_int.h — between the two files of the GPU build of runtime/zr_gpu.h: zr_gpu_cuda.c
** (driver API, cuBLAS, NCCL; owns struct ZrGpu) and zr_gpu_blaslt.c (cuBLASLt GEMMs with fused
** epilogues). The cuBLASLt file keeps its own state and reaches the GPU's through these accessors,
** so that neither file needs the other's structures. Only with -DZR_WITH_CUDA.
*/
#ifndef ZR_GPU_CUDA_INT_H
#define ZR_GPU_CUDA_INT_H
#include <stddef.h>
#include "zr_gpu.h"

/* The GPU a stream belongs to, and the stream's CUstream (as void *). */
ZrGpu *zr_gpu_stream_gpu(const ZrGpuStream *s);
void *zr_gpu_stream_handle(const ZrGpuStream *s);
/* Sets what zr_gpu_strerror(g) returns (printf-style). */
void zr_gpu_set_error(ZrGpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* zr_gpu_blaslt.c's state of g: its handle, workspace and cached algorithms, freed while the
** context still exists (zr_gpu_close calls it). */
void zr_gpu_blaslt_close(ZrGpu *g);
#endif
