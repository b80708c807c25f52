#!/usr/bin/env bash
# t_zgen_data.sh — `bin/zgen data` (py/zgen_data.py) and the row layout reference (py/zgd.py)
# against docs/DATA.md, with a tiny tokenizer made here (tests/data/tiny_hf.py; no hub):
#   - prompt/response, messages and text JSONL, pack and pad, with --seq-len and --max-len: the
#     file parsed by tests/data/zgd_check.py's own reader equals, record by record, tokens and
#     mask computed there with transformers directly (messages: transformers' assistant mask of
#     the template with {% generation %} tags), header fields (16-bit ids for this vocabulary);
#     the summary's document and row counts equal the checker's own counts; a file with one mask
#     byte flipped is caught (the check can fail);
#   - a mixed file: records dropped (no assistant turn; a prompt longer than --max-len), counted;
#   - a vocabulary above 65536 ids gives 32-bit tokens;
#   - the row layout helper against a hand-worked example (documents of 2 tokens, one longer than
#     a row, one exactly a row, pack, pad, a given order) and the shuffle recipe;
#   - every bad input names file:line (a folder or file where there is no line), exits 1 and
#     leaves nothing in the output folder; bin/zgen's interpreter errors.
. "$(dirname "$0")/../lib.sh"
"$PY" -c "import transformers, tokenizers" 2>/dev/null ||
  zt_skip_all "zgen data" "needs $PY with transformers (bash scripts/install-deps.sh)"
zt_build bin/zgen
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
H=tests/data/tiny_hf.py CK=tests/data/zgd_check.py
mkdir -p "$tmp/o" "$tmp/bad" "$tmp/in"
# tok_nt: the same tokenizer without its chat template
if ! { "$PY" $H tokenizer "$tmp/tok" && "$PY" $H jsonl "$tmp/d" --n 120 --seed 3 &&
       cp -r "$tmp/tok" "$tmp/tok_nt" && "$PY" -c "import json, sys; c = json.load(open(sys.argv[1]));
del c['chat_template']; json.dump(c, open(sys.argv[1], 'w'))" "$tmp/tok_nt/tokenizer_config.json"
     } >"$tmp/setup.log" 2>&1; then
  cat "$tmp/setup.log"; fail "tiny_hf.py makes the tokenizer and the data"; zt_end
fi

