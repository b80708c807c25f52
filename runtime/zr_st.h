/*
** zr_st.h — safetensors in and out, the Hugging Face GPT-2 config.json of an export, and (zr_st_hf.c)
** Hugging Face model folders: config.json checked or written from the emitted rows, shards + index.
**
** File: u64 little-endian header length N, N bytes of JSON header, then the data. Header entries are
** "name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} relative to the data start.
** We write fp32 (or bf16: zr_st_stream, zr_st_write_dtype), entries in the order given (not sorted
** by name), data packed in that order, no __metadata__ unless given, and the header padded with
** spaces to a multiple of 8 bytes so the data starts 8-byte aligned. Same inputs give
** byte-identical files. Written through temp + fsync + rename.
** We read F32, BF16 and F16 (upconverted to fp32) with full validation: header length within the
** file, the JSON (the subset safetensors uses), dtype, shape against the expected table, offsets in
** range and matching dtype x shape, no overlap, missing and (unless allowed) extra tensors named.
*/
#ifndef ZR_ST_H
#define ZR_ST_H
#include <stddef.h>
#include <stdint.h>
#include "zr_afile.h"
#include "zr_plan.h"

#define ZR_ST_MAXDIM 4
#define ZR_ST_NAMELEN 128

/* One tensor to write, or one expected tensor when reading. */
typedef struct ZrStTensor {
    const char *name;           /* e.g. "h.0.attn.c_attn.weight" */
    int ndim;
    int64_t shape[ZR_ST_MAXDIM];
    const float *data;          /* write: fp32 source, numel elements; read: unused */
} ZrStTensor;

/* The safetensors view of an emitted table row (name, ndim, shape) with data (may be NULL). */
void zr_st_from_row(ZrStTensor *t, const ZrTensorRow *row, const float *data);

/* Writes tensors [n] to path (fp32). metadata: NULL or pairs {key, value, key, value, ..., NULL}
** of strings put under "__metadata__". Returns 0 or -errno. */
int zr_st_write(const char *path, const ZrStTensor *t, int n, const char *const *metadata);

/* Streaming write (consolidation: the data never needs to be in memory at once). begin writes the
** header for tensors t[n] (shapes only; data ignored) in dtype ZR_DT_FP32 or ZR_DT_BF16, exactly as
** zr_st_write would for F32; then the tensors' bytes in that dtype, in table order, in any pieces;
** end checks the byte count and makes the file appear atomically. Any error aborts (temp removed). */
typedef struct ZrStStream {
    ZrAfile a;
    uint64_t want, got;         /* data bytes declared / written */
    int open;
    char path[512];
} ZrStStream;
int zr_st_stream_begin(ZrStStream *s, const char *path, const ZrStTensor *t, int n, int dtype,
                       const char *const *metadata);
int zr_st_stream_write(ZrStStream *s, const void *data, size_t bytes);
int zr_st_stream_end(ZrStStream *s);
void zr_st_stream_abort(ZrStStream *s);

/* An opened, validated file. Entries are in file order. */
typedef struct ZrStEntry {
    char name[ZR_ST_NAMELEN];
    int dtype;                  /* ZrDtype of zr_plan.h: ZR_DT_FP32, ZR_DT_BF16, ZR_DT_FP16 */
    int ndim;
    int64_t shape[ZR_ST_MAXDIM];
    int64_t numel;
    uint64_t begin, end;        /* byte offsets relative to the data start */
} ZrStEntry;

typedef struct ZrSt {
    void *map;                  /* whole-file mapping */
    size_t map_bytes;
    const uint8_t *data;        /* data start */
    uint64_t data_bytes;
    ZrStEntry *e;
    int n;
    char path[512];
    int fd;                     /* kept open for zr_st_read_range's pread (no read-ahead) */
    uint64_t data_off;          /* file offset of the data start */
} ZrSt;

int zr_st_open(ZrSt *st, const char *path);
void zr_st_close(ZrSt *st);
/* Index of `name`, also matching a stored "transformer."+name (HF GPT2LMHeadModel files); -1 if none. */
int zr_st_find(const ZrSt *st, const char *name);
/* Elements [first, first+n) of entry idx, converted to fp32. -EINVAL when out of range. Reads exactly
** those bytes with pread on a descriptor advised POSIX_FADV_RANDOM: the kernel adds no read-ahead
** (8 MiB on some disks), so a ZeRO-3 rank reads its own slices and nothing around them. */
int zr_st_read_range(const ZrSt *st, int idx, int64_t first, int64_t n, float *dst);

