/*
** zk_coll_stubs.h — the libzrt collectives, stubbed (-ENOSYS), for the GEMM tests that compile the GPU
** stand-in (templates/cuda_trainer/zr_gpu_emu.cpp) into themselves and never reach a collective:
** the stand-in's collective calls must still link, and stubs keep these tests free of MPI.
** Include it after zr_gpu_emu.cpp (it uses ZrComm, ZrDtype and ZrCollReq from there).
*/
#ifndef ZK_COLL_STUBS_H
#define ZK_COLL_STUBS_H
extern "C" {
int zr_comm_create(ZrComm **c) { *c = nullptr; return -ENOSYS; }
void zr_comm_destroy(ZrComm *c) { (void)c; }
int zr_comm_world(const ZrComm *c) { (void)c; return 1; }
int zr_all_gather(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
int zr_reduce_scatter(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
int zr_all_reduce(ZrComm *c, const void *s, void *r, int64_t n, ZrDtype d, ZrCollReq **q)
{ (void)c; (void)s; (void)r; (void)n; (void)d; (void)q; return -ENOSYS; }
}
#endif
