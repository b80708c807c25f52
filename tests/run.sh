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
#              own `make bin/zgen ...` calls would otherwise race each other.
#   --list F   run only the tests named in F (one path a line, # comments), e.g. tests/check.list
#   FILTER     run only the tests whose path holds FILTER
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ZT_ROOT=$PWD

# Tests that must run alone under -j: they build shared top-level targets (build/solo, build/fuzz,
# bin/fuzz) through the top-level Makefile, or they measure time (collective timeouts, a frozen rank
# that must end within a bound, signals), which a loaded machine would make flaky.
SERIAL="
tests/cuda/t_bundle.sh
tests/trainer/t_solo.sh
tests/fuzz/t_fuzz.sh
tests/runtime/t_coll_timeout.sh
tests/runtime/t_coll.sh
tests/trainer/t_faults.sh
tests/trainer/t_faults_io.sh
tests/trainer/t_nvme_paths.sh
tests/gen/t_interrupt.sh
tests/gen/t_bounds.sh
"

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

# tally TEST RC LOG SECONDS: prints the test's log and adds its line to the totals
tally() {
  local t=$1 rc=$2 log=$3 secs=$4 line p f s
  cat "$log"
  echo "-- $t: $secs s"
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
echo
[ ${#failed_names[@]} -gt 0 ] && printf 'FAILED: %s\n' "${failed_names[@]}"
echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
