/*
** zk_doc.cuh — documents in a row (docs/DATA.md): pos[t] is token t's position in its document, so
** the query at t sees keys t - pos[t] .. t. The batch guarantees pos[0] = 0 and pos[t] = 0 or
** pos[t-1] + 1 (cuda_model.c checks it at the upload), so a token's document start lo(t) = t - pos[t]
** never decreases along a row. The attention kernels lean on that: a tile's earliest document start
** is its first row's, and the queries that see a key j are the run j .. end(j) - 1 up to the next
** document's first token. pos NULL is plain causal attention (one document per row: lo = 0, end = T).
** pos points at the row's first token. Guarded: a test includes it once at global scope.
*/
#ifndef ZK_DOC_CUH
#define ZK_DOC_CUH

/* Sequence b's positions (NULL stays NULL). */
ZK_DEV const int *zk_doc_row(const int *pos, int b, int T) { return pos ? pos + (long)b * T : pos; }

/* The first key that query i sees. */
ZK_DEV int zk_doc_lo(const int *pos, int i) { return pos ? i - pos[i] : 0; }

/* One past the last query that sees key j (j < n): the first i > j whose document starts after j,
** else n. lo is non-decreasing, so a binary search: log2(n) loads where a scan would be the
** document's length. */
ZK_DEV int zk_doc_end(const int *pos, int j, int n)
{
    if (!pos) return n;
    int a = j + 1, b = n;
    while (a < b) {
        int m = (a + b) / 2;
        if (m - pos[m] > j) b = m;
        else a = m + 1;
    }
    return a;
}

#endif /* ZK_DOC_CUH */
