#!/usr/bin/env bash
# demo_finetune.sh — `make demo-finetune`: the fine-tuning job as a user runs it on a real model,
# here on a tiny LLaMA made locally (no download):
#   1. a Hugging Face folder (config.json, model.safetensors, tokenizer files) and prompt/response
#      JSONL (tests/data/tiny_hf.py stands in for your model folder and your dataset)
#   2. bin/zgen data                   JSONL -> document files (tokens, loss mask, documents)
#   3. bin/zgen --spec-from-hf         the model's spec; ZeRO-2, optimizer on the CPU, 2 ranks
#   4. mpirun -np 2 .../train          evaluation every 10 steps, a checkpoint, an HF export
#   5. transformers                    loads the export with its tokenizer and generates
set -eu
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=build/py/bin/python
D=out/demo-finetune
STEPS=${DEMO_STEPS:-40}
rm -rf "$D" && mkdir -p "$D"
echo "== 1. a model folder and a dataset: $D/model, $D/data/pr.jsonl"
$PY tests/data/tiny_hf.py llama "$D/model" --seed 1 2>/dev/null
$PY tests/data/tiny_hf.py jsonl "$D/data" --n 400 --seed 2
echo "== 2. bin/zgen data (the model's own tokenizer; loss on the responses)"
bin/zgen data "$D/data/pr.jsonl" -o "$D/train.zgd" --tokenizer "$D/model" --seq-len 128
bin/zgen data "$D/data/pr_val.jsonl" -o "$D/val.zgd" --tokenizer "$D/model" --seq-len 128 --quiet
echo "== 3. the spec and the trainer: ZeRO-2, optimizer states on the CPU, 2 ranks"
bin/zgen --spec-from-hf "$D/model" -o "$D/spec.yaml" >/dev/null
sed -i 's/^  world_size: .*/  world_size: 2\n  micro_batch_size: 4\n  lr: 2e-3/' "$D/spec.yaml"
cat >"$D/ds_config.json" <<JSON
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": "auto", "gradient_clipping": 1.0,
 "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}},
 "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": 0.0}}}
JSON
bin/zgen "$D/spec.yaml" -c "$D/ds_config.json" -o "$D/out"
make -s -j2 -C "$D/out"
echo "== 4. train: mpirun -np 2 $D/out/train ($STEPS steps, val every 10)"
mpirun --oversubscribe -np 2 "$D/out/train" --data "$D/train.zgd" --val "$D/val.zgd" --init-from "$D/model" \
  --steps "$STEPS" --eval-every 10 --log "$D/log.jsonl" --save "$D/ckpt" --export "$D/tuned" --threads 1
echo "== 5. transformers loads $D/tuned with its tokenizer and generates"
$PY - "$D/tuned" "$D/log.jsonl" <<'PYEOF'
import json, sys, torch
from transformers import AutoTokenizer, LlamaForCausalLM
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = LlamaForCausalLM.from_pretrained(sys.argv[1])
rows = [json.loads(l) for l in open(sys.argv[2])]
vals = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
print("val_loss by step: " + ", ".join(f"{s}: {v:.4f}" for s, v in vals))
ids = tok("the cat runs?", return_tensors="pt").input_ids
out = model.generate(ids, max_new_tokens=16, do_sample=False)
print("generate:", repr(tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True)))
ok = vals[-1][1] < vals[0][1]
print("demo-finetune:", "ok, val_loss fell" if ok else "FAILED: val_loss did not fall")
sys.exit(0 if ok else 1)
PYEOF
