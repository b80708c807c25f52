/*
** zr_mem.c — tier arenas at plan offsets, the pinned budget, and the debug mode's guards/poison.
**
** An arena is one anonymous mapping (page-aligned, zero pages for free). In debug mode the arena
** is cut into segments: each maximal union of overlapping plan regions (regions with disjoint
** lifetimes may share bytes, so overlapping ones must stay adjacent), and each uncovered gap.
** Segments are laid out with GUARD bytes of a known pattern before and after, at addresses that
** keep the plan offset modulo 4096 (so O_DIRECT alignment is the same as without debug).
** zr_arena_at maps a plan offset to its segment; a range crossing segments is refused there,
** because in the plan it would run from one buffer into the next.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "zr_mem.h"           /* defines: ZrArena, the API */

#define PAGE 4096
#define GUARD 4096            /* bytes each side of a debug segment; a multiple of PAGE */
#define GUARD_BYTE 0xfd

typedef struct Seg {
    char name[80];            /* first region's name, or "(gap)" */
    int64_t off, bytes;       /* plan offset and size */
    int64_t doff;             /* offset of its first byte from a->base (debug layout) */
} Seg;

struct ZrArena {
    ZrTier tier;
    int64_t bytes;            /* plan bytes */
    char *base;               /* mapping start (debug: the first guard) */
    size_t map_bytes;
    int debug, locked;
    int nseg;
    Seg *segs;                /* debug: sorted by off, covering [0, bytes) exactly */
    int nreg;
    ZrRegionRow *regs;        /* this tier's rows (names borrowed from the caller's table) */
};

static const char *tier_name(ZrTier t)
{
    static const char *names[] = {"device", "pinned", "host", "nvme"};
    return (unsigned)t < 4 ? names[t] : "?";
}

/* {===================================================================== debug switch, budget */
static int debug_forced = -1;
void zr_mem_set_debug(int on) { debug_forced = on < 0 ? -1 : on != 0; }
int zr_mem_debug(void)
{
    if (debug_forced >= 0) return debug_forced;
    const char *e = getenv("ZR_DEBUG_MEM");
    return e && *e && strcmp(e, "0") != 0;
}

static int64_t pin_budget, pin_used;
static int mlock_reported;

void zr_pinned_budget(int64_t bytes) { __atomic_store_n(&pin_budget, bytes, __ATOMIC_SEQ_CST); }
int64_t zr_pinned_used(void) { return __atomic_load_n(&pin_used, __ATOMIC_SEQ_CST); }

static int pin_take(int64_t bytes, const char *what)
{
    int64_t used = __atomic_add_fetch(&pin_used, bytes, __ATOMIC_SEQ_CST);
    int64_t budget = __atomic_load_n(&pin_budget, __ATOMIC_SEQ_CST);
    if (used <= budget) return 0;
    __atomic_sub_fetch(&pin_used, bytes, __ATOMIC_SEQ_CST);
    fprintf(stderr,
            "zr_mem: %s of %" PRId64 " bytes exceeds the pinned budget: %" PRId64
            " of %" PRId64 " bytes already used (declare more with zr_pinned_budget)\n",
            what, bytes, used - bytes, budget);
    return -ENOMEM;
}
static void pin_give(int64_t bytes) { __atomic_sub_fetch(&pin_used, bytes, __ATOMIC_SEQ_CST); }

/* Best effort: pinned memory that cannot be locked still works, only slower to DMA. */
static int try_lock(void *p, size_t bytes)
{
    if (mlock(p, bytes) == 0) return 1;
    if (!__atomic_exchange_n(&mlock_reported, 1, __ATOMIC_SEQ_CST))
        fprintf(stderr, "zr_mem: mlock of %zu bytes failed (%s); pinned memory is used unlocked "
                "(raise `ulimit -l` to lock it); reported once\n", bytes, strerror(errno));
    return 0;
}
/* }===================================================================== */

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static int cmp_reg(const void *x, const void *y)
{
    const ZrRegionRow *a = x, *b = y;
    return a->offset_bytes < b->offset_bytes ? -1 : a->offset_bytes > b->offset_bytes;
}

