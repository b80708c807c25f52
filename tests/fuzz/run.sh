#!/usr/bin/env bash
# run.sh SECONDS [HARNESS...] — runs the libFuzzer harnesses bin/fuzz/fz_* (`make fuzz` builds them)
# for SECONDS each (default: all four). Each starts from its committed seeds (tests/fuzz/corpus/NAME)
# and the inputs it found before (bin/fuzz/corpus/NAME, kept out of git), after replaying the
# regression inputs of tests/fuzz/regress/NAME (past findings, each must now pass); crashes, hangs and OOMs
# are written to bin/fuzz/crashes/NAME-*. fz_spec gets the DeepSpeed-key dictionary.
# FUZZ_FORK=1: libFuzzer's fork mode, which goes on past a finding (for long runs; the generator's
# memory, never freed by design, goes back with each child). Prints "NAME ... ok|FAIL" and the
# libFuzzer summary (inputs run, coverage) per harness; exits 1 if any harness found something.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-60}; shift || true
names=${*:-"fz_spec fz_st fz_ckpt fz_data"}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p bin/fuzz/crashes
P=0; F=0
for n in $names; do
  b=bin/fuzz/$n; short=${n#fz_}
  [ -x "$b" ] || { echo "$n ... FAIL (not built: make fuzz-build)"; F=$((F+1)); continue; }
  mkdir -p "bin/fuzz/corpus/$short"
  opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=0
        -print_final_stats=1 -artifact_prefix="bin/fuzz/crashes/$short-" -max_len=8192)
  [ "$n" = fz_spec ] && opts+=(-dict=tests/fuzz/deepspeed.dict)
  [ "${FUZZ_FORK:-0}" = 1 ] && opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  log=bin/fuzz/$short.log
  if [ -d "tests/fuzz/regress/$short" ] && ! "$b" -runs=0 -timeout=10 -detect_leaks=0 -artifact_prefix="bin/fuzz/crashes/$short-regress-" "tests/fuzz/regress/$short" \
       >"bin/fuzz/$short.regress.log" 2>&1; then
    echo "$n ... FAIL (a regression input of tests/fuzz/regress/$short fails again; log bin/fuzz/$short.regress.log)"
    F=$((F+1)); continue
  fi
  before=$(ls bin/fuzz/crashes | grep -c "^$short-" || true)
  "$b" "${opts[@]}" "bin/fuzz/corpus/$short" "tests/fuzz/corpus/$short" >"$log" 2>&1
  rc=$?
  after=$(ls bin/fuzz/crashes | grep -c "^$short-" || true)
  # inputs run: libFuzzer's final stats, or in fork mode its last progress line
  runs=$(grep -E 'stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}')
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  runs="${runs:-?} inputs"
  if [ $rc -eq 0 ] && [ "$after" -eq "$before" ]; then echo "$n ... ok ($secs s; $runs)"; P=$((P+1))
  else
    echo "$n ... FAIL (exit $rc; $((after - before)) new finding(s) in bin/fuzz/crashes/$short-*; log $log)"
    grep -E "ERROR|runtime error|SUMMARY" "$log" | head -5
    F=$((F+1))
  fi
done
echo "$P passed, $F failed, 0 skipped"
[ $F -eq 0 ]
