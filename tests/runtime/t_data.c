/*
** t_data.c — token files (llm.c, raw uint16 and the 32-bit variant), their validation messages, and
** the batch order:
** the global batch follows docs/SPEC.md's formula and does not depend on the world size; document
** files (docs/DATA.md): rows worked out by hand for pack and pad, the shuffle against the Python
** reference's values, damaged headers refused, text refused with the zgen data command.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "zr.h"
#include "zr_data_docs.h"
#include "zt.h"
#include "zt_tmp.h"

static char dir[64];

static const char *tmp(const char *name) { return zt_tmp_in(dir, name); }

static void put_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    fwrite(a, 1, na, f);
    if (nb) fwrite(b, 1, nb, f);
    fclose(f);
}

/* tokens[i] = i: a token's value is its position, so a row tells where it started */
static uint16_t toks[5000];

static void t_formats(void)
{
    ZrData d;
    for (int i = 0; i < 5000; i++) toks[i] = (uint16_t)i;
    ZT_EQ_INT(zr_data_write(tmp("a.bin"), toks, 5000, 1), 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("a.bin"), 64), 0);
    ZT_EQ_INT(d.format, ZR_DATA_LLMC);
    ZT_EQ_INT(d.ntokens, 5000);
    ZT_CHECK(d.tokens && memcmp(d.tokens, toks, sizeof toks) == 0);
    zr_data_close(&d);
    ZT_EQ_INT(zr_data_write(tmp("r.bin"), toks, 5000, 0), 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("r.bin"), 64), 0);
    ZT_EQ_INT(d.format, ZR_DATA_RAW);
    ZT_EQ_INT(d.ntokens, 5000);
    ZT_CHECK(memcmp(d.tokens, toks, sizeof toks) == 0);
    zr_data_close(&d);
    {   /* an llm.c header may count fewer tokens than the file holds: the count wins */
        int32_t h[256] = { 20240520, 1, 100 };
        put_file(tmp("short.bin"), h, sizeof h, toks, 300 * 2);
        ZT_EQ_INT(zr_data_open(&d, tmp("short.bin"), 64), 0);
        ZT_EQ_INT(d.ntokens, 100);
        zr_data_close(&d);
    }
}

static void t_errors(void)
{
    ZrData d;
    int32_t h[256] = { 20240520, 2, 100 };
    put_file(tmp("v2.bin"), h, sizeof h, toks, 200);
    ZT_EQ_INT(zr_data_open(&d, tmp("v2.bin"), 8), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "version 2") && strstr(zr_train_error(), "v2.bin"));
    h[1] = 1;
    h[2] = 101; /* file has 100 */
    put_file(tmp("trunc.bin"), h, sizeof h, toks, 200);
    ZT_EQ_INT(zr_data_open(&d, tmp("trunc.bin"), 8), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "101 tokens") && strstr(zr_train_error(), "holds 100"));
    put_file(tmp("hdr.bin"), h, 100, NULL, 0); /* magic, but less than a header */
    ZT_EQ_INT(zr_data_open(&d, tmp("hdr.bin"), 8), -EINVAL);
    ZT_EQ_INT(zr_data_write(tmp("few.bin"), toks, 65, 1), 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("few.bin"), 64), -EINVAL); /* need seq_len + 2 */
    ZT_CHECK(strstr(zr_train_error(), "too few") != NULL);
    ZT_EQ_INT(zr_data_write(tmp("few2.bin"), toks, 66, 0), 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("few2.bin"), 64), 0);
    zr_data_close(&d);
    put_file(tmp("odd.bin"), toks, 1001, NULL, 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("odd.bin"), 8), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "odd size") != NULL);
    ZT_EQ_INT(zr_data_open(&d, tmp("missing.bin"), 8), -ENOENT);
    ZT_CHECK(strstr(zr_train_error(), "missing.bin") != NULL);
    put_file(tmp("tiny.bin"), toks, 2, NULL, 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("tiny.bin"), 8), -EINVAL);
}

static void t_vocab(void)
{
    ZrData d;
    uint16_t t[100];
    for (int i = 0; i < 100; i++) t[i] = (uint16_t)(i % 50);
    t[73] = 300;
    zr_data_write(tmp("voc.bin"), t, 100, 1);
    ZT_EQ_INT(zr_data_open(&d, tmp("voc.bin"), 8), 0);
    ZT_EQ_INT(zr_data_check_vocab(&d, 301), 0);
    ZT_EQ_INT(zr_data_check_vocab(&d, 300), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "token 73 is 300") != NULL);
    zr_data_close(&d);
}

