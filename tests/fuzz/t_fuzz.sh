#!/usr/bin/env bash
# t_fuzz.sh — the short form of `make fuzz` that CI runs: builds the libFuzzer harnesses (clang,
# build/fuzz and bin/fuzz, apart from the plain build), replays every committed seed and regression
# input once, then fuzzes each harness for FUZZ_SHORT_SECONDS (default 5). Skipped (77) where clang
# or its libFuzzer runtime (Debian: libclang-rt-14-dev) is missing.
. "$(dirname "$0")/../lib.sh"
secs=${FUZZ_SHORT_SECONDS:-5}
# the generator frees nothing by design (a short-lived compiler): no leak report at exit
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
command -v "${FUZZ_CC:-clang}" >/dev/null || zt_skip_all "fuzz" "no clang"
probe=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  rm -rf "$probe"; zt_skip_all "fuzz" "clang has no libFuzzer runtime (apt-get install libclang-rt-14-dev)"
fi
rm -rf "$probe"
mkdir -p bin/fuzz/crashes
if make -s fuzz-build >/tmp/t_fuzz_build.$$ 2>&1; then ok "harnesses build"; rm -f /tmp/t_fuzz_build.$$
else tail -20 /tmp/t_fuzz_build.$$; rm -f /tmp/t_fuzz_build.$$; fail "harnesses build"; zt_end; fi
for n in spec st ckpt data; do
  dirs=("tests/fuzz/corpus/$n"); [ -d "tests/fuzz/regress/$n" ] && dirs+=("tests/fuzz/regress/$n")
  if bin/fuzz/fz_$n -runs=0 -timeout=10 -detect_leaks=0 -artifact_prefix="bin/fuzz/crashes/$n-replay-" "${dirs[@]}" >"bin/fuzz/$n.replay.log" 2>&1; then
    ok "fz_$n replays $(ls "${dirs[@]}" | wc -l) seed and regression inputs"
  else grep -E "ERROR|runtime error|SUMMARY|Test unit" "bin/fuzz/$n.replay.log" | head -5; fail "fz_$n replay"; fi
done
out=$(bash tests/fuzz/run.sh "$secs" 2>&1)
echo "$out" | grep -v ' passed, '
while read -r line; do
  case "$line" in
    *" ... ok"*) P=$((P+1)) ;;
    *" ... FAIL"*) F=$((F+1)) ;;
  esac
done <<<"$(echo "$out" | grep -E '^fz_[a-z]+ \.\.\. ')"
zt_end
