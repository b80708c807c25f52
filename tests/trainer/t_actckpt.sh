#!/usr/bin/env bash
# t_actckpt.sh — activation checkpointing (spec key train.activation_checkpointing: true): the
# trainer recomputes each block's forward right before its backward, which is deterministic, so
# the losses, gradient norms and exported weights are bit-identical to the run without it; and
# the plan keeps only each block's input plus one block's activations.
# Per configuration (tiny GPT-2, 3 layers, 3 steps, debug builds: NaN-filled arenas), it runs
# zgen + the trainer without and with checkpointing and checks:
#   - cmp of the logged losses/grad norms and of the exported safetensors;
#   - plan.json: act_ckpt true, host_acts_bytes (the host backend's buffer) = the checkpointed
#     formula (recomputed here from the shape: encoded, one block, the head's activations, L kept
#     block outputs); the device "acts" (train-cuda's layout, gen/model.c's dev_* lists) smaller,
#     and the device arena smaller by exactly the difference;
#   - the schedule: every block but the last has one recompute FORWARD (slot 1) right before its
#     BACKWARD; the GATHER ops (stage 3) are the same list as without (shared with backward).
# The same for a llama (grouped-query attention, untied head; its own acts layout, llama_host.h:
# q, k, v kept after RoPE, RMSNorm statistics, SwiGLU's gate, up and h) at ZeRO-3 with bf16 and
# parameters on NVMe; its host backend's acts and scratch bytes are checked against llama's formula
# (the device's are train-cuda's llama layout: t_train_cuda.sh runs it).
. "$(dirname "$0")/../lib.sh"
export ZR_DEBUG_MEM=1
zt_need_mpi "actckpt" numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null

GPT2='{arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 3, n_heads: 2, d_ff: 80}'
LLAMA='{arch: llama, vocab_size: 128, context: 16, d_model: 32, n_layers: 3, n_heads: 4, n_kv_heads: 2, d_ff: 72}'

