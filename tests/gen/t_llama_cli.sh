#!/usr/bin/env bash
# t_llama_cli.sh — bin/zgen on arch llama: plan.txt and plan.json name the Hugging Face tensors,
# --estimate and --dump=plan succeed, and the trainer is emitted from the arch table's file list
# (the llama kernels and adapter, the gpt2 files it builds on, not gpt2's adapter) with llama's
# constants. train-cuda runs llama: llama-tiny (fp32) gets cuda/ with the CUDA-core attention
# (attention_gqa.cu, ZK_ATT_TC 0) and no note, a bf16 llama gets cuda/ with the tensor-core one, both
# with llama's device adapter and not gpt2's. At the head-size limit of the attention kernels (gen's
# decision, gen/cuda_dec.c): a bf16 llama with head size 168 (above the tensor cores' 128) gets the
# CUDA-core attention in 16-bit storage; at 170 zgen says why not in a note, emits no cuda/, and the
# Makefile's cuda targets refuse with the reason.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bin/zgen specs/llama-tiny.yaml -o "$tmp/out" > "$tmp/log" 2>&1; rc=$?
check emits_exit0 test "$rc" -eq 0
check plan_txt_written grep -q "model.layers.3.self_attn.k_proj.weight" "$tmp/out/plan.txt"
check plan_json_valid "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); \
  assert any(t['name']=='lm_head.weight' and t['shape']==[256,128] for t in j['tensors'])" "$tmp/out/plan.json"
check trainer_sources_of_the_arch test -e "$tmp/out/Makefile" -a -e "$tmp/out/llama_model.c" -a -e "$tmp/out/llama_host.c" \
  -a -e "$tmp/out/zk_host_ops.c" -a ! -e "$tmp/out/gpt2_model.c"
check llama_constants grep -q "^#define ZG_N_KV_HEADS  *2 " "$tmp/out/zg_model.h"
check fp32_llama_gets_train_cuda test -e "$tmp/out/cuda/trainer/cuda_llama.c" -a -e "$tmp/out/cuda/kernels/attention_gqa.cu"
check fp32_llama_no_note test "$(grep -c "no train-cuda" "$tmp/log")" -eq 0
check fp32_llama_cuda_core_attention grep -q "^#define ZK_ATT_TC 0" "$tmp/out/cuda/kernels/zk_shapes.h"
# head sizes 168 and 170, bf16
for hs in 168 170; do
  mkdir -p "$tmp/hs$hs"
  cat > "$tmp/hs$hs/spec.yaml" <<EOF
name: hs$hs
model: {arch: llama, vocab_size: 64, context: 8, d_model: $((2 * hs)), n_layers: 1, n_heads: 2, n_kv_heads: 1, d_ff: 64}
train: {seq_len: 8, world_size: 1, seed: 1}
deepspeed: {train_batch_size: 1, bf16: {enabled: true}, zero_optimization: {stage: 1}}
EOF
  bin/zgen "$tmp/hs$hs/spec.yaml" -o "$tmp/hs$hs/out" > "$tmp/hs$hs/log" 2>&1
done
check hs168_bf16_cuda_core_attention grep -q "^#define ZK_ATT_TC 0" "$tmp/hs168/out/cuda/kernels/zk_shapes.h"
check hs168_bf16_storage grep -q "^#define ZK_IO 1" "$tmp/hs168/out/cuda/kernels/zk_shapes.h"
check hs170_no_cuda_dir test -e "$tmp/hs170/out/Makefile" -a ! -e "$tmp/hs170/out/cuda"
check hs170_note_no_train_cuda grep -q "note: arch llama: no train-cuda.*head size d_model / n_heads is above 168" "$tmp/hs170/log"
make -s -C "$tmp/hs170/out" cuda > "$tmp/mk" 2>&1; rc=$?
check make_cuda_refuses test "$rc" -ne 0
check make_cuda_says_why grep -q "no train-cuda for arch llama: the head size d_model / n_heads is above 168" "$tmp/mk"
bin/zgen specs/llama2-7b.yaml -o "$tmp/o7" > "$tmp/log7" 2>&1
check bf16_llama_gets_train_cuda test -e "$tmp/o7/cuda/trainer/cuda_llama.c" -a ! -e "$tmp/o7/cuda/trainer/cuda_gpt2.c" \
  -a -e "$tmp/o7/cuda/trainer/cuda_model.c"
check bf16_llama_no_note test "$(grep -c "no train-cuda" "$tmp/log7")" -eq 0
check makefile_names_the_adapter grep -q "cuda/trainer/cuda_llama.c" "$tmp/o7/Makefile"
check plan_json_llama_keys "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['model']; \
  assert m['n_kv_heads']==2 and m['rope_theta']==10000 and not m['tie_embeddings'] and 'rope_scaling' not in m" "$tmp/out/plan.json"
bin/zgen specs/llama3-8b.yaml -o "$tmp/o8" >/dev/null 2>&1
check plan_json_rope_scaling "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['model']; \
  assert m['n_kv_heads']==8 and m['rope_scaling']=={'type':'llama3','factor':8,'low_freq_factor':1,'high_freq_factor':4,'original_context':8192}" "$tmp/o8/plan.json"
check rope_scaling_constants grep -q "^#define ZG_ROPE_LLAMA3  *1 " "$tmp/o8/zg_model.h"
check dump_spec_llama_keys grep -q "^n_kv_heads 8 norm_eps 1e-05 rope_theta 500000 tie_embeddings 0 rope_scaling llama3 factor 8 low_freq_factor 1 high_freq_factor 4 original_context 8192$" \
  <(bin/zgen specs/llama3-8b.yaml --dump=spec)

bin/zgen specs/llama2-7b.yaml --estimate > "$tmp/est" 2>&1; rc=$?
check estimate_exit0 test "$rc" -eq 0
check estimate_params grep -q "6738M total params, 131M largest layer" "$tmp/est"

bin/zgen specs/llama3-8b.yaml --dump=plan -o "$tmp/d" > "$tmp/dump" 2> "$tmp/dump.err"; rc=$?
check dump_plan_exit0 test "$rc" -eq 0
check dump_plan_printed grep -q "8030261248" "$tmp/dump"

# gpt2 still emits its own files and train-cuda's
bin/zgen specs/tiny.yaml -o "$tmp/tiny" > "$tmp/tlog" 2>&1; rc=$?
check gpt2_still_emits test "$rc" -eq 0 -a -e "$tmp/tiny/Makefile" -a -e "$tmp/tiny/gpt2_model.c" -a -d "$tmp/tiny/cuda" \
  -a ! -e "$tmp/tiny/llama_host.c" -a -e "$tmp/tiny/cuda/trainer/cuda_gpt2.c" -a ! -e "$tmp/tiny/cuda/trainer/cuda_llama.c"
check gpt2_no_rotary_constants test "$(grep -c ZG_N_KV_HEADS "$tmp/tiny/zg_model.h")" -eq 0
zt_end
