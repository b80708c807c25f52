#!/usr/bin/env bash
# t_hf_gpt2.sh — Hugging Face model folders in and out of the emitted GPT-2 trainer (2 ranks, ZeRO-3,
# so each rank reads only its own ranges of the files). The Python side (tests/trainer/hf_io.py,
# written from the formats; torch rounds bf16) writes folders in HF's layout; the trainer loads them
# with --init-from DIR, trains 0 steps and exports; the export is compared tensor by tensor:
#   - fp32 shards (index, "transformer." names, GPT-2's attn.bias buffers) -> fp32 export, equal;
#   - bf16 and fp16 model.safetensors -> fp32 export equal to the 16-bit values widened;
#   - --export-dtype bf16 with --export-shard-size: shards + index, torch's bf16 rounding of the fp32;
#     that folder loaded back -> the same values; the folder passes the from_pretrained checks
#     (config.json keys, index, names, shapes, metadata; transformers itself is not installed here);
#   - zgen --spec-from-hf of the exported config.json gives the same model constants;
#   - damaged folders are refused naming the file and the tensor or key: wrong shape, missing
#     tensor, unexpected tensor, config.json that disagrees, an index that points at the wrong shard;
#   - --export FILE.safetensors still writes one file and config.json beside it.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "hf gpt2" torch
zt_build bin/zgen build/libzrt.a
HF=tests/trainer/hf_io.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export ZG_NVME_DIR="$tmp/nvme"
V=97 C=60 NH=3 L=2 CTX=31 FF=148 T=29
SH="--arch gpt2 --V $V --C $C --L $L --NH $NH --F $FF --ctx $CTX"

