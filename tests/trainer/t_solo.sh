#!/usr/bin/env bash
# t_solo.sh — the one-process build (SOLO=1: libzrt against runtime/solo/mpi.h, no Open MPI): a
# world-size-1 trainer built that way links no MPI library, trains the same bits as the MPI build
# (losses and gradient norms of 4 steps, ZeRO-3 with the optimizer on NVMe and parameters on CPU:
# every collective and the watchdog's window go through the one-process MPI), checkpoints and
# resumes to the same bits, and refuses a plan made for 2 ranks with the usual message.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi t_solo
zt_build bin/zgen build/libzrt.a build/solo/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin/zgen specs/tiny.yaml --world-size 1 -o "$tmp/mpi" >/dev/null || { fail generate; zt_end; }
cp -r "$tmp/mpi" "$tmp/solo"
make -s -j2 -C "$tmp/mpi" >/dev/null 2>&1 || fail build_mpi
make -s -j2 -C "$tmp/solo" SOLO=1 >/dev/null 2>&1 || fail build_solo
if [ -x "$tmp/solo/train" ] && ! ldd "$tmp/solo/train" | grep -qi 'libmpi'; then ok solo_links_no_mpi
else fail solo_links_no_mpi "$(ldd "$tmp/solo/train" 2>&1 | grep -i mpi)"; fi
"$PY" scripts/make_corpus.py "$tmp/train.bin" --tokens 60000 >/dev/null 2>&1

run() {  # run BUILD LOG [args...]
  local b=$1 log=$2; shift 2
  (cd "$tmp/$b" && ./train --data "$tmp/train.bin" --log "$log" --threads 1 --quiet "$@") >"$log.out" 2>&1
}
same_steps() {  # same_steps A B: loss and grad_norm of every logged step equal
  "$PY" - "$1" "$2" <<'PY'
import json, sys
a, b = ([(r["step"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(f))] for f in sys.argv[1:3])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}
run mpi "$tmp/mpi.jsonl" --steps 4 && run solo "$tmp/solo.jsonl" --steps 4 \
  && same_steps "$tmp/mpi.jsonl" "$tmp/solo.jsonl"
check solo_same_bits_as_mpi [ $? -eq 0 ]

run solo "$tmp/s2.jsonl" --steps 2 --save "$tmp/ck" && run solo "$tmp/s4.jsonl" --steps 4 --resume "$tmp/ck" \
  && "$PY" - "$tmp/solo.jsonl" "$tmp/s4.jsonl" <<'PY'
import json, sys
full = {r["step"]: (r["loss"], r["grad_norm"]) for r in map(json.loads, open(sys.argv[1]))}
res = [(r["step"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(sys.argv[2]))]
sys.exit(0 if res and all(full.get(s) == (l, g) for s, l, g in res) else 1)
PY
check solo_resume_same_bits [ $? -eq 0 ]

bin/zgen specs/tiny.yaml -o "$tmp/w2" >/dev/null && make -s -j2 -C "$tmp/w2" SOLO=1 >/dev/null 2>&1
out=$(cd "$tmp/w2" && ./train --data "$tmp/train.bin" --steps 1 --quiet 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "generated for 2 ranks" <<<"$out"; then ok solo_refuses_two_rank_plan
else fail solo_refuses_two_rank_plan "rc $rc: $out"; fi
zt_end
