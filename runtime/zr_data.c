/*
** zr_data.c — token files, mmapped read-only so every rank shares one page-cache copy, and the
** fixed batch order (zr_data.h). Validation happens once at open with messages that say what the
** file holds and what was expected.
*/
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_data.h"
#include "zr_data_docs.h"
#include "zr_err.h"

/* JSONL or other text given where tokens belong: the bytes of the first 4 KiB are all text
** (printable ASCII, whitespace, UTF-8 continuation) with a line break among them. Token ids rarely
** look so: both bytes of every uint16 would have to be text bytes. */
static int looks_like_text(const unsigned char *p, size_t n)
{
    int lines = 0;
    if (n > 4096) n = 4096;
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i];
        if (c == '\n') lines++;
        else if (!(c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f) || c >= 0x80)) return 0;
    }
    return lines > 0;
}

int zr_data_open(ZrData *d, const char *path, int seq_len)
{
    struct stat st;
    int fd, rc = 0;
    int32_t head[3] = { 0, 0, 0 };
    memset(d, 0, sizeof *d);
    d->ids.bos = d->ids.eos = d->ids.pad = -1;
    snprintf(d->path, sizeof d->path, "%s", path);
    if (seq_len < 1) return zr_train_fail(-EINVAL, "data %s: seq_len %d", path, seq_len);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        int e = errno;
        return zr_train_fail(-e, "data %s: cannot open: %s", path, strerror(e));
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        close(fd);
        return zr_train_fail(rc, "data %s: stat failed: %s", path, strerror(-rc));
    }
    if (st.st_size < 4) {
        close(fd);
        return zr_train_fail(-EINVAL, "data %s: %lld bytes, too small for any token file", path,
                             (long long)st.st_size);
    }
    d->map_bytes = (size_t)st.st_size;
    d->map = mmap(NULL, d->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (d->map == MAP_FAILED) {
        int e = errno;
        d->map = NULL;
        return zr_train_fail(-e, "data %s: mmap failed: %s", path, strerror(e));
    }
    memcpy(head, d->map, d->map_bytes >= 12 ? 12 : 4);
    if (head[0] == ZR_DATA_MAGIC_DOCS) {
        if ((rc = zr_docs_open(d)) != 0) goto err;
        return 0;               /* rows are padded: any document count makes whole rows */
    }
    if (head[0] == ZR_DATA_MAGIC) {
        const int64_t hdr = ZR_DATA_HEADER_INTS * 4;
        int64_t avail;
        d->format = ZR_DATA_LLMC;
        if ((int64_t)d->map_bytes < hdr) {
            rc = zr_train_fail(-EINVAL, "data %s: llm.c magic but only %zu bytes, the header alone is "
                               "%lld (truncated? HINT: copy or regenerate it whole)", path,
                               d->map_bytes, (long long)hdr);
            goto err;
        }
        if (head[1] != ZR_DATA_VERSION) {
            rc = zr_train_fail(-EINVAL, "data %s: llm.c token file version %d, expected %d "
                               "(HINT: regenerate it with llm.c's current data scripts)",
                               path, head[1], ZR_DATA_VERSION);
            goto err;
        }
        avail = ((int64_t)d->map_bytes - hdr) / 2;
        if (head[2] < 0 || head[2] > avail) {
            rc = zr_train_fail(-EINVAL, "data %s: header says %d tokens but the file holds %lld "
                               "(truncated? HINT: copy or regenerate it whole)", path, head[2],
                               (long long)avail);
            goto err;
        }
        d->tokens = (const uint16_t *)((const char *)d->map + hdr);
        d->ntokens = head[2];
    } else if (head[0] == ZR_DATA_MAGIC32) {
        /* the 32-bit variant: same header, uint32 tokens (vocabularies beyond 65536) */
        const int64_t hdr = ZR_DATA_HEADER_INTS * 4;
        int64_t avail;
        d->format = ZR_DATA_LLMC32;
        if ((int64_t)d->map_bytes < hdr) {
            rc = zr_train_fail(-EINVAL, "data %s: 32-bit token file magic but only %zu bytes, the header "
                               "alone is %lld (truncated? HINT: copy or regenerate it whole)", path,
                               d->map_bytes, (long long)hdr);
            goto err;
        }
        if (head[1] != ZR_DATA_VERSION32) {
            rc = zr_train_fail(-EINVAL, "data %s: 32-bit token file version %d, expected %d (llm.c's "
                               "llama-3 files; HINT: regenerate it)", path, head[1], ZR_DATA_VERSION32);
            goto err;
        }
        avail = ((int64_t)d->map_bytes - hdr) / 4;
        if (head[2] < 0 || head[2] > avail) {
            rc = zr_train_fail(-EINVAL, "data %s: header says %d tokens but the file holds %lld "
                               "(truncated? HINT: copy or regenerate it whole)", path, head[2],
                               (long long)avail);
            goto err;
        }
        d->tokens32 = (const uint32_t *)((const char *)d->map + hdr);
        d->ntokens = head[2];
    } else if (d->map_bytes >= ZR_DATA_HEADER_INTS * 4 && head[1] == ZR_DATA_VERSION && head[2] > 0 &&
               (int64_t)d->map_bytes == ZR_DATA_HEADER_INTS * 4 + 2 * (int64_t)head[2]) {
        /* version and token count agree with the size: an llm.c file whose magic was damaged, not
        ** raw tokens (which would otherwise be read header and all, failing later and vaguely) */
        rc = zr_train_fail(-EINVAL, "data %s: bad magic %d (expected llm.c's %d) in a file whose "
                           "header otherwise reads as llm.c version %d with %d tokens (HINT: the "
                           "header is damaged: regenerate the file)", path, head[0], ZR_DATA_MAGIC,
                           head[1], head[2]);
        goto err;
    } else if (looks_like_text(d->map, d->map_bytes)) {
        rc = zr_train_fail(-EINVAL, "data %s: this is text, not tokens (HINT: make the trainer's file "
                           "with the model's tokenizer: bin/zgen data %s -o data.zgd --tokenizer "
                           "MODEL_DIR; docs/DATA.md)", path, path);
        goto err;
    } else {
        d->format = ZR_DATA_RAW;
        if (d->map_bytes % 2) {
            rc = zr_train_fail(-EINVAL, "data %s: raw uint16 file of odd size %zu bytes (first int32 "
                               "%d is not the llm.c magic %d either)", path, d->map_bytes, head[0],
                               ZR_DATA_MAGIC);
            goto err;
        }
        d->tokens = (const uint16_t *)d->map;
        d->ntokens = (int64_t)(d->map_bytes / 2);
    }
    if (d->ntokens < (int64_t)seq_len + 2) {
        rc = zr_train_fail(-EINVAL, "data %s: %lld tokens, too few for one sequence of seq_len %d "
                           "(need at least %lld)", path, (long long)d->ntokens, seq_len, (long long)seq_len + 2);
        goto err;
    }
    return 0;
err:
    zr_data_close(d);
    return rc;
}

