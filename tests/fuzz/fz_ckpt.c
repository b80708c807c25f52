/*
** fz_ckpt.c — libFuzzer harness for the checkpoint reader (runtime/zr_ckpt_read.c): the manifest
** (JSON: format, step, world, shards with bytes and footer CRC) and the shard it points at (trailer,
** blob table, offsets, CRCs). Input: the manifest text, the separator line "--shard--", then the
** bytes of rank 0's shard; both go into a step directory that is opened as rank 0 of a world of 1.
** When it opens, every blob the table names is read whole and at an input-chosen range.
*/
#include "fz_util.h"
#include "zr_ckpt.h"
#include "zr_ckpt_int.h"

static const char SEP[] = "\n--shard--\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char d[512];
    (void)argc; (void)argv;
    snprintf(d, sizeof d, "%s/step_7", fz_scratch());
    mkdir(d, 0700);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[512], mp[600], sp[600];
    const uint8_t *cut = memmem(data, size, SEP, sizeof SEP - 1);
    size_t mlen = cut ? (size_t)(cut - data) : size;
    ZrCkptReader *r = NULL;
    snprintf(dir, sizeof dir, "%s/step_7", fz_scratch());
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    snprintf(sp, sizeof sp, "%s/rank_00000.zrs", dir);
    fz_write(mp, data, mlen);
    if (cut) fz_write(sp, cut + sizeof SEP - 1, size - mlen - (sizeof SEP - 1));
    else unlink(sp);
    if (zr_ckpt_open(&r, dir, -1, 0, 1) != 0) return 0;
    (void)zr_ckpt_step(r);
    (void)strlen(zr_ckpt_meta(r));
    {
        /* the blob names are in the footer's table: read each one back through the public API */
        Blob *b = NULL;
        int nb = 0;
        uint32_t crc;
        struct stat st;
        const uint8_t *sh = cut + sizeof SEP - 1;
        size_t shn = size - mlen - (sizeof SEP - 1);
        if (stat(sp, &st) == 0 &&
            zr_ckpt_parse_footer(sp, sh, shn, shn, 0, 1, zr_ckpt_step(r), &b, &nb, &crc) == 0) {
            for (int i = 0; i < nb; i++) {
                size_t n = 0;
                if (zr_ckpt_blob_size(r, b[i].name, &n) != 0 || n > (64u << 20)) continue;
                void *buf = malloc(n ? n : 1);
                if (!buf) continue;
                (void)zr_ckpt_get(r, b[i].name, buf, n);
                if (n >= 2) (void)zr_ckpt_get_range(r, b[i].name, n / 2, buf, n - n / 2);
                (void)zr_ckpt_get_range(r, b[i].name, n, buf, 1);
                free(buf);
            }
            free(b);
        }
    }
    zr_ckpt_close(r);
    return 0;
}
