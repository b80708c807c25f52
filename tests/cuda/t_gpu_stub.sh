#!/usr/bin/env bash
# t_gpu_stub.sh — runtime/zr_gpu_cuda.c, the real CUDA backend, runs end to end without a GPU against
# stub driver/cuBLAS/NCCL libraries (tests/cuda/stubs/: one shared library, opened as the driver
# through ZR_LIBCUDA and linked in place of libcublas/libcudart/libnccl), which check what the real
# ones would refuse and run the kernels through zr_simt.h. The kernel table is specs/tiny's, made by
# zgen (NVRTC); the driver is tests/cuda/x_gpu_stub.c. Checked:
#   - basic: module load (cubin for the exact SM), every kernel resolved, launches computed by the
#     emulated kernel (zd_sumsq_lanes, the device optimizer part's norm lanes, bit for bit against
#     the host's lane order), an event query (cuEventQuery: the speculative queue's poll), limits refused (block > 1024, block > __launch_bounds__, unknown kernel, bad
#     gemm leading dimension), pinned copies, events, streams, row-major sgemm, bf16 gemm_ex, dynamic shared memory above 48 KiB (attention_tc),
#     zr_gpu_gemm_lt through runtime/zr_gpu_blaslt.c and the stub cuBLASLt (opened through
#     ZR_LIBCUBLASLT): bias + residual, GELU with aux, GELU backward, bias gradient, one heuristic
#     query per shape, a bad aux leading dimension refused; NCCL init for one
#     rank and an all-reduce, a group of two all-gathers (ncclGroupStart/End: the stub runs the
#     members at the end; a host wait inside the group and an unbalanced end are refused), close;
#   - graphs (zr_gpu_graph.c against the stub's cuStreamBeginCapture/EndCapture/cuGraphLaunch, which
#     record and replay): a captured kernel + sgemm + gemm_ex + memset + copy replayed twice equals
#     the direct run bit for bit, nothing runs at capture, bytes counted per launch; a host wait,
#     a record, an event query and a pageable copy during a capture refused and the capture invalidated; capture
#     under sync-debug refused; a capture left open is ended by close;
#   - device memory: cuMemGetInfo's planted free and total through zr_gpu_mem_info, an allocation
#     beyond the free memory refused with CUDA_ERROR_OUT_OF_MEMORY;
#   - TF32: zr_gpu_set_tf32 off/on/off; the stub cuBLAS/cuBLASLt see PEDANTIC / COMPUTE_32F when off and
#     TF32_TENSOR_OP / COMPUTE_32F_FAST_TF32 when on, and compute accordingly (x_gpu_stub.c tf32);
#   - sm_86 device: no exact cubin, so the sm_80 PTX is loaded; sm_90: its own cubin;
#   - a CUDA 12.4 driver is refused at open with the driver to install (CUDA 13.0, R580);
#   - a kernel listed in the PTX but missing from the module is an error at open, not at launch;
#   - a faulting kernel is named under ZR_SYNC_DEBUG=1, and hinted at (last kernel) without it;
#   - an event that never completes answers a query with "not done" at once and ends the wait in
#     bounded time, naming it; with an NCCL collective in flight, zr_coll's watchdog names the
#     collective, NCCL is aborted, exit non-zero.
. "$(dirname "$0")/../lib.sh"
command -v mpicc >/dev/null || zt_skip_all gpu_stub "needs MPI"
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
[ -f "$CUDA_INC/cuda.h" ] && [ -f "$CUDA_INC/nccl.h" ] && [ -f "$CUDA_INC/cublas_v2.h" ] || zt_skip_all gpu_stub "needs the CUDA and NCCL headers"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! bin/zgen specs/tiny.yaml -o "$tmp/tiny" >"$tmp/log" 2>&1; then fail zgen_tiny "$(head -5 "$tmp/log")"; zt_end; fi
grep -q "not precompiled" "$tmp/log" && zt_skip_all gpu_stub "NVRTC not installed (no kernel table)"
out=$tmp/tiny/cuda
# What zgen emitted for tiny, counted from its kernel table (not pinned, so adding a kernel file does
# not break the test): modules = sm_80 cubin rows; kernels = .entry directives in the sm_80 PTX.
n_mod=$(grep -c '^    {"[a-z_0-9]*", 80, 0,' "$out/zg_kernels_bin.c")
n_kern=$(python3 - "$out/zg_kernels_bin.c" <<'PY'
import codecs, re, sys
src = open(sys.argv[1]).read()
n = 0
for body in re.findall(r'zk_\w+_sm80_ptx\[\d*\] =(.*?);\n', src, re.S):
    ptx = b"".join(codecs.escape_decode(x.encode())[0] for x in re.findall(r'"((?:[^"\\]|\\.)*)"', body))
    n += len(re.findall(rb'\.entry\s', ptx))
print(n)
PY
)
WARN="-Wall -Wextra -Werror"
CFLAGS="-std=c11 -O1 -g -D_GNU_SOURCE $WARN -Wshadow -Wundef -Wstrict-prototypes -Wmissing-prototypes ${EXTRA_CFLAGS:-}"
# (make test SAN=1 exports the sanitizer flags in EXTRA_CFLAGS/EXTRA_LDFLAGS: libzrt is built with them)
MPI_CFLAGS=$(pkg-config --cflags ompi-c)
RT_LIBS="$(pkg-config --libs liburing ompi-c) -fopenmp -lm -lpthread -ldl"
build() {
  g++ -std=c++17 -O1 -g -fPIC $WARN -Wno-unused-parameter -I"$CUDA_INC" -Iruntime -c tests/cuda/stubs/stub_api.cpp -o "$tmp/api.o" &&
  g++ -std=c++17 -O1 -g -fPIC $WARN -Itests/cuda/stubs -I"$out" -I"$out/kernels" -c tests/cuda/stubs/stub_kernels.cpp -o "$tmp/kern.o" &&
  g++ -shared -Wl,-soname,libzr_cuda_stub.so -o "$tmp/libzr_cuda_stub.so" "$tmp/api.o" "$tmp/kern.o" &&
  cc $CFLAGS -DZR_WITH_CUDA -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_gpu_cuda.c -o "$tmp/zr_gpu_cuda.o" &&
  cc $CFLAGS -DZR_WITH_CUDA -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_gpu_blaslt.c -o "$tmp/zr_gpu_blaslt.o" &&
  cc $CFLAGS -DZR_WITH_CUDA -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_gpu_coll.c -o "$tmp/zr_gpu_coll.o" &&
  cc $CFLAGS -DZR_WITH_CUDA -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_gpu_graph.c -o "$tmp/zr_gpu_graph.o" &&
  cc $CFLAGS -DZR_WITH_CUDA -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_gpu_state.c -o "$tmp/zr_gpu_state.o" &&
  cc $CFLAGS -DZR_WITH_NCCL -I"$CUDA_INC" $MPI_CFLAGS -Iruntime -c runtime/zr_coll_nccl.c -o "$tmp/zr_coll_nccl.o" &&
  cc -std=c11 -O1 -g $WARN -Iruntime -I"$out" $MPI_CFLAGS -c tests/cuda/x_gpu_stub.c -o "$tmp/x.o" &&
  cc -std=c11 -O1 -I"$out" -c "$out/zg_kernels_bin.c" -o "$tmp/blobs.o" &&
  cc -o "$tmp/x_gpu_stub" "$tmp/x.o" "$tmp/blobs.o" "$tmp/zr_gpu_cuda.o" "$tmp/zr_gpu_blaslt.o" "$tmp/zr_gpu_coll.o" "$tmp/zr_gpu_graph.o" "$tmp/zr_gpu_state.o" "$tmp/zr_coll_nccl.o" build/libzrt.a \
     -L"$tmp" -lzr_cuda_stub -Wl,-rpath,"$tmp" $RT_LIBS ${EXTRA_LDFLAGS:-}
}
if build >"$tmp/build.log" 2>&1; then ok build_against_stubs; else fail build_against_stubs; head -30 "$tmp/build.log"; zt_end; fi
export ZR_LIBCUDA=$tmp/libzr_cuda_stub.so
export ZR_LIBCUBLASLT=$tmp/libzr_cuda_stub.so
run() {   # run [VAR=value...] [scenario]
  local vars=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done
  timeout 120 env "${vars[@]}" "$tmp/x_gpu_stub" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
}
show() { echo "  rc $rc"; sed 's/^/  /' "$tmp/err" | tail -12; }

