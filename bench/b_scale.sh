#!/usr/bin/env bash
# b_scale.sh — ZeRO-Infinity on one box (issue 11): a gpt2 whose model states are at least twice
# this machine's RAM trains 3 steps at stage 3 with parameters, gradients and optimizer on NVMe,
# world size 1, one sequence of 64 tokens per step (compute stays short; the point is the states).
# Model: vocab 50257, d_model 2560, 36 layers, 20 heads (2.96e9 parameters), bf16 working
# parameters; on NVMe: bf16 params 2 + fp32 gradients 4 + master, m, v 12 = 18 bytes per parameter
# = 49.7 GiB of states, against 24 GiB of RAM. sub_group_size 5e7 and 4 buffers (3.6 GiB of
# pinned staging), aio block 8 MiB x queue depth 32 (256 MiB in flight, so a prefetched parameter
# span or a sub-group's write-back proceeds while the CPU computes).
# It checks the free space of the swap file's file system first (the plan's NVMe tier + 2 GiB for
# the raw measurement + 2 GiB margin) and says what it needs when short (then it is skipped).
# Prints, all measured in this run:
#   - states bytes (the plan's NVMe tier), peak RSS (VmHWM of the trainer), their ratio (goal >= 4);
#   - seconds per step (median of the logged steps after the first);
#   - NVMe read and write GB/s achieved per step (/proc/PID/io storage bytes between log lines over
#     the step time) beside fio's sequential O_DIRECT read and write bandwidth on the same file
#     system (bs 8 MiB, iodepth 32, io_uring; before and after the training run, the mean);
#   - compute alone per step (the trace's compute-track spans: module forward/backward, gradient
#     copies and hand-over, Adam and the norm's arithmetic, I/O waits excluded), the step's NVMe bytes over fio's bandwidth
#     (reads / read bw + writes / write bw: one device), and step / max(compute, NVMe time)
#     (goal <= 1.3: the overlap measured, not assumed);
#   - the losses.
# Env: ZB_DIR (default bench/out: the repo's disk), ZB_SCALE_LAYERS (36), ZB_SCALE_STEPS (3),
# ZB_RESULTS (JSON lines out). Not part of `make test`; `make bench` / bench/run.sh scale runs it.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE
PY=/usr/bin/python3
LAYERS=${ZB_SCALE_LAYERS:-36} STEPS=${ZB_SCALE_STEPS:-3}
base=${ZB_DIR:-bench/out}
mkdir -p "$base"
dir=$(cd "$base" && pwd)/scale.$$
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$dir"' EXIT
mkdir -p "$dir"
make -s bin/zgen build/libzrt.a >/dev/null || { echo "b_scale: build failed"; exit 1; }
command -v fio >/dev/null || { echo "b_scale: skipped: needs fio for the raw bandwidth"; exit 0; }

cat >"$tmp/spec.yaml" <<YAML
name: scale3b
model: {arch: gpt2, vocab_size: 50257, context: 1024, d_model: 2560, n_layers: $LAYERS, n_heads: 20}
train: {seq_len: 64, world_size: 1, seed: 1}
deepspeed: ds.json
YAML
cat >"$tmp/ds.json" <<JSON
{"train_batch_size": 1, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
 "bf16": {"enabled": true},
 "aio": {"block_size": 8388608, "queue_depth": 32},
 "zero_optimization": {"stage": 3, "sub_group_size": 50000000,
   "offload_optimizer": {"device": "nvme", "nvme_path": "$dir", "buffer_count": 4},
   "offload_param": {"device": "nvme", "nvme_path": "$dir"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.1}}}
JSON
bin/zgen "$tmp/spec.yaml" -o "$tmp/out" >"$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log"; echo "b_scale: zgen failed"; exit 1; }
read -r params nvme_bytes ram_bytes <<<"$($PY - "$tmp/out/plan.json" <<'PYEOF'
import json, os, sys
p = json.load(open(sys.argv[1]))
print(p["model"]["n_params"], p["tiers"]["nvme"]["bytes"], os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
PYEOF
)"
raw_bytes=$((2 << 30))
need=$((nvme_bytes + raw_bytes + (2 << 30)))
avail=$(df -B1 --output=avail "$dir" | tail -1 | tr -d ' ')
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
echo "b_scale: $params parameters; states on NVMe $(gb "$nvme_bytes") ($(awk -v s="$nvme_bytes" -v r="$ram_bytes" 'BEGIN { printf "%.2f", s / r }') x RAM $(gb "$ram_bytes"))"
if [ "$avail" -lt "$need" ]; then
  echo "b_scale: skipped: needs $(gb "$need") free on $dir (swap file $(gb "$nvme_bytes") + raw test $(gb "$raw_bytes") + 2 GiB margin), has $(gb "$avail")"
  exit 0
fi
make -s -j2 -C "$tmp/out" >"$tmp/make.log" 2>&1 || { tail -5 "$tmp/make.log"; echo "b_scale: build failed"; exit 1; }
$PY scripts/make_corpus.py "$tmp/tok.bin" --tokens 200000 >/dev/null 2>&1

# raw sequential O_DIRECT bandwidth of the file system (bytes/s): "read" or "write"
raw() {
  fio --name=raw --filename="$dir/raw.fio" --rw="$1" --bs=8M --size=$raw_bytes --direct=1 \
      --ioengine=io_uring --iodepth=32 --output-format=json 2>/dev/null |
    $PY -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j[sys.argv[1]]["bw_bytes"])' "$1"
}
w1=$(raw write) && r1=$(raw read) || { echo "b_scale: fio failed"; exit 1; }
rm -f "$dir/raw.fio"

