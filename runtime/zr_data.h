/*
** zr_data.h — data for the trainer: zgen's document files (docs/DATA.md: tokens, a loss mask and
** document boundaries, laid out in rows per epoch by zr_data_docs.c), llm.c token files and raw
** uint16 files (nanoGPT), mmapped, and the fixed batch order of docs/SPEC.md (the global batch depends
** only on the step and train_batch_size, never on the world size).
**
** Formats, told apart by the first int32:
**   llm.c : 256 x int32 header { magic 20240520, version 1, token count, 0... } then uint16 tokens.
**   llm.c 32-bit (LLaMA 3 and any vocabulary beyond 65536): the same header with magic 20240801 and
**           version 7 (llm.c's llama-3 files), then uint32 tokens.
**   raw   : the whole file is uint16 tokens (little endian); anything whose first int32 is not the
**           magic. A raw file of an odd number of bytes is refused, and so is one that reads as
**           text (JSONL given to --data), with the zgen data command that makes a document file.
**   docs  : magic 20261201 (docs/DATA.md); the rows are cut from its documents per epoch.
** Batch order: at step s, sequence j of the global batch (j = 0 .. tbs-1) is the seq_len+1 tokens
** starting at ((s*tbs + j) * seq_len) mod (ntokens - seq_len - 1). Inputs are its first seq_len
** tokens, targets its last seq_len.
** Rank split: in micro-step k (0 .. gas-1) rank r (0 .. ws-1) with micro batch mb takes rows
** i = 0 .. mb-1 of the global batch j = (k*ws + r)*mb + i, so tbs = mb*gas*ws and the union over
** ranks and micro-steps is exactly j = 0 .. tbs-1 whatever ws is.
*/
#ifndef ZR_DATA_H
#define ZR_DATA_H
#include <stddef.h>
#include <stdint.h>

#define ZR_DATA_MAGIC 20240520
#define ZR_DATA_VERSION 1
#define ZR_DATA_HEADER_INTS 256
#define ZR_DATA_MAGIC32 20240801
#define ZR_DATA_VERSION32 7

#define ZR_DATA_MAGIC_DOCS 20261201
#define ZR_DATA_VERSION_DOCS 1

typedef enum { ZR_DATA_LLMC, ZR_DATA_RAW, ZR_DATA_LLMC32, ZR_DATA_DOCS } ZrDataFormat;

/* Special token ids of the tokenizer the data were made with; -1 where unknown or absent. */
typedef struct ZrTokIds { int bos, eos, pad; } ZrTokIds;

typedef struct ZrDocs ZrDocs;   /* a document file's index and its current epoch's rows */

typedef struct ZrData {
    const uint16_t *tokens;     /* [ntokens], points into the mapping; NULL for ZR_DATA_LLMC32 */
    int64_t ntokens;
    int format;                 /* ZrDataFormat */
    void *map;                  /* whole-file mapping, NULL when closed */
    size_t map_bytes;
    char path[512];             /* for messages */
    const uint32_t *tokens32;   /* ZR_DATA_LLMC32 (and 4-byte document files): [ntokens]; else NULL */
    ZrDocs *docs;               /* ZR_DATA_DOCS: documents, mask, rows of the current epoch */
    ZrTokIds ids;               /* ZR_DATA_DOCS: the tokenizer's ids; else all -1 */
    int file_vocab;             /* ZR_DATA_DOCS: the tokenizer's vocabulary size; else 0 */
} ZrData;

/* Maps `path` and validates it for sequences of seq_len tokens: magic/version, token count not larger
** than the file, at least seq_len + 2 tokens. Returns 0 or -errno (message in zr_train_error()). */
int zr_data_open(ZrData *d, const char *path, int seq_len);
void zr_data_close(ZrData *d);

/* Scans every token once; -EINVAL naming the first token >= vocab_size (offset and value). */
int zr_data_check_vocab(const ZrData *d, int vocab_size);

/* Token offset of sequence j of the global batch at step s (the formula above). */
int64_t zr_data_seq_start(const ZrData *d, int64_t step, int64_t tbs, int64_t j, int seq_len);

/* Global-batch row j of step s: inputs[seq_len], targets[seq_len]. */
void zr_data_fill_row(const ZrData *d, int64_t step, int64_t tbs, int64_t j, int seq_len,
                      int32_t *inputs, int32_t *targets);

/* Micro-batch of rank `rank` in micro-step `micro`: inputs/targets are [mb][seq_len], row i is global
** row j = (micro*ws + rank)*mb + i of a global batch of tbs = mb*gas*ws. pos (may be NULL) gets each
** input's position in its document (t in every row of a token file). -EINVAL on bad indices. */
int zr_data_fill_micro(const ZrData *d, int64_t step, int seq_len, int mb, int gas, int ws,
                       int rank, int micro, int32_t *inputs, int32_t *targets, int32_t *pos);
/* Targets (>= 0) of the whole global batch of step s: the loss's divisor (tbs * seq_len for a token
** file). */
int64_t zr_data_step_targets(const ZrData *d, int64_t step, int seq_len, int64_t tbs);

/* Document files: the epochs' document order (docs/DATA.md, Shuffle); unshuffled until called.
** Token files ignore it. */
void zr_data_set_order(ZrData *d, uint64_t seed, int shuffle);
/* Evaluation: every row of the file once, in order: a document file's unshuffled epoch 0, or a token
** file's consecutive rows (row r starts at token r*seq_len). Row r >= zr_data_eval_rows is empty
** (padding, no target). */
int64_t zr_data_eval_rows(const ZrData *d, int seq_len);
void zr_data_fill_eval_row(const ZrData *d, int64_t row, int seq_len, int32_t *inputs,
                           int32_t *targets, int32_t *pos);

/* Writes a token file (llm.c format when llmc != 0, raw otherwise) atomically; for tests and demos. */
int zr_data_write(const char *path, const uint16_t *tokens, int64_t n, int llmc);
/* Writes a 32-bit token file (magic 20240801, version 7, uint32 tokens) atomically. */
int zr_data_write32(const char *path, const uint32_t *tokens, int64_t n);
/* Token i of an open file, whatever its width. */
static inline uint32_t zr_data_token(const ZrData *d, int64_t i)
{
    return d->tokens32 ? d->tokens32[i] : d->tokens[i];
}
#endif
