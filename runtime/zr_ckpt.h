/*
** zr_ckpt.h — checkpoints: per-rank shard files of named blobs plus a manifest with checksums.
**
** Layout:  DIR/step_<N>/rank_<R>.zrs    one shard per rank (R zero-padded to 5 digits)
**          DIR/step_<N>/manifest.json   world, step, per shard: file, bytes, footer CRC32C, blobs
**          DIR/latest                   "step_<N>\n": the newest complete checkpoint
** Protocol (the caller runs it on every rank):
**   1. zr_ckpt_writer_begin(&w, DIR, step, rank, world); zr_ckpt_add(w, "master", p, bytes); ...
**      zr_ckpt_writer_commit(w)   -> DIR/step_<N>.tmp/rank_<R>.zrs (temp file, fsync, rename, fsync dir)
**   2. barrier (MPI, by the caller)
**   3. rank 0: zr_ckpt_finish(DIR, step, world, meta) reads every shard's footer, writes manifest.json
**      atomically, renames step_<N>.tmp -> step_<N>, fsyncs DIR, then replaces DIR/latest atomically.
** A crash anywhere before the last rename leaves DIR/latest and the step it names untouched; a
** step_<N>.tmp without a manifest is never read.
** Shard file: blobs back to back (each 64-byte aligned), then a footer: for each blob its name, offset,
** bytes and CRC32C, then {nblobs, footer bytes, rank, world, step, CRC32C of the footer, magic}. The
** manifest records each shard's size and footer CRC, so a truncated or altered shard is refused at
** open; every blob's CRC is checked at open too (the shard is mmapped; one read of the data).
*/
#ifndef ZR_CKPT_H
#define ZR_CKPT_H
#include <stddef.h>
#include <stdint.h>

#define ZR_CKPT_NAMELEN 48       /* blob name, NUL included */
#define ZR_CKPT_CHUNK 65536      /* bytes per chunk CRC32C (format 2): the unit a range read checks */
#define ZR_CKPT_TNAMELEN 96      /* tensor name in the index, NUL included */
#define ZR_CKPT_INDEX "index"    /* the blob holding a shard's tensor index */

typedef struct ZrCkptWriter ZrCkptWriter;
typedef struct ZrCkptReader ZrCkptReader;

/* Creates DIR and DIR/step_<N>.tmp if needed and opens this rank's temp shard. */
int zr_ckpt_writer_begin(ZrCkptWriter **w, const char *dir, int64_t step, int rank, int world);
/* Appends one blob (name unique within the shard, < ZR_CKPT_NAMELEN chars). */
int zr_ckpt_add(ZrCkptWriter *w, const char *name, const void *data, size_t bytes);
/* Streaming form for large blobs (e.g. optimizer state read back from NVMe in chunks). */
int zr_ckpt_blob_begin(ZrCkptWriter *w, const char *name);
int zr_ckpt_blob_write(ZrCkptWriter *w, const void *data, size_t bytes);
int zr_ckpt_blob_end(ZrCkptWriter *w);
/* Writes the footer, fsyncs, renames into place and frees w. On error w is freed and the temp removed. */
int zr_ckpt_writer_commit(ZrCkptWriter *w);
/* Frees w and removes its temp file (e.g. after an error elsewhere). */
void zr_ckpt_writer_abort(ZrCkptWriter *w);

/* Rank 0, after the barrier: manifest, rename of the step directory, `latest`. meta: NULL or a JSON
** object text stored under "meta" in the manifest (e.g. the plan's name and hash). */
int zr_ckpt_finish(const char *dir, int64_t step, int world, const char *meta);

/* Step named by DIR/latest, or -ENOENT. */
int zr_ckpt_latest(const char *dir, int64_t *step);

/* Opens rank's shard of DIR/step_<step> (step < 0: the one DIR/latest names), checking the manifest
** (world must equal `world`), the shard's size, footer and every blob's CRC. Errors name the file. */
int zr_ckpt_open(ZrCkptReader **r, const char *dir, int64_t step, int rank, int world);
int64_t zr_ckpt_step(const ZrCkptReader *r);
/* Size of blob `name`, or -ENOENT. */
int zr_ckpt_blob_size(const ZrCkptReader *r, const char *name, size_t *bytes);
/* Copies blob `name` into dst; -ENOENT if absent, -EMSGSIZE if its size is not `bytes`. */
int zr_ckpt_get(const ZrCkptReader *r, const char *name, void *dst, size_t bytes);
/* Copies bytes [offset, offset+bytes) of blob `name` (chunked restore); -ERANGE past its end. */
int zr_ckpt_get_range(const ZrCkptReader *r, const char *name, size_t offset, void *dst, size_t bytes);
/* The manifest's "meta" text, byte for byte what was passed to zr_ckpt_finish ("{}" when NULL was),
** so a trainer can compare it with its own; valid until close. */
const char *zr_ckpt_meta(const ZrCkptReader *r);
void zr_ckpt_close(ZrCkptReader *r);

