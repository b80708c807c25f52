/*
** zr_pipe.h — the optimizer step over NVMe, pipelined: read(i+1) ‖ adam(i) ‖ write(i-1).
**
** The fp32 master, m and v of every sub-group live in a swap file (a ZrNvme). Two layouts
** (ZrPipeLayout), both addressed by the plan's ZrSubGroupRow.nvme_offset_bytes = off:
**   regions (zgen's plan): three regions "master", "adam_m", "adam_v" at byte offsets R_p, R_m, R_v
**       of the file; sub-group i's arrays are at R_p + off, R_m + off, R_v + off (off = shard
**       offset * 4 in zgen's plan), numel*4 bytes each.
**   interleaved (zr_pipe_layout): per sub-group [ p | m | v ] at off, each array padded to
**       ZR_NVME_ALIGN bytes (zr_pipe_array_bytes), so every transfer is aligned.
** Exactly numel*4 bytes of each array move; unaligned ends go through zr_nvme's bounce path, so
** neighbouring sub-groups are never overwritten.
**
** zr_pipe_step walks the sub-groups with buffer_count pinned buffers (buffer of sub-group i:
** i % buffer_count, as the plan's ZrSubGroupRow.buffer): it reads ahead as far as free buffers allow
** (buffer_count - 2 sub-groups ahead; one with 2 buffers; none with 1), runs zr_adam_step on
** sub-group i in chunks of ZR_PIPE_CHUNK elements, keeping the disk queue full between chunks, and
** leaves i's write in flight while it goes on: DeepSpeed's pipeline_read + pipeline_write, always
** on. A trainer that executes the plan's SWAP_IN / OPTIMIZER / SWAP_OUT ops itself calls
** zr_pipe_swap_in / zr_pipe_optimize / zr_pipe_swap_out with ZrSubGroupRow.buffer instead.
** Adam is elementwise and zr_adam_step gives the same bits on every path and chunking, so the result
** equals zr_adam_step over the same arrays in memory, bit for bit (tests/runtime/t_pipe.c).
**
** Threads: one ZrPipe and its ZrNvme are driven by one thread; zr_adam_step uses OpenMP inside.
*/
#ifndef ZR_PIPE_H
#define ZR_PIPE_H
#include <stdint.h>
#include "zr_adam.h"          /* defines: ZrAdamCfg, zr_adam_step */
#include "zr_nvme.h"          /* defines: ZrNvme swap files */
#include "zr_plan.h"          /* defines: ZrSubGroupRow, ZrDtype */

/* Elements per zr_adam_step call; the disk queue is refilled between calls. Each call is an OpenMP
** fork/join: smaller chunks cost many barriers on a busy machine; larger ones let the
** qd x block_size bytes in flight drain before the next refill. */
#define ZR_PIPE_CHUNK (1 << 20)

typedef struct ZrPipe ZrPipe;

typedef struct ZrPipeStats {      /* of the latest zr_pipe_step */
    double total_s;               /* wall time of the step */
    double adam_s;                /* inside zr_adam_step */
    double read_wait_s;           /* blocked waiting for a sub-group's read */
    double write_wait_s;          /* blocked waiting for a buffer's write, or the final writes */
    int64_t bytes_read, bytes_written;
} ZrPipeStats;

typedef struct ZrPipeLayout {
    int interleaved;              /* 1: [p|m|v] per sub-group (zr_pipe_layout); 0: three regions */
    int64_t master, m, v;         /* regions: byte offsets of the three regions in the file */
} ZrPipeLayout;

/* Bytes of one array of numel fp32 values in the interleaved layout (padded to ZR_NVME_ALIGN). */
int64_t zr_pipe_array_bytes(int64_t numel);
/* Bytes of one sub-group in the interleaved layout: 3 * zr_pipe_array_bytes(numel). */
int64_t zr_pipe_sg_bytes(int64_t numel);
/* Interleaved layout: assigns sg[i].nvme_offset_bytes consecutively from base (rounded up to
** ZR_NVME_ALIGN). Returns the end offset: the swap file size to reserve. */
int64_t zr_pipe_layout(ZrSubGroupRow *sg, int n, int64_t base);