run ZR_STUB_SM=80 ZR_GPU_WAIT_TIMEOUT_S=30 && true
run_rc=$rc
if [ $run_rc -eq 0 ] && grep -q "basic ok" "$tmp/out" && grep -q "modules cubin $n_mod ptx 0" "$tmp/err" \
   && grep -q "refused as expected: kernel zd_crossentropy_fused: block (1024,1,1) has 1024 threads, more than the 512" "$tmp/err" \
   && grep -q "refused as expected: kernel zd_add_f32: block (2048,1,1) has 2048 threads, more than the 1024" "$tmp/err" \
   && grep -q "zr_stub: cuLaunchKernel(zd_add_f32): grid/block outside CUDA's limits" "$tmp/err" \
   && grep -q "refused as expected: cuLaunchKernel(zd_add_f32, grid (1,70000,1), block (256,1,1), 0 bytes shared): CUDA_ERROR_INVALID_VALUE" "$tmp/err" \
   && grep -q "refused as expected: cublasSgemm (2 x 3 x 4, ta 0 tb 1): CUBLAS_STATUS_INVALID_VALUE" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_gemm_ex: unsupported dtypes (A 1, B 0, C 0)" "$tmp/err" \
   && grep -q "gemm_ex 2; gemm_lt 5 (heuristics 4); captures 0 (0 operations), graph launches 0$" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_gemm_lt: aux (NULL, or ldaux below N or not a multiple of 8)" "$tmp/err" \
   && grep -q "refused as expected: cuFuncSetAttribute(zd_attention_tc_forward, MAX_DYNAMIC_SHARED_SIZE_BYTES, 245760): CUDA_ERROR_INVALID_VALUE" "$tmp/err" \
   && grep -q "$n_kern kernels" "$tmp/err" && [ "$(grep -c "uses pageable host memory" "$tmp/err")" = 1 ] \
   && grep -q "pageable async copies 2; nccl aborted 0; nccl groups 1 (2 collectives)" "$tmp/err" \
   && grep -q "refused as expected: the host waits inside an open collective group" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_group_end without zr_gpu_group_begin" "$tmp/err" \
   && grep -q "zd_sumsq_lanes: 4 lane sets equal the host's order bit for bit" "$tmp/err"
