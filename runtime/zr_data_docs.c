/*
** zr_data_docs.c — zgen's document files (docs/DATA.md): validation of the mapped file, and the
** rows of an epoch cut from its documents (pack or pad, long documents in overlapping pieces, the
** seeded per-epoch order). Rows are a pure function of (file, seq_len, seed, epoch), so every rank
** lays out the same rows without talking to the others, and the batch is the same at any world size.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "zr_data.h"
#include "zr_data_docs.h"
#include "zr_err.h"

typedef struct DocPiece {
    int64_t start;              /* token index in the file */
    int32_t len;                /* tokens, 2 .. seq_len */
} DocPiece;

struct ZrDocs {
    const int64_t *doc_off;     /* [ndocs + 1] into the mapping */
    const uint8_t *mask;        /* [ntokens]: 1 where the token is a trained target */
    int64_t ndocs, ntrained;
    int layout;                 /* ZR_DOCS_PACK or ZR_DOCS_PAD */
    uint64_t seed;
    int shuffle;
    /* the epoch laid out now: rows row0 .. row0 + nrows - 1 of the stream */
    int seq_len;                /* rows are cut for this length (0: none yet) */
    int64_t epoch, row0, nrows;
    int64_t *perm;              /* [ndocs] the epoch's document order */
    DocPiece *piece;            /* the epoch's pieces, row by row */
    int64_t npiece, piece_cap;
    int64_t *row_first;         /* [nrows + 1] the first piece of each row */
    int64_t row_cap;
};

static void *grow(void *p, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) return p;
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q) return NULL;
    *cap = c;
    return q;
}

/* An int64 header field: two int32 words, low first. */
static int64_t hdr64(const int32_t *h, int i)
{
    return (int64_t)((uint64_t)(uint32_t)h[i] | (uint64_t)(uint32_t)h[i + 1] << 32);
}

int zr_docs_open(ZrData *d)
{
    const int32_t *h = (const int32_t *)d->map;
    const int64_t hdr = ZR_DATA_HEADER_INTS * 4;
    if ((int64_t)d->map_bytes < hdr)
        return zr_train_fail(-EINVAL, "data %s: document file magic but only %zu bytes, the header alone "
                             "is %lld (truncated? HINT: run bin/zgen data again)", d->path, d->map_bytes,
                             (long long)hdr);
    if (h[1] != ZR_DATA_VERSION_DOCS)
        return zr_train_fail(-EINVAL, "data %s: document file version %d, this trainer reads version %d "
                             "(HINT: make it again with this zgen's bin/zgen data)", d->path, h[1],
                             ZR_DATA_VERSION_DOCS);
    int tb = h[2], layout = h[3];
    int64_t ndocs = hdr64(h, 8), ntok = hdr64(h, 10), ntrained = hdr64(h, 12);
    if ((tb != 2 && tb != 4) || (layout != ZR_DOCS_PACK && layout != ZR_DOCS_PAD) || h[4] < 1 ||
        ndocs < 1 || ntok < 2 * ndocs || ntrained < 0 || ntrained > ntok)
        return zr_train_fail(-EINVAL, "data %s: document file header is inconsistent (token bytes %d, "
                             "layout %d, vocabulary %d, %lld documents, %lld tokens, %lld trained; HINT: "
                             "make it again with bin/zgen data)", d->path, tb, layout, h[4],
                             (long long)ndocs, (long long)ntok, (long long)ntrained);
    /* sizes in 128-bit-safe steps: the header's counts come from a file */
    if (ndocs > (int64_t)(d->map_bytes / 8) || ntok > (int64_t)d->map_bytes)
        return zr_train_fail(-EINVAL, "data %s: header says %lld documents and %lld tokens, more than "
                             "the file's %zu bytes can hold (truncated? HINT: copy or make it again)",
                             d->path, (long long)ndocs, (long long)ntok, d->map_bytes);
    int64_t off_bytes = (ndocs + 1) * 8, need = hdr + off_bytes + ntok * tb + ntok;
    if ((int64_t)d->map_bytes != need)
        return zr_train_fail(-EINVAL, "data %s: %zu bytes, but its header (%lld documents, %lld tokens of "
                             "%d bytes) makes %lld (truncated or damaged? HINT: copy or make it again)",
                             d->path, d->map_bytes, (long long)ndocs, (long long)ntok, tb, (long long)need);
    const char *base = (const char *)d->map;
    const int64_t *off = (const int64_t *)(base + hdr);
    const uint8_t *mask = (const uint8_t *)(base + hdr + off_bytes + ntok * tb);
    if (off[0] != 0 || off[ndocs] != ntok)
        return zr_train_fail(-EINVAL, "data %s: document offsets run %lld .. %lld, not 0 .. %lld tokens "
                             "(HINT: make it again with bin/zgen data)", d->path, (long long)off[0],
                             (long long)off[ndocs], (long long)ntok);
    int64_t counted = 0;
    for (int64_t i = 0; i < ndocs; i++) {
        if (off[i + 1] - off[i] < 2)
            return zr_train_fail(-EINVAL, "data %s: document %lld has %lld tokens; every document needs 2 "
                                 "or more (HINT: make it again with bin/zgen data)", d->path, (long long)i,
                                 (long long)(off[i + 1] - off[i]));
        if (mask[off[i]])
            return zr_train_fail(-EINVAL, "data %s: document %lld's first token is marked as a target; "
                                 "nothing comes before it to predict it from (HINT: make it again with "
                                 "bin/zgen data)", d->path, (long long)i);
    }
    for (int64_t i = 0; i < ntok; i++) {
        if (mask[i] > 1)
            return zr_train_fail(-EINVAL, "data %s: loss mask byte %lld is %u, not 0 or 1 (damaged? HINT: "
                                 "make it again with bin/zgen data)", d->path, (long long)i, mask[i]);
        counted += mask[i];
    }
    if (counted != ntrained)
        return zr_train_fail(-EINVAL, "data %s: header says %lld trained tokens, the mask has %lld "
                             "(damaged? HINT: make it again with bin/zgen data)", d->path,
                             (long long)ntrained, (long long)counted);
    ZrDocs *k = calloc(1, sizeof *k);
    if (!k) return zr_train_fail(-ENOMEM, "data %s: out of memory", d->path);
    k->doc_off = off;
    k->mask = mask;
    k->ndocs = ndocs;
    k->ntrained = ntrained;
    k->layout = layout;
    k->epoch = -1;
    d->docs = k;
    d->format = ZR_DATA_DOCS;
    d->ntokens = ntok;
    if (tb == 2) d->tokens = (const uint16_t *)(base + hdr + off_bytes);
    else d->tokens32 = (const uint32_t *)(base + hdr + off_bytes);
    d->file_vocab = h[4];
    d->ids.bos = h[5];
    d->ids.eos = h[6];
    d->ids.pad = h[7];
    return 0;
}

