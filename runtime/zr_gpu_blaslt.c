/*
** zr_gpu_blaslt.c — the gemms of runtime/zr_gpu.h on a GPU: zr_gpu_sgemm and zr_gpu_gemm_ex through
** cuBLAS (linked), and zr_gpu_gemm_lt through cublasLtMatmul with a fused epilogue (bias, GELU with
** its pre-activation saved, GELU backward, bias gradient), so that a linear layer's bias, its GELU
** and their gradients ride on the GEMM instead of costing launches of their own.
** Why a file of its own: zr_gpu_cuda.c owns the driver, zr_gpu_coll.c NCCL; this file owns the BLAS
** libraries. cuBLAS's handle is struct ZrGpu's (created at open); cuBLASLt's state is kept here and
** reaches the GPU's stream and error text through zr_gpu_cuda_int.h's accessors.
** - libcublasLt is opened with dlopen (libcublasLt.so.<cuBLAS major>, ZR_LIBCUBLASLT names another:
**   the stub tests), at the first call; a missing library or entry point is a named error.
** - Row-major in, column-major cuBLASLt out, as zr_gpu_gemm_ex: D^T = op(B)^T op(A)^T, so cuBLASLt's
**   A is our B and its rows are our columns. A bias of N elements is then cuBLASLt's row bias
**   (CUBLASLT_EPILOGUE_BIAS), and the column sums of op(B) over k are CUBLASLT_EPILOGUE_BGRADA.
** - COMPUTE_32F with fp32 scale: every product and sum in fp32 (tensor cores for 16-bit A and B;
**   no TF32 for fp32 ones), except that fp32 A and B take COMPUTE_32F_FAST_TF32 after
**   zr_gpu_set_tf32(g, 1) (the caller's decision: gen's ZK_TF32).
** - zr_gpu_sgemm and zr_gpu_gemm_ex set the cuBLAS handle's math mode per call when it changes:
**   PEDANTIC for fp32 operands (TF32_TENSOR_OP under zr_gpu_set_tf32, with COMPUTE_32F_FAST_TF32 for
**   cublasGemmEx), DEFAULT without reduced-precision reductions for 16-bit ones.
** - Plans: the first call of a shape (sizes, transposes, leading dimensions, dtypes, epilogue, and the
**   alignment of every pointer, which cuBLASLt's heuristic takes into account) creates the operation
**   and layout descriptors and asks cublasLtMatmulAlgoGetHeuristic for the best algorithm within one
**   workspace (32 MiB, allocated once per GPU); later calls only set the bias and aux pointers on the
**   cached descriptor and run. A train step repeats the first step's shapes, so after the first step
**   nothing is chosen. At most ZL_MAX_PLANS shapes per GPU (-E2BIG beyond, named).
** Verified without a GPU against the stub libraries (tests/cuda/t_gpu_stub.sh, whose stub cuBLASLt
** checks the descriptors and computes the epilogues by their specification).
*/
#ifdef ZR_WITH_CUDA
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#include <cublas_api.h>
#pragma GCC diagnostic pop

#include "zr_gpu.h"
#include "zr_gpu_cuda_int.h"

#define ZL_FNS(X) X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) \
    X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) \
    X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
    X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
#define ZL_STR2(x) #x
#define ZL_STR(x) ZL_STR2(x)
#define ZL_DECL(f) static __typeof__(f) *l_##f;
ZL_FNS(ZL_DECL)

#define ZL_MAX_PLANS 512
#define ZL_WORKSPACE ((size_t)32 << 20)     /* what cuBLAS recommends for Hopper; enough for Ampere */

/* What makes two calls the same plan. Alignments are of the pointers, capped at 256 bytes. */
typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldd, ldaux, ab, dt, epi, tf32;
    unsigned al_a, al_b, al_c, al_d, al_bias, al_aux;
} Key;

typedef struct {
    Key k;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;       /* cuBLASLt's A (our B), B (our A), C = D */
    cublasLtMatmulAlgo_t algo;
} Plan;

typedef struct Lt {
    ZrGpu *g;
    cublasLtHandle_t h;
    void *ws;
    Plan plan[ZL_MAX_PLANS];
    int n_plan;
    struct Lt *next;
} Lt;

static Lt *lts;               /* one per open GPU (a process opens one) */
static void blaslt_close(ZrGpu *g);
static const ZrGpuPart blaslt_part = {"cuBLASLt", blaslt_close};

