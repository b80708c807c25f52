#!/usr/bin/env bash
# t_finetune.sh — the fine-tuning job end to end, as a user runs it (docs/DATA.md, README "Fine-tuning"):
# a tiny LLaMA folder and tokenizer made with transformers, prompt/response and chat JSONL, bin/zgen data,
# the trainer on the document files, transformers as the oracle.
#   - --eval-only at the HF folder's weights equals transformers' mean loss over every val record with
#     labels -100 on the prompt (fp32, 1e-5 relative), for --pack (several documents per row: attention
#     and positions must not cross them) and --pad, and for a chat file;
#   - shuffled training gives the same losses at world size 1 and 2, ZeRO stages 0 and 3 (parameters and
#     optimizer on the CPU at stage 3), and the shuffle changes the batches (losses differ unshuffled);
#   - --eval-every K logs val_loss/val_tokens every K steps; the export loads with AutoTokenizer and
#     LlamaForCausalLM and its loss on the val records equals the last val_loss;
#   - resume frictions: --steps at the checkpoint's step is refused with the fix, --more-steps K
#     continues, the log keeps one line per step after a resume from an earlier checkpoint;
#   - a launch on another world size names the zgen command with the user's -c;
#   - text given to --data is refused with the zgen data command; a document file of a larger
#     vocabulary is refused naming both sizes.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "finetune" torch
"$PY" -c "import transformers, tokenizers" 2>/dev/null || zt_skip_all "finetune" "needs $PY with transformers (scripts/install-deps.sh)"
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export ZG_NVME_DIR="$tmp/nvme" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export ZGEN_NVRTC=off     # the host trainer is under test; the CUDA kernels have their own tests
M=$tmp/model
"$PY" tests/data/tiny_hf.py llama "$M" --seed 3 >/dev/null 2>&1 || { fail "make the tiny llama"; zt_end; }
"$PY" tests/data/tiny_hf.py jsonl "$tmp/j" --n 60 --seed 4 >/dev/null || { fail "make the jsonl"; zt_end; }
for k in pack pad; do
  bin/zgen data "$tmp/j/pr_val.jsonl" -o "$tmp/val_$k.zgd" --tokenizer "$M" --$k --quiet || fail "zgen data val --$k"
done
bin/zgen data "$tmp/j/pr.jsonl" -o "$tmp/train.zgd" --tokenizer "$M" --quiet || fail "zgen data train"
bin/zgen data "$tmp/j/chat_val.jsonl" -o "$tmp/chat_val.zgd" --tokenizer "$M" --quiet || fail "zgen data chat"

# gen NAME WS STAGE: the spec from the HF folder, fp32, seq_len = the folder's 128 positions
gen() {
  local d="$tmp/$1"; mkdir -p "$d"
  bin/zgen --spec-from-hf "$M" -o "$d/spec.yaml" >/dev/null 2>&1 || return 1
  sed -i "s/^  world_size: .*/  world_size: $2\n  seed: 11\n  micro_batch_size: 2/" "$d/spec.yaml"
  local off=""
  [ "$3" = 3 ] && off=', "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"}, "stage3_param_persistence_threshold": 10, "reduce_bucket_size": 4000, "sub_group_size": 6000'
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
 "zero_optimization": {"stage": $3$off},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.0}}}
EOF
  bin/zgen "$d/spec.yaml" -c "$d/ds.json" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log"; return 1; }
  zt_make -s -C "$d/out" >"$d/make.log" 2>&1 || { tail -20 "$d/make.log"; return 1; }
}
run() { local ws=$1; shift; mpirun -np "$ws" --bind-to none "$@"; }

gen a 1 0 || { fail "generate and build (1 rank, ZeRO-0)"; zt_end; }

# ---- the oracle: transformers on the records themselves, labels -100 on prompts
cat >"$tmp/oracle.py" <<'EOF'
import json, sys, torch
from transformers import AutoTokenizer, LlamaForCausalLM
model_dir, jsonl, L = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = AutoTokenizer.from_pretrained(model_dir)
model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
total, count = 0.0, 0
for line in open(jsonl):
    r = json.loads(line)
    if "prompt" in r:
        p = tok(r["prompt"]).input_ids
        a = tok(r["response"], add_special_tokens=False).input_ids + [tok.eos_token_id]
        ids, labels = p + a, [-100] * len(p) + a
    else:   # chat: assistant turns trained, from the template's own rendering of each prefix
        ids, labels, prev = [], [], []
        for k in range(1, len(r["messages"]) + 1):
            cur = tok.apply_chat_template(r["messages"][:k], tokenize=True)
            assert cur[:len(prev)] == prev
            new = cur[len(prev):]
            ids += new
            labels += new if r["messages"][k - 1]["role"] == "assistant" else [-100] * len(new)
            prev = cur
        ids += [tok.eos_token_id] if ids[-1] != tok.eos_token_id else []
        labels += [] if len(labels) == len(ids) else [-100]
    # a record longer than a row of L is scored as the trainer cuts it: pieces of L tokens that
    # share one token, each a sequence of its own (docs/DATA.md, Rows)
    s = 0
    while True:
        pi, pl = ids[s:s + L], labels[s:s + L]
        with torch.no_grad():
            logits = model(torch.tensor([pi])).logits[0].double()
        tgt = torch.tensor(pl[1:])
        keep = tgt != -100
        lp = torch.log_softmax(logits[:-1], dim=-1)
        total += float(-lp[keep, tgt[keep]].sum())
        count += int(keep.sum())
        if s + L >= len(ids):
            break
        s += L - 1