# make NAME IN.jsonl pack|pad [--seq-len N] [--max-len N]: runs zgen data, and lists the file for
# the contract check below (one checker run for all: transformers loads once)
: >"$tmp/list"
make_zgd() {
  local name=$1 in=$2 layout=$3 f=${1//[^A-Za-z0-9]/_} seq=0 max=0
  shift 3
  [ "${1:-}" = --seq-len ] && seq=$2
  [ "${3:-}" = --max-len ] && max=$4
  [ "${1:-}" = --max-len ] && max=$2
  if ! bin/zgen data "$in" -o "$tmp/o/$f.zgd" --tokenizer "${TOK:-$tmp/tok}" "--$layout" "$@" \
       >"$tmp/$f.out" 2>"$tmp/$f.err"; then
    cat "$tmp/$f.err"; fail "$name: zgen data exits 0"; return
  fi
  if [ -s "$tmp/$f.err" ]; then cat "$tmp/$f.err"; fail "$name: nothing on stderr"; return; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${TOK:-$tmp/tok}" "$in" "$tmp/o/$f.zgd" "$layout" \
    "$seq" "$max" >>"$tmp/list"
}

make_zgd "prompt/response pack" "$tmp/d/pr.jsonl" pack --seq-len 64
make_zgd "prompt/response pad" "$tmp/d/pr.jsonl" pad --seq-len 64
make_zgd "messages pack" "$tmp/d/chat.jsonl" pack --seq-len 48
make_zgd "messages pad, --max-len" "$tmp/d/chat.jsonl" pad --seq-len 48 --max-len 40
make_zgd "text pack" "$tmp/d/text.jsonl" pack
make_zgd "text pad, short rows" "$tmp/d/text.jsonl" pad --seq-len 8
grep -q "truncated  [1-9]" "$tmp/messages_pad____max_len.out" &&
  grep -qE "longer than a row, split into [1-9]" "$tmp/text_pad__short_rows.out"
check "summary: truncated and split documents counted" test $? -eq 0


# mixed kinds; dropped: a conversation without an assistant turn, a prompt cut by --max-len
{
  echo '{"prompt": "red or blue?", "response": "blue", "source": "x"}'
  echo '{"prompt": "", "response": "the sun"}'
  echo; echo '{"text": "a cat sees a dog"}'
  echo '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}'
  echo '{"messages": [{"role": "user", "content": "red or blue"}, {"role": "assistant", "content": "blue"}, {"role": "user", "content": "why"}, {"role": "assistant", "content": "the sun is blue and the sky"}]}'
  echo '{"messages": [{"role": "user", "content": "hello there"}], "id": 7}'
  echo '{"prompt": "'"$(printf 'one two three four five six seven eight %.0s' 1 2 3 4 5)"'", "response": "yes"}'
  echo '{"text": ""}'
} >"$tmp/in/mixed.jsonl"
make_zgd "mixed kinds, --max-len 50" "$tmp/in/mixed.jsonl" pack --max-len 50
check "mixed: 2 records dropped (no assistant turn; a prompt longer than --max-len)" \
  grep -qE "dropped    2 " "$tmp/mixed_kinds____max_len_50.out"
check "mixed: 1 blank line skipped" grep -qE "1 blank lines skipped" "$tmp/mixed_kinds____max_len_50.out"

# a vocabulary beyond 16 bits
"$PY" - "$tmp/tok32" >"$tmp/tok32.log" 2>&1 <<'EOF'
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
for i in range(70000):
    vocab["w%d" % i] = len(vocab)
t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=t, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                        unk_token="<unk>").save_pretrained(sys.argv[1])
EOF
printf '{"text": "w1 w69999 w65532 w65533 w3"}\n{"prompt": "w70000 w2", "response": "w65535 w65536"}\n' >"$tmp/in/w.jsonl"
TOK="$tmp/tok32" make_zgd "70004 ids: 32-bit tokens" "$tmp/in/w.jsonl" pack

# the check itself can fail: one mask byte flipped
cp "$tmp/o/prompt_response_pack.zgd" "$tmp/flip.zgd"
"$PY" -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[-1] ^= 1; open(sys.argv[1], 'wb').write(b)" "$tmp/flip.zgd"
printf 'flipped\t%s\t%s\t%s\tpack\t64\t0\n' "$tmp/tok" "$tmp/d/pr.jsonl" "$tmp/flip.zgd" >>"$tmp/list"

# the contract check: tokens, mask, header; the summary's documents and rows equal its counts
"$PY" $CK contract "$tmp/list" >"$tmp/check.log" 2>&1 || { cat "$tmp/check.log"; fail "zgd_check.py contract runs"; }
while IFS=$'\t' read -r st name res; do
  case $st in ok|fail) ;; *) continue;; esac
  f=${name//[^A-Za-z0-9]/_}
  if [ "$name" = flipped ]; then
    check "the contract check catches a flipped mask byte" test "$st" = fail -a -z "${res##*MISMATCH: document*mask*}"
    continue
  fi
  [ "$st" = ok ] || { fail "$name: $res"; continue; }
  docs=$(sed -nE 's/^  documents +([0-9]+),.*/\1/p' "$tmp/$f.out")
  [ "$docs" = "${res%% *}" ] || { cat "$tmp/$f.out"; fail "$name: summary documents $docs"; continue; }
  if [[ "$res" == *rows* ]]; then
    rows=$(sed -nE 's/^  rows +([0-9]+) of.*/\1/p' "$tmp/$f.out")
    [ "$rows" = "${res##*rows }" ] || { cat "$tmp/$f.out"; fail "$name: summary rows $rows, expected ${res##*rows }"; continue; }
  fi
  ok "$name: $res"
done <"$tmp/check.log"
check "every file checked" test "$(grep -c '^ok\|^fail' "$tmp/check.log")" -eq "$(wc -l <"$tmp/list")"

# a template with a generation prompt (the assistant header, as LLaMA 3's): the header is not trained
cp -r "$tmp/tok" "$tmp/tok_gp"
"$PY" - "$tmp/tok_gp/tokenizer_config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["chat_template"] = ("{{ bos_token }}{% for m in messages %}{{ '[' + m['role'] + '] ' + m['content'] + eos_token }}"
                      "{% endfor %}{% if add_generation_prompt %}{{ '[assistant]' }}{% endif %}")
