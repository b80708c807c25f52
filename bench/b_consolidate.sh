#!/usr/bin/env bash
# b_consolidate.sh — `zgen ckpt DIR --export` of a GPT-2 124M checkpoint (the Hugging Face gpt2
# shape: vocab 50257, 12 layers, d_model 768; 124.4M parameters) saved by 2 ranks at ZeRO-3 (the
# trainer's own --save of its initial state, --steps 0), beside the disk's own limit for the same
# work: dd copying the very bytes the export reads (each shard's master blob, at the offset
# `zgen ckpt --info` reports) into one file, fsynced like the export.
# Protocol (docs/CONTRIBUTING.md): 3 pairs, export then dd, alternately; each figure is the model's
# fp32 bytes over wall time (MB/s); the ratio is the median of the pair-by-pair ratios. Both read
# through the page cache (the checkpoint was just written; no cache dropping on a shared machine).
# Also the export's peak RSS (GNU time), the bound being its 8 MiB buffer plus a 64 KiB chunk per
# shard. Appends two JSON objects to $ZB_RESULTS.
set -u
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
PY=/usr/bin/python3
PAIRS=${ZB_CONS_PAIRS:-3}
ZB_RESULTS=${ZB_RESULTS:-$PWD/bench/out/results.jsonl}
mkdir -p "$(dirname "$ZB_RESULTS")"
make -s bin/zgen build/libzrt.a >/dev/null || { echo "b_consolidate: build failed"; exit 1; }
tmp=$(mktemp -d "${ZB_TMP:-/tmp}/b_cons.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/spec.yaml" <<YAML
name: cons124m
model: {arch: gpt2, vocab_size: 50257, context: 1024, d_model: 768, n_layers: 12, n_heads: 12}
train: {seq_len: 64, world_size: 2, seed: 1}
deepspeed: {train_batch_size: 2, gradient_accumulation_steps: 1, zero_optimization: {stage: 3},
            optimizer: {type: AdamW, params: {lr: 1.0e-4}}}
YAML
bin/zgen "$tmp/spec.yaml" -o "$tmp/out" >/dev/null && make -s -j2 -C "$tmp/out" >/dev/null ||
  { echo "b_consolidate: generating the trainer failed"; exit 1; }
$PY scripts/make_corpus.py "$tmp/tok.bin" --tokens 20000 2>/dev/null
mpirun --oversubscribe -np 2 "$tmp/out/train" --data "$tmp/tok.bin" --threads 1 --steps 0 --save "$tmp/ck" --quiet ||
  { echo "b_consolidate: saving the checkpoint failed"; exit 1; }
bin/zgen ckpt "$tmp/ck" --info >"$tmp/info.txt" || { echo "b_consolidate: --info failed"; exit 1; }
grep -E "^step|^tensors|checksums ok:" "$tmp/info.txt" | sed 's/^/   /'
step=$(cat "$tmp/ck/latest")

ours() {
  rm -rf "$tmp/exp"
  local t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$tmp/rss" bin/zgen ckpt "$tmp/ck" --export "$tmp/exp/model.safetensors" >/dev/null || return 1
  local t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
peer() {
  rm -f "$tmp/copy.bin"
  local t0=$(date +%s.%N)
  grep -E "^  shard rank_" "$tmp/info.txt" | while read -r _ f _ _ _ mb _ _ mo _; do
    dd if="$tmp/ck/$step/$f" of="$tmp/copy.bin" bs=8M iflag=skip_bytes,count_bytes skip="$mo" count="$mb" \
       oflag=append conv=notrunc status=none
  done
  sync "$tmp/copy.bin"
  local t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
ours >/dev/null || { echo "b_consolidate: export failed"; exit 1; }   # warm-up: both then read cached shards
bytes=$(grep -E "^  shard rank_" "$tmp/info.txt" | awk '{s += $6} END {print s}')
res=""
for i in $(seq "$PAIRS"); do
  a=$(ours) || { echo "b_consolidate: export failed"; exit 1; }
  b=$(peer)
  res="$res $a $b"
  printf '   pair %d: export %.3f s, dd %.3f s\n' "$i" "$a" "$b"
done
$PY - "$bytes" "$(tail -1 "$tmp/rss")" "$ZB_RESULTS" $res <<'PY'
import json, statistics, sys
nbytes, rss_kb, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t = [float(x) for x in sys.argv[4:]]
ours, peer = t[0::2], t[1::2]
mbs = lambda s: nbytes / s / 1e6
ratio = statistics.median(mbs(a) / mbs(b) for a, b in zip(ours, peer))
v, pv = statistics.median(map(mbs, ours)), statistics.median(map(mbs, peer))
print("   zgen ckpt --export: %.0f MB/s; dd of the same bytes: %.0f MB/s; ratio %.2f; peak RSS %.1f MiB for a %.0f MB model"
      % (v, pv, ratio, rss_kb / 1024, nbytes / 1e6))
with open(out, "a") as f:
    f.write(json.dumps({"name": "consolidate gpt2-124m fp32 (2 shards)", "value": round(v, 1), "unit": "MB/s",
                        "peer": "dd of the same master bytes + sync", "peer_value": round(pv, 1),
                        "ratio": round(ratio, 3)}) + "\n")
    f.write(json.dumps({"name": "consolidate gpt2-124m peak RSS", "value": round(rss_kb / 1024, 1), "unit": "MiB",
                        "peer": "fp32 model bytes (MiB)", "peer_value": round(nbytes / 2**20, 1),
                        "ratio": round(rss_kb * 1024 / nbytes, 4)}) + "\n")
PY
