/*
** zr_simt_wmma.h — the CUDA WMMA API (nvcuda::wmma, tensor-core warp matrix operations) for kernels
** run on the CPU under zr_simt.h, so a tensor-core kernel is verified without a GPU like any other.
**
** What is emulated: fragment<matrix_a | matrix_b | accumulator, 16, 16, 16, T, row_major | col_major>
** with T = __half or __nv_bfloat16 for the inputs and float for the accumulator; fill_fragment,
** load_matrix_sync, store_matrix_sync (mem_row_major / mem_col_major), mma_sync, frag.x[] and
** frag.num_elements (16 for __half inputs, 8 for __nv_bfloat16 inputs and float accumulators, as
** in CUDA's mma.h). __half and __nv_bfloat16 are 16-bit containers with the conversions
** __float2half/__half2float and __float2bfloat16/__bfloat162float (round to nearest even).
**
** The per-thread layout is opaque to programs (CUDA documents none), so any consistent one is
** faithful; this one is deliberately scrambled so that code which guesses a layout fails here too:
** fragment element e of lane L holds the element of linear index i = ((e mod 8) * 32 + L) * 37 mod 256
** of the fragment's logical matrix (row-major over its rows x cols: A is M x K, B is K x N, the
** accumulator M x N); 37 is odd, so this is a bijection. __half inputs have 16 elements per lane:
** e and e + 8 hold the same matrix element (the real m16n16k16 half fragments also hold each element
** twice). Element-wise code over x[] (scaling every element, say) is correct for any layout; code
** that needs to know an element's row or column must go through memory (store, then load).
**
** mma_sync: d = c + sum_k a(r, k) b(k, c), in fp32: each product is exact in fp32 (8- or 11-bit
** significands), the sum starts from c and adds k = 0, 1, ..., 15 in order, each addition rounded to
** nearest. The hardware's order and internal precision are unspecified; tests allow for that.
** The *_sync operations are warp-collective as on the GPU: every lane of the warp must call them
** with the same arguments (pointer, ldm, layout). Loads and stores touch only the calling lane's
** elements here, so they need no barrier (a program must still order them against other threads'
** writes and reads with __syncwarp/__syncthreads, as on the GPU); mma_sync exchanges the lanes'
** fragments through a slot per thread and two warp barriers, so an mma_sync that not every lane
** reaches is reported as a deadlock by zr_simt.h.
** Included by kernels/zk_wmma.cuh under zr_simt.h; zr_simt.h may include it at its end with one
** line (it needs only zr_simt.h's threadIdx/blockDim and __syncwarp).
*/
#ifndef ZR_SIMT_WMMA_H
#define ZR_SIMT_WMMA_H
#include <string.h>

struct __half { unsigned short __x; };
struct __nv_bfloat16 { unsigned short __x; };

