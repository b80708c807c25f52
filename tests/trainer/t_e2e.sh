#!/usr/bin/env bash
# t_e2e.sh — the whole product on specs/tiny.yaml: bin/zgen -> out/tiny -> make -> mpirun -np 2 train
# (ZeRO-3, optimizer on NVMe, parameters on CPU), checking what docs/SPEC.md's trainer contract promises:
#   - a launch on another world size is refused, and the message gives the fix (--world-size N);
#   - the arenas the trainer allocates are the plan's per-tier figures to the byte (plan.json);
#   - the loss falls on the synthetic corpus; the JSONL log has every key on every step and
#     val_loss on the last; the raw uint16 format of the same tokens trains identically;
#   - --trace writes one Chrome trace with a process per rank and compute, comm and I/O tracks;
#   - --export writes safetensors with the Hugging Face GPT-2 names and shapes plus config.json;
#   - fp16 (another small plan): overflowing steps are skipped and logged, the scale follows
#     DeepSpeed's hysteresis / window rules, and the lr schedule counts applied steps only.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "e2e" numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
out="$tmp/tiny"
if ! bin/zgen specs/tiny.yaml -o "$out" >"$tmp/gen.log" 2>&1 || ! zt_make -s -j2 -C "$out" >"$tmp/make.log" 2>&1; then
  cat "$tmp/gen.log" "$tmp/make.log"; fail "generate and build specs/tiny.yaml"
  echo "$P passed, $F failed, $S skipped"; exit 1
fi
ok "generate and build specs/tiny.yaml"
"$PY" scripts/make_corpus.py "$tmp/train.bin" --tokens 120000 2>/dev/null
"$PY" scripts/make_corpus.py "$tmp/train.raw" --tokens 120000 --raw 2>/dev/null
"$PY" scripts/make_corpus.py "$tmp/val.bin" --tokens 20000 --seed 99 2>/dev/null
export ZG_NVME_DIR="$tmp/nvme"

# wrong world size
mpirun --oversubscribe -np 1 "$out/train" --data "$tmp/train.bin" --steps 1 >"$tmp/ws.log" 2>&1
rc=$?
check "world size 1 refused with the fix (--world-size 1)" \
  bash -c "[ $rc -ne 0 ] && grep -q 'generated for 2 ranks' '$tmp/ws.log' && grep -q -- '--world-size 1' '$tmp/ws.log'"

# the run
STEPS=40
if ! mpirun --oversubscribe -np 2 "$out/train" --data "$tmp/train.bin" --val "$tmp/val.bin" --steps $STEPS \
     --log "$tmp/log.jsonl" --trace "$tmp/trace.json" --export "$tmp/export/model.safetensors" \
     --threads 1 >"$tmp/run.log" 2>&1; then
  cat "$tmp/run.log"; fail "train 2 ranks ZeRO-3 nvme+cpu"
  echo "$P passed, $F failed, $S skipped"; exit 1
fi
grep -v '^step' "$tmp/run.log" | head -3 | sed 's/^/# /'
sed -n '1p;$p' "$tmp/log.jsonl" | sed 's/^/# /'

check "arenas are the plan's per-tier bytes" "$PY" - "$out/plan.json" "$tmp/run.log" <<'EOF'
import json, re, sys
plan = json.load(open(sys.argv[1]))
tb = {t: plan["tiers"][t]["bytes"] for t in ("device", "pinned", "host", "nvme")}
line = next(l for l in open(sys.argv[2]) if "arenas per rank" in l)
got = dict(re.findall(r" (device|pinned|host|nvme) (\d+)", line))
bad = [t for t in ("device", "pinned", "host", "nvme") if int(got[t]) != int(tb[t])]
print(f"# plan {tb}; trainer {got}")
sys.exit(1 if bad else 0)
EOF

check "log: $STEPS steps with every key, val_loss last, loss falls by a third" "$PY" - "$tmp/log.jsonl" $STEPS <<'EOF'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
keys = ["step", "loss", "lr", "grad_norm", "loss_scale", "skipped", "tokens_per_s", "ms"]
ok = len(rows) == n and all(list(r)[:8] == keys for r in rows)
ok = ok and [r["step"] for r in rows] == list(range(n)) and "val_loss" in rows[-1]
first, last = rows[0]["loss"], rows[-1]["loss"]
print(f"# loss {first:.4f} -> {last:.4f}, val {rows[-1].get('val_loss')}")
ok = ok and math.isfinite(last) and last < first * 2 / 3 and rows[-1]["val_loss"] < first
sys.exit(0 if ok else 1)
EOF

# raw uint16 tokens: same tokens, same losses
mpirun --oversubscribe -np 2 "$out/train" --data "$tmp/train.raw" --steps 3 --log "$tmp/raw.jsonl" \
  --threads 1 --quiet >"$tmp/raw.log" 2>&1
