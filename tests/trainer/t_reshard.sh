#!/usr/bin/env bash
# t_reshard.sh — resume anywhere. A tiny GPT-2 trains 4 steps at world size 2, ZeRO-3, optimizer on
# NVMe, parameters on CPU, and saves; the checkpoint is then resumed
#   - at world size 3, ZeRO-1, optimizer on CPU; at world size 1, ZeRO-0; at world size 4, ZeRO-2
#     (other bucket sizes, one micro-step): each continues 4 steps with losses within 1e-5 relative
#     of the world-size-2 continuation (same global batch; the reduction order differs);
#   - at world size 2 ZeRO-3 bf16: it loads (the working copy is the rounded master) and trains;
#   - by a trainer of another model (d_ff differs): refused, naming the first differing tensor.
# Round trip: resume at world size 3 ZeRO-1 and save at once, then resume that at world size 2
# ZeRO-3 NVMe and save at once: every shard file and the manifest are byte-identical to the
# originals; `zgen ckpt --export --state S` of the world-size-3 checkpoint equals that of the
# original for master, adam_m and adam_v (the tensors, whatever the sharding).
# Consolidation: `zgen ckpt DIR --export` equals the trainer's own --export byte for byte (fp32 and
# config.json), --dtype bf16 rounds it, --info names world size, stage, step, tensors and "checksums ok",
# and a shard with one flipped byte makes --info fail naming the shard.
# Memory: a ~30M-parameter GPT-2 saved at world size 2 ZeRO-3 is resumed at world size 4 ZeRO-3 and
# ZeRO-2: the bytes each rank reads from the checkpoint are about its own share of the optimizer
# state (<= 1/4 of the model's + 2 MiB), and its peak RSS stays below its plan's arenas plus a
# quarter of the model's optimizer state (the whole state would not fit under that bound).
# `zgen ckpt --export` of that checkpoint runs with a peak RSS under 64 MiB (the model's master is
# ~120 MB).
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "reshard" numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null

MODEL='{arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}'

# plan NAME WS STAGE GAS OPT PARAM [BUCKET] [PRECISION] [MODEL] -> $tmp/NAME/out/train
plan() {
  local d="$tmp/$1" mp="" model=${9:-$MODEL}
  [ -n "${8:-}" ] && mp="\"$8\": {\"enabled\": true},"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: rh
model: $model
train: {seq_len: 24, world_size: $2, seed: 3}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 12, "gradient_accumulation_steps": $4, "gradient_clipping": 1.0, $mp
 "zero_optimization": {"stage": $3, "reduce_bucket_size": ${7:-4000}, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_optimizer": {"device": "$5", "nvme_path": "$d/nvme"},
   "offload_param": {"device": "$6", "nvme_path": "$d/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 2e-3,
   "warmup_num_steps": 6, "warmup_type": "linear"}}}
EOF
  [ -d "$tmp/kobj" ] && cp "$tmp"/kobj/zk_host*.o "$d/out/" 2>/dev/null
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1 ||
    { cat "$d/gen.log" "$d/make.log"; return 1; }
}

# run NAME WS ARGS...
run() { local d="$tmp/$1" n=$2; shift 2; mpirun --oversubscribe -np "$n" "$d/out/train" --data "$tmp/corpus.bin" --threads 1 "$@"; }

losses() { "$PY" -c 'import json,sys; [print(json.loads(l)["step"], repr(json.loads(l)["loss"])) for l in open(sys.argv[1])]' "$1"; }

# near A B: same steps, losses within 1e-5 relative
near() {
  "$PY" - "$1" "$2" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
ok = len(a) == len(b) == 4 and all(x["step"] == y["step"] for x, y in zip(a, b))
worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b)) if ok else 1
print("# worst relative loss difference %.3g over steps %s" % (worst, [x["step"] for x in b]))
sys.exit(0 if ok and worst <= 1e-5 else 1)
EOF
}

