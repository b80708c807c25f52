#!/usr/bin/env bash
# t_links.sh — bytes per link: the emulated CUDA trainer moves what plan.json says it moves, and
# only between pinned memory and the device.
#   For every all-device plan (offload_optimizer none, offload_param none) at ZeRO 0, 1, 2 and 3, on
#   1 and 2 ranks, in fp32 and bf16, and for the offload plans (the optimizer on the CPU at ZeRO 1,
#   2 and 3; ZeRO 3 with the parameters on the CPU or NVMe and the optimizer on the CPU, NVMe or the
#   device), train-cuda-emu runs one step and then two steps with ZR_GPU_EMU_VERBOSE=1; the stand-in
#   prints, per rank, the bytes it enqueued per link (H2D, D2H, collectives received:
#   runtime/zr_gpu.h, zr_gpu_bytes) and the async copies that touched pageable host memory. The
#   difference of the two runs is one optimizer step (start-up and exit cancel), and it must equal
#   plan.json's cost_per_step_per_rank byte for byte (h2d_bytes, d2h_bytes, net_bytes; the stand-in
#   does not count NVMe) with no pageable copy. Two rules are per rank and stated here
#   (docs/PLAN.md): where every rank's optimizer updates every element (ZeRO-0 on 2 ranks) only
#   rank 0 sums the gradient's squares, so ranks > 0 bring down norm_d2h_bytes less; and at ZeRO 3
#   with the parameters offloaded the plan counts rank 0's persistent slices going up, which a
#   later rank's may undercut (their tails are shorter): computed here from plan.json's tensors.
#   - `--check` on the ZeRO-3 2-rank all-device plan passes (it alone copies the reduced buckets
#     to the host there, for the host reference's comparison);
#   - the D2H of reduced buckets that only --check needs, put back into the executor (a mutant of
#     the generated cuda_exec.c), makes the ZeRO-2 comparison fail, both for the all-device plan and
#     for the CPU-optimizer plan that accumulates on the device (docs/PLAN.md "Gradient accumulation
#     on the device": its micro-steps move nothing down, the last ships fp32 sums).
# gradient_clipping is 1e6, so the speculative step of the CPU-optimizer plans at ZeRO 1-2 is kept
# every step: the plan's cost is that case (a step that clips redoes Adam and sends the owned part up
# twice; tests/trainer/t_spec.sh proves the redo's bits).
# A sixth field sets gradient_accumulation_steps (default 2; "2 2 cpu none bf16 1" is the 16-bit
# gradient shard, grad16; "3 2 cpu none fp32 1" is the one fp32
# micro-step whose stage-3 reduction cannot go straight into an offloaded grad32).
# LINKS="STAGE WS OPT PARAM DTYPE [GAS];..." runs only those configurations. Skips (77) without mpirun / numpy.
. "$(dirname "$0")/../lib.sh"
zt_need_mpi links numpy
zt_build bin/zgen build/libzrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ZGEN_CACHE=${ZGEN_CACHE:-$tmp/cache}
"$PY" scripts/make_corpus.py "$tmp/corpus.bin" --tokens 20000 2>/dev/null
mkdir -p "$tmp/obj"

