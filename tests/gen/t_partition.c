/*
** t_partition.c — invariants of the partition map and the memory plan over random GPT-2 shapes
** (seeded), stages 0-3, world sizes 1..64 and random bucket / persistence / sub-group / offload
** settings. Each invariant is checked by recomputing it from first principles (element counts,
** interval arithmetic), never by asking the planner the same question twice.
*/
#include <stdlib.h>
#include "zg_plan.h"
#include "zt.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static int64_t rnd(int64_t lo, int64_t hi)      /* inclusive */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

typedef struct Case {
    ZgModel m;
    ZgZero z;
    ZgPlan p;
} Case;

static Case *random_case(int stage, int ws)
{
    Case *c = calloc(1, sizeof *c);
    zg_model_defaults(&c->m);
    c->m.name = "rnd";
    c->m.arch = "gpt2";
    c->m.n_heads = rnd(1, 4);
    c->m.d_model = c->m.n_heads * rnd(1, 12);
    c->m.vocab_size = rnd(5, 300);
    c->m.context = rnd(2, 40);
    c->m.seq_len = rnd(1, c->m.context);
    c->m.n_layers = rnd(1, 3);
    c->m.d_ff = rnd(1, 4 * c->m.d_model);
    c->m.tie_embeddings = true;
    zg_model_set_world_size(&c->m, ws);
    zg_zero_defaults(&c->z);
    ZgZero *z = &c->z;
    z->stage = stage;
    z->micro_batch = rnd(1, 3);
    z->grad_accum = rnd(1, 3);
    z->train_batch_size = z->micro_batch * z->grad_accum * ws;
    z->dtype = (ZgDtype)rnd(0, 2);
    z->overlap_comm = rnd(0, 1);
    z->reduce_bucket_size = rnd(1, 3000);
    z->sub_group_size = rnd(1, 5000);
    z->param_persistence_threshold = rnd(0, 200);
    z->model_persistence_threshold = rnd(0, 1) ? INT64_MAX : rnd(0, 2000);
    z->prefetch_bucket_size = rnd(0, 3000);
    z->max_live_parameters = rnd(1, 20000);
    z->aio_block_size = rnd(0, 1) ? 4096 : 1048576;
    z->offload_optimizer.device = (ZgOffload)rnd(0, stage == 3 ? 2 : 1);
    z->offload_optimizer.pin_memory = rnd(0, 1);
    z->offload_optimizer.buffer_count = rnd(1, 5);
    if (stage == 3) {
        z->offload_param.device = (ZgOffload)rnd(0, 2);
        z->offload_param.pin_memory = rnd(0, 1);
    }
    if (!zg_model_build(&c->m, &c->p) || !zg_plan_build(&c->m, &c->z, &c->p)) {
        free(c);
        return NULL;
    }
    return c;
}

#define CHECK_CASE(cond, c) ZT_CHECKM(cond, "%s (stage %d ws %d)", #cond, (c)->z.stage, (c)->m.world_size)

/* Every element of every tensor owned by exactly one rank; shards balanced within alignment. */
static void check_ownership(Case *c)
{
    const ZgPlan *p = &c->p;
    const ZgShardMap *s = &p->shard;
    int ws = c->m.world_size;
    int64_t n = p->n_params;
    unsigned char *cnt = calloc((size_t)n, 1);
    int64_t *real = calloc((size_t)ws, sizeof *real);
    if (c->z.stage < 3) {
        CHECK_CASE(s->padded_numel % (2 * ws) == 0, c);
        CHECK_CASE(s->padded_numel >= n && s->padded_numel - n < 2 * ws, c);
        CHECK_CASE(s->part_numel * ws == s->padded_numel, c);
        for (int i = 0; i < p->n_tensors; i++) {
            const ZgTensor *t = &p->tensors[i];
            for (int64_t e = 0; e < t->numel; e++) {
                int64_t flat = t->flat_offset + e;
                for (int r = 0; r < ws; r++)
                    if (flat >= r * s->part_numel && flat < (r + 1) * s->part_numel) {
                        cnt[flat]++;
                        real[r]++;
                    }
            }
        }
        int64_t lo = real[0], hi = real[0];
        for (int r = 1; r < ws; r++) {
            if (real[r] < lo) lo = real[r];
            if (real[r] > hi) hi = real[r];
        }
        CHECK_CASE(hi - lo < 2 * ws, c);
    } else {
        int64_t shard_total = 0;
        for (int i = 0; i < p->n_tensors; i++) {
            const ZgTensor *t = &p->tensors[i];
            CHECK_CASE(t->part_numel == (t->numel + ws - 1) / ws, c);
            CHECK_CASE(s->shard_offset[i] == shard_total, c);   /* slices back to back */
            shard_total += t->part_numel;
            for (int r = 0; r < ws; r++) {
                int64_t a = r * t->part_numel, b = a + t->part_numel;
                if (b > t->numel) b = t->numel;
                for (int64_t e = a; e < b; e++) {
                    cnt[t->flat_offset + e]++;
                    real[r]++;
                }
            }
        }
        CHECK_CASE(shard_total == s->part_numel, c);
        for (int r = 0; r < ws; r++) CHECK_CASE(real[r] <= s->part_numel, c);
        CHECK_CASE(s->part_numel * ws - n < (int64_t)p->n_tensors * ws, c);
    }
    int bad = 0;
    for (int64_t e = 0; e < n; e++) bad += cnt[e] != 1;
    CHECK_CASE(bad == 0, c);
    /* tensors tile the flat space */
    int64_t off = 0;
    for (int i = 0; i < p->n_tensors; i++) {
        CHECK_CASE(p->tensors[i].flat_offset == off, c);
        off += p->tensors[i].numel;
    }
    CHECK_CASE(off == n, c);
    free(cnt);
    free(real);
}