/* docs/SPEC.md: sequence j of step s starts at ((s*tbs + j) * T) mod (N - T - 1). */
/* The 32-bit variant (llm.c's llama-3 files): ids beyond 65535 come through whole, in the same batch
** order as a 16-bit file of the same (smaller) ids; its header is checked like llm.c's. */
static void t_tokens32(void)
{
    enum { N = 3000, T = 16 };
    static uint32_t t32[N];
    static uint16_t t16[N];
    for (int i = 0; i < N; i++) {
        t16[i] = (uint16_t)(i * 7 % 60000);
        t32[i] = (uint32_t)t16[i] + (i % 3 == 0 ? 100000u : 0u);
    }
    t32[5] = 128255;                                    /* LLaMA 3's last id */
    ZrData d, e;
    ZT_EQ_INT(zr_data_write32(tmp("w.bin"), t32, N), 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("w.bin"), T), 0);
    ZT_EQ_INT(d.format, ZR_DATA_LLMC32);
    ZT_EQ_INT(d.ntokens, N);
    ZT_CHECK(d.tokens == NULL && d.tokens32 && memcmp(d.tokens32, t32, sizeof t32) == 0);
    {   /* the header, byte by byte as documented: magic 20240801, version 7, count; then uint32 ids */
        FILE *f = fopen(tmp("w.bin"), "rb");
        int32_t h[256];
        uint32_t first[6];
        ZT_CHECK(f && fread(h, 4, 256, f) == 256 && fread(first, 4, 6, f) == 6);
        if (f) fclose(f);
        ZT_CHECK(h[0] == 20240801 && h[1] == 7 && h[2] == N && h[3] == 0 && h[255] == 0);
        ZT_CHECK(first[0] == 100000u && first[5] == 128255u);
    }
    ZT_EQ_INT(zr_data_check_vocab(&d, 128256), 0);
    ZT_EQ_INT(zr_data_check_vocab(&d, 128255), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "token 5 is 128255") != NULL);
    ZT_EQ_INT(zr_data_write(tmp("n.bin"), t16, N, 1), 0);
    ZT_EQ_INT(zr_data_open(&e, tmp("n.bin"), T), 0);
    int32_t in32[2 * T], tg32[2 * T], in16[2 * T], tg16[2 * T];
    for (int step = 0; step < 40; step += 13) {
        ZT_EQ_INT(zr_data_fill_micro(&d, step, T, 2, 2, 2, 1, 1, in32, tg32, NULL), 0);
        ZT_EQ_INT(zr_data_fill_micro(&e, step, T, 2, 2, 2, 1, 1, in16, tg16, NULL), 0);
        for (int k = 0; k < 2 * T; k++) {
            ZT_CHECK(in32[k] == in16[k] || in32[k] == in16[k] + 100000);
            ZT_CHECK(tg32[k] == tg16[k] || tg32[k] == tg16[k] + 100000);
        }
    }
    {   /* the input row is exactly the file's ids from the documented start */
        int64_t s0 = zr_data_seq_start(&d, 3, 8, 2, T);
        zr_data_fill_row(&d, 3, 8, 2, T, in32, tg32);
        ZT_CHECK(in32[0] == (int32_t)t32[s0] && tg32[T - 1] == (int32_t)t32[s0 + T]);
    }
    zr_data_close(&d);
    zr_data_close(&e);
    /* header errors */
    int32_t h[256] = { 20240801, 1, 10 };
    put_file(tmp("w1.bin"), h, sizeof h, t32, 40);
    ZT_EQ_INT(zr_data_open(&d, tmp("w1.bin"), 4), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "32-bit token file version 1, expected 7") != NULL);
    h[1] = 7;
    h[2] = 11;                                          /* the file holds 10 */
    put_file(tmp("w2.bin"), h, sizeof h, t32, 40);
    ZT_EQ_INT(zr_data_open(&d, tmp("w2.bin"), 4), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "11 tokens") && strstr(zr_train_error(), "holds 10"));
    put_file(tmp("w3.bin"), h, 64, NULL, 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("w3.bin"), 4), -EINVAL);
}

