#!/usr/bin/env bash
# bundle.sh — `make bundle`: everything a lent GPU machine needs to run the GPU checks in one call,
# built here (docs/GPU_BUNDLE.md). The GPU box has the NVIDIA driver, the CUDA toolkit and PyTorch's
# cuBLAS/NCCL, but none of libyaml, Lua, liburing, Open MPI or OpenBLAS, and its start-up costs
# minutes of a 30-minute budget, so nothing is generated or compiled there:
#   - each trainer in BUNDLE_SPECS is generated for one rank and built as `make cuda SOLO=1`
#     (one-process MPI, runtime/solo/mpi.h) with OpenBLAS and liburing linked statically; the only
#     shared libraries left are glibc's, libgomp (copied in) and CUDA's (found there at run time);
#   - its plan.txt and `--predict --json` (the cost model's figures, labelled predictions) travel
#     beside it, so the check script can print measured against predicted;
#   - a byte-level corpus for the data.
# Output: gpu/bundle.tar.gz (git-ignored; pass `carry: ["gpu"]` to the device tool) and the command
# to run there: bash scripts/gpu_checks.sh gpu/bundle.tar.gz
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
SPECS=${BUNDLE_SPECS:-"specs/gpt2-124m-bf16.yaml specs/gpt2-124m.yaml specs/tiny.yaml"}
LIBDIR=/usr/lib/x86_64-linux-gnu
BLAS_A=$(ls $LIBDIR/openblas-pthread/libopenblas.a $LIBDIR/libopenblas.a 2>/dev/null | head -1 || true)
URING_A=$(ls $LIBDIR/liburing.a 2>/dev/null | head -1 || true)
[ -n "$BLAS_A" ] || { echo "bundle: no static OpenBLAS (libopenblas.a; Debian: libopenblas-pthread-dev)" >&2; exit 1; }
[ -n "$URING_A" ] || { echo "bundle: no static liburing (liburing.a; Debian: liburing-dev)" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "bundle: nvcc not on PATH (the CUDA toolkit builds train-cuda)" >&2; exit 1; }

W=out/bundle
rm -rf "$W" && mkdir -p "$W/stage/trainers" "$W/stage/lib" "$W/stage/data" gpu
make -s bin/zgen build/libzrt.a build/solo/libzrt.a
for spec in $SPECS; do
  name=$(basename "$spec" .yaml)
  dir=$W/src/$name
  echo "== $name: generate (world size 1), build train-cuda (SOLO)"
  bin/zgen "$spec" --world-size 1 -o "$dir" >/dev/null
  bin/zgen "$spec" --world-size 1 --predict --json -o "$W/predict/$name" > "$dir/predict.json"
  make -s -j2 -C "$dir" cuda SOLO=1 BLAS_LIBS="$BLAS_A" URING_LIBS="$URING_A" \
    EXTRA_LDFLAGS="-Wl,-rpath,\$\$ORIGIN/../../lib" >/dev/null
  # what the binary still needs from the machine: nothing of the libraries the box lacks
  if ldd "$dir/train-cuda" | grep -Ei 'libmpi|libopen-|liburing|libopenblas|libyaml|liblua|libgfortran'; then
    echo "bundle: $name/train-cuda still links a library the GPU box lacks (above)" >&2; exit 1
  fi
  mkdir -p "$W/stage/trainers/$name"
  strip -o "$W/stage/trainers/$name/train-cuda" "$dir/train-cuda"
  cp "$dir/plan.txt" "$dir/predict.json" "$W/stage/trainers/$name/"
done
cp -L "$(ldd "$W/src/$(basename "${SPECS%% *}" .yaml)/train-cuda" | awk '/libgomp/ {print $3}')" "$W/stage/lib/"
python3 scripts/make_corpus.py "$W/stage/data/train.bin" --tokens 400000 >/dev/null
python3 scripts/make_corpus.py "$W/stage/data/val.bin" --tokens 40000 --seed 4321 >/dev/null
git rev-parse HEAD > "$W/stage/COMMIT" 2>/dev/null || echo unknown > "$W/stage/COMMIT"
tar czf gpu/bundle.tar.gz -C "$W/stage" .
size=$(du -m gpu/bundle.tar.gz | cut -f1)
echo "bundle: gpu/bundle.tar.gz (${size} MiB; the device tool carries at most 64 MiB with the tree)"
echo "  on the GPU machine: bash scripts/gpu_checks.sh gpu/bundle.tar.gz   (carry: [\"gpu\"])"