static void check_buckets(Case *c)
{
    const ZgPlan *p = &c->p;
    int ws = c->m.world_size;
    int *seen = calloc((size_t)p->n_tensors, sizeof *seen);
    int prev_first = p->n_tensors;
    for (int k = 0; k < p->n_buckets; k++) {
        const ZgBucket *b = &p->buckets[k];
        CHECK_CASE(b->first_tensor + b->n_tensors == prev_first, c);   /* reverse tensor order */
        prev_first = b->first_tensor;
        int64_t numel = 0, padded = 0;
        for (int i = b->first_tensor; i < b->first_tensor + b->n_tensors; i++) {
            seen[i]++;
            CHECK_CASE(p->tensors[i].reduce_bucket == k, c);
            numel += p->tensors[i].numel;
            padded += c->z.stage == 3 ? (p->tensors[i].numel + ws - 1) / ws * ws : p->tensors[i].numel;
        }
        CHECK_CASE(numel == b->numel && padded == b->padded_numel, c);
        CHECK_CASE(b->padded_numel <= c->z.reduce_bucket_size || b->n_tensors == 1, c);
        if (c->z.stage >= 2) CHECK_CASE(b->padded_numel <= p->bucket_buffer_numel, c);
        /* greedy: the next (lower) tensor would not have fit */
        if (b->first_tensor > 0 && k + 1 < p->n_buckets) {
            const ZgTensor *nx = &p->tensors[b->first_tensor - 1];
            int64_t nsz = c->z.stage == 3 ? (nx->numel + ws - 1) / ws * ws : nx->numel;
            CHECK_CASE(b->padded_numel + nsz > c->z.reduce_bucket_size, c);
        }
    }
    CHECK_CASE(prev_first == 0, c);
    for (int i = 0; i < p->n_tensors; i++) CHECK_CASE(seen[i] == 1, c);
    free(seen);
}

static void check_gathers(Case *c)
{
    const ZgPlan *p = &c->p;
    if (c->z.stage != 3) {
        CHECK_CASE(p->n_gathers == 0, c);
        return;
    }
    int ws = c->m.world_size;
    int *seen = calloc((size_t)p->n_tensors, sizeof *seen);
    int64_t persist_total = 0;
    for (int i = 0; i < p->n_tensors; i++) {
        const ZgTensor *t = &p->tensors[i];
        if (t->persistent) {
            CHECK_CASE(t->numel <= c->z.param_persistence_threshold, c);
            persist_total += t->numel;
        }
    }
    CHECK_CASE(persist_total <= c->z.model_persistence_threshold, c);
    for (int g = 0; g < p->n_gathers; g++) {
        const ZgGather *ga = &p->gathers[g];
        const ZgModule *md = &p->modules[ga->module];
        CHECK_CASE(ga->first_tensor >= md->first_tensor &&
                   ga->first_tensor + ga->n_tensors <= md->first_tensor + md->n_tensors, c);
        int64_t end = 0, part = 0;
        for (int i = ga->first_tensor; i < ga->first_tensor + ga->n_tensors; i++) {
            const ZgTensor *t = &p->tensors[i];
            if (t->persistent) continue;
            seen[i]++;
            CHECK_CASE(t->gather == g, c);
            CHECK_CASE(t->gather_offset >= end, c);                     /* no overlap in the slot */
            end = t->gather_offset + t->part_numel * ws;
            part += t->part_numel;
        }
        CHECK_CASE(end <= p->gather_slot_numel && end == ga->numel && part == ga->part_numel, c);
    }
    for (int i = 0; i < p->n_tensors; i++)
        CHECK_CASE(seen[i] == (p->tensors[i].persistent ? 0 : 1), c);
    free(seen);
}

