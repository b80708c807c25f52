#!/usr/bin/env bash
# t_hf_qwen2.sh — a Hugging Face Qwen2ForCausalLM folder through zgen and the emitted qwen2 trainer
# and back into transformers (its Qwen2ForCausalLM, not a reference of ours):
#   - tests/data/tiny_hf.py qwen2 makes the folder (q, k, v biases drawn away from 0, GQA, untied);
#     zgen --spec-from-hf writes its spec (arch qwen2), the trainer builds (2 ranks, ZeRO-3);
#   - --init-from DIR: the trainer's step-1 loss equals transformers' loss of the folder on the same
#     batch (1e-5 relative: both fp32);
#   - 2 steps, --export DIR: Qwen2ForCausalLM.from_pretrained loads the export with no missing or
#     unexpected tensor, its weights (biases included) moved, and its logits' loss on the third
#     batch equals the trainer's step-3 loss (1e-5 relative), i.e. transformers computes from the
#     export what the trainer computed from its own state;
#   - zgen --spec-from-hf of the exported config.json gives the same model constants;
#   - refused, naming the file and the key: a config.json with use_sliding_window true (zgen
#     --spec-from-hf, and the trainer's --init-from), one with rope_scaling, one with another
#     activation.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "hf qwen2" torch
"$PY" -c "import transformers" 2>/dev/null || zt_skip_all "hf qwen2" "needs $PY with transformers"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
T=16 TBS=4
src="$tmp/hf"
"$PY" tests/data/tiny_hf.py qwen2 "$src" --seed 3 >"$tmp/mk.log" 2>&1 || { cat "$tmp/mk.log"; fail "tiny Qwen2 folder"; zt_end; }
V=$("$PY" -c "import json; print(json.load(open('$src/config.json'))['vocab_size'])")
"$PY" tests/trainer/torch_gpt2.py tokens --V "$V" --n 3000 --seed 5 --out "$tmp/tok.bin" >/dev/null

d="$tmp/t"; mkdir -p "$d"
cat >"$d/ds.json" <<EOF
{"train_batch_size": $TBS, "zero_optimization": {"stage": 3, "reduce_bucket_size": 3000,
  "sub_group_size": 5000, "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 4000},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "weight_decay": 0.1}}}
EOF
if bin/zgen --spec-from-hf "$src" --name hfq -o "$d/spec.yaml" >"$d/gen.log" 2>&1 &&
   grep -q '^  arch: qwen2$' "$d/spec.yaml" &&
   sed -i 's/^train:/deepspeed: ds.json\ntrain:/; s/world_size: 1/world_size: 2/; s/seq_len: .*/seq_len: '$T'/' "$d/spec.yaml" &&
   bin/zgen "$d/spec.yaml" -o "$d/out" >>"$d/gen.log" 2>&1 && zt_make -s -j2 -C "$d/out" >"$d/make.log" 2>&1; then
  ok "zgen --spec-from-hf of a Qwen2 folder: arch qwen2, the trainer builds"
else
  cat "$d/gen.log" "$d/spec.yaml"; tail -20 "$d/make.log" 2>/dev/null; fail "spec and trainer of the Qwen2 folder"; zt_end
fi
check "the tables hold the q, k, v biases and ZG_QKV_BIAS 1" \
  bash -c "grep -q '\"model.layers.1.self_attn.v_proj.bias\"' '$d/out/zg_tables.c' &&
    ! grep -q 'o_proj.bias' '$d/out/zg_tables.c' && grep -q '^#define ZG_QKV_BIAS  *1' '$d/out/zg_model.h'"

train() { mpirun --oversubscribe -np 2 "$d/out/train" --data "$tmp/tok.bin" --threads 1 --quiet "$@"; }
if train --init-from "$src" --steps 3 --log "$tmp/l3.jsonl" >"$tmp/r3.log" 2>&1 &&
   train --init-from "$src" --steps 2 --export "$tmp/out" >"$tmp/r2.log" 2>&1; then
  ok "--init-from the folder, 3 steps; 2 steps and --export DIR"
else
  tail -5 "$tmp/r3.log" "$tmp/r2.log"; fail "train from the Qwen2 folder"; zt_end
fi

if "$PY" - "$src" "$tmp/out" "$tmp/tok.bin" "$tmp/l3.jsonl" $TBS $T >"$tmp/hf.log" 2>&1 <<'EOF'
import json, sys
import torch
sys.path.insert(0, "tests/trainer")
import torch_gpt2
from transformers import Qwen2ForCausalLM
src, out, tok, log, B, T = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
toks = torch_gpt2.read_tokens(tok)
losses = [json.loads(x)["loss"] for x in open(log)]
def hf_loss(model, step):
    x, y = torch_gpt2.batch(toks, step, B, T)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(x, dtype=torch.int64)).logits.float()
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                             torch.tensor(y, dtype=torch.int64).view(-1)).item()
bad = 0
m0 = Qwen2ForCausalLM.from_pretrained(src, torch_dtype=torch.float32).eval()
m2, info = Qwen2ForCausalLM.from_pretrained(out, torch_dtype=torch.float32, output_loading_info=True)
m2.eval()
if any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
    print("loading info:", info); bad += 1
