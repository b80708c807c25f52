#!/usr/bin/env bash
# t_train_parity.sh — the emitted trainer (bin/zgen -> make -> mpirun train) against PyTorch
# (tests/trainer/torch_gpt2.py, Debian's python3-torch) on a GPT-2 whose sizes are not powers of
# two (vocab 97, d_model 60, 3 heads, d_ff 148, seq 29), from the same safetensors weights and the
# same batches (DESIGN.md batch order):
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
  if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! make -s -C "$d/out" >"$d/make.log" 2>&1; then
    cat "$d/gen.log" "$d/make.log"; fail "$name build"; return
  fi
  if ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$tmp/w.safetensors" \
       --steps 1 --dump-grads "$d/grad.safetensors" --log "$d/l1.jsonl" --quiet >"$d/run1.log" 2>&1 ||
     ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$tmp/w.safetensors" \
       --steps 10 --log "$d/l10.jsonl" --quiet >"$d/run10.log" 2>&1; then
    cat "$d/run1.log" "$d/run10.log"; fail "$name run"; return
  fi
  "$PY" - "$tmp" "$d" "$name" <<'EOF'
import json, sys
import numpy as np
sys.path.insert(0, "tests/trainer")
import safetensors_io
tmp, d, name = sys.argv[1:4]
ref, _ = safetensors_io.load(f"{tmp}/ref_grad.safetensors")
got, _ = safetensors_io.load(f"{d}/grad.safetensors")
l1 = [json.loads(x) for x in open(f"{d}/l1.jsonl")]
rl = float(ref["loss"][0]); gl = l1[0]["loss"]
bad = 0
rel = abs(gl - rl) / abs(rl)
print(f"# {name}: step-1 loss {gl:.9g} torch {rl:.9g} rel {rel:.2e}")
if rel > 1e-5: bad += 1; print(f"# {name}: loss over 1e-5")
worst = ("", 0.0)
for n, r in ref.items():
    if n == "loss": continue
    if n not in got or got[n].shape != r.shape:
        print(f"# {name}: gradient {n} missing or misshapen"); bad += 1; continue
    r64 = r.astype(np.float64); g64 = got[n].astype(np.float64)
    e = np.linalg.norm(g64 - r64) / max(np.linalg.norm(r64), 1e-30)
    if e > worst[1]: worst = (n, e)
    if e > 1e-4: print(f"# {name}: gradient {n} rel {e:.2e} over 1e-4"); bad += 1
print(f"# {name}: {len(ref) - 1} gradients, worst {worst[0]} rel {worst[1]:.2e}")
rt = [json.loads(x)["loss"] for x in open(f"{tmp}/ref_losses.jsonl")]
gt = [json.loads(x)["loss"] for x in open(f"{d}/l10.jsonl")]
if len(gt) != 10: print(f"# {name}: {len(gt)} losses logged, expected 10"); bad += 1
w = max(abs(a - b) / abs(b) for a, b in zip(gt, rt))
print(f"# {name}: 10 AdamW steps, losses {gt[0]:.6f} -> {gt[-1]:.6f} (torch {rt[-1]:.6f}), worst rel {w:.2e}")
if w > 1e-4: bad += 1
if abs(rt[-1] - rt[0]) < 1e-3: print(f"# {name}: torch loss did not move: test is blind"); bad += 1
sys.exit(1 if bad else 0)
EOF
  if [ $? -eq 0 ]; then ok "$name: loss, gradients and 10-step losses match PyTorch"; else fail "$name"; fi
}

case_ zero0_ws1 0 1 1
case_ zero3_ws2_gas2 3 2 2
zt_end
