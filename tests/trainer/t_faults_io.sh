#!/usr/bin/env bash
# t_faults_io.sh — the emitted trainer under the faults t_faults.sh does not inject (issue 13):
# - swap I/O: EIO on a write and on a read of the NVMe swap file (ZR_NVME_FAULT, runtime/zr_nvme.h)
#   ends the run, bounded, naming the file, offset and errno; short transfers on every completion and
#   an EAGAIN storm that the engine absorbs give the same losses as a clean run, bit for bit; an
#   endless EAGAIN storm ends with a named EAGAIN, not a hang;
# - nvme_path that is a regular file, a dangling symlink, /proc: refused at start-up, before step 0;
# - SIGKILL of every rank and SIGTERM of mpirun while a checkpoint is being written (the moment the
#   step's .tmp directory appears): `latest` names a complete checkpoint, no .tmp is taken for one,
#   and resuming from it continues bit-identically to an uninterrupted run;
# - a checkpoint shard altered on disk after the save (one byte flipped): refused at resume by its
#   CRC32C, naming the file.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "faults_io"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
[ -d "$tmp" ] || { echo "mktemp ... FAIL"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 >/dev/null 2>&1

d="$tmp/fio"
mkdir -p "$d"
cat >"$d/spec.yaml" <<EOF
name: fio
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOF
cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": 3, "reduce_bucket_size": 4000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_optimizer": {"device": "nvme", "nvme_path": "$d/nvme"}},
 "aio": {"block_size": 16384, "queue_depth": 4},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 2e-3,
   "warmup_num_steps": 4, "warmup_type": "linear"}}}
EOF
if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1; then
  cat "$d/gen.log" "$d/make.log"; fail "build fio"; zt_end
fi

# run LOG ARGS...: the trainer under mpirun, bounded; exit status in $rc
run() {
  local log=$1; shift
  timeout -k 5 60 mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/corpus.bin" --threads 1 --quiet "$@" \
    >"$log" 2>&1
  rc=$?
}
losses() { "$PY" -c 'import json,sys; [print(json.loads(l)["step"], repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' "$1"; }
# expect_fail WHAT LOG PATTERN...: non-zero, not a timeout, not a crash, every egrep PATTERN in the log
expect_fail() {
  local what=$1 log=$2; shift 2
  if [ "$rc" -eq 0 ]; then cat "$log"; fail "$what" "exit 0"; return 1; fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then cat "$log"; fail "$what" "hung: killed by timeout"; return 1; fi
  if grep -Eq "exited on signal (11|6|7|8)|Segmentation|core dumped|Aborted|AddressSanitizer|runtime error" "$log"; then
    cat "$log"; fail "$what" "crashed"; return 1
  fi
  for p in "$@"; do
    if ! grep -Eq -- "$p" "$log"; then cat "$log"; fail "$what" "no /$p/ in the output"; return 1; fi
  done
  grep -m1 -E "zr_nvme:|checkpoint" "$log" | cut -c1-220 | sed 's/^/# /'
  ok "$what (exit $rc)"
}

# N steps for the fault runs; the reference runs NK, the length of the kill runs (long enough that
# a signal lands before the run ends; the first N steps of it are the N-step run's: WarmupLR does not
# depend on the run's length)
N=8; NK=30
run "$d/ref.log" --steps $NK --log "$d/ref.jsonl"
[ "$rc" -eq 0 ] || { cat "$d/ref.log"; fail "reference run"; zt_end; }
losses "$d/ref.jsonl" >"$d/refk.txt"
head -n $N "$d/refk.txt" >"$d/ref.txt"

# --- swap I/O faults
ZR_NVME_FAULT="eio@40:w" run "$d/eio_w.log" --steps $N
expect_fail "EIO on a swap write ends the run naming the file" "$d/eio_w.log" \
  "write of [0-9]+ bytes at offset [0-9]+ of .*zgen_fio_rank[01].swp failed" "Input/output error"
# (a read fault may hit the edge-sector read of an unaligned write: then the write is named)
ZR_NVME_FAULT="eio@25:r" run "$d/eio_r.log" --steps $N
expect_fail "EIO on a swap read ends the run naming the file" "$d/eio_r.log" \
  "(read|write) of [0-9]+ bytes at offset [0-9]+ of .*zgen_fio_rank[01].swp failed" "Input/output error"
ZR_NVME_FAULT="eagain@10x100000000" run "$d/again_inf.log" --steps $N
expect_fail "an endless EAGAIN storm ends with a named EAGAIN, not a hang" "$d/again_inf.log" \
  "zgen_fio_rank[01].swp failed.*(Resource temporarily unavailable|errno 11)"
