#!/usr/bin/env bash
# t_hf_auto.sh — a DeepSpeed config as Hugging Face Trainer users write it ("auto" wherever HF's
# Trainer fills it: specs/configs/hf_auto.json) through bin/zgen with specs/tiny.yaml, end to end:
#   - zgen prints one line per "auto", at the key's line, with the value HF would fill; the expected
#     values are computed here from tiny.yaml's train: keys, HF's TrainingArguments defaults and
#     --steps, and so are the lines;
#   - the same config with those values written out by hand emits the same trainer (zg_model.h and
#     the tables differ only in ZG_GEN_ARGS), so each resolution is the number the trainer runs with;
#   - plan.txt and plan.json show every training setting with where it came from;
#   - without --steps, total_num_steps "auto" is an error at its line (source line and caret);
#   - ZG_GEN_ARGS is the command line minus -o / --world-size, quoted so that the shell reads it back;
#     output stays byte-identical into another folder;
#   - the trainer builds and trains 2 MPI ranks, and the lr of every step is WarmupDecayLR's from
#     those numbers (DeepSpeed's formula, written out here).
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen build/libzrt.a
"$PY" -c "import yaml" 2>/dev/null || zt_skip_all hf_auto "needs $PY with yaml"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
CFG=specs/configs/hf_auto.json
STEPS=20

bin/zgen specs/tiny.yaml -c $CFG -o "$tmp/a" --steps $STEPS >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
if [ $rc -ne 0 ]; then cat "$tmp/a.err"; fail "generate $CFG --steps $STEPS (exit $rc)"; zt_end; fi
ok "generate $CFG --steps $STEPS"

# What HF's Trainer would fill, from the spec's numbers and TrainingArguments' defaults; the explicit
# config (every "auto" replaced by it; reduce_bucket_size left out, as zgen sizes it either way).
check "one line per \"auto\", each with the value and line computed here" \
  "$PY" - specs/tiny.yaml $CFG "$tmp/a.err" $STEPS "$tmp/explicit.json" <<'EOF'
import json, re, sys, yaml
spec, cfg_path, err, steps, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
t = yaml.safe_load(open(spec))["train"]
d = yaml.safe_load(open(spec))["model"]["d_model"]
micro, gas, ws = t["micro_batch_size"], t.get("grad_accum", 1), t["world_size"]
lr = float(t["lr"])
want = {
    "train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": gas,
    "train_batch_size": micro * gas * ws, "gradient_clipping": t.get("max_grad_norm", 1.0),
    "fp16.enabled": False, "bf16.enabled": False,
    "optimizer.params.lr": lr, "optimizer.params.betas": t.get("betas", [0.9, 0.999]),
    "optimizer.params.eps": t.get("eps", 1e-8), "optimizer.params.weight_decay": t.get("weight_decay", 0.0),
    "scheduler.params.warmup_min_lr": 0, "scheduler.params.warmup_max_lr": lr,
    "scheduler.params.warmup_num_steps": t.get("warmup_steps", 0), "scheduler.params.total_num_steps": steps,
    "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * d * d),
    "zero_optimization.stage3_param_persistence_threshold": 10 * d,
}
text = open(cfg_path).read().split("\n")
got = {}
for l in open(err):
    m = re.match(r'zgen: (\S+):(\d+): (\S+): "auto" -> (.*?)(?: \(|$)', l.rstrip("\n"))
    if m: got[m.group(3)] = (int(m.group(2)), m.group(4))
bad = []
cfg = json.load(open(cfg_path))
n_auto = sum(l.count('"auto"') for l in text)
if len(got) != n_auto: bad.append(f"{len(got)} lines for {n_auto} \"auto\"")
for key, v in want.items():
    if key not in got: bad.append(f"no line for {key}"); continue
    line, val = got[key]
    leaf = key.split(".")[-1]
    if f'"{leaf}": "auto"' not in text[line - 1]: bad.append(f"{key}: line {line} is {text[line - 1]!r}")
    if json.loads(val) != v: bad.append(f"{key}: {val} != {v}")
    node, parts = cfg, key.split(".")
    for p in parts[:-1]: node = node[p]
    node[parts[-1]] = v
