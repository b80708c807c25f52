#!/usr/bin/env bash
# t_qwen2_train_parity.sh — the emitted qwen2 trainer (llama's kernels with q, k, v biases) against
# PyTorch (tests/trainer/torch_llama.py --qkv-bias, float64, after Hugging Face's Qwen2ForCausalLM)
# from the same safetensors weights and the same batches, with t_llama_train_parity.sh's bounds:
#   step-1 loss within 1e-5 relative; every gradient (--dump-grads), the bias gradients among them,
#   within 1e-4 relative to its norm; the losses of 10 AdamW steps with weight decay and clipping at
#   1.0 within 1e-4 relative.
# One model whose sizes are not powers of two (vocab 97, d_model 60, head size 10, d_ff 106, seq 29;
# 6 query heads on 2 key/value heads, untied lm_head, biases perturbed away from 0) on two plans:
# ZeRO-0 on 1 rank, and ZeRO-3 on 2 ranks with 2 micro-steps of accumulation and the optimizer
# states on NVMe. Last, the random init: biases zeros, no weight decay on them.
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_llama.py
zt_need_mpi "qwen2 train parity" torch
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=97 C=60 L=2 CTX=40 FF=106 T=29 TBS=8 NH=6 NKV=2
"$PY" tests/trainer/torch_gpt2.py tokens --V $V --n 6000 --seed 5 --out "$tmp/tok.bin" >/dev/null ||
  { fail "tokens"; zt_end; }

m="$tmp/ref"; mkdir -p "$m"
if ! { "$PY" $REF init --V $V --C $C --NH $NH --NKV $NKV --F $FF --L $L --qkv-bias --perturb 0.05 --seed 11 \
         --out "$m/w.safetensors" >/dev/null &&
       "$PY" $REF grad --weights "$m/w.safetensors" --tokens "$tmp/tok.bin" --NH $NH --NKV $NKV --B $TBS --T $T \
         --theta 10000 --out "$m/ref_grad.safetensors" >/dev/null &&
       "$PY" $REF train --weights "$m/w.safetensors" --tokens "$tmp/tok.bin" --NH $NH --NKV $NKV --B $TBS --T $T \
         --theta 10000 --steps 10 --lr 1e-3 --wd 0.1 --clip 1.0 --out "$m/ref_losses.jsonl" >/dev/null; }; then
  fail "torch reference"; zt_end
fi
check "the reference weights hold q, k, v biases" "$PY" -c "
import sys; sys.path.insert(0, 'tests/trainer'); import safetensors_io
w, _ = safetensors_io.load('$m/w.safetensors')
sys.exit(0 if all(f'model.layers.{l}.self_attn.{p}_proj.bias' in w for l in range($L) for p in 'qkv')
         and not any('o_proj.bias' in n for n in w) else 1)"

# case_ PLAN STAGE WS GAS OFFLOAD
case_() {
  local pname=$1 stage=$2 ws=$3 gas=$4 off=$5 d="$tmp/$1" name="qwen2 $1"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: qparity
model: {arch: qwen2, vocab_size: $V, context: $CTX, d_model: $C, n_layers: $L, n_heads: $NH,
        n_kv_heads: $NKV, d_ff: $FF, norm_eps: 1.0e-5, tie_embeddings: false, rope_theta: 10000.0}
train: {seq_len: $T, world_size: $ws, seed: 1}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": $TBS, "gradient_accumulation_steps": $gas, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 3000, "sub_group_size": 5000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 4000,
   "offload_optimizer": {"device": "$off", "nvme_path": "$d/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
   "weight_decay": 0.1}}}
EOF
  if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || ! zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1; then
    cat "$d/gen.log" "$d/make.log"; fail "$name build"; return
  fi
  if ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$m/w.safetensors" \
       --steps 1 --dump-grads "$d/grad.safetensors" --log "$d/l1.jsonl" --quiet >"$d/run1.log" 2>&1 ||
     ! mpirun --oversubscribe -np $ws "$d/out/train" --data "$tmp/tok.bin" --init-from "$m/w.safetensors" \
       --steps 10 --log "$d/l10.jsonl" --quiet >"$d/run10.log" 2>&1; then
    cat "$d/run1.log" "$d/run10.log"; fail "$name run"; return
  fi
  "$PY" tests/trainer/parity_check.py "$m" "$d" "$name"
  if [ $? -eq 0 ]; then ok "$name: loss, gradients (q, k, v biases too) and 10-step losses match PyTorch"
  else fail "$name"; fi
}
case_ zero0_ws1 0 1 1 none
case_ zero3_ws2_gas2_nvme 3 2 2 nvme

# The random init (no --init-from): the biases zeros. (No weight decay on them, as on every vector:
# the 10-step losses above, with weight_decay 0.1, would differ otherwise.)
d="$tmp/zero0_ws1"
if mpirun --oversubscribe -np 1 "$d/out/train" --data "$tmp/tok.bin" --steps 0 --export "$d/init/w.safetensors" \
     --quiet >"$d/init.log" 2>&1 &&
   "$PY" - "$d/init/w.safetensors" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, "tests/trainer")
import safetensors_io
w, _ = safetensors_io.load(sys.argv[1])
b = [n for n in w if n.endswith(".bias")]
bad = [n for n in b if not np.all(w[n] == 0.0)]
print(f"# init: {len(b)} biases" + (": not zeros: " + ", ".join(bad) if bad else ""))
sys.exit(1 if bad or len(b) != 6 else 0)
EOF
then ok "random init: the q, k, v biases zeros"
else cat "$d/init.log"; fail "random init of the biases"; fi
zt_end
