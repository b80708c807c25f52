#!/usr/bin/env bash
# b_adam_torch.sh — zr_adam_step against torch.optim.AdamW (Debian's torch 1.13), same size
# (100M fp32 parameters, ZB_ADAM_N to change), 2 threads each, timed alternately: 3 pairs of
# (best of 2 torch steps, best of 2 zr_adam steps in bin/bench/b_adam --time), median of the
# pair-by-pair ratios. torch 1.13 has no fused CPU AdamW; both its single-tensor and foreach
# implementations are timed once and the faster one is the peer. Appends one JSON object to
# $ZB_RESULTS (figure: Mparam/s of zr_adam; target ratio >= 5).
set -u
cd "$(dirname "$0")/.."
[ -x bin/bench/b_adam ] || { echo "b_adam_torch: bin/bench/b_adam not built"; exit 1; }
OMP_NUM_THREADS=2 /usr/bin/python3 - "${ZB_ADAM_N:-100000000}" "${ZB_RESULTS:-/dev/null}" <<'PY'
import json, os, statistics, subprocess, sys, time
import torch
n, out = int(sys.argv[1]), sys.argv[2]
torch.set_num_threads(2)
torch.manual_seed(0)
p = torch.nn.Parameter(torch.randn(n) * 0.5)
p.grad = torch.randn(n) * 0.1

def torch_rate(foreach, steps=2):
    opt = torch.optim.AdamW([p], lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                            foreach=foreach)
    opt.step()                                   # allocates exp_avg / exp_avg_sq
    best = 1e30
    for _ in range(steps):
        t0 = time.perf_counter(); opt.step(); best = min(best, time.perf_counter() - t0)
    del opt
    return n / best / 1e6

def ours():
    env = dict(os.environ, OMP_NUM_THREADS="2", ZB_ADAM_N=str(n))
    r = subprocess.run(["bin/bench/b_adam", "--time", "2"], env=env, capture_output=True,
                       text=True, check=True)
    return float(r.stdout.split()[-1])

rates = {fe: torch_rate(fe, 1) for fe in (False, True)}
fe = max(rates, key=rates.get)
print(f"  torch AdamW single-tensor {rates[False]:.0f}, foreach {rates[True]:.0f} Mparam/s: "
      f"using foreach={fe}")
pairs = []
for i in range(3):
    t = torch_rate(fe); z = ours()
    pairs.append((z, t, z / t))
    print(f"  pair {i}: zr_adam {z:.0f} Mparam/s, torch {t:.0f} Mparam/s, ratio {z / t:.2f}")
med = statistics.median(r for _, _, r in pairs)
zmed = statistics.median(z for z, _, _ in pairs); tmed = statistics.median(t for _, t, _ in pairs)
print(f"cpu adam vs torch.optim.AdamW ({torch.__version__}, 2 threads, {n} params): "
      f"{zmed:.0f} vs {tmed:.0f} Mparam/s, median ratio {med:.2f}")
with open(out, "a") as f:
    f.write(json.dumps({"name": f"cpu_adam_vs_torch_{n // 1000000}M_2threads", "value": round(zmed, 1),
                        "unit": "Mparam/s", "peer": f"torch {torch.__version__} AdamW foreach={fe}",
                        "peer_value": round(tmed, 1), "ratio": round(med, 3),
                        "note": "median of 3 alternating pairs; target >= 5"}) + "\n")
PY