print(json.dumps({"val_loss": total / count, "val_tokens": count}))
EOF
close() {   # close NAME A B: A and B agree to 1e-5 relative, in val_loss and exactly in val_tokens
  "$PY" - "$2" "$3" <<'EOF'
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
rel = abs(a["val_loss"] - b["val_loss"]) / abs(b["val_loss"])
print(f"# zgen {a['val_loss']:.9f} ({a['val_tokens']} targets), transformers {b['val_loss']:.9f} "
      f"({b['val_tokens']}), rel {rel:.2e}")
sys.exit(0 if rel < 1e-5 and a["val_tokens"] == b["val_tokens"] else 1)
EOF
}
"$PY" "$tmp/oracle.py" "$M" "$tmp/j/pr_val.jsonl" 128 >"$tmp/hf_pr.json" 2>/dev/null || fail "transformers oracle (prompt/response)"
"$PY" "$tmp/oracle.py" "$M" "$tmp/j/chat_val.jsonl" 128 >"$tmp/hf_chat.json" 2>/dev/null || fail "transformers oracle (chat)"
for k in pack pad; do
  run 1 "$tmp/a/out/train" --data "$tmp/train.zgd" --val "$tmp/val_$k.zgd" --init-from "$M" --eval-only \
    >"$tmp/ev_$k.json" 2>"$tmp/ev_$k.err" || cat "$tmp/ev_$k.err"
  check "--eval-only --$k equals transformers' masked mean loss over every val record" close x "$tmp/ev_$k.json" "$tmp/hf_pr.json"
done
run 1 "$tmp/a/out/train" --data "$tmp/train.zgd" --val "$tmp/chat_val.zgd" --init-from "$M" --eval-only \
  >"$tmp/ev_chat.json" 2>"$tmp/ev_chat.err" || cat "$tmp/ev_chat.err"
check "--eval-only of a chat file (some records longer than a row) equals transformers (assistant turns)" close x "$tmp/ev_chat.json" "$tmp/hf_chat.json"

# ---- shuffled training: the same losses at any world size and stage
gen b 2 0 || fail "generate and build (2 ranks, ZeRO-0)"
gen c 1 3 || fail "generate and build (1 rank, ZeRO-3, CPU offload)"
gen d 2 3 || fail "generate and build (2 ranks, ZeRO-3, CPU offload)"
for n in a b c d; do
  ws=$(grep -m1 '^  world_size:' "$tmp/$n/spec.yaml" | awk '{print $2}')
  run "$ws" "$tmp/$n/out/train" --data "$tmp/train.zgd" --val "$tmp/val_pack.zgd" --init-from "$M" --steps 12 \
    --eval-every 4 --log "$tmp/$n.jsonl" --save "$tmp/$n.ck" --save-every 6 --export "$tmp/$n.export" --quiet \
    2>"$tmp/$n.err" || { fail "train $n"; cat "$tmp/$n.err"; }
done
sed -i 's/^  seed: 11/  seed: 11\n  shuffle: false/' "$tmp/a/spec.yaml"
bin/zgen "$tmp/a/spec.yaml" -c "$tmp/a/ds.json" -o "$tmp/a/out_ns" >/dev/null 2>&1 && zt_make -s -C "$tmp/a/out_ns" >/dev/null 2>&1 &&
  run 1 "$tmp/a/out_ns/train" --data "$tmp/train.zgd" --init-from "$M" --steps 12 --log "$tmp/ns.jsonl" --quiet 2>/dev/null ||
  fail "train unshuffled"
check "shuffled: the same losses at 1 and 2 ranks, ZeRO 0 and 3; eval every 4; unshuffled differs" "$PY" - "$tmp" <<'EOF'
import json, sys
t = sys.argv[1]
logs = {n: [json.loads(l) for l in open(f"{t}/{n}.jsonl")] for n in "abcd"}
ns = [json.loads(l) for l in open(f"{t}/ns.jsonl")]
ok = all(len(v) == 12 for v in logs.values())
for n in "bcd":
    for x, y in zip(logs["a"], logs[n]):
        for k in ("loss", "grad_norm"):
            ok = ok and abs(x[k] - y[k]) <= 1e-5 * abs(x[k])
        if "val_loss" in x:
            ok = ok and abs(x["val_loss"] - y["val_loss"]) <= 1e-5 * x["val_loss"]
