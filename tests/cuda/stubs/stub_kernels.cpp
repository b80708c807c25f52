/*
** stub_kernels.cpp — the kernels behind the stub driver (stub_api.cpp): a generated trainer's
** cuda/kernels/ sources compiled for the CPU under zr_simt.h, found by name, launched from a
** cuLaunchKernel-style argument array (each argument converted with the kernel's own parameter
** type, as the driver copies them). Built with -I<out>/cuda -I<out>/cuda/kernels by t_gpu_stub.sh.
** A separate translation unit because zr_simt.h and the CUDA headers both define __global__ & co.
*/
#pragma GCC optimize("fp-contract=off")
#define ZR_SIMT_IMPL
#include "zr_simt.h"
#include "kernels/zk_shapes.h"

#include "kernels/adamw.cu"
#include "kernels/attention.cu"
#include "kernels/attention_tc.cu"
#include "kernels/convert.cu"
#include "kernels/crossentropy.cu"
#include "kernels/encoder.cu"
#include "kernels/gelu.cu"
#include "kernels/layernorm.cu"
#include "kernels/sumsq.cu"

#include <string.h>
#include <type_traits>
#include <utility>

#include "stub.h"

typedef int (*Runner)(dim3 g, dim3 b, size_t shmem, void **args);

template <typename... A, size_t... I>
static int run_k(const char *name, void (*k)(A...), dim3 g, dim3 b, size_t sh, void **args,
                 std::index_sequence<I...>)
{
    return zr_simt_launch_as(name, g, b, sh, k, *(typename std::decay<A>::type *)args[I]...);
}
template <typename... A>
static int run(const char *name, void (*k)(A...), dim3 g, dim3 b, size_t sh, void **args)
{
    return run_k(name, k, g, b, sh, args, std::index_sequence_for<A...>{});
}
template <typename... A> static int n_params(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static size_t param_size(void (*)(A...), int i)
{
    const size_t s[] = {sizeof(typename std::decay<A>::type)..., 0};
    return s[i];
}
typedef size_t (*Sizer)(int i);

struct Kern { const char *name; Runner run; const void *fn; int nparams; Sizer size; };
#define K(n) {#n, [](dim3 g, dim3 b, size_t sh, void **a) { return run(#n, n, g, b, sh, a); }, \
              (const void *)(uintptr_t)n, n_params(n), [](int i) { return param_size(n, i); }}
static const Kern table[] = {
    K(zd_encoder_forward), K(zd_encoder_backward_wte), K(zd_encoder_backward_wpe),
    K(zd_bias_gelu_forward), K(zd_gelu_backward), K(zd_bias_backward_part), K(zd_bias_backward_sum),
    K(zd_layernorm_forward), K(zd_residual_layernorm_forward),
    K(zd_layernorm_backward_dx), K(zd_layernorm_backward_dwdb_part), K(zd_layernorm_backward_dwdb_sum),
    K(zd_attention_forward), K(zd_attention_backward_dq), K(zd_attention_backward_dkv),
    K(zd_crossentropy_fused), K(zd_adamw), K(zd_f32_to_16), K(zd_16_to_f32), K(zd_add_16_to_f32),
    K(zd_add_f32_to_16), K(zd_add_f32),
    K(zd_sumsq_partial), K(zd_sumsq_finish), K(zd_sumsq_lanes),
#if ZK_ATC_ON           /* the tensor-core attention exists for the head sizes it serves */
    K(zd_attention_tc_forward), K(zd_attention_tc_backward_dq), K(zd_attention_tc_backward_dkv),
#endif
};

extern "C" int zs_kernel_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(table[i].name, name) == 0) return (int)i;
    return -1;
}

extern "C" unsigned zs_kernel_bound(int id) { return zr_simt_launch_bound(table[id].fn); }
extern "C" int zs_kernel_nparams(int id) { return table[id].nparams; }
extern "C" size_t zs_kernel_param_size(int id, int i) { return table[id].size(i); }

extern "C" int zs_kernel_launch(int id, const unsigned g[3], const unsigned b[3], size_t shmem, void **args, int arch)
{
    zr_simt_set_arch(arch);
    return table[id].run(zr_dim3(g[0], g[1], g[2]), zr_dim3(b[0], b[1], b[2]), shmem, args);
}
