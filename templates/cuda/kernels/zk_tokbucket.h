/*
** zk_tokbucket.h — the host-side pass that groups a micro-batch's positions by token id, for
** encoder.cu's wte gradient. Shared by the kernel tests' launcher and the CUDA trainer (cuda_model.c,
** which fills it when the batch is uploaded: the tokens are on the host then), so both hand the
** kernel the same layout. C and C++, no headers; never compiled by NVRTC.
**
** Layout of b (ZK_TOKBUCKET_INTS(n) ints): order[n] (positions, grouped by token in ascending token
** order, ascending position within a token: a stable counting sort), seg_tok[n] and seg_start[n + 1]
** (the s-th distinct token and where its positions start in order; seg_start[nseg] = n), then nseg.
*/
#ifndef ZK_TOKBUCKET_H
#define ZK_TOKBUCKET_H

#define ZK_TOKBUCKET_INTS(n) (3 * (n) + 2)

/* Fills b for tok[0..n) with ids in [0, vocab); cnt: vocab + 1 ints of workspace. Returns the number
** of distinct tokens, or -1 when an id is out of range (b is then unspecified). */
static inline int zk_tok_buckets(const int *tok, int n, int vocab, int *cnt, int *b)
{
    int *order = b, *seg_tok = b + n, *seg_start = b + 2 * n, nseg = 0;
    for (int v = 0; v <= vocab; v++) cnt[v] = 0;
    for (int i = 0; i < n; i++) {
        if (tok[i] < 0 || tok[i] >= vocab) return -1;
        cnt[tok[i] + 1]++;
    }
    for (int v = 0; v < vocab; v++) cnt[v + 1] += cnt[v];
    for (int i = 0; i < n; i++) order[cnt[tok[i]]++] = i;
    for (int i = 0; i < n; i++)
        if (i == 0 || tok[order[i]] != tok[order[i - 1]]) {
            seg_tok[nseg] = tok[order[i]];
            seg_start[nseg++] = i;
        }
    seg_start[nseg] = n;
    b[3 * n + 1] = nseg;
    return nseg;
}

#endif