void zr_data_close(ZrData *d)
{
    if (d->map) munmap(d->map, d->map_bytes);
    zr_docs_free(d->docs);
    d->docs = NULL;
    d->map = NULL;
    d->tokens = NULL;
    d->tokens32 = NULL;
    d->ntokens = 0;
}

int zr_data_check_vocab(const ZrData *d, int vocab_size)
{
    int64_t i;
    if (d->file_vocab > vocab_size)
        return zr_train_fail(-EINVAL, "data %s: made with a tokenizer of %d tokens, but the model's "
                             "vocabulary is %d (HINT: run bin/zgen data with this model's own tokenizer "
                             "folder)", d->path, d->file_vocab, vocab_size);
    for (i = 0; i < d->ntokens; i++)
        if (zr_data_token(d, i) >= (uint32_t)vocab_size)
            return zr_train_fail(-EINVAL, "data %s: token %lld is %u, not below vocab_size %d (HINT: "
                                 "tokenize with the model's tokenizer, or raise vocab_size in the "
                                 "spec)", d->path, (long long)i, zr_data_token(d, i), vocab_size);
    return 0;
}

int64_t zr_data_seq_start(const ZrData *d, int64_t step, int64_t tbs, int64_t j, int seq_len)
{
    uint64_t span = (uint64_t)(d->ntokens - seq_len - 1);
    /* unsigned 128-bit product: step * tbs * seq_len can pass 2^63 in long runs on big corpora */
    unsigned __int128 x = ((unsigned __int128)(uint64_t)step * (uint64_t)tbs + (uint64_t)j) *
                          (uint64_t)seq_len;
    return (int64_t)(uint64_t)(x % span);
}

void zr_data_fill_row(const ZrData *d, int64_t step, int64_t tbs, int64_t j, int seq_len,
                      int32_t *inputs, int32_t *targets)
{
    int64_t start = zr_data_seq_start(d, step, tbs, j, seq_len);
    int k;
    if (d->tokens32) {
        const uint32_t *t32 = d->tokens32 + start;
        for (k = 0; k < seq_len; k++) {
            inputs[k] = (int32_t)t32[k];
            targets[k] = (int32_t)t32[k + 1];
        }
        return;
    }
    const uint16_t *t = d->tokens + start;
    for (k = 0; k < seq_len; k++) {
        inputs[k] = t[k];
        targets[k] = t[k + 1];
    }
}