s0, s2 = m0.state_dict(), m2.state_dict()
moved = [n for n in s0 if n.endswith(".bias") and not torch.equal(s0[n], s2[n])]
print(f"# {len(moved)} biases moved by 2 steps")
if len(moved) != 6: bad += 1
for name, model, step in (("the folder", m0, 0), ("the export after 2 steps", m2, 2)):
    h, t = hf_loss(model, step), losses[step]
    rel = abs(h - t) / abs(h)
    print(f"# {name}: transformers loss {h:.9g}, trainer step {step + 1} {t:.9g}, rel {rel:.2e}")
    if rel > 1e-5: bad += 1
sys.exit(1 if bad else 0)
EOF
then cat "$tmp/hf.log"; ok "transformers' Qwen2ForCausalLM on the folder and on the export: losses equal the trainer's ($(grep -o 'rel [0-9.e-]*' "$tmp/hf.log" | tr '\n' ' '))"
else cat "$tmp/hf.log"; fail "transformers loads the export and agrees with the trainer"; fi

if bin/zgen --spec-from-hf "$tmp/out" --name hfq -o "$tmp/back.yaml" >/dev/null 2>"$tmp/back.log" &&
   diff <(sed -n '/^model:/,/^train:/p' "$d/spec.yaml" | grep -v '^deepspeed:') <(sed -n '/^model:/,/^train:/p' "$tmp/back.yaml") \
     >"$tmp/back.diff"; then
  ok "zgen --spec-from-hf of the exported config.json: the same model keys"
else
  cat "$tmp/back.log" "$tmp/back.diff"; fail "zgen --spec-from-hf of the exported config.json"
fi

# refusals: copies of the folder with one config.json key changed
bad_cfg() {   # NAME KEY JSON: $tmp/NAME, the folder with config.json KEY = JSON
  rm -rf "$tmp/$1"; cp -r "$src" "$tmp/$1"
  "$PY" -c "import json, sys; p = sys.argv[1] + '/config.json'; c = json.load(open(p)); c[sys.argv[2]] = json.loads(sys.argv[3]); json.dump(c, open(p, 'w'), indent=2)" "$tmp/$1" "$2" "$3"
}
bad_cfg sw use_sliding_window true
bin/zgen --spec-from-hf "$tmp/sw" >/dev/null 2>"$tmp/sw.err"
check "--spec-from-hf: use_sliding_window true refused naming the file and the key" \
  grep -q "^$tmp/sw/config.json:[0-9]*:[0-9]*: error: config.json \"use_sliding_window\": true is not supported" "$tmp/sw.err"
check "--spec-from-hf: the note says what qwen2 is instead" grep -q 'must be false for arch qwen2: .*no sliding window' "$tmp/sw.err"
train --init-from "$tmp/sw" --steps 0 >"$tmp/sw_init.log" 2>&1
check "--init-from: use_sliding_window true refused naming the file and the key" \
  bash -c "grep 'config.json' '$tmp/sw_init.log' | grep -q '\"use_sliding_window\" is true, the model has false'"
bad_cfg rs rope_scaling '{"type": "linear", "factor": 2.0}'
bin/zgen --spec-from-hf "$tmp/rs" >/dev/null 2>"$tmp/rs.err"
check "--spec-from-hf: rope_scaling refused naming the key" \
  grep -q "config.json:[0-9]*:[0-9]*: error: config.json \"rope_scaling\": a mapping is not supported" "$tmp/rs.err"
bad_cfg act hidden_act '"gelu"'
bin/zgen --spec-from-hf "$tmp/act" >/dev/null 2>"$tmp/act.err"
check "--spec-from-hf: hidden_act gelu refused naming the key" \
  grep -q 'error: config.json "hidden_act": "gelu" is not supported' "$tmp/act.err"
zt_end
