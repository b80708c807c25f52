/*
** zk_sumsq.h — the launch arithmetic of sumsq.cu, shared by its launcher (the kernel tests) and the
** CUDA trainer (cuda_main.c, which launches through the driver API), so that both run the grid the
** result's bits depend on. Macros only: it is read by NVRTC, g++ and the trainer's C compiler.
** The grid is a function of the element count alone (never of the GPU), so a shard of n elements
** is summed in the same order on every run and every device.
*/
#ifndef ZK_SUMSQ_H
#define ZK_SUMSQ_H

#define ZK_SQ_BLOCK 256             /* threads per block: the kernels' __launch_bounds__ */
#define ZK_SQ_MAX_BLOCKS 1024       /* stage 1 blocks at most: one wave of 256-thread blocks on a large GPU */
#define ZK_SQ_MIN_PER_BLOCK 4096L   /* elements per block at least (16 per thread) before more blocks */

/* Stage 1's blocks for n elements, and the contiguous range each block sums. */
#define ZK_SQ_BLOCKS(n) ((n) <= ZK_SQ_MIN_PER_BLOCK ? 1                                                 \
                         : (n) >= ZK_SQ_MIN_PER_BLOCK * ZK_SQ_MAX_BLOCKS ? ZK_SQ_MAX_BLOCKS             \
                         : (int)(((n) + ZK_SQ_MIN_PER_BLOCK - 1) / ZK_SQ_MIN_PER_BLOCK))
#define ZK_SQ_CHUNK(n, blocks) (((n) + (blocks) - 1) / (blocks))

/* zd_sumsq_lanes: the norm blocks (multiples of block in shard offsets) that [a, a + n) meets,
** n > 0: one lane set (8 doubles, 8 threads) each. */
#define ZK_SQ_LANE_SETS(a, n, block) (((a) + (n) - 1) / (block) - (a) / (block) + 1)
#define ZK_SQ_LANE_GRID(sets) ((unsigned)(((sets) * 8 + ZK_SQ_BLOCK - 1) / ZK_SQ_BLOCK))

#endif
