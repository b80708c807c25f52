#!/usr/bin/env bash
# t_llama_cli.sh — bin/zgen on arch llama while the trainer cannot run it: plan.txt and plan.json are
# written and name the Hugging Face tensors, --estimate and --dump=plan succeed, and emitting the
# trainer is refused (exit 1) with a message saying what is missing and no trainer sources written.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bin/zgen specs/llama-tiny.yaml -o "$tmp/out" > "$tmp/log" 2>&1; rc=$?
check refuses_emit_exit1 test "$rc" -eq 1
check refusal_says_what_is_missing grep -q "cannot emit a trainer for arch llama: the trainer's executor does not run the llama kernels" "$tmp/log"
check refusal_located grep -q "^specs/llama-tiny.yaml:[0-9]*:[0-9]*: error" "$tmp/log"
check plan_txt_written grep -q "model.layers.3.self_attn.k_proj.weight" "$tmp/out/plan.txt"
check plan_json_valid "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); \
  assert any(t['name']=='lm_head.weight' and t['shape']==[256,128] for t in j['tensors'])" "$tmp/out/plan.json"
check no_trainer_sources test ! -e "$tmp/out/Makefile"
check plan_json_llama_keys "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['model']; \
  assert m['n_kv_heads']==2 and m['rope_theta']==10000 and not m['tie_embeddings'] and 'rope_scaling' not in m" "$tmp/out/plan.json"
bin/zgen specs/llama3-8b.yaml -o "$tmp/o8" >/dev/null 2>&1
check plan_json_rope_scaling "$PY" -c "import json,sys; m=json.load(open(sys.argv[1]))['model']; \
  assert m['n_kv_heads']==8 and m['rope_scaling']=={'type':'llama3','factor':8,'low_freq_factor':1,'high_freq_factor':4,'original_context':8192}" "$tmp/o8/plan.json"
check dump_spec_llama_keys grep -q "^n_kv_heads 8 norm_eps 1e-05 rope_theta 500000 tie_embeddings 0 rope_scaling llama3 factor 8 low_freq_factor 1 high_freq_factor 4 original_context 8192$" \
  <(bin/zgen specs/llama3-8b.yaml --dump=spec)

bin/zgen specs/llama2-7b.yaml --estimate > "$tmp/est" 2>&1; rc=$?
check estimate_exit0 test "$rc" -eq 0
check estimate_params grep -q "6738M total params, 131M largest layer" "$tmp/est"

bin/zgen specs/llama3-8b.yaml --dump=plan -o "$tmp/d" > "$tmp/dump" 2> "$tmp/dump.err"; rc=$?
check dump_plan_exit0 test "$rc" -eq 0
check dump_plan_printed grep -q "8030261248" "$tmp/dump"
check dump_plan_notes_no_trainer grep -q "no trainer emitted" "$tmp/dump.err"

# gpt2 still emits
bin/zgen specs/tiny.yaml -o "$tmp/tiny" > "$tmp/tlog" 2>&1; rc=$?
check gpt2_still_emits test "$rc" -eq 0 -a -e "$tmp/tiny/Makefile"
zt_end