static void t_batch_order(void)
{
    ZrData d;
    enum { T = 64 };
    int32_t in[T], tg[T];
    const int64_t N = 5000, tbs = 12;
    ZT_EQ_INT(zr_data_open(&d, tmp("a.bin"), T), 0);
    for (int64_t s = 0; s < 40; s++)
        for (int64_t j = 0; j < tbs; j++) {
            int64_t want = ((s * tbs + j) * T) % (N - T - 1);
            int ok = 1;
            ZT_EQ_INT(zr_data_seq_start(&d, s, tbs, j, T), want);
            zr_data_fill_row(&d, s, tbs, j, T, in, tg);
            for (int k = 0; k < T; k++) ok &= in[k] == want + k && tg[k] == want + k + 1;
            ZT_CHECKM(ok, "step %lld row %lld", (long long)s, (long long)j);
        }
    /* the last usable start reads token N-2 as its last target, never past the end */
    ZT_CHECK(zr_data_seq_start(&d, 0, 1, (N - T - 2 + T - 1) / T, T) <= N - T - 2);
    {   /* very long runs: s*tbs*T beyond 2^63 */
        int64_t s = (int64_t)1 << 52;
        unsigned __int128 x = ((unsigned __int128)s * 512 + 3) * T;
        ZT_EQ_INT(zr_data_seq_start(&d, s, 512, 3, T), (int64_t)(x % (unsigned __int128)(N - T - 1)));
    }
    zr_data_close(&d);
}

/* Rank r, micro-step k gets rows j = (k*ws + r)*mb + i; assembled, every world size gives the same
** global batch, row by row, as the single-rank definition. */
static void t_world_independent(void)
{
    ZrData d;
    enum { T = 16, TBS = 12 };
    static const int cfg[][3] = { { 1, 12, 1 }, { 1, 3, 4 }, { 2, 3, 2 }, { 2, 6, 1 }, { 3, 2, 2 },
                                  { 3, 4, 1 }, { 4, 3, 1 }, { 4, 1, 3 }, { 6, 1, 2 }, { 12, 1, 1 } };
    static int32_t ref_in[TBS][T], ref_tg[TBS][T], got_in[TBS][T], got_tg[TBS][T];
    ZT_EQ_INT(zr_data_open(&d, tmp("a.bin"), T), 0);
    for (int64_t s = 0; s < 5; s++) {
        for (int j = 0; j < TBS; j++) zr_data_fill_row(&d, s, TBS, j, T, ref_in[j], ref_tg[j]);
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            int ws = cfg[c][0], mb = cfg[c][1], gas = cfg[c][2];
            int seen[TBS] = { 0 }, dup = 0;
            int32_t in[TBS * T], tg[TBS * T];
            memset(got_in, 0xff, sizeof got_in);
            for (int k = 0; k < gas; k++)
                for (int r = 0; r < ws; r++) {
                    ZT_EQ_INT(zr_data_fill_micro(&d, s, T, mb, gas, ws, r, k, in, tg, NULL), 0);
                    for (int i = 0; i < mb; i++) {
                        int j = (k * ws + r) * mb + i;
                        dup |= seen[j]++;
                        memcpy(got_in[j], in + i * T, sizeof got_in[j]);
                        memcpy(got_tg[j], tg + i * T, sizeof got_tg[j]);
                    }
                }
            ZT_CHECKM(!dup, "ws %d: a row twice", ws);
            ZT_CHECKM(memcmp(got_in, ref_in, sizeof ref_in) == 0 && memcmp(got_tg, ref_tg, sizeof ref_tg) == 0,
                      "step %lld ws %d mb %d gas %d: global batch differs", (long long)s, ws, mb, gas);
        }
    }
    {
        int32_t in[T], tg[T];
        ZT_EQ_INT(zr_data_fill_micro(&d, 0, T, 1, 1, 2, 2, 0, in, tg, NULL), -EINVAL); /* rank >= ws */
        ZT_EQ_INT(zr_data_fill_micro(&d, 0, T, 1, 2, 2, 0, 2, in, tg, NULL), -EINVAL); /* micro >= gas */
    }
    zr_data_close(&d);
}

