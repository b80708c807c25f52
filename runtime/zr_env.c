/*
** zr_env.c — rank / world / local rank from the launcher's variables and from MPI, cross-checked.
**
** Every family of variables present is read and compared; the first one present (torchrun, then
** Open MPI, then Slurm) names the source. A launcher leaving a stale family behind (srun inside
** an allocation that exports SLURM_* to an mpirun job) shows up as a disagreement, which is an
** error with both values named rather than two processes believing they are rank 0.
*/
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "zr_env.h"           /* defines: ZrEnv */

extern char **environ;

typedef struct Family {
    const char *source;
    const char *rank, *world, *local, *local_world;  /* variable names; NULL = not provided */
} Family;

static const Family families[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};
enum { NFAM = sizeof families / sizeof families[0] };

static void seterr(char *err, size_t errsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errsz, const char *fmt, ...)
{
    if (!err || errsz == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

static const char *lookup(const char *const *envp, const char *name)
{
    if (!name) return NULL;
    if (!envp) return getenv(name);
    size_t len = strlen(name);
    for (const char *const *e = envp; *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return NULL;
}

/* -1: absent; 0: parsed into *out; -EINVAL: present but not a non-negative int. */
static int parse_int(const char *s, int *out)
{
    if (!s) return -1;
    if (!*s) return -EINVAL;
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || x < 0 || x > INT_MAX) return -EINVAL;
    *out = (int)x;
    return 0;
}

/* Reads one family into e (fields it lacks stay -1). Returns 1 if present, 0 if not, <0 bad. */
static int read_family(const char *const *envp, const Family *f, ZrEnv *e, char *err,
                       size_t errsz)
{
    const char *names[4] = {f->rank, f->world, f->local, f->local_world};
    int *fields[4] = {&e->rank, &e->world, &e->local_rank, &e->local_world};
    int present = 0;
    for (int i = 0; i < 4; i++) {
        *fields[i] = -1;
        int rc = parse_int(lookup(envp, names[i]), fields[i]);
        if (rc == -EINVAL) {
            seterr(err, errsz, "%s=%s is not a non-negative integer", names[i],
                   lookup(envp, names[i]));
            return -EINVAL;
        }
        if (rc == 0) present = 1;
    }
    if (!present) return 0;
    if (e->rank < 0 || e->world < 0) {
        seterr(err, errsz, "%s and %s must be set together", f->rank, f->world);
        return -EINVAL;
    }
    if (e->world < 1 || e->rank >= e->world) {
        seterr(err, errsz, "%s=%d is not below %s=%d", f->rank, e->rank, f->world, e->world);
        return -EINVAL;
    }
    if (e->local_world >= 0 && (e->local_world < 1 || e->local_world > e->world)) {
        seterr(err, errsz, "%s=%d is not in 1..%s=%d", f->local_world, e->local_world,
               f->world, e->world);
        return -EINVAL;
    }
    if (e->local_rank >= 0 && e->local_world >= 0 && e->local_rank >= e->local_world) {
        seterr(err, errsz, "%s=%d is not below %s=%d", f->local, e->local_rank,
               f->local_world, e->local_world);
        return -EINVAL;
    }
    if (e->local_rank > e->rank) {
        seterr(err, errsz, "%s=%d exceeds %s=%d", f->local, e->local_rank, f->rank, e->rank);
        return -EINVAL;
    }
    e->source = f->source;
    return 1;
}

/* Compares field a (from source sa) with b (from sb); -1 means unknown and agrees with all. */
static int agree(const char *what, int a, const char *sa, int b, const char *sb, char *err,
                 size_t errsz)
{
    if (a < 0 || b < 0 || a == b) return 0;
    seterr(err, errsz, "%s disagrees: %d from %s, %d from %s", what, a, sa, b, sb);
    return -EINVAL;
}

static int agree_all(const ZrEnv *x, const ZrEnv *y, char *err, size_t errsz)
{
    if (agree("rank", x->rank, x->source, y->rank, y->source, err, errsz) ||
        agree("world size", x->world, x->source, y->world, y->source, err, errsz) ||
        agree("local rank", x->local_rank, x->source, y->local_rank, y->source, err, errsz) ||
        agree("local world size", x->local_world, x->source, y->local_world, y->source, err,
              errsz))
        return -EINVAL;
    return 0;
}

int zr_env_read(ZrEnv *e, const char *const *envp, char *err, size_t errsz)
{
    if (!e) return -EINVAL;
    ZrEnv first = {0, 1, 0, 1, "default"};
    int have = 0;
    for (int i = 0; i < NFAM; i++) {
        ZrEnv f;
        int rc = read_family(envp, &families[i], &f, err, errsz);
        if (rc < 0) return rc;
        if (rc == 0) continue;
        if (!have) { first = f; have = 1; continue; }
        if (agree_all(&first, &f, err, errsz)) return -EINVAL;
        if (first.local_rank < 0) first.local_rank = f.local_rank;
        if (first.local_world < 0) first.local_world = f.local_world;
    }
    if (have && first.world == 1) {        /* one process: the locals are known */
        if (first.local_rank < 0) first.local_rank = 0;
        if (first.local_world < 0) first.local_world = 1;
    }
    *e = first;
    return 0;
}

int zr_env_from_mpi(ZrEnv *e, char *err, size_t errsz)
{
    int inited = 0, finalized = 0;
    if (!e) return -EINVAL;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        seterr(err, errsz, "MPI is not initialised");
        return -ENOTCONN;
    }
    ZrEnv m = {0, 1, -1, -1, "mpi"}, v;
    MPI_Comm node;
    MPI_Comm_rank(MPI_COMM_WORLD, &m.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m.world);
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &m.local_rank);
        MPI_Comm_size(node, &m.local_world);
        MPI_Comm_free(&node);
    }
    int rc = zr_env_read(&v, NULL, err, errsz);
    if (rc < 0) return rc;
    if (strcmp(v.source, "default") != 0 && agree_all(&m, &v, err, errsz)) return -EINVAL;
    *e = m;
    return 0;
}
