#!/usr/bin/env bash
# t_faults.sh — the emitted trainer under faults: each case must end (bounded by `timeout`) with a
# non-zero exit that is not a signal of the trainer's own (no crash), a message naming what failed
# (file, tensor, collective, rank) and, where a checkpoint existed before the fault, that checkpoint
# must still load and continue bit-identically to an uninterrupted run.
# Cases: a rank killed (SIGKILL) and a rank frozen (SIGSTOP: the collective watchdog must name the
# collective and the missing rank) mid-training via ZG_FAULT_EXIT_RANK/STEP; disk full while saving
# (tmpfs, ENOSPC) and a file-size limit (ulimit -f in each rank, EFBIG: SIGXFSZ must not kill it);
# the NVMe swap directory too small at start; bad --data files (missing, short, truncated, bad magic, bad version, tokens >= vocab); a
# damaged --init-from (truncated, wrong shape, missing tensor); --resume at another world size (it now
# reshards and continues) or of another model. The tmpfs cases need mount (root); else skipped.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "faults"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
mnts=()
cleanup() { for m in "${mnts[@]}"; do umount "$m" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 >/dev/null 2>&1

# plan NAME WORLD STAGE OPT D_MODEL -> $tmp/NAME/out/train (vocab 128, seq 24, 2 layers)
plan() {
  local d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: $1
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: $5, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: $2, seed: 3}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": $3, "reduce_bucket_size": 4000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_optimizer": {"device": "$4", "nvme_path": "$d/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 2e-3,
   "warmup_num_steps": 4, "warmup_type": "linear"}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1 ||
    { cat "$d/gen.log" "$d/make.log"; return 1; }
}

# run NAME NP LOG ARGS...: the trainer under mpirun, bounded; the exit status is left in $rc
run() {
  local d="$tmp/$1" np=$2 log=$3; shift 3
  timeout -k 5 40 mpirun --oversubscribe ${MPIFLAGS:-} -np "$np" ${WRAP:-} "$d/out/train" --data "${DATA:-$tmp/corpus.bin}" \
    --threads 1 --quiet "$@" >"$log" 2>&1
  rc=$?
}

# expect_fail WHAT LOG PATTERN...: rc non-zero, not a timeout, not a signal of the trainer, and
# every egrep PATTERN in the log
expect_fail() {
  local what=$1 log=$2; shift 2
  if [ "$rc" -eq 0 ]; then cat "$log"; fail "$what" "exit 0"; return 1; fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && ! grep -q "exited on signal 9" "$log"; then
    cat "$log"; fail "$what" "hung: killed by timeout"; return 1
  fi
  if grep -Eq "exited on signal (11|6|7|8|25)|Segmentation|core dumped|Aborted" "$log"; then
    cat "$log"; fail "$what" "crashed"; return 1
  fi
  for p in "$@"; do
    if ! grep -Eq -- "$p" "$log"; then cat "$log"; fail "$what" "no /$p/ in the message"; return 1; fi
  done
  grep -m1 -E "error|TIMEOUT|cannot|noticed" "$log" | cut -c1-200 | sed 's/^/# /'
  ok "$what (exit $rc)"
}

losses() { "$PY" -c 'import json,sys; [print(json.loads(l)["step"], repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' "$1"; }

# resumes_identically NAME CKDIR WHAT: --resume CKDIR to step 6 matches the reference run's steps
# from the checkpoint on, and its exported weights
resumes_identically() {
  local n=$1 ck=$2 what=$3 d="$tmp/$1"
  rm -f "$d/res.jsonl" "$d/res.safetensors"
  run "$n" 2 "$d/res.log" --steps 6 --resume "$ck" --log "$d/res.jsonl" --export "$d/res.safetensors"
  if [ "$rc" -ne 0 ]; then cat "$d/res.log"; fail "$what" "resume failed"; return; fi
  losses "$d/ref.jsonl" >"$d/ref.txt"; losses "$d/res.jsonl" >"$d/res.txt"
  local k; k=$(wc -l <"$d/res.txt")
  if [ "$k" -ge 1 ] && [ "$k" -lt 6 ] && tail -n "$k" "$d/ref.txt" | cmp -s - "$d/res.txt" &&
     cmp -s "$d/ref.safetensors" "$d/res.safetensors"; then
    ok "$what (resumed at step $((6 - k)), steps and weights bit-identical)"
  else
    diff "$d/ref.txt" "$d/res.txt" | head; fail "$what" "resume differs"
  fi
}

plan fz 2 3 nvme 48 || { fail "build fz"; echo "$P passed, $F failed, $S skipped"; exit 1; }
d="$tmp/fz"
run fz 2 "$d/ref.log" --steps 6 --log "$d/ref.jsonl" --export "$d/ref.safetensors"
[ "$rc" -eq 0 ] || { cat "$d/ref.log"; fail "reference run"; }

