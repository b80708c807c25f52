#!/usr/bin/env bash
# b_predict.sh — the cost model against the host backend: for six plans (ZeRO stages 0-3;
# offload none / cpu / nvme; two model sizes; 1 and 2 ranks) the measured step time of the emitted
# host trainer beside `zgen --predict --hardware host.json`, where host.json is measured by
# bin/bench/calibrate in this same run (1 rank x 2 threads, and 2 ranks x 1 thread for the 2-rank
# plans, so the profile sees the same sharing of cores and memory as the trainer).
# Measured: median of the per-step "ms" of the trainer's log over steps 2..N (the first step pays
# page faults and file creation; N = 12 for the small model, 5 for the larger).
# Figure per plan: measured ms; peer: predicted ms; ratio measured/predicted (aim 0.8-1.25;
# docs/PREDICT.md explains where it is off and why).
# The profile is measured in full once per rank count (disk, collectives too); the host kernels,
# memory and Adam rates are measured again right before and right after each trainer run
# (calibrate --compute-only, a few seconds), because this shared machine's load changes from
# minute to minute: the predicted figure is the mean of the predictions from the two profiles.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE
PY=/usr/bin/python3
make -s bin/zgen build/libzrt.a bin/bench/calibrate >/dev/null || { echo "b_predict: build failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/nvme"
$PY scripts/make_corpus.py "$tmp/tok.bin" --tokens 200000 >/dev/null 2>&1

mpirun --oversubscribe --bind-to none -np 1 bin/bench/calibrate --threads 2 --dir "$tmp/nvme" >"$tmp/host1.json" 2>/dev/null ||
  { echo "b_predict: calibrate (1 rank) failed"; exit 1; }
mpirun --oversubscribe --bind-to none -np 2 bin/bench/calibrate --threads 1 --dir "$tmp/nvme" >"$tmp/host2.json" 2>/dev/null ||
  { echo "b_predict: calibrate (2 ranks) failed"; exit 1; }
echo "calibrated profiles: $tmp/host1.json (1 rank x 2 threads), host2.json (2 ranks x 1 thread)"
$PY - "$tmp/host1.json" "$tmp/host2.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    h = json.load(open(f))
    print(f"  {h['name']}: sgemm {h['matmul_tflops']['fp32']*1e3:.1f} GFLOP/s, memory {h['memory_gbs']:.1f} GB/s,"
          f" Adam {h['cpu_adam_mparams']:.0f} Mparam/s, disk r/w {h['nvme_read_gbs']:.2f}/{h['nvme_write_gbs']:.2f} GB/s,"
          f" collectives {h['collective_gbs']:.2f} GB/s")
PY

# plan NAME SIZE STAGE OFFLOAD RANKS   (SIZE s: C 128, 2 layers; m: C 256, 4 layers)
plan() {
  local name=$1 size=$2 stage=$3 off=$4 ranks=$5 C L NH T B
  if [ "$size" = s ]; then C=128 L=2 NH=4 T=128 B=8; else C=256 L=4 NH=4 T=256 B=8; fi
  local opt='' par=''
  case $off in
    cpu)  opt='"offload_optimizer": {"device": "cpu"},' ;;
    nvme) opt="\"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/nvme\"},"
          [ "$stage" = 3 ] && par="\"offload_param\": {\"device\": \"cpu\"}," ;;
  esac
  mkdir -p "$tmp/$name"
  cat >"$tmp/$name/spec.yaml" <<YAML
name: $name
model: {arch: gpt2, vocab_size: 256, context: $T, d_model: $C, n_layers: $L, n_heads: $NH}
train: {seq_len: $T, world_size: $ranks, seed: 1}
deepspeed: ds.json
YAML
  cat >"$tmp/$name/ds.json" <<JSON
{"train_batch_size": $((B * ranks)), "train_micro_batch_size_per_gpu": $B, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": $stage, $opt $par "overlap_comm": true, "sub_group_size": 1e9},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.1}}}
JSON
}

