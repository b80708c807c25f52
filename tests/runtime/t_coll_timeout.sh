#!/usr/bin/env bash
# t_coll_timeout.sh — a collective that cannot complete ends every rank with a message, never a hang:
#   late: rank 1 sleeps 60 s before the second collective; with ZR_COLL_TIMEOUT_S=2 the others
#         must report the collective, its sequence number, the step and rank 1 as not arrived,
#         and mpirun must exit non-zero well before rank 1 would have woken up.
#   skip: rank 1 skips an all_reduce (a mismatched schedule): the job must end, non-zero, naming it.
# Ends with "N passed, N failed, N skipped".
set -u
cd "${ZT_ROOT:-$(dirname "$0")/../..}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
x=bin/tests/runtime/x_coll
P=0; F=0; S=0
if [ ! -x "$x" ] || ! command -v mpirun >/dev/null; then
  echo "t_coll_timeout ... skip (no $x or no mpirun)"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
ok() { echo "$1 ... ok"; P=$((P+1)); }
bad() { echo "$1 ... FAIL ($2)"; echo "$out" | sed 's/^/  /' | head -30; F=$((F+1)); }

for np in 2 4; do
  name="late rank 1 of $np times out"
  t0=$(date +%s)
  out=$(ZR_COLL_TIMEOUT_S=2 timeout 90 mpirun --oversubscribe -np $np -x ZR_COLL_TIMEOUT_S "$x" late 60 2>&1); rc=$?
  dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then bad "$name" "exit $rc"
  elif [ $dt -ge 30 ]; then bad "$name" "took $dt s: rank 1 was not ended"
  # whichever waiting rank reports first (MPI_Abort may end the others before they print)
  elif ! grep -Eq 'zr_coll: TIMEOUT after 2 s in all_reduce \(seq 2, step 7, 64 x fp32\) on rank [023] of '$np <<<"$out"; then
    bad "$name" "no TIMEOUT line naming the collective, seq and step"
  elif ! grep -q 'ranks not arrived: 1 (at seq 1 barrier, step 7)$' <<<"$out"; then
    bad "$name" "the missing rank is not named"
  elif grep -q 'finished without a timeout' <<<"$out"; then bad "$name" "it finished"
  else ok "$name (exit $rc after ${dt}s)"; fi
done

name="skipped all_reduce on 3 ranks ends the job"
t0=$(date +%s)
out=$(ZR_COLL_TIMEOUT_S=2 timeout 90 mpirun --oversubscribe -np 3 -x ZR_COLL_TIMEOUT_S "$x" skip 2>&1); rc=$?
dt=$(( $(date +%s) - t0 ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then bad "$name" "exit $rc"
elif [ $dt -ge 30 ]; then bad "$name" "took $dt s"
elif ! grep -Eq 'mismatched schedule|ranks not arrived: 1 ' <<<"$out"; then bad "$name" "no message naming the mismatch"
elif ! grep -Eq 'seq 2 (barrier|all_reduce)|in all_reduce \(seq 2' <<<"$out"; then bad "$name" "the collective is not named"
else ok "$name (exit $rc after ${dt}s)"; fi

echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