plan a 2 3 2 nvme cpu || { fail "build ws2 z3 nvme"; zt_end; }
mkdir -p "$tmp/kobj"; cp "$tmp"/a/out/zk_host*.o "$tmp/kobj/"
plan b 3 1 2 cpu none || fail "build ws3 z1 cpu"
plan c 1 0 2 none none || fail "build ws1 z0"
plan d 4 2 1 none none 1500 || fail "build ws4 z2"
plan e 2 3 2 cpu none 4000 bf16 || fail "build ws2 z3 bf16"
plan f 2 3 2 none none 4000 "" '{arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 96}' ||
  fail "build other model"
DA="$tmp/a"
if ! run a 2 --steps 4 --save "$DA/ck" --log "$DA/first.jsonl" --export "$DA/exp4/model.safetensors" --quiet >"$DA/r0.log" 2>&1 ||
   ! run a 2 --steps 8 --resume "$DA/ck" --log "$DA/cont.jsonl" --quiet >"$DA/r1.log" 2>&1; then
  cat "$DA"/r*.log; fail "ws2 z3 nvme: train 4 steps, save, continue"; zt_end
fi
ok "ws2 z3 nvme: trained 4 steps, saved, continued to 8 ($(tail -1 "$DA/cont.jsonl" | cut -c1-40))"

for x in "b 3 ws3 z1 cpu" "c 1 ws1 z0" "d 4 ws4 z2 buckets 1500"; do
  set -- $x; name=$1 n=$2; shift 2; what="$*"
  DD="$tmp/$name"
  if run "$name" "$n" --steps 8 --resume "$DA/ck" --log "$DD/cont.jsonl" >"$DD/r.log" 2>&1 && near "$DA/cont.jsonl" "$DD/cont.jsonl"; then
    grep -m1 "resumed" "$DD/r.log" | sed 's/^/# /'
    ok "resume at $what: steps 4-7 within 1e-5 of ws2"
  else
    tail -5 "$DD/r.log"; fail "resume at $what"
  fi
done

DE="$tmp/e"
if run e 2 --steps 6 --resume "$DA/ck" --log "$DE/cont.jsonl" --quiet >"$DE/r.log" 2>&1 &&
   "$PY" -c 'import json,sys,math; l=[json.loads(x)["loss"] for x in open(sys.argv[1])]; sys.exit(0 if len(l)==2 and all(math.isfinite(v) and v < 6 for v in l) else 1)' "$DE/cont.jsonl"; then
  ok "resume an fp32 checkpoint into bf16 ZeRO-3 (losses $(losses "$DE/cont.jsonl" | cut -d' ' -f2 | tr '\n' ' '))"
else
  tail -5 "$DE/r.log"; fail "resume into bf16"
fi

DF="$tmp/f"
if ! run f 2 --steps 6 --resume "$DA/ck" --quiet >"$DF/r.log" 2>&1 && grep -q "h.0.mlp.c_fc.weight" "$DF/r.log"; then
  grep -m1 "another model" "$DF/r.log" | cut -c1-200 | sed 's/^/# /'; ok "another model refused, naming the first differing tensor"
else
  cat "$DF/r.log"; fail "another model refused, naming the first differing tensor"
fi

