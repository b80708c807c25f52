#!/usr/bin/env bash
# b_train.sh — the emitted host trainer's training throughput beside PyTorch CPU training the same
# model: GPT-2 with 6 layers, d_model 384, 6 heads, d_ff 1536, seq 256, batch 8, fp32, AdamW with
# clipping, 1 rank, 2 threads each. Our trainer runs with OMP_WAIT_POLICY=PASSIVE (safe on a shared
# machine); PyTorch gets its best setting: each pair runs it with OMP_WAIT_POLICY=PASSIVE and unset
# and takes the faster (ZB_PEER_WAIT=PASSIVE or unset runs only that one).
# Vocabulary 256 (byte-level, as the project's corpus): with GPT-2's 50257 the tied head's two
# 50257 x 384 sgemms would be ~2/3 of the FLOPs, and both sides spend them in the same OpenBLAS
# call, which would measure OpenBLAS rather than the trainer.
# Protocol (docs/CONTRIBUTING.md): 3 pairs, each = our trainer (median tokens/s of steps 1-4 of a
# 5-step run, from its JSONL log) then PyTorch (median of steps 1-4, timed around forward, backward,
# clip_grad_norm_ and AdamW.step; once per wait policy, the faster counts); the figure is the
# median of our runs, the ratio the median of the pair-by-pair ratios. Appends one JSON object to $ZB_RESULTS. Aim: ratio >= 1.5.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2
PY=/usr/bin/python3
PAIRS=${ZB_TRAIN_PAIRS:-3} PEER_WAIT=${ZB_PEER_WAIT:-best}
make -s bin/zgen build/libzrt.a >/dev/null || { echo "b_train: build failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/spec.yaml" <<YAML
name: bench_gpt2
model: {arch: gpt2, vocab_size: 256, context: 256, d_model: 384, n_layers: 6, n_heads: 6, d_ff: 1536}
train: {seq_len: 256, world_size: 1, seed: 1}
deepspeed: ds.json
YAML
cat >"$tmp/ds.json" <<JSON
{"train_batch_size": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": 0},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.1}}}
JSON
bin/zgen "$tmp/spec.yaml" -o "$tmp/out" >/dev/null && make -s -j2 -C "$tmp/out" >/dev/null ||
  { echo "b_train: generating the trainer failed"; exit 1; }
$PY scripts/make_corpus.py "$tmp/tok.bin" --tokens 300000 2>/dev/null
$PY tests/trainer/torch_gpt2.py init --V 256 --C 384 --NH 6 --L 6 --ctx 256 --out "$tmp/w.safetensors" >/dev/null

ours() {
  rm -f "$tmp/log.jsonl"
  mpirun --oversubscribe --bind-to none -np 1 "$tmp/out/train" --data "$tmp/tok.bin" \
    --init-from "$tmp/w.safetensors" --steps 5 --threads 2 --log "$tmp/log.jsonl" --quiet >/dev/null 2>&1 || return 1
  $PY -c 'import json,statistics,sys; r=[json.loads(l)["tokens_per_s"] for l in open(sys.argv[1])][1:]; print(statistics.median(r))' "$tmp/log.jsonl"
}

theirs() {   # theirs POLICY: OMP_WAIT_POLICY for PyTorch ("unset": not in the environment)
  local pre=(env OMP_WAIT_POLICY="$1")
  [ "$1" = unset ] && pre=(env -u OMP_WAIT_POLICY)
  "${pre[@]}" $PY - "$tmp/w.safetensors" "$tmp/tok.bin" <<'PYEOF'
import math, statistics, sys, time
sys.path.insert(0, "tests/trainer")
import torch_gpt2 as ref
torch = ref.setup_torch()                       # torch.set_num_threads(2)
P = ref.load_params(torch, sys.argv[1])
toks = ref.read_tokens(sys.argv[2])
B, T, NH = 8, 256, 6
decay = [p for p in P.values() if p.dim() >= 2]
no_decay = [p for p in P.values() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)
rates = []
for step in range(5):
    x, y = ref.batch(toks, step, B, T)
    x, y = torch.tensor(x), torch.tensor(y)
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = ref.forward(torch, P, x, y, NH, 6)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(P.values()), 1.0)
    opt.step()
    rates.append(B * T / (time.perf_counter() - t0))
print(statistics.median(rates[1:]))
PYEOF
}

policies=(PASSIVE unset)
[ "$PEER_WAIT" != best ] && policies=("$PEER_WAIT")
ours_v=(); theirs_v=(); ratios=(); wins=()
for i in $(seq "$PAIRS"); do
  a=$(ours) || { echo "b_train: trainer run failed"; exit 1; }
  b=0; w=; line=
  for pol in "${policies[@]}"; do
    x=$(theirs "$pol") || { echo "b_train: torch run failed"; exit 1; }
    line+=" PyTorch[$pol] $x"
    if $PY -c "import sys; sys.exit(not $x > $b)"; then b=$x; w=$pol; fi
  done
  ours_v+=("$a"); theirs_v+=("$b"); wins+=("$w"); ratios+=("$($PY -c "print($a / $b)")")
  echo "   pair $i: zgen host trainer $a tokens/s,$line tokens/s (peer: $w)"
done
$PY - "${ZB_RESULTS:-/dev/null}" "${ours_v[*]}" "${theirs_v[*]}" "${ratios[*]}" "${wins[*]}" <<'PYEOF'
import json, statistics, sys
out, a, b, r = sys.argv[1], *[list(map(float, s.split())) for s in sys.argv[2:5]]
wins = {w: sys.argv[5].split().count(w) for w in sorted(set(sys.argv[5].split()))}
row = {"name": "host trainer tokens/s (gpt2 6L d384 h6 T256 B8 V256 fp32, 1 rank x 2 threads)",
       "value": round(statistics.median(a), 1), "unit": "tokens/s",
       "peer": "PyTorch 1.13 CPU, same model, AdamW, 2 threads",
       "peer_value": round(statistics.median(b), 1), "ratio": round(statistics.median(r), 3),
       "note": f"{len(r)} alternating pairs, median of pair ratios; ours OMP_WAIT_POLICY=PASSIVE; "
               "PyTorch: the faster of its runs per pair, OMP_WAIT_POLICY "
               + ", ".join(f"{k} faster {n}x" for k, n in wins.items())}
print(json.dumps(row))
with open(out, "a") as f:
    f.write(json.dumps(row) + "\n")
PYEOF
