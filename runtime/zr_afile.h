/*
** zr_afile.h — files that appear whole or not at all: written to "<path>.tmp.<pid>", fsynced, renamed
** over path, and the directory fsynced, so a crash leaves either the old file or the new one.
** Used by checkpoints, safetensors exports, the trace and config.json.
*/
#ifndef ZR_AFILE_H
#define ZR_AFILE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ZrAfile {
    FILE *f;
    uint64_t bytes;             /* written so far */
    char path[1024];
    char tmp[1060];
} ZrAfile;

int zr_afile_open(ZrAfile *a, const char *path);
int zr_afile_write(ZrAfile *a, const void *data, size_t n);
int zr_afile_printf(ZrAfile *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flush, fsync, close, rename into place, fsync the directory. On error the temp file is removed. */
int zr_afile_commit(ZrAfile *a);
/* Close and remove the temp file. */
void zr_afile_abort(ZrAfile *a);
/* Whole buffer in one go. */
int zr_afile_put(const char *path, const void *data, size_t n);
/* fsync of the directory holding path (or of path itself when it is a directory). */
int zr_fsync_dir(const char *path);
#endif
