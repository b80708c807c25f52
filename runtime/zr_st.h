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
#endif