static void check_subgroups(Case *c)
{
    const ZgPlan *p = &c->p;
    int64_t off = 0;
    /* Sub-groups live on NVMe when the optimizer is there, or (fp32, stage 3) when the parameters,
    ** which are then the master copy, are there and the optimizer is in memory. */
    bool opt_nvme = c->z.offload_optimizer.device == ZG_OFFLOAD_NVME;
    bool par_master_nvme = c->z.stage == 3 && c->z.offload_param.device == ZG_OFFLOAD_NVME &&
                           c->z.dtype == ZG_DTYPE_FP32 && c->z.offload_optimizer.device == ZG_OFFLOAD_NONE;
    bool nvme = opt_nvme || (par_master_nvme && p->n_subgroups > 0);
    CHECK_CASE(p->sg_swap == (opt_nvme ? ZG_SWAP_OPTIMIZER : par_master_nvme ? ZG_SWAP_PARAMS : ZG_SWAP_NONE), c);
    for (int i = 0; i < p->n_subgroups; i++) {
        const ZgSubGroup *sg = &p->subgroups[i];
        CHECK_CASE(sg->shard_offset == off && sg->numel > 0, c);
        CHECK_CASE(sg->shard_offset % p->sg_align == 0, c);
        CHECK_CASE(sg->numel <= c->z.sub_group_size + p->sg_align, c);
        if (nvme) {
            CHECK_CASE(sg->nvme_offset_bytes % p->nvme_align == 0 && p->nvme_align % 4096 == 0, c);
            CHECK_CASE(p->nvme_align % c->z.aio_block_size == 0, c);
        } else {
            CHECK_CASE(sg->nvme_offset_bytes == -1, c);
        }
        off += sg->numel;
    }
    int64_t want = c->z.stage == 0 ? p->shard.padded_numel : p->shard.part_numel;
    CHECK_CASE(off == want && p->shard.opt_numel == want, c);
}

static void check_regions(Case *c)
{
    const ZgMemPlan *mp = &c->p.mem;
    for (int t = 0; t < ZG_NTIERS; t++) {
        int64_t sum_cat = 0;
        for (int k = 0; k < ZG_NMEM; k++) sum_cat += mp->cat_bytes[t][k];
        int64_t sum_reg = 0;
        for (int i = 0; i < mp->n_regions; i++) {
            const ZgRegion *a = &mp->regions[i];
            if ((int)a->tier != t) continue;
            sum_reg += a->bytes;
            CHECK_CASE(a->bytes > 0 && a->offset_bytes % 64 == 0, c);
            CHECK_CASE(a->offset_bytes + a->bytes <= mp->tier_bytes[t], c);
            if (t == ZG_TIER_NVME)
                CHECK_CASE(a->offset_bytes % c->p.nvme_align == 0 && a->bytes % c->p.nvme_align == 0, c);
            for (int j = i + 1; j < mp->n_regions; j++) {
                const ZgRegion *b = &mp->regions[j];
                if ((int)b->tier != t) continue;
                bool disjoint = a->offset_bytes + a->bytes <= b->offset_bytes ||
                                b->offset_bytes + b->bytes <= a->offset_bytes;
                CHECK_CASE(disjoint, c);
            }
        }
        CHECK_CASE(sum_reg == sum_cat && sum_reg <= mp->tier_bytes[t], c);
        CHECK_CASE(mp->peak_bytes[t] <= mp->tier_bytes[t], c);
    }
}

static void t_random_plans(void)
{
    int cases = 0;
    for (int stage = 0; stage <= 3; stage++) {
        for (int ws = 1; ws <= 64; ws += (ws < 8 ? 1 : 7)) {
            Case *c = random_case(stage, ws);
            ZT_CHECKM(c != NULL, "plan failed (stage %d ws %d)", stage, ws);
            if (!c) continue;
            check_ownership(c);
            check_buckets(c);
            check_gathers(c);
            check_subgroups(c);
            check_regions(c);
            cases++;
        }
    }
    ZT_CHECK(cases >= 4 * 16);
}

/* The 16-bit flat buffer: padded to 2*ws as DeepSpeed's nccl_start_alignment_factor does. */
static void t_flat_padding_known(void)
{
    Case *c = calloc(1, sizeof *c);
    zg_model_defaults(&c->m);
    c->m.name = "k"; c->m.vocab_size = 7; c->m.context = 3; c->m.d_model = 2; c->m.n_heads = 1;
    c->m.d_ff = 3; c->m.n_layers = 1; c->m.seq_len = 3;
    zg_model_set_world_size(&c->m, 4);
    zg_zero_defaults(&c->z);
    c->z.stage = 2; c->z.micro_batch = 1; c->z.grad_accum = 1;
    ZT_CHECK(zg_model_build(&c->m, &c->p) && zg_plan_build(&c->m, &c->z, &c->p));
    /* 14 + 6 + (2+2+12+6+4+2+2+2+6+3+6+2) + 4 = 73 params -> padded to a multiple of 2*4: 80 = 20 per rank */
    ZT_EQ_INT(c->p.n_params, 73);
    ZT_EQ_INT(c->p.shard.padded_numel, 80);
    ZT_EQ_INT(c->p.shard.part_numel, 20);
    free(c);
}

int main(void)
{
    zg_diag_quiet(true);
    ZT_RUN(t_flat_padding_known);
    ZT_RUN(t_random_plans);
    return zt_end();
}
