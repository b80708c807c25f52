/*
** zr_ckpt_int.h — shared by zr_ckpt.c (writer, manifest), zr_ckpt_read.c (reader) and zr_ckpt_set.c
** (a whole checkpoint under any plan), not public:
** the shard format's constants, little-endian field access, paths, and the footer parser.
*/
#ifndef ZR_CKPT_INT_H
#define ZR_CKPT_INT_H
#include <stdint.h>
#include <stdio.h>
#include "zr_ckpt.h"

#define SHARD_MAGIC "ZRCKPT01"
#define SHARD_VERSION 2u          /* 2: per-chunk CRC32C of every blob; 1 (still read): none */
#define BLOB_ALIGN 64
#define ENTRY_BYTES (ZR_CKPT_NAMELEN + 8 + 8 + 4 + 4) /* name, offset, bytes, crc, pad */
#define TRAILER_BYTES 48
#define PATHLEN 1100

/* zr_ckpt_read.c: a manifest read whole and NUL-terminated (the reader and zr_ckpt_set.c). */
char *zr_ckpt_slurp(const char *path, size_t *len);

typedef struct Blob {
    char name[ZR_CKPT_NAMELEN];
    uint64_t offset, bytes;
    uint32_t crc;
    /* version 2: one CRC32C per ZR_CKPT_CHUNK bytes of the blob (the last chunk may be short),
    ** stored as u32 at file offset chunks_at, themselves checked by chunks_crc; version 1: none */
    uint64_t chunks_at;
    uint32_t chunks_crc;
    uint32_t chunk_bytes;       /* 0 in version 1 */
} Blob;

static inline uint64_t blob_nchunks(const Blob *b)
{
    return b->chunk_bytes ? (b->bytes + b->chunk_bytes - 1) / b->chunk_bytes : 0;
}

static inline void put32(uint8_t *p, uint32_t v) { for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> 8 * k); }
static inline void put64(uint8_t *p, uint64_t v) { for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> 8 * k); }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* Paths are bounded (dir <= 900 chars, checked at begin); a longer one is cut and then fails to open. */
static inline void step_dir(char *out, const char *dir, int64_t step, int tmp)
{
    int n = snprintf(out, PATHLEN, "%s/step_%lld%s", dir, (long long)step, tmp ? ".tmp" : "");
    if (n >= PATHLEN) out[PATHLEN - 1] = 0;
}
static inline void shard_path(char *out, const char *sdir, int rank)
{
    int n = snprintf(out, PATHLEN, "%s/rank_%05d.zrs", sdir, rank);
    if (n >= PATHLEN) out[PATHLEN - 1] = 0;
}

/* Validates the footer of a shard of `size` bytes whose last tail_len bytes are at tail and fills
** *blobs (malloc'd). Errors name path and say what is wrong. */
int zr_ckpt_parse_footer(const char *path, const uint8_t *tail, uint64_t tail_len, uint64_t size,
                         int rank, int world, int64_t step, Blob **blobs, int *nb, uint32_t *footer_crc);
#endif
