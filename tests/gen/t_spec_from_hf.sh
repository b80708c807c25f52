#!/usr/bin/env bash
# t_spec_from_hf.sh — `zgen --spec-from-hf config.json`: Hugging Face configs written here (LLaMA 2 7B,
# LLaMA 3.1 8B with its rope_scaling, a tiny GQA llama, GPT-2 124M: their published config.json
# values) become specs that zgen accepts, with the published parameter counts (Meta / OpenAI figures,
# not zgen's) and the shapes the configs say; what zgen cannot train is refused naming the key.
. "$(dirname "$0")/../lib.sh"
zt_build bin/zgen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CFG=specs/configs/llama_zero3_offload_cpu.json

mkdir -p "$tmp/Llama-2-7b-hf" "$tmp/llama31" "$tmp/tiny" "$tmp/gpt2" "$tmp/bad" "$tmp/qwen"
cat > "$tmp/Llama-2-7b-hf/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 1, "eos_token_id": 2,
 "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
 "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
 "tie_word_embeddings": false, "torch_dtype": "float16", "use_cache": true, "vocab_size": 32000}
JSON
cat > "$tmp/llama31/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
 "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
 "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
 "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
 "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256}
JSON
cat > "$tmp/tiny/config.json" <<'JSON'
{"model_type": "llama", "hidden_size": 96, "intermediate_size": 200, "max_position_embeddings": 64,
 "num_attention_heads": 6, "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 300,
 "tie_word_embeddings": true, "rms_norm_eps": 1e-06}
