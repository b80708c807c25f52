/*
** x_cuda_shapes.c — prints the zk_shapes.h zgen bakes into the CUDA kernels for a spec
** (zg_cuda_shapes_h, gen/nvrtc.c), for every spec, including those whose trainer zgen does not emit
** yet (llama): tests/cuda/t_llama_ptxas.sh compiles the llama kernels with NVRTC against it.
** Usage: x_cuda_shapes SPEC.yaml > zk_shapes.h; exit 1 after zgen's errors on a bad spec.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zg.h"
#include "zg_nvrtc.h"
#include "zg_plan.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SPEC.yaml\n", argv[0]);
        return 2;
    }
    ZgModel m;
    memset(&m, 0, sizeof m);
    zg_spec_load(argv[1], &m);
    if (zg_error_count()) return 1;
    ZgPlan p;
    memset(&p, 0, sizeof p);
    p.model = &m;
    char *s = zg_cuda_shapes_h(&p);
    fputs(s, stdout);
    free(s);
    return 0;
}
