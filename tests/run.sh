#!/usr/bin/env bash
# Runs every test: bin/tests/<area>/t_* binaries and tests/<area>/t_*.sh scripts.
# Each prints its own "N passed, N failed, N skipped" last line; this adds them up.
# A test that exits non-zero (other than 77 = skipped) without such a line counts as one failure.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ZT_ROOT=$PWD
filter=${1:-}
P=0; F=0; S=0; failed_names=()
tests=$(ls bin/tests/*/t_* tests/*/t_*.sh 2>/dev/null | sort)
for t in $tests; do
  [ -n "$filter" ] && [[ "$t" != *"$filter"* ]] && continue
  echo "== $t"
  log=$(mktemp); t0=$SECONDS
  if [[ "$t" == *.sh ]]; then bash "$t" >"$log" 2>&1; else "$t" >"$log" 2>&1; fi
  rc=$?
  cat "$log"
  echo "-- $t: $((SECONDS-t0)) s"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  rm -f "$log"
  if [ -n "$line" ]; then
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line"); s=${s:-0}
    P=$((P+p)); F=$((F+f)); S=$((S+s))
    if [ "$f" -gt 0 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ]; }; then
      failed_names+=("$t"); [ "$f" -eq 0 ] && F=$((F+1))
    fi
  elif [ $rc -eq 77 ]; then S=$((S+1))
  elif [ $rc -eq 0 ]; then P=$((P+1))
  else F=$((F+1)); failed_names+=("$t (exit $rc)")
  fi
done
echo
[ ${#failed_names[@]} -gt 0 ] && printf 'FAILED: %s\n' "${failed_names[@]}"
echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
