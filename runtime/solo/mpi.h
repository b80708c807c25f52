/*
** mpi.h (solo) — the part of MPI's C interface libzrt uses, for a world of one process, with no MPI
** installation behind it.
**
** Why: a one-GPU run needs no launcher and no peers, but libzrt's collectives, watchdog and rank
** discovery are written once, against MPI. Building them against this header (SOLO=1 builds; the
** include path puts runtime/solo first) keeps that one code path and drops the Open MPI dependency
** for machines that lack it (a lent GPU box, a laptop). Every call behaves as MPI specifies for a
** communicator of size 1: collectives copy the send buffer to the receive buffer, windows are
** process memory, requests complete at once. A run that expects more than one rank is refused
** where it always is (zr_env.c's cross-check against the plan's world size).
*/
#ifndef ZR_SOLO_MPI_H
#define ZR_SOLO_MPI_H
#include <stddef.h>
#include <stdint.h>

#define ZR_MPI_SOLO 1

typedef int MPI_Comm;
typedef int MPI_Datatype;       /* the element size in bytes, in the low byte; a type id above */
typedef int MPI_Op;
typedef int MPI_Info;
typedef int MPI_Request;
typedef int MPI_Errhandler;
typedef int MPI_Win;
typedef ptrdiff_t MPI_Aint;
typedef struct MPI_Status { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;
typedef void MPI_Comm_errhandler_function(MPI_Comm *, int *, ...);

#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 15
#define MPI_MAX_ERROR_STRING 256
#define MPI_COMM_NULL 0
#define MPI_COMM_WORLD 1
#define MPI_COMM_TYPE_SHARED 1
#define MPI_INFO_NULL 0
#define MPI_REQUEST_NULL 0
#define MPI_WIN_NULL 0
#define MPI_ERRHANDLER_NULL 0
#define MPI_ERRORS_ARE_FATAL 1
#define MPI_ERRORS_RETURN 2
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3
#define MPI_LOCK_EXCLUSIVE 1
#define MPI_LOCK_SHARED 2
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_IN_PLACE ((void *)1)

#define MPI_BYTE ((1 << 8) | 1)
#define MPI_INT ((2 << 8) | 4)
#define MPI_UNSIGNED ((3 << 8) | 4)
#define MPI_UINT ((3 << 8) | 4)
#define MPI_FLOAT ((4 << 8) | 4)
#define MPI_DOUBLE ((5 << 8) | 8)
#define MPI_UINT16_T ((6 << 8) | 2)
#define MPI_INT64_T ((7 << 8) | 8)
#define MPI_UINT64_T ((8 << 8) | 8)

#define MPI_SUM 1
#define MPI_MAX 2
#define MPI_MIN 3
#define MPI_LAND 4
#define MPI_LOR 5

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalized(int *flag);
int MPI_Finalize(void);
int MPI_Abort(MPI_Comm comm, int code);
int MPI_Error_string(int code, char *text, int *len);

int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out);
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler h);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *h);
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *h);
int MPI_Errhandler_free(MPI_Errhandler *h);

int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int MPI_Iallgather(const void *send, int scount, MPI_Datatype sdt, void *recv, int rcount,
                   MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req);
int MPI_Ialltoall(const void *send, int scount, MPI_Datatype sdt, void *recv, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req);
int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req);
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req);
int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status);

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win);
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                            MPI_Win *win);
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr);
int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler h);
int MPI_Win_lock(int type, int rank, int assert_, MPI_Win win);
int MPI_Win_unlock(int rank, MPI_Win win);
int MPI_Get(void *origin, int ocount, MPI_Datatype odt, int rank, MPI_Aint disp, int tcount,
            MPI_Datatype tdt, MPI_Win win);
int MPI_Win_free(MPI_Win *win);

#endif
