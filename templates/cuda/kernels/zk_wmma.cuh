/*
** zk_wmma.cuh — the tensor-core warp matrix API (nvcuda::wmma) for zgen's kernels, from any of the
** three compilers zk_common.cuh serves:
**   - g++ under zr_simt.h: the emulation, zr_simt_wmma.h;
**   - nvcc: CUDA's own <mma.h>;
**   - NVRTC at generation time: NVRTC has no mma.h of its own and zgen passes no include folder
**     (generation must not depend on where the toolkit's headers are), so the subset the kernels use
**     is written here on the PTX wmma instructions (wmma.load / wmma.mma / wmma.store, PTX ISA 6.0+,
**     sm_70+; bf16 from sm_80): fragment<matrix_a | matrix_b, 16, 16, 16, __half | __nv_bfloat16,
**     row_major | col_major>, fragment<accumulator, 16, 16, 16, float>, fill_fragment,
**     load_matrix_sync, store_matrix_sync, mma_sync. Register counts per lane are the PTX ISA's:
**     __half A/B 8 x .b32 (16 halves), __nv_bfloat16 A/B 4 x .b32 (8), f32 accumulator 8 x .f32.
**     __half and __nv_bfloat16 are bit containers only (no arithmetic), as in zr_simt_wmma.h.
** Kernels name the element type zk_wt: __nv_bfloat16 for bf16 and fp32 storage (fp32 activations
** are rounded to bf16 when staged), __half for fp16 storage.
*/
#ifndef ZK_WMMA_CUH
#define ZK_WMMA_CUH

#if defined(ZR_SIMT_H)
#include "zr_simt_wmma.h"
#elif !defined(__CUDACC_RTC__)
#include <mma.h>
#else
struct __half { unsigned short __x; };
struct __nv_bfloat16 { unsigned short __x; };

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename A, typename B> struct same_t { enum { v = 0 }; };
template <typename A> struct same_t<A, A> { enum { v = 1 }; };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> class fragment {
    static_assert(M == 16 && N == 16 && K == 16, "zk_wmma.cuh: m16n16k16 only");
public:
    enum { num_elements = same_t<T, __half>::v && !same_t<Use, accumulator>::v ? 16 : 8 };
    alignas(16) T x[num_elements];
};

template <typename Use, typename T, typename L>
__device__ __forceinline__ void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float v)
{
    static_assert(same_t<T, float>::v, "zk_wmma.cuh: fill_fragment on float accumulators only");
    for (int e = 0; e < 8; e++) f.x[e] = v;
}

#define ZK_W4 "{%0, %1, %2, %3}"
#define ZK_W8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define ZK_R4(r) "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
#define ZK_R8(r) ZK_R4(r), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])

/* A or B operand: which = "a" or "b". */
#define ZK_WLOAD(which, Use)                                                                               \
    template <typename L>                                                                                  \
    __device__ __forceinline__ void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f,        \
                                                     const __nv_bfloat16 *p, unsigned ldm)                 \
    {                                                                                                      \
        unsigned *r = reinterpret_cast<unsigned *>(f.x);                                                   \
        if (same_t<L, row_major>::v)                                                                       \
            asm volatile("wmma.load." which ".sync.aligned.row.m16n16k16.bf16 " ZK_W4 ", [%4], %5;"        \
                         : ZK_R4(r) : "l"(p), "r"(ldm) : "memory");                                        \
        else                                                                                               \
            asm volatile("wmma.load." which ".sync.aligned.col.m16n16k16.bf16 " ZK_W4 ", [%4], %5;"        \
                         : ZK_R4(r) : "l"(p), "r"(ldm) : "memory");                                        \
    }                                                                                                      \
    template <typename L>                                                                                  \
    __device__ __forceinline__ void load_matrix_sync(fragment<Use, 16, 16, 16, __half, L> &f,               \
                                                     const __half *p, unsigned ldm)                        \
    {                                                                                                      \
        unsigned *r = reinterpret_cast<unsigned *>(f.x);                                                   \
        if (same_t<L, row_major>::v)                                                                       \
            asm volatile("wmma.load." which ".sync.aligned.row.m16n16k16.f16 " ZK_W8 ", [%8], %9;"         \
                         : ZK_R8(r) : "l"(p), "r"(ldm) : "memory");                                        \
        else                                                                                               \
            asm volatile("wmma.load." which ".sync.aligned.col.m16n16k16.f16 " ZK_W8 ", [%8], %9;"         \
                         : ZK_R8(r) : "l"(p), "r"(ldm) : "memory");                                        \
    }