# the run: sample /proc/PID/io and VmHWM once a second, and at each new log line (a step's end)
"$tmp/out/train" --data "$tmp/tok.bin" --steps "$STEPS" --threads 2 --log "$tmp/log.jsonl" \
    --trace "$tmp/trace.json" --quiet >"$tmp/run.log" 2>&1 &
pid=$!
lines=0
: >"$tmp/io.txt"
while kill -0 "$pid" 2>/dev/null; do
  io=$(awk '/^read_bytes|^write_bytes/ { printf "%s ", $2 }' "/proc/$pid/io" 2>/dev/null)
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
  [ -n "$hwm" ] && echo "$hwm" >"$tmp/hwm"
  n=0
  [ -f "$tmp/log.jsonl" ] && n=$(wc -l <"$tmp/log.jsonl")
  if [ "$n" -gt "$lines" ] && [ -n "$io" ]; then echo "$n $io" >>"$tmp/io.txt"; lines=$n; fi
  sleep 1
done
wait "$pid" || { tail -5 "$tmp/run.log"; echo "b_scale: the trainer failed"; exit 1; }

w2=$(raw write) && r2=$(raw read) || { echo "b_scale: fio failed"; exit 1; }
rm -f "$dir/raw.fio"

$PY - "$tmp" "$nvme_bytes" "$(cat "$tmp/hwm")" "$r1" "$r2" "$w1" "$w2" "${ZB_RESULTS:-/dev/null}" <<'PYEOF'
import json, statistics, sys
tmp, states, hwm_kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rbw = (float(sys.argv[4]) + float(sys.argv[5])) / 2
wbw = (float(sys.argv[6]) + float(sys.argv[7])) / 2
out = sys.argv[8]
log = [json.loads(l) for l in open(tmp + "/log.jsonl")]
rss = hwm_kb * 1024
# io samples: "n read write" at the first sample after log line n appeared (step n-1 ended)
io = {}
for l in open(tmp + "/io.txt"):
    f = l.split()
    io.setdefault(int(f[0]), (int(f[1]), int(f[2])))
# compute alone per step: compute-track spans, less the I/O waits nested in them ("grad norm read" in
# the norm pass, "grad window" in the gradient hand-over)
ev = [e for e in json.load(open(tmp + "/trace.json"))["traceEvents"] if e.get("ph") == "X"]
ends = []
t = 0.0
for r in log:
    t += r["ms"] * 1e3
    ends.append(t)
def step_of(ts):
    for i, e in enumerate(ends):
        if ts < e: return i
    return len(ends) - 1
comp = [0.0] * len(log)
for e in ev:
    if e["tid"] == 0: comp[step_of(e["ts"])] += e["dur"] / 1e6
    elif e["name"] in ("grad norm read", "grad window"): comp[step_of(e["ts"])] -= e["dur"] / 1e6
steps = list(range(1, len(log))) or [0]
rows = []
for i in steps:
    s = log[i]["ms"] / 1e3
    rd = wr = None
    if i in io and i + 1 in io:
        rd, wr = io[i + 1][0] - io[i][0], io[i + 1][1] - io[i][1]
    rows.append((s, comp[i], rd, wr))
step_s = statistics.median(r[0] for r in rows)
comp_s = statistics.median(r[1] for r in rows)
have_io = [r for r in rows if r[2] is not None]
rd = statistics.median(r[2] for r in have_io) if have_io else 0
wr = statistics.median(r[3] for r in have_io) if have_io else 0
nvme_s = rd / rbw + wr / wbw
bound = max(comp_s, nvme_s)
print(f"b_scale: states {states / 2**30:.2f} GiB, peak RSS {rss / 2**30:.2f} GiB, states / RSS {states / rss:.2f} (goal >= 4)")
print(f"b_scale: {step_s:.1f} s per step (median of steps {steps[0]}..{steps[-1]}); compute alone {comp_s:.1f} s; "
      f"NVMe {rd / 1e9:.1f} GB read + {wr / 1e9:.1f} GB written per step = {nvme_s:.1f} s at fio's bandwidth")
print(f"b_scale: NVMe read {rd / step_s / 1e9:.3f} GB/s (fio {rbw / 1e9:.3f}), write {wr / step_s / 1e9:.3f} GB/s (fio {wbw / 1e9:.3f})")
print(f"b_scale: step / max(compute, NVMe bytes / fio bandwidth) = {step_s / bound:.2f} (goal <= 1.3)")
print("b_scale: losses " + " ".join(f"{r['loss']:.4f}" for r in log))
res = [
    {"name": "scale 3B: states / peak RSS", "value": states / rss, "unit": "x", "peer": "goal", "peer_value": 4.0,
     "ratio": states / rss / 4.0, "note": f"states {states} B, peak RSS {rss} B"},
    {"name": "scale 3B: step time", "value": step_s, "unit": "s", "peer": "max(compute, NVMe/fio bw)",
     "peer_value": bound, "ratio": step_s / bound, "note": f"compute {comp_s:.2f} s, NVMe {nvme_s:.2f} s"},
    {"name": "scale 3B: NVMe read", "value": rd / step_s / 1e9, "unit": "GB/s", "peer": "fio seq O_DIRECT read",
     "peer_value": rbw / 1e9, "ratio": rd / step_s / rbw},
    {"name": "scale 3B: NVMe write", "value": wr / step_s / 1e9, "unit": "GB/s", "peer": "fio seq O_DIRECT write",
     "peer_value": wbw / 1e9, "ratio": wr / step_s / wbw},
]
with open(out, "a") as f:
    for r in res: f.write(json.dumps(r) + "\n")
PYEOF
