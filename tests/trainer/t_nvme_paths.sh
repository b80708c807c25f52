#!/usr/bin/env bash
# t_nvme_paths.sh — the NVMe tier of the emitted trainer (issue 13):
# - swap-file checksums during a run: a byte of the swap file altered between a write and its read
#   (ZR_NVME_FAULT=flip@N inverts, in the file, the first byte the N-th write completion put there)
#   ends the run, bounded, naming the swap file, the offset, the size, what it holds (optimizer state
#   of sub-group k) and what to do; clean runs (which check every read-back) train undisturbed;
# - separate nvme_path values for offload_param and offload_optimizer: plan.txt and plan.json name
#   both swap files; the trainer makes one file under each directory (param_ and optim_ files, sizes
#   adding up to the one-path plan's single file, the param file the size of params_shard there), and
#   trains bit-identically (losses and gradient norms) to the same config with one path; every
#   nvme_path is checked at start-up: a bad second path is refused before step 0 like the first.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "nvme_paths"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
[ -d "$tmp" ] || { echo "mktemp ... FAIL"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 >/dev/null 2>&1

# mk NAME PARAM_DIR OPT_DIR [DTYPE]: a ZeRO-3 trainer (bf16 unless DTYPE is fp32) with parameters
# and optimizer state on NVMe
mk() {
  local dt='"bf16": {"enabled": true},'; [ "${4:-}" = fp32 ] && dt=""
  local d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: nvp
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, $dt
 "zero_optimization": {"stage": 3, "reduce_bucket_size": 4000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100,
   "offload_param": {"device": "nvme", "nvme_path": "$2"},
   "offload_optimizer": {"device": "nvme", "nvme_path": "$3"}},
 "aio": {"block_size": 16384, "queue_depth": 4},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "weight_decay": 0.1}}}
EOF
  if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1; then
    cat "$d/gen.log" "$d/make.log"; fail "build $1"; zt_end
  fi
}
# run NAME LOG ARGS...: the trainer under mpirun, bounded; exit status in $rc
run() {
  local d="$tmp/$1" log=$2; shift 2
  timeout -k 5 90 mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/corpus.bin" --threads 1 --quiet "$@" \
    >"$log" 2>&1
  rc=$?
}
losses() { "$PY" -c 'import json,sys; [print(json.loads(l)["step"], repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' "$1"; }
size() { stat -c %s "$1" 2>/dev/null || echo missing; }

mk one "$tmp/one/nvme" "$tmp/one/nvme/"      # the same directory, spelled differently
mk two "$tmp/two/p_nvme" "$tmp/two/o_nvme"

# --- the plans
if grep -q "^swap file 0: $tmp/one/nvme/zgen_nvp_rank<r>.swp" "$tmp/one/out/plan.txt" &&
   ! grep -q "^swap file 1" "$tmp/one/out/plan.txt"; then
  ok "one nvme_path (trailing slash aside): plan.txt names one swap file"
else grep "swap file" "$tmp/one/out/plan.txt"; fail "one nvme_path: one swap file in plan.txt"; fi
if grep -q "^swap file 0: $tmp/two/p_nvme/zgen_nvp_param_rank<r>.swp, [0-9]* bytes (params_shard)" "$tmp/two/out/plan.txt" &&
   grep -q "^swap file 1: $tmp/two/o_nvme/zgen_nvp_optim_rank<r>.swp, [0-9]* bytes (grad32, master, adam_m, adam_v)" "$tmp/two/out/plan.txt"; then
  ok "two nvme_paths: plan.txt names both swap files and what each holds"
else grep "swap file" "$tmp/two/out/plan.txt"; fail "two nvme_paths: both swap files in plan.txt"; fi
if "$PY" - "$tmp/two/out/plan.json" "$tmp/two" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))["nvme_files"]
d = sys.argv[2]
assert [x["path"] for x in f] == [d + "/p_nvme", d + "/o_nvme"], f
assert f[0]["regions"] == ["params_shard"] and f[1]["regions"] == ["grad32", "master", "adam_m", "adam_v"], f
EOF
then ok "two nvme_paths: plan.json nvme_files"; else fail "two nvme_paths: plan.json nvme_files"; fi

