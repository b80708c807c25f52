#!/usr/bin/env bash
# t_predict_cli.sh — `zgen --predict` end to end on specs/tiny.yaml: --json prints one object with
# step_s, tokens_per_s, mfu, bottleneck (and the step is positive, MFU in (0, 1)); the trace file is
# valid Chrome-trace JSON with one named track per resource and events inside the predicted step;
# plan.txt carries the same summary; a profile file is used (a slower H2D changes nothing for a
# plan without offload, a slower matmul slows it); an unknown --hardware exits 1 naming the
# built-ins; --hardware without --predict exits 2; an fp32 plan with train.allow_tf32 is predicted at
# the TF32 peak; the faster plans that fit (gen/advise.c) are what the changed config predicts.
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
[ -x bin/zgen ] || { fail zgen_built "bin/zgen missing (make bin/zgen)"; zt_end; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

bin/zgen specs/tiny.yaml --predict --hardware h100-sxm --json -o "$tmp/o" >"$tmp/j" 2>/dev/null
check json_keys $PY - "$tmp/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert all(k in d for k in ("step_s", "tokens_per_s", "mfu", "bottleneck")), d
assert d["step_s"] > 0 and 0 < d["mfu"] < 1, d
assert abs(d["tokens_per_s"] - d["tokens_per_step"] / d["step_s"]) < 1e-4 * d["tokens_per_s"], d
PY
check trace_valid $PY - "$tmp/o/predict.trace.json" "$tmp/j" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
step = json.load(open(sys.argv[2]))["step_s"] * 1e6
names = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
assert {"compute", "network", "PCIe H2D", "CPU"} <= names, names
x = [e for e in ev if e.get("ph") == "X"]
assert x and all(e["ts"] >= 0 and e["ts"] + e["dur"] <= step * (1 + 1e-6) + 1 for e in x)
assert any(e["name"].startswith("backward h.") for e in x)
PY
check plan_txt_summary grep -q "this plan is .*-bound" "$tmp/o/plan.txt"

echo '{"base": "h100-sxm", "h2d_gbs": 0.001}' >"$tmp/slow_pcie.json"
echo '{"base": "h100-sxm", "matmul_efficiency": 0.07}' >"$tmp/slow_mm.json"
step() { bin/zgen specs/gpt2-124m-bf16.yaml --predict --hardware "$1" --json -o "$tmp/p" 2>/dev/null |
         $PY -c 'import json,sys; print(json.load(sys.stdin)["step_s"])'; }
a=$(step h100-sxm); b=$(step "$tmp/slow_pcie.json"); c=$(step "$tmp/slow_mm.json")
check profile_file_used $PY -c "import sys; a,b,c=map(float,sys.argv[1:]); assert a==b and c>5*a" "$a" "$b" "$c"

# TF32: an fp32 plan with train.allow_tf32 is predicted at the TF32 peak (494.7 TF dense on
# h100-sxm), named in the JSON and the text; its compute is shorter, by at most the ratio of the
# peaks (494.7 / 67): the matmuls by that ratio, the attention not at all (CUDA cores, fp32), so
# the whole shrinks less (3.8x here); a bf16 plan ignores the key.
tf32_spec() {  # tf32_spec FILE true|false: GPT-2 124M shapes, fp32, ZeRO-0 on one rank (compute-bound)
  cat >"$1" <<EOF
name: tf
model: {arch: gpt2, vocab_size: 50304, context: 1024, d_model: 768, n_layers: 12, n_heads: 12}
train: {seq_len: 1024, world_size: 1, allow_tf32: $2}
deepspeed: {train_micro_batch_size_per_gpu: 8, gradient_accumulation_steps: 1, zero_optimization: {stage: 0}}
EOF
}
tf32_spec "$tmp/tf32.yaml" true
tf32_spec "$tmp/exact.yaml" false
bin/zgen "$tmp/tf32.yaml" --predict --hardware h100-sxm --json -o "$tmp/t1" >"$tmp/t1.json" 2>/dev/null
bin/zgen "$tmp/exact.yaml" --predict --hardware h100-sxm --json -o "$tmp/t0" >"$tmp/t0.json" 2>/dev/null
bin/zgen "$tmp/tf32.yaml" --predict --hardware h100-sxm -o "$tmp/t2" >"$tmp/t2.txt" 2>/dev/null
check tf32_peak_used $PY - "$tmp/t1.json" "$tmp/t0.json" <<'PY'
import json, sys
t, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert t["peak"] == "tf32" and e["peak"] == "fp32", (t["peak"], e["peak"])
assert abs(t["peak_flops"] - 494.7e12) < 1e6 and abs(e["peak_flops"] - 67e12) < 1e6, (t["peak_flops"], e["peak_flops"])
r = e["busy_s"]["compute"] / t["busy_s"]["compute"]
assert 3 < r <= 494.7 / 67 * (1 + 1e-9), r
assert t["step_s"] < e["step_s"], (t["step_s"], e["step_s"])
PY
check tf32_peak_in_text grep -q "TFLOP/s tf32 peak" "$tmp/t2.txt"

# Faster plans (gen/advise.c): for the LLaMA 2 7B offload plan the advice lists at most three
# changes, fastest first, each faster by 3 % or more and within the declared 80 GiB; one of them keeps
# every parameter on the device. Applying that change to the config gives, from a plain --predict, the
# step the advice stated (the same planner and model, not a second estimate), and the plan then no
# longer lists it. A spec that declares no device memory gets none, and says why.
bin/zgen specs/llama2-7b.yaml --predict --hardware h100-sxm --json -o "$tmp/l" >"$tmp/l.json" 2>/dev/null
check advice_faster_fits $PY - "$tmp/l.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faster"]
assert 1 <= len(f) <= 3, f
steps = [a["step_s"] for a in f]
assert steps == sorted(steps) and all(s <= 0.97 * d["step_s"] for s in steps), (steps, d["step_s"])
assert all(0 < a["device_bytes"] <= 80 * 2**30 for a in f), f
assert any("persistence_threshold" in a["change"] and a["same_bits"] for a in f), f
PY
$PY - "$tmp/l.json" specs/configs/llama_zero3_offload_cpu.json "$tmp/persist.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
a = [a for a in d["faster"] if "persistence_threshold" in a["change"]][0]
p, m = map(int, re.findall(r"threshold: (\d+)", a["change"]))
c = json.load(open(sys.argv[2]))
c["zero_optimization"]["stage3_param_persistence_threshold"] = p
c["zero_optimization"]["stage3_model_persistence_threshold"] = m
json.dump(c, open(sys.argv[3], "w"))
PY
bin/zgen specs/llama2-7b.yaml -c "$tmp/persist.json" --predict --hardware h100-sxm --json -o "$tmp/lp" \
  >"$tmp/lp.json" 2>/dev/null
