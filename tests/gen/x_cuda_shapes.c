/*
** x_cuda_shapes.c — prints the zk_shapes.h zgen bakes into the CUDA kernels for a spec
** (zg_cuda_shapes_h, gen/nvrtc.c), for every spec, including archs that have no train-cuda (llama,
** whose emitted folder has no cuda/): tests/cuda/t_llama_ptxas.sh compiles the llama kernels with
** NVRTC against it.
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
    /* the whole plan, as bin/zgen builds it: the shapes carry train-cuda's decisions (activation
    ** storage, attention kernel, device bytes, --check bounds; gen/cuda_dec.c), which read it */
    static ZgModel m;
    static ZgZero z;
    static ZgPlan p;
    const ZgNode *ds = zg_spec_load(argv[1], &m);
    if (zg_error_count()) return 1;
    zg_zero_load(ds, &m, &z);
    zg_check(&m, &z);
    if (zg_error_count() || !zg_model_build(&m, &p) || !zg_plan_build(&m, &z, &p)) return 1;
    char *s = zg_cuda_shapes_h(&p);
    fputs(s, stdout);
    free(s);
    return 0;
}
