/*
** t_env.c — rank environment (zr_env.h): each launcher's variables, their cross-check, bad
** values, and MPI's own view (singleton MPI_Init, unless this binary runs under mpirun).
*/
#include <errno.h>
#include <string.h>
#include <mpi.h>
#include "zr_env.h"
#include "zt.h"

static char err[256];

static int rd(ZrEnv *e, const char *const *envp)
{
    err[0] = 0;
    return zr_env_read(e, envp, err, sizeof err);
}

static void t_default(void)
{
    const char *envp[] = {"PATH=/bin", "RANKING=3", NULL};
    ZrEnv e;
    ZT_EQ_INT(rd(&e, envp), 0);
    ZT_EQ_INT(e.rank, 0);
    ZT_EQ_INT(e.world, 1);
    ZT_EQ_INT(e.local_rank, 0);
    ZT_EQ_STR(e.source, "default");
}

static void t_torchrun(void)
{
    const char *envp[] = {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", NULL};
    ZrEnv e;
    ZT_EQ_INT(rd(&e, envp), 0);
    ZT_EQ_INT(e.rank, 5);
    ZT_EQ_INT(e.world, 8);
    ZT_EQ_INT(e.local_rank, 1);
    ZT_EQ_INT(e.local_world, 4);
    ZT_EQ_STR(e.source, "torchrun");
}

static void t_ompi(void)
{
    const char *envp[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3",
                    "OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=3", NULL};
    ZrEnv e;
    ZT_EQ_INT(rd(&e, envp), 0);
    ZT_EQ_INT(e.rank, 2);
    ZT_EQ_INT(e.world, 3);
    ZT_EQ_INT(e.local_rank, 2);
    ZT_EQ_STR(e.source, "ompi");
}

static void t_slurm_fills_local(void)
{
    /* Slurm has no local size; torchrun lacks LOCAL_RANK here: each fills the other's gap */
    const char *envp[] = {"SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_LOCALID=3",
                    "RANK=7", "WORLD_SIZE=16", NULL};
    ZrEnv e;
    ZT_EQ_INT(rd(&e, envp), 0);
    ZT_EQ_INT(e.rank, 7);
    ZT_EQ_INT(e.world, 16);
    ZT_EQ_INT(e.local_rank, 3);
    ZT_EQ_INT(e.local_world, -1);
    ZT_EQ_STR(e.source, "torchrun");
}

static void t_disagreement(void)
{
    const char *envp[] = {"RANK=0", "WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK=2",
                          "OMPI_COMM_WORLD_SIZE=4", NULL};
    ZrEnv e = {9, 9, 9, 9, "untouched"};
    ZT_EQ_INT(rd(&e, envp), -EINVAL);
    ZT_CHECKM(strstr(err, "rank disagrees: 0 from torchrun, 2 from ompi") != NULL, "err: %s", err);
    ZT_EQ_STR(e.source, "untouched");
    const char *envp2[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "OMPI_COMM_WORLD_RANK=1",
                     "OMPI_COMM_WORLD_SIZE=3", NULL};
    ZT_EQ_INT(rd(&e, envp2), -EINVAL);
    ZT_CHECKM(strstr(err, "world size disagrees") != NULL, "err: %s", err);
}

static void t_bad_values(void)
{
    ZrEnv e;
    const char *a[] = {"RANK=x1", "WORLD_SIZE=2", NULL};
    ZT_EQ_INT(rd(&e, a), -EINVAL);
    ZT_CHECKM(strstr(err, "RANK=x1") != NULL, "err: %s", err);
    const char *b[] = {"RANK=2", "WORLD_SIZE=2", NULL};
    ZT_EQ_INT(rd(&e, b), -EINVAL);
    ZT_CHECKM(strstr(err, "RANK=2 is not below WORLD_SIZE=2") != NULL, "err: %s", err);
    const char *c[] = {"RANK=1", NULL};
    ZT_EQ_INT(rd(&e, c), -EINVAL);
    const char *d[] = {"RANK=0", "WORLD_SIZE=0", NULL};
    ZT_EQ_INT(rd(&e, d), -EINVAL);
    const char *f[] = {"RANK=-1", "WORLD_SIZE=2", NULL};
    ZT_EQ_INT(rd(&e, f), -EINVAL);
    const char *g[] = {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2", NULL};
    ZT_EQ_INT(rd(&e, g), -EINVAL);
    const char *h[] = {"RANK=1", "WORLD_SIZE=99999999999", NULL};
    ZT_EQ_INT(rd(&e, h), -EINVAL);
    const char *i[] = {"RANK=", "WORLD_SIZE=2", NULL};
    ZT_EQ_INT(rd(&e, i), -EINVAL);
}

static void t_mpi(void)
{
    ZrEnv e;
    ZT_EQ_INT(zr_env_from_mpi(&e, err, sizeof err), -ENOTCONN);
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) ZT_SKIP("MPI_Init failed");
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ZT_EQ_INT(zr_env_from_mpi(&e, err, sizeof err), 0);
    ZT_EQ_INT(e.rank, rank);
    ZT_EQ_INT(e.world, world);
    ZT_CHECK(e.local_rank >= 0 && e.local_rank < e.local_world && e.local_world <= world);
    ZT_EQ_STR(e.source, "mpi");
    /* a wrapper exporting a wrong RANK is caught against MPI */
    setenv("RANK", "41", 1);
    setenv("WORLD_SIZE", "42", 1);
    ZT_EQ_INT(zr_env_from_mpi(&e, err, sizeof err), -EINVAL);
    ZT_CHECKM(strstr(err, "disagrees") != NULL, "err: %s", err);
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    MPI_Finalize();
}

int main(void)
{
    ZT_RUN(t_default);
    ZT_RUN(t_torchrun);
    ZT_RUN(t_ompi);
    ZT_RUN(t_slurm_fills_local);
    ZT_RUN(t_disagreement);
    ZT_RUN(t_bad_values);
    ZT_RUN(t_mpi);
    return zt_end();
}
