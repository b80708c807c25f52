/*
** t_ckpt.c — checkpoints: CRC32C known answers, a 3-rank save/load round trip, refusal of
** corrupted, truncated, grown, missing and foreign shards with the file named, and crash safety:
** an interrupted save leaves `latest` and the step it names intact. Format 2: a tensor index read back
** under three partitions (stage-3 slices, a flat cut, whole copies) with pseudo-random ranges, range
** reads that touch only the chunks around them, a flipped byte failing just its chunk, a checkpoint
** missing a range refused at open, and a format-1 shard (built here from its definition) still read.
** The streaming safetensors writer that consolidation uses: same bytes as zr_st_write, BF16, and a
** wrong byte count refused.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "zr.h"
#include "zt.h"

#define PY "/usr/bin/python3"
enum { W = 3 };

static char dir[64], ck[128];

static const char *path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *path(const char *fmt, ...)
{
    static char p[4][512];
    static int k;
    va_list ap;
    int n;
    k = (k + 1) % 4;
    n = snprintf(p[k], sizeof p[k], "%s/", ck);
    va_start(ap, fmt);
    vsnprintf(p[k] + n, sizeof p[k] - (size_t)n, fmt, ap);
    va_end(ap);
    return p[k];
}

/* RFC 3720 B.4 test vectors plus the common "123456789" check value. */
static void t_crc32c(void)
{
    uint8_t z[32], f[32], up[32], down[32];
    static uint8_t big[70001];
    memset(z, 0, 32);
    memset(f, 0xff, 32);
    for (int i = 0; i < 32; i++) { up[i] = (uint8_t)i; down[i] = (uint8_t)(31 - i); }
    for (int hw = 0; hw < 2; hw++) {
        uint32_t (*crc)(uint32_t, const void *, size_t) = hw ? zr_crc32c : zr_crc32c_sw;
        ZT_CHECK(crc(0, "123456789", 9) == 0xE3069283u);
        ZT_CHECK(crc(0, z, 32) == 0x8A9136AAu);
        ZT_CHECK(crc(0, f, 32) == 0x62A8AB43u);
        ZT_CHECK(crc(0, up, 32) == 0x46DD794Eu);
        ZT_CHECK(crc(0, down, 32) == 0x113FDB5Cu);
        ZT_CHECK(crc(0, "", 0) == 0);
        ZT_CHECK(crc(crc(0, "1234", 4), "56789", 5) == 0xE3069283u); /* chaining */
    }
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 2654435761u >> 13);
    for (int k = 0; k < 200; k++) { /* odd offsets and lengths: both paths agree */
        size_t off = (size_t)(k * 37) % 61, len = (size_t)(k * k * 131) % (sizeof big - 64);
        ZT_CHECKM(zr_crc32c(0, big + off, len) == zr_crc32c_sw(0, big + off, len), "off %zu len %zu", off, len);
    }
}

/* Rank r's blobs at step s: sizes differ per rank, values depend on (r, s). */
static void fill(float *m, int n, int r, int64_t s, float bias)
{
    for (int i = 0; i < n; i++) m[i] = (float)r * 1000.0f + (float)i * 0.5f + (float)s + bias;
}
static int nmaster(int r) { return 1000 + 17 * r; }

