/*
** zr_data_docs.h — the document-file half of zr_data (zr_data_docs.c), for zr_data.c and tests:
** validation at open, the epochs' rows, the seeded order.
*/
#ifndef ZR_DATA_DOCS_H
#define ZR_DATA_DOCS_H
#include <stdint.h>
#include "zr_data.h"

enum { ZR_DOCS_PACK = 0, ZR_DOCS_PAD = 1 };

/* d->map holds a file whose first int32 is ZR_DATA_MAGIC_DOCS: validates it and fills d (format,
** tokens, ids, docs). Returns 0 or -errno with the message in zr_train_error(). */
int zr_docs_open(ZrData *d);
void zr_docs_free(ZrDocs *k);
int64_t zr_docs_count(const ZrDocs *k);
int zr_docs_layout(const ZrDocs *k);
void zr_docs_set_order(ZrDocs *k, uint64_t seed, int shuffle);
/* splitmix64's next value (docs/DATA.md, Shuffle) and the epoch's order of n documents. */
uint64_t zr_docs_splitmix64(uint64_t *state);
void zr_docs_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int shuffle);
/* Row g of the stream of epochs: inputs, targets (-1: none), positions (pos may be NULL). */
int zr_docs_fill_row(const ZrData *d, int64_t g, int seq_len, int32_t *in, int32_t *tg, int32_t *pos);
/* Padding from column `from` to the row's end: no targets, positions restarting at `from`. */
void zr_docs_fill_empty(const ZrData *d, int from, int seq_len, int32_t *in, int32_t *tg, int32_t *pos);
int64_t zr_docs_eval_rows(const ZrData *d, int seq_len);
int zr_docs_fill_eval_row(const ZrData *d, int64_t row, int seq_len, int32_t *in, int32_t *tg, int32_t *pos);
#endif
