/*
** cuda_norm.c — the device optimizer part's norm lanes (ZG_NORM_DEV_LANES, gen/plan.c
** norm_dev_lanes). With part of the optimizer on the device, that part's gradients stay there (in
** grad_keep, or grad_acc); only the fused norm needs them on the host, and it needs only their
** lanes in the order train.h's TrSq defines. So the hand-over that carries a bucket's norm (the last
** micro-step's WAIT_REDUCE, or GRAD_SHIP) sums the lanes of its part inside this rank's device range
** on the d2h stream (sumsq.cu zd_sumsq_lanes: 64 B per norm block), copies them down into the
** pinned "norm_lanes_land", and hands over only the rest of the range; the host's hand-over starts
** the bucket's sum from those lanes (cz_norm_pre, tr_hand_over_after), so the norm has the bits the
** whole range crossing would give. Under --check every gradient crosses (its comparison reads the
** whole host shard), and the host sums them all, with the same bits.
**
** Each bucket's lane sets sit at lanes_at[k] of the two regions, laid out in bucket order for this
** rank (gen sizes the regions for the rank that needs the most: plan.c plan_norm_lanes).
*/
#include <string.h>

#include "cuda_train.h"
#include "../kernels/zk_sumsq.h"

#define NB (ZG_N_BUCKETS > 0 ? ZG_N_BUCKETS : 1)

static int64_t lanes_at[NB + 1], lanes_lo[NB], lanes_hi[NB];   /* set offsets; the device part [lo, hi) */
static int lanes_pend[NB], laid_out;
static double *lanes_dev, *lanes_host;

/* Each bucket's lane sets: its part in this rank's device range (tr_keep_range on the bucket's
** flat range, as its rows carry it), in bucket order. */
static void lay_out(void)
{
    int64_t at = 0, skip, lo, region = ZG_HAS_NORM_LANES ? zg_regions[ZG_RG_NORM_LANES].bytes / 64 : 0;
    for (int k = 0; k < ZG_N_BUCKETS; k++) {
        ZrOpRow row = {.flat = zg_buckets[k].flat_offset, .count = zg_buckets[k].numel};
        int64_t n = tr_keep_range(&row, &skip, &lo);
        lanes_at[k] = at;
        at += n > 0 ? ZK_SQ_LANE_SETS(lo, n, (int64_t)ZG_NORM_BLOCK) : 0;
    }
    lanes_at[ZG_N_BUCKETS] = at;
    if (at > region)
        tr_die("rank %d's buckets need %lld norm lane sets; the plan's norm_lanes holds %lld", T.rank,
               (long long)at, (long long)region);
    lanes_dev = tr_region_named("norm_lanes");
    lanes_host = tr_region_named("norm_lanes_land");
    laid_out = 1;
}

int64_t cz_norm_lanes(int k, ZrOpRow *h, const char *dev_src, int fmt)
{
    if (!ZG_NORM_DEV_LANES || CZ.check) return 0;
    if (!laid_out) lay_out();
    int64_t skip, a, n = tr_hand_over_range(h, &skip, &a);
    int64_t dn = tr_keep_range(h, &skip, &a);      /* the range's front: the device part */
    if (dn <= 0) return 0;
    long la = (long)a, ln = (long)dn, block = ZG_NORM_BLOCK, sets = ZK_SQ_LANE_SETS(la, ln, block);
    if (lanes_at[k] + sets > lanes_at[k + 1])
        tr_die("bucket %d's hand-over meets %ld norm blocks, more than its %lld lane sets", k, sets,
               (long long)(lanes_at[k + 1] - lanes_at[k]));
    double *dev_dst = cz_dev(lanes_dev + lanes_at[k] * 8);
    const void *src = dev_src;
    const unsigned grid[3] = {ZK_SQ_LANE_GRID(sets), 1, 1}, block3[3] = {ZK_SQ_BLOCK, 1, 1};
    void *args[] = {&dev_dst, &src, &la, &ln, &block, &sets, &fmt, NULL};
    size_t esz = fmt == 0 ? 4 : 2, bytes = (size_t)sets * 64;
    CZ_CHECK(zr_gpu_footprint(CZ.d2h, src, (size_t)dn * esz, 0));
    CZ_CHECK(zr_gpu_footprint(CZ.d2h, dev_dst, bytes, 1));
    CZ_CHECK(zr_gpu_launch(CZ.d2h, "zd_sumsq_lanes", grid, block3, 0, args));
    CZ_CHECK(zr_gpu_copy(CZ.d2h, ZR_GPU_D2H, lanes_host + lanes_at[k] * 8, dev_dst, bytes));
    lanes_lo[k] = a;
    lanes_hi[k] = a + dn;
    lanes_pend[k] = 1;
    /* the row hands over the rest: [a + dn, a + n) of its source and destination */
    h->src_off += skip + dn;
    h->dst_off = a + dn;
    h->count = n - dn;
    h->flat = -1;
    return dn;
}

int cz_norm_pre(int k, TrSq *pre)
{
    if (!ZG_NORM_DEV_LANES || !lanes_pend[k]) return 0;
    lanes_pend[k] = 0;
    memset(pre, 0, sizeof *pre);
    const double *l = lanes_host + lanes_at[k] * 8;
    int64_t lo = lanes_lo[k], hi = lanes_hi[k], B = ZG_NORM_BLOCK;
    for (int64_t b = lo / B, i = 0; b * B < hi; b++, i++) {
        int64_t end = (b + 1) * B < hi ? (b + 1) * B : hi;
        tr_sq_lanes(pre, l + i * 8, end);
    }
    return 1;
}
