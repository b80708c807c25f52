#!/usr/bin/env bash
# Runs every benchmark (bin/bench/b_* and bench/b_*.sh). Each appends one JSON object per figure to
# bench/out/results.jsonl: {"name","value","unit","peer","peer_value","ratio"[,"note"]}.
# Prints the figures as a table at the end.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p bench/out
: > bench/out/results.jsonl
export ZB_RESULTS=$PWD/bench/out/results.jsonl
filter=${1:-}
for b in $(ls bin/bench/b_* bench/b_*.sh 2>/dev/null | sort); do
  [ -n "$filter" ] && [[ "$b" != *"$filter"* ]] && continue
  echo "== $b"
  if [[ "$b" == *.sh ]]; then bash "$b"; else "$b"; fi || echo "   ($b exited $?)"
done
/usr/bin/python3 - "$ZB_RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print()
print(f"{'figure':44} {'value':>12} {'unit':10} {'peer':34} {'peer value':>12} {'ratio':>7}")
for r in rows:
    print(f"{r['name'][:44]:44} {r['value']:12.4g} {r['unit'][:10]:10} {r['peer'][:34]:34} {r['peer_value']:12.4g} {r['ratio']:7.3f}")
PY
