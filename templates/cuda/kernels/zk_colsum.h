/*
** zk_colsum.h — the shape of the two-stage column sums (LayerNorm's dw/db, RMSNorm's dw), shared by
** the kernels, their launchers, the CUDA trainer's scratch carving and gen/cuda_dec.c's scratch
** figure, so that all of them agree on the partials' size. Macros only: NVRTC, g++ and both C
** compilers read it.
** A column sum over N rows of C columns runs as fixed chunks of ZK_COL_ROWS rows: stage 1 writes one
** fp32 partial per (chunk, column), rows in order; stage 2 adds each column's partials in chunk
** order. The order depends on N alone, never on the launch or the GPU, so the sum is deterministic;
** stage 1 has ceil(C / ZK_COL_BLOCK) x ceil(N / ZK_COL_ROWS) blocks (384 for GPT-2 small at 8192 rows),
** where one thread per column walking all N rows had ceil(C / 64) (12).
*/
#ifndef ZK_COLSUM_H
#define ZK_COLSUM_H

#define ZK_COL_ROWS 64              /* rows per partial */
#define ZK_COL_BLOCK 256            /* columns per block: the kernels' __launch_bounds__ */
#define ZK_COL_CHUNKS(n) (((n) + ZK_COL_ROWS - 1) / ZK_COL_ROWS)
/* The GPT-2 trainer's one partials buffer for n rows, C = d_model, F = d_ff: LayerNorm's dw and db
** (2C columns) or, on the unfused path, the fc bias (F), whichever is wider; in floats. */
#define ZK_COLSUM_FLOATS(n, C, F) (ZK_COL_CHUNKS(n) * (2 * (C) > (F) ? 2 * (C) : (F)))

#endif
