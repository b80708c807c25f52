#!/usr/bin/env bash
# t_coll.sh — collectives (zr_coll.h) on 1, 2, 3 and 4 ranks: x_coll check runs every collective
# with every dtype and sizes that do not divide by the world size, results against sums computed
# from each rank's regenerated input. Ends with "N passed, N failed, N skipped".
set -u
cd "${ZT_ROOT:-$(dirname "$0")/../..}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
x=bin/tests/runtime/x_coll
P=0; F=0; S=0
if [ ! -x "$x" ] || ! command -v mpirun >/dev/null; then
  echo "t_coll ... skip (no $x or no mpirun)"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
# np, then the reduction path: shm (default on one node), shm in tiny chunks, alltoall
run() {
  local np=$1 path=$2; shift 2
  out=$(env "$@" X_COLL_PATH=$path timeout 120 mpirun --oversubscribe -np $np -x X_COLL_PATH \
        -x ZR_COLL_SHM -x ZR_COLL_SHM_KB "$x" check 2>&1); rc=$?
  line=$(grep -E '^[0-9]+ passed, 0 failed' <<<"$out" | tail -1)
  name="collectives on $np ranks, $path ($*)"
  if [ $rc -eq 0 ] && [ -n "$line" ]; then
    echo "$name ... ok ($line)"; P=$((P+1))
  else
    echo "$name ... FAIL (exit $rc)"; echo "$out" | sed 's/^/  /' | head -40; F=$((F+1))
  fi
}
export ZR_COLL_SHM=1 ZR_COLL_SHM_KB=16384
run 1 alltoall ZR_COLL_SHM=1
for np in 2 3 4; do
  run $np shm ZR_COLL_SHM=1
  run $np shm ZR_COLL_SHM=1 ZR_COLL_SHM_KB=4
  run $np alltoall ZR_COLL_SHM=0
done
echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
