/*
** t_readers_edge.c — regression cases from fuzzing the runtime's file readers (tests/fuzz/): each
** input once made a reader misbehave under ASan/UBSan and must now get a clean, named error.
** - zr_data_open with seq_len INT_MAX on a small file: "need at least seq_len + 2" overflowed int
**   (UBSan: signed integer overflow in runtime/zr_data.c; found by fz_data).
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zr_data.h"
#include "zr_err.h"
#include "zt.h"

static void t_data_seq_len_int_max(void)
{
    char path[] = "/tmp/zt_readers_XXXXXX";
    int fd = mkstemp(path);
    static const char tokens[12] = "abcdefghijkl";
    ZrData d;
    ZT_CHECK(fd >= 0 && write(fd, tokens, sizeof tokens) == (ssize_t)sizeof tokens);
    close(fd);
    ZT_EQ_INT(zr_data_open(&d, path, INT_MAX), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "need at least 2147483649") && strstr(zr_train_error(), path),
              "message: %s", zr_train_error());
    unlink(path);
}

int main(void)
{
    ZT_RUN(t_data_seq_len_int_max);
    return zt_end();
}