/* Checks the file against the expected table want[n]: each present with that shape; names every
** missing tensor and every shape mismatch; extra tensors are an error unless allow_extra (HF files
** carry e.g. h.0.attn.bias masks). Returns 0 or -EINVAL with all problems in the message. */
int zr_st_check(const ZrSt *st, const ZrStTensor *want, int n, int allow_extra);

/* Convenience: open + check + read every expected tensor whole into dst[i] (numel fp32 each). */
int zr_st_read_all(const char *path, const ZrStTensor *want, int n, float *const *dst, int allow_extra);

/* config.json of a Hugging Face GPT-2 export (model_type "gpt2", GPT2LMHeadModel). */
typedef struct ZrGpt2Config {
    int vocab_size, n_positions, n_embd, n_layer, n_head, n_inner;
    double layer_norm_epsilon;
    int tie_word_embeddings;
} ZrGpt2Config;
int zr_st_write_gpt2_config(const char *path, const ZrGpt2Config *c);
/* {===== Hugging Face model folders (zr_st_hf.c) */

/* One key of a model's config.json, as the emitted tables carry it (zg_hf_config[], built by
** zgen's gen/hf_config.c): values are JSON text. */
typedef struct ZrHfKey {
    const char *key;            /* "hidden_size"; "a.b" = member b of object a (checked only) */
    const char *alt;            /* another spelling transformers reads ("n_ctx"), or NULL */
    const char *value;          /* this model's value */
    const char *absent;         /* what transformers assumes when missing or null; NULL: the key is
                                ** required; "": not checked when missing */
    int write;                  /* 1: in the config.json an export writes */
    int check;                  /* 1: a loaded config.json must agree */
} ZrHfKey;

/* Tensor bytes above which an export folder is sharded (model-0000K-of-0000N.safetensors plus
** model.safetensors.index.json): transformers' save_pretrained default max_shard_size, "5GB". */
#define ZR_ST_SHARD_BYTES 5000000000ull

/* A model to load: one safetensors file, or a Hugging Face folder (config.json and model.safetensors,
** or the shards that model.safetensors.index.json's weight_map names). Opening reads headers only;
** zr_st_read_range then reads just the ranges asked for. */
typedef struct ZrStModel {
    ZrSt *f;                    /* [nf] shard files, in the index's order of first mention */
    int nf;
    char path[512];             /* as given */
    char config[600];           /* the folder's config.json, "" when there is none (or a file given) */
    char index[600];            /* the index file, "" when not sharded */
} ZrStModel;

/* Opens path (a .safetensors file or a folder) and validates every file and the index: each index
** entry present in the file it names, no shard tensor missing from the index, file names plain.
** Returns 0 or -errno with a message naming the file. */
int zr_st_model_open(ZrStModel *m, const char *path);
void zr_st_model_close(ZrStModel *m);
/* File and entry of tensor `name` (a stored "transformer."+name also matches): 0 or -ENOENT. */
int zr_st_model_find(const ZrStModel *m, const char *name, int *file, int *idx);
/* Checks every tensor of every file against want[n]: missing, wrong shape, unexpected (unless named
** by ignore[ni]: an exact name, or ".suffix" for any name ending so); each problem names its file.
** Returns 0 or -EINVAL with all problems in the message. */
int zr_st_model_check(const ZrStModel *m, const ZrStTensor *want, int n, const char *const *ignore,
                      int ni);

/* Checks config.json at path against the rows with check set: names each disagreeing key with both
** values (and each missing required key). 0 or -EINVAL / -errno. */
int zr_st_hf_config_check(const char *path, const ZrHfKey *k, int n);
/* Writes config.json (rows with write set, in order, then "torch_dtype": torch_dtype) atomically. */
int zr_st_hf_config_write(const char *path, const ZrHfKey *k, int n, const char *torch_dtype);

/* Writes tensors t[n] (fp32 data) into folder dir as dtype ZR_DT_FP32 or ZR_DT_BF16 (round to
** nearest even): model.safetensors when their bytes fit in shard_bytes (0: ZR_ST_SHARD_BYTES), else
** model-0000K-of-0000N.safetensors, each filled in table order up to shard_bytes (a larger tensor
** alone), plus model.safetensors.index.json. The folder must exist. Returns 0 or -errno. */
int zr_st_write_model(const char *dir, const ZrStTensor *t, int n, int dtype, uint64_t shard_bytes,
                      const char *const *metadata);
