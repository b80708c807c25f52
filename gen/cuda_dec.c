/*
** cuda_dec.c — what train-cuda computes in, decided here once from the plan and emitted into
** cuda/kernels/zk_shapes.h (nvrtc.c's zg_cuda_shapes_h), so that neither the kernels nor the trainer
** re-decide it at run time (docs/CUDA_TRAINER.md, 16-bit plans):
**   ZK_IO               storage of the device activations: the plan's 16-bit dtype (1 bf16, 2 fp16),
**                       0 (fp32) for fp32 plans. fp16 activations and their loss-scaled gradients
**                       have fp16's range, as in DeepSpeed's fp16 training: an activation gradient
**                       past 65504 becomes inf, the device norm sees it and the scaler skips the step
**                       and halves the scale. The host trainer keeps fp32 activations, so at a scale
**                       where only an activation gradient overflows the two backends skip different
**                       steps (docs/CUDA_TRAINER.md, fp16 plans); below it they agree within --check's
**                       tolerance.
**   ZK_ATT_TC           1 where attention_tc.cu (tensor cores) replaces attention.cu: 16-bit
**                       activations and a head size its tiling serves (the same test as the kernel's
**                       ZK_ATC_ON, repeated here; the stand-in asserts that the two agree).
**   ZK_ATT_TC_*_SMEM    its dynamic shared memory per kernel (bytes), which the launch asks for and
**                       the driver must allow above 48 KiB.
**   zg_cuda_acts_bytes  the bytes cuda_model.c's cz_acts_init carves for the device activations (its
**                       layout, repeated here), which memplan.c gives the plan's "acts" / "scratch"
**                       regions (ZG_ACTS_BYTES, ZG_SCRATCH_BYTES); it dies at start-up when its
**                       carving differs.
**   ZK_GEMM_EPI         1 where cuda_model.c runs linear layers through zr_gpu_gemm_lt with fused
**                       epilogues (bias, bias + GELU, GELU backward, bias gradient; cuBLASLt on a GPU):
**                       16-bit activations and d_ff a multiple of 8 (the GELU pre-activation is the
**                       epilogue's aux matrix, whose leading dimension cuBLASLt wants a multiple of 8).
**                       fp32 activations (fp32 plans) keep the unfused path, the host
**                       trainer's arithmetic (the bias added before the matmul's sum, GELU on the
**                       stored value), which the tests hold to 1e-5.
**   ZG_CHECK_RTOL, ZG_CHECK_LOSS_RTOL   --check's tolerances (per tensor: max|dev-host| <= 1e-6 +
**                       RTOL max|host|; the loss sum within LOSS_RTOL relative), derived in
**                       docs/CUDA_TRAINER.md (--check).
**   ZK_TF32             1 where the fp32 GEMMs (zr_gpu_sgemm, and gemm_ex / gemm_lt with fp32
**                       operands) may run on TF32 tensor cores: the spec's train.allow_tf32, in fp32
**                       plans only (16-bit plans' GEMMs are on tensor cores already). The trainer hands
**                       it to libzrt once at start-up (zr_gpu_set_tf32); the runtime never decides it.
*/
#include <string.h>
#include "zg_cuda_dec.h"
#include "../templates/cuda/kernels/zk_attn_tiles.h"  /* the CUDA-core attention's shared memory */
#include "../templates/cuda/kernels/zk_colsum.h"      /* the partials cz_acts_init carves */
#include "../templates/cuda/kernels/zk_tokbucket.h"   /* the wte gradient's token grouping */

int zg_cuda_act_io(const ZgPlan *p)
{
    return p->zero->dtype == ZG_DTYPE_BF16 ? 1 : p->zero->dtype == ZG_DTYPE_FP16 ? 2 : 0;
}

int zg_cuda_gemm_epi(const ZgPlan *p)
{
    return zg_cuda_act_io(p) != 0 && p->model->d_ff % 8 == 0;
}

/* attention_tc.cu's tile arithmetic (ZK_ATC_*): head size padded to 16, 64-row tiles, 16-byte row
** padding; bytes of each kernel's shared memory. */
static void atc_smem(int64_t hs, int64_t *fwd, int64_t *dq, int64_t *dkv, int64_t *to, int64_t *ts)
{
    int64_t hp = (hs + 15) / 16 * 16;
    int64_t t16 = 64 * (hp + 8) * 2, tp = 64 * (64 + 8) * 2;
    *ts = 64 * (64 + 4) * 4;
    *to = 64 * (hp + 4) * 4;
    *fwd = 3 * t16 + *ts + tp + *to;
    *dq = 4 * t16 + 2 * *ts + tp;
    *dkv = 4 * t16 + 2 * *ts + 2 * tp + 2 * 64 * 4;
}

int zg_cuda_att_tc(const ZgPlan *p, int64_t smem[3])
{
    const ZgModel *m = p->model;
    int64_t to, ts;
    atc_smem(m->d_model / m->n_heads, &smem[0], &smem[1], &smem[2], &to, &ts);
    return zg_cuda_act_io(p) != 0 && 2 * ts >= to && smem[2] <= 227 * 1024;
}

int zg_cuda_tf32(const ZgPlan *p)
{
    return p->model->allow_tf32 && p->zero->dtype == ZG_DTYPE_FP32;
}

