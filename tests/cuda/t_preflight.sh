#!/usr/bin/env bash
# t_preflight.sh — train-cuda's pre-flight (templates/cuda_trainer/cuda_main.c) on the GPU stand-in,
# whose device size is planted with ZR_EMU_DEVICE_MEMORY: before it allocates the arena, the trainer
# compares the free device memory with the arena plus what gen budgets to be allocated after it
# (NCCL, the cuBLAS workspace: plan.json's device_headroom_parts). One byte short is refused at
# start-up, naming the figures and the hardware.device_memory to declare; exactly enough trains.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null
cat >"$tmp/spec.yaml" <<EOS
name: pf
model: {arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}
train: {seq_len: 16, world_size: 1, seed: 7}
deepspeed: ds.json
EOS
cat >"$tmp/ds.json" <<EOS
{"train_batch_size": 4, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3}}}
EOS
if ! ZGEN_NVRTC=off bin/zgen "$tmp/spec.yaml" -o "$tmp/out" >"$tmp/gen.log" 2>&1; then fail generate "$(tail -3 "$tmp/gen.log")"; zt_end; fi
if ! nice -n 10 bash tests/zt_make -s -j2 -C "$tmp/out" cuda-emu >"$tmp/make.log" 2>&1; then
  fail build_emu "$(grep -E "error|undefined" "$tmp/make.log" | head -3)"; zt_end
fi
# the need, from the plan: the device tier plus the headroom parts allocated after the arena
read -r need ctx < <("$PY" - "$tmp/out/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
h = p["memory"]["device_headroom_parts"]
print(p["tiers"]["device"]["bytes"] + h["nccl_bytes"] + h["cublas_workspace_bytes"], h["cuda_context_bytes"])
PY
)
run() { env ZR_EMU_DEVICE_MEMORY="$1" "$tmp/out/train-cuda-emu" --data "$tmp/corpus.bin" --steps 1 --threads 1 \
          --quiet >"$tmp/run.out" 2>&1; rc=$?; }
short=$((need - 1))
run "$short"
gib() { "$PY" -c "print('%.3f' % ($1 / 2**30))"; }
if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "the plan needs $(gib "$need") GiB free on the device" "$tmp/run.out" \
   && grep -q "has $(gib "$short") GiB free of $(gib "$short") GiB" "$tmp/run.out" \
   && grep -q "declare hardware.device_memory: $(( (short + ctx) >> 20 ))MiB in the spec" "$tmp/run.out"
then ok one_byte_short_refused_with_figures; else fail one_byte_short_refused_with_figures "rc $rc: $(tail -3 "$tmp/run.out")"; fi
run "$need"
if [ $rc -eq 0 ]; then ok exactly_enough_trains; else fail exactly_enough_trains "rc $rc: $(tail -3 "$tmp/run.out")"; fi
zt_end