static int lib_load(ZrGpu *g)
{
    static int state;         /* 0 not tried, 1 loaded, -1 failed */
    static char why[512];
    if (state) {
        if (state < 0) zr_gpu_set_error(g, "%s", why);
        return state > 0 ? 0 : -ENODEV;
    }
    state = -1;
    const char *lib = getenv("ZR_LIBCUBLASLT");
    if (!lib || !*lib) lib = "libcublasLt.so." ZL_STR(CUBLAS_VER_MAJOR);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof why, "cuBLASLt: cannot open %s (%s): install the CUDA toolkit's cuBLAS %d "
                 "libraries or set ZR_LIBCUBLASLT", lib, dlerror(), CUBLAS_VER_MAJOR);
        zr_gpu_set_error(g, "%s", why);
        return -ENODEV;
    }
#define ZL_LOAD(f) \
    if (!(*(void **)&l_##f = dlsym(h, #f))) { \
        snprintf(why, sizeof why, "cuBLASLt: %s lacks %s (older than cuBLAS %d?)", lib, #f, CUBLAS_VER_MAJOR); \
        zr_gpu_set_error(g, "%s", why); \
        return -ENODEV; \
    }
    ZL_FNS(ZL_LOAD)
#undef ZL_LOAD
    state = 1;
    return 0;
}

static int lt_fail(ZrGpu *g, cublasStatus_t st, const char *what)
{
    zr_gpu_set_error(g, "%s: %s (%s)", what, cublasGetStatusName(st), cublasGetStatusString(st));
    return st == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : st == CUBLAS_STATUS_NOT_SUPPORTED ? -ENOTSUP : -EIO;
}
#define LT(g, what, call) do { cublasStatus_t st_ = (call); if (st_ != CUBLAS_STATUS_SUCCESS) return lt_fail((g), st_, (what)); } while (0)

static Lt *lt_get(ZrGpu *g, int *rc)
{
    for (Lt *l = lts; l; l = l->next) if (l->g == g) return l;
    if ((*rc = lib_load(g)) < 0) return NULL;
    Lt *l = calloc(1, sizeof *l);
    if (!l) { *rc = -ENOMEM; return NULL; }
    l->g = g;
    cublasStatus_t st = l_cublasLtCreate(&l->h);
    if (st != CUBLAS_STATUS_SUCCESS) { *rc = lt_fail(g, st, "cublasLtCreate"); free(l); return NULL; }
    if ((*rc = zr_gpu_malloc(g, &l->ws, ZL_WORKSPACE)) < 0) { l_cublasLtDestroy(l->h); free(l); return NULL; }
    l->next = lts;
    lts = l;
    g->part[ZR_GPU_PART_BLASLT] = &blaslt_part;
    return l;
}

static void plan_free(Plan *p)
{
    if (p->op) l_cublasLtMatmulDescDestroy(p->op);
    if (p->la) l_cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) l_cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) l_cublasLtMatrixLayoutDestroy(p->lc);
}

/* g's handle, workspace and cached algorithms, freed while the context still exists. */
static void blaslt_close(ZrGpu *g)
{
    for (Lt **pl = &lts; *pl; pl = &(*pl)->next) {
        Lt *l = *pl;
        if (l->g != g) continue;
        for (int i = 0; i < l->n_plan; i++) plan_free(&l->plan[i]);
        zr_gpu_free(g, l->ws);
        cublasStatus_t st = l_cublasLtDestroy(l->h);
        if (st != CUBLAS_STATUS_SUCCESS) fprintf(stderr, "zr_gpu: cublasLtDestroy: %s\n", cublasGetStatusName(st));
        *pl = l->next;
        free(l);
        return;
    }
}

static unsigned align_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    unsigned al = 256;
    while (al > 1 && (a & (al - 1))) al /= 2;
    return al;
}