static int save(int64_t step, float bias, int finish)
{
    for (int r = 0; r < W; r++) {
        ZrCkptWriter *w;
        float m[1100], v[1100];
        int64_t st = step;
        uint8_t sc[ZR_SCALER_STATE_BYTES];
        int rc;
        fill(m, nmaster(r), r, step, bias);
        fill(v, nmaster(r), r + 7, step, bias);
        memset(sc, 0xA0 + r, sizeof sc);
        if ((rc = zr_ckpt_writer_begin(&w, ck, step, r, W)) != 0) return rc;
        if ((rc = zr_ckpt_add(w, "master", m, (size_t)nmaster(r) * 4)) != 0) goto err;
        if ((rc = zr_ckpt_blob_begin(w, "adam_v")) != 0) goto err;  /* streamed in 3 chunks */
        for (int c = 0; c < 3 && !rc; c++) {
            int b = c * nmaster(r) / 3, e = (c + 1) * nmaster(r) / 3;
            rc = zr_ckpt_blob_write(w, v + b, (size_t)(e - b) * 4);
        }
        if (rc || (rc = zr_ckpt_blob_end(w)) != 0) goto err;
        if ((rc = zr_ckpt_add(w, "step", &st, sizeof st)) != 0) goto err;
        if ((rc = zr_ckpt_add(w, "scaler", sc, sizeof sc)) != 0) goto err;
        if ((rc = zr_ckpt_add(w, "empty", NULL, 0)) != 0) goto err;
        if ((rc = zr_ckpt_writer_commit(w)) != 0) return rc;
        continue;
    err:
        zr_ckpt_writer_abort(w);
        return rc;
    }
    /* here the caller's barrier; then rank 0 */
    return finish ? zr_ckpt_finish(ck, step, W, "{\"plan\": \"tiny\", \"hash\": 12345}") : 0;
}

static int verify(int64_t step, float bias)
{
    int bad = 0;
    for (int r = 0; r < W; r++) {
        ZrCkptReader *rd;
        float m[1100], v[1100], e[1100];
        int64_t st = -1;
        uint8_t sc[ZR_SCALER_STATE_BYTES];
        size_t n = 0;
        if (zr_ckpt_open(&rd, ck, step, r, W) != 0) { printf("  open: %s\n", zr_train_error()); return 0; }
        bad |= zr_ckpt_get(rd, "master", m, (size_t)nmaster(r) * 4) != 0;
        fill(e, nmaster(r), r, zr_ckpt_step(rd), bias);
        bad |= memcmp(m, e, (size_t)nmaster(r) * 4) != 0;
        bad |= zr_ckpt_get(rd, "adam_v", v, (size_t)nmaster(r) * 4) != 0;
        fill(e, nmaster(r), r + 7, zr_ckpt_step(rd), bias);
        bad |= memcmp(v, e, (size_t)nmaster(r) * 4) != 0;
        bad |= zr_ckpt_get(rd, "step", &st, sizeof st) != 0 || st != zr_ckpt_step(rd);
        bad |= zr_ckpt_get(rd, "scaler", sc, sizeof sc) != 0 || sc[5] != 0xA0 + r;
        bad |= zr_ckpt_blob_size(rd, "empty", &n) != 0 || n != 0;
        zr_ckpt_close(rd);
    }
    return !bad;
}

static int count_tmp_files(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    int n = 0;
    if (!dp) return -1;
    while ((e = readdir(dp)) != NULL) n += strstr(e->d_name, ".tmp") != NULL || strstr(e->d_name, ".old") != NULL;
    closedir(dp);
    return n;
}

static void t_roundtrip(void)
{
    ZrCkptReader *rd;
    int64_t step = -1;
    float part[10], m[1100];
    char args[600];
    ZT_EQ_INT(save(5, 0.0f, 1), 0);
    ZT_EQ_INT(zr_ckpt_latest(ck, &step), 0);
    ZT_EQ_INT(step, 5);
    ZT_CHECK(verify(5, 0.0f));
    ZT_CHECK(verify(-1, 0.0f));
    ZT_EQ_INT(count_tmp_files(ck), 0);
    ZT_EQ_INT(count_tmp_files(path("step_5")), 0);
    ZT_EQ_INT(zr_ckpt_open(&rd, ck, -1, 1, W), 0);
    if (rd) {
        ZT_EQ_INT(zr_ckpt_get(rd, "master", m, 4), -EMSGSIZE);
        ZT_CHECK(strstr(zr_train_error(), "rank_00001.zrs") && strstr(zr_train_error(), "4068"));
        ZT_EQ_INT(zr_ckpt_get(rd, "adam_m", m, 4), -ENOENT);
        ZT_EQ_INT(zr_ckpt_get_range(rd, "master", 40, part, sizeof part), 0);
        ZT_CHECK(part[0] == 1000.0f + 10 * 0.5f + 5 && part[9] == 1000.0f + 19 * 0.5f + 5);
        ZT_EQ_INT(zr_ckpt_get_range(rd, "master", 4060, part, 12), -ERANGE);
        ZT_CHECK(strstr(zr_ckpt_meta(rd), "\"hash\": 12345") != NULL);
        zr_ckpt_close(rd);
    }
    /* a step directory given directly */
    ZT_EQ_INT(zr_ckpt_open(&rd, path("step_5"), -1, 2, W), 0);
    zr_ckpt_close(rd);
    if (access(PY, X_OK) == 0) {
        const char *root = getenv("ZT_ROOT");
        snprintf(args, sizeof args, "%s %s/tests/runtime/train_ref.py json %s >/dev/null", PY,
                 root ? root : ".", path("step_5/manifest.json"));
        ZT_EQ_INT(system(args), 0);
    }
}

