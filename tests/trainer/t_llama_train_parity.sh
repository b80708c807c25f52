#!/usr/bin/env bash
# t_llama_train_parity.sh — the emitted llama trainer (bin/zgen -> make -> mpirun train) against
# PyTorch (tests/trainer/torch_llama.py, float64, after Hugging Face's LlamaForCausalLM) from the
# same safetensors weights and the same batches (docs/SPEC.md batch order):
#   step-1 loss within 1e-5 relative; every gradient (--dump-grads: the reduced, unclipped global
#   gradient) within 1e-4 relative to its norm; the losses of 10 AdamW steps with weight decay and
#   clipping at 1.0 within 1e-4 relative.
# Two models whose sizes are not powers of two (vocab 97, d_model 60, head size 10, d_ff 106,
# seq 29): grouped-query attention (6 query heads on 2 key/value heads), RoPE base 10000 without
# scaling, untied lm_head; and multi-query (5 heads on 1, head size 12) with LLaMA 3 frequency
# scaling (base 100, original_context 32: its three frequency bands all occur) and a tied head.
# Each on two plans: ZeRO-0 on 1 rank, and ZeRO-3 on 2 ranks with 2 micro-steps of accumulation and
# the optimizer states on NVMe (gathers, reduce-scatter, sharded Adam through the swap file). Last,
# the random init (no --init-from) by tensor kind.
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_llama.py
zt_need_mpi "llama train parity" torch
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=97 C=60 L=2 CTX=40 FF=106 T=29 TBS=8
"$PY" tests/trainer/torch_gpt2.py tokens --V $V --n 6000 --seed 5 --out "$tmp/tok.bin" >/dev/null ||
  { fail "tokens"; zt_end; }

# model NAME NH NKV TIED(true|false) ROPE_YAML TORCH_ROPE_FLAGS...: weights and the torch references
model() {
  local name=$1 nh=$2 nkv=$3 tied=$4 rope=$5; shift 5
  local m="$tmp/$name"; mkdir -p "$m"
  echo "$nh $nkv $tied $rope" >"$m/shape"
  "$PY" $REF init --V $V --C $C --NH "$nh" --NKV "$nkv" --F $FF --L $L $([ "$tied" = true ] && echo --tied) \
      --perturb 0.05 --seed 11 --out "$m/w.safetensors" >/dev/null &&
  "$PY" $REF grad --weights "$m/w.safetensors" --tokens "$tmp/tok.bin" --NH "$nh" --NKV "$nkv" --B $TBS \
      --T $T "$@" --out "$m/ref_grad.safetensors" >/dev/null &&
  "$PY" $REF train --weights "$m/w.safetensors" --tokens "$tmp/tok.bin" --NH "$nh" --NKV "$nkv" --B $TBS \
      --T $T "$@" --steps 10 --lr 1e-3 --wd 0.1 --clip 1.0 --out "$m/ref_losses.jsonl" >/dev/null
}

# case_ MODEL PLAN STAGE WS GAS OFFLOAD
case_() {
  local mname=$1 pname=$2 stage=$3 ws=$4 gas=$5 off=$6 m="$tmp/$1" d="$tmp/$1_$2" name="$1 $2"
  local nh nkv tied rope; read -r nh nkv tied rope <"$m/shape"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: lparity
model: {arch: llama, vocab_size: $V, context: $CTX, d_model: $C, n_layers: $L, n_heads: $nh,
        n_kv_heads: $nkv, d_ff: $FF, norm_eps: 1.0e-5, tie_embeddings: $tied, $rope}
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
  if [ $? -eq 0 ]; then ok "$name: loss, gradients and 10-step losses match PyTorch"; else fail "$name"; fi
}

model gqa 6 2 false "rope_theta: 10000.0" --theta 10000 ||
  { fail "torch reference gqa"; zt_end; }
model mqa_llama3 5 1 true \
  "rope_theta: 100.0, rope_scaling: {type: llama3, factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_context: 32}" \
  --theta 100 --llama3 8 1 4 32 ||
  { fail "torch reference mqa_llama3"; zt_end; }
case_ gqa zero0_ws1 0 1 1 none
case_ gqa zero3_ws2_gas2_nvme 3 2 2 nvme
case_ mqa_llama3 zero0_ws1 0 1 1 none
case_ mqa_llama3 zero3_ws2_gas2_nvme 3 2 2 nvme

# The random init (no --init-from) of the first trainer, by tensor kind: RMSNorm gains ones,
# embeddings, q/k/v, gate/up and lm_head normal(0, 0.02), the residual projections o_proj and
# down_proj normal(0, 0.02/sqrt(2 n_layers)) (docs/SPEC.md); each sample std within 10 %.
d="$tmp/gqa_zero0_ws1"
if mpirun --oversubscribe -np 1 "$d/out/train" --data "$tmp/tok.bin" --steps 0 --export "$d/init/w.safetensors" \
     --quiet >"$d/init.log" 2>&1 &&
   "$PY" - "$d/init/w.safetensors" $L <<'EOF'
import math, sys
import numpy as np
sys.path.insert(0, "tests/trainer")
import safetensors_io
w, _ = safetensors_io.load(sys.argv[1]); L = int(sys.argv[2])
bad = []
for n, a in w.items():
    if n.endswith("layernorm.weight") or n == "model.norm.weight":
        if not np.all(a == 1.0): bad.append(f"{n} not ones")
        continue
    want = 0.02 / math.sqrt(2 * L) if n.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
    got = float(a.std())
    if abs(got - want) > 0.1 * want or abs(float(a.mean())) > 0.1 * want: bad.append(f"{n} std {got:.4g} want {want:.4g}")
print(f"# init: {len(w)} tensors" + (": " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
EOF
then ok "random init: ones for RMSNorm gains, normal(0, 0.02), residual projections scaled"
else cat "$d/init.log"; fail "random init by tensor kind"; fi
zt_end