/* fp32 activations: today's bounds (rounding-level differences of fp32 sums in another order).
** 16-bit activations (unit roundoff u = 2^-8 bf16, 2^-11 fp16, each rounding at most u/2
** relative): 12 u per tensor, u for the loss; the derivation is in the docs.
** TF32 GEMMs: each input is rounded to nearest (even) with 10 explicit mantissa bits, so it is off by
** at most u_t = 2^-11 relative; a product of two rounded inputs by at most 2 u_t + u_t^2, about
** 2^-10, and the fp32 sum adds only K 2^-24. A GEMM's output is therefore within 2^-10 sum|a b| of
** the exact fp32 one, about 2^-10 of the tensor's largest element. A gradient's path crosses about a
** dozen GEMMs (per block qkv, attention projection, fc, fc projection forward; their dx and dW
** backward; the head's logits, dx and dW); in the worst case their errors add: 12 x 2^-10 per tensor.
** The loss is log-softmax of logits that one GEMM (the head) rounds: within 2^-10 relative, as the
** 16-bit bound takes one rounding. Both stay above the fp32 bounds they replace. */

/* The unit roundoff of the device activations: 2^-8 bf16, 2^-11 fp16; 0 for fp32 ones. */
static double act_u(const ZgPlan *p)
{
    int io = zg_cuda_act_io(p);
    return io == 1 ? 1.0 / 256.0 : io == 2 ? 1.0 / 2048.0 : 0.0;
}

double zg_cuda_check_rtol(const ZgPlan *p)
{
    return act_u(p) ? 12.0 * act_u(p) : zg_cuda_tf32(p) ? 12.0 / 1024.0 : 1e-3;
}

double zg_cuda_check_loss_rtol(const ZgPlan *p)
{
    return act_u(p) ? act_u(p) : zg_cuda_tf32(p) ? 1.0 / 1024.0 : 1e-4;
}

/* The adapter's carving (ZgArch dev_fixed / dev_layer / dev_scratch; cz_acts_init): every array rounded
** up to 256 bytes; a block's area is the sum of its arrays each with 256 bytes of slack, plus 256
** (an upper bound whatever the area's alignment); with checkpointing one such area and the kept
** block outputs. */
static int64_t al256(int64_t n) { return (n + 255) / 256 * 256; }

static int64_t arr_bytes(const ZgPlan *p, const ZgDevArr *a)
{
    const ZgModel *m = p->model;
    int64_t B = p->zero->micro_batch, T = m->seq_len, BT = B * T, hs = m->d_model / m->n_heads;
    int64_t kv = m->n_kv_heads > 0 ? m->n_kv_heads * hs : m->d_model, count = 0;
    switch (a->term) {
    case ZG_DA_BTC: count = BT * m->d_model; break;
    case ZG_DA_BT: count = BT; break;
    case ZG_DA_BTKV: count = BT * kv; break;
    case ZG_DA_BTF: count = BT * m->d_ff; break;
    case ZG_DA_BTV: count = BT * m->vocab_size; break;
    case ZG_DA_LSE: count = B * m->n_heads * T; break;
    case ZG_DA_ROPE: count = T * (hs / 2); break;
    case ZG_DA_COLSUM: count = ZK_COLSUM_FLOATS(BT, m->d_model, m->d_ff); break;
    case ZG_DA_TOKBKT: count = ZK_TOKBUCKET_INTS(BT); break;
    }
    return a->n * count * (a->f32 ? 4 : zg_cuda_act_io(p) ? 2 : 4);
}

int64_t zg_cuda_acts_bytes(const ZgPlan *p, bool ckpt, int64_t *scratch)
{
    const ZgModel *m = p->model;
    const ZgArch *arch = zg_arch_find(m->arch);
    int64_t fixed = 0, layer = 256, btc = arr_bytes(p, &(ZgDevArr){1, ZG_DA_BTC, false});
    *scratch = 0;
    if (!arch || !arch->dev_fixed) return 0;
    for (const ZgDevArr *a = arch->dev_fixed; a->n; a++) fixed += al256(arr_bytes(p, a));
    for (const ZgDevArr *a = arch->dev_layer; a->n; a++) layer += arr_bytes(p, a) + 256;
    for (const ZgDevArr *a = arch->dev_scratch; a->n; a++) *scratch += al256(arr_bytes(p, a));
    /* activation checkpointing: one block area, and every block's output kept apart */
    int64_t areas = ckpt ? 1 : m->n_layers, kept = ckpt ? m->n_layers * al256(btc) : 0;
    return fixed + al256(areas * layer) + kept;
}

const char *zg_cuda_adapter_file(const ZgPlan *p, const char **tpl)
{
    const ZgArch *arch = zg_arch_find(p->model->arch);
    const char *ad = arch ? arch->cuda_adapter : NULL, *base = ad ? strrchr(ad, '/') : NULL;
    if (tpl) *tpl = ad;
    return base ? base + 1 : ad;
}

/* The CUDA-core attention (zk_attn.cuh: attention.cu, attention_gqa.cu) keeps its tiles in static
** shared memory: the head sizes whose three kernels stay within the 48 KiB a block may declare. */
static bool att_simt_fits(int64_t hs)
{
    return ZK_ATT_FWD_SMEM_OF(hs) <= ZK_ATT_SMEM_MAX && ZK_ATT_DQ_SMEM_OF(hs) <= ZK_ATT_SMEM_MAX &&
           ZK_ATT_DKV_SMEM_OF(hs) <= ZK_ATT_SMEM_MAX;
}

const char *zg_cuda_missing(const ZgPlan *p)
{
    const ZgArch *arch = zg_arch_find(p->model->arch);
    if (!arch) return "unknown arch";
    if (arch->cuda_missing) return arch->cuda_missing;
    int64_t smem[3];
    if (!zg_cuda_att_tc(p, smem) && !att_simt_fits(p->model->d_model / p->model->n_heads))
        return "the head size d_model / n_heads is above 168, the largest the attention kernels serve "
               "(on CUDA cores their tiles are static shared memory; on tensor cores up to 128: "
               "docs/CUDA.md): train on the host backend (make, ./train)";
    return NULL;
}
