# tests/lib.sh — what every shell test shares; source it first:  . "$(dirname "$0")/../lib.sh"
# Puts the shell at the repository root, exports the MPI-as-root and OpenMP settings the tests run
# under, and gives the zt.h conventions to shell: ok/fail/skip/check print "name ... ok|FAIL|skip"
# and zt_end prints "N passed, N failed, N skipped" and exits 0, 1, or 77 when all skipped.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ZT_LIB_ROOT=$PWD                      # zt_make's runtime and cache, wherever the test has gone since
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE
PY=$PWD/build/py/bin/python           # the project's venv (scripts/install-deps.sh): Debian's torch
[ -x "$PY" ] || PY=/usr/bin/python3    # and numpy, the pinned Hugging Face packages
P=0; F=0; S=0
ok()    { echo "$1 ... ok"; P=$((P+1)); }
fail()  { echo "$1 ... FAIL${2:+ ($2)}"; F=$((F+1)); }
skip()  { echo "$1 ... skip${2:+ ($2)}"; S=$((S+1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
zt_end() {
  echo "$P passed, $F failed, $S skipped"
  if [ "$F" -gt 0 ]; then exit 1; elif [ "$P" -eq 0 ] && [ "$S" -gt 0 ]; then exit 77; fi
  exit 0
}
# zt_skip_all NAME REASON: the whole script cannot run here.
zt_skip_all() { echo "$1 ... skip ($2)"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
# zt_need_mpi NAME [torch|numpy]: skip unless mpirun (and the Python module) are there.
zt_need_mpi() {
  command -v mpirun >/dev/null || zt_skip_all "$1" "needs mpirun"
  [ -z "${2:-}" ] || "$PY" -c "import $2" 2>/dev/null || zt_skip_all "$1" "needs $PY with $2"
}
# zt_build TARGET...: make the named top-level targets, or fail the script.
zt_build() {
  make -s "$@" >/dev/null || { echo "build ... FAIL"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
}

# zt_make MAKE-ARGS...: make for an emitted trainer (-C DIR), built once per distinct input and reused:
# tests/zt_make (the trainer cache) with tests/zt_cc (the object cache) under build/trainer-cache/.
zt_make() { bash "$ZT_LIB_ROOT/tests/zt_make" "$@"; }