vals = [r["step"] for r in logs["a"] if "val_loss" in r]
ok = ok and vals == [3, 7, 11] and all(r["val_tokens"] == logs["a"][3]["val_tokens"] for r in logs["a"] if "val_loss" in r)
diff = sum(abs(x["loss"] - y["loss"]) > 1e-4 for x, y in zip(logs["a"], ns))
a = logs["a"]
print(f"# losses {a[0]['loss']:.5f} -> {a[-1]['loss']:.5f}, val {a[3]['val_loss']:.5f} -> {a[11]['val_loss']:.5f}; "
      f"unshuffled differs at {diff} of 12 steps")
sys.exit(0 if ok and diff >= 6 and a[11]["val_loss"] < a[3]["val_loss"] else 1)
EOF

# ---- the export is a model transformers loads and generates with, and scores as zgen did
check "export: AutoTokenizer + LlamaForCausalLM load it; its loss is the last val_loss; generate stops at eos" \
  "$PY" - "$tmp/d.export" "$tmp/j/pr_val.jsonl" "$tmp/d.jsonl" "$tmp/oracle.py" <<'EOF'
import json, subprocess, sys, torch
from transformers import AutoTokenizer, LlamaForCausalLM
out, val, log, oracle = sys.argv[1:5]
tok = AutoTokenizer.from_pretrained(out)
model = LlamaForCausalLM.from_pretrained(out)
ok = model.config.eos_token_id == tok.eos_token_id and model.config.bos_token_id == tok.bos_token_id
ok = ok and model.generation_config.eos_token_id == tok.eos_token_id
g = model.generate(torch.tensor([tok("the cat").input_ids]), max_new_tokens=8, do_sample=False)
ok = ok and g.shape[1] <= 2 + 8 + 8
hf = json.loads(subprocess.run([sys.executable, oracle, out, val, "128"], capture_output=True, text=True).stdout)
last = [json.loads(l) for l in open(log)][-1]
rel = abs(hf["val_loss"] - last["val_loss"]) / last["val_loss"]
print(f"# export's loss {hf['val_loss']:.7f}, zgen's last val_loss {last['val_loss']:.7f}, rel {rel:.1e}")
sys.exit(0 if ok and rel < 1e-5 and hf["val_tokens"] == last["val_tokens"] else 1)
EOF

# ---- resume frictions
run 1 "$tmp/a/out/train" --data "$tmp/train.zgd" --resume "$tmp/a.ck" --steps 12 --quiet >/dev/null 2>"$tmp/r1.err"
rc=$?
check "--steps at the checkpoint's step: said (no step to train), naming --more-steps" \
  bash -c "[ $rc -eq 0 ] && grep -q 'is at step 12 and --steps 12 is not past it: no step to train' '$tmp/r1.err' && grep -q -- '--more-steps' '$tmp/r1.err'"
# a run that logged steps 12 and 13 past its last checkpoint, then died: the resume drops those lines
cp "$tmp/a.jsonl" "$tmp/r.jsonl"
tail -2 "$tmp/a.jsonl" | sed 's/"step":1[01]/"step":99/' >>"$tmp/r.jsonl"
run 1 "$tmp/a/out/train" --data "$tmp/train.zgd" --val "$tmp/val_pack.zgd" --resume "$tmp/a.ck" --more-steps 2 --log "$tmp/r.jsonl" --quiet 2>"$tmp/r2.err" ||
  { fail "--more-steps"; cat "$tmp/r2.err"; }
check "--more-steps 2 after step 12: the log holds steps 0..13 once each (lines past the checkpoint dropped)" "$PY" - "$tmp/r.jsonl" <<'EOF'
import json, sys
s = [json.loads(l)["step"] for l in open(sys.argv[1])]
sys.exit(0 if s == list(range(14)) else 1)
EOF

# ---- the world-size hint repeats the user's zgen command (its -c)
run 1 "$tmp/b/out/train" --data "$tmp/train.zgd" --steps 1 --quiet >/dev/null 2>"$tmp/ws.err"
check "a launch on another world size: the hint keeps the user's -c" grep -q -- "bin/zgen $tmp/b/spec.yaml -c $tmp/b/ds.json --world-size 1" "$tmp/ws.err"

# ---- bad data
printf '{"prompt": "a", "response": "b"}\n' >"$tmp/raw.jsonl"
run 1 "$tmp/a/out/train" --data "$tmp/raw.jsonl" --steps 1 --quiet >/dev/null 2>"$tmp/b1.err"
check "JSONL as --data: refused with the zgen data command" grep -q "this is text, not tokens.*bin/zgen data" "$tmp/b1.err"
"$PY" - "$tmp/train.zgd" "$tmp/big.zgd" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<i", b, 16, 50000)     # header word 4: the tokenizer's vocabulary
open(sys.argv[2], "wb").write(b)
EOF
run 1 "$tmp/a/out/train" --data "$tmp/big.zgd" --steps 1 --quiet >/dev/null 2>"$tmp/b2.err"
check "a document file of another vocabulary: refused naming both sizes" grep -q "tokenizer of 50000 tokens, but the model's vocabulary is 300" "$tmp/b2.err"
zt_end
