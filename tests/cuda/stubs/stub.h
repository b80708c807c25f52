/* stub.h — between the stub driver (stub_api.cpp) and its emulated kernels (stub_kernels.cpp). */
#ifndef ZR_STUB_H
#define ZR_STUB_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
int zs_kernel_find(const char *name);                 /* index, or -1 */
unsigned zs_kernel_bound(int id);                     /* __launch_bounds__, 0 if none */
int zs_kernel_nparams(int id);
size_t zs_kernel_param_size(int id, int i);          /* bytes of parameter i */
int zs_kernel_launch(int id, const unsigned g[3], const unsigned b[3], size_t shmem, void **args, int arch);
#ifdef __cplusplus
}
#endif
#endif
