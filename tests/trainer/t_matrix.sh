#!/usr/bin/env bash
# t_matrix.sh — the equivalence matrix of the emitted trainer: ZeRO stages 0-3 x optimizer offload
# none/cpu/nvme x parameter offload none/cpu/nvme (stage 3) x world sizes 1, 2, 3, 4, three steps
# each on a tiny GPT-2 (global batch 12 whatever the world size, accumulation 2 or 3 micro-steps),
# and a column of gradients on NVMe (stage 3, optimizer on NVMe) against gradients in memory.
#   - for each (stage, world size), every offload choice gives bit-identical losses and gradient
#     norms (the logged %.9g values of fp32 sums) and exported weights (cmp of the safetensors);
#   - every run's losses are within 1e-5 relative of stage 0 on 1 rank, and its exported weights
#     within 1e-4 (relative norm per tensor): the reduction order differs between stages and world
#     sizes, and Adam's m/sqrt(v) turns a rounding-level change of a near-zero gradient into a
#     change of up to lr in the update, so weights drift further apart than losses.
# Every trainer is a debug build (make DEBUG=1, and ZR_DEBUG_MEM=1): arenas get guard bytes that
# are checked at exit, memory starts as NaN and released gather slots are poisoned with NaN, so a
# schedule that reads a slot after its RELEASE, or a buffer before writing it, shows up as a NaN
# loss or a failed run here.
# Combinations zgen rejects (DeepSpeed allows NVMe optimizer offload only at stage 3, parameter
# offload only at stage 3) are not run. Set ZT_MATRIX_WS="1 2" to run fewer world sizes.
. "$(dirname "$0")/../lib.sh"
export ZR_DEBUG_MEM=1
zt_need_mpi "matrix" numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null
WS_LIST=${ZT_MATRIX_WS:-1 2 3 4}
GPT2='{arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}'

# global batch 12 for every ws; ws 4 runs one micro-step (stage 3 then reduce-scatters straight
# into the gradient shard), the others accumulate 2
gas_for() { case $1 in 1|2|3) echo 2 ;; 4) echo 1 ;; esac; }

