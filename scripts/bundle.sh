#!/usr/bin/env bash
# bundle.sh — `make bundle`: everything a lent GPU machine needs to run the GPU checks in one call,
# built here (docs/GPU_BUNDLE.md). The GPU box has the NVIDIA driver, the CUDA 13 toolkit and
# PyTorch's cuBLAS/NCCL, but none of libyaml, Lua, liburing, Open MPI or OpenBLAS, and its start-up
# costs minutes of a 30-minute budget, so nothing is generated or compiled there:
#   - specs/tiny (fp32, 2 micro-steps) and specs/gpt2-124m-bf16, each at ZeRO stages 0-3 (0 and 1:
#     everything on the device, Adam there; 2: optimizer offloaded to the CPU; 3: parameters on the
#     CPU and optimizer on NVMe), generated for one rank; each trainer's own `make bundle` (SOLO: no
#     MPI), with OpenBLAS, liburing, libgomp in one shared lib/ and CUDA's libraries left to the box;
#   - two checkpointed plans with the optimizer on the CPU: gpt2-124m-bf16 at stage 2, and the 10B
#     ZeRO-Offload shape cut to 12 layers in bf16 (its --check is skipped: NOCHECK);
#   - LLaMA 2 7B's shape cut to 4 layers (ZeRO-3, parameters and optimizer on the CPU; NOCHECK);
#   - specs/llama-tiny (fp32: the CUDA-core grouped-query attention, attention_gqa.cu) at its own
#     ZeRO-3 plan (parameters on the CPU, optimizer on NVMe), for one rank;
#   - each trainer's plan.txt and `--predict --json` (the cost model's figures: predictions);
#   - a byte-level corpus and the commit.
# Output: gpu/bundle.tar.gz (git-ignored; the device tool's `carry: ["gpu"]`); there:
#   bash scripts/gpu_checks.sh gpu/bundle.tar.gz
set -eu
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || { echo "bundle: nvcc not on PATH (the CUDA toolkit builds train-cuda)" >&2; exit 1; }
W=out/bundle
rm -rf "$W" && mkdir -p "$W/stage/trainers" "$W/stage/lib" "$W/stage/data" "$W/cfg" gpu
make -s bin/zgen build/libzrt.a build/solo/libzrt.a