check "raw uint16 data gives the same losses as the llm.c file" bash -c \
  "cut -d, -f2 '$tmp/raw.jsonl' > '$tmp/a'; head -3 '$tmp/log.jsonl' | cut -d, -f2 > '$tmp/b'; [ -s '$tmp/a' ] && cmp -s '$tmp/a' '$tmp/b'"

check "trace: one process per rank, compute, comm and io tracks" "$PY" - "$tmp/trace.json" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
spans = [e for e in ev if e.get("ph") in ("X", "B")]
pids = {e["pid"] for e in spans}
tids = {e["tid"] for e in spans}
print(f"# {len(spans)} spans, pids {sorted(pids)}, tids {sorted(tids)}")
sys.exit(0 if pids == {0, 1} and {0, 1, 2} <= tids else 1)
EOF

check "export: Hugging Face names and shapes, config.json" "$PY" - "$tmp/export" <<'EOF'
import json, sys
sys.path.insert(0, "tests/trainer")
import safetensors_io
d = sys.argv[1]
w, _ = safetensors_io.load(d + "/model.safetensors")
cfg = json.load(open(d + "/config.json"))
L, C, V, F = cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"], 4 * cfg["n_embd"]
want = {"wte.weight": (V, C), "wpe.weight": (cfg["n_positions"], C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
for i in range(L):
    want.update({f"h.{i}.ln_1.weight": (C,), f"h.{i}.attn.c_attn.weight": (C, 3 * C),
                 f"h.{i}.attn.c_proj.weight": (C, C), f"h.{i}.mlp.c_fc.weight": (C, F),
                 f"h.{i}.mlp.c_proj.weight": (F, C), f"h.{i}.mlp.c_proj.bias": (C,)})
bad = [n for n, s in want.items() if n not in w or tuple(w[n].shape) != s]
print(f"# {len(w)} tensors, n_layer {L}, n_embd {C}; problems: {bad[:3]}")
sys.exit(0 if not bad and len(w) == 4 + 12 * L and (L, C, V) == (4, 128, 256) else 1)
EOF
# fp16 with DeepSpeed's dynamic loss scaling, started far too high (2^24) so the first steps overflow
f="$tmp/fp16"; mkdir -p "$f"
cat >"$f/spec.yaml" <<EOF
name: f16
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOF
cat >"$f/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
 "fp16": {"enabled": true, "initial_scale_power": 24, "hysteresis": 2, "loss_scale_window": 4},
 "zero_optimization": {"stage": 2},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 2e-3,
   "warmup_num_steps": 4, "warmup_type": "linear"}}}
EOF
if bin/zgen "$f/spec.yaml" -o "$f/out" >"$f/gen.log" 2>&1 && zt_make -s -j2 -C "$f/out" >"$f/make.log" 2>&1 &&
   mpirun --oversubscribe -np 2 "$f/out/train" --data "$tmp/train.bin" --steps 16 --log "$f/log.jsonl" \
     --threads 1 --quiet >"$f/run.log" 2>&1; then
  check "fp16: overflow steps skipped, scale lowered after hysteresis, raised after the window, lr held" \
    "$PY" - "$f/log.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sk = [r["skipped"] for r in rows]
sc = [r["loss_scale"] for r in rows]
n = sk.index(0) if 0 in sk else len(sk)              # overflowing steps at the start
print(f"# {n} steps skipped, scales {[int(s) for s in sc]}")
ok = n >= 3 and all(sk[:n]) and not any(sk[n:]) and sc[0] == 2 ** 24
# DeepSpeed: hysteresis 2 spends the first overflow, then every overflow halves the scale
ok = ok and sc[1] == sc[0] and all(sc[i + 1] == sc[i] / 2 for i in range(1, n))
# the scale used by the first clean step is the last overflow's halved; 4 clean steps later it doubles
ok = ok and sc[n] == sc[n - 1] / 2 and all(s == sc[n] for s in sc[n:n + 4]) and sc[n + 4] == 2 * sc[n]
# the lr schedule counts applied steps only: linear warmup over 4 steps from 0 to 2e-3 (it = -1, 0, 1, ..)
want = [0, 0, 5e-4, 1e-3, 1.5e-3, 2e-3]
ok = ok and all(r["lr"] == 0 for r in rows[:n]) and all(abs(r["lr"] - w) < 1e-12 for r, w in zip(rows[n:], want))
ok = ok and rows[-1]["loss"] < rows[n]["loss"]
sys.exit(0 if ok else 1)
EOF
else
  cat "$f"/*.log; fail "fp16 plan builds and runs"
fi
zt_end
