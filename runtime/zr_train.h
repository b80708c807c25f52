/*
** zr_train.h — trainer support in libzrt: everything of docs/SPEC.md's trainer contract that is neither
** numerics nor collectives. One header per module; all functions return 0 or a negative errno and
** leave a message in zr_train_error() (zr_err.h); none exits or prints except zr_progress.
*/
#ifndef ZR_TRAIN_H
#define ZR_TRAIN_H
#include "zr_err.h"       /* defines: zr_train_error(), the text of the last failing call */
#include "zr_log.h"       /* defines: JSONL step log, progress line */
#include "zr_afile.h"     /* defines: atomic file writes (temp, fsync, rename, fsync dir) */
#include "zr_json.h"      /* defines: small strict JSON reader (headers, manifests) */
#include "zr_data.h"      /* defines: llm.c / raw uint16 token files, batch order, micro-batches */
#include "zr_st.h"        /* defines: safetensors read/write, GPT-2 config.json */
#include "zr_ckpt.h"      /* defines: sharded checkpoints with manifest and CRC32C, atomic */
#include "zr_crc.h"       /* defines: CRC32C, hardware and table versions */
#include "zr_lr.h"        /* defines: WarmupLR, WarmupDecayLR, WarmupCosineLR */
#include "zr_scaler.h"    /* defines: fp16 dynamic loss scaler, serialisable */
#include "zr_rng.h"       /* defines: Philox4x32-10 counter RNG, shard-independent init */
#include "zr_trace.h"     /* defines: Chrome trace JSON per rank, merge */
#endif