static void t_world_mismatch(void)
{
    ZrCkptReader *rd;
    ZT_EQ_INT(zr_ckpt_open(&rd, ck, -1, 0, 2), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "saved by 3 ranks; this run has 2") != NULL);
    ZT_CHECK(strstr(zr_train_error(), "mpirun -np 3") != NULL);
}

static void flip(const char *p, long off, int whence)
{
    FILE *f = fopen(p, "r+b");
    int c;
    fseek(f, off, whence);
    c = fgetc(f);
    fseek(f, off, whence);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static int refused(int rank, const char *needle1, const char *needle2)
{
    ZrCkptReader *rd;
    int rc = zr_ckpt_open(&rd, ck, 5, rank, W);
    if (rc == 0) { zr_ckpt_close(rd); printf("  accepted\n"); return 0; }
    if (!strstr(zr_train_error(), needle1) || (needle2 && !strstr(zr_train_error(), needle2))) {
        printf("  message: %s\n", zr_train_error());
        return 0;
    }
    return 1;
}

static void t_corruption(void)
{
    const char *s1 = path("step_5/rank_00001.zrs"), *s2 = path("step_5/rank_00002.zrs");
    struct stat st;
    char cmd[1200];
    flip(s1, 100, SEEK_SET); /* inside "master" */
    ZT_CHECK(refused(1, "rank_00001.zrs: blob master", "CRC32C"));
    ZT_CHECK(verify(-1, 0.0f) == 0);
    flip(s1, 100, SEEK_SET);
    ZT_CHECK(verify(-1, 0.0f));
    flip(s1, -60, SEEK_END); /* inside the footer's blob table */
    ZT_CHECK(refused(1, "rank_00001.zrs: footer CRC32C mismatch", NULL));
    flip(s1, -60, SEEK_END);
    stat(s2, &st);
    ZT_EQ_INT(truncate(s2, st.st_size - 10), 0);
    ZT_CHECK(refused(2, "rank_00002.zrs", "truncated"));
    ZT_EQ_INT(truncate(s2, st.st_size + 10), 0);
    ZT_CHECK(refused(2, "rank_00002.zrs", "grown"));
    ZT_EQ_INT(truncate(s2, st.st_size), 0); /* the cut bytes were the trailer: now zeros */
    ZT_CHECK(refused(2, "rank_00002.zrs", NULL));
    /* a shard from another save with a valid footer: the manifest's CRC catches it */
    snprintf(cmd, sizeof cmd, "cp %s %s.bak && cp %s %s", s2, s2, path("step_5/rank_00000.zrs"), s2);
    ZT_EQ_INT(system(cmd), 0);
    ZT_CHECK(refused(2, "rank_00002.zrs", NULL));
    ZT_EQ_INT(unlink(s2), 0);
    ZT_CHECK(refused(2, "rank_00002.zrs", "cannot open"));
    ZT_EQ_INT(save(5, 0.0f, 1), 0); /* re-save of the same step repairs it */
    ZT_CHECK(verify(5, 0.0f));
    ZT_EQ_INT(count_tmp_files(ck), 0);
}

static void t_interrupted_save(void)
{
    ZrCkptWriter *w;
    int64_t step = -1;
    float x[4] = { 1, 2, 3, 4 };
    /* crash after every shard but before rank 0's manifest */
    ZT_EQ_INT(save(6, 0.5f, 0), 0);
    ZT_EQ_INT(zr_ckpt_latest(ck, &step), 0);
    ZT_EQ_INT(step, 5);
    ZT_CHECK(verify(-1, 0.0f));
    ZT_CHECK(access(path("step_6"), F_OK) != 0);
    /* crash in the middle of a shard: its temp file is left behind, nothing else changes */
    ZT_EQ_INT(zr_ckpt_writer_begin(&w, ck, 7, 0, W), 0);
    ZT_EQ_INT(zr_ckpt_add(w, "master", x, sizeof x), 0);
    ZT_EQ_INT(zr_ckpt_finish(ck, 7, W, NULL), -ENOENT); /* shards missing: refused */
    ZT_CHECK(strstr(zr_train_error(), "rank_00000.zrs") != NULL);
    ZT_EQ_INT(zr_ckpt_latest(ck, &step), 0);
    ZT_EQ_INT(step, 5);
    ZT_CHECK(verify(-1, 0.0f));
    zr_ckpt_writer_abort(w);
    /* the next complete save moves latest */
    ZT_EQ_INT(save(6, 0.5f, 1), 0);
    ZT_EQ_INT(zr_ckpt_latest(ck, &step), 0);
    ZT_EQ_INT(step, 6);
    ZT_CHECK(verify(-1, 0.5f));
    ZT_CHECK(verify(5, 0.0f)); /* older steps stay until the caller prunes them */
    /* bad meta is refused before anything moves */
    ZT_EQ_INT(zr_ckpt_finish(ck, 6, W, "not json"), -EINVAL);
}

/* Ranks as concurrent processes into a fresh tree (parents created by whoever comes first), then
** the caller's barrier (waitpid) and rank 0's finish. */
static void t_concurrent_ranks(void)
{
    enum { R = 4, N = 300000 };
    char d[200];
    pid_t pid[R];
    int ok = 1;
    snprintf(d, sizeof d, "%s/conc/deep/ck", dir);
    for (int r = 0; r < R; r++) {
        if ((pid[r] = fork()) == 0) {
            ZrCkptWriter *w;
            float *m = malloc(N * sizeof *m);
            for (int i = 0; i < N; i++) m[i] = (float)(r * N + i);
            if (zr_ckpt_writer_begin(&w, d, 3, r, R) || zr_ckpt_add(w, "master", m, N * sizeof *m) ||
                zr_ckpt_writer_commit(w)) {
                printf("  rank %d: %s\n", r, zr_train_error());
                _exit(1);
            }
            _exit(0);
        }
    }
    for (int r = 0; r < R; r++) {
        int st = 1;
        waitpid(pid[r], &st, 0);
        ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    ZT_CHECK(ok);
    ZT_EQ_INT(zr_ckpt_finish(d, 3, R, NULL), 0);
    for (int r = 0; r < R; r++) {
        ZrCkptReader *rd;
        float *m = malloc(N * sizeof *m);
        int bad = 0;
        ZT_EQ_INT(zr_ckpt_open(&rd, d, -1, r, R), 0);
        if (rd) {
            ZT_EQ_INT(zr_ckpt_get(rd, "master", m, N * sizeof *m), 0);
            for (int i = 0; i < N; i++) bad += m[i] != (float)(r * N + i);
            ZT_EQ_INT(bad, 0);
            ZT_EQ_STR(zr_ckpt_meta(rd), "{}");
            zr_ckpt_close(rd);
        }
        free(m);
    }
}

static void t_misuse(void)
{
    ZrCkptWriter *w;
    char longname[80];
    ZT_EQ_INT(zr_ckpt_writer_begin(&w, ck, 9, 3, W), -EINVAL);
    ZT_EQ_INT(zr_ckpt_writer_begin(&w, ck, 9, 0, W), 0);
    ZT_EQ_INT(zr_ckpt_add(w, "a", "x", 1), 0);
    ZT_EQ_INT(zr_ckpt_add(w, "a", "x", 1), -EINVAL);
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ZT_EQ_INT(zr_ckpt_add(w, longname, "x", 1), -EINVAL);
    zr_ckpt_writer_abort(w);
}

/* {===== tensor index, range reads under another partition (format 2) */

enum { NT = 3 };
static const char *const tname[NT] = {"a.weight", "b.bias", "c.weight"};
static const int tndim[NT] = {2, 1, 1};
static const int64_t tshape[NT][2] = {{300, 150}, {7, 0}, {100003, 0}};
static int64_t tnumel(int t) { return tshape[t][0] * (tndim[t] > 1 ? tshape[t][1] : 1); }
/* the value of element i of tensor t in state blob `part` (0 master, 1 adam_m): exact in fp32 */
static float tval(int part, int t, int64_t i) { return (float)(t * 1000000 + i) + (part ? 0.5f : 0.0f); }

/* Writes a checkpoint of the NT tensors at `step` in one of three layouts over w ranks: 3 = stage-3
** slices (ceil(n/w) per rank, padded), 1 = the flat concatenation cut in w parts (tensors straddle),
** 0 = every rank holds everything (stage 0). skip_rank/skip_tensor: leave that range out (-1: none).
** Returns 0 or the first error. */
static int write_layout(const char *d, int64_t step, int w, int layout, int skip_rank, int skip_tensor)
{
    int64_t total = 0;
    for (int t = 0; t < NT; t++) total += tnumel(t);
    for (int r = 0; r < w; r++) {
        ZrCkptTensor tt[NT];
        ZrCkptRange rr[NT];
        int nr = 0, rc;
        int64_t at = 0, flat = 0, lo = layout == 1 ? r * ((total + w - 1) / w) : 0;
        int64_t hi = layout == 1 ? (r + 1) * ((total + w - 1) / w) : total;
        memset(tt, 0, sizeof tt);
        for (int t = 0; t < NT; t++) {
            int64_t n = tnumel(t), first, cnt;
            snprintf(tt[t].name, sizeof tt[t].name, "%s", tname[t]);
            tt[t].ndim = tndim[t];
            tt[t].shape[0] = tshape[t][0];
            tt[t].shape[1] = tshape[t][1];
            if (layout == 3) {
                int64_t part = (n + w - 1) / w;
                first = r * part;
                cnt = first + part > n ? n - first : part;
                if (cnt > 0 && !(r == skip_rank && t == skip_tensor)) rr[nr++] = (ZrCkptRange){t, first, cnt, at};
                at += part;
            } else {
                int64_t a = flat > lo ? flat : lo, b = flat + n < hi ? flat + n : hi;
                if (b > a && !(r == skip_rank && t == skip_tensor)) rr[nr++] = (ZrCkptRange){t, a - flat, b - a, a - lo};
                flat += n;
            }
        }
        int64_t nel = layout == 3 ? at : hi - lo;
        float *buf = calloc((size_t)nel + 1, 4);
        ZrCkptWriter *wr;
        if (!buf) return -ENOMEM;
        if ((rc = zr_ckpt_writer_begin(&wr, d, step, r, w)) != 0) { free(buf); return rc; }
        rc = zr_ckpt_add_index(wr, tt, NT, rr, nr, 4);
        for (int part = 0; part < 2 && !rc; part++) {
            for (int k = 0; k < nr; k++)
                for (int64_t i = 0; i < rr[k].n; i++) buf[rr[k].at + i] = tval(part, rr[k].tensor, rr[k].first + i);
            rc = zr_ckpt_blob_begin(wr, part ? "adam_m" : "master");
            for (int64_t o = 0; o < nel && !rc; o += 1001)   /* odd pieces across chunk boundaries */
                rc = zr_ckpt_blob_write(wr, buf + o, (size_t)(nel - o < 1001 ? nel - o : 1001) * 4);
            if (!rc) rc = zr_ckpt_blob_end(wr);
        }
        free(buf);
        if (rc) { zr_ckpt_writer_abort(wr); return rc; }
        if ((rc = zr_ckpt_writer_commit(wr)) != 0) return rc;
    }
    return zr_ckpt_finish(d, step, w, "{\"name\": \"t\"}");
}

/* Reads tensor ranges (whole tensors and pseudo-random pieces) and compares with tval. */
static int read_check(ZrCkptSet *s, int prefer)
{
    static float buf[100003];
    int bad = 0;
    uint32_t x = 12345;
    for (int part = 0; part < 2; part++)
        for (int k = 0; k < 40; k++) {
            int t = k % NT;
            int64_t n = tnumel(t), first = 0, cnt = n;
            if (k >= NT) {
                x = x * 1664525u + 1013904223u;
                first = (int64_t)(x % (uint32_t)n);
                x = x * 1664525u + 1013904223u;
                cnt = 1 + (int64_t)(x % (uint32_t)(n - first));
            }
            if (zr_ckpt_set_read(s, part ? "adam_m" : "master", t, first, cnt, buf, prefer) != 0) {
                printf("  read: %s\n", zr_train_error());
                return 0;
            }
            for (int64_t i = 0; i < cnt; i++) bad += buf[i] != tval(part, t, first + i);
        }
    return bad == 0;
}

static void t_index_any_layout(void)
{
    const char *names[3] = {"s3_w3", "flat_w2", "copies_w2"};
    const int ws[3] = {3, 2, 2}, layout[3] = {3, 1, 0};
    for (int k = 0; k < 3; k++) {
        ZrCkptSet *s;
        int nt;
        ZT_EQ_INT(write_layout(path("%s", names[k]), 4, ws[k], layout[k], -1, -1), 0);
        ZT_CHECKM(zr_ckpt_set_open(&s, path("%s", names[k]), -1) == 0, "open %s: %s", names[k], zr_train_error());
        if (!s) continue;
        ZT_EQ_INT(zr_ckpt_set_world(s), ws[k]);
        ZT_EQ_INT(zr_ckpt_set_step(s), 4);
        ZT_EQ_INT(zr_ckpt_set_version(s), 2);
        const ZrCkptTensor *t = zr_ckpt_set_tensors(s, &nt);
        ZT_EQ_INT(nt, NT);
        ZT_CHECK(t && !strcmp(t[2].name, "c.weight") && t[0].shape[1] == 150 && t[0].numel == 45000);
        ZT_EQ_INT(zr_ckpt_set_find(s, "b.bias"), 1);
        ZT_CHECKM(read_check(s, 0) && read_check(s, 1), "layout %s reads back", names[k]);
        zr_ckpt_set_close(s);
    }
}

/* A range read touches only the chunks around it: 7 floats cost at most one 64 KiB chunk per shard
** holding them plus the chunk-CRC lists; the whole file is ~1.7 MB. */
static void t_index_reads_little(void)
{
    ZrCkptSet *s;
    float v[16];
    ZT_CHECKM(zr_ckpt_set_open(&s, path("s3_w3"), -1) == 0, "%s", zr_train_error());
    if (!s) return;
    ZT_EQ_INT(zr_ckpt_set_bytes_read(s), 0);
    ZT_EQ_INT(zr_ckpt_set_read(s, "master", 2, 50000, 10, v, 0), 0);
    ZT_CHECK(v[3] == tval(0, 2, 50003));
    ZT_CHECKM(zr_ckpt_set_bytes_read(s) <= 2 * 65536 + 4096, "read %llu bytes for 40",
              (unsigned long long)zr_ckpt_set_bytes_read(s));
    zr_ckpt_set_close(s);
}

/* A flipped byte fails the chunk that holds it, named, and nothing else: stage-0 copies let a reader
** that prefers the intact shard go on; --info's verify finds it. */
static void t_index_chunk_crc(void)
{
    ZrCkptSet *s;
    static float v[45000];
    uint64_t bytes;
    flip(path("copies_w2/step_4/rank_00000.zrs"), 64 + 4 * 1000, SEEK_SET);  /* master, tensor a */
    ZT_CHECKM(zr_ckpt_set_open(&s, path("copies_w2"), -1) == 0, "%s", zr_train_error());
    if (!s) return;
    ZT_EQ_INT(zr_ckpt_set_read(s, "master", 0, 0, 45000, v, 1), 0);     /* from rank 1: intact */
    ZT_CHECK(v[1000] == tval(0, 0, 1000));
    ZT_EQ_INT(zr_ckpt_set_read(s, "master", 0, 20000, 100, v, 0), 0);   /* another chunk of rank 0 */
    ZT_EQ_INT(zr_ckpt_set_read(s, "master", 0, 990, 20, v, 0), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "rank_00000.zrs") && strstr(zr_train_error(), "CRC32C"), "%s",
              zr_train_error());
    ZT_EQ_INT(zr_ckpt_set_verify(s, 1, &bytes), 0);
    ZT_EQ_INT(zr_ckpt_set_verify(s, 0, &bytes), -EINVAL);
    zr_ckpt_set_close(s);
}

/* A checkpoint whose shards together miss part of a tensor is refused at open, naming it. */
static void t_index_incomplete(void)
{
    ZrCkptSet *s;
    ZT_EQ_INT(write_layout(path("gap"), 2, 3, 3, 1, 2), 0);
    ZT_EQ_INT(zr_ckpt_set_open(&s, path("gap"), -1), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "c.weight") && strstr(zr_train_error(), "incomplete"), "%s",
              zr_train_error());
}