check advice_step_is_the_changed_plans $PY - "$tmp/l.json" "$tmp/lp.json" <<'PY'
import json, sys
d, q = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a = [a for a in d["faster"] if "persistence_threshold" in a["change"]][0]
assert abs(q["step_s"] - a["step_s"]) <= 1e-5 * a["step_s"], (q["step_s"], a)
assert not any("persistence_threshold" in x["change"] for x in q["faster"]), q["faster"]
PY
bin/zgen specs/llama2-7b.yaml --predict --hardware h100-sxm -o "$tmp/lt" >"$tmp/lt.txt" 2>/dev/null
check advice_in_text grep -q "^faster plans that fit hardware.device_memory 80.00 GiB and host_memory 256.00 GiB" "$tmp/lt.txt"
check advice_in_plan_txt grep -q "^faster plans that fit hardware.device_memory 80.00 GiB and host_memory 256.00 GiB" "$tmp/lt/plan.txt"
check advice_none_without_device_memory grep -q "^faster plans: none found (the spec declares no hardware.device_memory" \
  "$tmp/t2.txt"

bin/zgen specs/tiny.yaml --predict --hardware h900 -o "$tmp/x" >/dev/null 2>"$tmp/e"; rc=$?
check unknown_hardware_exit1 [ "$rc" = 1 ]
check unknown_hardware_names_builtins grep -q "h100-sxm, h100-pcie, a100-80gb, h200, gh200, host" "$tmp/e"
bin/zgen specs/tiny.yaml --hardware host -o "$tmp/x" >/dev/null 2>&1; rc=$?
check hardware_needs_predict_exit2 [ "$rc" = 2 ]
zt_end