# --- a rank dies: SIGKILL at step 3 after a checkpoint at step 2
rm -rf "$d/ck"
t0=$SECONDS
ZG_FAULT_EXIT_RANK=1 ZG_FAULT_EXIT_STEP=3 ZR_COLL_TIMEOUT_S=5 run fz 2 "$d/kill.log" --steps 6 --save "$d/ck" --save-every 2
if expect_fail "rank 1 killed at step 3: mpirun ends in $((SECONDS - t0)) s, naming rank 1" "$d/kill.log" \
     "rank 1 .*exited on signal 9"; then
  if [ "$(cat "$d/ck/latest" 2>/dev/null)" = step_2 ]; then ok "checkpoint of step 2 is latest"
  else fail "checkpoint of step 2 is latest" "latest: $(cat "$d/ck/latest" 2>/dev/null)"; fi
  resumes_identically fz "$d/ck" "checkpoint saved before the kill"
fi

# --- a rank freezes: the watchdog on rank 0 names the collective and the missing rank
rm -rf "$d/ck"
t0=$SECONDS
ZG_FAULT_SIGNAL=STOP ZG_FAULT_EXIT_RANK=1 ZG_FAULT_EXIT_STEP=3 ZR_COLL_TIMEOUT_S=3 run fz 2 "$d/stop.log" --steps 6 --save "$d/ck" --save-every 2
el=$((SECONDS - t0))
if [ "$el" -gt 20 ]; then fail "frozen rank: ended in $el s" "ZR_COLL_TIMEOUT_S=3 not honoured"
elif expect_fail "rank 1 frozen at step 3: rank 0 times out in $el s naming the collective and rank 1" "$d/stop.log" \
     "TIMEOUT after [0-9]+ s in (all_gather|all_reduce|reduce_scatter|broadcast|barrier).*step 3" \
     "ranks not arrived: 1 " "ZR_COLL_TIMEOUT_S"; then
  resumes_identically fz "$d/ck" "checkpoint saved before the freeze"
fi

# --- disk full while saving: a tmpfs that holds one checkpoint and a half
ck_bytes=$(du -sb "$d/ck/step_2" | cut -f1)
m="$tmp/mnt_ck"; mkdir -p "$m"
if ! mount -t tmpfs -o size=$(( (ck_bytes * 3 / 2) / 4096 * 4 ))k tmpfs "$m" 2>/dev/null; then
  skip "disk full while saving" "cannot mount a tmpfs"
  skip "NVMe swap directory full at start" "cannot mount a tmpfs"
else
  mnts+=("$m")
  run fz 2 "$d/full.log" --steps 6 --save "$m/ck" --save-every 2
  if expect_fail "disk full while saving step 4: ENOSPC naming the shard" "$d/full.log" \
       "--save $m/ck: checkpoint of step 4 not written: $m/ck/step_4[^ ]*/rank_0000[01]\.zrs[^ ]*: .*No space left on device \(ENOSPC\)" "HINT"; then
    left=$(find "$m/ck" -name '*.tmp.*' | wc -l)
    if [ "$(cat "$m/ck/latest")" = step_2 ] && [ "$left" -eq 0 ]; then ok "after ENOSPC: latest is step_2, no partial shard left"
    else fail "after ENOSPC: latest is step_2, no partial shard left" "latest $(cat "$m/ck/latest"), $left temp files"; fi
    resumes_identically fz "$m/ck" "checkpoint before the full disk"
  fi
  umount "$m"
  # the NVMe swap file (3 MiB per rank) on a 1 MiB file system: refused before step 1
  m="$tmp/mnt_nvme"; mkdir -p "$m"
  mount -t tmpfs -o size=1m tmpfs "$m" && mnts+=("$m")
  rm -f "$d/nv.jsonl"
  ZG_NVME_DIR=$m run fz 2 "$d/nv.log" --steps 2 --log "$d/nv.jsonl"
  if expect_fail "NVMe swap directory too small: refused naming the file, the size and what to do" "$d/nv.log" \
       "$m/zgen_fz_rank[01]\.swp" "[0-9.]+ MiB" "No space left on device" "HINT: .*(free space|elsewhere)"; then
    if [ -s "$d/nv.jsonl" ]; then fail "no step ran with a full swap directory" "$(wc -l <"$d/nv.jsonl") steps logged"
    else ok "no step ran with a full swap directory"; fi
  fi
  umount "$m"
fi

