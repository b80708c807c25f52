/*
** token_embed.cu — the token embedding without positions (llama: positions are RoPE's, rope.cu):
** out[n, c] = wte[tok[n], c], one thread per element, a copy (the same bits as the host's memcpy of
** the row). Its backward is encoder.cu's zd_encoder_backward_wte (the token grouping, no atomics).
** Compiled for archs with rotary grouped-query attention only (zk_shapes.h defines ZK_NKV for them,
** from the arch's file, gen/arch_*.c); for the others this is an empty module.
*/
#include "zk_common.cuh"
#ifdef ZK_NKV

ZK_KERNEL void __launch_bounds__(256) zd_token_embed_forward(zk_io *out, const int *tok, const zk_io *wte, int N)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)N * ZK_C) return;
    out[i] = wte[(long)tok[i / ZK_C] * ZK_C + i % ZK_C];
}
#endif /* ZK_NKV */