# run STAGE WS OPT PARAM [PRECISION] -> $tmp/r/<tag>/{losses.txt, w.safetensors}; returns 2 when
# zgen rejects the combination. STEPS (default 3) may be set for one call.
run() {
  local stage=$1 ws=$2 opt=$3 par=$4 prec=${5:-fp32}
  local tag="s$1_w$2_o$3_p$4_${prec}_n${STEPS:-3}"
  local d="$tmp/r/$tag" mp=""
  [ "$prec" != fp32 ] && mp="\"$prec\": {\"enabled\": true},"
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: mx
model: ${MODEL:-$GPT2}
train: {seq_len: 16, world_size: $ws, seed: 7}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 12, "gradient_accumulation_steps": $(gas_for "$ws"), "gradient_clipping": 1.0, $mp
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 2500, "sub_group_size": 3000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 3000,
   "offload_optimizer": {"device": "$opt", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "$par", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOF
  if ! bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1; then
    grep -q "error" "$d/gen.log" && return 2
    cat "$d/gen.log" >&2; return 1
  fi
  # the kernels' objects do not depend on the plan: build them once, reuse them
  [ -d "$tmp/kobj" ] && cp "$tmp"/kobj/*_host*.o "$d/out/"
  if ! zt_make -s -j2 -C "$d/out" DEBUG=1 >"$d/make.log" 2>&1; then cat "$d/make.log" >&2; echo "$tag: build failed" >&2; return 1; fi
  [ -d "$tmp/kobj" ] || { mkdir -p "$tmp/kobj"; cp "$d"/out/*_host*.o "$tmp/kobj/"; }
  if ! ZG_NVME_DIR="$tmp/nvme/$tag" mpirun --oversubscribe -np "$ws" "$d/out/train" --data "$tmp/corpus.bin" \
       --steps "${STEPS:-3}" --log "$d/log.jsonl" --export "$d/w.safetensors" --threads 1 --quiet >"$d/run.log" 2>&1; then
    tail -5 "$d/run.log" >&2; echo "$tag: run failed" >&2; return 1
  fi
  if [ -s "$d/log.jsonl" ]; then
    "$PY" -c 'import json,sys; [print(repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' \
        "$d/log.jsonl" >"$d/losses.txt"
  fi
  rm -rf "$d/out"
  echo "$tag"
}

# near REF TAG: losses and weights within 1e-5 relative
near() {
  "$PY" - "$tmp/r/$1" "$tmp/r/$2" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, "tests/trainer")
import safetensors_io
a, b = sys.argv[1:3]
la = [float(l.split()[0]) for l in open(a + "/losses.txt")]
lb = [float(l.split()[0]) for l in open(b + "/losses.txt")]
if len(la) != len(lb) or not la: sys.exit("loss count differs")
wl = max(abs(x - y) / abs(x) for x, y in zip(la, lb))
wa, _ = safetensors_io.load(a + "/w.safetensors"); wb, _ = safetensors_io.load(b + "/w.safetensors")
ww, wn = max((np.linalg.norm(wa[n].astype(np.float64) - wb[n]) / max(np.linalg.norm(wa[n]), 1e-30), n)
             for n in wa)
print(f"losses rel {wl:.1e}, weights rel {ww:.1e} ({wn})")
sys.exit(0 if wl <= 1e-5 and ww <= 1e-4 and all(np.isfinite(lb)) else 1)
EOF
}

# near16 REF TAG: a 16-bit run's losses within 1e-2 relative of the fp32 reference
near16() {
  "$PY" - "$tmp/r/$1/losses.txt" "$tmp/r/$2/losses.txt" <<'EOF'
import sys
a = [float(l.split()[0]) for l in open(sys.argv[1])]
b = [float(l.split()[0]) for l in open(sys.argv[2])]
w = max(abs(x - y) / x for x, y in zip(a, b))
print(f"losses rel {w:.1e}")
sys.exit(0 if len(a) == len(b) and w < 1e-2 else 1)
EOF
}

combos() {   # stage -> "opt:param" choices
  case $1 in
    0|1|2) echo "none:none cpu:none nvme:none" ;;
    3) echo "none:none cpu:none nvme:none none:cpu cpu:cpu nvme:cpu none:nvme cpu:nvme nvme:nvme" ;;
  esac
}

ref=$(run 0 1 none none) || { fail "reference run (stage 0, 1 rank)"; echo "$P passed, $F failed, $S skipped"; exit 1; }
for ws in $WS_LIST; do
  for stage in 0 1 2 3; do
    first=""; n=0; same=1; why=""
    for c in $(combos $stage); do
      opt=${c%%:*}; par=${c##*:}
      tag=$(run $stage "$ws" "$opt" "$par"); rc=$?
      [ $rc -eq 2 ] && continue
      [ $rc -ne 0 ] && { same=0; why="a run failed"; continue; }
      n=$((n + 1))
      if [ -z "$first" ]; then first=$tag; else
        if ! cmp -s "$tmp/r/$first/losses.txt" "$tmp/r/$tag/losses.txt" ||
           ! cmp -s "$tmp/r/$first/w.safetensors" "$tmp/r/$tag/w.safetensors"; then
          same=0; why="$tag differs from $first"
        fi
      fi
      if msg=$(near "$ref" "$tag"); then :; else same=0; why="$tag vs $ref: $msg"; fi
      last_msg=$msg
    done
    if [ $n -eq 0 ]; then fail "stage $stage ws $ws" "no configuration ran"; continue; fi
    if [ $same -eq 1 ]; then
      ok "stage $stage ws $ws: $n offload choices bit-identical; vs stage 0 ws 1: $last_msg"
    else
      fail "stage $stage ws $ws" "$why"
    fi
  done
done
# the random init is the same for every world size and stage (counter-based, generated per shard)
a=$(STEPS=0 run 0 1 none none) && b=$(STEPS=0 run 3 3 nvme nvme) && c=$(STEPS=0 run 2 4 cpu none)
if [ -n "${c:-}" ] && cmp -s "$tmp/r/$a/w.safetensors" "$tmp/r/$b/w.safetensors" &&
   cmp -s "$tmp/r/$a/w.safetensors" "$tmp/r/$c/w.safetensors"; then
  ok "initial weights bit-identical: stage 0 ws 1, stage 3 ws 3 (NVMe), stage 2 ws 4 (CPU)"
else
  fail "initial weights bit-identical across stages and world sizes"
fi

# Gradients on NVMe against gradients in memory, with accumulation: stage 3 with the optimizer on
# NVMe puts grad32 in the swap file (plan.json partition.grad_nvme; the hand-over goes through
# sub-group windows in opt_buf). aio block_size 4 KiB lets sub_group_size 3000 stand (4096-element
# sub-groups): 6 sub-groups over 4 buffers at ws 1, so windows are evicted and read back. With the
# optimizer on the CPU or the device the shard stays in memory. Losses, gradient norms and exported
# weights must be bit-identical: fp32, bf16 and fp16, gas 2 and 3, on 1, 2 and 3 ranks.
# grun WS GAS PREC OPT -> $tmp/g/<tag>/{losses.txt, w.safetensors, grad_nvme}
grun() {
  local ws=$1 gas=$2 prec=$3 opt=$4 mp="" par=nvme
  local tag="w${ws}_g${gas}_${prec}_o${opt}" d
  d="$tmp/g/$tag"
  [ "$opt" = none ] && par=none
  [ "$prec" != fp32 ] && mp="\"$prec\": {\"enabled\": true},"
  mkdir -p "$d"
  printf 'name: mx\nmodel: {arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}\ntrain: {seq_len: 16, world_size: %s, seed: 7}\ndeepspeed: ds.json\n' "$ws" >"$d/spec.yaml"
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 12, "gradient_accumulation_steps": $gas, "gradient_clipping": 1.0, $mp
 "aio": {"block_size": 4096},
 "zero_optimization": {"stage": 3, "reduce_bucket_size": 2500, "sub_group_size": 3000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 3000,
   "offload_optimizer": {"device": "$opt", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "$par", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log" >&2; return 1; }
  "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["partition"]["grad_nvme"])' "$d/out/plan.json" >"$d/grad_nvme"
  [ -d "$tmp/kobj" ] && cp "$tmp"/kobj/zk_host*.o "$d/out/"
  zt_make -s -j2 -C "$d/out" DEBUG=1 >"$d/make.log" 2>&1 || { cat "$d/make.log" >&2; return 1; }
  ZG_NVME_DIR="$tmp/nvme/g_$tag" mpirun --oversubscribe -np "$ws" "$d/out/train" --data "$tmp/corpus.bin" \
      --steps 3 --log "$d/log.jsonl" --export "$d/w.safetensors" --threads 1 --quiet >"$d/run.log" 2>&1 ||
    { tail -5 "$d/run.log" >&2; return 1; }
  "$PY" -c 'import json,sys; [print(repr(json.loads(l)["loss"]), repr(json.loads(l)["grad_norm"])) for l in open(sys.argv[1])]' \
      "$d/log.jsonl" >"$d/losses.txt"
  rm -rf "$d/out"
  echo "$tag"
}
for case in "1 2 fp32" "1 3 bf16" "2 3 fp32" "2 2 bf16" "3 2 fp16"; do
  set -- $case
  a=$(grun "$1" "$2" "$3" nvme) && b=$(grun "$1" "$2" "$3" cpu) && c=$(grun "$1" "$2" "$3" none) || {
    fail "gradients on NVMe vs in memory, ws $1 gas $2 $3" "a run failed"; continue; }
  g="$tmp/g"
  if [ "$(cat "$g/$a/grad_nvme")" != True ] || [ "$(cat "$g/$b/grad_nvme")" != False ] ||
     [ "$(cat "$g/$c/grad_nvme")" != False ]; then
    fail "gradients on NVMe vs in memory, ws $1 gas $2 $3" "plan.json grad_nvme not true / false / false"
  elif cmp -s "$g/$a/losses.txt" "$g/$b/losses.txt" && cmp -s "$g/$a/losses.txt" "$g/$c/losses.txt" &&
       cmp -s "$g/$a/w.safetensors" "$g/$b/w.safetensors" && cmp -s "$g/$a/w.safetensors" "$g/$c/w.safetensors"; then
    ok "gradients on NVMe = in pinned memory = on the device, stage 3 ws $1 gas $2 $3: losses, norms, weights bit-identical"
  else
    fail "gradients on NVMe vs in memory, ws $1 gas $2 $3" "$a differs from $b or $c"
  fi
done

# 16-bit working precision on 2 ranks: offload still never changes a bit; losses stay near fp32's
for prec in bf16 fp16; do
  for stage in 0 1 2 3; do
    first=""; n=0; same=1; why=""
    for c in $(combos $stage); do
      tag=$(run $stage 2 "${c%%:*}" "${c##*:}" $prec); rc=$?
      [ $rc -eq 2 ] && continue
      [ $rc -ne 0 ] && { same=0; why="a run failed"; continue; }
      n=$((n + 1))
      if [ -z "$first" ]; then first=$tag
      elif ! cmp -s "$tmp/r/$first/losses.txt" "$tmp/r/$tag/losses.txt" ||
           ! cmp -s "$tmp/r/$first/w.safetensors" "$tmp/r/$tag/w.safetensors"; then
        same=0; why="$tag differs from $first"
      fi
    done
    if [ $same -eq 1 ] && [ $n -ge 1 ] && msg=$(near16 "$ref" "$first"); then
      ok "$prec stage $stage ws 2: $n offload choices bit-identical; vs fp32 stage 0 ws 1: $msg"
    else
      fail "$prec stage $stage ws 2" "$why${msg:+; $msg}"
    fi
  done
done

# ---- llama: a grouped-query llama (4 query heads on 2 key/value heads, untied head) through the
# same trainer: at ZeRO-3 and ZeRO-2 on 2 ranks every offload choice gives the same bits (fp32 and
# bf16), within the tolerances of ZeRO-0 on 1 rank; the random init is the same at every stage and
# world size. Its runs live under $tmp/llama (run's tags do not name the model).
MODEL='{arch: llama, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 4, n_kv_heads: 2, d_ff: 72}'
tmp_all=$tmp; tmp=$tmp_all/llama; mkdir -p "$tmp"; ln -s "$tmp_all/corpus.bin" "$tmp/corpus.bin"
# llama_rows PRECISION STAGE "OPT:PARAM ..."
llama_rows() {
  local prec=$1 stage=$2 first="" n=0 same=1 why="" msg=""
  for c in $3; do
    tag=$(run "$stage" 2 "${c%%:*}" "${c##*:}" "$prec") || { same=0; why="a run failed"; continue; }
    n=$((n + 1))
    if [ -z "$first" ]; then first=$tag
    elif ! cmp -s "$tmp/r/$first/losses.txt" "$tmp/r/$tag/losses.txt" ||
         ! cmp -s "$tmp/r/$first/w.safetensors" "$tmp/r/$tag/w.safetensors"; then
      same=0; why="$tag differs from $first"
    fi
  done
  if [ "$prec" = fp32 ]; then msg=$(near "$lref" "$first") || { same=0; why="$first vs $lref: $msg"; }
  else msg=$(near16 "$lref" "$first") || { same=0; why="$first vs $lref: $msg"; }; fi
  if [ $same -eq 1 ] && [ $n -ge 2 ]; then
    ok "llama $prec stage $stage ws 2: $n offload choices bit-identical; vs stage 0 ws 1: $msg"
  else
    fail "llama $prec stage $stage ws 2" "$why"
  fi
}
if lref=$(run 0 1 none none); then
  llama_rows fp32 3 "none:none cpu:none nvme:none cpu:cpu nvme:nvme"
  llama_rows fp32 2 "none:none cpu:none"
  llama_rows bf16 3 "none:none nvme:nvme"
  if a=$(STEPS=0 run 0 1 none none) && b=$(STEPS=0 run 3 2 nvme nvme) &&
     cmp -s "$tmp/r/$a/w.safetensors" "$tmp/r/$b/w.safetensors"; then
    ok "llama initial weights bit-identical: stage 0 ws 1, stage 3 ws 2 (NVMe)"
  else
    fail "llama initial weights bit-identical across stages and world sizes"
  fi
else
  fail "llama reference run (stage 0, 1 rank)"
fi
tmp=$tmp_all
zt_end
