#!/usr/bin/env bash
# t_zgen_plot.sh — `bin/zgen plot` and `bin/zgen log --tensorboard` (py/zgen_plot.py, zgen_log.py)
# on synthetic trainer logs in runtime/zr_log.c's format (with val_loss / val_tokens on evaluation
# steps, a null where the trainer had a non-finite value):
#   - plot of two runs writes a PNG: its signature, matplotlib reads it back, it is not blank;
#   - log writes events that tensorboard's EventAccumulator reads back: the six tags, every step
#     and value of the log (the null one absent, val/loss only at evaluation steps);
#   - a missing, empty, non-JSON or step-less log: file:line, exit 1, no PNG left.
. "$(dirname "$0")/../lib.sh"
"$PY" -c "import matplotlib, tensorboard, torch.utils.tensorboard" 2>/dev/null ||
  zt_skip_all "zgen plot/log" "needs $PY with matplotlib and tensorboard (bash scripts/install-deps.sh)"
zt_build bin/zgen
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/r1" "$tmp/r2" "$tmp/png"

# run NAME SEED: 60 steps, evaluation every 10, one non-finite grad_norm (step 7)
"$PY" - "$tmp" <<'EOF'
import json, math, random, sys
for name, seed in (("r1", 1), ("r2", 2)):
    rng = random.Random(seed)
    with open("%s/%s/run.jsonl" % (sys.argv[1], name), "w") as f:
        for s in range(60):
            r = {"step": s, "loss": 5 * math.exp(-s / (15 + seed)) + 0.4 + 0.05 * rng.random(),
                 "lr": 3e-4 * min(1.0, (s + 1) / 10), "grad_norm": 1.0 / (s + 1) if s != 7 else None,
                 "loss_scale": 1, "skipped": 0, "tokens_per_s": 5000 + 100 * rng.random(), "ms": 40.5}
            if s % 10 == 9:
                r["val_loss"], r["val_tokens"] = r["loss"] + 0.2, 1234
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF

bin/zgen plot "$tmp/r1/run.jsonl" "$tmp/r2/run.jsonl" -o "$tmp/png/loss.png" >"$tmp/plot.log" 2>&1; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/plot.log" ]; check "plot exits 0, quietly" test $? -eq 0
[ -s "$tmp/plot.log" ] && cat "$tmp/plot.log"
res=$("$PY" - "$tmp/png/loss.png" 2>&1 <<'EOF'
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.image as mpimg
head = open(sys.argv[1], "rb").read(8)
assert head == b"\x89PNG\r\n\x1a\n", head
img = mpimg.imread(sys.argv[1])
assert img.ndim == 3 and img.shape[0] >= 400 and img.shape[1] >= 400, img.shape
assert img[..., :3].std() > 0.05, "blank image"
print("%dx%d PNG" % (img.shape[1], img.shape[0]))
EOF
)
check "plot: a PNG that matplotlib reads back ($res)" test $? -eq 0
check "plot: only the PNG in its folder" test "$(ls -A "$tmp/png")" = loss.png

bin/zgen log "$tmp/r1/run.jsonl" --tensorboard "$tmp/tb" >"$tmp/log.log" 2>&1; rc=$?
check "log exits 0" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/log.log"
res=$("$PY" - "$tmp/r1/run.jsonl" "$tmp/tb" 2>&1 <<'EOF'
import json, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
recs = [json.loads(l) for l in open(sys.argv[1])]
ea = EventAccumulator(sys.argv[2], size_guidance={"scalars": 0})
ea.Reload()
tags = {"train/loss": "loss", "val/loss": "val_loss", "lr": "lr", "grad_norm": "grad_norm",
        "tokens_per_s": "tokens_per_s", "loss_scale": "loss_scale"}
assert sorted(ea.Tags()["scalars"]) == sorted(tags), ea.Tags()["scalars"]
n = 0
for tag, key in tags.items():
    want = [(r["step"], r[key]) for r in recs if r.get(key) is not None]
    got = [(e.step, e.value) for e in ea.Scalars(tag)]
    assert [s for s, _ in got] == [s for s, _ in want], (tag, got[:5], want[:5])
    for (s, g), (_, w) in zip(got, want):
        assert math.isclose(g, w, rel_tol=1e-6), (tag, s, g, w)
    n += len(got)
assert len(ea.Scalars("val/loss")) == 6 and len(ea.Scalars("grad_norm")) == 59
print("%d scalars" % n)
EOF
)
check "log: EventAccumulator reads back every value at its step ($res)" test $? -eq 0

# bad NAME PATTERN FILE: plot and log both exit 1 naming PATTERN, and plot leaves no PNG
bad() {
  local name=$1 pat=$2 f=$3 rp rl
  bin/zgen plot "$f" -o "$tmp/png/bad.png" >/dev/null 2>"$tmp/bp.err"; rp=$?
  bin/zgen log "$f" --tensorboard "$tmp/tb_bad" >/dev/null 2>"$tmp/bl.err"; rl=$?
  if [ $rp -ne 1 ] || [ $rl -ne 1 ]; then cat "$tmp/bp.err" "$tmp/bl.err"; fail "$name: exit $rp/$rl, expected 1"
  elif ! grep -qE "$pat" "$tmp/bp.err" || ! grep -qE "$pat" "$tmp/bl.err"; then
    cat "$tmp/bp.err" "$tmp/bl.err"; fail "$name: message /$pat/"
  elif [ -e "$tmp/png/bad.png" ] || [ "$(ls -A "$tmp/png")" != loss.png ]; then fail "$name: a PNG was left"
  else ok "$name: $(head -1 "$tmp/bp.err" | cut -c1-100)"; fi
}
: >"$tmp/empty.jsonl"
head -2 "$tmp/r1/run.jsonl" >"$tmp/json.jsonl"; echo '{"step":2,"loss":' >>"$tmp/json.jsonl"
{ head -1 "$tmp/r1/run.jsonl"; echo '{"loss": 1.5}'; } >"$tmp/nostep.jsonl"
bad "missing log" "^$tmp/none.jsonl: error: cannot read" "$tmp/none.jsonl"
bad "empty log" "^$tmp/empty.jsonl:1: error: empty log" "$tmp/empty.jsonl"
bad "a line that is not JSON" "^$tmp/json.jsonl:3: error: not a JSON line" "$tmp/json.jsonl"
bad "a record without a step" "^$tmp/nostep.jsonl:2: error: not a step record" "$tmp/nostep.jsonl"
zt_end
