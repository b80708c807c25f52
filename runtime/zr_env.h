/*
** zr_env.h — who am I: rank, world size, local rank, from MPI and from the launcher's variables.
**
** Launchers name these differently: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE),
** Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), Slurm's srun (SLURM_PROCID,
** SLURM_NTASKS, SLURM_LOCALID). zr_env_read() reads every family present and refuses
** disagreement between them (a wrapper script that exports RANK=0 on every node is a classic
** silent bug); zr_env_from_mpi() then checks the result against MPI itself.
*/
#ifndef ZR_ENV_H
#define ZR_ENV_H
#include <stddef.h>

typedef struct ZrEnv {
    int rank, world;          /* global rank in [0, world) */
    int local_rank;           /* rank on this node (selects the GPU); -1 if unknown */
    int local_world;          /* ranks on this node; -1 if unknown */
    const char *source;       /* "mpi", "torchrun", "ompi", "slurm" or "default" (static string) */
} ZrEnv;

/*
** Fills *e from an environment. envp: NULL-terminated "NAME=value" array, or NULL for the
** process environment. With no family present: rank 0, world 1, local 0/1, source "default".
** Returns 0; -EINVAL when a value is not an integer, out of range (rank >= world, world < 1), or
** two families disagree; the reason goes to err (if errsz > 0) and nothing to stderr.
*/
int zr_env_read(ZrEnv *e, const char *const *envp, char *err, size_t errsz);

/*
** After MPI_Init: rank/world from MPI_COMM_WORLD, local rank/world from an
** MPI_COMM_TYPE_SHARED split, then checked against zr_env_read(NULL). Source "mpi".
** Returns 0, -EINVAL on a disagreement (message in err), -ENOTCONN if MPI is not initialised.
*/
int zr_env_from_mpi(ZrEnv *e, char *err, size_t errsz);
#endif