if "sized by zgen" not in open(err).read(): bad.append("reduce_bucket_size: no 'sized by zgen'")
del cfg["zero_optimization"]["reduce_bucket_size"]
json.dump(cfg, open(out, "w"), indent=1)
print("# " + "; ".join(bad) if bad else f"# {len(got)} resolutions as computed")
sys.exit(1 if bad else 0)
EOF

if bin/zgen specs/tiny.yaml -c "$tmp/explicit.json" -o "$tmp/x" --steps $STEPS >/dev/null 2>"$tmp/x.err"; then
  d=$(for f in zg_model.h zg_tables.h zg_tables.c; do diff "$tmp/a/$f" "$tmp/x/$f"; done | grep '^[<>]' | grep -v 'ZG_GEN_ARGS')
  check "the values written out emit the same trainer (only ZG_GEN_ARGS differs)" test -z "$d"
  [ -z "$d" ] || echo "$d" | head -10 | sed 's/^/# /'
  check "the explicit config prints no \"auto\" line" bash -c "! grep -q '\"auto\" ->' '$tmp/x.err'"
else
  cat "$tmp/x.err"; fail "the values written out emit the same trainer"
fi

check "plan.txt and plan.json list each setting with where it came from" \
  "$PY" - "$tmp/a/plan.txt" "$tmp/a/plan.json" <<'EOF'
import json, sys
txt = open(sys.argv[1]).read()
j = json.load(open(sys.argv[2]))["training"]
bad = []
if "== training settings" not in txt: bad.append("no training section in plan.txt")
for k in ["optimizer.type", "optimizer.params.lr", "optimizer.params.betas", "optimizer.params.eps",
          "optimizer.params.weight_decay", "optimizer.params.bias_correction", "gradient_clipping",
          "bf16.enabled", "fp16.enabled", "scheduler.type", "scheduler.params.warmup_min_lr",
          "scheduler.params.warmup_max_lr", "scheduler.params.warmup_num_steps",
          "scheduler.params.warmup_type", "scheduler.params.total_num_steps"]:
    if k not in j: bad.append(f"plan.json: no {k}"); continue
    row = [l for l in txt.split("\n") if l.startswith(f"  {k} ")]
    if not row: bad.append(f"plan.txt: no {k}"); continue
    if j[k]["from"] == "auto" and f"auto (line {j[k]['line']}) <- {j[k]['source']}" not in row[0]:
        bad.append(f"plan.txt {k}: {row[0]!r}")
if j["optimizer.params.lr"]["source"] != "spec train.lr": bad.append("lr source")
if j["scheduler.params.total_num_steps"] != {"value": 20, "from": "auto", "source": "zgen --steps",
                                             "line": j["scheduler.params.total_num_steps"]["line"]}:
    bad.append(f"total_num_steps {j['scheduler.params.total_num_steps']}")
if j["optimizer.type"]["value"] != "AdamW" or j["optimizer.type"]["from"] != "config": bad.append("optimizer.type")
print("# " + "; ".join(bad) if bad else "# 15 settings in both")
sys.exit(1 if bad else 0)
EOF

# No --steps: an error at total_num_steps' line, with the line quoted and a caret, and nothing resolved
L=$(grep -n '"total_num_steps": "auto"' $CFG | cut -d: -f1)
bin/zgen specs/tiny.yaml -c $CFG -o "$tmp/n" >/dev/null 2>"$tmp/n.err"; rc=$?
check "no --steps: exit 1, $CFG:$L: error naming --steps, quoted with a caret" bash -c "
  [ $rc -eq 1 ] && grep -q '^$CFG:$L:[0-9]*: error: scheduler.params.total_num_steps is \"auto\" but zgen was given no --steps' '$tmp/n.err' &&
  grep -q 'pass --steps N to zgen' '$tmp/n.err' && grep -q '^ *$L | ' '$tmp/n.err' && grep -q '\^' '$tmp/n.err' &&
  ! grep -q '\"auto\" ->' '$tmp/n.err'"
bin/zgen specs/tiny.yaml -c $CFG --steps 0 >/dev/null 2>&1; rc0=$?
bin/zgen specs/tiny.yaml -c $CFG --steps >/dev/null 2>&1; rc1=$?
check "bad --steps is a usage error (exit 2)" test $rc0 -eq 2 -a $rc1 -eq 2

