#!/usr/bin/env bash
# Runs every test: bin/tests/<area>/t_* binaries and tests/<area>/t_*.sh scripts.
# Each prints its own "N passed, N failed, N skipped" last line; this adds them up.
# A test that exits non-zero (other than 77 = skipped) without such a line counts as one failure.
#
#   tests/run.sh [-j N] [--list FILE] [FILTER]
#   -j N       run N tests at a time (default 1: one after another, in name order). Each test's log is
#              printed whole when it ends, in completion order; the tests in SERIAL below (and any
#              script with a "# zt: serial" line) run afterwards, alone, in name order. With -j > 1
#              the build must be current first (make test-run / make check do that): the tests'
#              own `make bin/zgen ...` calls would otherwise race each other (make test-build builds
#              everything the tests use, build/solo included).
#   --list F   run only the tests named in F (one path a line, # comments), e.g. tests/check.list
#   FILTER     run only the tests whose path holds FILTER
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ZT_ROOT=$PWD

# Tests that must run alone under -j: they measure time (collective timeouts, a frozen rank that must
# end within a bound, signals), which a loaded machine would make flaky. (build/solo, which t_solo and
# t_bundle link, is built by make test-build first; build/fuzz and bin/fuzz are t_fuzz's alone.)
SERIAL="
tests/runtime/t_coll_timeout.sh
tests/runtime/t_coll.sh
tests/trainer/t_faults.sh
tests/trainer/t_faults_io.sh
tests/trainer/t_nvme_paths.sh
tests/gen/t_interrupt.sh
tests/gen/t_bounds.sh
"

# Under -j, the tests that take longest start first, so that the last minutes are not one long test
# alone: in the order of their times in the last run that timed them (build/test-times, which every
# run updates), or, where none is recorded, the ones below first (the slowest on the 2-core machine),
# then the rest in name order.
SLOW="
tests/cuda/t_train_cuda.sh
tests/trainer/t_spec.sh
tests/trainer/t_matrix.sh
tests/cuda/t_links.sh
tests/trainer/t_hf_llama.sh
tests/fuzz/t_fuzz.sh
tests/trainer/t_finetune.sh
tests/cuda/t_ptxas.sh
tests/cuda/t_graphs.sh
tests/trainer/t_hf_gpt2.sh
tests/trainer/t_reshard.sh
tests/cuda/t_bundle.sh
tests/san/t_san.sh
tests/data/t_zgen_data.sh
tests/trainer/t_memfall.sh
tests/trainer/t_actckpt.sh
"
times=build/test-times

jobs=1; list=""; filter=""
while [ $# -gt 0 ]; do
  case $1 in
    -j) jobs=${2:?-j needs a number}; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    --list) list=${2:?--list needs a file}; shift 2 ;;
    *) filter=$1; shift ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -j wants a positive number, not '$jobs'" >&2; exit 2; }

P=0; F=0; S=0; failed_names=()
mkdir -p build; times_new=$(mktemp "$times.XXXXXX")
# the emitted-trainer caches (tests/zt_make, tests/zt_cc) start again once they pass 4 GiB
[ -d build/trainer-cache ] && [ "$(du -sm build/trainer-cache | cut -f1)" -gt 4096 ] && rm -rf build/trainer-cache
tests=$(ls bin/tests/*/t_* tests/*/t_*.sh 2>/dev/null | sort)
if [ -n "$list" ]; then
  want=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
  for w in $want; do grep -qxF "$w" <<<"$tests" || echo "run.sh: $list names $w, which is not a test" >&2; done
  tests=$(grep -xF -f <(echo "$want") <<<"$tests")
fi
sel=()
for t in $tests; do
  [ -n "$filter" ] && [[ "$t" != *"$filter"* ]] && continue
  sel+=("$t")
done

is_serial() {
  grep -qxF "$1" <<<"$SERIAL" && return 0
  [[ "$1" == *.sh ]] && grep -q '^# zt: serial' "$1" 2>/dev/null
}

