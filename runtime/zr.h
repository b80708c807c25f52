/*
** zr.h — libzrt, the runtime that generated trainers link. Public API, one header per module.
** Conventions: prefix zr_ per module file; functions return 0 or a negative errno and never exit;
** context for an error (file, offset, size, collective) goes to the ZrErr text of the module or
** to stderr once, at the point where it is known. Generated programs wrap calls in ZR_CHECK.
*/
#ifndef ZR_H
#define ZR_H
#include "zr_half.h"      /* defines: bf16/fp16 <-> fp32 conversions */
#include "zr_mem.h"       /* defines: tier arenas, pinned budget, poisoning */
#include "zr_env.h"       /* defines: rank / world / local rank from MPI, torchrun, OMPI, SLURM */
#include "zr_coll.h"      /* defines: async collectives with timeouts (MPI; NCCL in CUDA builds) */
#include "zr_nvme.h"      /* defines: io_uring O_DIRECT swap files */
#include "zr_adam.h"      /* defines: fused Adam/AdamW, scalar reference + AVX2/AVX-512 */
#include "zr_pipe.h"      /* defines: pipelined NVMe optimizer step */
#include "zr_train.h"     /* defines: data, safetensors, checkpoints, lr schedules, loss scaler, log, trace, rng */
#endif
