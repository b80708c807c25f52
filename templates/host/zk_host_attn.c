/*
** zk_host_attn.c — causal self-attention of one GPT-2 block, forward and backward.
**
** One task per (sequence, head), run in parallel with OpenMP: every task has the same work and
** writes disjoint slices (its head's columns of y / dqkv, its own att and datt planes), so no
** synchronisation is needed and results do not depend on the thread count.
**
** Causality by row blocks: queries are taken ROWS at a time; block [i0, i1) only meets keys
** [0, i1), so the score and value matmuls cover the block lower triangle (about (1 + ROWS/T)/2 of
** the square) through single-threaded sgemm calls on strided views of qkv (head h of q, k, v sits
** at columns h*hs of the q | k | v thirds of a 3C row; no copies). The softmax (and its backward)
** is fused per row over j <= i only; the few entries above the diagonal inside a diagonal block are
** set to 0 so the following matmul can take the block whole. Entries right of column i1 are never
** written nor read.
**
** Documents: the query at i sees keys [i - pos[i], i] only; probabilities left of that are 0, and
** so are their score gradients, so the block matmuls stay whole and add exact zeros there.
**
** Threads: the tasks run on OpenMP threads and each calls a single-threaded sgemm (one pool, see
** zk_host.h), so each small matmul runs in the calling thread without a hand-off.
*/
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "zk_host.h"
#include "zk_host_math.h"

enum { ROWS = 32 };             /* query rows per block */

ZK_VECTOR_BEGIN

void zk_attention_forward(int B, int T, int C, int NH, const int *pos, const float *qkv, float *att,
                          float *y)
{
    int hs = C / NH, ld = 3 * C, solo = zk_blas_solo();
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (size_t)b * T * ld + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
        float *p = att + (size_t)bh * T * T, *yb = y + (size_t)b * T * C + (size_t)h * hs;
        for (int i0 = 0; i0 < T; i0 += ROWS) {
            int i1 = i0 + ROWS < T ? i0 + ROWS : T, m = i1 - i0;
            /* scores of the block: scale q k^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, scale,
                        q + (size_t)i0 * ld, ld, k, ld, 0.0f, p + (size_t)i0 * T, T);
            for (int i = i0; i < i1; i++) {
                float *pi = p + (size_t)i * T, mx = -INFINITY, sum = 0.0f;
                int j0 = pos ? i - pos[b * T + i] : 0;
#pragma omp simd reduction(max : mx)
                for (int j = j0; j <= i; j++) mx = pi[j] > mx ? pi[j] : mx;
#pragma omp simd reduction(+ : sum)
                for (int j = j0; j <= i; j++) {
                    pi[j] = zk_exp(pi[j] - mx);
                    sum += pi[j];
                }
                float inv = 1.0f / sum;
#pragma omp simd
                for (int j = j0; j <= i; j++) pi[j] *= inv;
                for (int j = 0; j < j0; j++) pi[j] = 0.0f;
                for (int j = i + 1; j < i1; j++) pi[j] = 0.0f;
            }
            /* y = p v */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, 1.0f,
                        p + (size_t)i0 * T, T, v, ld, 0.0f, yb + (size_t)i0 * C, C);
        }
    }
    zk_blas_restore(solo);
}

void zk_attention_backward(int B, int T, int C, int NH, const int *pos, const float *qkv,
                           const float *att, const float *dy, float *datt, float *dqkv)
{
    int hs = C / NH, ld = 3 * C, solo = zk_blas_solo();
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const float *q = qkv + (size_t)b * T * ld + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
        const float *p = att + (size_t)bh * T * T, *dyb = dy + (size_t)b * T * C + (size_t)h * hs;
        float *ds = datt + (size_t)bh * T * T;
        float *dq = dqkv + (size_t)b * T * ld + (size_t)h * hs, *dk = dq + C, *dv = dq + 2 * C;
        /* By query blocks: dp = dy v^T, the softmax backward into ds, dq = scale ds k. */
        for (int i0 = 0; i0 < T; i0 += ROWS) {
            int i1 = i0 + ROWS < T ? i0 + ROWS : T, m = i1 - i0;
            float *db = ds + (size_t)i0 * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, 1.0f,
                        dyb + (size_t)i0 * C, C, v, ld, 0.0f, db, T);
            /* softmax: ds_j = p_j (dp_j - sum_k p_k dp_k), over j <= i */
            for (int i = i0; i < i1; i++) {
                const float *pi = p + (size_t)i * T;
                float *di = ds + (size_t)i * T, s = 0.0f;
                int j0 = pos ? i - pos[b * T + i] : 0;
#pragma omp simd reduction(+ : s)
                for (int j = j0; j <= i; j++) s += pi[j] * di[j];
#pragma omp simd
                for (int j = j0; j <= i; j++) di[j] = pi[j] * (di[j] - s);
                for (int j = 0; j < j0; j++) di[j] = 0.0f;
                for (int j = i + 1; j < i1; j++) di[j] = 0.0f;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, scale, db, T, k, ld,
                        0.0f, dq + (size_t)i0 * ld, ld);
        }
        /* By key blocks [j0, j1), which only queries i >= j0 see (the diagonal block's entries
        ** above the diagonal are 0 in p and ds): dv = p^T dy, dk = scale ds^T q over rows
        ** [j0, T) in one sgemm each. A long inner dimension instead of ROWS-deep accumulations
        ** per query block, and no zeroing of dk and dv. */
        for (int j0 = 0; j0 < T; j0 += ROWS) {
            int j1 = j0 + ROWS < T ? j0 + ROWS : T, n = j1 - j0, r = T - j0;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hs, r, 1.0f,
                        p + (size_t)j0 * T + j0, T, dyb + (size_t)j0 * C, C, 0.0f,
                        dv + (size_t)j0 * ld, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hs, r, scale,
                        ds + (size_t)j0 * T + j0, T, q + (size_t)j0 * ld, ld, 0.0f,
                        dk + (size_t)j0 * ld, ld);
        }
    }
    zk_blas_restore(solo);
}
ZK_VECTOR_END
