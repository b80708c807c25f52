#!/usr/bin/env bash
# t_headroom.sh — the device headroom (docs/PLAN.md "Device headroom"): plan.txt and plan.json state
# what a CUDA rank holds beside the plan's device arena, by the documented budget (CUDA context
# 512 MiB, one 32 MiB cuBLAS workspace, NCCL 32 channels x 10 MiB per connection: none for one
# rank, 2 connections within a node, 4 across nodes); a hardware.device_memory above the arena but
# below arena + headroom is refused with a message naming the headroom, one at arena + headroom
# fits, and hardware.device_headroom replaces the estimate.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MIB=1048576

spec() {  # spec FILE WORLD GPUS_PER_NODE [HARDWARE_EXTRA]
  cat >"$1" <<EOF
name: hr
model: {arch: gpt2, vocab_size: 512, context: 64, d_model: 64, n_layers: 2, n_heads: 4}
train: {seq_len: 64, world_size: $2}
deepspeed:
  train_micro_batch_size_per_gpu: 2
  zero_optimization: {stage: 2}
hardware: {gpus_per_node: $3${4:+, $4}}
EOF
}
json() { "$PY" -c "import json,sys; p=json.load(open(sys.argv[1])); print($2)" "$3/plan.json"; }

# the figure per world size: (ranks, gpus per node, NCCL connections per channel)
for c in "1 1 0" "4 8 2" "16 8 4"; do
  set -- $c
  want_nccl=$((32 * $3 * 10))
  want=$((512 + 32 + want_nccl))
  spec "$tmp/w$1.yaml" "$1" "$2"
  if ! bin/zgen "$tmp/w$1.yaml" -o "$tmp/w$1" >"$tmp/w$1.log" 2>&1; then fail "ws $1 plans" "$(cat "$tmp/w$1.log")"; continue; fi
  line="device headroom: $want MiB (CUDA context 512 MiB, cuBLAS workspace 32 MiB, NCCL $want_nccl MiB)"
  if grep -qF "$line" "$tmp/w$1/plan.txt"; then ok "ws $1: plan.txt: $line"
  else fail "ws $1 plan.txt" "want '$line': $(grep headroom "$tmp/w$1/plan.txt")"; fi
  got=$(json "" "p['memory']['device_headroom_bytes'], sum(p['memory']['device_headroom_parts'].values()), p['memory']['device_headroom_parts']['nccl_bytes']" "$tmp/w$1")
  if [ "$got" = "$((want * MIB)) $((want * MIB)) $((want_nccl * MIB))" ]; then ok "ws $1: plan.json device_headroom_bytes and parts"
  else fail "ws $1 plan.json" "got $got, want $((want * MIB)) (nccl $((want_nccl * MIB)))"; fi
done

# refusal: 4 ranks on one node, 1184 MiB of headroom
arena=$(json "" "p['tiers']['device']['bytes']" "$tmp/w4")
room=$((1184 * MIB))
spec "$tmp/tight.yaml" 4 8 "device_memory: $((arena + room / 2))"
out=$(bin/zgen "$tmp/tight.yaml" -o "$tmp/tight" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "tight.yaml:7:.*error: .*1.16 GiB of device headroom (CUDA context 512 MiB, cuBLAS workspace 32 MiB, NCCL 640 MiB)" <<<"$out" &&
   grep -q "hardware.device_headroom sets a measured figure" <<<"$out"
then ok "arena + headroom/2 ($((arena + room / 2)) bytes) refused, naming the headroom"
else fail "arena + headroom/2 refused" "rc $rc: $out"; fi
spec "$tmp/exact.yaml" 4 8 "device_memory: $((arena + room))"
if out=$(bin/zgen "$tmp/exact.yaml" -o "$tmp/exact" 2>&1); then ok "arena + headroom fits"
else fail "arena + headroom fits" "$out"; fi

# the knob: a measured 8 MiB instead of the estimate
spec "$tmp/knob.yaml" 4 8 "device_memory: $((arena + room / 2)), device_headroom: 8MiB"
if out=$(bin/zgen "$tmp/knob.yaml" -o "$tmp/knob" 2>&1) &&
   grep -qF "device headroom: 8 MiB (set by hardware.device_headroom)" "$tmp/knob/plan.txt" &&
   [ "$(json "" "p['memory']['device_headroom_bytes'], p['memory']['device_headroom_declared']" "$tmp/knob")" = "$((8 * MIB)) True" ]
then ok "hardware.device_headroom: 8MiB replaces the estimate, and the plan fits"
else fail "hardware.device_headroom" "$out $(grep headroom "$tmp/knob/plan.txt" 2>/dev/null)"; fi
spec "$tmp/bad.yaml" 4 8 "device_headroom: lots"
out=$(bin/zgen "$tmp/bad.yaml" -o "$tmp/bad" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "bad.yaml:7:.*hardware.device_headroom must be a size" <<<"$out"; then ok "a bad device_headroom is refused at its line"
else fail "bad device_headroom" "rc $rc: $out"; fi
zt_end