/* Bytes of one staging buffer: [p | m | v] of max_numel elements, each array padded to 4 KiB. */
int64_t zr_pipe_buf_bytes(int64_t max_numel);

/* buffer_count (offload_optimizer.buffer_count, >= 1) staging buffers for sub-groups of at most
** max_numel elements. bufs NULL: allocated here (zr_nvme_alloc, pinned best effort); else the
** caller's buffer_count buffers of at least zr_pipe_buf_bytes(max_numel) bytes, 4 KiB aligned (the
** plan's pinned opt_buf_<b> regions, 3 * round_up(sg_max*4, nvme_align) bytes, qualify), which stay
** the caller's. They are registered with f's ring
** (replacing f's earlier registrations). lay NULL: interleaved. f stays the caller's.
** Returns 0, -EINVAL (bad counts, or a caller buffer not 4 KiB aligned), -ENOMEM. */
int zr_pipe_create(ZrPipe **out, ZrNvme *f, int buffer_count, int64_t max_numel,
                   const ZrPipeLayout *lay, void *const *bufs);
void zr_pipe_destroy(ZrPipe *p);

/* Writes one sub-group's state (m or v NULL: zeros), e.g. at initialisation or resume. Blocking. */
int zr_pipe_put(ZrPipe *p, const ZrSubGroupRow *sg, const float *master, const float *m,
                const float *v);
/* Reads one sub-group's state into the arrays that are not NULL (checkpoints, tests). Blocking. */
int zr_pipe_get(ZrPipe *p, const ZrSubGroupRow *sg, float *master, float *m, float *v);

/* One optimizer step over sub-groups sg[0..n). The gradient of sub-group i is at
** grad + sg[i].shard_offset elements of gdt; if p16 is not NULL the updated parameters are written
** rounded to p16dt at p16 + sg[i].shard_offset elements. c == NULL moves the data without computing
** (benchmarks use it to time the I/O alone). Returns 0, -EINVAL, or the first I/O error (text in
** zr_nvme_strerror of the file); on an I/O error nothing more is issued and all in flight is waited
** for: sub-groups whose write completed hold their update, the failed one may be partly written. */
int zr_pipe_step(ZrPipe *p, const ZrAdamCfg *c, const ZrSubGroupRow *sg, int n, const void *grad,
                 ZrDtype gdt, void *p16, ZrDtype p16dt);
void zr_pipe_stats(const ZrPipe *p, ZrPipeStats *out);

/* Op-level API, one call per op of the plan's optimizer schedule, buffer = sg->buffer
** (0 <= buffer < buffer_count, else -EINVAL):
**   SWAP_IN   zr_pipe_swap_in: waits for the buffer's previous write, then queues the reads;
**             -EBUSY if the buffer holds a sub-group not yet swapped out (the plan's order
**             SWAP_IN(i+1), OPTIMIZER(i), SWAP_OUT(i) needs buffer_count >= 2).
**   OPTIMIZER zr_pipe_optimize: waits for the reads, runs Adam in chunks driving the I/O between
**             (c == NULL: no compute). grad, p16 as in zr_pipe_step.
**   SWAP_OUT  zr_pipe_swap_out: queues the writes and returns.
**   zr_pipe_finish: waits for everything in flight (end of the optimizer step). All return 0 or a
** negative errno (I/O text in zr_nvme_strerror). zr_pipe_stats counts since the last finish. */
int zr_pipe_swap_in(ZrPipe *p, const ZrSubGroupRow *sg);
int zr_pipe_optimize(ZrPipe *p, const ZrAdamCfg *c, const ZrSubGroupRow *sg, const void *grad,
                     ZrDtype gdt, void *p16, ZrDtype p16dt);
int zr_pipe_swap_out(ZrPipe *p, const ZrSubGroupRow *sg);
int zr_pipe_finish(ZrPipe *p);

#endif