void zr_docs_free(ZrDocs *k)
{
    if (!k) return;
    free(k->perm);
    free(k->piece);
    free(k->row_first);
    free(k);
}

int64_t zr_docs_count(const ZrDocs *k) { return k->ndocs; }
int zr_docs_layout(const ZrDocs *k) { return k->layout; }

uint64_t zr_docs_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void zr_docs_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int shuffle)
{
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    if (!shuffle) return;
    uint64_t st = seed ^ ((uint64_t)epoch * 0x9E3779B97F4A7C15ull);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(zr_docs_splitmix64(&st) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void zr_docs_set_order(ZrDocs *k, uint64_t seed, int shuffle)
{
    k->seed = seed;
    k->shuffle = shuffle;
    k->epoch = -1;              /* lay out again under the new order */
}

/* Ends the row being filled: row_first[nrows + 1] is where the next row's pieces start. */
static int close_row(ZrDocs *k)
{
    k->row_first = grow(k->row_first, &k->row_cap, k->nrows + 2, sizeof *k->row_first);
    if (!k->row_first) return -ENOMEM;
    k->row_first[++k->nrows] = k->npiece;
    return 0;
}

static int lay_out(ZrDocs *k, int64_t epoch, int seq_len)
{
    const int64_t L = seq_len;
    if (!k->perm && !(k->perm = malloc((size_t)k->ndocs * sizeof *k->perm))) return -ENOMEM;
    zr_docs_order(k->perm, k->ndocs, k->seed, epoch, k->shuffle);
    k->npiece = 0;
    k->nrows = 0;
    k->row_first = grow(k->row_first, &k->row_cap, 2, sizeof *k->row_first);
    if (!k->row_first) return -ENOMEM;
    k->row_first[0] = 0;
    int64_t fill = 0;
    for (int64_t i = 0; i < k->ndocs; i++) {
        int64_t d = k->perm[i], a = k->doc_off[d], n = k->doc_off[d + 1] - a;
        /* piece p covers tokens [p(L-1), p(L-1) + L): consecutive pieces share one token, the last
        ** target of one being the first input of the next, so every target is trained once */
        for (int64_t p = 0; p * (L - 1) + 1 < n; p++) {
            int64_t s = p * (L - 1), len = n - s < L ? n - s : L;
            if (fill > 0 && (k->layout == ZR_DOCS_PAD || fill + len > L)) {
                if (close_row(k)) return -ENOMEM;
                fill = 0;
            }
            k->piece = grow(k->piece, &k->piece_cap, k->npiece + 1, sizeof *k->piece);
            if (!k->piece) return -ENOMEM;
            k->piece[k->npiece].start = a + s;
            k->piece[k->npiece].len = (int32_t)len;
            k->npiece++;
            fill += len;
        }
    }
    if (fill > 0 && close_row(k)) return -ENOMEM;
    k->epoch = epoch;
    k->seq_len = seq_len;
    return 0;
}

/* The epoch holding stream row g laid out; *r gets g's row within it. Steps move forward, so this
** is one layout per epoch; an earlier row (a resume, an evaluation file) starts from epoch 0. */
static int seek(ZrDocs *k, int64_t g, int seq_len, int64_t *r)
{
    if (k->epoch < 0 || k->seq_len != seq_len || g < k->row0) {
        k->row0 = 0;
        if (lay_out(k, 0, seq_len)) return -ENOMEM;
    }
    while (g >= k->row0 + k->nrows) {
        k->row0 += k->nrows;
        if (lay_out(k, k->epoch + 1, seq_len)) return -ENOMEM;
    }
    *r = g - k->row0;
    return 0;
}

static void fill_row(const ZrData *d, const ZrDocs *k, int64_t r, int seq_len, int32_t *in,
                     int32_t *tg, int32_t *pos)
{
    int fill = 0;
    for (int64_t p = k->row_first[r]; p < k->row_first[r + 1]; p++) {
        const DocPiece *pc = &k->piece[p];
        for (int i = 0; i < pc->len; i++) {
            int64_t t = pc->start + i;
            in[fill + i] = (int32_t)zr_data_token(d, t);
            if (pos) pos[fill + i] = i;
            tg[fill + i] = i + 1 < pc->len && k->mask[t + 1] ? (int32_t)zr_data_token(d, t + 1) : -1;
        }
        fill += pc->len;
    }
    zr_docs_fill_empty(d, fill, seq_len, in, tg, pos);
}

void zr_docs_fill_empty(const ZrData *d, int from, int seq_len, int32_t *in, int32_t *tg, int32_t *pos)
{
    /* padding is a document of its own: no real token attends to it, nor it to them */
    int32_t pad = d->ids.pad >= 0 ? d->ids.pad : d->ids.eos >= 0 ? d->ids.eos : 0;
    for (int t = from; t < seq_len; t++) {
        in[t] = pad;
        tg[t] = -1;
        if (pos) pos[t] = t - from;
    }
}

int zr_docs_fill_row(const ZrData *d, int64_t g, int seq_len, int32_t *in, int32_t *tg, int32_t *pos)
{
    int64_t r;
    if (seek(d->docs, g, seq_len, &r))
        return zr_train_fail(-ENOMEM, "data %s: out of memory laying out rows", d->path);
    fill_row(d, d->docs, r, seq_len, in, tg, pos);
    return 0;
}

int64_t zr_docs_eval_rows(const ZrData *d, int seq_len)
{
    int64_t r;
    ZrDocs *k = d->docs;
    if (k->shuffle) zr_docs_set_order(k, k->seed, 0);
    if (seek(k, 0, seq_len, &r)) return zr_train_fail(-ENOMEM, "data %s: out of memory laying out rows", d->path);
    return k->nrows;
}

int zr_docs_fill_eval_row(const ZrData *d, int64_t row, int seq_len, int32_t *in, int32_t *tg, int32_t *pos)
{
    ZrDocs *k = d->docs;
    int64_t r;
    if (k->shuffle) zr_docs_set_order(k, k->seed, 0);
    if (seek(k, 0, seq_len, &r))
        return zr_train_fail(-ENOMEM, "data %s: out of memory laying out rows", d->path);
    if (row < k->nrows) fill_row(d, k, row, seq_len, in, tg, pos);
    else zr_docs_fill_empty(d, 0, seq_len, in, tg, pos);
    return 0;
}