static void add_seg(ZrArena *a, const char *name, int64_t off, int64_t end)
{
    Seg *s = &a->segs[a->nseg++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->off = off;
    s->bytes = end - off;
}

/* Segments from the (sorted) regions: overlapping regions merge, gaps get their own segment. */
static void build_segments(ZrArena *a)
{
    a->segs = calloc((size_t)(2 * a->nreg + 1), sizeof(Seg));
    int64_t pos = 0;
    for (int i = 0; i < a->nreg;) {
        const ZrRegionRow *r = &a->regs[i];
        if (r->bytes == 0) { i++; continue; }
        if (r->offset_bytes > pos) add_seg(a, "(gap)", pos, r->offset_bytes);
        int64_t start = r->offset_bytes > pos ? r->offset_bytes : pos;
        int64_t end = r->offset_bytes + r->bytes;
        for (i++; i < a->nreg && a->regs[i].offset_bytes < end; i++)
            if (a->regs[i].offset_bytes + a->regs[i].bytes > end)
                end = a->regs[i].offset_bytes + a->regs[i].bytes;
        if (end > start) add_seg(a, r->name ? r->name : "(unnamed)", start, end);
        if (end > pos) pos = end;
    }
    if (pos < a->bytes || a->nseg == 0) add_seg(a, "(gap)", pos, a->bytes);
    int64_t d = GUARD;
    for (int i = 0; i < a->nseg; i++) {
        Seg *s = &a->segs[i];
        /* keep off % PAGE: the segment starts at the first address >= d with that residue */
        s->doff = round_up(d, PAGE) + s->off % PAGE;
        d = s->doff + s->bytes + GUARD;
    }
    a->map_bytes = (size_t)round_up(d, PAGE);
}

static void fill_guards(ZrArena *a)
{
    int64_t prev_end = 0;
    for (int i = 0; i < a->nseg; i++) {
        memset(a->base + prev_end, GUARD_BYTE, (size_t)(a->segs[i].doff - prev_end));
        prev_end = a->segs[i].doff + a->segs[i].bytes;
    }
    memset(a->base + prev_end, GUARD_BYTE, a->map_bytes - (size_t)prev_end);
}

int zr_arena_create(ZrArena **out, ZrTier tier, int64_t bytes, const ZrRegionRow *rows,
                    int nrows)
{
    if (!out || bytes < 0 || (unsigned)tier >= ZR_TIER_NVME || nrows < 0 || (nrows && !rows))
        return -EINVAL;
    *out = NULL;
    ZrArena *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    a->tier = tier;
    a->bytes = bytes;
    a->debug = zr_mem_debug();
    a->regs = calloc((size_t)nrows + 1, sizeof *a->regs);
    if (!a->regs) { free(a); return -ENOMEM; }
    for (int i = 0; i < nrows; i++) {
        if (rows[i].tier != (int)tier) continue;
        const ZrRegionRow *r = &rows[i];
        if (r->offset_bytes < 0 || r->bytes < 0 || r->offset_bytes > bytes ||
            r->bytes > bytes - r->offset_bytes) {
            fprintf(stderr, "zr_mem: region %s [%" PRId64 ", +%" PRId64 ") lies outside the %s "
                    "arena of %" PRId64 " bytes\n", r->name ? r->name : "(unnamed)",
                    r->offset_bytes, r->bytes, tier_name(tier), bytes);
            free(a->regs);
            free(a);
            return -EINVAL;
        }
        a->regs[a->nreg++] = *r;
    }
    qsort(a->regs, (size_t)a->nreg, sizeof *a->regs, cmp_reg);
    if (a->debug) build_segments(a);
    else a->map_bytes = (size_t)round_up(bytes > 0 ? bytes : 1, PAGE);
    if (tier == ZR_TIER_PINNED && pin_take(bytes, "pinned arena") < 0) {
        free(a->segs);
        free(a->regs);
        free(a);
        return -ENOMEM;
    }
    a->base = map(a->map_bytes);
    if (!a->base) {
        fprintf(stderr, "zr_mem: cannot map %zu bytes for the %s arena: %s\n", a->map_bytes,
                tier_name(tier), strerror(errno));
        if (tier == ZR_TIER_PINNED) pin_give(bytes);
        free(a->segs);
        free(a->regs);
        free(a);
        return -ENOMEM;
    }
    if (a->debug) fill_guards(a);
    if (tier == ZR_TIER_PINNED) a->locked = try_lock(a->base, a->map_bytes);
    *out = a;
    return 0;
}

/* {===================================================================== lookup and checks */
/* Index of the segment holding plan offset off (off < bytes), by binary search. */
static int seg_of(const ZrArena *a, int64_t off)
{
    int lo = 0, hi = a->nseg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (a->segs[mid].off <= off) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Name of a region holding off, for messages. */
static const char *region_at(const ZrArena *a, int64_t off)
{
    for (int i = 0; i < a->nreg; i++)
        if (off >= a->regs[i].offset_bytes && off < a->regs[i].offset_bytes + a->regs[i].bytes)
            return a->regs[i].name ? a->regs[i].name : "(unnamed)";
    return "(no region)";
}

static int in_bounds(const ZrArena *a, int64_t off, int64_t bytes, const char *who)
{
    if (off >= 0 && bytes >= 0 && off <= a->bytes && bytes <= a->bytes - off) return 1;
    fprintf(stderr, "zr_mem: %s of %" PRId64 " bytes at offset %" PRId64 " is outside the %s "
            "arena of %" PRId64 " bytes (starts in %s)\n", who, bytes, off, tier_name(a->tier),
            a->bytes,
            off >= 0 && off < a->bytes ? region_at(a, off) : "nothing");
    return 0;
}

void *zr_arena_at(ZrArena *a, int64_t off, int64_t bytes)
{
    if (!a || !in_bounds(a, off, bytes, "zr_arena_at")) return NULL;
    if (!a->debug) return a->base + off;
    if (off == a->bytes) return a->base + a->map_bytes;   /* empty range at the very end */
    const Seg *s = &a->segs[seg_of(a, off)];
    if (off + bytes > s->off + s->bytes) {
        fprintf(stderr, "zr_mem: zr_arena_at [%" PRId64 ", %" PRId64 ") of the %s arena runs "
                "past the end of %s [%" PRId64 ", %" PRId64 ") into the next buffer\n",
                off, off + bytes, tier_name(a->tier), s->name, s->off, s->off + s->bytes);
        return NULL;
    }
    return a->base + s->doff + (off - s->off);
}

void *zr_arena_region(ZrArena *a, const char *name, int64_t *bytes)
{
    if (!a || !name) return NULL;
    for (int i = 0; i < a->nreg; i++) {
        if (!a->regs[i].name || strcmp(a->regs[i].name, name) != 0) continue;
        if (bytes) *bytes = a->regs[i].bytes;
        return zr_arena_at(a, a->regs[i].offset_bytes, a->regs[i].bytes);
    }
    fprintf(stderr, "zr_mem: no region named %s in the %s arena\n", name, tier_name(a->tier));
    return NULL;
}

/* Checks the guards before and after segment i; reports and returns -EFAULT if overwritten. */
static int check_seg(const ZrArena *a, int i)
{
    const Seg *s = &a->segs[i];
    int64_t gb = i == 0 ? 0 : a->segs[i - 1].doff + a->segs[i - 1].bytes;   /* guard before */
    int64_t ga = s->doff + s->bytes;                                           /* guard after */
    int64_t ge = i + 1 < a->nseg ? a->segs[i + 1].doff : (int64_t)a->map_bytes;
    int rc = 0;
    for (int64_t j = s->doff - 1; j >= gb; j--)          /* nearest byte first: underrun size */
        if ((unsigned char)a->base[j] != GUARD_BYTE) {
            fprintf(stderr, "zr_mem: guard BEFORE %s (%s arena, plan offset %" PRId64
                    ") overwritten, %" PRId64 " bytes before its start\n", s->name,
                    tier_name(a->tier), s->off, s->doff - j);
            rc = -EFAULT;
            break;
        }
    for (int64_t j = ge - 1; j >= ga; j--)               /* farthest byte first: overrun size */
        if ((unsigned char)a->base[j] != GUARD_BYTE) {
            fprintf(stderr, "zr_mem: guard AFTER %s (%s arena, plan offset %" PRId64 ", %" PRId64
                    " bytes) overwritten, up to %" PRId64 " bytes past its end\n", s->name,
                    tier_name(a->tier), s->off, s->bytes, j - ga + 1);
            rc = -EFAULT;
            break;
        }
    return rc;
}

int zr_arena_check(ZrArena *a)
{
    if (!a) return -EINVAL;
    if (!a->debug) return 0;
    int rc = 0;
    for (int i = 0; i < a->nseg; i++)
        if (check_seg(a, i) < 0) rc = -EFAULT;
    return rc;
}

/* NaN for fp32 (0x7fc07fc0), bf16 and fp16 (0x7fc0) at any alignment of the element. */
static void poison(char *p, int64_t bytes)
{
    for (int64_t i = 0; i < bytes; i++) p[i] = (char)(((uintptr_t)(p + i) & 1) ? 0x7f : 0xc0);
}

int zr_arena_release(ZrArena *a, int64_t off, int64_t bytes)
{
    if (!a || !in_bounds(a, off, bytes, "zr_arena_release")) return -EINVAL;
    if (!a->debug || bytes == 0) return 0;
    int rc = 0;
    for (int i = seg_of(a, off); i < a->nseg && a->segs[i].off < off + bytes; i++) {
        const Seg *s = &a->segs[i];
        int64_t lo = off > s->off ? off : s->off;
        int64_t hi = off + bytes < s->off + s->bytes ? off + bytes : s->off + s->bytes;
        poison(a->base + s->doff + (lo - s->off), hi - lo);
        if (check_seg(a, i) < 0) rc = -EFAULT;
    }
    return rc;
}
/* }===================================================================== */

void zr_arena_destroy(ZrArena *a)
{
    if (!a) return;
    zr_arena_check(a);
    if (a->locked) munlock(a->base, a->map_bytes);
    munmap(a->base, a->map_bytes);
    if (a->tier == ZR_TIER_PINNED) pin_give(a->bytes);
    free(a->segs);
    free(a->regs);
    free(a);
}

int64_t zr_arena_bytes(const ZrArena *a) { return a ? a->bytes : 0; }
ZrTier zr_arena_tier(const ZrArena *a) { return a ? a->tier : ZR_NTIERS; }
void *zr_arena_base(ZrArena *a) { return a ? zr_arena_at(a, 0, 0) : NULL; }

int zr_pinned_alloc(void **out, int64_t bytes)
{
    if (!out || bytes <= 0) return -EINVAL;
    *out = NULL;
    int rc = pin_take(bytes, "zr_pinned_alloc");
    if (rc < 0) return rc;
    size_t mb = (size_t)round_up(bytes, PAGE);
    void *p = map(mb);
    if (!p) {
        fprintf(stderr, "zr_mem: cannot map %zu pinned bytes: %s\n", mb, strerror(errno));
        pin_give(bytes);
        return -ENOMEM;
    }
    try_lock(p, mb);
    *out = p;
    return 0;
}

void zr_pinned_free(void *p, int64_t bytes)
{
    if (!p) return;
    size_t mb = (size_t)round_up(bytes, PAGE);
    munlock(p, mb);
    munmap(p, mb);
    pin_give(bytes);
}
