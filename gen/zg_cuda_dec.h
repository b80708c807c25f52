/*
** zg_cuda_dec.h — train-cuda's precision and attention decisions (cuda_dec.c), emitted into
** cuda/kernels/zk_shapes.h.
*/
#ifndef ZG_CUDA_DEC_H
#define ZG_CUDA_DEC_H
#include "zg.h"
#include "zg_plan.h"

/* ZK_IO of the device activations: 0 fp32, 1 bf16, 2 fp16. */
int zg_cuda_act_io(const ZgPlan *p);
/* 1 when attention_tc.cu serves the plan; smem: its forward, dq and dkv dynamic shared memory. */
int zg_cuda_att_tc(const ZgPlan *p, int64_t smem[3]);
/* 1 when linear layers use zr_gpu_gemm_lt's fused epilogues (ZK_GEMM_EPI). */
int zg_cuda_gemm_epi(const ZgPlan *p);
/* Bytes of train-cuda's device activations in "acts", checkpointed (one block area and the kept
** block outputs) or not; *scratch: in "scratch". */
int64_t zg_cuda_acts_bytes(const ZgPlan *p, bool ckpt, int64_t *scratch);
/* NULL when train-cuda runs the plan; else why not (the arch's cuda_missing, or what the arch's
** device kernels need that the plan lacks). render.c then emits no cuda/, and the Makefile's cuda
** targets refuse with it. */
const char *zg_cuda_missing(const ZgPlan *p);
/* The arch's model adapter (ZgArch.cuda_adapter): *tpl its path under templates/cuda_trainer/, the
** result its file name in the emitted cuda/trainer/ (NULL, and *tpl NULL, for an arch without one). */
const char *zg_cuda_adapter_file(const ZgPlan *p, const char **tpl);
/* 1 when fp32 GEMMs may run on TF32 tensor cores (ZK_TF32): train.allow_tf32 in an fp32 plan. */
int zg_cuda_tf32(const ZgPlan *p);
/* --check's per-tensor relative tolerance and the loss sum's. */
double zg_cuda_check_rtol(const ZgPlan *p);
double zg_cuda_check_loss_rtol(const ZgPlan *p);
#endif
