#!/usr/bin/env bash
# t_graphs.sh — train-cuda's CUDA graphs (templates/cuda_trainer/cuda_model.c, docs/CUDA_TRAINER.md,
# CUDA graphs) on the GPU stand-in: a small GPT-2 (2 layers) trained 3 steps of 2 micro-steps on 2
# ranks at ZeRO stages 0 and 3, fp32 and bf16, with graphs (the default) and with ZR_CUDA_GRAPHS=0:
#   - the step logs are identical, byte for byte, but for the timings (losses, gradient norms, loss
#     scales, skips, learning rates);
#   - the stand-in ran the same number of operations and moved the same bytes per link (a replay
#     enqueues exactly the captured work, and bytes count per launch, not at capture);
#   - graphs were used: at stage 0 every block call after the first two of its (layer, direction)
#     is a launch: 3 steps x 2 micro-steps x 2 layers x 2 directions = 24 calls per rank, of which
#     4 uncaptured first runs and 4 captures, so 20 graph launches per rank; at stage 3 at least one;
#     with ZR_CUDA_GRAPHS=0 none;
#   - --sync-debug runs uncaptured (no launch) with the same losses.
# The race checker is on in every run (the stand-in's default), so replays are checked too.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi graphs
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ZGEN_CACHE=${ZGEN_CACHE:-$tmp/cache}
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null
mkdir -p "$tmp/obj"

# gen STAGE DTYPE TAG: $tmp/TAG/out with train-cuda-emu built
gen() {
  local d=$tmp/$3 prec=""
  [ "$2" = bf16 ] && prec='"bf16": {"enabled": true},'
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOS
name: cg
model: {arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}
train: {seq_len: 16, world_size: 2, seed: 7}
deepspeed: ds.json
EOS
  cat >"$d/ds.json" <<EOS
{"train_batch_size": 12, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, $prec
 "zero_optimization": {"stage": $1, "reduce_bucket_size": 2500, "stage3_param_persistence_threshold": 100,
   "stage3_prefetch_bucket_size": 3000},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOS
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { tail -5 "$d/gen.log"; return 1; }
  # the stand-in's object depends only on the shapes and the activation storage (ZK_IO): built once each
  local obj=$tmp/obj/io$(sed -n 's/^#define ZK_IO \([0-9]\).*/\1/p' "$d/out/cuda/kernels/zk_shapes.h")
  mkdir -p "$obj"
  if [ -f "$obj/zr_gpu_emu.o" ]; then mkdir -p "$d/out/cuda-emu.obj"; cp "$obj/zr_gpu_emu.o" "$d/out/cuda-emu.obj/"; fi
  nice -n 10 bash tests/zt_make -s -j2 -C "$d/out" cuda-emu >"$d/make.log" 2>&1 || { grep -E "error|undefined" "$d/make.log" | head; return 1; }
  [ -f "$obj/zr_gpu_emu.o" ] || cp "$d/out/cuda-emu.obj/zr_gpu_emu.o" "$obj/"
}
# run TAG NAME [VAR=value...] [-- args]: train-cuda-emu on 2 ranks, 3 steps; log $tmp/TAG/NAME.jsonl
run() {
  local tag=$1 name=$2; shift 2
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  env ZR_GPU_EMU_VERBOSE=1 "${vars[@]}" mpirun --oversubscribe -np 2 "$tmp/$tag/out/train-cuda-emu" \
    --data "$tmp/corpus.bin" --steps 3 --threads 1 --quiet --log "$tmp/$tag/$name.jsonl" "$@" \
    >"$tmp/$tag/$name.out" 2>&1
}
# numbers TAG NAME: the step log without its timings (tokens_per_s, ms)
numbers() { sed 's/,"tokens_per_s":[^,}]*//; s/,"ms":[^,}]*//' "$tmp/$1/$2.jsonl"; }
# launches TAG NAME RANK: the stand-in's graph launches on that rank
launches() { sed -n "s/^emulated GPU (rank $3): \([0-9]*\) graph launches.*/\1/p" "$tmp/$1/$2.out"; }
# work TAG NAME RANK: operations run and bytes moved on that rank
work() { sed -n "s/^emulated GPU (rank $3): \(.* operations run.*\)/\1/p" "$tmp/$1/$2.out"; }

for cfg in "0 fp32" "0 bf16" "3 fp32" "3 bf16"; do
  set -- $cfg
  tag=s$1_$2
  if ! msg=$(gen "$1" "$2" "$tag" 2>&1); then fail "build_$tag" "$msg"; continue; fi
  if ! run "$tag" on || ! run "$tag" off ZR_CUDA_GRAPHS=0; then
    fail "run_$tag" "$(tail -3 "$tmp/$tag/on.out" "$tmp/$tag/off.out" | tr '\n' ' ')"; continue
  fi
  if [ -s "$tmp/$tag/on.jsonl" ] && [ "$(numbers "$tag" on)" = "$(numbers "$tag" off)" ]; then
    ok "losses_identical_graphs_on_off_$tag ($(grep -o '"loss":[0-9.e-]*' "$tmp/$tag/on.jsonl" | tr '\n' ' '))"
  else
    fail "losses_identical_graphs_on_off_$tag" "$(diff <(numbers "$tag" on) <(numbers "$tag" off) | head -4 | tr '\n' ' ')"
  fi
  for r in 0 1; do
    on=$(launches "$tag" on $r); off=$(launches "$tag" off $r)
    want_ok=0
    if [ "$1" = 0 ]; then [ "$on" = 20 ] && want_ok=1; else [ -n "$on" ] && [ "$on" -gt 0 ] && want_ok=1; fi
    if [ $want_ok = 1 ] && [ "$off" = 0 ]; then ok "graphs_used_${tag}_rank$r ($on launches, 0 with ZR_CUDA_GRAPHS=0)"
    else fail "graphs_used_${tag}_rank$r" "launches on '$on', off '$off'"; fi
    a=$(work "$tag" on $r); b=$(work "$tag" off $r)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "same_work_and_bytes_${tag}_rank$r"
    else fail "same_work_and_bytes_${tag}_rank$r" "on: $a | off: $b"; fi
  done
done

tag=s3_bf16
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  if run "$tag" sd -- --sync-debug && [ "$(numbers "$tag" sd)" = "$(numbers "$tag" off)" ] && [ "$(launches "$tag" sd 0)" = 0 ]; then
    ok "sync_debug_runs_uncaptured_$tag"
  else
    fail "sync_debug_runs_uncaptured_$tag" "$(tail -2 "$tmp/$tag/sd.out" | tr '\n' ' ') launches $(launches "$tag" sd 0)"
  fi
fi
zt_end