# ZG_GEN_ARGS: as given minus -o / --world-size; the same bytes into another folder
check "ZG_GEN_ARGS is the command line without -o" \
  grep -q "^#define ZG_GEN_ARGS  *\"specs/tiny.yaml -c $CFG --steps $STEPS\"$" "$tmp/a/zg_model.h"
bin/zgen specs/tiny.yaml -o "$tmp/b" --world-size 2 -c $CFG --steps=$STEPS >/dev/null 2>&1
sed -i "s|--steps=$STEPS|--steps $STEPS|" "$tmp/b/zg_model.h"      # the one spelling that differs
check "another folder and --world-size: byte-identical output" diff -r "$tmp/a" "$tmp/b"
mkdir -p "$tmp/my dir"; cp $CFG "$tmp/my dir/it's.json"
if bin/zgen specs/tiny.yaml -c "$tmp/my dir/it's.json" -o "$tmp/q" --steps $STEPS >/dev/null 2>&1; then
  printf '#include <stdio.h>\n#include "zg_model.h"\nint main(void) { puts(ZG_GEN_ARGS); return 0; }\n' >"$tmp/q.c"
  if cc -std=c11 -Wall -Werror -Iruntime -I"$tmp/q" "$tmp/q.c" -o "$tmp/q.bin" 2>"$tmp/q.log"; then
    # the shell reads the printed line back into the arguments zgen was given
    words=$(eval "set -- $("$tmp/q.bin")"; printf '[%s]' "$@")
    check "ZG_GEN_ARGS quotes a path with a space and a quote" \
      test "$words" = "[specs/tiny.yaml][-c][$tmp/my dir/it's.json][--steps][$STEPS]"
  else cat "$tmp/q.log"; fail "ZG_GEN_ARGS compiles"; fi
else fail "generate with a quoted config path"; fi

# Train: 2 ranks, the lr of each step as DeepSpeed's WarmupDecayLR gives it for these numbers
command -v mpirun >/dev/null || { skip "train 2 ranks with $CFG" "needs mpirun"; zt_end; }
if ! zt_make -s -j2 -C "$tmp/a" >"$tmp/make.log" 2>&1; then cat "$tmp/make.log"; fail "build the trainer"; zt_end; fi
"$PY" scripts/make_corpus.py "$tmp/train.bin" --tokens 20000 >/dev/null 2>&1
RUN=14          # past the warmup (10 steps) into the decay
if mpirun --oversubscribe -np 2 "$tmp/a/train" --data "$tmp/train.bin" --steps $RUN --log "$tmp/log.jsonl" \
     --threads 1 >"$tmp/run.log" 2>&1; then
  check "trains $RUN steps; each step's lr is WarmupDecayLR's from the spec and --steps" \
    "$PY" - specs/tiny.yaml "$tmp/log.jsonl" $STEPS $RUN <<'EOF'
import json, math, sys, yaml
t = yaml.safe_load(open(sys.argv[1]))["train"]
rows = [json.loads(l) for l in open(sys.argv[2])]
T, n = int(sys.argv[3]), int(sys.argv[4])
lo, hi, W = 0.0, float(t["lr"]), max(2, t.get("warmup_steps", 0))
def lr(k):                      # step k uses the schedule at it = k - 1; step 0 the initial warmup_min_lr
    it = k - 1
    if it < 0: return lo
    if it < W: return lo + (hi - lo) * math.log(it + 1) / math.log(W)       # warmup_type log
    return lo + (hi - lo) * max(0.0, (T - it) / max(1, T - W))
bad = [(r["step"], r["lr"], lr(r["step"])) for r in rows if abs(r["lr"] - lr(r["step"])) > 1e-9 * hi]
ok = len(rows) == n and not bad and all(math.isfinite(r["loss"]) for r in rows)
print(f"# {len(rows)} steps, lr {rows[1]['lr']:.3g} .. {rows[-1]['lr']:.3g}, loss {rows[0]['loss']:.4f} -> {rows[-1]['loss']:.4f}"
      + (f"; wrong lr {bad[:3]}" if bad else ""))
sys.exit(0 if ok else 1)
EOF
else
  tail -20 "$tmp/run.log"; fail "train 2 ranks with $CFG"
fi
zt_end