/* {===== tensor index and reading under another plan (zr_ckpt_set.c)
** A shard's blob "index" says what its element-typed state blobs (e.g. "master", "adam_m", "adam_v",
** fp32) hold: the model's tensor table (name, shape) and ranges {tensor, first, n, at}: elements
** [first, first+n) of tensor `tensor` sit at element `at` of each such blob. With every shard's index a
** reader under any partition finds the bytes it needs and preads only those (plus the 64 KiB chunks
** around them whose CRC32C it checks). */
typedef struct ZrCkptTensor {
    char name[ZR_CKPT_TNAMELEN];
    int ndim;                    /* 1..4 */
    int64_t shape[4];
    int64_t numel;
} ZrCkptTensor;

typedef struct ZrCkptRange {
    int32_t tensor;              /* index into the tensor table */
    int64_t first, n;            /* tensor elements [first, first+n) */
    int64_t at;                  /* element offset in the state blobs */
} ZrCkptRange;

/* Adds blob "index" to the shard being written (elem_bytes: size of one element of the state blobs). */
int zr_ckpt_add_index(ZrCkptWriter *w, const ZrCkptTensor *t, int nt, const ZrCkptRange *r, int nr,
                      int elem_bytes);

typedef struct ZrCkptSet ZrCkptSet;
/* Opens a whole checkpoint for reading under any plan: the manifest, and every shard's footer (size
** and footer CRC checked against the manifest) and index (its CRC checked). No state data is read.
** step < 0: the one DIR/latest names; DIR may also be a step directory. Errors name the file. */
int zr_ckpt_set_open(ZrCkptSet **s, const char *dir, int64_t step);
void zr_ckpt_set_close(ZrCkptSet *s);
int64_t zr_ckpt_set_step(const ZrCkptSet *s);
int zr_ckpt_set_world(const ZrCkptSet *s);           /* ranks that wrote it */
int zr_ckpt_set_version(const ZrCkptSet *s);         /* shard format version */
const char *zr_ckpt_set_meta(const ZrCkptSet *s);    /* manifest "meta", "{}" when none */
const char *zr_ckpt_set_dir(const ZrCkptSet *s);     /* the step directory */
/* The tensor table (every shard's agrees; checked at open), or NULL with *n = 0 for a checkpoint
** without an index (format 1). */
const ZrCkptTensor *zr_ckpt_set_tensors(const ZrCkptSet *s, int *n);
int zr_ckpt_set_find(const ZrCkptSet *s, const char *name);   /* tensor index or -1 */
/* Size of blob `name` in shard `shard` (-ENOENT if absent). */
int zr_ckpt_set_blob_size(const ZrCkptSet *s, int shard, const char *name, uint64_t *bytes);
/* Where blob `name` lies in shard `shard`'s file (byte offset and size; -ENOENT if absent). */
int zr_ckpt_set_blob_at(const ZrCkptSet *s, int shard, const char *name, uint64_t *offset, uint64_t *bytes);
/* Whole blob `name` of shard `shard` (a small one: state, scaler), its CRC checked; -EMSGSIZE when
** it does not hold `bytes`. */
int zr_ckpt_set_get(ZrCkptSet *s, int shard, const char *name, void *dst, size_t bytes);
/* Elements [first, first+n) of tensor `tensor` from state blob `blob` (elements of the index's size),
** wherever they lie: each piece is taken from the first shard holding it counting from `prefer`
** (shards holding copies, e.g. stage 0, then spread the reads). Every chunk read is CRC-checked. */
int zr_ckpt_set_read(ZrCkptSet *s, const char *blob, int tensor, int64_t first, int64_t n, void *dst,
                     int prefer);
/* Bytes preadt from shard files so far (data and chunk checksums, not footers and indexes). */
uint64_t zr_ckpt_set_bytes_read(const ZrCkptSet *s);
/* Reads every blob of shard `shard` end to end and checks each CRC32C (and each chunk CRC); for
** --info. *bytes: the shard file's size. */
int zr_ckpt_set_verify(ZrCkptSet *s, int shard, uint64_t *bytes);
/* }===== */
#endif