# round trip 2 -> 3 -> 2: byte-identical shards
DB="$tmp/b"
if run b 3 --steps 4 --resume "$DA/ck" --save "$DB/ck" --quiet >"$DB/rt.log" 2>&1 &&
   run a 2 --steps 4 --resume "$DB/ck" --save "$DA/back" --quiet >"$DA/rt.log" 2>&1; then
  same=1
  for f in "$DA"/ck/step_4/*; do cmp "$f" "$DA/back/step_4/$(basename "$f")" || same=0; done
  [ "$(ls "$DA/ck/step_4" | wc -l)" -eq 3 ] || same=0
  check "ws2 -> ws3 z1 -> ws2: shard files and manifest byte-identical" [ $same = 1 ]
  same=1
  for s in master adam_m adam_v; do
    bin/zgen ckpt "$DA/ck" --export "$tmp/x_a_$s/m.safetensors" --state $s >/dev/null 2>"$tmp/x.err" &&
    bin/zgen ckpt "$DB/ck" --export "$tmp/x_b_$s/m.safetensors" --state $s >/dev/null 2>>"$tmp/x.err" &&
    cmp "$tmp/x_a_$s/m.safetensors" "$tmp/x_b_$s/m.safetensors" || { same=0; cat "$tmp/x.err"; }
  done
  check "ws3 z1 checkpoint holds the ws2 z3 tensors bit for bit (master, adam_m, adam_v)" [ $same = 1 ]
else
  tail -5 "$DB/rt.log" "$DA/rt.log"; fail "round trip runs"
fi

# consolidation without MPI
if bin/zgen ckpt "$DA/ck" --export "$tmp/cons/model.safetensors" >"$tmp/cons.log" 2>&1 &&
   cmp "$tmp/cons/model.safetensors" "$DA/exp4/model.safetensors" && cmp "$tmp/cons/config.json" "$DA/exp4/config.json"; then
  ok "zgen ckpt --export equals the trainer's --export byte for byte (safetensors + config.json)"
else
  cat "$tmp/cons.log"; fail "zgen ckpt --export equals the trainer's --export"
fi
if bin/zgen ckpt "$DA/ck" --export "$tmp/cons16/model.safetensors" --dtype bf16 >"$tmp/c16.log" 2>&1 &&
   "$PY" - "$tmp/cons16/model.safetensors" "$DA/exp4/model.safetensors" <<'EOF'
import sys, json, struct
import numpy as np
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8+n]); d = b[8+n:]
    return {k: (v["dtype"], v["shape"], d[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys()
for k in a:
    assert a[k][0] == "BF16" and a[k][1] == b[k][1], k
    f = np.frombuffer(b[k][2], dtype=np.float32).view(np.uint32).astype(np.uint64)
    rne = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)   # round to nearest even
    assert np.array_equal(np.frombuffer(a[k][2], dtype=np.uint16), rne), k
EOF
then ok "zgen ckpt --export --dtype bf16: every tensor the round-to-nearest-even of the fp32 export"
else cat "$tmp/c16.log"; fail "zgen ckpt --export --dtype bf16"
fi
if bin/zgen ckpt "$DA/ck" --info >"$tmp/info.txt" 2>&1 && grep -q "world size 2" "$tmp/info.txt" &&
   grep -q "stage 3" "$tmp/info.txt" && grep -q "step 4" "$tmp/info.txt" && grep -q "checksums ok" "$tmp/info.txt" &&
   grep -q "h.1.mlp.c_proj.weight" "$tmp/info.txt"; then
  ok "zgen ckpt --info: $(grep -m1 "world size" "$tmp/info.txt")"
else
  cat "$tmp/info.txt"; fail "zgen ckpt --info"
fi
bin/zgen ckpt >/dev/null 2>&1; r1=$?
bin/zgen ckpt "$DA/ck" --export "$tmp/u.safetensors" --dtype fp8 >/dev/null 2>&1; r2=$?
bin/zgen ckpt "$tmp/nothing" --info >"$tmp/none.txt" 2>&1; r3=$?
if [ $r1 = 2 ] && [ $r2 = 2 ] && [ $r3 = 1 ] && grep -q "$tmp/nothing" "$tmp/none.txt"; then
  ok "zgen ckpt: usage errors exit 2, a missing checkpoint exits 1 naming it"
else
  cat "$tmp/none.txt"; fail "zgen ckpt: usage errors exit 2 ($r1, $r2), a missing checkpoint exits 1 ($r3)"
fi
cp -r "$DA/ck" "$tmp/bad"
sh1="$tmp/bad/step_4/rank_00001.zrs"
printf '\x5a' | dd of="$sh1" bs=1 seek=$(( $(stat -c %s "$sh1") / 2 )) count=1 conv=notrunc 2>/dev/null
if ! bin/zgen ckpt "$tmp/bad" --info >"$tmp/binfo.txt" 2>&1 && grep -q "rank_00001.zrs" "$tmp/binfo.txt"; then
  ok "zgen ckpt --info refuses a flipped byte, naming the shard"
else
  cat "$tmp/binfo.txt"; fail "zgen ckpt --info refuses a flipped byte"
fi

# memory: a ~30M-parameter model
BIGM='{arch: gpt2, vocab_size: 8192, context: 64, d_model: 512, n_layers: 8, n_heads: 8, d_ff: 2048}'
bigplan() {  # NAME WS STAGE
  local d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: rhbig
model: $BIGM
train: {seq_len: 32, world_size: $2, seed: 5}
deepspeed: {train_batch_size: 4, gradient_accumulation_steps: 1, zero_optimization: {stage: $3, offload_optimizer: {device: $4, nvme_path: $d/nvme}}, optimizer: {type: AdamW, params: {lr: 1.0e-4}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1 ||
    { cat "$d/gen.log" "$d/make.log"; return 1; }
}
# each rank under GNU time, its peak RSS (KiB) into PREFIX.<rank>
TIMED='exec /usr/bin/time -f %M -o "$0.$OMPI_COMM_WORLD_RANK" "$@"'
if bigplan g 2 3 nvme && bigplan h 4 3 none && bigplan i 4 2 none; then
  DG="$tmp/g"
  if run g 2 --steps 1 --save "$DG/ck" --quiet >"$DG/r.log" 2>&1; then
    for x in h i; do
      DX="$tmp/$x"
      # the same plan started fresh (random init, no step) and resumed (no step): peak RSS per rank
      if mpirun --oversubscribe -np 4 bash -c "$TIMED" "$DX/fresh" "$DX/out/train" \
           --data "$tmp/corpus.bin" --threads 1 --steps 0 --quiet >"$DX/f.log" 2>&1 &&
         mpirun --oversubscribe -np 4 bash -c "$TIMED" "$DX/rss" "$DX/out/train" \
           --data "$tmp/corpus.bin" --threads 1 --steps 1 --resume "$DG/ck" >"$DX/r.log" 2>&1; then
        if "$PY" - "$DX" <<'EOF'
import re, sys, glob
d = sys.argv[1]
line = [l for l in open(d + "/r.log") if l.startswith("resumed")][0]
reads = [int(x) for x in re.search(r"read per rank: ([\d ]+);", line).group(1).split()]
share = int(re.search(r"per rank (\d+) bytes", line).group(1))
model = int(re.search(r"whole model (\d+)", line).group(1))
rss = [int(open(f).read().split()[-1]) * 1024 for f in sorted(glob.glob(d + "/rss.*"))]
fresh = [int(open(f).read().split()[-1]) * 1024 for f in sorted(glob.glob(d + "/fresh.*"))]
ok = (len(reads) == 4 and max(reads) <= 1.1 * share + (2 << 20) and len(rss) == 4 and len(fresh) == 4
      and max(rss) <= max(fresh) + (16 << 20))
open(d + "/verdict.txt", "w").write(
    "bytes read per rank max %.1f MB (its share of the optimizer state %.1f MB, the model's %.1f MB); "
    "peak RSS per rank max %.1f MB resumed, %.1f MB started fresh" % (
    max(reads) / 1e6, share / 1e6, model / 1e6, max(rss) / 1e6, max(fresh) / 1e6))
sys.exit(0 if ok else 1)
EOF
        then ok "ws2 z3 -> ws4 z$([ $x = h ] && echo 3 || echo 2), 30M model: $(cat "$DX/verdict.txt")"
        else cat "$DX/verdict.txt"; echo; fail "ws4 z$([ $x = h ] && echo 3 || echo 2) resume reads its share, not the model"
        fi
      else
        tail -5 "$DX/f.log" "$DX/r.log"; fail "ws4 resume of the 30M model ($x)"
      fi
    done
    if /usr/bin/time -f "%M" -o "$tmp/cons_rss" bin/zgen ckpt "$DG/ck" --export "$tmp/gexp/model.safetensors" >"$tmp/gexp.log" 2>&1 &&
       [ "$(tail -1 "$tmp/cons_rss")" -lt 65536 ]; then
      ok "zgen ckpt --export of the 30M model: peak RSS $(( $(tail -1 "$tmp/cons_rss") / 1024 )) MiB for $(stat -c %s "$tmp/gexp/model.safetensors") bytes written"
    else
      cat "$tmp/gexp.log" "$tmp/cons_rss"; fail "zgen ckpt --export in bounded memory"
    fi
  else
    tail -5 "$DG/r.log"; fail "30M model: train 1 step at ws2 z3 and save"
  fi
else
  fail "build the 30M model plans"
fi
zt_end
