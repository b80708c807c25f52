/*
** zr_err.c — the per-thread error text of libzrt (runtime/zr_err.h). Its own module below every
** other: the file, data, checkpoint and log modules all report through it, so it depends on none
** of them.
*/
#include <stdarg.h>
#include <stdio.h>
#include "zr_err.h"

static _Thread_local char errbuf[1024];

const char *zr_train_error(void) { return errbuf; }

int zr_train_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return rc;
}