for f in "short@1x100000000" "eagain@1x900" "short@1x100000000,eagain@5x700:r"; do
  rm -f "$d/f.jsonl"
  ZR_NVME_FAULT="$f" run "$d/f.log" --steps $N --log "$d/f.jsonl"
  if [ "$rc" -eq 0 ] && losses "$d/f.jsonl" | cmp -s - "$d/ref.txt"; then
    ok "ZR_NVME_FAULT=$f absorbed: losses bit-identical to the clean run"
  else cat "$d/f.log"; fail "ZR_NVME_FAULT=$f absorbed" "rc $rc or losses differ"; fi
done

# --- nvme_path that cannot hold swap files: refused before step 0
touch "$tmp/regular"; ln -s "$tmp/nowhere/at/all" "$tmp/dangling"
for bad in "$tmp/regular:not a directory" "$tmp/dangling:dangling symlink" "/proc:pseudo file system"; do
  dir=${bad%%:*}; want=${bad#*:}
  rm -f "$d/b.jsonl"
  ZG_NVME_DIR=$dir run "$d/b.log" --steps $N --log "$d/b.jsonl"
  if expect_fail "nvme_path $dir refused at start-up" "$d/b.log" "swap directory $dir" "$want"; then
    [ -s "$d/b.jsonl" ] && fail "nvme_path $dir: no step before the check" "$(head -2 "$d/b.jsonl")"
  fi
done

# --- killed while a checkpoint is written
# kill_during_save SIG WHO STEP: train N steps saving every step; when ck/step_STEP.tmp appears,
# send SIG to WHO (ranks: every rank, as a batch scheduler does; mpirun: mpirun, which forwards it)
kill_during_save() {
  local sig=$1 who=$2 at=$3 what="SIG$1 to $2 while step $3 is saved"
  rm -rf "$d/ck" "$d/k.jsonl"
  timeout -k 5 60 mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/corpus.bin" --threads 1 --quiet \
    --steps $NK --save "$d/ck" --save-every 1 >"$d/k.log" 2>&1 &
  local mp=$! t=0
  while [ ! -d "$d/ck/step_$at.tmp" ] && kill -0 $mp 2>/dev/null && [ $t -lt 2000000 ]; do t=$((t+1)); done
  local mid=no; [ -d "$d/ck/step_$at.tmp" ] && mid=yes
  # timeout's child is mpirun; its children are the ranks
  if [ "$who" = ranks ]; then kill -"$sig" $(pgrep -P "$(pgrep -P $mp)") 2>/dev/null
  else kill -"$sig" "$(pgrep -P $mp)" 2>/dev/null; fi
  wait $mp; local krc=$?
  local latest; latest=$(cat "$d/ck/latest" 2>/dev/null)
  echo "# $what: exit $krc, step_$at.tmp seen: $mid, latest: ${latest:-none}, left: $(ls "$d/ck" 2>/dev/null | tr '\n' ' ')"
  if [ "$krc" -eq 0 ]; then fail "$what" "the run was not stopped (exit 0)"; return; fi
  case "$latest" in
    step_*.tmp|"") fail "$what" "latest is '${latest}'"; return ;;
  esac
  [ -f "$d/ck/$latest/manifest.json" ] || { fail "$what" "latest $latest has no manifest"; return; }
  # mpirun forwards the signal late on a loaded machine: if the ranks finished every step first,
  # latest (complete, checked above) is the last step and there is no interrupted save to resume
  if [ "$latest" = "step_$NK" ]; then
    skip "$what" "the signal reached the ranks only after their last step; latest $latest is complete"
    return
  fi
  rm -f "$d/r.jsonl"
  run "$d/r.log" --steps $NK --resume "$d/ck" --log "$d/r.jsonl"
  losses "$d/r.jsonl" >"$d/r.txt" 2>/dev/null
  local k; k=$(wc -l <"$d/r.txt")
  if [ "$rc" -eq 0 ] && [ "$k" -ge 1 ] && tail -n "$k" "$d/refk.txt" | cmp -s - "$d/r.txt"; then
    ok "$what: $latest resumes bit-identically ($k steps)"
  else cat "$d/r.log"; diff "$d/ref.txt" "$d/r.txt" | head -5; fail "$what" "resume from $latest failed or differs"; fi
}
kill_during_save KILL ranks 3
kill_during_save KILL ranks 5
kill_during_save TERM ranks 4
kill_during_save TERM mpirun 6

# --- a checkpoint shard altered on disk after the save: refused at resume by its checksum
rm -rf "$d/ck"
run "$d/s.log" --steps 3 --save "$d/ck"
sh="$d/ck/step_3/rank_00001.zrs"
if [ "$rc" -ne 0 ] || [ ! -f "$sh" ]; then cat "$d/s.log"; fail "save for the alteration case"
else
  printf '\x5a' | dd of="$sh" bs=1 seek=100 conv=notrunc status=none
  run "$d/alt.log" --steps $N --resume "$d/ck"
  expect_fail "a shard altered after the save is refused at resume" "$d/alt.log" "rank_00001.zrs" "CRC32C"
fi
zt_end