JSON
cat > "$tmp/gpt2/config.json" <<'JSON'
{"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
 "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
 "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
 "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257}
JSON

# params SPEC: the parameter count zgen plans for the written spec
params() { bin/zgen "$1" -c "$CFG" --estimate 2>&1 | sed -n 's/^SW: Model with \([0-9]*\)M total params.*/\1/p'; }
dump() { bin/zgen "$1" -c "$CFG" --dump=spec 2>&1 | head -1; }

bin/zgen --spec-from-hf "$tmp/Llama-2-7b-hf/config.json" -o "$tmp/l2.yaml" 2>/dev/null
check llama2_written grep -q "^name: llama_2_7b_hf$" "$tmp/l2.yaml"
check llama2_untied grep -q "tie_embeddings: false" "$tmp/l2.yaml"
check llama2_7b_params test "$(params "$tmp/l2.yaml")" = 6738
check llama2_shape test "$(dump "$tmp/l2.yaml")" = \
  "name llama_2_7b_hf arch llama vocab 32000 context 4096 d_model 4096 layers 32 heads 32 d_ff 11008 seq_len 2048 world_size 1 gpus_per_node 1"

bin/zgen --spec-from-hf "$tmp/Llama-2-7b-hf" > "$tmp/l2dir.yaml" 2>/dev/null
check model_folder_reads_config cmp -s "$tmp/l2.yaml" "$tmp/l2dir.yaml"

bin/zgen --spec-from-hf "$tmp/llama31/config.json" --name llama31_8b > "$tmp/l3.yaml" 2>/dev/null
check llama31_stdout grep -q "^name: llama31_8b$" "$tmp/l3.yaml"
check llama31_rope_scaling grep -q "rope_scaling: {type: llama3, factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_context: 8192}" "$tmp/l3.yaml"
check llama31_gqa grep -q "n_kv_heads: 8" "$tmp/l3.yaml"
check llama31_theta grep -q "rope_theta: 500000.0" "$tmp/l3.yaml"
check llama31_8b_params test "$(params "$tmp/l3.yaml")" = 8030

bin/zgen --spec-from-hf "$tmp/tiny/config.json" -o "$tmp/tiny.yaml" 2>/dev/null
bin/zgen "$tmp/tiny.yaml" -c specs/configs/tiny_zero3.json --dump=plan -o "$tmp/tout" > "$tmp/tplan" 2>/dev/null
# tied GQA llama: embed 300*96 + 2 x (q,o 96*96; k,v 32*96; gate,up,down 3*96*200; 2 norms 96) + norm 96
check tiny_tied_params grep -q "$((300*96 + 2*(2*96*96 + 2*32*96 + 3*96*200 + 2*96) + 96)) parameters" "$tmp/tplan"
check tiny_no_lm_head test "$(grep -c "lm_head.weight" "$tmp/tplan")" = 0 -a "$(grep -c "model.embed_tokens.weight" "$tmp/tplan")" -gt 0

bin/zgen --spec-from-hf "$tmp/gpt2/config.json" -o "$tmp/g.yaml" 2>/dev/null
# GPT-2 124M: 124,439,808 parameters (Hugging Face gpt2); zgen plans 124M
check gpt2_params test "$(params "$tmp/g.yaml")" = 124
check gpt2_shape test "$(dump "$tmp/g.yaml")" = \
  "name gpt2 arch gpt2 vocab 50257 context 1024 d_model 768 layers 12 heads 12 d_ff 3072 seq_len 1024 world_size 1 gpus_per_node 1"

# refusals name the key and exit 1
cat > "$tmp/bad/config.json" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "intermediate_size": 100, "max_position_embeddings": 64,
 "num_attention_heads": 4, "num_hidden_layers": 1, "vocab_size": 50, "attention_bias": true,
 "hidden_act": "gelu", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
JSON
bin/zgen --spec-from-hf "$tmp/bad/config.json" > "$tmp/bad.out" 2> "$tmp/bad.err"; rc=$?
check bad_exit1 test "$rc" -eq 1
check bad_bias grep -q 'config.json:2:.*"attention_bias": true is not supported' "$tmp/bad.err"
check bad_act grep -q '"hidden_act" must be "silu"' "$tmp/bad.err"
check bad_rope grep -q 'rope_scaling type yarn is not supported' "$tmp/bad.err"
check bad_no_output test ! -s "$tmp/bad.out"
# Qwen2: the q, k, v biases make it arch qwen2, not a refused llama; a sliding window is refused
cat > "$tmp/qwen/config.json" <<'JSON'
{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 100,
 "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
 "vocab_size": 50, "hidden_act": "silu", "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
 "tie_word_embeddings": true, "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28}
JSON
bin/zgen --spec-from-hf "$tmp/qwen/config.json" -o "$tmp/q.yaml" 2>"$tmp/q.err"
bin/zgen "$tmp/q.yaml" -c specs/configs/tiny_zero3.json --dump=plan -o "$tmp/qout" > "$tmp/qplan" 2>>"$tmp/q.err"
check qwen2_arch grep -q "^  arch: qwen2$" "$tmp/q.yaml"
# tied: embed 50*64 + 2 x (q,o 64*64; k,v 32*64; biases 64+32+32; gate,up,down 3*64*100; 2 norms 64) + norm 64
check qwen2_params grep -q "$((50*64 + 2*(2*64*64 + 2*32*64 + 128 + 3*64*100 + 2*64) + 64)) parameters" "$tmp/qplan"
check qwen2_biases test "$(grep -c 'self_attn\.[qkv]_proj\.bias' "$tmp/qplan")" -ge 6 -a "$(grep -c 'o_proj.bias' "$tmp/qplan")" = 0
sed 's/"use_sliding_window": false/"use_sliding_window": true/' "$tmp/qwen/config.json" > "$tmp/bad/qsw.json"
bin/zgen --spec-from-hf "$tmp/bad/qsw.json" > "$tmp/qsw.out" 2> "$tmp/qsw.err"; rc=$?
check qwen2_sliding_refused test "$rc" -eq 1 -a ! -s "$tmp/qsw.out"
check qwen2_sliding_named grep -q "qsw.json:4:.*error: config.json \"use_sliding_window\": true is not supported" "$tmp/qsw.err"
echo '{"model_type": "bert", "vocab_size": 10}' > "$tmp/bad/b.json"
bin/zgen --spec-from-hf "$tmp/bad/b.json" > /dev/null 2> "$tmp/bert.err"; rc=$?
check bert_refused test "$rc" -eq 1
check bert_named grep -q '"model_type" "bert" is not one zgen trains' "$tmp/bert.err"
zt_end
