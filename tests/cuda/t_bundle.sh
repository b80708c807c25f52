#!/usr/bin/env bash
# t_bundle.sh — an emitted trainer's `make bundle` (docs/GPU_BUNDLE.md). For a one-rank plan: the
# folder holds train-cuda, lib/, run.sh, plan.txt, NEEDS.txt; train-cuda links no MPI, OpenBLAS or
# liburing (SOLO, static); with only lib/ on the library path every library it needs resolves
# (CUDA's through its rpath here); run.sh starts it and, with no GPU here, --check says so and exits 1.
# For a two-rank plan NEEDS.txt says mpirun is needed and names the MPI library left to the node.
. "$(dirname "$0")/../lib.sh"
command -v nvcc >/dev/null || zt_skip_all t_bundle "needs the CUDA toolkit (nvcc)"
zt_build bin/zgen build/libzrt.a build/solo/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin/zgen specs/tiny.yaml --world-size 1 -o "$tmp/one" >/dev/null || { fail generate_one; zt_end; }
if BUNDLE_CUDA_LIBS=0 make -s -C "$tmp/one" bundle >"$tmp/one.log" 2>&1; then ok bundle_one_rank
else fail bundle_one_rank "$(tail -3 "$tmp/one.log")"; zt_end; fi
b=$tmp/one/bundle
check bundle_files [ -x "$b/train-cuda" -a -x "$b/run.sh" -a -f "$b/plan.txt" -a -f "$b/NEEDS.txt" -a -f "$b/lib/libgomp.so.1" ]
deps=$(env -i LD_LIBRARY_PATH="$b/lib" ldd "$b/train-cuda" 2>&1)
if ! grep -Eqi 'libmpi|libopenblas|liburing' <<<"$deps"; then ok bundle_links_no_mpi_blas_uring
else fail bundle_links_no_mpi_blas_uring "$(grep -Ei 'libmpi|libopenblas|liburing' <<<"$deps")"; fi
if ! grep -q 'not found' <<<"$deps"; then ok bundle_libs_resolve; else fail bundle_libs_resolve "$(grep 'not found' <<<"$deps")"; fi
out=$(cd "$tmp" && env -i PATH=/usr/bin:/bin "$b/run.sh" --check --data /nonexistent 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "no GPU" <<<"$out"; then ok bundle_starts_and_says_no_gpu
else fail bundle_starts_and_says_no_gpu "rc $rc: $out"; fi
check needs_says_no_mpi grep -q "no MPI needed" "$b/NEEDS.txt"

bin/zgen specs/tiny.yaml -o "$tmp/two" >/dev/null || { fail generate_two; zt_end; }
if BUNDLE_CUDA_LIBS=0 make -s -C "$tmp/two" bundle >"$tmp/two.log" 2>&1 \
   && grep -q "mpirun -np 2" "$tmp/two/bundle/NEEDS.txt" && grep -q "libmpi" "$tmp/two/bundle/NEEDS.txt"
then ok bundle_two_ranks_names_mpi
else fail bundle_two_ranks_names_mpi "$(cat "$tmp/two/bundle/NEEDS.txt" 2>/dev/null; tail -3 "$tmp/two.log")"; fi
zt_end
