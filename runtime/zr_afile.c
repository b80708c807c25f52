/*
** zr_afile.c — atomic file replacement: temp file beside the target, fsync, rename, fsync of the
** directory. rename() within one directory is atomic on POSIX file systems; the two fsyncs make
** the new contents and the new name durable in that order, so after a crash a reader sees the old
** file or the complete new one, never a torn one.
*/
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_afile.h"
#include "zr_err.h"

int zr_fsync_dir(const char *path)
{
    char buf[1024];
    struct stat st;
    const char *dir = path;
    int fd, rc = 0;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (strlen(path) >= sizeof buf) return zr_train_fail(-ENAMETOOLONG, "%s: path too long", path);
        strcpy(buf, path);
        dir = dirname(buf);
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        int e = errno;
        return zr_train_fail(-e, "%s: cannot open directory: %s", dir, strerror(e));
    }
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        rc = zr_train_fail(-e, "%s: fsync of directory failed: %s", dir, strerror(e));
    }
    close(fd);
    return rc;
}

int zr_afile_open(ZrAfile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    if (strlen(path) >= sizeof a->path) return zr_train_fail(-ENAMETOOLONG, "%s: path too long", path);
    strcpy(a->path, path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        int e = errno;
        return zr_train_fail(-e, "%s: cannot create: %s", a->tmp, strerror(e));
    }
    return 0;
}

int zr_afile_write(ZrAfile *a, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, a->f) != n) {
        int e = errno ? errno : EIO;
        return zr_train_fail(-e, "%s: write failed after %llu bytes: %s", a->tmp,
                             (unsigned long long)a->bytes, strerror(e));
    }
    a->bytes += n;
    return 0;
}

int zr_afile_printf(ZrAfile *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vfprintf(a->f, fmt, ap);
    va_end(ap);
    if (n < 0) return zr_train_fail(-EIO, "%s: write failed", a->tmp);
    a->bytes += (uint64_t)n;
    return 0;
}

void zr_afile_abort(ZrAfile *a)
{
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp[0]) unlink(a->tmp);
}

int zr_afile_commit(ZrAfile *a)
{
    int e = 0;
    if (fflush(a->f) != 0) e = errno ? errno : EIO;
    else if (fsync(fileno(a->f)) != 0) e = errno;
    if (e) {
        zr_afile_abort(a);
        return zr_train_fail(-e, "%s: flush/fsync failed: %s", a->tmp, strerror(e));
    }
    if (fclose(a->f) != 0) {
        e = errno ? errno : EIO;
        a->f = NULL;
        unlink(a->tmp);
        return zr_train_fail(-e, "%s: close failed: %s", a->tmp, strerror(e));
    }
    a->f = NULL;
    if (rename(a->tmp, a->path) != 0) {
        e = errno;
        unlink(a->tmp);
        return zr_train_fail(-e, "%s: rename to %s failed: %s", a->tmp, a->path, strerror(e));
    }
    return zr_fsync_dir(a->path);
}

int zr_afile_put(const char *path, const void *data, size_t n)
{
    ZrAfile a;
    int rc = zr_afile_open(&a, path);
    if (rc) return rc;
    if ((rc = zr_afile_write(&a, data, n)) != 0) {
        zr_afile_abort(&a);
        return rc;
    }
    return zr_afile_commit(&a);
}
