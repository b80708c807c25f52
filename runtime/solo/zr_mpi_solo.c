/*
** zr_mpi_solo.c — MPI for a world of one process (runtime/solo/mpi.h says why). Linked only into
** SOLO=1 builds, never beside a real MPI library (the symbols are MPI's own names).
** For one rank MPI's collectives reduce to copies: a gather, an all-to-all or an all-reduce of one
** contribution is that contribution; a broadcast or barrier has nobody to wait for. Windows are
** calloc'd memory (MPI leaves a fresh window's contents undefined; zeros make every run alike).
*/
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WINS 64

static int inited, finalized;
static void *win_base[MAX_WINS];
static MPI_Aint win_size[MAX_WINS];
static int win_disp[MAX_WINS];

static size_t dt_bytes(MPI_Datatype dt) { return (size_t)(dt & 0xff); }

/* {===================================================================== set-up */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc; (void)argv;
    inited = 1;
    if (provided) *provided = required;
    return MPI_SUCCESS;
}

int MPI_Initialized(int *flag) { *flag = inited; return MPI_SUCCESS; }
int MPI_Finalized(int *flag) { *flag = finalized; return MPI_SUCCESS; }
int MPI_Finalize(void) { finalized = 1; return MPI_SUCCESS; }

/* MPI_Abort ends every process of the job; here that is this one, at once (no atexit handlers, as
** a peer's abort would not run them either). */
int MPI_Abort(MPI_Comm comm, int code)
{
    (void)comm;
    fflush(NULL);
    _exit(code ? code : 1);
}

int MPI_Error_string(int code, char *text, int *len)
{
    *len = snprintf(text, MPI_MAX_ERROR_STRING, "MPI error %d (one-process MPI of SOLO builds)", code);
    if (*len >= MPI_MAX_ERROR_STRING) *len = MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
}
/* }===================================================================== */

/* {===================================================================== communicators */
int MPI_Comm_rank(MPI_Comm comm, int *rank) { (void)comm; *rank = 0; return MPI_SUCCESS; }
int MPI_Comm_size(MPI_Comm comm, int *size) { (void)comm; *size = 1; return MPI_SUCCESS; }
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) { (void)comm; *out = MPI_COMM_WORLD + 1; return MPI_SUCCESS; }

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out)
{
    (void)comm; (void)type; (void)key; (void)info;
    *out = MPI_COMM_WORLD + 1;
    return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm) { *comm = MPI_COMM_NULL; return MPI_SUCCESS; }
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler h) { (void)comm; (void)h; return MPI_SUCCESS; }

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *h)
{
    (void)comm;
    *h = MPI_ERRORS_ARE_FATAL;
    return MPI_SUCCESS;
}

/* No call here ever fails, so a handler would never run: it is accepted and not kept. */
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *h)
{
    (void)fn;
    *h = MPI_ERRORS_RETURN;
    return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *h) { *h = MPI_ERRHANDLER_NULL; return MPI_SUCCESS; }
/* }===================================================================== */

/* {===================================================================== collectives */
static void copy_in(const void *send, void *recv, int count, MPI_Datatype dt)
{
    if (send != MPI_IN_PLACE && send != recv && count > 0)
        memmove(recv, send, (size_t)count * dt_bytes(dt));
}

int MPI_Barrier(MPI_Comm comm) { (void)comm; return MPI_SUCCESS; }

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    (void)buf; (void)count; (void)dt; (void)comm;
    return root == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    (void)op; (void)comm;
    copy_in(send, recv, count, dt);
    return MPI_SUCCESS;
}

int MPI_Iallgather(const void *send, int scount, MPI_Datatype sdt, void *recv, int rcount,
                   MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req)
{
    (void)rcount; (void)rdt; (void)comm;
    copy_in(send, recv, scount, sdt);
    *req = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int MPI_Ialltoall(const void *send, int scount, MPI_Datatype sdt, void *recv, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req)
{
    (void)rcount; (void)rdt; (void)comm;
    copy_in(send, recv, scount, sdt);
    *req = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    return MPI_Bcast(buf, count, dt, root, comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) { (void)comm; *req = MPI_REQUEST_NULL; return MPI_SUCCESS; }

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    (void)status;
    *req = MPI_REQUEST_NULL;
    *flag = 1;
    return MPI_SUCCESS;
}
/* }===================================================================== */

/* {===================================================================== windows */
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win)
{
    (void)info; (void)comm;
    *win = MPI_WIN_NULL;
    if (size < 0 || disp_unit <= 0) return MPI_ERR_OTHER;
    for (int w = 1; w < MAX_WINS; w++) {
        if (win_base[w]) continue;
        void *p = calloc(1, size ? (size_t)size : 1);
        if (!p) return MPI_ERR_OTHER;
        win_base[w] = p;
        win_size[w] = size;
        win_disp[w] = disp_unit;
        *(void **)baseptr = p;
        *win = w;
        return MPI_SUCCESS;
    }
    return MPI_ERR_OTHER;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                            MPI_Win *win)
{
    return MPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
}

static int valid_win(MPI_Win win) { return win > 0 && win < MAX_WINS && win_base[win]; }

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    if (!valid_win(win) || rank != 0) return MPI_ERR_OTHER;
    *size = win_size[win];
    *disp_unit = win_disp[win];
    *(void **)baseptr = win_base[win];
    return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler h) { (void)win; (void)h; return MPI_SUCCESS; }

int MPI_Win_lock(int type, int rank, int assert_, MPI_Win win)
{
    (void)type; (void)assert_;
    return valid_win(win) && rank == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int MPI_Win_unlock(int rank, MPI_Win win) { return valid_win(win) && rank == 0 ? MPI_SUCCESS : MPI_ERR_OTHER; }

int MPI_Get(void *origin, int ocount, MPI_Datatype odt, int rank, MPI_Aint disp, int tcount,
            MPI_Datatype tdt, MPI_Win win)
{
    (void)tcount; (void)tdt;
    if (!valid_win(win) || rank != 0) return MPI_ERR_OTHER;
    size_t off = (size_t)disp * (size_t)win_disp[win], n = (size_t)ocount * dt_bytes(odt);
    if (off + n > (size_t)win_size[win]) return MPI_ERR_OTHER;
    memcpy(origin, (char *)win_base[win] + off, n);
    return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win)
{
    if (valid_win(*win)) {
        free(win_base[*win]);
        win_base[*win] = NULL;
    }
    *win = MPI_WIN_NULL;
    return MPI_SUCCESS;
}
/* }===================================================================== */