# gen STAGE WS OPT PARAM DTYPE TAG [GAS] -> $tmp/TAG/out with train-cuda-emu built
gen() {
  local d=$tmp/$6 prec="" gas=${7:-2}
  [ "$5" = bf16 ] && prec='"bf16": {"enabled": true},'
  mkdir -p "$d"
  cat >"$d/spec.yaml" <<EOF
name: cz
model: {arch: gpt2, vocab_size: 128, context: 16, d_model: 32, n_layers: 2, n_heads: 2, d_ff: 80}
train: {seq_len: 16, world_size: $2, seed: 7}
deepspeed: ds.json
EOF
  cat >"$d/ds.json" <<EOF
{"train_batch_size": $((3 * gas * $2)), "gradient_accumulation_steps": $gas, "gradient_clipping": 1e6, $prec
 "zero_optimization": {"stage": $1, "reduce_bucket_size": 2500, "sub_group_size": 3000,
   "stage3_param_persistence_threshold": 100, "stage3_prefetch_bucket_size": 3000,
   "offload_optimizer": {"device": "$3", "nvme_path": "$tmp/nvme"},
   "offload_param": {"device": "$4", "nvme_path": "$tmp/nvme"}},
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}}}
EOF
  bin/zgen "$d/spec.yaml" -o "$d/out" >"$d/gen.log" 2>&1 || { tail -5 "$d/gen.log"; return 1; }
  # the emulated kernels depend only on the shapes and the activation storage (ZK_IO): built once each
  local obj=$tmp/obj/io$(sed -n 's/^#define ZK_IO \([0-9]\).*/\1/p' "$d/out/cuda/kernels/zk_shapes.h")
  mkdir -p "$obj"
  if [ -f "$obj/zr_gpu_emu.o" ]; then
    mkdir -p "$d/out/cuda-emu.obj/host"
    cp "$obj/zr_gpu_emu.o" "$d/out/cuda-emu.obj/"
    cp "$obj"/zk_host*.o "$d/out/cuda-emu.obj/host/"
  fi
  zt_make -s -j2 -C "$d/out" cuda-emu >"$d/make.log" 2>&1 || { grep -E "error|undefined" "$d/make.log" | head -5; return 1; }
  [ -f "$obj/zr_gpu_emu.o" ] || { mkdir -p "$obj"; cp "$d/out/cuda-emu.obj/zr_gpu_emu.o" "$d"/out/cuda-emu.obj/host/zk_host*.o "$obj/"; }
}
# bytes TAG WS STEPS -> $tmp/TAG/bytesSTEPS: one line per rank "rank h2d d2h d2d net pageable"
bytes() {
  local d=$tmp/$1
  ZR_GPU_EMU_VERBOSE=1 ZG_NVME_DIR="$tmp/nvme/$1" mpirun --oversubscribe -np "$2" "$d/out/train-cuda-emu" \
    --data "$tmp/corpus.bin" --steps "$3" --threads 1 --quiet >"$d/run$3.out" 2>&1 || return 1
  sed -n 's/^emulated GPU (rank \([0-9]*\)):.* \([0-9]*\) async copies with pageable host memory;.*H2D \([0-9]*\), D2H \([0-9]*\), D2D \([0-9]*\), collectives received \([0-9]*\)$/\1 \3 \4 \5 \6 \2/p' \
    "$d/run$3.out" | sort -n >"$d/bytes$3"
  [ "$(wc -l <"$d/bytes$3")" = "$2" ]
}
# compare TAG WS STAGE MODE: MODE check -> exit 0 when every rank's step equals the plan, printing
# the differences otherwise; MODE show -> `# ...` lines, measured vs plan
compare() {
  "$PY" - "$tmp/$1" "$2" "$3" "$4" <<'EOF'
import json, sys
d, ws, stage, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
plan = json.load(open(d + "/out/plan.json"))
c = plan["cost_per_step_per_rank"]
esz = 4 if plan["config"].get("dtype", "fp32") == "fp32" else 2
def persist_h2d(r):      # rank r's slices of the persistent tensors (stage 3, parameters offloaded)
    if stage != 3 or plan["partition"]["placement"]["param_shard"] == "device": return 0
    return sum(max(0, min(t["part_numel"], t["numel"] - r * t["part_numel"])) * esz
               for t in plan["tensors"] if t.get("persistent"))
def rows(n):
    return {int(l.split()[0]): [int(x) for x in l.split()[1:]] for l in open(f"{d}/bytes{n}")}
one, two = rows(1), rows(2)
bad = []
for r in sorted(two):
    h2d, d2h, d2d, net, pageable = (b - a for a, b in zip(one[r], two[r]))
    want_d2h = c["d2h_bytes"] - (c["norm_d2h_bytes"] if stage == 0 and ws > 1 and r > 0 else 0)
    got = {"h2d": h2d, "d2h": d2h, "net": net}
    want = {"h2d": c["h2d_bytes"] - (persist_h2d(0) - persist_h2d(r)), "d2h": want_d2h, "net": c["net_bytes"]}
    if mode == "show":
        print(f"# rank {r}: " + ", ".join(f"{k} measured {got[k]} plan {want[k]} ({got[k] - want[k]:+d})" for k in got)
              + f"; d2d {d2d}; plan NVMe read {c['nvme_read_bytes']} write {c['nvme_write_bytes']} (not counted)")
        continue
    for k in got:
        if got[k] != want[k]: bad.append(f"rank {r} {k}: measured {got[k]}, plan {want[k]}")
    if pageable: bad.append(f"rank {r}: {pageable} async copies per step touch pageable host memory")
if mode == "show": sys.exit(0)
print("; ".join(bad) if bad else f"h2d {c['h2d_bytes']}, d2h {c['d2h_bytes']}, net {c['net_bytes']}")
sys.exit(1 if bad else 0)
EOF
}

