#!/usr/bin/env bash
# t_autosize.sh — the trainer runs the sizes zgen chooses (issue 11) and they change no result.
# A small gpt2 at stage 3 on 2 ranks with parameters and optimizer on NVMe (aio block 4 KiB, so
# sub-groups can be small), bf16 and fp32, trained 3 steps twice:
#   - "auto": every sizing key left out and hardware.host_memory declared small, so zgen sizes the
#     reduce buckets (one layer), the gather slots (two) and the sub-groups (to the host memory);
#   (tensors of more than 100 elements are gathered: stage3_param_persistence_threshold 100)
#   - "ds": the same keys written with DeepSpeed's default values (honoured: one bucket of every
#     gradient, DeepSpeed's prefetch depth, one sub-group per shard), no host memory declared.
# Both plans must differ as described (checked in plan.json), and the losses, gradient norms and
# exported weights must be bit-identical: bucket, slot and sub-group boundaries move no arithmetic.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "autosize" numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 >/dev/null 2>&1

# run TAG PREC "ZERO KEYS" "HARDWARE" -> $tmp/TAG/{losses.txt, w.safetensors, out/plan.json}
run() {
  local d="$tmp/$1" mp=""
  [ "$2" != fp32 ] && mp="\"$2\": {\"enabled\": true},"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOS
name: az
model: {arch: gpt2, vocab_size: 256, context: 32, d_model: 64, n_layers: 3, n_heads: 4}
train: {seq_len: 32, world_size: 2, seed: 11}
deepspeed: ds.json
$4
EOS
  cat >"$d/ds.json" <<EOS
{"train_batch_size": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, $mp
 "aio": {"block_size": 4096},
 "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100, $3
   "offload_optimizer": {"device": "nvme", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "nvme", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOS
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log" >&2; return 1; }
  [ -d "$tmp/kobj" ] && cp "$tmp"/kobj/zk_host*.o "$d/out/"
  zt_make -s -j2 -C "$d/out" DEBUG=1 >"$d/make.log" 2>&1 || { cat "$d/make.log" >&2; return 1; }
  [ -d "$tmp/kobj" ] || { mkdir -p "$tmp/kobj"; cp "$d"/out/zk_host*.o "$tmp/kobj/"; }
  ZR_DEBUG_MEM=1 ZG_NVME_DIR="$tmp/nvme/$1" mpirun --oversubscribe -np 2 -x ZR_DEBUG_MEM -x ZG_NVME_DIR \
      "$d/out/train" --data "$tmp/corpus.bin" --steps 3 --log "$d/log.jsonl" \
      --export "$d/w.safetensors" --threads 1 --quiet >"$d/run.log" 2>&1 || { tail -5 "$d/run.log" >&2; return 1; }
  "$PY" -c 'import json,sys; [print(repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' \
      "$d/log.jsonl" >"$d/losses.txt"
}

# field TAG KEY -> partition.KEY of the plan
field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["partition"][sys.argv[2]])' "$tmp/$1/out/plan.json" "$2"; }

DS='"reduce_bucket_size": 5e8, "stage3_prefetch_bucket_size": 5e7, "stage3_max_live_parameters": 1e9, "sub_group_size": 1e9,'
for prec in fp32 bf16; do
  if ! run "auto_$prec" $prec "" "hardware: {host_memory: 3MiB}" || ! run "ds_$prec" $prec "$DS" ""; then
    fail "$prec: plan, build or run failed"; continue
  fi
  a_sized=$(field "auto_$prec" sized_by_zgen); d_sized=$(field "ds_$prec" sized_by_zgen)
  a_sg=$(field "auto_$prec" sub_group_numel); a_slots=$(field "auto_$prec" n_gather_slots)
  d_slots=$(field "ds_$prec" n_gather_slots)
  a_bkt=$(field "auto_$prec" bucket_buffer_numel); d_bkt=$(field "ds_$prec" bucket_buffer_numel)
  if [ "$a_sized" = 15 ] && [ "$d_sized" = 0 ] && [ "$a_slots" = 2 ] && [ "$d_slots" -gt 2 ] &&
     [ "$a_bkt" -lt "$d_bkt" ] && [ "$a_sg" -lt 1000000000 ]; then
    ok "$prec: zgen sized buckets ($a_bkt vs $d_bkt elements), slots ($a_slots vs $d_slots), sub-groups ($a_sg elements)"
  else
    fail "$prec: plans differ as described" "sized $a_sized/$d_sized slots $a_slots/$d_slots bucket $a_bkt/$d_bkt sg $a_sg"
  fi
  if cmp -s "$tmp/auto_$prec/losses.txt" "$tmp/ds_$prec/losses.txt" &&
     cmp -s "$tmp/auto_$prec/w.safetensors" "$tmp/ds_$prec/w.safetensors" && [ -s "$tmp/auto_$prec/losses.txt" ]; then
    ok "$prec: zgen's sizes and DeepSpeed's give bit-identical losses, norms and weights ($(wc -l <"$tmp/auto_$prec/losses.txt") steps)"
  else
    fail "$prec: bit-identical to DeepSpeed's sizes" "$(paste "$tmp/auto_$prec/losses.txt" "$tmp/ds_$prec/losses.txt" | head -3 | tr '\n' ';')"
  fi
done
zt_end