/* ---------------------------------------------------------------------- document files */
/* A document file (docs/DATA.md) from documents given as token arrays and masks; `bad` damages it. */
enum { BAD_NONE, BAD_VERSION, BAD_TRUNC, BAD_SHORT_DOC, BAD_FIRST_MASKED, BAD_MASK_VALUE, BAD_COUNT };
static void put_docs(const char *path, int layout, int ndocs, const int *len, const uint16_t *tok,
                     const uint8_t *mask, int bad)
{
    int32_t h[256] = {0};
    int64_t off[16], n = 0, trained = 0;
    off[0] = 0;
    for (int i = 0; i < ndocs; i++) off[i + 1] = off[i] + len[i];
    n = off[ndocs];
    for (int64_t i = 0; i < n; i++) trained += mask[i];
    h[0] = 20261201, h[1] = bad == BAD_VERSION ? 2 : 1, h[2] = 2, h[3] = layout, h[4] = 100;
    h[5] = 1, h[6] = 2, h[7] = 0;
    h[8] = ndocs, h[10] = (int32_t)n, h[12] = (int32_t)(trained + (bad == BAD_COUNT));
    uint8_t m[64];
    memcpy(m, mask, (size_t)n);
    if (bad == BAD_SHORT_DOC) off[1] = 1;
    if (bad == BAD_FIRST_MASKED) m[0] = 1, h[12]++;
    if (bad == BAD_MASK_VALUE) m[1] = 2, h[12]++;
    FILE *f = fopen(path, "wb");
    fwrite(h, 4, 256, f);
    fwrite(off, 8, (size_t)ndocs + 1, f);
    fwrite(tok, 2, (size_t)n, f);
    fwrite(m, 1, (size_t)n - (bad == BAD_TRUNC), f);
    fclose(f);
}

/* Three documents in rows of 5: lengths 2 and 3 share a row when packed, the one of 7 is cut into
** pieces of 5 and 3 that share its fifth token; rows worked out by hand from docs/DATA.md. */
static const int dl[3] = {2, 3, 7};
static const uint16_t dt[12] = {10, 11, 20, 21, 22, 30, 31, 32, 33, 34, 35, 36};
static const uint8_t dm[12] = {0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1};

static void expect_row(ZrData *d, int64_t g, const int32_t *in, const int32_t *tg, const int32_t *pos)
{
    int32_t a[5], b[5], c[5];
    ZT_EQ_INT(zr_data_fill_micro(d, g, 5, 1, 1, 1, 0, 0, a, b, c), 0);
    ZT_CHECKM(memcmp(a, in, sizeof a) == 0, "row %lld inputs", (long long)g);
    ZT_CHECKM(memcmp(b, tg, sizeof b) == 0, "row %lld targets", (long long)g);
    ZT_CHECKM(memcmp(c, pos, sizeof c) == 0, "row %lld positions", (long long)g);
}