static inline unsigned zr_wmma_f2u(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float zr_wmma_u2f(unsigned u) { float f; memcpy(&f, &u, 4); return f; }

static inline float __bfloat162float(__nv_bfloat16 h) { return zr_wmma_u2f((unsigned)h.__x << 16); }
static inline __nv_bfloat16 __float2bfloat16(float v)
{
    unsigned u = zr_wmma_f2u(v);
    __nv_bfloat16 h;
    if ((u & 0x7fffffffu) > 0x7f800000u) { h.__x = (unsigned short)((u >> 16) | 0x40u); return h; }
    u += 0x7fffu + ((u >> 16) & 1u);
    h.__x = (unsigned short)(u >> 16);
    return h;
}
static inline float __half2float(__half x)
{
    unsigned h = x.__x, s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return zr_wmma_u2f(s | 0x7f800000u | (m << 13));
    if (e) return zr_wmma_u2f(s | ((e + 112) << 23) | (m << 13));
    return (s ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f;
}
static inline __half __float2half(float v)
{
    unsigned u = zr_wmma_f2u(v), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    __half h;
    if (a > 0x7f800000u) h.__x = (unsigned short)(s | 0x7e00u);
    else if (a >= 0x477ff000u) h.__x = (unsigned short)(s | 0x7c00u);
    else if (a >= 0x38800000u) {
        unsigned r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        h.__x = (unsigned short)(s | (r >> 13));
    } else {
        h.__x = (unsigned short)(s | (unsigned)nearbyintf(zr_wmma_u2f(a) * 16777216.0f));
    }
    return h;
}

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

static inline float zr_wmma_val(float v) { return v; }
static inline float zr_wmma_val(__half v) { return __half2float(v); }
static inline float zr_wmma_val(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> static inline T zr_wmma_from(float v);
template <> inline float zr_wmma_from<float>(float v) { return v; }
template <> inline __half zr_wmma_from<__half>(float v) { return __float2half(v); }
template <> inline __nv_bfloat16 zr_wmma_from<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

/* Linear index, in the logical matrix, of element e of a lane's fragment (see the header). */
static inline int zr_wmma_index(int lane, int e) { return (((e & 7) * 32 + lane) * 37) & 255; }
/* Its inverse: the lane (and element e < 8) holding linear index i. 37 * 173 = 6401 = 1 mod 256. */
static inline void zr_wmma_owner(int i, int *lane, int *e) { int s = (i * 173) & 255; *lane = s & 31; *e = s >> 5; }

static inline unsigned zr_wmma_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <typename A, typename B> struct zr_wmma_same { enum { v = 0 }; };
template <typename A> struct zr_wmma_same<A, A> { enum { v = 1 }; };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> class fragment;
template <typename Use, int M, int N, int K, typename T, typename Layout> struct zr_wmma_shape;
template <int M, int N, int K, typename T, typename L> struct zr_wmma_shape<matrix_a, M, N, K, T, L> {
    enum { rows = M, cols = K };
};
template <int M, int N, int K, typename T, typename L> struct zr_wmma_shape<matrix_b, M, N, K, T, L> {
    enum { rows = K, cols = N };
};
template <int M, int N, int K, typename T, typename L> struct zr_wmma_shape<accumulator, M, N, K, T, L> {
    enum { rows = M, cols = N };
};

template <typename Use, int M, int N, int K, typename T, typename Layout> class fragment {
    static_assert(M == 16 && N == 16 && K == 16, "zr_simt_wmma.h emulates the m16n16k16 shape only");
public:
    typedef T element_type;
    typedef T storage_element_type;
    enum { rows = zr_wmma_shape<Use, M, N, K, T, Layout>::rows, cols = zr_wmma_shape<Use, M, N, K, T, Layout>::cols };
    /* 16 for half inputs (each element twice), else 8 */
    enum { num_elements = zr_wmma_same<T, __half>::v && !zr_wmma_same<Use, accumulator>::v ? 16 : 8 };
    T x[num_elements];
};

template <typename Use, int M, int N, int K, typename T, typename L, typename V>
static inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v)
{
    for (int e = 0; e < f.num_elements; e++) f.x[e] = zr_wmma_from<T>(zr_wmma_val(v));
}

/* Memory offset of logical element (r, c) of a rows x cols matrix stored row- or column-major. */
static inline long zr_wmma_off(int r, int c, unsigned ldm, bool col) { return col ? (long)c * ldm + r : (long)r * ldm + c; }

template <typename Use, int M, int N, int K, typename T, typename L>
static inline void zr_wmma_load(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm, bool col)
{
    int lane = (int)(zr_wmma_tid() % 32);
    for (int e = 0; e < f.num_elements; e++) {
        int i = zr_wmma_index(lane, e);
        f.x[e] = p[zr_wmma_off(i / f.cols, i % f.cols, ldm, col)];
    }
}
template <int M, int N, int K, typename T, typename L>
static inline void load_matrix_sync(fragment<matrix_a, M, N, K, T, L> &f, const T *p, unsigned ldm)
{
    zr_wmma_load(f, p, ldm, zr_wmma_same<L, col_major>::v);
}
template <int M, int N, int K, typename T, typename L>
static inline void load_matrix_sync(fragment<matrix_b, M, N, K, T, L> &f, const T *p, unsigned ldm)
{
    zr_wmma_load(f, p, ldm, zr_wmma_same<L, col_major>::v);
}
template <int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm, layout_t l)
{
    zr_wmma_load(f, p, ldm, l == mem_col_major);
}
template <int M, int N, int K, typename T>
static inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm, layout_t l)
{
    int lane = (int)(zr_wmma_tid() % 32);
    for (int e = 0; e < f.num_elements; e++) {
        int i = zr_wmma_index(lane, e);
        p[zr_wmma_off(i / f.cols, i % f.cols, ldm, l == mem_col_major)] = f.x[e];
    }
}

/* Where each thread's fragments are during an mma_sync (a block has at most 1024 threads). */
struct zr_wmma_slot { const void *a, *b; };
static zr_wmma_slot zr_wmma_slots[1024];

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
static inline void mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                            const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC> &c)
{
    typedef fragment<matrix_a, M, N, K, TA, LA> FA;
    typedef fragment<matrix_b, M, N, K, TB, LB> FB;
    unsigned tid = zr_wmma_tid(), w0 = tid - tid % 32;
    int lane = (int)(tid % 32);
    zr_wmma_slots[tid].a = &a;
    zr_wmma_slots[tid].b = &b;
    __syncwarp();                                   /* every lane has published its fragments */
    TC out[fragment<accumulator, M, N, K, TC>::num_elements];
    for (int e = 0; e < d.num_elements; e++) {
        int i = zr_wmma_index(lane, e), r = i / N, col = i % N;
        float acc = zr_wmma_val(c.x[e]);
        for (int k = 0; k < K; k++) {
            int la, ea, lb, eb;
            zr_wmma_owner(r * K + k, &la, &ea);
            zr_wmma_owner(k * N + col, &lb, &eb);
            float av = zr_wmma_val(((const FA *)zr_wmma_slots[w0 + la].a)->x[ea]);
            float bv = zr_wmma_val(((const FB *)zr_wmma_slots[w0 + lb].b)->x[eb]);
            acc += av * bv;
        }
        out[e] = zr_wmma_from<TC>(acc);
    }
    __syncwarp();                                   /* every lane has read before d (maybe c) changes */
    for (int e = 0; e < d.num_elements; e++) d.x[e] = out[e];
}
} /* namespace wmma */
} /* namespace nvcuda */
#endif