# run TAG CKPT STAGE WS GAS PREC OPT PARAM -> $tmp/TAG/{losses.txt, w.safetensors, out/plan.json}
# (MODEL: the spec's model, gpt2's by default)
run() {
  local tag=$1 ck=$2 stage=$3 ws=$4 gas=$5 prec=$6 opt=$7 par=$8 d="$tmp/$1" mp=""
  [ "$prec" != fp32 ] && mp="\"$prec\": {\"enabled\": true},"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: ck
model: ${MODEL:-$GPT2}
train: {seq_len: 16, world_size: $ws, seed: 7, activation_checkpointing: $ck}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": $((ws * gas * 2)), "gradient_accumulation_steps": $gas, "gradient_clipping": 1.0, $mp
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 2500, "sub_group_size": 3000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 3000,
   "offload_optimizer": {"device": "$opt", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "$par", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log" >&2; return 1; }
  [ -d "$tmp/kobj" ] && cp "$tmp"/kobj/*_host*.o "$d/out/" 2>/dev/null
  zt_make -s -j2 -C "$d/out" DEBUG=1 >"$d/make.log" 2>&1 || { tail -20 "$d/make.log" >&2; return 1; }
  mkdir -p "$tmp/kobj"; cp -n "$d"/out/*_host*.o "$tmp/kobj/"
  ZG_NVME_DIR="$tmp/nvme/$tag" mpirun --oversubscribe -np "$ws" "$d/out/train" --data "$tmp/corpus.bin" \
      --steps 3 --log "$d/log.jsonl" --export "$d/w.safetensors" --threads 1 --quiet >"$d/run.log" 2>&1 ||
      { tail -5 "$d/run.log" >&2; return 1; }
  "$PY" -c 'import json,sys; [print(repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' \
      "$d/log.jsonl" >"$d/losses.txt"
}

# plan_checks OFF ON: the checkpointed plan's acts and schedule against the plain one
plan_checks() {
  "$PY" - "$tmp/$1/out/plan.json" "$tmp/$2/out/plan.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
m = b["model"]
B = b["config"]["micro_batch"]
T, C, F, NH, V, L = m["seq_len"], m["d_model"], m["d_ff"], m["n_heads"], m["vocab_size"], m["n_layers"]
BT, BTC, S = B * T, B * T * C, B * NH * T * T
if m["arch"] == "llama":   # llama_host.h: per block ln1, rstd, q, k, v, att, atty, res2, ln2, rstd, gate, up, h, res3
    KV = m["n_kv_heads"] * (C // NH)
    layer = 6 * BTC + 2 * BT + 2 * BT * KV + S + 3 * BT * F
    head = BTC + BT + BT * V + BT
    scratch = 4 * BTC + 2 * BT * KV + S + 3 * BT * F + T * (C // NH)
else:
    layer = 8 * BTC + 4 * BT + S + 2 * BT * F
    head = BTC + 2 * BT + BT * V + BT
    scratch = 6 * BTC + S + 2 * BT * F
want_on, want_off = 4 * (BTC + layer + head + L * BTC), 4 * (BTC + L * layer + head)
ma, mb = a["memory"], b["memory"]
errs = []
# the host backend's own buffer: the host kernels' layout
if ma["host_scratch_bytes"] != 4 * scratch or mb["host_scratch_bytes"] != 4 * scratch:
    errs.append(f"scratch {ma['host_scratch_bytes']}/{mb['host_scratch_bytes']} != {4 * scratch}")
if not mb["act_ckpt"] or ma["act_ckpt"]: errs.append("act_ckpt flags")
if mb["host_acts_bytes"] != want_on: errs.append(f"acts {mb['host_acts_bytes']} != {want_on}")
if ma["host_acts_bytes"] != want_off: errs.append(f"acts without {ma['host_acts_bytes']} != {want_off}")
# the device regions: train-cuda's layout (t_plan.c restates gpt2's; both 16-bit plans here have
# train-cuda), smaller with checkpointing
if ma["device_acts_layout"] != "train-cuda" or mb["device_acts_layout"] != "train-cuda": errs.append("device_acts_layout")
if not mb["acts_bytes"] < ma["acts_bytes"] or ma["scratch_bytes"] != mb["scratch_bytes"]:
    errs.append(f"device acts {ma['acts_bytes']} -> {mb['acts_bytes']}")
# activations are the only device category that changes, by exactly the acts difference
act = lambda p: p["tiers"]["device"]["categories"]["activations"]
if act(a) - act(b) != ma["acts_bytes"] - mb["acts_bytes"]: errs.append("device activations category")
others = lambda p: {k: v for k, v in p["tiers"]["device"]["categories"].items() if k != "activations"}
if others(a) != others(b): errs.append("other device categories changed")
sa, sb = a["schedule"]["last"], b["schedule"]["last"]
rc = [i for i, o in enumerate(sb) if o[0] == "FORWARD" and o[2] == 1]
blocks = [i for i, x in enumerate(b["modules"]) if x["kind"] == "block"]
if sorted(sb[i][1] for i in rc) != blocks[:-1]: errs.append(f"recomputed {[sb[i][1] for i in rc]}")
for i in rc:
    if sb[i + 1][:2] != ["BACKWARD", sb[i][1]]: errs.append(f"recompute {i} not before its backward")
if [o for o in sb if o[0] == "GATHER"] != [o for o in sa if o[0] == "GATHER"]: errs.append("gathers differ")
if [o for o in sb if not (o[0] == "FORWARD" and o[2] == 1)] != sa: errs.append("other ops differ")
print(f"acts {ma['host_acts_bytes']} -> {mb['host_acts_bytes']} bytes (device {ma['acts_bytes']} -> {mb['acts_bytes']}), {len(rc)} recomputes")
if errs: sys.exit("; ".join(errs))
EOF
}

for cfg in "gpt2 0 1 2 fp32 none none" "gpt2 3 2 2 bf16 cpu nvme" "gpt2 2 3 1 fp16 cpu none" "gpt2 3 2 1 fp32 none cpu" \
           "llama 3 2 2 bf16 cpu nvme"; do
  set -- $cfg
  arch=$1; shift
  if [ "$arch" = llama ]; then MODEL=$LLAMA; else MODEL=$GPT2; fi
  name="stage $1 ws $2 gas $3 $4 opt $5 param $6"
  [ "$arch" = gpt2 ] || name="$arch $name"
  off="${arch}_s$1_w$2_g$3_$4_$5_$6_off" on="${arch}_s$1_w$2_g$3_$4_$5_$6_on"
  if ! run "$off" false "$@" || ! run "$on" true "$@"; then fail "$name" "a run failed"; continue; fi
  if ! cmp -s "$tmp/$off/losses.txt" "$tmp/$on/losses.txt" || ! cmp -s "$tmp/$off/w.safetensors" "$tmp/$on/w.safetensors"; then
    fail "$name: with and without checkpointing bit-identical" "$(paste -d' ' "$tmp/$off/losses.txt" "$tmp/$on/losses.txt" | head -3 | tr '\n' ';')"
  else
    ok "$name: losses, grad norms and weights bit-identical with and without checkpointing ($(head -1 "$tmp/$on/losses.txt"))"
  fi
  if msg=$(plan_checks "$off" "$on" 2>&1); then ok "$name: plan: $msg"; else fail "$name: plan" "$msg"; fi
done
zt_end
