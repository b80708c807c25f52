/*
** zr_gpu_emu_blas.h — the GPU stand-in's gemms (zr_gpu_sgemm, zr_gpu_gemm_ex, zr_gpu_gemm_lt) on
** OpenBLAS, with the arithmetic that cuBLAS and cuBLASLt are specified to have. A part of
** zr_gpu_emu.cpp (and zr_gpu_set_tf32: fp32 operands rounded to TF32, the caller's choice), included
** once at its end (it enqueues through the stand-in's push() and declares
** footprints with rd()/wr()); a file of its own because the numerics of the typed and fused gemms
** are one responsibility, and the streams, events and captures another.
*/
/* TF32 (zr_gpu_set_tf32, the caller's decision): what a TF32 tensor core does to fp32 operands, each
** element of A and B rounded to nearest even with 10 explicit mantissa bits (zr_f32_round_tf32)
** before the product; products and sums stay fp32 (cblas_sgemm on the rounded copies, whose
** products of two 11-bit significands are exact in fp32). The setting is read when the gemm is
** enqueued, as cuBLAS reads the handle's math mode at the call. */
extern "C" int zr_gpu_set_tf32(ZrGpu *g, int on)
{
    g->tf32 = on != 0;
    return 0;
}

/* rows x cols of p (leading dimension ld), packed, rounded to TF32 */
static std::vector<float> tf32_pack(const float *p, size_t rows, size_t cols, size_t ld)
{
    std::vector<float> r(rows * cols);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) r[i * cols + j] = zr_f32_round_tf32(p[i * ld + j]);
    return r;
}

extern "C" int zr_gpu_sgemm(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                            int ldc)
{
    int tf32 = s->g->tf32;
    /* row-major: A is M x K (K x M transposed), B K x N (N x K), C M x N; the spans they cover */
    size_t na = (size_t)((ta ? K : M) - 1) * (size_t)lda + (size_t)(ta ? M : K);
    size_t nb = (size_t)((tb ? N : K) - 1) * (size_t)ldb + (size_t)(tb ? K : N);
    size_t nc = (size_t)(M - 1) * (size_t)ldc + (size_t)N;
    std::vector<Fp> fp;
    if (M > 0 && N > 0 && K > 0) fp = {rd(A, na * 4), rd(B, nb * 4)};
    if (M > 0 && N > 0) fp.push_back(wr(C, nc * 4));
    return push(s, [=]() {
        s->g->gemm_flops += 2.0 * M * N * K;
        if (tf32 && M > 0 && N > 0 && K > 0) {
            size_t ra = (size_t)(ta ? K : M), ca = (size_t)(ta ? M : K);
            size_t rb = (size_t)(tb ? N : K), cb = (size_t)(tb ? K : N);
            std::vector<float> a = tf32_pack(A, ra, ca, (size_t)lda), b = tf32_pack(B, rb, cb, (size_t)ldb);
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                        M, N, K, alpha, a.data(), (int)ca, b.data(), (int)cb, beta, C, ldc);
            return 0;
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return 0;
    }, tf32 ? "sgemm TF32" : "sgemm", fp);
}