/* One safetensors file of tensors t[n] (fp32 data) in dtype ZR_DT_FP32 or ZR_DT_BF16. */
int zr_st_write_dtype(const char *path, const ZrStTensor *t, int n, int dtype, const char *const *metadata);

/* }===== */
/* {===== what a folder carries beside the weights (zr_hf_tok.c) */

/* For AutoTokenizer.from_pretrained and generate() to work on an export: the special-token ids
** (config.json and generation_config.json), the generation defaults of the model it came from, and
** the tokenizer's own files. Each source fills only what the ones before it left unset, so the
** callers' order is the precedence: zr_hf_extra_set_tokens (the data's tokenizer), then
** zr_hf_extra_add_tokenizer (--tokenizer DIR), zr_hf_extra_add_folder (--init-from DIR),
** zr_hf_extra_add_meta (a checkpoint's record of all of it). Sources are read and checked when
** added, so a bad one is refused before anything is written. */
enum { ZR_HF_BOS, ZR_HF_EOS, ZR_HF_PAD, ZR_HF_NIDS };
extern const char *const zr_hf_id_keys[ZR_HF_NIDS];   /* "bos_token_id", "eos_token_id", ... */
#define ZR_HF_ID_TEXT 256
#define ZR_HF_TOK_FILES 12

typedef struct ZrHfExtra {
    char id[ZR_HF_NIDS][ZR_HF_ID_TEXT]; /* each id's JSON value (1, or [128001, 128009]); "" omitted */
    int id_from_tokens[ZR_HF_NIDS];     /* set by zr_hf_extra_set_tokens */
    char *gen_base;             /* malloc'd JSON object of the source's generation_config.json, or NULL */
    char tok_dir[4096];         /* the folder the tokenizer files come from ("" none), as given */
    char tok_abs[4096];         /* the same, absolute (what a checkpoint records) */
    int n_tok;
    const char *tok_files[ZR_HF_TOK_FILES];   /* the tokenizer files found there, in copy order */
    char tok_gone[4096];        /* a recorded tokenizer folder that no longer holds one ("" none) */
} ZrHfExtra;

void zr_hf_extra_init(ZrHfExtra *x);
void zr_hf_extra_free(ZrHfExtra *x);
/* tok[ZR_HF_NIDS]: bos, eos, pad ids of the data's tokenizer, -1 where unknown. */
void zr_hf_extra_set_tokens(ZrHfExtra *x, const int *tok);
/* A tokenizer folder that must hold one: -ENOENT / -ENOTDIR when it is missing or not a folder,
** or holds none of tokenizer.json, tokenizer.model, vocab.json, vocab.txt; an unreadable file is
** an error naming it. */
int zr_hf_extra_add_tokenizer(ZrHfExtra *x, const char *dir);
/* A model folder (a file path adds nothing): its config.json ids, its generation_config.json, its
** tokenizer files if it has some. Where the data's eos is one id and the folder's eos is a list
** holding it (LLaMA 3 Instruct's [128001, 128008, 128009]), the list is kept: generate() then stops
** at every end token the model knows. */
int zr_hf_extra_add_folder(ZrHfExtra *x, const char *dir);
/* A checkpoint meta's "hf_extra" object (zr_hf_extra_meta's text; a meta without one adds
** nothing). The tokenizer folder it names is used if it still holds a tokenizer. */
int zr_hf_extra_add_meta(ZrHfExtra *x, const char *meta);
/* The "hf_extra" object a checkpoint meta records: malloc'd JSON text, NULL when out of memory. */
char *zr_hf_extra_meta(const ZrHfExtra *x);
/* config.json as zr_st_hf_config_write writes it, the ids that are set appended (replacing rows of
** the same key). */
int zr_hf_extra_config_write(const char *path, const ZrHfKey *k, int n, const char *torch_dtype,
                             const ZrHfExtra *x);
/* Into folder dir: generation_config.json (the ids that are set, then every other member of
** gen_base but "_from_model_config"; not written when that is empty), and the tokenizer files,
** each copied atomically; known tokenizer files in dir that the source lacks are removed (a stale
** tokenizer.model beside a new tokenizer.json would load as another tokenizer). */
int zr_hf_extra_write(const ZrHfExtra *x, const char *dir);
/* The stderr line an export without tokenizer files prints once: what is missing and how to add it. */
void zr_hf_extra_note(const ZrHfExtra *x, const char *dir, char *out, size_t cap);

/* }===== */
#endif
