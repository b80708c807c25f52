#!/usr/bin/env bash
# t_resume.sh — checkpoints of the emitted trainer: train 6 steps straight; train 3 steps with --save,
# then resume from the checkpoint to step 6. The losses and gradient norms of steps 3-5 (logged
# %.9g values) and the exported weights (cmp) must be bit-identical to the uninterrupted run.
# Plans: ZeRO-3 on 2 ranks with the optimizer on NVMe and parameters on CPU (the state comes back
# from the swap files through the checkpoint), ZeRO-2 on 2 ranks with CPU offload and 2 micro-steps
# of accumulation, and ZeRO-3 bf16 with parameters on NVMe (the bf16 working copy is rebuilt from
# the fp32 master); a warmup schedule makes the restored step count matter.
# Then a checkpoint with one byte altered in one shard, and one with a truncated shard, must be
# refused with a message naming the shard file. Last, the ZeRO-3 NVMe checkpoint resumed by a plan
# with every state in memory (same world size and stage) continues bit for bit; and a llama
# (grouped-query attention, untied head) resumes bit for bit at ZeRO-3 with the optimizer on NVMe.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "resume"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null

GPT2='{arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}'
LLAMA='{arch: llama, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 4, n_kv_heads: 2, d_ff: 100}'

losses() { "$PY" -c 'import json,sys; [print(json.loads(l)["step"], repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"]), repr(json.loads(l)["lr"])) for l in open(sys.argv[1])]' "$1"; }

# plan NAME STAGE GAS OPT PARAM [PRECISION] -> $tmp/NAME/out/train (MODEL: the spec's model, gpt2's)
plan() {
  local d="$tmp/$1" mp=""
  [ -n "${6:-}" ] && mp="\"$6\": {\"enabled\": true},"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: rs
model: ${MODEL:-$GPT2}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": $3, "gradient_clipping": 1.0, $mp
 "zero_optimization": {"stage": $2, "reduce_bucket_size": 4000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_optimizer": {"device": "$4", "nvme_path": "$d/nvme"},
   "offload_param": {"device": "$5", "nvme_path": "$d/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 2e-3,
   "warmup_num_steps": 4, "warmup_type": "linear"}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1 ||
    { cat "$d/gen.log" "$d/make.log"; return 1; }
}

train() { local d=$1; shift; mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/corpus.bin" --threads 1 --quiet "$@"; }

resume_case() {
  local name=$1 d="$tmp/$1"
  plan "$@" || { fail "$name: build"; return; }
  if ! train "$d" --steps 6 --log "$d/full.jsonl" --export "$d/full/w.safetensors" >"$d/r0.log" 2>&1 ||
     ! train "$d" --steps 3 --save "$d/ck" --log "$d/part.jsonl" >"$d/r1.log" 2>&1 ||
     ! train "$d" --steps 6 --resume "$d/ck" --log "$d/part.jsonl" --export "$d/res/w.safetensors" >"$d/r2.log" 2>&1; then
    cat "$d"/r*.log; fail "$name: runs"; return
  fi
  losses "$d/full.jsonl" >"$d/full.txt"; losses "$d/part.jsonl" >"$d/part.txt"
  if [ "$(wc -l <"$d/full.txt")" -eq 6 ] && cmp -s "$d/full.txt" "$d/part.txt" &&
     cmp -s "$d/full/w.safetensors" "$d/res/w.safetensors"; then
    ok "$name: resumed at step 3, steps 3-5 and weights bit-identical ($(tail -1 "$d/full.txt" | cut -d' ' -f2))"
  else
    diff "$d/full.txt" "$d/part.txt" | head; fail "$name: resume differs"
  fi
}

resume_case z3_nvme 3 1 nvme cpu
resume_case z2_cpu_gas2 2 2 cpu none
resume_case z3_bf16_pnvme 3 2 cpu nvme bf16
MODEL=$LLAMA resume_case llama_z3_nvme 3 2 nvme none

# damaged checkpoints of the first case
d="$tmp/z3_nvme"
shard=$(find "$d/ck" -name '*.zrs' | sort | tail -1)
if [ -z "$shard" ]; then
  fail "checkpoint shards present"
else
  cp -r "$d/ck" "$d/bad1"; cp -r "$d/ck" "$d/bad2"
  b1=${shard/$d\/ck/$d\/bad1}; b2=${shard/$d\/ck/$d\/bad2}
  size=$(stat -c %s "$b1")
  printf '\x5a' | dd of="$b1" bs=1 seek=$((size / 3)) count=1 conv=notrunc 2>/dev/null
  if ! train "$d" --steps 6 --resume "$d/bad1" >"$d/bad1.log" 2>&1 && grep -q "$(basename "$b1")" "$d/bad1.log"; then
    grep -m1 "error" "$d/bad1.log" | sed 's/^/# /'; ok "altered shard refused, naming $(basename "$b1")"
  else
    cat "$d/bad1.log"; fail "altered shard refused with its name"
  fi
  truncate -s $((size - 100)) "$b2"
  if ! train "$d" --steps 6 --resume "$d/bad2" >"$d/bad2.log" 2>&1 && grep -q "$(basename "$b2")" "$d/bad2.log"; then
    grep -m1 "error" "$d/bad2.log" | sed 's/^/# /'; ok "truncated shard refused, naming $(basename "$b2")"
  else
    cat "$d/bad2.log"; fail "truncated shard refused with its name"
  fi
fi
# Same world size and stage, other offload tiers: offload never changes a bit, so the ZeRO-3 NVMe
# checkpoint resumed by a plan that keeps everything in memory (a checkpoint read through the
# tensor index, not shard for shard) continues bit for bit: steps 3-5 and the exported weights.
if plan z3_mem 3 1 none none; then
  d="$tmp/z3_mem"
  if train "$d" --steps 6 --resume "$tmp/z3_nvme/ck" --log "$d/part.jsonl" --export "$d/res/w.safetensors" >"$d/r.log" 2>&1; then
    losses "$d/part.jsonl" >"$d/part.txt"
    if [ "$(wc -l <"$d/part.txt")" -eq 3 ] && cmp -s <(tail -3 "$tmp/z3_nvme/full.txt") "$d/part.txt" &&
       cmp -s "$tmp/z3_nvme/full/w.safetensors" "$d/res/w.safetensors"; then
      ok "ZeRO-3 NVMe checkpoint resumed in memory: steps 3-5 and weights bit-identical"
    else
      diff <(tail -3 "$tmp/z3_nvme/full.txt") "$d/part.txt" | head; fail "ZeRO-3 NVMe checkpoint resumed in memory differs"
    fi
  else
    tail -5 "$d/r.log"; fail "ZeRO-3 NVMe checkpoint resumed in memory: run"
  fi
else
  fail "z3_mem: build"
fi
zt_end
