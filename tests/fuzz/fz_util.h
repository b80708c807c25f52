/*
** fz_util.h — shared by the libFuzzer harnesses: a private scratch directory (under $TMPDIR, /dev/shm
** when it exists, so the readers' open/mmap paths run on real files without touching a disk) and
** writing one input to a file there. The readers under test take paths, not buffers, so every input
** goes through the file system exactly as a user's file would.
*/
#ifndef FZ_UTIL_H
#define FZ_UTIL_H
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char fz_dir[256];

static inline void fz_rm_tree(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    char p[1024];
    struct stat st;
    if (!dp) return;
    while ((e = readdir(dp)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) fz_rm_tree(p);
        else unlink(p);
    }
    closedir(dp);
    rmdir(d);
}

static inline void fz_cleanup(void) { if (fz_dir[0]) fz_rm_tree(fz_dir); }

static inline const char *fz_scratch(void)
{
    if (!fz_dir[0]) {
        const char *t = getenv("TMPDIR");
        struct stat st;
        if (!t || !*t) t = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(fz_dir, sizeof fz_dir, "%s/zgen-fuzz.XXXXXX", t);
        if (!mkdtemp(fz_dir)) { perror("mkdtemp"); abort(); }
        atexit(fz_cleanup);
    }
    return fz_dir;
}

/* Writes data[size] to path (truncating); aborts on failure, which is the harness's fault. */
static inline void fz_write(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const uint8_t *p = data;
    if (fd < 0) { perror(path); abort(); }
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) { perror(path); abort(); }
        p += w;
        size -= (size_t)w;
    }
    close(fd);
}

/* Little-endian fields taken off the front of an input (0 when it runs out). */
static inline uint64_t fz_take(const uint8_t **data, size_t *size, int bytes)
{
    uint64_t v = 0;
    for (int k = 0; k < bytes && *size; k++, (*data)++, (*size)--) v |= (uint64_t)**data << 8 * k;
    return v;
}
#endif