static cudaDataType_t cu_dt(int t)
{
    return t == ZR_DT_BF16 ? CUDA_R_16BF : t == ZR_DT_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

static const char *epi_name(int e)
{
    static const char *const n[] = {"NONE", "BIAS", "GELU_BIAS", "DGELU", "BGRAD"};
    return e >= 0 && e <= 4 ? n[e] : "?";
}

/* Descriptors and the heuristic's algorithm for key k; bias and aux are this call's pointers (their
** alignment is part of the key: the heuristic reads it from the descriptor). */
static int plan_make(Lt *l, Plan *p, const Key *k, void *bias, void *aux)
{
    ZrGpu *g = l->g;
    static const cublasLtEpilogue_t epi[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                             CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
                                             CUBLASLT_EPILOGUE_BGRADA};
    memset(p, 0, sizeof *p);
    p->k = *k;
    cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t e = (uint32_t)epi[k->epi];
    LT(g, "cublasLtMatmulDescCreate", l_cublasLtMatmulDescCreate(&p->op, k->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(g, "cublasLtMatmulDescSetAttribute(TRANSA)",
       l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    LT(g, "cublasLtMatmulDescSetAttribute(TRANSB)",
       l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    LT(g, "cublasLtMatmulDescSetAttribute(EPILOGUE)",
       l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    if (bias)
        LT(g, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
           l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (aux) {
        int64_t ld = k->ldaux;
        LT(g, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)",
           l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
        LT(g, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)",
           l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
    }
    /* column-major: cuBLASLt's A is our B (N x K, or K x N stored when transposed), its B our A */
    LT(g, "cublasLtMatrixLayoutCreate(A)",
       l_cublasLtMatrixLayoutCreate(&p->la, cu_dt(k->ab), (uint64_t)(k->tb ? k->K : k->N),
                                    (uint64_t)(k->tb ? k->N : k->K), k->ldb));
    LT(g, "cublasLtMatrixLayoutCreate(B)",
       l_cublasLtMatrixLayoutCreate(&p->lb, cu_dt(k->ab), (uint64_t)(k->ta ? k->M : k->K),
                                    (uint64_t)(k->ta ? k->K : k->M), k->lda));
    LT(g, "cublasLtMatrixLayoutCreate(C/D)",
       l_cublasLtMatrixLayoutCreate(&p->lc, cu_dt(k->dt), (uint64_t)k->N, (uint64_t)k->M, k->ldd));
    cublasLtMatmulPreference_t pref;
    LT(g, "cublasLtMatmulPreferenceCreate", l_cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = ZL_WORKSPACE;
    uint32_t al[4] = {k->al_b, k->al_a, k->al_c, k->al_d};
    cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    cublasStatus_t st = l_cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &ws, sizeof ws);
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = l_cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof al[i]);
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    memset(&res, 0, sizeof res);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = l_cublasLtMatmulAlgoGetHeuristic(l->h, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &n);
    l_cublasLtMatmulPreferenceDestroy(pref);
    char what[256];
    snprintf(what, sizeof what, "cuBLASLt heuristic for %d x %d x %d (ta %d tb %d, dtypes %d/%d, epilogue %s, "
             "alignments %u %u %u %u)", k->M, k->N, k->K, k->ta, k->tb, k->ab, k->dt, epi_name(k->epi),
             k->al_a, k->al_b, k->al_c, k->al_d);
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(g, st, what);
    if (n < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        zr_gpu_set_error(g, "%s: no algorithm (this cuBLASLt does not serve the combination)", what);
        return -ENOTSUP;
    }
    p->algo = res.algo;
    return 0;
}

int zr_gpu_gemm_lt(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                   int lda, const void *B, int ldb, ZrDtype ab, float beta, const void *C, void *D,
                   int ldd, ZrDtype dt, ZrGpuEpilogue epi, void *bias, void *aux, int ldaux)
{
    ZrGpu *g = zr_gpu_stream_gpu(s);
    int gelu = epi == ZR_GPU_EPI_GELU_BIAS || epi == ZR_GPU_EPI_DGELU;
    const char *bad = zr_gpu_gemm_lt_bad(ta, tb, M, N, K, lda, ldb, ab, beta, ldd, dt, epi, bias, aux, ldaux);
    if (bad) {
        zr_gpu_set_error(g, "zr_gpu_gemm_lt: %s: %d x %d x %d, ta %d tb %d, lda %d ldb %d ldd %d, dtypes %d/%d, "
                         "epilogue %s, ldaux %d", bad, M, N, K, ta, tb, lda, ldb, ldd, (int)ab, (int)dt,
                         epi_name((int)epi), ldaux);
        return -EINVAL;
    }
    int rc = 0;
    Lt *l = lt_get(g, &rc);
    if (!l) return rc;
    if (!C || beta == 0.0f) C = D;
    if (epi == ZR_GPU_EPI_NONE || epi == ZR_GPU_EPI_DGELU) bias = NULL;
    if (!gelu) aux = NULL;
    Key k = (Key){ta != 0, tb != 0, M, N, K, lda, ldb, ldd, gelu ? ldaux : 0, (int)ab, (int)dt, (int)epi,
              ab == ZR_DT_FP32 && g->tf32,
              align_of(A), align_of(B), align_of(C), align_of(D), bias ? align_of(bias) : 0, aux ? align_of(aux) : 0};
    Plan *p = NULL;
    for (int i = 0; i < l->n_plan && !p; i++)
        if (memcmp(&l->plan[i].k, &k, sizeof k) == 0) p = &l->plan[i];
    if (!p) {
        if (l->n_plan == ZL_MAX_PLANS) {
            zr_gpu_set_error(g, "zr_gpu_gemm_lt: more than %d GEMM shapes (each is planned once)", ZL_MAX_PLANS);
            return -E2BIG;
        }
        p = &l->plan[l->n_plan];
        if ((rc = plan_make(l, p, &k, bias, aux)) < 0) { plan_free(p); memset(p, 0, sizeof *p); return rc; }
        l->n_plan++;
    } else {
        if (bias)
            LT(g, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
               l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        if (aux)
            LT(g, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)",
               l_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
    }
    char what[160];
    snprintf(what, sizeof what, "cublasLtMatmul (%d x %d x %d, ta %d tb %d, dtypes %d/%d, epilogue %s)", M, N, K,
             ta, tb, (int)ab, (int)dt, epi_name((int)epi));
    LT(g, what, l_cublasLtMatmul(l->h, p->op, &alpha, B, p->la, A, p->lb, &beta, C, p->lc, D, p->lc, &p->algo,
                                 l->ws, ZL_WORKSPACE, (cudaStream_t)zr_gpu_stream_handle(s)));
    return 0;
}

/* ---------------------------------------------------------------------- cuBLAS (zr_gpu_sgemm, zr_gpu_gemm_ex) */

/* The handle's math mode (fast: MODE_*): PEDANTIC for fp32 (no TF32, no reduced-precision
** reductions), TF32_TENSOR_OP for fp32 under zr_gpu_set_tf32, DEFAULT with reduced-precision
** reductions disallowed for 16-bit operands (tensor cores, fp32 accumulation throughout, split-K
** partial sums in fp32). Set only when it changes. */
enum { MODE_PEDANTIC = 0, MODE_16BIT = 1, MODE_TF32 = 2 };
static int blas_mode(ZrGpu *g, int fast)
{
    if (g->blas_fast == fast) return 0;
    cublasStatus_t st = cublasSetMathMode(g->blas, fast == MODE_16BIT ? (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                          CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                                          : fast == MODE_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) return zr_gpu_blas_fail(g, st, "cublasSetMathMode");
    g->blas_fast = fast;
    return 0;
}

static cudaDataType_t cuda_dt(ZrDtype t)
{
    return t == ZR_DT_BF16 ? CUDA_R_16BF : t == ZR_DT_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

int zr_gpu_gemm_ex(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                   ZrDtype at, int lda, const void *B, ZrDtype bt, int ldb, float beta, void *C,
                   ZrDtype ct, int ldc, ZrGpuCompute compute)
{
    ZrGpu *g = s->g;
    if (compute != ZR_GPU_COMPUTE_32F || at != bt || (ct != ZR_DT_FP32 && ct != at)) {
        snprintf(g->err, sizeof g->err, "zr_gpu_gemm_ex: unsupported dtypes (A %d, B %d, C %d) or compute type %d",
                 (int)at, (int)bt, (int)ct, (int)compute);
        return -EINVAL;
    }
    int tf32 = at == ZR_DT_FP32 && g->tf32;
    int rc = blas_mode(g, at != ZR_DT_FP32 ? MODE_16BIT : tf32 ? MODE_TF32 : MODE_PEDANTIC);
    if (rc < 0) return rc;
    cublasStatus_t st = cublasSetStream(g->blas, (cudaStream_t)s->s);
    if (st != CUBLAS_STATUS_SUCCESS) return zr_gpu_blas_fail(g, st, "cublasSetStream");
    st = cublasGemmEx(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                      B, cuda_dt(bt), ldb, A, cuda_dt(at), lda, &beta, C, cuda_dt(ct), ldc,
                      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "cublasGemmEx (%d x %d x %d, ta %d tb %d, dtypes %d %d %d)", M, N, K, ta, tb,
                 (int)at, (int)bt, (int)ct);
        return zr_gpu_blas_fail(g, st, what);
    }
    return 0;
}

int zr_gpu_set_tf32(ZrGpu *g, int on)
{
    g->tf32 = on != 0;          /* the math mode follows at the next gemm; cuBLASLt plans key on it */
    return 0;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
int zr_gpu_sgemm(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    ZrGpu *g = s->g;
    int rc = blas_mode(g, g->tf32 ? MODE_TF32 : MODE_PEDANTIC);
    if (rc < 0) return rc;
    cublasStatus_t st = cublasSetStream(g->blas, (cudaStream_t)s->s);
    if (st != CUBLAS_STATUS_SUCCESS) return zr_gpu_blas_fail(g, st, "cublasSetStream");
    st = cublasSgemm(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                     N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (st != CUBLAS_STATUS_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "cublasSgemm (%d x %d x %d, ta %d tb %d)", M, N, K, ta, tb);
        return zr_gpu_blas_fail(g, st, what);
    }
    return 0;
}
#endif