# --- same training with one path and with two
N=6
run one "$tmp/one.log" --steps $N --log "$tmp/one.jsonl"
[ "$rc" -eq 0 ] || { cat "$tmp/one.log"; fail "one-path run"; zt_end; }
run two "$tmp/two.log" --steps $N --log "$tmp/two.jsonl"
if [ "$rc" -eq 0 ] && [ "$(losses "$tmp/one.jsonl" | wc -l)" -eq $N ] &&
   losses "$tmp/one.jsonl" | cmp -s - <(losses "$tmp/two.jsonl"); then
  ok "two nvme_paths train bit-identically to one ($N steps, losses and gradient norms)"
else cat "$tmp/two.log"; fail "two nvme_paths vs one" "rc $rc or losses differ"; fi
for r in 0 1; do
  [ ! -e "$tmp/two/p_nvme/zgen_nvp_param_rank$r.swp" ] && [ ! -e "$tmp/two/o_nvme/zgen_nvp_optim_rank$r.swp" ] ||
    fail "swap files of rank $r removed at a clean exit"
done

# fp32: the parameters' NVMe shard is the master (no fp32 copy in the optimizer file), so its
# sub-group swaps and the checkpoint's reads and writes go to the parameter file: a save and a resume
# with two paths continue the one-path run bit for bit
mk one32 "$tmp/one32/nvme" "$tmp/one32/nvme" fp32
mk two32 "$tmp/two32/p_nvme" "$tmp/two32/o_nvme" fp32
run one32 "$tmp/one32.log" --steps $N --log "$tmp/one32.jsonl"
rc1=$rc
run two32 "$tmp/two32a.log" --steps 3 --save "$tmp/ck32" --log "$tmp/two32.jsonl"
rc2=$rc
run two32 "$tmp/two32b.log" --steps $N --resume "$tmp/ck32" --log "$tmp/two32.jsonl"
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$(losses "$tmp/one32.jsonl" | wc -l)" -eq $N ] &&
   losses "$tmp/one32.jsonl" | cmp -s - <(losses "$tmp/two32.jsonl"); then
  ok "fp32, two nvme_paths, saved at step 3 and resumed: bit-identical to one path ($N steps)"
else cat "$tmp/two32a.log" "$tmp/two32b.log"; diff <(losses "$tmp/one32.jsonl") <(losses "$tmp/two32.jsonl") | head -4
  fail "fp32 two nvme_paths with save/resume vs one" "rc $rc1/$rc2/$rc"; fi

# the files themselves: a run stopped by a fault leaves them (no close), sized by the plan
ZR_NVME_FAULT="eio@30:w" run two "$tmp/two_eio.log" --steps $N
one_bytes=$(sed -n 's/^swap file 0: .*, \([0-9]*\) bytes .*/\1/p' "$tmp/one/out/plan.txt")
ps_bytes=$(awk '$1 == "nvme" && $5 == "params_shard" {print $3}' "$tmp/one/out/plan.txt")
p0=$(size "$tmp/two/p_nvme/zgen_nvp_param_rank0.swp"); o0=$(size "$tmp/two/o_nvme/zgen_nvp_optim_rank0.swp")
p1=$(size "$tmp/two/p_nvme/zgen_nvp_param_rank1.swp"); o1=$(size "$tmp/two/o_nvme/zgen_nvp_optim_rank1.swp")
if [ "$rc" -ne 0 ] && [ -n "$one_bytes" ] && [ "$p0" = "$ps_bytes" ] && [ "$p1" = "$ps_bytes" ] &&
   [ "$o0" = "$o1" ] && [ "$o0" != missing ] && [ $((p0 + o0)) -eq "$one_bytes" ]; then
  ok "two nvme_paths: a param file ($p0 bytes = params_shard) and an optimizer file ($o0) per rank, together the one-path file ($one_bytes)"