json.dump(c, open(sys.argv[1], "w"))
EOF
head -40 "$tmp/d/chat.jsonl" >"$tmp/in/gp.jsonl"
if bin/zgen data "$tmp/in/gp.jsonl" -o "$tmp/o/gp.zgd" --tokenizer "$tmp/tok_gp" --quiet 2>"$tmp/gp.err"; then
  res=$("$PY" $CK genprompt "$tmp/tok_gp" "$tmp/in/gp.jsonl" "$tmp/o/gp.zgd" 2>&1)
  check "generation prompt: $res" test $? -eq 0
else
  cat "$tmp/gp.err"; fail "generation prompt: zgen data exits 0"
fi

res=$("$PY" $CK rows 2>&1); check "row layout: $res" test $? -eq 0
res=$("$PY" $CK shuffle 2>&1); check "shuffle: $res" test $? -eq 0

# bad NAME 'PATTERN' zgen-data-args...: exit 1, PATTERN (grep -E) on stderr, nothing left in $tmp/bad
bad() {
  local name=$1 pat=$2 rc
  shift 2
  bin/zgen data "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"; rc=$?
  if [ $rc -ne 1 ]; then cat "$tmp/bad.err"; fail "$name: exit $rc, expected 1"
  elif ! grep -qE -- "$pat" "$tmp/bad.err"; then cat "$tmp/bad.err"; fail "$name: message /$pat/"
  elif [ -n "$(ls -A "$tmp/bad")" ]; then ls -A "$tmp/bad"; fail "$name: the output folder is not empty"
  else ok "$name: $(head -1 "$tmp/bad.err" | cut -c1-110)"; fi
  rm -rf "$tmp/bad"; mkdir "$tmp/bad"
}
O=(-o "$tmp/bad/out.zgd")
B="$tmp/in/many.jsonl"
cat >"$B" <<'EOF'
{"text": "fine"}
{"text": "broken",}

[1, 2]
{"foo": 1}
{"prompt": "q", "response": ""}
{"prompt": "q"}
{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]}
{"messages": [{"role": "bot", "content": "hi"}]}
EOF
bad "invalid JSON, non-object, no keys, empty response, no response, empty turn, unknown role" \
  "^$B:2: error: invalid JSON" "$B" "${O[@]}" --tokenizer "$tmp/tok"
n=0
for want in "2: error: invalid JSON" "4: error: the record is an array" "5: error: the record has no" \
            "6: error: empty \"response\"" "7: error: \"prompt\" without \"response\"" \
            "8: error: messages\[1\]: empty assistant turn" "9: error: messages\[0\]: unknown role"; do
  grep -q -- "^$B:$want" "$tmp/bad.err" && n=$((n+1))
done
check "every bad record reported at its line in one run (7 of 7: $n)" test $n -eq 7