# stage variants: the base config of each spec with zero_optimization replaced
python3 - "$W/cfg" <<'PY'
import json, os, sys
out = sys.argv[1]
adam = {"type": "AdamW", "params": {"lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}
base = {
    "tiny": {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
             "gradient_clipping": 1.0, "optimizer": adam},
    "gpt2-124m-bf16": {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
                       "gradient_clipping": 1.0, "bf16": {"enabled": True}, "optimizer": adam},
}
zero = {
    0: {"stage": 0},
    1: {"stage": 1},
    2: {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": True}},
    3: {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": True},
        "offload_optimizer": {"device": "nvme", "nvme_path": "nvme", "pin_memory": True}},
}
for name, b in base.items():
    for s, z in zero.items():
        c = dict(b, zero_optimization=z)
        json.dump(c, open(os.path.join(out, "%s-s%d.json" % (name, s)), "w"), indent=1)
PY
# trainer NAME SPEC CFG [nocheck]: generate for one rank, predict, make bundle, stage
trainer() {
  local name=$1 spec=$2 cfg=$3 dir=$W/src/$1
  echo "== $name: generate ($spec, $(basename "$cfg"), world size 1), make bundle"
  bin/zgen "$spec" -c "$cfg" --world-size 1 -o "$dir" >/dev/null
  bin/zgen "$spec" -c "$cfg" --world-size 1 --predict --json -o "$W/predict/$name" > "$dir/predict.json"
  BUNDLE_STATIC=0 BUNDLE_CUDA_LIBS=0 make -s -C "$dir" bundle >/dev/null
  if ldd "$dir/train-cuda" | grep -Ei 'libmpi|libopen-|libyaml|liblua'; then
    echo "bundle: $name/train-cuda links a library the GPU box lacks (above)" >&2; exit 1
  fi
  mkdir -p "$W/stage/trainers/$name"
  cp "$dir/bundle/train-cuda" "$dir/bundle/plan.txt" "$dir/bundle/NEEDS.txt" "$dir/predict.json" \
     "$W/stage/trainers/$name/"
  [ "${4:-}" = nocheck ] && echo "$4: the host reference of --check would take longer than the lease allows" \
     > "$W/stage/trainers/$name/NOCHECK"
  cp -n "$dir"/bundle/lib/* "$W/stage/lib/"
}
for cfg in "$W"/cfg/*-s[0-9].json; do
  name=$(basename "$cfg" .json)
  trainer "$name" "specs/${name%-s[0-9]}.yaml" "$cfg"
done
# activation checkpointing with the optimizer on the CPU: GPT-2 small (its --check covers the
# checkpointed layout), and the 10B ZeRO-Offload plan's shape (d_model 4096, micro-batch 10 x 1024,
# speculative CPU Adam) cut to 12 layers so its pinned state fits the GPU box's memory; in bf16 (the
# same tensor-core path as the spec's fp16, without fp16's loss-scale warm-up skips)
sed 's/^  world_size: 1$/  world_size: 1\n  activation_checkpointing: true/' specs/gpt2-124m-bf16.yaml \
  > "$W/cfg/gpt2-124m-bf16-s2ck.yaml"
grep -q 'activation_checkpointing: true' "$W/cfg/gpt2-124m-bf16-s2ck.yaml"
trainer gpt2-124m-bf16-s2ck "$W/cfg/gpt2-124m-bf16-s2ck.yaml" "$W/cfg/gpt2-124m-bf16-s2.json"
sed -e 's/^name: .*/name: gpt2_10b_l12/' -e 's/^  n_layers: 50$/  n_layers: 12/' \
    -e 's/^  host_memory: .*/  host_memory: 120GiB/' -e 's/^  device_optimizer: auto .*/  device_optimizer: false/' \
    specs/gpt2-10b-ckpt.yaml > "$W/cfg/gpt2-10b-l12.yaml"
grep -q 'n_layers: 12' "$W/cfg/gpt2-10b-l12.yaml" && grep -q 'device_optimizer: false' "$W/cfg/gpt2-10b-l12.yaml"
python3 - specs/configs/zero_offload_tutorial_mb10.json "$W/cfg/gpt2-10b-l12.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["fp16"]
c["bf16"] = {"enabled": True}
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
trainer gpt2-10b-l12 "$W/cfg/gpt2-10b-l12.yaml" "$W/cfg/gpt2-10b-l12.json" nocheck
# LLaMA on train-cuda (its device adapter, RMSNorm/RoPE/SwiGLU kernels, grouped-query attention on
# tensor cores): LLaMA 2 7B's shape cut to 4 layers at 1024 tokens, its own plan (ZeRO-3, bf16,
# parameters and optimizer on the CPU, checkpointing), 2 micro-steps
sed -e 's/^name: .*/name: llama2_7b_l4/' -e 's/^  n_layers: 32$/  n_layers: 4/' -e 's/^  seq_len: 4096$/  seq_len: 1024/' \
    -e 's/^  host_memory: .*/  host_memory: 120GiB/' specs/llama2-7b.yaml > "$W/cfg/llama2-7b-l4.yaml"
grep -q 'n_layers: 4' "$W/cfg/llama2-7b-l4.yaml" && grep -q 'seq_len: 1024' "$W/cfg/llama2-7b-l4.yaml"
python3 - specs/configs/llama_zero3_offload_cpu.json "$W/cfg/llama2-7b-l4.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["gradient_accumulation_steps"] = 2
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
trainer llama2-7b-l4 "$W/cfg/llama2-7b-l4.yaml" "$W/cfg/llama2-7b-l4.json" nocheck
# LLaMA in fp32: its attention on CUDA cores (attention_gqa.cu), llama-tiny's own config
trainer llama-tiny-fp32 specs/llama-tiny.yaml specs/configs/tiny_zero3.json
python3 scripts/make_corpus.py "$W/stage/data/train.bin" --tokens 400000 >/dev/null 2>&1
python3 scripts/make_corpus.py "$W/stage/data/val.bin" --tokens 40000 --seed 4321 >/dev/null 2>&1
git rev-parse HEAD > "$W/stage/COMMIT" 2>/dev/null || echo unknown > "$W/stage/COMMIT"
tar czf gpu/bundle.tar.gz -C "$W/stage" .
echo "bundle: gpu/bundle.tar.gz ($(du -m gpu/bundle.tar.gz | cut -f1) MiB; the device tool carries at most 64 MiB with the tree)"
echo "  on the GPU machine: bash scripts/gpu_checks.sh gpu/bundle.tar.gz   (carry: [\"gpu\"])"
