#!/usr/bin/env bash
# gpu_checks.sh — every GPU check in one run, on a lent GPU machine (docs/GPU_BUNDLE.md). Takes the
# bundle `make bundle` built (gpu/bundle.tar.gz) and writes to $OUT (the device tool's folder; a
# temp folder elsewhere):
#   nvidia-smi.txt  the device and driver
#   checks.log      per trainer: `train-cuda --check` (first step on the device against the host
#                   reference, every gradient tensor compared), then a timed run of STEPS steps
#   summary.txt     per trainer: --check's verdict, measured tokens/s (median over the steps after
#                   the first WARM), the cost model's predicted tokens/s and MFU (predictions,
#                   made at bundle time), measured MFU on the same peak, and measured/predicted
# It never stops at a failing trainer: the next one still runs, and the verdicts say what failed.
# Each command is bounded by `timeout`, so a hang costs minutes, not the lease.
set -u
B=${1:-gpu/bundle.tar.gz}
STEPS=${STEPS:-30}
WARM=${WARM:-5}
LIMIT=${LIMIT:-240}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
W=$(mktemp -d)
tar xzf "$B" -C "$W" || { echo "gpu_checks: cannot unpack $B" | tee "$OUT/summary.txt"; exit 1; }

# cuBLAS, cuBLASLt, the CUDA runtime and NCCL: the toolkit's where it has them, else the Python
# environment's wheels (nvidia-cublas, nvidia-nccl-cu13, ...), else whatever ldconfig knows.
dirs=""
for so in libcublas.so.13 libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
  d=""
  for c in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$c/$so" ] && { d=$c; break; }
  done
  if [ -z "$d" ]; then
    f=$(find / -xdev -name "$so" -path '*site-packages*' 2>/dev/null | head -1)
    [ -n "$f" ] && d=$(dirname "$f")
  fi
  [ -n "$d" ] && case ":$dirs:" in *":$d:"*) ;; *) dirs="$dirs:$d" ;; esac
  [ -n "$d" ] || echo "gpu_checks: $so not found (toolkit, Python wheels); the trainer may not start" >>"$OUT/checks.log"
done
export LD_LIBRARY_PATH="$W/lib${dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
echo "bundle commit $(cat "$W/COMMIT")" > "$OUT/checks.log.head"
for t in "$W"/trainers/*/; do
  name=$(basename "$t")
  {
    echo "===== $name: train-cuda --check"
    if [ -f "$t/NOCHECK" ]; then echo "skipped: $(cat "$t/NOCHECK")"; echo "rc=skip"
    else (cd "$t" && timeout "$LIMIT" ./train-cuda --check --data "$W/data/train.bin"); echo "rc=$?"; fi
    echo "===== $name: train-cuda, $STEPS steps"
    (cd "$t" && timeout "$LIMIT" ./train-cuda --data "$W/data/train.bin" --steps "$STEPS" \
       --log "$t/speed.jsonl" --quiet); echo "rc=$?"
  } >>"$OUT/checks.log" 2>&1
done
cat "$OUT/checks.log.head" "$OUT/checks.log" > "$OUT/checks.tmp" && mv "$OUT/checks.tmp" "$OUT/checks.log"
rm -f "$OUT/checks.log.head"

python3 - "$W" "$OUT/checks.log" "$WARM" > "$OUT/summary.txt" <<'PY'
import json, os, re, statistics, sys
w, log, warm = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
print("zgen GPU checks (measured on this machine; 'predicted' figures are the cost model's, not measurements)")
for name in sorted(os.listdir(os.path.join(w, "trainers"))):
    d = os.path.join(w, "trainers", name)
    m = re.search(r"===== %s: train-cuda --check\n(.*?)rc=(\w+)" % re.escape(name), log, re.S)
    check = ("did not run" if not m else "pass" if m.group(2) == "0" else "skipped (NOCHECK)"
             if m.group(2) == "skip" else "FAIL (rc %s)" % m.group(2))
    line = "%-18s check %s" % (name, check)
    p = json.load(open(os.path.join(d, "predict.json")))
    rows = []
    if os.path.exists(os.path.join(d, "speed.jsonl")):
        rows = [json.loads(l) for l in open(os.path.join(d, "speed.jsonl")) if l.strip()]
    tps = [r["tokens_per_s"] for r in rows if r.get("step", 0) >= warm and "tokens_per_s" in r]
    if tps:
        med = statistics.median(tps)
        flops_per_token = p["model_flops_per_rank"] / p["tokens_per_step"]
        mfu = med * flops_per_token / p["peak_flops"]
        line += ("; measured %.0f tokens/s (median of %d steps), MFU %.2f%% of %s's %.0f TFLOP/s; "
                 "predicted %.0f tokens/s, MFU %.1f%%; measured/predicted %.3f; last loss %.4f"
                 % (med, len(tps), 100 * mfu, p["hardware"], p["peak_flops"] / 1e12,
                    p["tokens_per_s"], 100 * p["mfu"], med / p["tokens_per_s"], rows[-1]["loss"]))
    else:
        line += "; no timed steps (see checks.log)"
    print(line)
PY
cat "$OUT/summary.txt"
