#!/usr/bin/env bash
# trainer_bundle.sh — an emitted trainer's `make bundle` (docs/GPU_BUNDLE.md): a folder that runs
# train-cuda on a GPU node that has the NVIDIA driver and nothing else of ours.
#   usage: trainer_bundle.sh TRAINER_DIR WORLD_SIZE     (run by the emitted Makefile)
#   BUNDLE_DIR        the folder to write (default TRAINER_DIR/bundle)
#   BUNDLE_STATIC=1   OpenBLAS and liburing linked statically where their .a exist (default); 0 puts
#                     their .so files in lib/ instead (smaller when several trainers share one lib/)
#   BUNDLE_CUDA_LIBS=1  cuBLAS, cuBLASLt, the CUDA runtime and NCCL copied into lib/ (default; about
#                     800 MB); 0 leaves them to the node (its CUDA 13 toolkit or Python wheels)
# A one-rank plan is built SOLO (runtime/solo/mpi.h: no MPI at all); a multi-rank plan links the
# build machine's Open MPI, which the node must provide with mpirun (NEEDS.txt says which library).
# The folder: train-cuda (stripped), lib/, run.sh (sets the library path, then execs train-cuda with
# its arguments; under mpirun each rank runs it), plan.txt, NEEDS.txt.
set -eu
dir=$1
ws=$2
out=${BUNDLE_DIR:-$dir/bundle}
static=${BUNDLE_STATIC:-1}
cuda_libs=${BUNDLE_CUDA_LIBS:-1}
LIBDIR=/usr/lib/x86_64-linux-gnu
cd "$dir"
args=()
[ "$ws" = 1 ] && args+=(SOLO=1)
if [ "$static" = 1 ]; then
  a=$(ls $LIBDIR/openblas-pthread/libopenblas.a $LIBDIR/libopenblas.a 2>/dev/null | head -1 || true)
  [ -n "$a" ] && args+=("BLAS_LIBS=$a")
  a=$(ls $LIBDIR/liburing.a 2>/dev/null | head -1 || true)
  [ -n "$a" ] && args+=("URING_LIBS=$a")
fi
# SOLO and MPI objects share their names: a bundle always builds train-cuda from clean objects
rm -rf cuda.obj train-cuda
make -s cuda "${args[@]}" EXTRA_LDFLAGS="${EXTRA_LDFLAGS:-} -Wl,-rpath,\$\$ORIGIN/lib" >/dev/null

rm -rf "$out" && mkdir -p "$out/lib"
strip -o "$out/train-cuda" train-cuda
cp plan.txt "$out/"
# every shared library outside glibc goes into lib/, except MPI (the node's mpirun must match its
# own library) and, with BUNDLE_CUDA_LIBS=0, CUDA's
left=()
while read -r name path; do
  case "$name" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*) continue ;;
    libmpi*|libopen-*|libpmix*|libprrte*|libhwloc*|libevent*|libucx*|libuc[pst]*|libfabric*)
      left+=("$name"); continue ;;
    libcublas*|libcudart*|libnccl*)
      if [ "$cuda_libs" != 1 ]; then left+=("$name"); continue; fi ;;
  esac
  [ -f "$path" ] || { echo "bundle: $name not found on this machine" >&2; exit 1; }
  cp -L "$path" "$out/lib/$name"
done < <(ldd train-cuda | awk '$2 == "=>" { print $1, $3 }')

cat > "$out/run.sh" <<'SH'
#!/bin/sh
# Runs this bundle's train-cuda with its arguments (under mpirun for a multi-rank plan; NEEDS.txt).
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/train-cuda" "$@"
SH
chmod +x "$out/run.sh"
{
  echo "train-cuda bundle: $(sed -n 's/^zgen plan: \([^ ]*\).*/\1/p' plan.txt | head -1) (world size $ws)"
  echo "needs: the NVIDIA driver R580 (580.65.06) or newer (the kernels are CUDA 13 cubin for sm_80/sm_90 and PTX)"
  if [ "$ws" = 1 ]; then
    echo "runs as: ./run.sh --data FILE [--steps N] ...   (one process; no MPI needed)"
  else
    echo "runs as: mpirun -np $ws ./run.sh --data FILE ...   (Open MPI 4.1 with mpirun on every node)"
  fi
  [ ${#left[@]} -eq 0 ] || echo "libraries left to the node: ${left[*]}"
  echo "built from zgen $(git -C "${ZGEN_ROOT:-.}" rev-parse --short HEAD 2>/dev/null || echo '?')"
} > "$out/NEEDS.txt"
echo "bundle: $out ($(du -sh "$out" | cut -f1)); $(sed -n 2p "$out/NEEDS.txt")"