/* The typed gemm as a tensor-core GEMM is specified: 16-bit A and B widened exactly to fp32 (a
** bf16 or fp16 value is an fp32 value), products and sums in fp32 (cblas_sgemm: the product of two
** 16-bit values is exact in fp32, so a fused multiply-add rounds as a product then a sum would), beta
** C added in fp32, and a 16-bit C rounded once at the end, to nearest even (zr_half.h's bits, the
** same as zk_st's and cvt.rn's). */
static float ld_elem(const void *p, size_t i, ZrDtype t)
{
    if (t == ZR_DT_FP32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == ZR_DT_BF16 ? zr_bf16_to_f32(h) : zr_fp16_to_f32(h);
}
static void st_elem(void *p, size_t i, ZrDtype t, float v)
{
    if (t == ZR_DT_FP32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = t == ZR_DT_BF16 ? zr_f32_to_bf16(v) : zr_f32_to_fp16(v);
}
static size_t dt_size(ZrDtype t) { return t == ZR_DT_FP32 ? 4 : 2; }

extern "C" int zr_gpu_gemm_ex(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha,
                              const void *A, ZrDtype at, int lda, const void *B, ZrDtype bt, int ldb,
                              float beta, void *C, ZrDtype ct, int ldc, ZrGpuCompute compute)
{
    if (compute != ZR_GPU_COMPUTE_32F || at != bt || (ct != ZR_DT_FP32 && ct != at) ||
        (at != ZR_DT_FP32 && at != ZR_DT_BF16 && at != ZR_DT_FP16))
        return fail(s->g, -EINVAL, "zr_gpu_gemm_ex: unsupported dtypes/compute type");
    if ((uintptr_t)A % dt_size(at) || (uintptr_t)B % dt_size(bt) || (uintptr_t)C % dt_size(ct))
        return fail(s->g, -EINVAL, "zr_gpu_gemm_ex: a matrix is not aligned to its element size (cuBLAS needs it)");
    int tf32 = at == ZR_DT_FP32 && s->g->tf32;
    size_t ra = (size_t)(ta ? K : M), ca = (size_t)(ta ? M : K);
    size_t rb = (size_t)(tb ? N : K), cb = (size_t)(tb ? K : N);
    size_t na = (ra - 1) * (size_t)lda + ca, nb = (rb - 1) * (size_t)ldb + cb;
    size_t nc = (size_t)(M - 1) * (size_t)ldc + (size_t)N;
    std::vector<Fp> fp;
    if (M > 0 && N > 0 && K > 0) fp = {rd(A, na * dt_size(at)), rd(B, nb * dt_size(bt))};
    if (M > 0 && N > 0) {
        if (beta != 0.0f) fp.push_back(rd(C, nc * dt_size(ct)));
        fp.push_back(wr(C, nc * dt_size(ct)));
    }
    return push(s, [=]() {
        s->g->gemm_flops += 2.0 * M * N * K;
        if (M <= 0 || N <= 0) return 0;
        std::vector<float> a(K > 0 ? ra * ca : 0), b(K > 0 ? rb * cb : 0), c((size_t)M * N, 0.0f);
        for (size_t i = 0; K > 0 && i < ra; i++)
            for (size_t j = 0; j < ca; j++) a[i * ca + j] = ld_elem(A, i * (size_t)lda + j, at);
        for (size_t i = 0; K > 0 && i < rb; i++)
            for (size_t j = 0; j < cb; j++) b[i * cb + j] = ld_elem(B, i * (size_t)ldb + j, bt);
        if (tf32) {
            for (float &x : a) x = zr_f32_round_tf32(x);
            for (float &x : b) x = zr_f32_round_tf32(x);
        }
        if (beta != 0.0f)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) c[(size_t)i * N + j] = ld_elem(C, (size_t)i * ldc + j, ct);
        if (K > 0)
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                        M, N, K, alpha, a.data(), (int)ca, b.data(), (int)cb, beta, c.data(), N);
        else
            for (float &x : c) x *= beta;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) st_elem(C, (size_t)i * ldc + j, ct, c[(size_t)i * N + j]);
        return 0;
    }, tf32 ? "gemm_ex TF32" : "gemm_ex", fp);
}

/* ---------------------------------------------------------------------- gemm with an epilogue (additive) */
/* zr_gpu_gemm_lt as runtime/zr_gpu.h specifies it (and cuBLASLt computes it): the gemm_ex sum X in
** fp32, the epilogue on the fp32 X (bias added in fp32 before GELU; GELU of the fp32 pre-activation,
** whose rounded value is saved as aux; gelu'(aux) times X), then D rounded to its dtype once. GELU is
** gelu.cu's tanh form (zk_gelu_sig), which the host kernels share. The bias gradient is the column
** sum of op(B) over k in fp32, rows in order, written to the bias (D's dtype). The same arguments
** are refused as on a GPU (aux's leading dimension a multiple of 8 and at least N, as cuBLASLt asks).
** ZR_GPU_EMU_LT_OFF=digits (epilogue numbers of zr_gpu.h, e.g. 1234) stands in for a cuBLASLt
** whose heuristic has no algorithm for those epilogues: -ENOTSUP, as zr_gpu_blaslt.c returns then. */
static float lt_dgelu(float v)
{
    float s = zk_gelu_sig(v), du = ZK_GELU_K * (1.0f + 3.0f * ZK_GELU_A * v * v);
    return s + 2.0f * v * s * (1.0f - s) * du;
}

