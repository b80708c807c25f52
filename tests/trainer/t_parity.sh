#!/usr/bin/env bash
# t_parity.sh — the host kernels against PyTorch (Debian's python3-torch) on small GPT-2s whose
# sizes are not powers of two: same safetensors weights, same step-0 batch, then
#   loss within 1e-5 relative, every gradient within 1e-4 relative to its norm (||g_c-g_t||/||g_t||).
# torch_gpt2.py compare prints one line per tensor (relative error, max |diff|). Also checks that
# torch_gpt2.py train (the trainer-level oracle) starts from the same loss as grad.
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_gpt2.py
X=bin/tests/trainer/x_parity
if [ ! -x "$X" ] || ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  zt_skip_all parity "needs $X built and $PY with torch"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# case NAME V C NH L CTX B T FORMAT
parity() {
  local name=$1 V=$2 C=$3 NH=$4 L=$5 CTX=$6 B=$7 T=$8 fmt=$9 d="$tmp/$1"
  mkdir -p "$d"
  "$PY" $REF init --V "$V" --C "$C" --NH "$NH" --L "$L" --ctx "$CTX" --perturb 0.1 --seed 7 \
      --out "$d/w.safetensors" >/dev/null &&
  "$PY" $REF tokens --V "$V" --n 3000 --seed 3 --format "$fmt" --out "$d/tok.bin" >/dev/null ||
    { fail "$name setup"; return; }
  if ! "$PY" $REF grad --weights "$d/w.safetensors" --tokens "$d/tok.bin" --NH "$NH" --B "$B" \
       --T "$T" --out "$d/torch.safetensors" >"$d/torch.log" 2>&1; then
    cat "$d/torch.log"; fail "$name torch"; return
  fi
  if ! "$X" --weights "$d/w.safetensors" --tokens "$d/tok.bin" --NH "$NH" --B "$B" --T "$T" \
       --out "$d/host.safetensors" >"$d/host.log" 2>&1; then
    cat "$d/host.log"; fail "$name host"; return
  fi
  echo "# $name: V=$V C=$C NH=$NH L=$L B=$B T=$T ($fmt tokens); $(cat "$d/torch.log")"
  "$PY" $REF compare --ref "$d/torch.safetensors" --got "$d/host.safetensors" \
      --loss-rtol 1e-5 --grad-rtol 1e-4 >"$d/cmp.log" 2>&1
  local rc=$?
  sed -n 's/^/  /; /passed, /!p' "$d/cmp.log"
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$d/cmp.log" | tail -1)
  p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
  if [ $rc -eq 0 ] && [ "${f:-1}" -eq 0 ] && [ "${p:-0}" -eq $((4 + 12 * L + 1)) ]; then
    ok "$name loss and all $((4 + 12 * L)) gradients"
  else
    fail "$name" "$line"
  fi
}

parity gpt2_v97_c72 97 72 6 3 40 3 33 llmc
parity gpt2_v61_c36 61 36 4 2 20 2 17 raw

# train: step 1's loss is grad's loss; 10 steps of AdamW with clipping bring the loss down
d="$tmp/gpt2_v97_c72"
if "$PY" $REF train --weights "$d/w.safetensors" --tokens "$d/tok.bin" --NH 6 --B 3 --T 33 \
     --steps 10 --lr 3e-3 --wd 0.1 --clip 1.0 --out "$d/train.jsonl" >/dev/null 2>&1; then
  if "$PY" - "$d/train.jsonl" "$d/torch.safetensors" <<'PYEOF'
import json, sys
sys.path.insert(0, "tests/trainer")
import safetensors_io
rows = [json.loads(l) for l in open(sys.argv[1])]
g, _ = safetensors_io.load(sys.argv[2])
first, last = rows[0]["loss"], rows[-1]["loss"]
print(f"  train: {len(rows)} steps, loss {first:.6f} -> {last:.6f}, grad_norm {rows[0]['grad_norm']:.4g}")
sys.exit(0 if len(rows) == 10 and first == float(g["loss"][0]) and last < first else 1)
PYEOF
  then ok "torch_gpt2 train"; else fail "torch_gpt2 train"; fi
else
  fail "torch_gpt2 train" "did not run"
fi
zt_end