/* Format 1, written here byte by byte from its definition: the same-plan reader still loads it; the
** set reader opens it (version 1, no tensor index) and refuses range reads. */
static void t_format1(void)
{
    uint8_t f[64 + 40 + 72 + 48];
    float m[10];
    char d[300], p[400];
    ZrCkptReader *rd;
    ZrCkptSet *s;
    int nt;
    FILE *fp;
    memset(f, 0, sizeof f);
    for (int i = 0; i < 10; i++) m[i] = (float)i * 1.5f;
    memcpy(f, m, 40);
    uint8_t *e = f + 104, *t = f + 176;
    memcpy(e, "master", 6);
    e[48] = 0;                                                          /* offset 0 */
    e[56] = 40;                                                         /* bytes */
    uint32_t c = zr_crc32c(0, m, 40);
    memcpy(e + 64, &c, 4);
    t[0] = 1;                                                           /* nblobs */
    t[4] = 1;                                                           /* version */
    t[12] = 1;                                                          /* world */
    t[16] = 7;                                                          /* step */
    t[24] = 104;                                                        /* table offset */
    uint32_t fc = zr_crc32c(0, e, 72 + 32);
    memcpy(t + 32, &fc, 4);
    memcpy(t + 40, "ZRCKPT01", 8);
    snprintf(d, sizeof d, "%s/v1/step_7", ck);
    snprintf(p, sizeof p, "mkdir -p %s", d);
    if (system(p) != 0) { ZT_CHECK(0); return; }
    snprintf(p, sizeof p, "%s/rank_00000.zrs", d);
    fp = fopen(p, "wb"); fwrite(f, 1, sizeof f, fp); fclose(fp);
    snprintf(p, sizeof p, "%s/manifest.json", d);
    fp = fopen(p, "w");
    fprintf(fp, "{\"format\": \"zrt-checkpoint\", \"version\": 1, \"step\": 7, \"world\": 1, \"shards\": "
            "[{\"rank\": 0, \"file\": \"rank_00000.zrs\", \"bytes\": %zu, \"footer_crc32c\": %u, "
            "\"blobs\": {\"master\": 40}}], \"meta\": {}}\n", sizeof f, fc);
    fclose(fp);
    ZT_CHECKM(zr_ckpt_open(&rd, d, -1, 0, 1) == 0, "%s", zr_train_error());
    if (rd) {
        float back[10];
        ZT_EQ_INT(zr_ckpt_get(rd, "master", back, 40), 0);
        ZT_CHECK(!memcmp(back, m, 40));
        zr_ckpt_close(rd);
    }
    ZT_CHECKM(zr_ckpt_set_open(&s, d, -1) == 0, "%s", zr_train_error());
    if (!s) return;
    ZT_EQ_INT(zr_ckpt_set_version(s), 1);
    ZT_CHECK(zr_ckpt_set_tensors(s, &nt) == NULL && nt == 0);
    ZT_EQ_INT(zr_ckpt_set_read(s, "master", 0, 0, 1, m, 0), -EINVAL);
    zr_ckpt_set_close(s);
}

