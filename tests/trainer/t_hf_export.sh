#!/usr/bin/env bash
# t_hf_export.sh — an exported Hugging Face folder is a whole model: a tiny LlamaForCausalLM folder
# with its tokenizer (tests/data/tiny_hf.py), the trainer generated from its config.json
# (zgen --spec-from-hf), 2 ranks, ZeRO-3, a few steps, --init-from DIR --export OUT; then with
# transformers (tests/trainer/hf_export_check.py): AutoTokenizer.from_pretrained(OUT) and
# LlamaForCausalLM.from_pretrained(OUT) load, config.json's and generation_config.json's
# bos/eos/pad ids are the tokenizer's, and generate() stops at the eos. Also:
#   - precedence: the data file's ids over --init-from's config.json (whose other generation
#     defaults are kept), an eos list holding the data's eos kept, --tokenizer DIR's files over
#     --init-from's (a stale tokenizer file of another tokenizer removed);
#   - zgen ckpt --export of the saved checkpoint: the same config.json, generation_config.json and
#     tokenizer files (the folder the checkpoint records, or --tokenizer DIR); a --resume run
#     without --init-from exports them too;
#   - refusals that leave nothing behind: a missing --tokenizer folder (trainer, before training,
#     and zgen ckpt), a tokenizer file that cannot be read (named);
#   - no source: the export still loads, with no ids and one note on stderr; a checkpoint saved
#     before the ids were recorded exports the same way.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi "hf export" transformers
zt_build bin/zgen build/libzrt.a
CHK=tests/trainer/hf_export_check.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export ZG_NVME_DIR="$tmp/nvme"
M=$tmp/m
TOKF="tokenizer.json tokenizer.model vocab.json vocab.txt merges.txt tokenizer_config.json special_tokens_map.json added_tokens.json chat_template.jinja chat_template.json"

if ! "$PY" tests/data/tiny_hf.py llama "$M" >"$tmp/m.log" 2>&1 ||
   ! "$PY" tests/data/tiny_hf.py tokenizer "$tmp/tk2" --no-template >>"$tmp/m.log" 2>&1; then
  tail -5 "$tmp/m.log"; fail "tiny_hf.py writes the llama folder and a second tokenizer"; zt_end
fi
if ! bin/zgen --spec-from-hf "$M" -o "$tmp/spec.yaml" >"$tmp/gen.log" 2>&1; then
  cat "$tmp/gen.log"; fail "zgen --spec-from-hf of the tiny llama"; zt_end
