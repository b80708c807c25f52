#!/usr/bin/env bash
# t_llama_cli.sh — bin/zgen on arch llama: plan.txt and plan.json name the Hugging Face tensors,
# --estimate and --dump=plan succeed, and the trainer is emitted from the arch table's file list
# (the llama kernels and adapter, the gpt2 files it builds on, not gpt2's adapter) with llama's
# constants. train-cuda runs llama's 16-bit plans (its attention is on tensor cores only): for
# llama-tiny (fp32) zgen says why not in a note, emits no cuda/, and the Makefile's cuda targets
# refuse with the reason; a bf16 llama gets cuda/ with llama's device adapter and not gpt2's.
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
  -a -e "$tmp/out/gpt2_host_ops.c" -a ! -e "$tmp/out/gpt2_model.c"
check llama_constants grep -q "^#define ZG_N_KV_HEADS  *2 " "$tmp/out/zg_model.h"
check no_cuda_dir test ! -e "$tmp/out/cuda"
check note_no_train_cuda grep -q "note: arch llama: no train-cuda" "$tmp/log"
make -s -C "$tmp/out" cuda > "$tmp/mk" 2>&1; rc=$?
check make_cuda_refuses test "$rc" -ne 0
check make_cuda_says_why grep -q "no train-cuda for arch llama: its attention runs on tensor cores only" "$tmp/mk"
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
