#!/usr/bin/env bash
# t_llama_kernels.sh — the host llama kernels (templates/host/llama/) against a LLaMA written in plain
# PyTorch float64 (torch_llama.py, after Hugging Face's LlamaForCausalLM) on one micro-batch with an
# ignored target: loss within 1e-5 relative, every gradient within 1e-4 relative to its norm. Sizes
# are odd (head sizes 10, 8, 12; T 11, 13, 9); GQA with n_kv_heads < n_heads, multi-query with a tied
# head, RoPE with and without LLaMA 3's frequency scaling (theta 100 and original_context 32 put one
# frequency in each of its three bands). A negative control (another RoPE base on the host) must fail.
# With --docs the rows hold documents (a length-1 one, a row ending in padding): positions restart and
# attention stays inside each document, against HF-style position ids and a block-causal mask.
. "$(dirname "$0")/../lib.sh"
REF=tests/trainer/torch_llama.py
X=bin/tests/trainer/x_llama_kernels
"$PY" -c 'import torch, numpy' 2>/dev/null || zt_skip_all llama_kernels "needs $PY with torch and numpy"
zt_build "$X"

# case NAME ARGS...: all tensors and the loss pass
case_ok() {
  local name=$1; shift
  local out; out=$("$PY" $REF run --x "$X" "$@" 2>&1); local rc=$?
  local line; line=$(tail -1 <<<"$out")
  echo "# $name: $(head -1 <<<"$out")"
  if [ $rc -eq 0 ] && [[ "$line" =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -eq "$N" ]; then
    ok "$name (loss and $((N - 1)) gradients)"
  else
    sed 's/^/  /' <<<"$out"; fail "$name"
  fi
}

N=22 case_ok gqa_rope --V 67 --C 40 --NH 4 --NKV 2 --F 70 --L 2 --B 2 --T 11 --theta 10000
N=22 case_ok gqa_rope_llama3 --V 53 --C 48 --NH 6 --NKV 2 --F 58 --L 2 --B 2 --T 13 --theta 100 --llama3 8 1 4 32
N=12 case_ok mqa_tied --V 31 --C 36 --NH 3 --NKV 1 --F 50 --L 1 --B 1 --T 9 --theta 500000 --tied
N=13 case_ok mha --V 29 --C 24 --NH 2 --NKV 2 --F 40 --L 1 --B 3 --T 7 --theta 10000 --seed 5
# documents (docs/DATA.md): positions restart, attention stays inside each, a length-1 document, a
# row ending in padding; and a negative control: the same case with the documents hidden from the
# host (pos not sent) must fail
N=22 case_ok docs_gqa_rope --V 67 --C 40 --NH 4 --NKV 2 --F 70 --L 2 --B 2 --T 19 --theta 10000 --docs
N=22 case_ok docs_llama3 --V 53 --C 48 --NH 6 --NKV 2 --F 58 --L 2 --B 2 --T 13 --theta 100 --llama3 8 1 4 32 --docs

out=$("$PY" $REF run --x "$X" --V 53 --C 48 --NH 6 --NKV 2 --F 58 --L 2 --B 2 --T 13 --theta 100 \
      --llama3 8 1 4 32 --host-theta 101 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "FAIL" <<<"$out"; then ok negative_control_rope_base; else fail negative_control_rope_base; fi
out=$("$PY" $REF run --x "$X" --V 67 --C 40 --NH 4 --NKV 2 --F 70 --L 2 --B 2 --T 19 --docs --host-no-docs 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "FAIL" <<<"$out"; then ok negative_control_documents_hidden; else fail negative_control_documents_hidden; fi
zt_end
