#!/usr/bin/env bash
# t_fit_advice.sh — a refused plan's advice lists up to three changes that fit, in the planner's
# order, each priced by the cost model: the step time a note quotes for a change is the step time
# `zgen --predict --json` gives for the config with that change made (h100-sxm, the default), so
# the price is the plan's, not a guess; and it is labelled a prediction.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec() {  # spec FILE MICRO ACCUM CKPT
  cat >"$1" <<EOF
name: fit
model: {arch: gpt2, vocab_size: 50257, context: 1024, d_model: 1024, n_layers: 24, n_heads: 16}
train: {seq_len: 1024, world_size: 1, activation_checkpointing: $4}
deepspeed:
  train_micro_batch_size_per_gpu: $2
  gradient_accumulation_steps: $3
  bf16: {enabled: true}
  zero_optimization: {stage: 2}
hardware: {device_memory: 9GiB, host_memory: 24GiB}
EOF
}
spec "$tmp/refused.yaml" 4 1 false
out=$(bin/zgen "$tmp/refused.yaml" -o "$tmp/r" 2>&1); rc=$?
notes=$(grep -c "predicted step .* tokens/s on h100-sxm" <<<"$out")
if [ $rc -eq 1 ] && [ "$notes" -ge 2 ] && [ "$notes" -le 3 ]; then ok "refused, $notes priced changes"
else fail "refused with priced changes" "rc $rc, $notes priced notes: $out"; fi

# each quoted price against --predict of the changed config
price() { grep "$1" <<<"$out" | sed -n 's/.*predicted step \([0-9.e+-]*\) s.*/\1/p' | head -1; }
same() {  # same NAME QUOTED SPEC
  local got
  got=$(bin/zgen "$3" --predict --json -o "$tmp/p_$1" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_s"])')
  if [ -n "$2" ] && [ -n "$got" ] && "$PY" -c "import sys; q, g = float('$2'), float('$got'); sys.exit(0 if abs(q - g) <= 5e-3 * g else 1)"
  then ok "$1: quoted $2 s = --predict's $got s"
  else fail "$1" "quoted '$2', --predict '$got'"; fi
}
spec "$tmp/mb1.yaml" 1 4 false
same micro_batch_1 "$(price 'train_micro_batch_size_per_gpu: 1 ')" "$tmp/mb1.yaml"
spec "$tmp/ckpt.yaml" 4 1 true
same activation_checkpointing "$(price 'activation_checkpointing: true')" "$tmp/ckpt.yaml"
zt_end
