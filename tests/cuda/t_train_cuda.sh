#!/usr/bin/env bash
# t_train_cuda.sh — the CUDA trainer (templates/cuda_trainer/, docs/CUDA_TRAINER.md):
#   - `make cuda` builds train-cuda (driver API, cuBLAS, NCCL) for specs/gpt2-124m.yaml and specs/tiny.yaml (a bf16
#     plan), and the linked binary carries a cubin and a PTX for sm_80 and sm_90 of
#     every kernel the templates declare (blobs_in_binary.py reads the binary's bytes);
#   - without a GPU, `train-cuda --check` says so and exits non-zero;
#   - the emulated build (`make cuda-emu`: the same orchestration on the GPU stand-in; in five of
#     the runs device memory is guarded, so a host read of a device address crashes) trains a small GPT-2 to the host
#     trainer's losses and gradient norms within 1e-5 relative (fp32 plans), and for 16-bit plans,
#     whose device activations and matmuls are 16-bit on tensor cores, within the unit roundoff u
#     (2^-8 bf16, 2^-11 fp16): losses within u, gradient norms within 12 u, and the loss must fall
#     (docs/CUDA_TRAINER.md derives the bounds) at ZeRO 0, 2 and 3 (ZeRO-1, the
#     ZeRO-0 executor path with a sharded optimizer, was dropped to stay under 3 minutes), with optimizer offload
#     to CPU and NVMe and parameter offload to CPU and NVMe, on 1 and 2 ranks, 3 steps each, in
#     fp32, bf16 (stages 0, 2, 3) and fp16 (stages 0 and 3, fp16 activations, with a loss scale
#     that overflows at the first step: the same steps are skipped and the scale follows the host's);
#     llama in bf16, fp16 (tied) and fp32 (ZeRO-3, NVMe optimizer, CPU parameters: the CUDA-core
#     grouped-query attention, attention_gqa.cu, held to the fp32 bound); qwen2 (llama's adapter with
#     the q, k, v bias gemms) in bf16 (ZeRO-0) and fp32 (ZeRO-3, NVMe optimizer, CPU parameters);
#     one run also evaluates --val (same val_loss); with activation checkpointing (ZeRO-2, CPU
#     optimizer, bf16: the 10B plans' layout) the run gives the uncheckpointed run's losses and
#     gradient norms bit for bit in fewer activation bytes, its recompute runs three of a block's four
#     GEMMs (the stand-in's GEMM FLOP count), and --check passes; a run saved after 2 steps and resumed gives
#     the uninterrupted run's third step bit for bit (ZeRO-3 fp16 with Adam on the device: its
#     state and the loss scaler go through the checkpoint);
#   - with the optimizer state on the device (offload none) Adam runs there (zd_adamw); its result
#     is the host optimizer's bit for bit: a plan that gen gives part of the optimizer on the device
#     (train.device_optimizer: 0.5, ZeRO-2 bf16 with the optimizer on the CPU: dev_optimizer's
#     zd_adamw on its sub-groups) exports after 3 steps the weights of the same plan without it (all
#     of Adam on the host; cmp: no run-time switch, both placements are gen's);
#   - the bf16 runs use the fused GEMM epilogues (zr_gpu_gemm_lt); with all four refused
#     (ZR_GPU_EMU_LT_OFF=1234, a cuBLASLt without those algorithms) the run says so once per
#     epilogue, runs them unfused, stays within the bf16 bounds and differs from the fused run;
#   - `train-cuda-emu --check` compares the first step's gradients with the host reference, tensor
#     by tensor, and passes: fp32 activations (gpt2, llama and qwen2) within 1e-3 max|host|, bf16
#     (ZeRO-2) within gen's looser bound (12 * 2^-8), which it prints;
#   - on a document file (packed documents, prompts untrained; docs/DATA.md) the emulated trainer
#     gives the host's losses, gradient norms and val_loss (fp32 and bf16 bounds; gpt2 and llama);
#   - every emulated run has the stand-in's race checker on (zr_gpu_emu.cpp: declared footprints,
#     ordering only through record/wait/sync), so the real executor passes it;
#   - a rank that freezes at step 0 ends the stand-in run within the collective watchdog's time
#     (ZR_COLL_TIMEOUT_S=3), rank 0 naming the collective, the step and the missing rank;
#   - a stream dependency removed from the executor (the compute stream no longer waits for the
#     gather) is caught by the race checker at the enqueue, naming the embedding kernel and the
#     all-gather.
# Skips (77) without mpirun / numpy; the real build is skipped without the CUDA toolkit.
set -u
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=PASSIVE
PY=/usr/bin/python3
P=0; F=0; S=0
ok()   { echo "$1 ... ok"; P=$((P+1)); }
bad()  { echo "$1 ... FAIL"; shift; for l in "$@"; do echo "  $l"; done; F=$((F+1)); }
skip() { echo "$1 ... skip ($2)"; S=$((S+1)); }
finish() { echo "$P passed, $F failed, $S skipped"; [ $F -eq 0 ] || exit 1; [ $P -gt 0 ] || exit 77; exit 0; }