int zr_data_fill_micro(const ZrData *d, int64_t step, int seq_len, int mb, int gas, int ws,
                       int rank, int micro, int32_t *inputs, int32_t *targets, int32_t *pos)
{
    int64_t tbs = (int64_t)mb * gas * ws;
    int i;
    if (mb < 1 || gas < 1 || ws < 1 || rank < 0 || rank >= ws || micro < 0 || micro >= gas ||
        step < 0)
        return zr_train_fail(-EINVAL, "data: bad micro-batch (step %lld, mb %d, gas %d, ws %d, rank %d, "
                             "micro %d)", (long long)step, mb, gas, ws, rank, micro);
    for (i = 0; i < mb; i++) {
        int64_t j = ((int64_t)micro * ws + rank) * mb + i, o = (int64_t)i * seq_len;
        if (d->docs) {
            int rc = zr_docs_fill_row(d, step * tbs + j, seq_len, inputs + o, targets + o,
                                      pos ? pos + o : NULL);
            if (rc) return rc;
            continue;
        }
        zr_data_fill_row(d, step, tbs, j, seq_len, inputs + o, targets + o);
        if (pos)
            for (int t = 0; t < seq_len; t++) pos[o + t] = t;
    }
    return 0;
}

int64_t zr_data_step_targets(const ZrData *d, int64_t step, int seq_len, int64_t tbs)
{
    if (!d->docs) return tbs * seq_len;
    int32_t *in = malloc((size_t)seq_len * 2 * sizeof *in), *tg = in + seq_len;
    int64_t n = 0;
    if (!in) return zr_train_fail(-ENOMEM, "data %s: out of memory", d->path);
    for (int64_t j = 0; j < tbs; j++) {
        int rc = zr_docs_fill_row(d, step * tbs + j, seq_len, in, tg, NULL);
        if (rc) {
            free(in);
            return rc;
        }
        for (int t = 0; t < seq_len; t++) n += tg[t] >= 0;
    }
    free(in);
    return n;
}

void zr_data_set_order(ZrData *d, uint64_t seed, int shuffle)
{
    if (d->docs) zr_docs_set_order(d->docs, seed, shuffle);
}

int64_t zr_data_eval_rows(const ZrData *d, int seq_len)
{
    if (d->docs) return zr_docs_eval_rows(d, seq_len);
    return (d->ntokens - 1) / seq_len;
}

void zr_data_fill_eval_row(const ZrData *d, int64_t row, int seq_len, int32_t *inputs,
                           int32_t *targets, int32_t *pos)
{
    if (d->docs) {
        (void)zr_docs_fill_eval_row(d, row, seq_len, inputs, targets, pos);
        return;
    }
    if (row >= zr_data_eval_rows(d, seq_len)) {
        zr_docs_fill_empty(d, 0, seq_len, inputs, targets, pos);
        return;
    }
    for (int t = 0; t < seq_len; t++) {
        int64_t i = row * seq_len + t;
        inputs[t] = (int32_t)zr_data_token(d, i);
        targets[t] = (int32_t)zr_data_token(d, i + 1);
        if (pos) pos[t] = t;
    }
}

int zr_data_write(const char *path, const uint16_t *tokens, int64_t n, int llmc)
{
    ZrAfile a;
    int rc;
    if (llmc && (n < 0 || n > INT32_MAX))
        return zr_train_fail(-EINVAL, "data %s: %lld tokens do not fit an llm.c header", path,
                             (long long)n);
    if ((rc = zr_afile_open(&a, path)) != 0) return rc;
    if (llmc) {
        int32_t head[ZR_DATA_HEADER_INTS];
        memset(head, 0, sizeof head);
        head[0] = ZR_DATA_MAGIC;
        head[1] = ZR_DATA_VERSION;
        head[2] = (int32_t)n;
        rc = zr_afile_write(&a, head, sizeof head);
    }
    if (!rc) rc = zr_afile_write(&a, tokens, (size_t)n * 2);
    if (rc) {
        zr_afile_abort(&a);
        return rc;
    }
    return zr_afile_commit(&a);
}

int zr_data_write32(const char *path, const uint32_t *tokens, int64_t n)
{
    ZrAfile a;
    int32_t head[ZR_DATA_HEADER_INTS];
    int rc;
    if (n < 0 || n > INT32_MAX)
        return zr_train_fail(-EINVAL, "data %s: %lld tokens do not fit a token file header", path,
                             (long long)n);
    if ((rc = zr_afile_open(&a, path)) != 0) return rc;
    memset(head, 0, sizeof head);
    head[0] = ZR_DATA_MAGIC32;
    head[1] = ZR_DATA_VERSION32;
    head[2] = (int32_t)n;
    rc = zr_afile_write(&a, head, sizeof head);
    if (!rc) rc = zr_afile_write(&a, tokens, (size_t)n * 4);
    if (rc) {
        zr_afile_abort(&a);
        return rc;
    }
    return zr_afile_commit(&a);
}
