/*
** x_seeds.c — writes the binary seed inputs of tests/fuzz/corpus/ with libzrt's own writers, so the
** seeds are exactly what the trainer writes: checkpoints (manifest + separator + shard, fz_ckpt's
** input form) and token files (fz_data's 16-byte prefix + the file). Run by tests/fuzz/make_seeds.sh.
** Usage: x_seeds OUTDIR (OUTDIR/ckpt and OUTDIR/data must exist).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "zr_ckpt.h"
#include "zr_data.h"

static void die(const char *what) { fprintf(stderr, "x_seeds: %s failed\n", what); exit(1); }

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long len;
    if (!f) die(path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)len + 1);
    if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) die(path);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void ckpt_seed(const char *out, const char *tmp, int nblob, const char *meta)
{
    ZrCkptWriter *w;
    char sd[700], p[800];
    float v[10];
    size_t mn, sn;
    char *m, *s;
    FILE *f;
    for (int i = 0; i < 10; i++) v[i] = (float)i * 0.5f;
    if (zr_ckpt_writer_begin(&w, tmp, 7, 0, 1)) die("begin");
    if (nblob > 0 && zr_ckpt_add(w, "params", v, sizeof v)) die("add");
    if (nblob > 1 && zr_ckpt_add(w, "adam.m", v, 12)) die("add");
    if (nblob > 2 && zr_ckpt_add(w, "empty", v, 0)) die("add");
    if (zr_ckpt_writer_commit(w)) die("commit");
    if (zr_ckpt_finish(tmp, 7, 1, meta)) die("finish");
    snprintf(sd, sizeof sd, "%s/step_7", tmp);
    snprintf(p, sizeof p, "%s/manifest.json", sd);
    m = slurp(p, &mn);
    snprintf(p, sizeof p, "%s/rank_00000.zrs", sd);
    s = slurp(p, &sn);
    if (!(f = fopen(out, "wb"))) die(out);
    fwrite(m, 1, mn, f);
    fputs("\n--shard--\n", f);
    fwrite(s, 1, sn, f);
    fclose(f);
    free(m);
    free(s);
}

static void data_seed(const char *out, const char *tmp, int llmc, int n, int seq_len)
{
    uint16_t t[64];
    int32_t pre[4] = { seq_len, 50, 3, 0 };
    size_t fn;
    char *b;
    FILE *f;
    for (int i = 0; i < n; i++) t[i] = (uint16_t)(i * 7 % 50);
    if (zr_data_write(tmp, t, n, llmc)) die("data");
    b = slurp(tmp, &fn);
    if (!(f = fopen(out, "wb"))) die(out);
    fwrite(pre, 1, sizeof pre, f);
    fwrite(b, 1, fn, f);
    fclose(f);
    free(b);
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/x_seeds.XXXXXX", o[600], t[600];
    if (argc != 2 || !mkdtemp(tmp)) die("usage: x_seeds OUTDIR");
    for (int k = 0; k < 3; k++) {
        snprintf(t, sizeof t, "%s/ck%d", tmp, k);
        snprintf(o, sizeof o, "%s/ckpt/seed_%d", argv[1], k);
        ckpt_seed(o, t, k + 1, k == 1 ? "{\"plan\":\"tiny\",\"hash\":\"0123\"}" : NULL);
    }
    snprintf(t, sizeof t, "%s/tok.bin", tmp);
    snprintf(o, sizeof o, "%s/data/llmc", argv[1]);
    data_seed(o, t, 1, 40, 8);
    snprintf(o, sizeof o, "%s/data/raw", argv[1]);
    data_seed(o, t, 0, 33, 4);
    snprintf(o, sizeof o, "rm -rf '%s'", tmp);
    return system(o) != 0;
}
