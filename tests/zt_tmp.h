/*
** zt_tmp.h — scratch files for the C tests that need a real file system (swap files, checkpoints):
** a temporary directory per test binary under /tmp (the repo's disk here, so O_DIRECT works), paths
** inside it, and deterministic pseudo-random bytes to write there.
** Why a header: the NVMe and pipeline tests each set these up the same way; one copy keeps their
** directories and data alike. Header only, like zt.h (a test binary is one translation unit).
*/
#ifndef ZT_TMP_H
#define ZT_TMP_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Makes /tmp/zt_<tag>_XXXXXX into dir; 0, or -1 after perror. The test removes it at the end. */
static inline int zt_tmpdir_make(char *dir, size_t n, const char *tag)
{
    snprintf(dir, n, "/tmp/zt_%s_XXXXXX", tag);
    if (!mkdtemp(dir)) { perror("mkdtemp"); return -1; }
    return 0;
}

/* out = dir/name. */
static inline void zt_tmp_path(char *out, size_t n, const char *dir, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* dir/name in one of four rotating buffers, so a call may pass up to four such paths at once. */
static inline const char *zt_tmp_in(const char *dir, const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    zt_tmp_path(p[k], sizeof p[k], dir, name);
    return p[k];
}

/* Removes dir and everything the test left in it; says so if it cannot. */
static inline void zt_tmpdir_remove(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
}

/* n pseudo-random bytes (xorshift64), the same for the same seed. */
static inline void zt_fill_bytes(uint8_t *b, int64_t n, unsigned seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        b[i] = (uint8_t)x;
    }
}
#endif
