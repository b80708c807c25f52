/*
** zr_check.h — error checks for GENERATED PROGRAMS (the emitted trainer), after llm.c cudaCheck.
**
** libzrt functions return 0 or a negative errno and never exit. The trainer, which has nothing
** better to do with a failed primitive than stop, wraps each call:
**     ZR_CHECK(zr_arena_create(&host, ZR_TIER_HOST, bytes, regions, n_regions));
** On a negative result it prints
**     train.c:123: zr_arena_create(&host, ...) failed: Cannot allocate memory (-12)
**     ---> HINT: lower the memory the plan needs (offload, smaller buckets) or raise the limit
** and exits with status 1. These macros are the ONLY place in libzrt's headers where exit is
** allowed; library code must never use them. Inside an MPI job, exit without MPI_Finalize makes
** mpirun end the other ranks too.
*/
#ifndef ZR_CHECK_H
#define ZR_CHECK_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A one-line suggestion for the common negative errno values of libzrt. */
static inline const char *zr_check_hint(int rc)
{
    switch (-rc) {
    case ENOMEM: return "lower the memory the plan needs (offload, smaller buckets), or raise the "
                        "declared budget / ulimit; the message above names the tier";
    case ENOSPC: return "a file system is full (NVMe swap directory, --save directory or output): free space or point the path elsewhere";
    case EIO: return "an I/O or MPI error: the message above names the file or the collective";
    case EINVAL: return "a bad argument: the plan and the trainer disagree; regenerate with zgen";
    case ENOTSUP: return "this machine lacks the feature (CPU instruction set, O_DIRECT, ...)";
    case ETIMEDOUT: return "a peer stopped responding: check the other ranks' logs";
    case EOVERFLOW: return "a size exceeds what the primitive supports: use smaller buckets";
    case EFAULT: return "memory corruption found by ZR_DEBUG_MEM: the message names the region";
    case ENOENT: return "a file is missing: check the path given on the command line";
    default: return "see the message printed above";
    }
}

static inline void zr_check_fail(int rc, const char *what, const char *file, int line)
{
    fflush(stdout);
    fprintf(stderr, "%s:%d: %s failed: %s (%d)\n---> HINT: %s\n", file, line, what,
            strerror(rc < 0 ? -rc : rc), rc, zr_check_hint(rc));
    exit(1);
}

/* Evaluates call once; a negative result prints file:line, the call, the error, a HINT; exit 1. */
#define ZR_CHECK(call)                                                        \
    do {                                                                      \
        int zr_check_rc_ = (int)(call);                                       \
        if (zr_check_rc_ < 0) zr_check_fail(zr_check_rc_, #call, __FILE__, __LINE__); \
    } while (0)

/* For pointer-returning calls such as zr_arena_at: NULL is a failure (-EINVAL). */
#define ZR_CHECK_PTR(expr)                                                    \
    ((expr) ? (void)0 : zr_check_fail(-EINVAL, #expr, __FILE__, __LINE__))
#endif