: >"$tmp/in/empty.jsonl"; printf '\n  \n' >"$tmp/in/blank.jsonl"
bad "empty input" "^$tmp/in/empty.jsonl:1: error: no records" "$tmp/in/empty.jsonl" "${O[@]}" --tokenizer "$tmp/tok"
bad "blank lines only" "^$tmp/in/blank.jsonl:1: error: no records" "$tmp/in/blank.jsonl" "${O[@]}" --tokenizer "$tmp/tok"
echo '{"messages": [{"role": "user", "content": "hi"}]}' >"$tmp/in/noasst.jsonl"
bad "every record dropped" "^$tmp/in/noasst.jsonl:1: error: all 1 records were dropped" \
  "$tmp/in/noasst.jsonl" "${O[@]}" --tokenizer "$tmp/tok"
bad "messages without a chat template" "^$tmp/d/chat.jsonl:1: error: .*no chat_template" \
  "$tmp/d/chat.jsonl" "${O[@]}" --tokenizer "$tmp/tok_nt"
cp -r "$tmp/tok" "$tmp/tok_ns"
"$PY" - "$tmp/tok_ns/tokenizer_config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
# the whole conversation's end is written once, after the last turn: not prefix-stable
c["chat_template"] = ("{{ bos_token }}{% for m in messages %}{{ m['role'] + ': ' + m['content'] + ' ' }}"
                      "{% endfor %}{{ 'END' + eos_token }}")
json.dump(c, open(sys.argv[1], "w"))
EOF
bad "a template that is not prefix-stable" "^$tmp/d/chat.jsonl:1: error: messages\[1\]: the chat template is not prefix-stable" \
  "$tmp/d/chat.jsonl" "${O[@]}" --tokenizer "$tmp/tok_ns"
bad "no tokenizer folder" "^$tmp/none: error: no such folder" "$tmp/d/pr.jsonl" "${O[@]}" --tokenizer "$tmp/none"
mkdir -p "$tmp/tok_empty"
bad "a folder without a tokenizer" "^$tmp/tok_empty: error: no tokenizer in this folder" \
  "$tmp/d/pr.jsonl" "${O[@]}" --tokenizer "$tmp/tok_empty"
mkdir -p "$tmp/tok_broken"; echo '{"version": ' >"$tmp/tok_broken/tokenizer.json"; cp "$tmp/tok/tokenizer_config.json" "$tmp/tok_broken/"
bad "an unreadable tokenizer" "^$tmp/tok_broken: error: cannot load the tokenizer" \
  "$tmp/d/pr.jsonl" "${O[@]}" --tokenizer "$tmp/tok_broken"
bad "no input file" "^$tmp/in/nope.jsonl: error: cannot read" "$tmp/in/nope.jsonl" "${O[@]}" --tokenizer "$tmp/tok"
bad "output folder missing" "^$tmp/bad/no/out.zgd: error: cannot write there" "$tmp/d/pr.jsonl" \
  -o "$tmp/bad/no/out.zgd" --tokenizer "$tmp/tok"

# successful runs left no temporary files either
check "no temporary files beside the outputs" test -z "$(ls -A "$tmp/o" | grep -v '\.zgd$')"

# bin/zgen's side: the interpreter it runs
ZGEN_PYTHON=$tmp/nopython bin/zgen data x >/dev/null 2>"$tmp/zp.err"; rc=$?
check "ZGEN_PYTHON not executable: exit 1, named" \
  bash -c "[ $rc -eq 1 ] && grep -q 'ZGEN_PYTHON=$tmp/nopython' '$tmp/zp.err'"
mkdir -p "$tmp/root/bin" "$tmp/root/py"; cp bin/zgen "$tmp/root/bin/"; : >"$tmp/root/py/zgen_data.py"
env -u ZGEN_PYTHON "$tmp/root/bin/zgen" data x >/dev/null 2>"$tmp/zr.err"; rc=$?
check "no build/py: exit 1, says to run scripts/install-deps.sh" \
  bash -c "[ $rc -eq 1 ] && grep -q 'scripts/install-deps.sh' '$tmp/zr.err'"
bin/zgen data --help >"$tmp/help.out" 2>&1
check "zgen data --help" grep -q -- "--tokenizer DIR" "$tmp/help.out"
zt_end