then ok basic_end_to_end; else fail basic_end_to_end; show; fi

run graph && true
if [ $rc -eq 0 ] && grep -q "graph ok" "$tmp/out" \
   && grep -q "refused as expected: zr_gpu_stream_sync (a host wait) while stream compute is capturing a graph (not allowed during a capture)" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_record (an event record) while stream compute is capturing a graph (not allowed on a capturing stream)" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_event_query (a host poll) while stream compute is capturing a graph" "$tmp/err" \
   && grep -q "refused as expected: the capture on stream compute was invalidated: zr_gpu_stream_sync" "$tmp/err" \
   && grep -q "refused as expected: device-to-host copy of 64 bytes with pageable host memory while stream compute" "$tmp/err" \
   && grep -q "refused as expected: zr_gpu_capture_begin under sync-debug" "$tmp/err" \
   && grep -q "captures 4 (10 operations), graph launches 2$" "$tmp/err"
then ok graph_capture_and_replay; else fail graph_capture_and_replay; show; fi

# Device memory (zr_gpu_mem_info, cuMemGetInfo): a card planted at 20000 MiB with a 500 MiB context
# reports 19500 MiB free; 64 MiB allocated takes exactly that; one byte more than is free is refused.
run ZR_STUB_TOTAL_MB=20000 ZR_STUB_CONTEXT_MB=500 meminfo && true
if [ $rc -eq 0 ] && grep -q "meminfo ok" "$tmp/out" && grep -q "device memory free 19500 MiB of 20000 MiB" "$tmp/err" \
   && grep -q "refused as expected: cuMemAlloc([0-9]* bytes): CUDA_ERROR_OUT_OF_MEMORY" "$tmp/err"
then ok device_memory_info_and_refusal; else fail device_memory_info_and_refusal; show; fi

# TF32 (zr_gpu_set_tf32, gen's ZK_TF32): off, on, off. Exact fp32 products when off (PEDANTIC math,
# COMPUTE_32F), TF32-rounded inputs when on (TF32_TENSOR_OP math for cublasSgemm, COMPUTE_32F_FAST_TF32
# for cublasGemmEx and cuBLASLt), each against its own double reference and apart from the other;
# bf16 gemm_ex keeps DEFAULT math in both.
run tf32 && true
if [ $rc -eq 0 ] && grep -q "tf32 ok" "$tmp/out" \
   && grep -q "stub math: sgemm exact 2 tf32 1; gemm_ex fp32 exact 2 tf32 1, 16-bit 3 (not DEFAULT math 0); cublasLt fp32 exact 2 tf32 1$" "$tmp/err"
then ok tf32_math_mode_and_compute_type; else fail tf32_math_mode_and_compute_type; show; fi

run ZR_STUB_SM=86 && true
if [ $rc -eq 0 ] && grep -q "modules cubin 0 ptx $n_mod" "$tmp/err"; then ok sm86_loads_sm80_ptx; else fail sm86_loads_sm80_ptx; show; fi
run ZR_STUB_SM=90 && true
if [ $rc -eq 0 ] && grep -q "modules cubin $n_mod ptx 0" "$tmp/err" && grep -q "(sm_90)" "$tmp/err"; then ok sm90_loads_its_cubin; else fail sm90_loads_its_cubin; show; fi

