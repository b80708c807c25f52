#!/usr/bin/env bash
# t_nvme_files.sh — swap files per nvme_path in the plan (gen/memplan.c, docs/CONFIG.md): with
# offload_param and offload_optimizer on NVMe under different directories, plan.txt names two swap
# files (params_shard in file 0 under offload_param's path; grad32, master, adam_m, adam_v in file 1
# under offload_optimizer's), marks each NVMe region with its file, and the two files' sizes add up to
# the one file of the same config with one directory; plan.json's nvme_files and the emitted
# ZG_NVME_FILE_* / zg_region_file[] agree; the same directory spelled with a trailing slash is one
# file; only the optimizer on NVMe is one file under its path.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
[ -d "$tmp" ] || { echo "mktemp ... FAIL"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

# gen NAME PARAM_DEVICE PARAM_DIR OPT_DIR
gen() {
  local d="$tmp/$1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOS
name: nvf
model: {arch: gpt2, vocab_size: 128, context: 24, d_model: 48, n_layers: 2, n_heads: 3, d_ff: 112}
train: {seq_len: 24, world_size: 2, seed: 3}
deepspeed: ds.json
EOS
  cat >"$d/ds.json" <<EOS
{"train_batch_size": 8, "bf16": {"enabled": true},
 "zero_optimization": {"stage": 3, "sub_group_size": 5000,
   "offload_param": {"device": "$2", "nvme_path": "$3"},
   "offload_optimizer": {"device": "nvme", "nvme_path": "$4"}},
 "aio": {"block_size": 16384, "queue_depth": 4},
 "optimizer": {"type": "AdamW", "params": {"lr": 2e-3}}}
EOS
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log"; fail "zgen $1"; }
}
gen two nvme /p/nv /o/nv
gen one nvme /p/nv /p/nv/
gen opt cpu /p/nv /o/nv
t=$tmp/two/out/plan.txt

s0=$(sed -n 's|^swap file 0: /p/nv/zgen_nvf_param_rank<r>.swp, \([0-9]*\) bytes (params_shard)$|\1|p' "$t")
s1=$(sed -n 's|^swap file 1: /o/nv/zgen_nvf_optim_rank<r>.swp, \([0-9]*\) bytes (grad32, master, adam_m, adam_v)$|\1|p' "$t")
[ -n "$s0" ] && [ -n "$s1" ] && ok "two nvme_paths: plan.txt names both swap files and what each holds" ||
  { grep "swap file" "$t"; fail "two swap files in plan.txt"; }
if grep -Eq "^  nvme +[0-9]+ +[0-9]+ +param16 +params_shard \(swap file 0\)$" "$t" &&
   grep -Eq "^  nvme +0 +[0-9]+ +grad +grad32 \(swap file 1\)$" "$t" &&
   grep -Eq "^  nvme +[0-9]+ +[0-9]+ +adam_v +adam_v \(swap file 1\)$" "$t"; then
  ok "two nvme_paths: the regions table marks each NVMe region's file (offsets per file)"
else grep "^  nvme" "$t"; fail "regions table with swap files"; fi
one=$(sed -n 's|^swap file 0: /p/nv/zgen_nvf_rank<r>.swp, \([0-9]*\) bytes (params_shard, grad32, master, adam_m, adam_v)$|\1|p' "$tmp/one/out/plan.txt")
if [ -n "$one" ] && ! grep -q "^swap file 1" "$tmp/one/out/plan.txt" && [ -n "$s0" ] && [ $((s0 + s1)) -eq "$one" ]; then
  ok "one directory (trailing slash aside): one swap file of $one bytes = $s0 + $s1"
else grep "swap file" "$tmp/one/out/plan.txt"; fail "one directory, one file" "one '$one' two '$s0' '$s1'"; fi
if grep -q "^swap file 0: /o/nv/zgen_nvf_rank<r>.swp, [0-9]* bytes (grad32, master, adam_m, adam_v)$" "$tmp/opt/out/plan.txt" &&
   ! grep -q "^swap file 1" "$tmp/opt/out/plan.txt"; then
  ok "optimizer alone on NVMe: one swap file under its path"
else grep "swap file" "$tmp/opt/out/plan.txt"; fail "optimizer alone on NVMe"; fi
h=$tmp/two/out/zg_model.h
if grep -q '^#define ZG_NVME_FILES  *2 ' "$h" && grep -q '^#define ZG_NVME_FILE_DIR_0  *"/p/nv"$' "$h" &&
   grep -q '^#define ZG_NVME_FILE_DIR_1  *"/o/nv"$' "$h" && grep -q "^#define ZG_NVME_FILE_BYTES_0  *INT64_C($s0)$" "$h" &&
   grep -q "^#define ZG_NVME_FILE_BYTES_1  *INT64_C($s1)$" "$h" &&
   grep -q '^    0,  /\* params_shard \*/$' "$tmp/two/out/zg_tables.c" && grep -q '^    1,  /\* adam_m \*/$' "$tmp/two/out/zg_tables.c"; then
  ok "the tables: ZG_NVME_FILES, ZG_NVME_FILE_DIR/BYTES_<i>, zg_region_file[]"
else grep -n "NVME_FILE" "$h"; fail "emitted swap-file tables"; fi
if "$PY" - "$tmp/two/out/plan.json" "$s0" "$s1" <<'EOS'
import json, sys
f = json.load(open(sys.argv[1]))["nvme_files"]
assert [(x["path"], x["bytes"], x["regions"]) for x in f] == [
    ("/p/nv", int(sys.argv[2]), ["params_shard"]),
    ("/o/nv", int(sys.argv[3]), ["grad32", "master", "adam_m", "adam_v"])], f
EOS
then ok "plan.json nvme_files"; else fail "plan.json nvme_files"; fi
zt_end
