#!/usr/bin/env bash
# t_cli.sh — bin/zgen end to end: plan.json / plan.txt byte-identical across runs, the default
# output folder, --world-size, --estimate (text and JSON), --dump, input errors exit 1, bad usage
# exits 2. Uses its own temp spec (inline deepspeed config) and specs/tiny.yaml when present.
set -u
cd "${ZT_ROOT:-$(dirname "$0")/../..}"
ROOT=$PWD
ZGEN=$ROOT/bin/zgen
PY=/usr/bin/python3
P=0; F=0
ok()  { echo "$1 ... ok"; P=$((P+1)); }
bad() { echo "$1 ... FAIL"; echo "  $2"; F=$((F+1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name" "command failed: $*"; fi; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$ZGEN" ]; then
  bad zgen_built "bin/zgen missing (make bin/zgen)"; echo "$P passed, $F failed, 0 skipped"; exit 1
fi

cat > "$tmp/small.yaml" <<'YAML'
name: small
model:
  arch: gpt2
  vocab_size: 300
  context: 32
  d_model: 48
  n_layers: 2
  n_heads: 4
train:
  seq_len: 32
  world_size: 2
deepspeed:
  train_micro_batch_size_per_gpu: 2
  gradient_accumulation_steps: 2
  bf16: {enabled: true}
  zero_optimization:
    stage: 3
    reduce_bucket_size: 20000
    stage3_param_persistence_threshold: 100
    offload_optimizer: {device: cpu}
YAML

specs=("$tmp/small.yaml")
[ -f specs/tiny.yaml ] && specs+=("specs/tiny.yaml")
for s in "${specs[@]}"; do
  n=$(basename "$s" .yaml)
  "$ZGEN" "$s" -o "$tmp/a_$n" >"$tmp/out1" 2>&1; rc1=$?
  "$ZGEN" "$s" -o "$tmp/b_$n" >"$tmp/out2" 2>&1; rc2=$?
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/a_$n/plan.json" "$tmp/b_$n/plan.json" &&
     cmp -s "$tmp/a_$n/plan.txt" "$tmp/b_$n/plan.txt"; then
    ok "identical_$n"
  else
    bad "identical_$n" "rc $rc1/$rc2; $(head -5 "$tmp/out1")"
  fi
  if grep -q "plan.txt" "$tmp/out1" && grep -q "memory per rank" "$tmp/out1"; then ok "summary_$n"
  else bad "summary_$n" "$(cat "$tmp/out1")"; fi
  if $PY - "$tmp/a_$n/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
m = p["model"]
assert p["partition"]["flat_numel"] == m["n_params"]
assert len(p["schedule"]["last"]) > 0 and len(p["regions"]) > 0
names = [t["name"] for t in p["tensors"]]
assert names[0] == "wte.weight" and names[-1] == "ln_f.bias"
for tier in p["tiers"].values():
    assert tier["bytes"] >= sum(tier["categories"].values())
PY
  then ok "json_valid_$n"; else bad "json_valid_$n" "plan.json does not parse or is inconsistent"; fi
done

# the default output folder is out/<name> relative to the working directory
(cd "$tmp" && "$ZGEN" "$tmp/small.yaml" >/dev/null 2>&1)
check default_outdir test -f "$tmp/out/small/plan.txt"

# --world-size overrides the spec
"$ZGEN" "$tmp/small.yaml" -o "$tmp/ws3" --world-size 3 >/dev/null 2>&1
if $PY -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["model"]["world_size"]==3 and p["config"]["train_batch_size"]==12' "$tmp/ws3/plan.json" 2>/dev/null
then ok world_size_override; else bad world_size_override "plan.json does not say world size 3, batch 12"; fi

# --estimate
out=$("$ZGEN" "$tmp/small.yaml" --estimate 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "estimate_zero3_model_states_mem_needs" <<<"$out" && grep -q "zgen's plan" <<<"$out"
then ok estimate_text; else bad estimate_text "rc $rc: $out"; fi
"$ZGEN" "$tmp/small.yaml" --estimate --json >"$tmp/est.json" 2>&1; rc=$?
if [ $rc -eq 0 ] && $PY -c 'import json,sys; e=json.load(open(sys.argv[1])); assert len(e["deepspeed"]["zero3"])==6 and e["zgen"]["device_bytes"]>0' "$tmp/est.json" 2>/dev/null
then ok estimate_json; else bad estimate_json "rc $rc: $(head -3 "$tmp/est.json")"; fi

# --dump
out=$("$ZGEN" "$tmp/small.yaml" -o "$tmp/d" --dump=plan 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "== schedule" <<<"$out"; then ok dump_plan; else bad dump_plan "rc $rc"; fi

# input errors exit 1 and say how many
sed 's/n_heads: 4/n_headz: 4/' "$tmp/small.yaml" > "$tmp/bad.yaml"
out=$("$ZGEN" "$tmp/bad.yaml" -o "$tmp/bad" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -qE "^[0-9]+ errors?$" <<<"$out"; then ok input_error_exit1; else bad input_error_exit1 "rc $rc: $out"; fi

# an error in a very long line (a one-line JSON config) quotes a window around the column, not the line
$PY - "$tmp/long.json" <<'PY'
import sys
# one line: a valid start, 100000 blanks, then a misspelt key (JSON allows the blanks)
open(sys.argv[1], "w").write('{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,'
                             + " " * 100000 + '"zero_optimizationz": {"stage": 1}}')
PY
sed "s|^deepspeed:.*|deepspeed: $tmp/long.json|; /^  train_micro_batch_size_per_gpu/,\$d" "$tmp/small.yaml" > "$tmp/long.yaml"
out=$("$ZGEN" "$tmp/long.yaml" -o "$tmp/long" 2>&1); rc=$?
quote=$(grep -A2 "zero_optimizationz" <<<"$out" | head -3)
maxw=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$out")
caret_ok=$($PY - <<PY
q = """$quote""".split("\n")
ok = len(q) == 3 and "^" in q[2]
if ok:
    col = q[2].index("^")
    ok = q[1][col:col + 20].startswith('"zero_optimizationz"') or q[1][col:col + 20].startswith("zero_optimizationz")
print(1 if ok else 0)
PY
)
if [ $rc -eq 1 ] && [ "$maxw" -lt 400 ] && [ "$caret_ok" = 1 ] && grep -q '| \.\.\.' <<<"$out"
then ok long_line_quote_window; else bad long_line_quote_window "rc $rc, widest line $maxw, caret_ok $caret_ok: $(head -c 600 <<<"$out")"; fi

# usage errors exit 2
for args in "" "--bogus" "--world-size" "--world-size x $tmp/small.yaml" "$tmp/small.yaml $tmp/small.yaml" "--dump=lua $tmp/small.yaml"; do
  # shellcheck disable=SC2086
  "$ZGEN" $args >/dev/null 2>&1; rc=$?
  if [ $rc -eq 2 ]; then ok "usage_exit2 [$args]"; else bad "usage_exit2 [$args]" "exit $rc"; fi
done
"$ZGEN" --help >"$tmp/help" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "usage: zgen" "$tmp/help"; then ok help; else bad help "exit $rc"; fi

echo "$P passed, $F failed, 0 skipped"
[ $F -eq 0 ]