static void t_docs_rows(void)
{
    ZrData d;
    put_docs(tmp("pack.zgd"), 0, 3, dl, dt, dm, BAD_NONE);
    ZT_EQ_INT(zr_data_open(&d, tmp("pack.zgd"), 5), 0);
    ZT_EQ_INT(d.format, ZR_DATA_DOCS);
    ZT_EQ_INT(d.ids.eos, 2);
    ZT_EQ_INT(zr_data_check_vocab(&d, 128), 0);
    ZT_EQ_INT(zr_data_check_vocab(&d, 64), -EINVAL);     /* made with 100 tokens */
    /* one row per step (tbs 1): the stream's rows in order; an epoch is 3 rows */
    for (int e = 0; e < 2; e++) {
        expect_row(&d, 3 * e + 0, (int32_t[]){10, 11, 20, 21, 22}, (int32_t[]){11, -1, -1, 22, -1},
                   (int32_t[]){0, 1, 0, 1, 2});
        expect_row(&d, 3 * e + 1, (int32_t[]){30, 31, 32, 33, 34}, (int32_t[]){31, 32, 33, 34, -1},
                   (int32_t[]){0, 1, 2, 3, 4});
        expect_row(&d, 3 * e + 2, (int32_t[]){34, 35, 36, 0, 0}, (int32_t[]){35, 36, -1, -1, -1},
                   (int32_t[]){0, 1, 2, 0, 1});
    }
    ZT_EQ_INT(zr_data_step_targets(&d, 0, 5, 3), 8);       /* every trained token once */
    ZT_EQ_INT(zr_data_eval_rows(&d, 5), 3);
    /* shuffled: the order of the Python reference (py/zgd.py permutation, docs/DATA.md Shuffle) */
    uint64_t st = 0;
    ZT_CHECK(zr_docs_splitmix64(&st) == 0xE220A8397B1DCDAFull);
    int64_t perm[10];
    static const int64_t want3[10] = {6, 8, 9, 1, 2, 7, 4, 5, 3, 0}, want0[10] = {8, 1, 5, 9, 0, 4, 3, 2, 6, 7};
    zr_docs_order(perm, 10, 7, 3, 1);
    ZT_CHECK(memcmp(perm, want3, sizeof perm) == 0);
    zr_docs_order(perm, 10, 7, 0, 1);
    ZT_CHECK(memcmp(perm, want0, sizeof perm) == 0);
    {
        /* shuffled rows differ from the file's order, and each still holds a trained target */
        int32_t a[5], b[5], x[5], y[5];
        int differ = 0, empty = 0;
        ZrData u;
        ZT_EQ_INT(zr_data_open(&u, tmp("pack.zgd"), 5), 0);
        zr_data_set_order(&d, 7, 1);
        for (int64_t g = 0; g < 40; g++) {
            ZT_EQ_INT(zr_data_fill_micro(&d, g, 5, 1, 1, 1, 0, 0, a, b, NULL), 0);
            ZT_EQ_INT(zr_data_fill_micro(&u, g, 5, 1, 1, 1, 0, 0, x, y, NULL), 0);
            differ += memcmp(a, x, sizeof a) != 0;
            empty += zr_data_step_targets(&d, g, 5, 1) == 0;
        }
        ZT_CHECKM(differ > 0 && empty == 0, "%d rows differ, %d without a target", differ, empty);
        zr_data_close(&u);
    }
    zr_data_close(&d);
    put_docs(tmp("pad.zgd"), 1, 3, dl, dt, dm, BAD_NONE);
    ZT_EQ_INT(zr_data_open(&d, tmp("pad.zgd"), 5), 0);
    expect_row(&d, 0, (int32_t[]){10, 11, 0, 0, 0}, (int32_t[]){11, -1, -1, -1, -1}, (int32_t[]){0, 1, 0, 1, 2});
    expect_row(&d, 1, (int32_t[]){20, 21, 22, 0, 0}, (int32_t[]){-1, 22, -1, -1, -1}, (int32_t[]){0, 1, 2, 0, 1});
    expect_row(&d, 2, (int32_t[]){30, 31, 32, 33, 34}, (int32_t[]){31, 32, 33, 34, -1}, (int32_t[]){0, 1, 2, 3, 4});
    expect_row(&d, 3, (int32_t[]){34, 35, 36, 0, 0}, (int32_t[]){35, 36, -1, -1, -1}, (int32_t[]){0, 1, 2, 0, 1});
    ZT_EQ_INT(zr_data_eval_rows(&d, 5), 4);
    zr_data_close(&d);
}

static void t_docs_errors(void)
{
    static const struct { int bad; const char *says; } c[] = {
        {BAD_VERSION, "document file version 2"}, {BAD_TRUNC, "truncated or damaged"},
        {BAD_SHORT_DOC, "has 1 tokens; every document needs 2"}, {BAD_FIRST_MASKED, "first token is marked"},
        {BAD_MASK_VALUE, "loss mask byte 1 is 2"}, {BAD_COUNT, "header says 9 trained tokens, the mask has 8"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        ZrData d;
        put_docs(tmp("bad.zgd"), 0, 3, dl, dt, dm, c[i].bad);
        ZT_EQ_INT(zr_data_open(&d, tmp("bad.zgd"), 5), -EINVAL);
        ZT_CHECKM(strstr(zr_train_error(), c[i].says) && strstr(zr_train_error(), "bad.zgd"), "case %zu: %s", i,
                  zr_train_error());
    }
    /* text where tokens belong: refused with the command that makes a document file */
    ZrData d;
    const char *jsonl = "{\"prompt\": \"hello\", \"response\": \"world\"}\n{\"text\": \"more text here\"}\n";
    put_file(tmp("x.jsonl"), jsonl, strlen(jsonl), NULL, 0);
    ZT_EQ_INT(zr_data_open(&d, tmp("x.jsonl"), 4), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "bin/zgen data") != NULL, "%s", zr_train_error());
}

int main(void)
{
    if (zt_tmpdir_make(dir, sizeof dir, "data")) return 1;
    ZT_RUN(t_formats);
    ZT_RUN(t_errors);
    ZT_RUN(t_vocab);
    ZT_RUN(t_tokens32);
    ZT_RUN(t_batch_order);
    ZT_RUN(t_world_independent);
    ZT_RUN(t_docs_rows);
    ZT_RUN(t_docs_errors);
    zt_tmpdir_remove(dir);
    return zt_end();
}
