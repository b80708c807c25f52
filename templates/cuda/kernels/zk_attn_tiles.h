/*
** zk_attn_tiles.h — the tiles of the CUDA-core attention (zk_attn.cuh: attention.cu for gpt2,
** attention_gqa.cu for llama), shared by the kernels and the CUDA trainer's adapters, which compute
** the launch grids from them. Macros only: NVRTC, g++ and the C compilers read it.
*/
#ifndef ZK_ATTN_TILES_H
#define ZK_ATTN_TILES_H

#define ZK_ATT_KT 32                                   /* keys per tile = lanes; dkv: keys per block */
#define ZK_ATT_NW 4                                    /* warps per block (forward, dq) */
/* Query rows per warp, and per staged tile in dkv: halved beyond HS = 128 so that the shared tiles
** of HS up to 168 stay under the 48 KiB a block may declare statically. */
#define ZK_ATT_R_OF(hs) ((hs) > 128 ? 1 : 2)
#define ZK_ATT_QT_OF(hs) (ZK_ATT_NW * ZK_ATT_R_OF(hs)) /* query rows per block (forward, dq) */
#define ZK_ATT_QT2_OF(hs) ((hs) > 128 ? 4 : 8)         /* query rows per staged tile (dkv) */
/* Bytes of each kernel's shared tiles (zk_attn.cuh's fwd_smem, dq_smem, dkv_smem: fp32 arrays, so
** no padding): gen/cuda_dec.c decides from them which head sizes this attention serves, and the
** kernels assert the 48 KiB themselves. */
#define ZK_ATT_FWD_SMEM_OF(hs) \
    (4 * (ZK_ATT_QT_OF(hs) * (hs) + ZK_ATT_KT * ((hs) + 1) + ZK_ATT_KT * (hs) + ZK_ATT_NW * ZK_ATT_KT))
#define ZK_ATT_DQ_SMEM_OF(hs) (4 * (2 * ZK_ATT_QT_OF(hs) * (hs) + 2 * ZK_ATT_KT * ((hs) + 1) + ZK_ATT_NW * ZK_ATT_KT))
#define ZK_ATT_DKV_SMEM_OF(hs) (4 * (2 * ZK_ATT_KT * ((hs) + 1) + 2 * ZK_ATT_QT2_OF(hs) * (hs) + 2 * ZK_ATT_QT2_OF(hs)))
#define ZK_ATT_SMEM_MAX (48 * 1024)                    /* static shared memory per block */

#endif