d="$tmp/g"
mkdir -p "$d"
cat >"$d/spec.yaml" <<EOF
name: hfg
model: {arch: gpt2, vocab_size: $V, context: $CTX, d_model: $C, n_layers: $L, n_heads: $NH, d_ff: $FF}
train: {seq_len: $T, world_size: 2, seed: 1}
deepspeed: ds.json
EOF
cat >"$d/ds.json" <<EOF
{"train_batch_size": 4, "zero_optimization": {"stage": 3, "reduce_bucket_size": 3000,
  "sub_group_size": 5000, "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 4000},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}}
EOF
if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! zt_make -s -C "$d/out" >"$d/make.log" 2>&1; then
  cat "$d/gen.log" "$d/make.log"; fail "generate and build"; zt_end
fi
"$PY" tests/trainer/torch_gpt2.py tokens --V $V --n 3000 --seed 5 --out "$tmp/tok.bin" >/dev/null

train() { mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/tok.bin" --steps 0 --threads 1 --quiet "$@"; }

# round_trip NAME WRITE_FLAGS EXPORT_FLAGS COMPARE
round_trip() {
  local name=$1 wflags=$2 eflags=$3 expect=$4 src="$tmp/$1.src" out="$tmp/$1.out"
  if ! "$PY" $HF write "$src" $SH $wflags >"$tmp/$name.w.log" 2>&1; then
    cat "$tmp/$name.w.log"; fail "$name: python writes the folder"; return
  fi
  if ! train --init-from "$src" --export "$out" $eflags >"$tmp/$name.log" 2>&1; then
    tail -5 "$tmp/$name.log"; fail "$name: --init-from DIR, 0 steps, --export DIR"; return
  fi
  if "$PY" $HF compare "$src" "$out" --expect "$expect" >"$tmp/$name.c.log" 2>&1; then
    ok "$name: $(tail -1 "$tmp/$name.c.log")"
  else
    cat "$tmp/$name.c.log"; fail "$name: export equals the loaded weights ($expect)"
  fi
}

round_trip fp32_shards "--dtype fp32 --shards 3 --prefix transformer. --extra" "" same
round_trip bf16_single "--dtype bf16 --shards 1" "" widen
round_trip fp16_single "--dtype fp16 --shards 1" "" widen
round_trip bf16_export "--dtype fp32 --shards 2 --seed 7" "--export-dtype bf16 --export-shard-size 40KB" bf16

check "bf16 export: 3+ shards named model-0000K-of-0000N, index, config.json as from_pretrained reads it" \
  bash -c "n=\$(ls '$tmp/bf16_export.out' | grep -c '^model-.*-of-.*\.safetensors\$'); [ \$n -ge 3 ] &&
    '$PY' $HF validate '$tmp/bf16_export.out' $SH --dtype bf16 --shards \$n >'$tmp/val1.log' 2>&1 || { cat '$tmp/val1.log'; false; }"
check "fp32 export: one model.safetensors, config.json as from_pretrained reads it" \
  bash -c "'$PY' $HF validate '$tmp/fp32_shards.out' $SH --dtype fp32 --shards 1 >'$tmp/val2.log' 2>&1 || { cat '$tmp/val2.log'; false; }"

# the trainer's own sharded bf16 export loaded back: the same bf16 values, widened
if train --init-from "$tmp/bf16_export.out" --export "$tmp/again.out" >"$tmp/again.log" 2>&1 &&
   "$PY" $HF compare "$tmp/bf16_export.out" "$tmp/again.out" --expect widen >"$tmp/again.c.log" 2>&1; then
  ok "our sharded bf16 folder loads back to the same values"
else
  tail -5 "$tmp/again.log" "$tmp/again.c.log"; fail "our sharded bf16 folder loads back"
fi

# the exported config.json read by zgen --spec-from-hf describes the same model
if bin/zgen --spec-from-hf "$tmp/fp32_shards.out" -o "$tmp/back.yaml" >/dev/null 2>"$tmp/back.log" &&
   sed -i 's/^train:/deepspeed: ds.json\ntrain:/; s/world_size: 1/world_size: 2/; s/seq_len: .*/seq_len: '$T'/' "$tmp/back.yaml" &&
   cp "$d/ds.json" "$tmp/ds.json" && bin/zgen "$tmp/back.yaml" -o "$tmp/back" >>"$tmp/back.log" 2>&1 &&
   diff <(grep -E '^#define ZG_(VOCAB_SIZE|CONTEXT|D_MODEL|N_LAYERS|N_HEADS|D_FF|NORM_EPS|TIE_EMBEDDINGS|N_PARAMS) ' "$d/out/zg_model.h") \
        <(grep -E '^#define ZG_(VOCAB_SIZE|CONTEXT|D_MODEL|N_LAYERS|N_HEADS|D_FF|NORM_EPS|TIE_EMBEDDINGS|N_PARAMS) ' "$tmp/back/zg_model.h") >"$tmp/back.diff" &&
   diff <(sed -n '/zg_hf_config\[/,/^};/p' "$d/out/zg_tables.c") <(sed -n '/zg_hf_config\[/,/^};/p' "$tmp/back/zg_tables.c") >>"$tmp/back.diff" &&
   grep -q '{"n_embd", ' "$tmp/back/zg_tables.c"; then
  ok "zgen --spec-from-hf of the exported config.json: the same model constants and config.json rows"
else
  cat "$tmp/back.log" "$tmp/back.diff"; fail "zgen --spec-from-hf of the exported config.json"
fi

# expect_refusal NAME KIND PATTERN...: a damaged copy of the fp32 sharded folder is refused, the
# message matching every pattern: @T the tensor as stored, @N its model name, @F the file (mutate says)
expect_refusal() {
  local name=$1 kind=$2 dd="$tmp/bad_$2"; shift 2
  rm -rf "$dd"; cp -r "$tmp/fp32_shards.src" "$dd"
  "$PY" $HF mutate "$dd" "$kind" >"$dd.m" 2>&1 || { cat "$dd.m"; fail "$name: mutate"; return; }
  local tensor file
  tensor=$(head -1 "$dd.m"); file=$(tail -1 "$dd.m")
  if train --init-from "$dd" >"$dd.log" 2>&1; then fail "$name: accepted"; return; fi
  for p in "$@"; do
    p=${p//@T/$tensor}; p=${p//@N/${tensor#transformer.}}; p=${p//@F/$file}
    grep -q -- "$p" "$dd.log" || { head -3 "$dd.log"; fail "$name" "no '$p' in the message"; return; }
  done
  ok "$name: $(grep -m1 -o 'error: .*' "$dd.log" | cut -c1-150)..."
}
expect_refusal "--init-from DIR, wrong shape: file, tensor, both shapes" shape "@F: @T has shape" "expected \[" "HINT"
expect_refusal "--init-from DIR, missing tensor: named" missing "missing @N" "HINT"
expect_refusal "--init-from DIR, unexpected tensor: file and name" unexpected "@F: unexpected tensor stray.weight"
expect_refusal "--init-from DIR, config.json disagrees: key and both values" config "config.json" '"n_embd" is 120, the model has 60'
expect_refusal "--init-from DIR, index points at the wrong shard: index, tensor, file" index "model.safetensors.index.json" "which holds no such tensor"

# an empty folder and a bad --export-dtype are refused with what to do
mkdir -p "$tmp/empty"
train --init-from "$tmp/empty" >"$tmp/empty.log" 2>&1
check "--init-from an empty folder: names what a model folder holds" \
  grep -q "without model.safetensors or model.safetensors.index.json" "$tmp/empty.log"
train --export "$tmp/x" --export-dtype fp8 >"$tmp/dt.log" 2>&1
check "--export-dtype fp8 refused at start-up" grep -q "expected fp32 or bf16" "$tmp/dt.log"

# back-compat: --export FILE.safetensors writes one file + config.json beside it, loadable by file path
if train --init-from "$tmp/fp32_shards.src" --export "$tmp/file/w.safetensors" >"$tmp/f.log" 2>&1 &&
   [ -f "$tmp/file/config.json" ] && train --init-from "$tmp/file/w.safetensors" --export "$tmp/file2" >>"$tmp/f.log" 2>&1 &&
   "$PY" $HF compare "$tmp/fp32_shards.src" "$tmp/file2" --expect same >>"$tmp/f.log" 2>&1; then
  ok "--export FILE.safetensors (+ config.json) and --init-from FILE still work"
else
  tail -5 "$tmp/f.log"; fail "--export FILE.safetensors and --init-from FILE"
fi
zt_end