else
  ls -la "$tmp/two/p_nvme" "$tmp/two/o_nvme"; fail "two swap files per rank" "param $p0/$p1 optim $o0/$o1, one-path $one_bytes, params_shard $ps_bytes"
fi
# ZG_NVME_DIR moves every file, names kept apart
ZG_NVME_DIR="$tmp/override" ZR_NVME_FAULT="eio@30:w" run two "$tmp/two_ovr.log" --steps $N
if [ -e "$tmp/override/zgen_nvp_param_rank0.swp" ] && [ -e "$tmp/override/zgen_nvp_optim_rank0.swp" ]; then
  ok "ZG_NVME_DIR holds both swap files"
else ls -la "$tmp/override"; fail "ZG_NVME_DIR holds both swap files"; fi

# --- start-up check of every nvme_path: the optimizer's path bad, the parameters' fine
mkdir -p "$tmp/bad"
touch "$tmp/bad/regular"
sed "s|$tmp/two/o_nvme|$tmp/bad/regular|" "$tmp/two/ds.json" >"$tmp/two/ds_bad.json"
sed "s|ds.json|ds_bad.json|" "$tmp/two/spec.yaml" >"$tmp/two/spec_bad.yaml"
# the generator already refuses a regular file; the trainer is checked with a directory made bad later
bin/zgen "$tmp/two/spec_bad.yaml" -o "$tmp/two/out_bad" >"$tmp/bad.log" 2>&1
if [ $? -ne 0 ] && grep -q "offload_optimizer.nvme_path '$tmp/bad/regular' is a regular file" "$tmp/bad.log"; then
  ok "a bad offload_optimizer.nvme_path next to a good offload_param one: refused by zgen"
else cat "$tmp/bad.log"; fail "bad second nvme_path refused by zgen"; fi
rm -rf "$tmp/two/o_nvme"; touch "$tmp/two/o_nvme"
rm -f "$tmp/two.jsonl"
run two "$tmp/two_bad.log" --steps $N --log "$tmp/two.jsonl"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "swap directory $tmp/two/o_nvme is not a directory" "$tmp/two_bad.log" &&
   [ ! -s "$tmp/two.jsonl" ]; then
  ok "the second nvme_path checked at start-up: refused before step 0"
else cat "$tmp/two_bad.log"; fail "second nvme_path checked at start-up" "rc $rc"; fi
rm -f "$tmp/two/o_nvme"

# --- swap checksums: a flipped byte is caught at its read-back
for n in 5 40; do
  ZR_NVME_FAULT="flip@$n" run two "$tmp/flip.log" --steps $N
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] &&
     grep -Eq "swap file .*zgen_nvp_(optim|param)_rank[01].swp: the [0-9]+ bytes at offset [0-9]+ \(read of [0-9]+ bytes at offset [0-9]+; .*(optimizer state|gradients|parameters).* of sub-group [0-9]+" "$tmp/flip.log" &&
     grep -q "do not match the CRC32C recorded when this run wrote them" "$tmp/flip.log" &&
     grep -q "HINT: check the device" "$tmp/flip.log" && grep -q "resume from the last checkpoint" "$tmp/flip.log" &&
     ! grep -Eq "Segmentation|core dumped|Aborted" "$tmp/flip.log"; then
    grep -m1 "CRC32C" "$tmp/flip.log" | cut -c1-230 | sed 's/^/# /'
    ok "ZR_NVME_FAULT=flip@$n: the altered swap block is named at its read-back (exit $rc)"
  else cat "$tmp/flip.log"; fail "ZR_NVME_FAULT=flip@$n detected" "rc $rc"; fi
done
zt_end