# run_one TEST LOG: runs one test with its output in LOG; its exit status is the test's
run_one() {
  if [[ "$1" == *.sh ]]; then bash "$1" >"$2" 2>&1; else "$1" >"$2" 2>&1; fi
}

# by_time TEST...: the tests, longest first (build/test-times, else SLOW first), one a line
by_time() {
  local t w i=0
  for t in "$@"; do
    i=$((i + 1))
    w=$(awk -v t="$t" '$2 == t { w = $1 } END { print w }' "$times" 2>/dev/null)
    if [ -z "$w" ]; then w=$(grep -nxF "$t" <<<"$SLOW" | cut -d: -f1); [ -n "$w" ] && w=$((100000 - w)) || w=-1; fi
    printf '%s %06d %s\n' "$w" "$i" "$t"
  done | sort -k1,1nr -k2,2n | cut -d' ' -f3
}

# tally TEST RC LOG SECONDS: prints the test's log and adds its line to the totals
tally() {
  local t=$1 rc=$2 log=$3 secs=$4 line p f s
  cat "$log"
  echo "-- $t: $secs s"
  echo "$secs $t" >>"$times_new"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$line" ]; then
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line"); s=${s:-0}
    P=$((P+p)); F=$((F+f)); S=$((S+s))
    if [ "$f" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; }; then
      failed_names+=("$t"); [ "$f" -eq 0 ] && F=$((F+1))
    fi
  elif [ "$rc" -eq 77 ]; then S=$((S+1))
  elif [ "$rc" -eq 0 ]; then P=$((P+1))
  else F=$((F+1)); failed_names+=("$t (exit $rc)")
  fi
}

run_serially() {
  local t log t0 rc
  for t in "$@"; do
    echo "== $t"
    log=$(mktemp); t0=$SECONDS
    run_one "$t" "$log"; rc=$?
    tally "$t" $rc "$log" $((SECONDS-t0))
    rm -f "$log"
  done
}

if [ "$jobs" -eq 1 ]; then
  run_serially ${sel[@]+"${sel[@]}"}
else
  par=(); ser=()
  for t in ${sel[@]+"${sel[@]}"}; do if is_serial "$t"; then ser+=("$t"); else par+=("$t"); fi; done
  [ ${#par[@]} -gt 0 ] && mapfile -t par < <(by_time "${par[@]}")
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  # Each test runs in a background job that writes $work/N.log, then $work/N.rc ("RC SECONDS") last;
  # the main loop reports every finished test (whole log) as soon as its .rc appears.
  n=${#par[@]}; next=0; running=0; reported=0; done_flag=()
  report_finished() {
    local i rc secs
    for ((i = 0; i < next; i++)); do
      [ -n "${done_flag[i]:-}" ] && continue
      [ -f "$work/$i.rc" ] || continue
      read -r rc secs <"$work/$i.rc"
      echo "== ${par[i]}"
      tally "${par[i]}" "$rc" "$work/$i.log" "$secs"
      done_flag[i]=1; reported=$((reported+1)); running=$((running-1))
    done
  }
  while [ $reported -lt $n ]; do
    while [ $running -lt "$jobs" ] && [ $next -lt $n ]; do
      ( t0=$SECONDS; run_one "${par[next]}" "$work/$next.log"; rc=$?
        echo "$rc $((SECONDS-t0))" >"$work/$next.rc.tmp" && mv "$work/$next.rc.tmp" "$work/$next.rc" ) &
      next=$((next+1)); running=$((running+1))
    done
    wait -n 2>/dev/null || true
    report_finished   # (a job's .rc is in place before the job exits, so wait -n never returns early)
  done
  wait
  run_serially ${ser[@]+"${ser[@]}"}
fi
# build/test-times: this run's times replace the recorded ones of the same tests
{ awk 'NR == FNR { seen[$2] = 1; next } !($2 in seen)' "$times_new" "$times" 2>/dev/null; cat "$times_new"; } \
  >"$times_new.all" && mv -f "$times_new.all" "$times"
rm -f "$times_new"
echo
[ ${#failed_names[@]} -gt 0 ] && printf 'FAILED: %s\n' "${failed_names[@]}"
echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