"$tmp/x_gpu_stub" open >/dev/null 2>&1   # (warm)
timeout 60 env ZR_STUB_DRIVER=12040 "$tmp/x_gpu_stub" open >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 4 ] && grep -q "driver supports CUDA 12.4, but the kernels were compiled by CUDA 13.0's NVRTC: install a driver for CUDA 13.0 or newer (Linux: R580" "$tmp/err" \
   && grep -q "modules cubin 0 ptx 0" "$tmp/err"
then ok old_driver_refused_with_message; else fail old_driver_refused_with_message; show; fi

# A kernel that the PTX lists but the loaded module lacks: renamed in the sm_80 cubin's symbol table
# (same length), so the exact-SM module misses zd_add_f32 and open must fail naming it.
python3 - "$out/zg_kernels_bin.c" "$tmp/blobs_missing.c" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r'(static const unsigned char zk_convert_sm80_cubin\[\d+\] =)(.*?);\n', s, re.S)
body = m.group(2)
new = body.replace('zd_add_f32\\000', 'zd_add_f3X\\000')
if new == body: sys.exit("name not found in the cubin literal")
open(sys.argv[2], 'w').write(s[:m.start(2)] + new + s[m.end(2):])
PY
if cc -std=c11 -O1 -I"$out" -c "$tmp/blobs_missing.c" -o "$tmp/blobs_missing.o" 2>"$tmp/cc.log" &&
   cc -o "$tmp/x_missing" "$tmp/x.o" "$tmp/blobs_missing.o" "$tmp/zr_gpu_cuda.o" "$tmp/zr_gpu_blaslt.o" "$tmp/zr_gpu_coll.o" "$tmp/zr_gpu_graph.o" "$tmp/zr_gpu_state.o" "$tmp/zr_coll_nccl.o" build/libzrt.a \
      -L"$tmp" -lzr_cuda_stub -Wl,-rpath,"$tmp" $RT_LIBS ${EXTRA_LDFLAGS:-} 2>>"$tmp/cc.log"; then
  timeout 60 "$tmp/x_missing" open >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -eq 4 ] && grep -q "open failed.*cuModuleGetFunction(zd_add_f32) in module convert: CUDA_ERROR_NOT_FOUND" "$tmp/err"
  then ok missing_kernel_fails_at_open; else fail missing_kernel_fails_at_open; show; fi
else fail missing_kernel_fails_at_open; head -5 "$tmp/cc.log"; fi

run ZR_SYNC_DEBUG=1 ZR_STUB_FAULT_KERNEL=zd_f32_to_16 fault && true
if [ $rc -eq 2 ] && grep -q "sync-debug: kernel zd_f32_to_16 (grid (1,1,1), block (64,1,1)) on stream compute faulted: CUDA_ERROR_ILLEGAL_ADDRESS" "$tmp/err"
then ok sync_debug_names_faulting_kernel; else fail sync_debug_names_faulting_kernel; show; fi
run ZR_STUB_FAULT_KERNEL=zd_f32_to_16 fault && true
if [ $rc -eq 2 ] && grep -q "waiting for stream compute: CUDA_ERROR_ILLEGAL_ADDRESS.*last kernel launched on this stream was zd_f32_to_16 (run with ZR_SYNC_DEBUG=1" "$tmp/err"
then ok fault_without_sync_debug_hints_last_kernel; else fail fault_without_sync_debug_hints_last_kernel; show; fi

t0=$(date +%s)
run ZR_STUB_HANG=1 ZR_GPU_WAIT_TIMEOUT_S=1 hang && true
dt=$(( $(date +%s) - t0 ))
if [ $rc -eq 3 ] && [ $dt -lt 30 ] && grep -q "waiting for an event recorded on stream nccl: not complete after 1 s" "$tmp/err" \
   && grep -q "event query while pending: not done" "$tmp/err"
then ok never_completing_event_ends; else fail never_completing_event_ends "${dt}s"; show; fi

t0=$(date +%s)
run ZR_STUB_HANG=1 ZR_COLL_TIMEOUT_S=1 ZR_GPU_WAIT_TIMEOUT_S=60 hang_coll && true
dt=$(( $(date +%s) - t0 ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $dt -lt 50 ] && grep -q "zr_coll: TIMEOUT after 1 s in all_reduce" "$tmp/err" && grep -q "zr_stub: ncclCommAbort" "$tmp/err"
then ok hung_collective_ends_with_watchdog; else fail hung_collective_ends_with_watchdog "${dt}s"; show; fi
zt_end