if ! command -v mpirun >/dev/null || ! "$PY" -c 'import numpy' 2>/dev/null; then
  skip train_cuda "needs mpirun and $PY with numpy"; finish
fi
make -s bin/zgen build/libzrt.a >/dev/null || { bad build "make bin/zgen build/libzrt.a"; finish; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ZGEN_CACHE=${ZGEN_CACHE:-$tmp/cache}

# ---------------------------------------------------------------- the real build
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$CUDA_HOME/include/cuda.h" ] && [ -f "$CUDA_HOME/include/nccl.h" ]; then
  # tiny and llama2-7b (llama's device adapter) after gpt2-124m: they reuse the plan-independent objects
  for spec in gpt2-124m tiny llama2-7b; do
    d=$tmp/real_$spec
    if ! bin/zgen "specs/$spec.yaml" -o "$d" >"$tmp/gen.log" 2>&1; then bad "real_$spec" "$(tail -5 "$tmp/gen.log")"; continue; fi
    # libzrt's CUDA build and the host kernels do not depend on the plan: built once
    [ -d "$tmp/real_obj" ] && cp -r "$tmp/real_obj" "$d/cuda.obj"
    if ! make -s -j2 -C "$d" cuda CUDA_HOME="$CUDA_HOME" >"$tmp/make.log" 2>&1; then
      bad "build_train_cuda_$spec" "$(grep -E 'error|undefined' "$tmp/make.log" | head -5)"; continue
    fi
    ok "build_train_cuda_$spec"
    [ -d "$tmp/real_obj" ] || { mkdir -p "$tmp/real_obj/host"; cp -r "$d/cuda.obj/zrt" "$tmp/real_obj/";
                                cp "$d"/cuda.obj/host/zk_host*.o "$tmp/real_obj/host/"; }
    if grep -q '"bytes"\|zg_n_kernel_blobs = 0' "$d/cuda/zg_kernels_bin.c"; then
      skip "blobs_$spec" "zgen ran without NVRTC"
    elif out=$("$PY" tests/cuda/blobs_in_binary.py "$d/train-cuda" "$d/cuda/kernels" 80 90 2>&1); then
      ok "blobs_sm80_sm90_linked_$spec ($out)"
    else
      bad "blobs_sm80_sm90_linked_$spec" "$(head -5 <<<"$out")"
    fi
  done
  d=$tmp/real_gpt2-124m
  if [ -x "$d/train-cuda" ]; then
    if ls /dev/nvidia0 >/dev/null 2>&1; then
      skip check_without_gpu "this machine has a GPU"
    else
      out=$("$d/train-cuda" --check --data /dev/null 2>&1); rc=$?
      if [ $rc -ne 0 ] && grep -q "no GPU" <<<"$out"; then ok "check_without_gpu_exits_$rc"
      else bad check_without_gpu "rc $rc: $out"; fi
    fi
  fi
else
  skip real_build "no CUDA toolkit at $CUDA_HOME"
fi

# ---------------------------------------------------------------- the emulated build vs the host
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null
mkdir -p "$tmp/obj"
# gen STAGE WS OPT PARAM TAG DTYPE [FLAGS] -> $tmp/TAG/out with train and train-cuda-emu built.
# FLAGS: ckpt (activation checkpointing), llama (the llama model below, untied), tied (llama, tied),
# qwen2 (the llama model as arch qwen2: q, k, v biases), hostacc (train.device_grad_accum: false),
# devopt (train.device_optimizer: 0.5)
gen() {
  local d=$tmp/$5 prec="" ck="" model arch=gpt2 tie
  [[ " ${7:-} " = *" ckpt "* ]] && ck=", activation_checkpointing: true"
  [[ " ${7:-} " = *" hostacc "* ]] && ck="$ck, device_grad_accum: false"
  [[ " ${7:-} " = *" devopt "* ]] && ck="$ck, device_optimizer: 0.5"
  # llama at odd sizes: head size 12 (RoPE's pair-at-a-time path), grouped-query 4/2, d_ff 84 (not a
  # multiple of 8: SwiGLU's element-at-a-time path)
  model="{arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}"
  if [[ " ${7:-} " = *" llama "* || " ${7:-} " = *" tied "* || " ${7:-} " = *" qwen2 "* ]]; then
    arch=llama tie=false; [[ " ${7:-} " = *" tied "* ]] && tie=true
    local a=llama; [[ " ${7:-} " = *" qwen2 "* ]] && a=qwen2     # the same shapes and objects as llama's
    model="{arch: $a, vocab_size: 128, context: 16, d_model: 48, n_layers: 2, n_heads: 4, n_kv_heads: 2, d_ff: 84, tie_embeddings: $tie}"
  fi
  case $6 in
    bf16) prec='"bf16": {"enabled": true},' ;;
    # 2^17 overflows fp16 at the first step here; the scale then halves and the next steps run
    fp16) prec='"fp16": {"enabled": true, "initial_scale_power": 17, "hysteresis": 1},' ;;
  esac
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: cz
model: $model
train: {seq_len: 16, world_size: $2, seed: 7$ck}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": 12, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, $prec
 "zero_optimization": {"stage": $1, "reduce_bucket_size": 2500, "sub_group_size": 3000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 3000,
   "offload_optimizer": {"device": "$3", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "$4", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { cat "$d/gen.log"; return 1; }
  # what depends only on the model's shapes and the activation storage gen chose (ZK_IO: bf16 plans
  # 1, fp16 plans 2, fp32 plans 0) is built once per storage (the emulated kernels take the longest)
  local obj=$tmp/obj/io$(sed -n 's/^#define ZK_IO \([0-9]\).*/\1/p' "$d/out/cuda/kernels/zk_shapes.h")_$arch
  mkdir -p "$obj"
  if [ -f "$obj/zr_gpu_emu.o" ]; then
    mkdir -p "$d/out/cuda-emu.obj/host"
    cp "$obj/zr_gpu_emu.o" "$d/out/cuda-emu.obj/"
    cp "$obj"/*_host*.o "$d/out/cuda-emu.obj/host/"
    cp "$obj"/*_host*.o "$d/out/"
  fi
  bash tests/zt_make -s -j2 -C "$d/out" train cuda-emu >"$d/make.log" 2>&1 || { grep -E "error|undefined" "$d/make.log" | head; return 1; }
  [ -f "$obj/zr_gpu_emu.o" ] || cp "$d/out/cuda-emu.obj/zr_gpu_emu.o" "$d"/out/*_host*.o "$obj/"
}
# run TAG WS BINARY LOG [args]
run() {
  local tag=$1 d=$tmp/$1 ws=$2 bin=$3 log=$4; shift 4
  ZR_CUDA_VERBOSE=1 ZR_GPU_EMU_VERBOSE=1 ZG_NVME_DIR="$tmp/nvme/$tag" ZR_GPU_EMU_GUARD=${GUARD:-0} ZR_GPU_EMU_SEED=${SEED:-0} mpirun --oversubscribe -np "$ws" "$d/out/$bin" \
    --data "$tmp/corpus.bin" --steps 3 --threads 1 --quiet --log "$d/$log" "$@" >"$d/$log.out" 2>&1
}
# near A B [bf16|fp16]: losses and gradient norms of two logs within 1e-5 relative (prints the
# worst). With bf16 or fp16: the device's 16-bit activations against the host's fp32
# (docs/CUDA_TRAINER.md, Tests): every loss within u relative (2^-8 bf16, 2^-11 fp16), every
# gradient norm within 12 u, and the loss must fall.
near() {
  "$PY" - "$1" "$2" "${3:-}" <<'EOF'
import json, math, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
u = {"bf16": 2.0**-8, "fp16": 2.0**-11}.get(sys.argv[3])
bf16 = u is not None            # 16-bit activations on the device
tol = {"loss": u, "grad_norm": 12 * u, "val_loss": u} if bf16 else {}
worst_k = {}
if len(a) != len(b) or not a:
    print(f"{len(a)} vs {len(b)} steps"); sys.exit(1)
worst = 0.0
for x, y in zip(a, b):
    for k in ("skipped", "loss_scale"):
        if x.get(k) != y.get(k): print(f"step {x['step']} {k}: {x.get(k)} vs {y.get(k)}"); sys.exit(1)
    for k in ("loss", "grad_norm", "val_loss"):
        if k == "val_loss" and k not in x and k not in y: continue
        if k == "grad_norm" and x["skipped"] and x[k] is None and y[k] is None: continue
        if x[k] is None or y[k] is None: print(f"step {x['step']} {k}: {x[k]} vs {y[k]}"); sys.exit(1)
        r = abs(x[k] - y[k]) / abs(x[k])
        worst = max(worst, r)
        worst_k[k] = max(worst_k.get(k, 0.0), r)
sk = sum(1 for x in a if x.get("skipped"))
print(f"worst rel {worst:.2e}" + (f" (loss {worst_k['loss']:.1e}, grad_norm {worst_k.get('grad_norm', 0):.1e})" if bf16 else "")
      + f", losses {[round(x['loss'], 6) for x in a]}" + (f", {sk} skipped" if sk else ""))
if bf16:
    falls = b[-1]["loss"] < b[0]["loss"]
    if not falls: print("the device's loss does not fall")
    sys.exit(0 if falls and all(v <= tol[k] for k, v in worst_k.items()) else 1)
sys.exit(0 if worst <= 1e-5 else 1)
EOF
}

# each configuration runs under another interleaving of the stand-in's streams (ZR_GPU_EMU_SEED)
n=0
for cfg in "0 1 none none fp32" "0 1 none none bf16" "0 2 none none fp16" \
           "2 2 cpu none bf16" "2 2 cpu none bf16 ckpt" "3 2 nvme cpu fp32" "3 2 cpu nvme bf16" "3 2 none none fp16" \
           "0 1 none none bf16 llama" "3 2 cpu none fp16 tied" "2 2 cpu none bf16 ckpt llama" "3 2 nvme cpu fp32 llama" \
           "3 1 cpu cpu bf16 ckpt llama" "0 1 none none bf16 qwen2" "3 2 nvme cpu fp32 qwen2"; do
  set -- $cfg
  n=$((n+1))
  flags="${*:6}"
  tag="s$1_w$2_o$3_p$4"; [ "$5" = fp32 ] || tag=${tag}_$5; for f in $flags; do tag=${tag}_$f; done
  if ! msg=$(gen "$1" "$2" "$3" "$4" "$tag" "$5" "$flags" 2>&1); then bad "emu_build_$tag" "$msg"; continue; fi
  val=(); [ "$1" = 0 ] && [ "$5" = fp32 ] && val=(--val "$tmp/corpus.bin")     # one run also evaluates
  if ! run "$tag" "$2" train host.jsonl "${val[@]}"; then bad "host_$tag" "$(tail -3 "$tmp/$tag/host.jsonl.out")"; continue; fi
  # device memory guarded (host code touching a device address crashes) where it matters most:
  # stage 0 (the host optimizer next to device-tier parameters) and the parameter-offload runs
  g=0; [ "$1" = 0 ] || [ "$4" != none ] && g=1
  if ! GUARD=$g SEED=$n run "$tag" "$2" train-cuda-emu emu.jsonl "${val[@]}"; then bad "emu_$tag" "$(tail -3 "$tmp/$tag/emu.jsonl.out")"; continue; fi
  want=host; [ "$3" = none ] && [ "$4" = none ] && want=device
  if ! grep -q "Adam on the $want" "$tmp/$tag/emu.jsonl.out"; then bad "adam_on_${want}_$tag" "$(grep -a 'Adam on' "$tmp/$tag/emu.jsonl.out")"; fi
  # gen's decision, on the start-up line: 16-bit activations and tensor-core attention for 16-bit
  # plans, fp32 and the CUDA-core attention for fp32 plans (llama's: attention_gqa[_tc])
  ck=""; [[ " $flags " = *" ckpt "* ]] && ck=", checkpointed"
  att=attention; [[ " $flags " = *" llama "* || " $flags " = *" tied "* || " $flags " = *" qwen2 "* ]] && att=attention_gqa
  [ "$5" != fp32 ] && att=${att}_tc
  act="activations $5 ([0-9]* + [0-9]* bytes: the plan's acts and scratch$ck, $att)"
  if ! grep -q "$act" "$tmp/$tag/emu.jsonl.out"; then bad "activations_$tag" "$(grep -ao 'activations [^;]*' "$tmp/$tag/emu.jsonl.out")"; fi
  if out=$(near "$tmp/$tag/host.jsonl" "$tmp/$tag/emu.jsonl" "$5"); then ok "emu_matches_host_$tag ($out)"
  else bad "emu_matches_host_$tag" "$out"; fi
done

# Document files (docs/DATA.md): packed rows of documents shorter and longer than a row, prompts
# untrained. The device's attention, positions (wpe, RoPE) and loss divisor must follow the
# documents as the host's do (the host is held to transformers in tests/trainer/t_finetune.sh).
PYTHONPATH=py "$PY" - "$tmp/docs.zgd" <<'EOF'
import sys, numpy as np, zgd
rng = np.random.default_rng(5)
lens = rng.integers(2, 40, size=120)
off = np.concatenate([[0], np.cumsum(lens)])
tok = rng.integers(3, 128, size=int(off[-1]))
mask = np.zeros(int(off[-1]), np.uint8)
for a, n in zip(off[:-1], lens):
    p = int(rng.integers(1, n))                 # tokens a .. a+p-1 are the prompt
    mask[a + p:a + n] = 1
    tok[a + n - 1] = 2                          # eos
zgd.write(sys.argv[1], zgd.Zgd(off, tok, mask, vocab=128, bos=1, eos=2, pad=0))
EOF
for tag in s0_w1_onone_pnone s2_w2_ocpu_pnone_bf16 s0_w1_onone_pnone_bf16_llama s3_w2_onvme_pcpu_llama; do
  [ -x "$tmp/$tag/out/train-cuda-emu" ] || { bad "docs_emu_matches_host_$tag" "no build"; continue; }
  ws=${tag#*_w}; ws=${ws%%_*}
  dt=fp32; [[ $tag = *bf16* ]] && dt=bf16
  d=(--data "$tmp/docs.zgd" --val "$tmp/docs.zgd" --eval-every 2)
  out=""
  if run "$tag" "$ws" train docs_host.jsonl "${d[@]}" && run "$tag" "$ws" train-cuda-emu docs_emu.jsonl "${d[@]}" &&
     out=$(near "$tmp/$tag/docs_host.jsonl" "$tmp/$tag/docs_emu.jsonl" "$dt"); then
    ok "docs_emu_matches_host_$tag ($out)"
  else
    bad "docs_emu_matches_host_$tag" "$out" "$(tail -2 "$tmp/$tag/docs_emu.jsonl.out" 2>/dev/null)"
  fi
done

# Adam on the device (zd_adamw, cuda_main.c dev_optimizer) gives the host optimizer's bits: gen puts
# part of the optimizer on the device (train.device_optimizer: 0.5; plan.txt says which sub-groups),
# and the run exports the weights of the same plan without that part (every sub-group's Adam on the
# host), cmp. Both placements are gen's; nothing is switched at run time. A changed zd_adamw (or its
# constants: an lr 1e-4 off, tried by hand) changes the device sub-groups' weights and fails the cmp.
tag=s2_w2_ocpu_pnone_bf16 alt=s2_w2_ocpu_pnone_bf16_devopt
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  d=$tmp/$tag a=$tmp/$alt
  if ! msg=$(gen 2 2 cpu none "$alt" bf16 devopt 2>&1); then bad "device_adam_bits_equal_host_adam_$tag" "$msg"
  elif ! grep -q "^part of the optimizer on the device: sub-groups 0\.\." "$a/out/plan.txt"; then
    bad "device_adam_bits_equal_host_adam_$tag" "plan.txt: $(grep -i 'optimizer on the device' "$a/out/plan.txt")"
  elif grep -q "^part of the optimizer on the device: sub-groups" "$d/out/plan.txt"; then
    bad "device_adam_bits_equal_host_adam_$tag" "the host-Adam plan has a device part"
  elif run "$tag" 2 train-cuda-emu hadam.jsonl --export "$d/host_adam.safetensors" &&
       run "$alt" 2 train-cuda-emu emu.jsonl --export "$a/dev_adam.safetensors" &&
       cmp -s "$d/host_adam.safetensors" "$a/dev_adam.safetensors"; then
    ok "device_adam_bits_equal_host_adam_$tag ($(grep -o 'sub-groups [0-9.]* ([0-9]* elements' "$a/out/plan.txt") on the device)"
  else
    # (a path ending in .safetensors is one file; any other --export path is a folder, which cmp
    # would pass over)
    bad "device_adam_bits_equal_host_adam_$tag" "$(cmp "$d/host_adam.safetensors" "$a/dev_adam.safetensors" 2>&1)" "$(tail -2 "$a/emu.jsonl.out")"
  fi
fi

# Gradient accumulation on the device (the optimizer on the CPU, two micro-steps: gen plans it,
# plan.txt says so) against the same plan accumulating on the host (train.device_grad_accum: false):
# the same fp32 adds of the same 16-bit values in the same order, so the same bits (losses, gradient
# norms, exported weights). ZeRO 2 (each rank's part of the flat range) and ZeRO 3 (each rank's
# reduce-scattered chunk; parameters on NVMe, and fp16 with the head tied to the llama embedding;
# and llama2-7b's plan in small: one rank, whose chunk is the bucket itself, parameters and optimizer
# on the CPU, activation checkpointing).
# The stand-in's D2H bytes are printed: here they are equal (two micro-steps of 16-bit parts weigh one
# fp32 ship); tests/cuda/t_links.sh holds every plan's bytes to its plan.json, and the prediction
# shows what ten micro-steps save (docs/PREDICT.md).
for cfg in "2 2 cpu none bf16" "3 2 cpu nvme bf16" "3 2 cpu none fp16 tied" "3 1 cpu cpu bf16 ckpt llama"; do
  set -- $cfg
  flags="${*:6}"
  tag="s$1_w$2_o$3_p$4_$5"; for f in $flags; do tag=${tag}_$f; done
  alt=${tag}_hostacc
  [ -x "$tmp/$tag/out/train-cuda-emu" ] || continue
  d=$tmp/$tag a=$tmp/$alt
  d2h() { sed -n 's/.*emulated GPU (rank 0).*D2H \([0-9]*\),.*/\1/p' "$1"; }
  if ! grep -q "^gradient accumulation on the device" "$d/out/plan.txt"; then
    bad "device_accumulation_bits_equal_host_$tag" "plan.txt: $(grep -i 'accumulation on the device' "$d/out/plan.txt")"
  elif ! msg=$(gen "$1" "$2" "$3" "$4" "$alt" "$5" "$flags hostacc" 2>&1); then bad "device_accumulation_bits_equal_host_$tag" "$msg"
  elif ! grep -q "^no gradient accumulation on the device: train.device_grad_accum is false" "$a/out/plan.txt"; then
    bad "device_accumulation_bits_equal_host_$tag" "plan.txt of the host-accumulating plan: $(grep -i 'accumulation on the device' "$a/out/plan.txt")"
  elif run "$tag" "$2" train-cuda-emu acc.jsonl --export "$d/acc.safetensors" &&
       run "$alt" "$2" train-cuda-emu emu.jsonl --export "$a/w.safetensors" &&
       [ "$(cut -d, -f1-4 "$d/acc.jsonl")" = "$(cut -d, -f1-4 "$a/emu.jsonl")" ] &&
       cmp -s "$d/acc.safetensors" "$a/w.safetensors"; then
    ok "device_accumulation_bits_equal_host_$tag ($(cut -d, -f2-3 "$d/acc.jsonl" | tail -1); D2H bytes on rank 0: $(d2h "$d/acc.jsonl.out") against $(d2h "$a/emu.jsonl.out"))"
  else
    bad "device_accumulation_bits_equal_host_$tag" "$(cut -d, -f1-4 "$d/acc.jsonl" 2>&1 | tail -1)" "$(cut -d, -f1-4 "$a/emu.jsonl" 2>&1 | tail -1)" "$(tail -2 "$a/emu.jsonl.out")"
  fi
done

# The bf16 runs above go through the fused GEMM epilogues (gen's ZK_GEMM_EPI: d_ff 80 is a multiple
# of 8). A cuBLASLt without an algorithm for an epilogue (the stand-in's ZR_GPU_EMU_LT_OFF refuses
# all four as that heuristic would) makes train-cuda say so once per epilogue and run those call
# sites unfused: still within the bf16 bounds of the host, and not the fused run's numbers (which
# shows that the fused run did use the epilogues).
tag=s0_w1_onone_pnone_bf16
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  d=$tmp/$tag
  if ZR_GPU_EMU_LT_OFF=1234 run "$tag" 1 train-cuda-emu unfused.jsonl &&
     [ "$(grep -c 'that epilogue runs unfused for the rest of the run' "$d/unfused.jsonl.out")" = 4 ] &&
     out=$(near "$d/host.jsonl" "$d/unfused.jsonl" bf16) &&
     [ "$(cut -d, -f1-4 "$d/unfused.jsonl")" != "$(cut -d, -f1-4 "$d/emu.jsonl")" ]; then
    ok "epilogues_refused_run_unfused_$tag ($out)"
  else
    bad "epilogues_refused_run_unfused_$tag" "$(grep -a 'warning' "$d/unfused.jsonl.out" | head -4)" "${out:-}"
  fi
fi

# save after 2 steps, resume to 3: the same log line as the uninterrupted run, bit for bit
tag=s3_w2_onone_pnone_fp16
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  d=$tmp/$tag
  if run "$tag" 2 train-cuda-emu part.jsonl --steps 2 --save "$d/ckpt" &&
     run "$tag" 2 train-cuda-emu resumed.jsonl --resume "$d/ckpt" &&
     [ "$(tail -1 "$d/resumed.jsonl" | cut -d, -f1-4)" = "$(tail -1 "$d/emu.jsonl" | cut -d, -f1-4)" ]; then
    ok "emu_resume_bit_identical ($(tail -1 "$d/resumed.jsonl" | cut -d, -f1-4))"
  else
    bad emu_resume_bit_identical "$(tail -1 "$d/resumed.jsonl" 2>&1)" "$(tail -1 "$d/emu.jsonl")" "$(tail -3 "$d/resumed.jsonl.out")"
  fi
fi

# --check on the stand-in: every tensor of the first step's gradient shard within tolerance (fp32
# activations: gpt2's attention.cu, llama's attention_gqa.cu; qwen2's q, k, v bias gradients, the
# k bias's small: keys shifted alike barely move the softmax)
for check in "s3_w2_onvme_pcpu h.1.mlp.c_proj.weight" "s3_w2_onvme_pcpu_llama model.layers.1.mlp.down_proj.weight" \
             "s3_w2_onvme_pcpu_qwen2 model.layers.1.self_attn.k_proj.bias"; do
  set -- $check
  tag=$1
  [ -x "$tmp/$tag/out/train-cuda-emu" ] || continue
  c=$tmp/$tag/check.jsonl.out
  if run "$tag" 2 train-cuda-emu check.jsonl --check && grep -q "check rank 1: $2" "$c" && ! grep -q "over tolerance" "$c"; then
    ok "emu_check_per_tensor_$tag ($(grep -c '^check rank' "$c") lines)"
  else
    bad "emu_check_per_tensor_$tag" "$(tail -5 "$c")"
  fi
done

# --check with 16-bit activations: gen's tolerance for the dtype (12 u per tensor, u for the loss;
# u = 2^-8 bf16, 2^-11 fp16), printed, and met by every tensor. bf16 at ZeRO-2 with the CPU
# optimizer; fp16 at ZeRO-3 with Adam on the device (this run's first step does not overflow).
for check in "s2_w2_ocpu_pnone_bf16 bf16 0.00391 0.0469 h.1.mlp.c_proj.weight" \
             "s3_w2_onone_pnone_fp16 fp16 0.000488 0.00586 h.1.mlp.c_proj.weight" \
             "s2_w2_ocpu_pnone_bf16_ckpt_llama bf16 0.00391 0.0469 model.layers.1.mlp.down_proj.weight" \
             "s3_w2_ocpu_pnone_fp16_tied fp16 0.000488 0.00586 model.layers.1.self_attn.k_proj.weight"; do
  set -- $check
  tag=$1
  [ -x "$tmp/$tag/out/train-cuda-emu" ] || continue
  c=$tmp/$tag/check.jsonl.out
  if run "$tag" 2 train-cuda-emu check.jsonl --check && grep -q "check rank 1: $5" "$c" \
     && grep -q "tolerance (gen, $2 activations): loss sum $3 relative; per tensor max|dev-host| <= 1e-6 + $4 max|host|" "$c" \
     && ! grep -q "over tolerance" "$c"; then
    ok "emu_check_${2}_per_tensor_$tag (worst rel $(awk '$1 == "check" && NF == 7 && $7 ~ /e/ {v = $7 + 0; if (v > w) w = v} END {printf "%.2e", w}' "$c"))"
  else
    bad "emu_check_${2}_per_tensor_$tag" "$(grep -E 'tolerance|over' "$c" | head -5)" "$(tail -3 "$c")"
  fi
done

# activation checkpointing (the 10B plans' layout): one block area, each block's output kept, a
# recompute before each backward. The recompute runs the forward's kernels on the same input, so the
# run gives the uncheckpointed run's bits (losses, gradient norms; the same seed and data), in less
# device memory for the activations; --check holds it to the host's checkpointed reference.
tag=s2_w2_ocpu_pnone_bf16_ckpt full=s2_w2_ocpu_pnone_bf16
if [ -x "$tmp/$tag/out/train-cuda-emu" ] && [ -f "$tmp/$full/emu.jsonl" ]; then
  acts() { sed -n 's/.*activations bf16 (\([0-9]*\) + .*/\1/p' "$1" | head -1; }
  a_ck=$(acts "$tmp/$tag/emu.jsonl.out") a_full=$(acts "$tmp/$full/emu.jsonl.out")
  if [ "$(cut -d, -f1-4 "$tmp/$tag/emu.jsonl")" = "$(cut -d, -f1-4 "$tmp/$full/emu.jsonl")" ] &&
     [ -n "$a_ck" ] && [ -n "$a_full" ] && [ "$a_ck" -lt "$a_full" ]; then
    ok "emu_ckpt_bits_equal_full ($a_ck bytes of activations against $a_full)"
  else
    bad emu_ckpt_bits_equal_full "activations $a_ck vs $a_full bytes" "$(cut -d, -f1-4 "$tmp/$tag/emu.jsonl")" "$(cut -d, -f1-4 "$tmp/$full/emu.jsonl")"
  fi
  # a recompute runs three of a block's four GEMMs (qkv, attention projection, fc; the MLP
  # projection's product is the kept output): per micro-step, L-1 blocks x 2 BT (3CC + CC + CF)
  # more GEMM FLOPs than without checkpointing (bf16: biases ride in the epilogues; rank 0's count)
  flops() { sed -n 's/.*emulated GPU (rank 0):.*GEMM FLOPs \([0-9]*\)$/\1/p' "$1" | head -1; }
  f_ck=$(flops "$tmp/$tag/emu.jsonl.out") f_full=$(flops "$tmp/$full/emu.jsonl.out")
  bt=$((3 * 16)) c_=32 f_=80   # (F is this script's failure count)
  want=$((3 * 2 * (2 - 1) * 2 * bt * (3 * c_ * c_ + c_ * c_ + c_ * f_)))
  if [ -n "$f_ck" ] && [ -n "$f_full" ] && [ $((f_ck - f_full)) -eq $want ]; then
    ok "emu_recompute_skips_mlp_projection (GEMM FLOPs $f_full -> $f_ck, +$want)"
  else
    bad emu_recompute_skips_mlp_projection "GEMM FLOPs $f_full -> $f_ck, want +$want (the whole block: +$((want + 3 * 2 * 2 * bt * c_ * f_)))"
  fi
  c=$tmp/$tag/check.jsonl.out
  if run "$tag" 2 train-cuda-emu check.jsonl --check && grep -q "check rank 1: h.1.mlp.c_proj.weight" "$c" \
     && ! grep -q "over tolerance" "$c"; then
    ok "emu_check_ckpt_per_tensor ($(grep -c '^check rank' "$c") lines)"
  else
    bad emu_check_ckpt_per_tensor "$(grep -m5 'over tolerance' "$c")" "$(tail -3 "$c")"
  fi
fi

# a missing event is caught: the compute stream no longer waits for the gathered parameters
tag=s3_w2_onone_pnone_fp16
d=$tmp/$tag/out
if [ -f "$d/cuda/trainer/cuda_exec.c" ]; then
  sed -i 's|CZ_CHECK(zr_gpu_wait(cz_queue(op), CZ.ev_gather\[op->slot\]));|/* removed */|' "$d/cuda/trainer/cuda_exec.c"
  if ! grep -q "removed" "$d/cuda/trainer/cuda_exec.c"; then bad missing_event_caught "the sed found nothing to remove"
  elif ! make -s -C "$d" cuda-emu >/dev/null 2>&1; then bad missing_event_caught "mutant did not build"
  else
    run "$tag" 2 train-cuda-emu mutant.jsonl
    # the race checker stops it at the enqueue: the first kernel that reads a gathered slot (the
    # embedding's, which reads wte and wpe) reads what the all-gather writes, unordered
    m=$tmp/$tag/mutant.jsonl.out
    if out=$(near "$tmp/$tag/host.jsonl" "$tmp/$tag/mutant.jsonl" fp16 2>&1); then bad missing_event_caught "mutant matched: $out"
    elif ! grep -q "race: kernel zd_encoder_forward .* reads .* that all_gather" "$m"; then
      bad missing_event_caught "the race checker did not name the two operations" "$(grep -m2 -E 'race|error' "$m")"
    else ok "missing_event_caught ($(grep -m1 -o 'race: kernel zd_encoder_forward ([^)]*)' "$m") vs all_gather)"; fi
  fi
fi

# a collective that never completes: rank 1 freezes as step 0 begins; rank 0's queued collective
# (run by the stand-in's scheduler) ends under the watchdog, naming it, the step and rank 1
tag=s3_w2_onvme_pcpu
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  t0=$SECONDS
  ZG_FAULT_SIGNAL=STOP ZG_FAULT_EXIT_RANK=1 ZG_FAULT_EXIT_STEP=0 ZR_COLL_TIMEOUT_S=3 run "$tag" 2 train-cuda-emu hang.jsonl
  rc=$? el=$((SECONDS - t0)) h=$tmp/$tag/hang.jsonl.out
  if [ $rc -ne 0 ] && [ $el -le 30 ] && grep -Eq "TIMEOUT after [0-9]+ s in (all_gather|all_reduce|reduce_scatter).*step 0" "$h" \
     && grep -q "ranks not arrived: 1" "$h"; then
    ok "emu_hung_collective_ends ($el s: $(grep -m1 -o 'TIMEOUT after [0-9]* s in [a-z_]*' "$h"))"
  else
    bad emu_hung_collective_ends "rc $rc after $el s" "$(grep -m3 -E 'TIMEOUT|arrived|error' "$h")"
  fi
fi
finish