/* }===== */

/* The streaming safetensors writer (consolidation) writes what zr_st_write writes, piece by piece;
** BF16 files read back as the rounded values; a wrong byte count is refused and leaves no file. */
static void t_st_stream(void)
{
    static float a[3000], b[7];
    ZrStTensor t[2] = {{"a.weight", 2, {60, 50}, a}, {"b.bias", 1, {7}, b}};
    const char *md[] = {"format", "pt", NULL};
    ZrStStream s;
    char p1[300], p2[300], p3[300];
    uint16_t h[3007];
    for (int i = 0; i < 3000; i++) a[i] = (float)i * 0.37f - 11.0f;
    for (int i = 0; i < 7; i++) b[i] = 1.0f / (float)(i + 1);
    snprintf(p1, sizeof p1, "%s/st_whole.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/st_stream.safetensors", dir);
    snprintf(p3, sizeof p3, "%s/st_bf16.safetensors", dir);
    ZT_EQ_INT(zr_st_write(p1, t, 2, md), 0);
    ZT_EQ_INT(zr_st_stream_begin(&s, p2, t, 2, ZR_DT_FP32, md), 0);
    for (int o = 0; o < 3000; o += 999) ZT_EQ_INT(zr_st_stream_write(&s, a + o, (size_t)(3000 - o < 999 ? 3000 - o : 999) * 4), 0);
    ZT_EQ_INT(zr_st_stream_write(&s, b, sizeof b), 0);
    ZT_EQ_INT(zr_st_stream_end(&s), 0);
    {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "cmp -s %s %s", p1, p2);
        ZT_CHECKM(system(cmd) == 0, "streamed file differs from zr_st_write's");
    }
    for (int i = 0; i < 3000; i++) h[i] = zr_f32_to_bf16(a[i]);
    for (int i = 0; i < 7; i++) h[3000 + i] = zr_f32_to_bf16(b[i]);
    ZT_EQ_INT(zr_st_stream_begin(&s, p3, t, 2, ZR_DT_BF16, NULL), 0);
    ZT_EQ_INT(zr_st_stream_write(&s, h, sizeof h), 0);
    ZT_EQ_INT(zr_st_stream_end(&s), 0);
    {
        ZrSt st;
        float back[3000];
        ZT_EQ_INT(zr_st_open(&st, p3), 0);
        ZT_EQ_INT(zr_st_read_range(&st, zr_st_find(&st, "a.weight"), 0, 3000, back), 0);
        int bad = 0;
        for (int i = 0; i < 3000; i++) bad += back[i] != zr_bf16_to_f32(h[i]);
        ZT_EQ_INT(bad, 0);
        ZT_EQ_INT(st.e[0].dtype, ZR_DT_BF16);
        zr_st_close(&st);
    }
    snprintf(p3, sizeof p3, "%s/st_short.safetensors", dir);
    ZT_EQ_INT(zr_st_stream_begin(&s, p3, t, 2, ZR_DT_FP32, NULL), 0);
    ZT_EQ_INT(zr_st_stream_write(&s, a, 100), 0);
    ZT_EQ_INT(zr_st_stream_end(&s), -EINVAL);
    ZT_CHECK(access(p3, F_OK) != 0);
}

int main(void)
{
    char cmd[160];
    snprintf(dir, sizeof dir, "/tmp/zt_ckpt_XXXXXX");
    if (!mkdtemp(dir)) { printf("mkdtemp failed\n"); return 1; }
    snprintf(ck, sizeof ck, "%s/runs/a/ckpt", dir); /* parents made on demand */
    ZT_RUN(t_crc32c);
    ZT_RUN(t_roundtrip);
    ZT_RUN(t_world_mismatch);
    ZT_RUN(t_corruption);
    ZT_RUN(t_interrupted_save);
    ZT_RUN(t_concurrent_ranks);
    ZT_RUN(t_misuse);
    ZT_RUN(t_index_any_layout);
    ZT_RUN(t_index_reads_little);
    ZT_RUN(t_index_chunk_crc);
    ZT_RUN(t_index_incomplete);
    ZT_RUN(t_format1);
    ZT_RUN(t_st_stream);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return zt_end();
}