extern "C" int zr_gpu_gemm_lt(ZrGpuStream *s, int ta, int tb, int M, int N, int K, float alpha, const void *A,
                              int lda, const void *B, int ldb, ZrDtype ab, float beta, const void *C, void *D,
                              int ldd, ZrDtype dt, ZrGpuEpilogue epi, void *bias, void *aux, int ldaux)
{
    const char *bad = zr_gpu_gemm_lt_bad(ta, tb, M, N, K, lda, ldb, ab, beta, ldd, dt, epi, bias, aux, ldaux);
    if (bad) return fail(s->g, -EINVAL, std::string("zr_gpu_gemm_lt: ") + bad);
    static const char *const names[] = {"gemm_lt", "gemm_lt BIAS", "gemm_lt GELU_BIAS", "gemm_lt DGELU", "gemm_lt BGRAD"};
    const char *off = getenv("ZR_GPU_EMU_LT_OFF");
    if (off && strchr(off, '0' + (int)epi))
        return fail(s->g, -ENOTSUP, std::string("emulated cuBLASLt: no algorithm for ") + names[epi] +
                    " (ZR_GPU_EMU_LT_OFF)");
    if (!C || beta == 0.0f) C = D;
    int tf32 = ab == ZR_DT_FP32 && s->g->tf32;
    size_t ra = (size_t)(ta ? K : M), ca = (size_t)(ta ? M : K);
    size_t rb = (size_t)(tb ? N : K), cb = (size_t)(tb ? K : N);
    size_t na = (ra - 1) * (size_t)lda + ca, nb = (rb - 1) * (size_t)ldb + cb;
    size_t nd = (size_t)(M - 1) * (size_t)ldd + (size_t)N, nx = (size_t)(M - 1) * (size_t)ldaux + (size_t)N;
    size_t es = dt_size(dt);
    std::vector<Fp> fp = {rd(A, na * dt_size(ab)), rd(B, nb * dt_size(ab))};
    if (beta != 0.0f) fp.push_back(rd(C, nd * es));
    fp.push_back(wr(D, nd * es));
    if (epi == ZR_GPU_EPI_BIAS || epi == ZR_GPU_EPI_GELU_BIAS) fp.push_back(rd(bias, (size_t)N * es));
    if (epi == ZR_GPU_EPI_BGRAD) fp.push_back(wr(bias, (size_t)N * es));
    if (epi == ZR_GPU_EPI_GELU_BIAS) fp.push_back(wr(aux, nx * es));
    if (epi == ZR_GPU_EPI_DGELU) fp.push_back(rd(aux, nx * es));
    return push(s, [=]() {
        s->g->gemm_flops += 2.0 * M * N * K;
        std::vector<float> a(ra * ca), b(rb * cb), c((size_t)M * N, 0.0f);
        for (size_t i = 0; i < ra; i++)
            for (size_t j = 0; j < ca; j++) a[i * ca + j] = ld_elem(A, i * (size_t)lda + j, ab);
        for (size_t i = 0; i < rb; i++)
            for (size_t j = 0; j < cb; j++) b[i * cb + j] = ld_elem(B, i * (size_t)ldb + j, ab);
        if (beta != 0.0f)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) c[(size_t)i * N + j] = ld_elem(C, (size_t)i * ldd + j, dt);
        /* TF32: the product's operands rounded; the bias gradient (below) sums the fp32 op(B) */
        std::vector<float> at32, bt32;
        if (tf32) {
            at32 = a, bt32 = b;
            for (float &x : at32) x = zr_f32_round_tf32(x);
            for (float &x : bt32) x = zr_f32_round_tf32(x);
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, tf32 ? at32.data() : a.data(), (int)ca, tf32 ? bt32.data() : b.data(),
                    (int)cb, beta, c.data(), N);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float x = c[(size_t)i * N + j];
                if (epi == ZR_GPU_EPI_BIAS) x += ld_elem(bias, (size_t)j, dt);
                if (epi == ZR_GPU_EPI_GELU_BIAS) {
                    x += ld_elem(bias, (size_t)j, dt);
                    st_elem(aux, (size_t)i * ldaux + j, dt, x);
                    x = x * zk_gelu_sig(x);
                }
                if (epi == ZR_GPU_EPI_DGELU) x *= lt_dgelu(ld_elem(aux, (size_t)i * ldaux + j, dt));
                st_elem(D, (size_t)i * ldd + j, dt, x);
            }
        if (epi == ZR_GPU_EPI_BGRAD)
            for (int j = 0; j < N; j++) {
                float sum = 0.0f;
                for (int k = 0; k < K; k++) sum += b[tb ? (size_t)j * cb + k : (size_t)k * cb + j];
                st_elem(bias, (size_t)j, dt, sum);
            }
        return 0;
    }, names[epi], fp);
}
