#!/usr/bin/env bash
# t_deps.sh — no circles: the module graph of gen/ and runtime/ (a module is a .c file; A -> B when
# A uses a function or object B defines, docs/CONTRIBUTING.md "Modules") and the graph of their
# headers have no cycle. tests/gen/x_deps.py reads the graph from the sources, so the CUDA files
# compiled to nothing here are in it, and checks that reading against nm of the built objects.
# First it is shown a cycle through a shared *_int.h and a header cycle, which it must name.
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
X=tests/gen/x_deps.py

# A fixture: a.c and b.c call each other through one shared header, c.c only uses a; x.h and y.h
# need each other's names (one includes the other, the other uses its type).
mkdir -p "$tmp/fx/runtime" "$tmp/fx/gen"
cat >"$tmp/fx/runtime/zr_x_int.h" <<'EOF'
int zr_a(int);
int zr_b(int);
#define ZR_TWICE(v) zr_b(zr_b(v))
EOF
cat >"$tmp/fx/runtime/zr_a.c" <<'EOF'
#include "zr_x_int.h"
int zr_a(int v) { return v ? zr_b(v - 1) : 0; }
EOF
cat >"$tmp/fx/runtime/zr_b.c" <<'EOF'
#include "zr_x_int.h"
static int zr_c(int v) { return v; }
int zr_b(int v) { return v ? zr_a(v - 1) : zr_c(v); }
EOF
cat >"$tmp/fx/runtime/zr_c.c" <<'EOF'
#include "zr_x_int.h"
int zr_d(int zr_b);
int zr_d(int zr_b) { return zr_a(zr_b); }
EOF
cat >"$tmp/fx/gen/x.h" <<'EOF'
#include "y.h"
typedef struct { int n; } XThing;
EOF
cat >"$tmp/fx/gen/y.h" <<'EOF'
void y_use(XThing *t);
EOF
"$PY" $X "$tmp/fx" >"$tmp/fx.out" 2>&1
rc=$?
check "fixture cycle named" grep -q '^cycle: runtime/zr_a.c -> runtime/zr_b.c -> runtime/zr_a.c' "$tmp/fx.out"
check "fixture parameter is no use" bash -c "! grep -q 'zr_c.c -> runtime/zr_b.c' '$tmp/fx.out'"
check "fixture include cycle named" grep -q '^include cycle: gen/x.h -> gen/y.h -> gen/x.h' "$tmp/fx.out"
check "fixture exit status 1" test "$rc" = 1
# A macro of a shared header counts as a use of what it names: zr_c uses ZR_TWICE, so zr_c -> zr_b.
echo 'int zr_e(int v) { return ZR_TWICE(v) + zr_a(v); }' >>"$tmp/fx/runtime/zr_c.c"
echo 'int zr_a(int v) { return v; }' >"$tmp/fx/runtime/zr_a.c"
"$PY" $X "$tmp/fx" >"$tmp/fx2.out" 2>&1
check "fixture macro use is an edge" grep -q '^modules 3 edges 3 ' "$tmp/fx2.out"

# The tree: every object built under build/ is read with nm too (make check builds them first).
objs=$(ls build/gen/*.o build/runtime/*.o 2>/dev/null)
start=$(date +%s)
if [ -n "$objs" ]; then "$PY" $X --nm $objs . >"$tmp/tree.out" 2>&1
else "$PY" $X . >"$tmp/tree.out" 2>&1; fi
rc=$?
sed 's/^/  /' "$tmp/tree.out"
check "gen/ and runtime/: no module cycle" bash -c "! grep -q '^cycle:' '$tmp/tree.out'"
check "gen/ and runtime/: no header cycle" bash -c "! grep -q '^include cycle:' '$tmp/tree.out'"
if [ -n "$objs" ]; then
  check "nm finds no edge the sources do not" bash -c "! grep -q '^nm edge missed:' '$tmp/tree.out'"
else
  skip "nm finds no edge the sources do not" "no objects under build/ (make)"
fi
check "graph read (exit 0)" test "$rc" = 0
check "graph read in seconds" test $(( $(date +%s) - start )) -le 20

# The trainer templates are read the same way (--templates); their cycles are reported here, by
# name, until templates/trainer and templates/cuda_trainer are split (docs/CONTRIBUTING.md).
"$PY" $X --templates . >"$tmp/tpl.out" 2>&1
grep '^cycle: templates/\|^include cycle: templates/' "$tmp/tpl.out" | sed 's/ -> .* -> / ... /' >"$tmp/tpl.cycles"
if [ -s "$tmp/tpl.cycles" ]; then
  skip "templates: no module cycle" "$(paste -sd';' "$tmp/tpl.cycles")"
else
  ok "templates: no module cycle"
fi
zt_end