cfgs="0 1 none none fp32;0 2 none none fp32;1 1 none none fp32;1 2 none none fp32;2 1 none none fp32;2 2 none none fp32;3 1 none none fp32;3 2 none none fp32"
cfgs="$cfgs;0 1 none none bf16;0 2 none none bf16;1 1 none none bf16;1 2 none none bf16;2 1 none none bf16;2 2 none none bf16;3 1 none none bf16;3 2 none none bf16"
cfgs="$cfgs;1 2 cpu none bf16;2 2 cpu none fp32;2 1 cpu none bf16;3 2 cpu none fp32;3 2 cpu cpu bf16;3 2 nvme cpu fp32;3 2 nvme nvme bf16"
cfgs="$cfgs;3 2 none cpu fp32;3 2 none nvme bf16;3 2 cpu none fp32 1;2 2 cpu none bf16 1"
IFS=';' read -ra list <<<"${LINKS:-$cfgs}"
for cfg in "${list[@]}"; do
  set -- $cfg
  tag="s$1_w$2_o$3_p$4_$5${6:+_gas$6}"
  if ! msg=$(gen "$1" "$2" "$3" "$4" "$5" "$tag" "${6:-2}" 2>&1); then fail "links_build_$tag" "$msg"; continue; fi
  if ! bytes "$tag" "$2" 1 || ! bytes "$tag" "$2" 2; then
    fail "links_run_$tag" "$(tail -2 "$tmp/$tag/run1.out" "$tmp/$tag/run2.out" 2>/dev/null | tr '\n' ' ')"; continue
  fi
  if out=$(compare "$tag" "$2" "$1" check); then ok "links_equal_plan_$tag ($out)"
  else fail "links_equal_plan_$tag" "$out"; fi
done

# --check still compares the device's gradients with the host reference where Adam runs on the
# device (it alone takes the reduced buckets to the host there)
tag=s3_w2_onone_pnone_fp32
if [ -x "$tmp/$tag/out/train-cuda-emu" ]; then
  c=$tmp/$tag/check.out
  if mpirun --oversubscribe -np 2 "$tmp/$tag/out/train-cuda-emu" --data "$tmp/corpus.bin" --steps 1 --threads 1 \
       --quiet --check >"$c" 2>&1 && grep -q "check rank 1: h.1.mlp.c_proj.weight" "$c" && ! grep -q "over tolerance" "$c"; then
    ok "check_with_device_adam_$tag ($(grep -c '^check rank' "$c") lines)"
  else
    fail "check_with_device_adam_$tag" "$(tail -3 "$c" | tr '\n' ' ')"
  fi
fi

# the comparison can fail: the reduced buckets' D2H put back (host_takes() always true) is traffic
# the all-device plan does not have, and the device-accumulating plan (ZeRO 2, CPU optimizer, two
# micro-steps) neither: each micro-step's D2H of the reduced part on top of GRAD_SHIP's
for tag in s2_w2_onone_pnone_fp32 s2_w2_ocpu_pnone_fp32; do
  f=$tmp/$tag/out/cuda/trainer/cuda_exec.c
  [ -f "$f" ] && [ -z "${LINKS:-}" ] || continue
  sed -i 's|return CZ.dev_opt ? CZ.check : !ZG_GRAD_ACC_DEV;|return 1;|' "$f"
  if ! grep -q "return 1;" "$f"; then fail "mutant_d2h_caught_$tag" "the sed found nothing to change"
  elif ! grep -q "gradient accumulation on the device" "$tmp/$tag/out/plan.txt" && [ "$tag" = s2_w2_ocpu_pnone_fp32 ]; then
    fail "mutant_d2h_caught_$tag" "the plan does not accumulate on the device"
  elif ! make -s -C "$tmp/$tag/out" cuda-emu >/dev/null 2>&1; then fail "mutant_d2h_caught_$tag" "the mutant did not build"
  elif ! bytes "$tag" 2 1 || ! bytes "$tag" 2 2; then fail "mutant_d2h_caught_$tag" "the mutant did not run"
  elif out=$(compare "$tag" 2 2 check); then fail "mutant_d2h_caught_$tag" "the mutant matched the plan: $out"
  else ok "mutant_d2h_caught_$tag ($out)"; fi
done
zt_end
