#!/usr/bin/env bash
# t_train_parity.sh — the emitted trainer (bin/zgen -> make -> mpirun train) against PyTorch
# (tests/trainer/torch_gpt2.py, Debian's python3-torch) on a GPT-2 whose sizes are not powers of
# two (vocab 97, d_model 60, 3 heads, d_ff 148, seq 29), from the same safetensors weights and the
# same batches (docs/SPEC.md batch order):
#   step-1 loss within 1e-5 relative; every gradient (--dump-grads: the reduced, unclipped global
#   gradient) within 1e-4 relative to its norm; the losses of 10 AdamW steps with weight decay and
#   clipping at 1.0 within 1e-4 relative.
# Two plans: ZeRO-0 on 1 rank (plain numerics) and ZeRO-3 on 2 ranks with 2 micro-steps of
# accumulation (gathers, reduce-scatter, sharded Adam).
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_gpt2.py
zt_need_mpi "train parity" torch
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=97 C=60 NH=3 L=2 CTX=31 FF=148 T=29 TBS=8

"$PY" $REF init --V $V --C $C --NH $NH --L $L --ctx $CTX --F $FF --perturb 0.05 --seed 11 \
    --out "$tmp/w.safetensors" >/dev/null &&
"$PY" $REF tokens --V $V --n 6000 --seed 5 --out "$tmp/tok.bin" >/dev/null &&
"$PY" $REF grad --weights "$tmp/w.safetensors" --tokens "$tmp/tok.bin" --NH $NH --B $TBS --T $T \
    --out "$tmp/ref_grad.safetensors" >/dev/null &&
"$PY" $REF train --weights "$tmp/w.safetensors" --tokens "$tmp/tok.bin" --NH $NH --B $TBS --T $T \
    --steps 10 --lr 1e-3 --wd 0.1 --clip 1.0 --out "$tmp/ref_losses.jsonl" >/dev/null ||
  { fail "torch reference"; echo "$P passed, $F failed, $S skipped"; exit 1; }

# case NAME STAGE WS GAS
case_() {
  local name=$1 stage=$2 ws=$3 gas=$4 d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: parity
model: {arch: gpt2, vocab_size: $V, context: $CTX, d_model: $C, n_layers: $L, n_heads: $NH, d_ff: $FF}
train: {seq_len: $T, world_size: $ws, seed: 1}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": $TBS, "gradient_accumulation_steps": $gas, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 3000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 4000},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
   "weight_decay": 0.1}}}
EOF
  if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! zt_make -s -C "$d/out" >"$d/make.log" 2>&1; then
    cat "$d/gen.log" "$d/make.log"; fail "$name build"; return
  fi
  if ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$tmp/w.safetensors" \
       --steps 1 --dump-grads "$d/grad.safetensors" --log "$d/l1.jsonl" --quiet >"$d/run1.log" 2>&1 ||
     ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$tmp/w.safetensors" \
       --steps 10 --log "$d/l10.jsonl" --quiet >"$d/run10.log" 2>&1; then
    cat "$d/run1.log" "$d/run10.log"; fail "$name run"; return
  fi
  "$PY" tests/trainer/parity_check.py "$tmp" "$d" "$name"
  if [ $? -eq 0 ]; then ok "$name: loss, gradients and 10-step losses match PyTorch"; else fail "$name"; fi
}

case_ zero0_ws1 0 1 1
case_ zero3_ws2_gas2 3 2 2
zt_end