ZK_WLOAD("a", matrix_a)
ZK_WLOAD("b", matrix_b)
#undef ZK_WLOAD

#define ZK_F8(x) "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3]), "=f"(x[4]), "=f"(x[5]), "=f"(x[6]), "=f"(x[7])
#define ZK_I8(x) "f"(x[0]), "f"(x[1]), "f"(x[2]), "f"(x[3]), "f"(x[4]), "f"(x[5]), "f"(x[6]), "f"(x[7])
__device__ __forceinline__ void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                                 unsigned ldm, layout_t l)
{
    if (l == mem_row_major)
        asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.f32 " ZK_W8 ", [%8], %9;"
                     : ZK_F8(f.x) : "l"(p), "r"(ldm) : "memory");
    else
        asm volatile("wmma.load.c.sync.aligned.col.m16n16k16.f32 " ZK_W8 ", [%8], %9;"
                     : ZK_F8(f.x) : "l"(p), "r"(ldm) : "memory");
}
__device__ __forceinline__ void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                                  unsigned ldm, layout_t l)
{
    if (l == mem_row_major)
        asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                     :: "l"(p), ZK_I8(f.x), "r"(ldm) : "memory");
    else
        asm volatile("wmma.store.d.sync.aligned.col.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                     :: "l"(p), ZK_I8(f.x), "r"(ldm) : "memory");
}

/* d = a b + c; operand numbering: d %0-7, a, b, c after. */
#define ZK_MMA_BF16(la, lb)                                                                                \
    asm volatile("wmma.mma.sync.aligned." la "." lb ".m16n16k16.f32.bf16.bf16.f32 " ZK_W8 ", "             \
                 "{%8, %9, %10, %11}, {%12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23};"     \
                 : ZK_F8(d.x) : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]),                            \
                   "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]), ZK_I8(c.x))
#define ZK_MMA_F16(la, lb)                                                                                 \
    asm volatile("wmma.mma.sync.aligned." la "." lb ".m16n16k16.f32.f32 " ZK_W8 ", "                       \
                 "{%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, "      \
                 "{%24, %25, %26, %27, %28, %29, %30, %31};"                                               \
                 : ZK_F8(d.x) : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(ra[4]), "r"(ra[5]),    \
                   "r"(ra[6]), "r"(ra[7]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]), "r"(rb[4]),     \
                   "r"(rb[5]), "r"(rb[6]), "r"(rb[7]), ZK_I8(c.x))
template <typename LA, typename LB>
__device__ __forceinline__ void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                                         const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                                         const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                                         const fragment<accumulator, 16, 16, 16, float> &c)
{
    const unsigned *ra = reinterpret_cast<const unsigned *>(a.x), *rb = reinterpret_cast<const unsigned *>(b.x);
    const bool ar = same_t<LA, row_major>::v, br = same_t<LB, row_major>::v;
    if (ar && br) ZK_MMA_BF16("row", "row");
    else if (ar) ZK_MMA_BF16("row", "col");
    else if (br) ZK_MMA_BF16("col", "row");
    else ZK_MMA_BF16("col", "col");
}
template <typename LA, typename LB>
__device__ __forceinline__ void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                                         const fragment<matrix_a, 16, 16, 16, __half, LA> &a,
                                         const fragment<matrix_b, 16, 16, 16, __half, LB> &b,
                                         const fragment<accumulator, 16, 16, 16, float> &c)
{
    const unsigned *ra = reinterpret_cast<const unsigned *>(a.x), *rb = reinterpret_cast<const unsigned *>(b.x);
    const bool ar = same_t<LA, row_major>::v, br = same_t<LB, row_major>::v;
    if (ar && br) ZK_MMA_F16("row", "row");
    else if (ar) ZK_MMA_F16("row", "col");
    else if (br) ZK_MMA_F16("col", "row");
    else ZK_MMA_F16("col", "col");
}
#undef ZK_MMA_BF16
#undef ZK_MMA_F16
#undef ZK_W4
#undef ZK_W8
#undef ZK_R4
#undef ZK_R8
#undef ZK_F8
#undef ZK_I8
} /* namespace wmma */
} /* namespace nvcuda */
#endif

#endif /* ZK_WMMA_CUH */

/* Outside the guard, like zk_io: the element type follows each inclusion's ZK_IO. */
#if ZK_IO == 2
typedef __half zk_wt;
#else
typedef __nv_bfloat16 zk_wt;
#endif