measure() {   # measure NAME RANKS STEPS -> median ms of steps 2..STEPS
  local name=$1 ranks=$2 th=$((2 / $2))
  rm -f "$tmp/$name/log.jsonl"
  mpirun --oversubscribe --bind-to none -np "$ranks" "$tmp/$name/out/train" --data "$tmp/tok.bin" \
    --steps "$3" --threads "$th" --log "$tmp/$name/log.jsonl" --trace "$tmp/$name/trace.json" \
    --quiet >"$tmp/$name/run.txt" 2>&1 || { tail -3 "$tmp/$name/run.txt" >&2; return 1; }
  $PY -c 'import json,statistics,sys; r=[json.loads(l)["ms"] for l in open(sys.argv[1])][1:]; print(statistics.median(r))' "$tmp/$name/log.jsonl"
}

quick() {   # quick RANKS OUT: kernels, memory and Adam now; disk and collectives from the full run
  mpirun --oversubscribe --bind-to none -np "$1" bin/bench/calibrate --threads $((2 / $1)) --compute-only \
    --base "$tmp/host$1.json" >"$2" 2>/dev/null
}

PLANS="s0_s_none_1:s:0:none:1 s1_s_none_2:s:1:none:2 s2_m_cpu_1:m:2:cpu:1 s2_s_cpu_2:s:2:cpu:2 s3_s_none_2:s:3:none:2 s3_m_nvme_1:m:3:nvme:1"
printf "%-14s %12s %12s %8s  %s\n" plan measured_ms predicted_ms ratio "predicted bottleneck"
for p in $PLANS; do
  IFS=: read -r name size stage off ranks <<<"$p"
  plan "$name" "$size" "$stage" "$off" "$ranks"
  bin/zgen "$tmp/$name/spec.yaml" -o "$tmp/$name/out" >/dev/null 2>"$tmp/$name/zgen.txt" &&
    make -s -j2 -C "$tmp/$name/out" >/dev/null 2>&1 || { echo "$name: generating/building failed"; cat "$tmp/$name/zgen.txt"; continue; }
  quick "$ranks" "$tmp/$name/before.json" || { echo "$name: calibrate failed"; continue; }
  steps=5; [ "$size" = s ] && steps=12   # small steps are short: more of them for a stable median
  meas=$(measure "$name" "$ranks" "$steps") || { echo "$name: run failed"; continue; }
  quick "$ranks" "$tmp/$name/after.json" || { echo "$name: calibrate failed"; continue; }
  for w in before after; do
    bin/zgen "$tmp/$name/spec.yaml" -o "$tmp/$name/pred" --predict --hardware "$tmp/$name/$w.json" --json \
      >"$tmp/$name/pred_$w.json" 2>/dev/null || { echo "$name: predict failed"; continue 2; }
  done
  $PY - "$name" "$meas" "$tmp/$name/pred_before.json" "$tmp/$name/pred_after.json" "${ZB_RESULTS:-/dev/null}" <<'PY'
import json, sys
name, meas = sys.argv[1], float(sys.argv[2])
pb, pa = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
pred = pa
pms = (pb["step_s"] + pa["step_s"]) / 2 * 1e3
ratio = meas / pms
print(f"{name:14} {meas:12.2f} {pms:12.2f} {ratio:8.3f}  {pred['bottleneck']} ({pred['bottleneck_op']}); before/after {pb['step_s']*1e3:.1f}/{pa['step_s']*1e3:.1f}")
with open(sys.argv[5], "a") as f:
    f.write(json.dumps({"name": f"host step ms, plan {name}", "value": meas, "unit": "ms",
                        "peer": "zgen --predict (calibrated host)", "peer_value": pms,
                        "ratio": ratio, "note": "aim 0.8-1.25"}) + "\n")
PY
done
