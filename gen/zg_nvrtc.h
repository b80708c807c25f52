/*
** zg_nvrtc.h — the CUDA kernels at generation time: NVRTC (loaded with dlopen, so zgen builds and
** runs without CUDA) compiles every kernel file of templates/cuda/kernels for each target architecture, and
** the cubin and PTX are embedded as byte arrays in out/<name>/cuda/zg_kernels_bin.c.
** docs/CUDA.md describes the kernels, the emitted files and the table.
*/
#ifndef ZG_NVRTC_H
#define ZG_NVRTC_H
#include "zg.h"
#include "zg_plan.h"

/* One CUDA source: a kernel file, or a header it includes (by `name`). */
typedef struct ZgCudaSrc {
    const char *name;           /* kernel: "attention" (file name less .cu); header: "zk_common.cuh" */
    const char *rel;            /* "templates/cuda/kernels/attention.cu"; errors are reported here */
    const char *text;           /* the template's text (what NVRTC compiles, line for line) */
} ZgCudaSrc;

/* The result of one compilation. */
typedef struct ZgKernelBin {
    const char *kernel;         /* "attention" */
    int arch;                   /* 80 = sm_80 */
    unsigned char *cubin; size_t cubin_len;
    char *ptx; size_t ptx_len;  /* without the terminating NUL */
} ZgKernelBin;

/* Architectures compiled for when the spec names none (the knob is the front end's): sm_80, sm_90. */
extern const int zg_cuda_default_archs[];
extern const int zg_cuda_n_default_archs;

/* Loads libnvrtc once ($ZGEN_NVRTC names the library; ZGEN_NVRTC=off disables it). false when it
** cannot be loaded; *why (static text) says why. */
bool zg_nvrtc_load(const char **why);
/* "13.0" after a successful load. */
const char *zg_nvrtc_version(void);
/* Compiles kernel k (headers hdr[0..n_hdr) resolvable by name) for sm_<arch>. On a compile error
** every error of NVRTC's log is reported through zg_error at the template file:line it names,
** with the kernel's name, and false is returned. Results are cached by content (see nvrtc.c). */
bool zg_nvrtc_compile(const ZgCudaSrc *k, const ZgCudaSrc *hdr, int n_hdr, int arch, ZgKernelBin *out);
/* The emitted zk_shapes.h: the plan's shapes as the kernels' ZK_* macros. malloc'd. */
char *zg_cuda_shapes_h(const ZgPlan *p);
/* The emitted zg_kernels_bin.c / .h for n results (n may be 0: sources only). malloc'd. */
char *zg_cuda_bin_c(const ZgKernelBin *b, int n, const char *nvrtc_version, size_t *len);
char *zg_cuda_bin_h(void);
#endif
