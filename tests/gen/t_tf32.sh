#!/usr/bin/env bash
# t_tf32.sh — the spec key train.allow_tf32 end to end through gen (docs/CONFIG.md, gen/cuda_dec.c):
# gen decides ZK_TF32 once and emits it into cuda/kernels/zk_shapes.h: 1 only for an fp32 plan with
# the key true; 0 without the key, with false, and in bf16 and fp16 plans, where the key is accepted
# with a warning at its file:line saying it has no effect (and why). --check's tolerances follow:
# fp32 1e-3 / 1e-4, fp32 with TF32 the derived 12 x 2^-10 per tensor and 2^-10 for the loss (each
# GEMM input rounded to 11 significant bits: 2^-11 per input, 2^-10 per product, a dozen GEMMs on a
# gradient's path), bf16 12 x 2^-8 / 2^-8, fp16 12 x 2^-11 / 2^-11. A value that is not a bool is refused at its line.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

spec() {  # spec FILE TRAIN_EXTRA PRECISION_JSON
  cat >"$1" <<EOF
name: tf
model: {arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}
train:
  seq_len: 16
$2
deepspeed:
  train_micro_batch_size_per_gpu: 2
  zero_optimization: {stage: 0}
$3
EOF
}
fact() { sed -n "s/^#define $1 \\([^ ]*\\).*/\\1/p" "$2/cuda/kernels/zk_shapes.h"; }

# case NAME TRAIN_EXTRA PRECISION WANT_TF32 WANT_RTOL WANT_LOSS_RTOL [WARNING]
case_() {
  local n=$1 d=$tmp/$1
  spec "$tmp/$n.yaml" "$2" "$3"
  if ! bin/zgen "$tmp/$n.yaml" -o "$d" >"$tmp/$n.log" 2>&1; then fail "$n plans" "$(cat "$tmp/$n.log")"; return; fi
  local got="$(fact ZK_TF32 "$d") $(fact ZG_CHECK_RTOL "$d") $(fact ZG_CHECK_LOSS_RTOL "$d")"
  if [ "$got" = "$4 $5 $6" ]; then ok "$n: ZK_TF32 $4, --check rtol $5, loss $6"
  else fail "$n facts" "got '$got', want '$4 $5 $6'"; fi
  if [ -n "${7:-}" ]; then
    if grep -q "$7" "$tmp/$n.log"; then ok "$n: warns '$7'"; else fail "$n warning" "$(cat "$tmp/$n.log")"; fi
  elif grep -q "allow_tf32" "$tmp/$n.log"; then fail "$n: no warning expected" "$(cat "$tmp/$n.log")"
  fi
}
# the expected figures, written out here: 12 x 2^-10 = 0.01171875, 2^-10 = 0.0009765625,
# 12 x 2^-8 = 0.046875, 2^-8 = 0.00390625
case_ fp32_off    ""                       ""                             0 0.001 0.0001
case_ fp32_false  "  allow_tf32: false"    ""                             0 0.001 0.0001
case_ fp32_on     "  allow_tf32: true"     ""                             1 0.01171875 0.0009765625
case_ bf16_on     "  allow_tf32: true"     "  bf16: {enabled: true}"      0 0.046875 0.00390625 \
  "bf16_on.yaml:5:[0-9]*: warning: train.allow_tf32 has no effect in a bf16 plan"
case_ fp16_on     "  allow_tf32: True"     "  fp16: {enabled: true}"      0 0.005859375 0.00048828125 \
  "fp16_on.yaml:5:[0-9]*: warning: train.allow_tf32 has no effect in an fp16 plan"
if grep -q "note: a bf16 plan's GEMMs take bf16 operands on tensor cores already" "$tmp/bf16_on.log"; then
  ok "bf16_on: the note says why"; else fail "bf16_on note" "$(cat "$tmp/bf16_on.log")"; fi

# a value that is not a bool: refused at its line, nothing emitted
spec "$tmp/bad.yaml" "  allow_tf32: 1" ""
out=$(bin/zgen "$tmp/bad.yaml" -o "$tmp/bad" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "bad.yaml:5:[0-9]*: error: train.allow_tf32 must be true or false, not '1'" <<<"$out" \
   && [ ! -e "$tmp/bad/cuda/kernels/zk_shapes.h" ]
then ok "allow_tf32: 1 refused at its line"; else fail "bad value" "rc $rc: $out"; fi
# misplaced: the key belongs in train
spec "$tmp/mis.yaml" "" ""
sed -i 's/^hardware:.*//; $a hardware: {allow_tf32: true}' "$tmp/mis.yaml"
out=$(bin/zgen "$tmp/mis.yaml" -o "$tmp/mis" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "did you mean 'train.allow_tf32'" <<<"$out"; then ok "hardware.allow_tf32 points to train.allow_tf32"
else fail "misplaced key" "rc $rc: $out"; fi
zt_end
