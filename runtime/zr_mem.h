/*
** zr_mem.h — one arena per memory tier at plan offsets; the pinned host budget; debug mode.
**
** The generator places every buffer at an offset in its tier (ZrRegionRow); the trainer makes one
** arena per tier and turns (offset, bytes) into pointers with zr_arena_at, which is bounds-checked.
** Tiers: ZR_TIER_DEVICE (host memory standing in for the GPU in the host backend), ZR_TIER_PINNED
** (page-aligned, best-effort mlock; cudaHostAlloc in CUDA builds), ZR_TIER_HOST (aligned malloc).
** ZR_TIER_NVME is not an arena (see zr_nvme.h). Every arena is 4096-aligned and every region
** starts where the plan says relative to that base (O_DIRECT-ready when the plan aligns offsets).
**
** Pinned memory is drawn from a budget the caller declares (zr_pinned_budget, the plan's figure);
** asking for more is -ENOMEM with the numbers, never a silent over-commit. mlock failure (RLIMIT_
** MEMLOCK) is reported once on stderr and the memory is used unpinned.
**
** Debug mode (env ZR_DEBUG_MEM=1 at create time, or zr_mem_set_debug(1)): each named region gets
** guard bytes on both sides (the arena is laid out with gaps, zr_arena_at still takes the plan's
** offsets), released regions are filled with NaN (0x7fc07fc0: a NaN as fp32, bf16 and fp16
** alike; new memory stays zeroed in both modes, so debug mode changes no result), zr_arena_at
** refuses a range that crosses a region boundary (overlapping regions count as one), and
** zr_arena_check / release / destroy report guard overwrites naming the region.
*/
#ifndef ZR_MEM_H
#define ZR_MEM_H
#include <stddef.h>
#include <stdint.h>
#include "zr_plan.h"          /* defines: ZrTier, ZrRegionRow */

typedef struct ZrArena ZrArena;

/* Debug mode for arenas created after the call: 1/0 override ZR_DEBUG_MEM, -1 follows it. */
void zr_mem_set_debug(int on);
int zr_mem_debug(void);

/* Declares the pinned budget in bytes (call once, before pinned arenas / zr_pinned_alloc;
** may be raised later). Until declared the budget is 0, so pinned allocation fails. */
void zr_pinned_budget(int64_t bytes);
int64_t zr_pinned_used(void);

/*
** Creates the arena of a tier holding `bytes`. rows (may be NULL): the plan's regions; those of
** other tiers are skipped, the rest must lie inside [0, bytes) (else -EINVAL, named). Regions
** give names to messages and guards in debug mode. Memory is zeroed.
** Returns 0, -EINVAL, -ENOMEM (pinned budget exceeded or allocation failed; stderr says which).
*/
int zr_arena_create(ZrArena **out, ZrTier tier, int64_t bytes, const ZrRegionRow *rows,
                    int nrows);
void zr_arena_destroy(ZrArena *a);    /* checks guards first in debug mode; NULL is a no-op */

/* Pointer to [off, off+bytes) of the arena, or NULL (with a message naming the arena tier,
** the range and the region) when out of bounds, or in debug mode crossing a region. */
void *zr_arena_at(ZrArena *a, int64_t off, int64_t bytes);
/* Same, by region name: the whole region; *bytes gets its size (may be NULL). */
void *zr_arena_region(ZrArena *a, const char *name, int64_t *bytes);

/* Tells the arena [off, off+bytes) is dead until written again: in debug mode fills it with
** NaN and checks the guards of the regions it touches. Returns 0, -EINVAL (bounds), -EFAULT. */
int zr_arena_release(ZrArena *a, int64_t off, int64_t bytes);
/* Debug mode: checks every guard; reports each overwritten one (region, before/after, first bad
** byte) on stderr and returns -EFAULT. Outside debug mode returns 0. */
int zr_arena_check(ZrArena *a);

int64_t zr_arena_bytes(const ZrArena *a);
ZrTier zr_arena_tier(const ZrArena *a);
void *zr_arena_base(ZrArena *a);      /* offset 0 (in debug mode regions are NOT contiguous) */

/*
** Standalone pinned buffer (e.g. I/O bounce buffers): 4096-aligned, zeroed, best-effort mlock,
** drawn from the same budget. Returns 0, -EINVAL, -ENOMEM. zr_pinned_free returns the bytes.
*/
int zr_pinned_alloc(void **out, int64_t bytes);
void zr_pinned_free(void *p, int64_t bytes);
#endif
