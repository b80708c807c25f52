#!/usr/bin/env bash
# t_bias_parity.sh — optimizer.params.bias_correction: false end to end: the emitted host trainer
# (1 rank, ZeRO-0, AdamW with weight decay and clipping) against PyTorch running Adam without bias
# correction written out here (step size lr, denominator sqrt(v) + eps), from the same weights and
# batches (tests/trainer/torch_gpt2.py's model and batch order): 10 losses within 1e-4 relative. The
# bias-corrected run must differ from that reference, so the test sees whether the flag took effect.
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_gpt2.py
zt_need_mpi "bias_correction parity" torch
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=97 C=60 NH=3 L=2 CTX=31 FF=148 T=29 TBS=4

"$PY" $REF init --V $V --C $C --NH $NH --L $L --ctx $CTX --F $FF --perturb 0.05 --seed 11 \
    --out "$tmp/w.safetensors" >/dev/null &&
"$PY" $REF tokens --V $V --n 4000 --seed 5 --out "$tmp/tok.bin" >/dev/null || {
  fail "torch reference inputs"; zt_end; }

"$PY" - "$tmp" $NH $TBS $T <<'PY' || { fail "torch reference"; zt_end; }
import json, math, sys
sys.path.insert(0, "tests/trainer")
import torch_gpt2 as R
tmp, NH, B, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch = R.setup_torch()
P = R.load_params(torch, f"{tmp}/w.safetensors")
L = R.n_layers(P)
toks = R.read_tokens(f"{tmp}/tok.bin")
m = {n: torch.zeros_like(p) for n, p in P.items()}
v = {n: torch.zeros_like(p) for n, p in P.items()}
lr, wd, clip, b1, b2, eps = 1e-3, 0.1, 1.0, 0.9, 0.999, 1e-8
with open(f"{tmp}/ref.jsonl", "w") as log:
    for step in range(10):
        x, y = R.batch(toks, step, B, T)
        for p in P.values():
            p.grad = None
        loss = R.forward(torch, P, torch.tensor(x), torch.tensor(y), NH, L)
        loss.backward()
        with torch.no_grad():
            norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in P.values()))
            if (norm + 1e-6) / clip > 1:
                for p in P.values():
                    p.grad.mul_(clip / (norm + 1e-6))
            for n, p in P.items():
                g = p.grad
                if p.dim() >= 2:
                    p.mul_(1 - lr * wd)
                m[n].mul_(b1).add_(g, alpha=1 - b1)
                v[n].mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m[n], v[n].sqrt() + eps, value=-lr)      # no bias correction
        print(json.dumps({"step": step + 1, "loss": loss.item()}), file=log)
PY

run() {  # run NAME BIAS_CORRECTION
  local d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<YAML
name: bias
model: {arch: gpt2, vocab_size: $V, context: $CTX, d_model: $C, n_layers: $L, n_heads: $NH, d_ff: $FF}
train: {seq_len: $T, world_size: 1, seed: 1}
deepspeed:
  train_batch_size: $TBS
  gradient_clipping: 1.0
  optimizer: {type: AdamW, params: {lr: 1.0e-3, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.1,
                                    bias_correction: $2}}
YAML
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && zt_make -s -C "$d/out" >"$d/make.log" 2>&1 &&
  mpirun --oversubscribe -np 1 "$d/out/train" --data "$tmp/tok.bin" --init-from "$tmp/w.safetensors" \
      --steps 10 --log "$d/log.jsonl" --quiet >"$d/run.log" 2>&1 ||
    { cat "$d/gen.log" "$d/make.log" "$d/run.log" 2>/dev/null | tail -5; return 1; }
}
cmp_losses() {  # cmp_losses NAME: worst relative loss difference against the reference
  "$PY" - "$tmp/ref.jsonl" "$tmp/$1/log.jsonl" <<'PY'
import json, sys
r = [json.loads(x)["loss"] for x in open(sys.argv[1])]
g = [json.loads(x)["loss"] for x in open(sys.argv[2])]
print(max(abs(a - b) / abs(b) for a, b in zip(g, r)) if len(g) == len(r) == 10 else 1.0)
PY
}
if run nobc false; then
  w=$(cmp_losses nobc)
  if awk -v w="$w" 'BEGIN { exit !(w <= 1e-4) }'; then ok "no_bias_correction_matches_torch (worst rel $w)"
  else fail "no_bias_correction_matches_torch" "worst rel $w > 1e-4"; fi
else fail "no_bias_correction_matches_torch" "build or run failed"; fi
if run bc true; then
  w=$(cmp_losses bc)
  if awk -v w="$w" 'BEGIN { exit !(w > 1e-3) }'; then ok "bias_correction_differs (worst rel $w)"
  else fail "bias_correction_differs" "the corrected run matches the uncorrected reference (rel $w): test is blind"; fi
else fail "bias_correction_differs" "build or run failed"; fi
zt_end