# --- a file-size limit while saving (ulimit -f, EFBIG), on a plan without NVMe swap files. Only
# the ranks get the limit, and they talk over TCP: Open MPI's shared-memory segments would hit it.
plan fc 2 2 cpu 48 || fail "build fc"
c="$tmp/fc"
run fc 2 "$c/ref.log" --steps 6 --log "$c/ref.jsonl" --export "$c/ref.safetensors"
run fc 2 "$c/s2.log" --steps 2 --save "$c/ck"
shard=$(stat -c %s "$c/ck/step_2/rank_00000.zrs" 2>/dev/null || echo 0)
if [ "$rc" -ne 0 ] || [ "$shard" -lt 8192 ]; then cat "$c/s2.log"; fail "fc: checkpoint of step 2"
else
  printf '#!/bin/sh\nulimit -f %d && exec "$@"\n' $(( shard / 2048 )) >"$tmp/fsize.sh"; chmod +x "$tmp/fsize.sh"
  MPIFLAGS="--mca pml ob1 --mca btl self,tcp --mca osc ^sm" WRAP="$tmp/fsize.sh" \
    run fc 2 "$c/fsz.log" --steps 4 --resume "$c/ck" --save "$c/ck"
  if expect_fail "file-size limit while saving step 4: EFBIG naming the shard" "$c/fsz.log" \
       "$c/ck/step_4[^ ]*/rank_0000[01]\.zrs[^ ]*: .*File too large \(EFBIG\)" "HINT: .*ulimit -f"; then
    [ "$(cat "$c/ck/latest")" = step_2 ] && ok "after EFBIG: latest is step_2" || fail "after EFBIG: latest is step_2"
    resumes_identically fc "$c/ck" "checkpoint before the file-size limit"
  fi
fi

# --- bad --data files
mk() { "$PY" - "$tmp/corpus.bin" "$@" <<'PYEOF'
import sys, struct
src, dst, kind = sys.argv[1:4]
raw = bytearray(open(src, "rb").read())
if kind == "short": raw = raw[:100]
elif kind == "truncated": raw = raw[:1024 + 2 * 5000]
elif kind == "magic": raw[0:4] = struct.pack("<i", 20240521)
elif kind == "version": raw[4:8] = struct.pack("<i", 7)
elif kind == "vocab": raw[1024 + 2 * 777:1024 + 2 * 778] = struct.pack("<H", 200)
open(dst, "wb").write(raw)
PYEOF
}
DATA="$tmp/nope.bin" run fz 2 "$d/dmiss.log" --steps 2
expect_fail "--data missing: named, ENOENT" "$d/dmiss.log" "--data: .*nope\.bin.*No such file"
for k in short truncated magic version vocab; do
  mk "$tmp/$k.bin" "$k"
  DATA="$tmp/$k.bin" run fz 2 "$d/d$k.log" --steps 2
  case $k in
    short) pat="header";; truncated) pat="20000 tokens but the file holds 5000";;
    magic) pat="bad magic 20240521";; version) pat="version 7, expected 1";; vocab) pat="token 777 is 200, not below vocab_size 128";;
  esac
  expect_fail "--data $k file: named, the reason, what to do" "$d/d$k.log" "--data: .*$k\.bin" "$pat" "HINT"
done

# --- damaged --init-from
st() { "$PY" - "$d/ref.safetensors" "$@" <<'PYEOF'
import sys
sys.path.insert(0, "tests/trainer")
import numpy as np, safetensors_io as sio
src, dst, kind = sys.argv[1:4]
t, meta = sio.load(src)
if kind == "shape": t["h.1.attn.c_attn.weight"] = t["h.1.attn.c_attn.weight"][:, :-3].copy()
elif kind == "missing": del t["h.1.mlp.c_fc.bias"]
sio.save(dst, t, meta)
PYEOF
}
cp "$d/ref.safetensors" "$tmp/trunc.safetensors"
truncate -s $(( $(stat -c %s "$tmp/trunc.safetensors") / 2 )) "$tmp/trunc.safetensors"
run fz 2 "$d/itr.log" --steps 1 --init-from "$tmp/trunc.safetensors"
expect_fail "--init-from truncated: names the file" "$d/itr.log" "trunc\.safetensors"
st "$tmp/shape.safetensors" shape
run fz 2 "$d/ish.log" --steps 1 --init-from "$tmp/shape.safetensors"
expect_fail "--init-from wrong shape: names the tensor and the file" "$d/ish.log" "shape\.safetensors" "h\.1\.attn\.c_attn\.weight" "HINT"
st "$tmp/miss.safetensors" missing
run fz 2 "$d/imi.log" --steps 1 --init-from "$tmp/miss.safetensors"
expect_fail "--init-from missing tensor: names the tensor and the file" "$d/imi.log" "miss\.safetensors" "h\.1\.mlp\.c_fc\.bias" "HINT"

# --- --resume at another world size (continues) or of another model (refused)
run fz 2 "$d/s.log" --steps 2 --save "$d/ck2"
plan fz1 1 3 nvme 48 || fail "build fz1"
run fz1 1 "$d/rw.log" --steps 4 --resume "$d/ck2"
# resuming at another world size is supported (t_reshard.sh checks the numbers): it must just work
if [ "$rc" -eq 0 ]; then ok "--resume of a 2-rank checkpoint on 1 rank: resharded, continues"
else cat "$d/rw.log"; fail "--resume of a 2-rank checkpoint on 1 rank: resharded, continues"; fi
plan fzm 2 3 nvme 60 || fail "build fzm"
run fzm 2 "$d/rm.log" --steps 4 --resume "$d/ck2"
expect_fail "--resume of another model: refused, saying why" "$d/rm.log" "ck2" "another plan|model|params"

zt_end
