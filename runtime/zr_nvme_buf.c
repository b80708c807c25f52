/*
** zr_nvme_buf.c — the aligned, pinned buffers of O_DIRECT I/O (zr_nvme_alloc / zr_nvme_free in
** zr_nvme.h). No file state: the swap-file life (zr_nvme.c), the request engine's bounce buffers
** (zr_nvme_io.c) and the pipelined optimizer (zr_pipe.c) all take their memory here.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "zr_nvme.h"          /* defines: ZR_NVME_ALIGN */

static size_t rounded(size_t bytes)
{
    size_t a = ZR_NVME_ALIGN;
    return ((bytes ? bytes : 1) + a - 1) / a * a;
}

void *zr_nvme_alloc(size_t bytes)
{
    void *p = NULL;
    size_t n = rounded(bytes);
    if (posix_memalign(&p, ZR_NVME_ALIGN, n) != 0) return NULL;
    memset(p, 0, n);
    (void)mlock(p, n);        /* best effort: pinned when the memlock limit allows */
    return p;
}

void zr_nvme_free(void *p, size_t bytes)
{
    if (!p) return;
    (void)munlock(p, rounded(bytes));
    free(p);
}
