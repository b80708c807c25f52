#!/usr/bin/env bash
# t_san.sh — CI's sanitizer pass (the short form of `make test SAN=1`): a copy of the sources is built
# with ASan + UBSan (-fno-sanitize-recover=all) in a temp tree, so the plain build/ and bin/ are left
# alone; then every generator and runtime unit test binary runs there, and one emitted trainer
# (ZeRO-3, optimizer on NVMe) built sanitized trains 2 ranks for 3 steps, saves, and resumes for 2.
# Any sanitizer report fails the case. Skipped (77) where the compiler cannot link a sanitized program.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "san"
grep -q '^san' build/flavor 2>/dev/null && zt_skip_all "san" "this whole run is sanitized (make test SAN=1)"
SANF="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
tmp=$(mktemp -d)
[ -d "$tmp" ] || { echo "mktemp ... FAIL"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
echo 'int main(void) { return 0; }' >"$tmp/p.c"
${CC:-cc} $SANF "$tmp/p.c" -o "$tmp/p" >/dev/null 2>&1 && "$tmp/p" || zt_skip_all "san" "${CC:-cc} cannot build with ASan+UBSan"

src="$tmp/src"
mkdir -p "$src"
cp -r Makefile gen runtime templates specs scripts docs "$src/"
mkdir -p "$src/tests" && cp -r tests/*.h tests/lib.sh tests/gen tests/runtime tests/bad "$src/tests/"
units=$(cd "$src" && ls tests/gen/t_*.c tests/runtime/t_*.c | sed 's|^tests/\(.*\)\.c$|bin/tests/\1|')
t0=$SECONDS
if make -s -C "$src" -j2 SAN=1 OPT=-O1 all $units >"$tmp/build.log" 2>&1; then ok "sanitized build ($((SECONDS - t0)) s)"
else tail -30 "$tmp/build.log"; fail "sanitized build"; zt_end; fi

san_clean() { ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$1"; }
for b in $units; do
  (cd "$src" && ZT_ROOT=$src "./$b") >"$tmp/u.log" 2>&1; urc=$?
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/u.log" | tail -1)
  if { [ $urc -eq 0 ] || [ $urc -eq 77 ]; } && san_clean "$tmp/u.log"; then ok "$b under ASan+UBSan: $last"
  else grep -E "FAIL|Sanitizer|runtime error|SUMMARY" "$tmp/u.log" | head -8; fail "$b under ASan+UBSan" "exit $urc; $last"; fi
done

"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 >/dev/null 2>&1
d="$tmp/tr"
mkdir -p "$d"
cat >"$d/spec.yaml" <<EOF
name: san
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOF
cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": 3, "reduce_bucket_size": 4000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_optimizer": {"device": "nvme", "nvme_path": "$d/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}}}
EOF
if "$src/bin/zgen" "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 && san_clean "$d/gen.log" &&
   EXTRA_CFLAGS="$SANF" EXTRA_LDFLAGS="$SANF" make -s -j2 -C "$d/out" OPT="-O1 -g" >"$d/make.log" 2>&1; then
  ok "zgen and the trainer build sanitized"
  tr() { timeout -k 5 120 mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/corpus.bin" --threads 1 --quiet "$@"; }
  tr --steps 3 --save "$d/ck" --log "$d/a.jsonl" >"$d/a.log" 2>&1; arc=$?
  if [ $arc -eq 0 ] && san_clean "$d/a.log" && [ "$(wc -l <"$d/a.jsonl")" -eq 3 ]; then ok "2-rank trainer under ASan+UBSan: 3 steps and a save"
  else cat "$d/a.log" | head -40; fail "2-rank trainer under ASan+UBSan" "exit $arc"; fi
  tr --steps 5 --resume "$d/ck" --log "$d/b.jsonl" >"$d/b.log" 2>&1; brc=$?
  if [ $brc -eq 0 ] && san_clean "$d/b.log" && [ "$(wc -l <"$d/b.jsonl")" -eq 2 ]; then ok "2-rank trainer under ASan+UBSan: resume for 2 steps"
  else cat "$d/b.log" | head -40; fail "2-rank resume under ASan+UBSan" "exit $brc"; fi
else cat "$d/gen.log"; tail -20 "$d/make.log"; fail "zgen and the trainer build sanitized"; fi
zt_end
