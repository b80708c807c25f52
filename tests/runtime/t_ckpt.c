/*
** t_ckpt.c — checkpoints: CRC32C known answers, a 3-rank save/load round trip, refusal of
** corrupted, truncated, grown, missing and foreign shards with the file named, and crash safety:
** an interrupted save leaves `latest` and the step it names intact.
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
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return zt_end();
}