fi
sed -i 's/seq_len: .*/seq_len: 16/; s/world_size: .*/world_size: 2/' "$tmp/spec.yaml"
printf '\ndeepspeed: ds.json\n' >>"$tmp/spec.yaml"
cat >"$tmp/ds.json" <<'EOF'
{"train_batch_size": 4, "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}}
EOF
if ! bin/zgen "$tmp/spec.yaml" -o "$tmp/out" >>"$tmp/gen.log" 2>&1 || ! zt_make -s -C "$tmp/out" >"$tmp/make.log" 2>&1; then
  tail -20 "$tmp/gen.log" "$tmp/make.log"; fail "generate and build the trainer"; zt_end
fi
"$PY" tests/trainer/torch_gpt2.py tokens --V 300 --n 3000 --seed 5 --out "$tmp/tok.bin" >/dev/null
"$PY" $CHK zgd "$tmp/docs.zgd" --vocab 300 --bos 1 --eos 2 --pad 0 >/dev/null

train() { mpirun --oversubscribe -np 2 "$tmp/out/train" --threads 1 --quiet "$@"; }
# same_tok A B: the same tokenizer files, byte for byte, and no others
same_tok() {
  local f
  for f in $TOKF; do
    if [ -e "$1/$f" ] || [ -e "$2/$f" ]; then cmp -s "$1/$f" "$2/$f" || { echo "$f differs"; return 1; }; fi
  done
}
# loads NAME DIR [check flags]: transformers loads DIR and its ids are right
loads() {
  local name=$1 dir=$2; shift 2
  if "$PY" $CHK load "$dir" "$@" >"$tmp/$name.py.log" 2>&1; then ok "$name: $(tail -1 "$tmp/$name.py.log")"
  else tail -4 "$tmp/$name.py.log"; fail "$name"; fi
}
notes() { grep -c "carries no tokenizer" "$1"; }

# 1. --init-from DIR with a token file: ids and tokenizer from the folder
if train --data "$tmp/tok.bin" --steps 3 --init-from "$M" --save "$tmp/ck" --export "$tmp/e1" >"$tmp/e1.log" 2>&1; then
  loads "export of --init-from DIR" "$tmp/e1" --bos 1 --eos 2 --pad 0
  check "export of --init-from DIR: its tokenizer files, byte for byte" same_tok "$M" "$tmp/e1"
else
  tail -5 "$tmp/e1.log"; fail "train 3 steps --init-from DIR --save --export DIR"
fi

# 2. zgen ckpt --export of that checkpoint: what the trainer's export wrote
if bin/zgen ckpt "$tmp/ck" --export "$tmp/c1" >"$tmp/c1.log" 2>&1 &&
   cmp "$tmp/e1/config.json" "$tmp/c1/config.json" && cmp "$tmp/e1/generation_config.json" "$tmp/c1/generation_config.json" &&
   same_tok "$M" "$tmp/c1" && [ "$(notes "$tmp/c1.log")" = 0 ]; then
  ok "zgen ckpt --export: config.json, generation_config.json and the recorded tokenizer's files as the trainer's export"
else
  cat "$tmp/c1.log"; fail "zgen ckpt --export of the saved checkpoint"
fi
if bin/zgen ckpt "$tmp/ck" --export "$tmp/c2" --tokenizer "$tmp/tk2" >"$tmp/c2.log" 2>&1 &&
   same_tok "$tmp/tk2" "$tmp/c2" && ! cmp -s "$M/tokenizer_config.json" "$tmp/c2/tokenizer_config.json" &&
   cmp "$tmp/e1/config.json" "$tmp/c2/config.json"; then
  ok "zgen ckpt --export --tokenizer DIR: that folder's files over the recorded one's, the same ids"
else
  cat "$tmp/c2.log"; fail "zgen ckpt --export --tokenizer DIR"
fi

# 3. --tokenizer DIR over --init-from's; a stale tokenizer file of another tokenizer goes
mkdir -p "$tmp/e2" && echo stale >"$tmp/e2/tokenizer.model"
if train --data "$tmp/tok.bin" --steps 1 --init-from "$M" --tokenizer "$tmp/tk2" --export "$tmp/e2" >"$tmp/e2.log" 2>&1 &&
   same_tok "$tmp/tk2" "$tmp/e2" && [ ! -e "$tmp/e2/tokenizer.model" ]; then
  ok "--tokenizer DIR: its files, not --init-from's; a stale tokenizer.model removed"
  loads "export with --tokenizer DIR" "$tmp/e2" --bos 1 --eos 2 --pad 0
else
  tail -5 "$tmp/e2.log"; ls "$tmp/e2"; fail "--tokenizer DIR precedence"
fi

# 4. the data file's ids over --init-from's config.json; its generation defaults kept, ours win
cp -r "$M" "$tmp/m2"
"$PY" - "$tmp/m2" <<'EOF'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json")); c.update(bos_token_id=5, eos_token_id=7)
json.dump(c, open(d + "/config.json", "w"), indent=2)
json.dump({"_from_model_config": True, "bos_token_id": 5, "eos_token_id": 7, "pad_token_id": 0,
           "do_sample": True, "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.44.2"},
          open(d + "/generation_config.json", "w"), indent=2)
EOF
if train --data "$tmp/docs.zgd" --steps 2 --init-from "$tmp/m2" --export "$tmp/e3" >"$tmp/e3.log" 2>&1; then
  loads "data ids over --init-from's config.json (bos 5, eos 7); do_sample, temperature, top_p kept" "$tmp/e3" \
    --bos 1 --eos 2 --pad 0 --field do_sample=true --field temperature=0.6 --field top_p=0.9
else
  tail -5 "$tmp/e3.log"; fail "train a document file --init-from a folder with other ids"
fi
sed -i 's/"eos_token_id": 7/"eos_token_id": [7, 2]/' "$tmp/m2/config.json"
if train --data "$tmp/docs.zgd" --steps 1 --init-from "$tmp/m2" --export "$tmp/e4" >"$tmp/e4.log" 2>&1; then
  loads "an --init-from eos list holding the data's eos is kept" "$tmp/e4" --eos-list 7,2
else
  tail -5 "$tmp/e4.log"; fail "train --init-from a folder whose eos is a list"
fi

# 5. --resume without --init-from: the checkpoint's record
if train --data "$tmp/tok.bin" --steps 4 --resume "$tmp/ck" --export "$tmp/e5" >"$tmp/e5.log" 2>&1 &&
   cmp "$tmp/e1/config.json" "$tmp/e5/config.json" && cmp "$tmp/e1/generation_config.json" "$tmp/e5/generation_config.json" &&
   same_tok "$M" "$tmp/e5"; then
  ok "--resume without --init-from: ids, generation_config.json and tokenizer from the checkpoint's record"
else
  tail -5 "$tmp/e5.log"; fail "--resume then --export"
fi

# 6. refusals, nothing left behind
train --data "$tmp/tok.bin" --steps 2 --init-from "$M" --tokenizer "$tmp/nope" --save "$tmp/ck6" --export "$tmp/e6" \
  --log "$tmp/e6.jsonl" >"$tmp/e6.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "tokenizer folder $tmp/nope: No such file" "$tmp/e6.log" && [ ! -e "$tmp/e6.jsonl" ] &&
   [ ! -e "$tmp/e6" ] && [ ! -e "$tmp/ck6" ]; then
  ok "train --tokenizer MISSING: refused before training, naming it; no export, no checkpoint"
else
  cat "$tmp/e6.log"; ls -d "$tmp/e6" "$tmp/ck6" 2>/dev/null; fail "train --tokenizer MISSING (rc $rc)"
fi
bin/zgen ckpt "$tmp/ck" --export "$tmp/c6" --tokenizer "$tmp/nope" >"$tmp/c6.log" 2>&1
rc=$?
check "zgen ckpt --export --tokenizer MISSING: exit 1 naming it, no folder" \
  bash -c "[ $rc = 1 ] && grep -q 'tokenizer folder $tmp/nope: No such file' '$tmp/c6.log' && [ ! -e '$tmp/c6' ]"
cp -r "$tmp/tk2" "$tmp/tk3" && rm "$tmp/tk3/tokenizer.json" && ln -s "$tmp/gone.json" "$tmp/tk3/tokenizer.json"
bin/zgen ckpt "$tmp/ck" --export "$tmp/c7" --tokenizer "$tmp/tk3" >"$tmp/c7.log" 2>&1
rc=$?
check "a tokenizer file that cannot be read: named, no folder" \
  bash -c "[ $rc = 1 ] && grep -q '$tmp/tk3/tokenizer.json: cannot read' '$tmp/c7.log' && [ ! -e '$tmp/c7' ]"

# 7. no source at all: --init-from a bare .safetensors file
if train --data "$tmp/tok.bin" --steps 1 --init-from "$M/model.safetensors" --export "$tmp/e8" >"$tmp/e8.log" 2>&1 &&
   [ "$(notes "$tmp/e8.log")" = 1 ] && grep -q -- "--tokenizer DIR" "$tmp/e8.log" &&
   "$PY" $CHK bare "$tmp/e8" >"$tmp/e8.py.log" 2>&1; then
  ok "no tokenizer anywhere: the export loads, no ids, one note naming --tokenizer DIR"
else
  cat "$tmp/e8.log"; tail -3 "$tmp/e8.py.log"; fail "export without any tokenizer source"
fi

# 8. a checkpoint saved before the ids were recorded (its meta without hf_extra)
cp -r "$tmp/ck" "$tmp/ck_old"
"$PY" - "$tmp/ck_old" <<'EOF'
import json, os, sys
d = sys.argv[1]
step = [s for s in os.listdir(d) if s.startswith("step_")][0]
p = os.path.join(d, step, "manifest.json")
m = json.load(open(p)); del m["meta"]["hf_extra"]
json.dump(m, open(p, "w"), indent=2)
EOF
if bin/zgen ckpt "$tmp/ck_old" --info >"$tmp/c8i.log" 2>&1 && bin/zgen ckpt "$tmp/ck_old" --export "$tmp/c8" >"$tmp/c8.log" 2>&1 &&
   [ "$(notes "$tmp/c8.log")" = 1 ] && "$PY" $CHK bare "$tmp/c8" >"$tmp/c8.py.log" 2>&1 &&
   grep -q "token ids: bos -, eos -, pad -" "$tmp/c8i.log"; then
  ok "a checkpoint without the record: --info and --export work, ids omitted, one note"
else
  cat "$tmp/c8i.log" "$tmp/c8.log"; tail -3 "$tmp/c8.py.log" 2>/dev/null; fail "an old checkpoint's export"
fi
zt_end
