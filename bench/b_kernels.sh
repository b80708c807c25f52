#!/usr/bin/env bash
# b_kernels.sh — the host kernels (templates/host/) against PyTorch CPU on the same GPT-2: one
# forward + backward of a micro-batch (no optimizer: the trainer-level figure is DRIVER's), in
# tokens/s, with the same thread count. Model: 6 layers, d_model 384, 6 heads, d_ff 1536, seq 256,
# batch 8, vocab $ZB_VOCAB (default 256). The kernels are built as the emitted trainer builds them
# (-O3 -march=native -fopenmp, OpenBLAS). The kernels run with OMP_WAIT_POLICY=PASSIVE (the safe
# setting on this shared machine: spinning workers collapse when other jobs hold the cores).
# PyTorch gets its best setting: each pair runs it with OMP_WAIT_POLICY=PASSIVE and unset and the
# peer of the pair is the faster of the two (ZB_PEER_WAIT=PASSIVE or unset runs only that one).
# Runs alternate (kernels, torch...) ZB_PAIRS times (default 3); each run reports its best of 5
# iterations after a warm-up; the figure is the median of the pair-by-pair ratios.
# Built here with cc rather than through bin/bench/ because the bench link rule has no -lopenblas.
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
THREADS=${ZB_THREADS:-2} V=${ZB_VOCAB:-256} PAIRS=${ZB_PAIRS:-3} PEER_WAIT=${ZB_PEER_WAIT:-best}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/kb.c" <<'CEOF'
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "zk_host.h"
/* fwd+bwd of one micro-batch through the module API; prints the best tokens/s of 3 iterations */
int main(int argc, char **argv)
{
    ZkDims d = {.B = 8, .T = 256, .C = 384, .NH = 6, .F = 1536, .V = atoi(argv[1]), .L = 6,
                .eps = 1e-5f};
    zk_threads_init(atoi(argv[2]));
    int BT = d.B * d.T, C = d.C, F = d.F;
    size_t nb[12] = {C, C, 3 * (size_t)C * C, 3 * C, (size_t)C * C, C, C, C, (size_t)C * F, F,
                     (size_t)F * C, C}, blk = 0;
    for (int k = 0; k < 12; k++) blk += nb[k];
    size_t np = (size_t)d.V * C + (size_t)d.T * C + d.L * blk + 2 * C;
    float *P = malloc(np * 4), *G = calloc(np, 4);
    for (size_t i = 0; i < np; i++) P[i] = 0.02f * ((float)rand() / RAND_MAX - 0.5f);
    float *wte = P, *wpe = P + (size_t)d.V * C, *lnf = wpe + (size_t)d.T * C + d.L * blk;
    float *dwte = G, *dwpe = G + (size_t)d.V * C, *dlnf = dwpe + (size_t)d.T * C + d.L * blk;
    ZkBlockParams bp[6];
    ZkBlockGrads bg[6];
    for (int l = 0; l < d.L; l++) {
        const float **p = (const float **)&bp[l];
        float **g = (float **)&bg[l];
        size_t o = (size_t)d.V * C + (size_t)d.T * C + l * blk;
        for (int k = 0; k < 12; k++) p[k] = P + o, g[k] = G + o, o += nb[k];
    }
    float *acts = calloc(zk_acts_floats(&d), 4), *scr = calloc(zk_scratch_floats(&d), 4);
    ZkActs a;
    zk_acts_carve(&d, acts, scr, &a);
    int *tok = malloc(BT * sizeof(int)), *tgt = malloc(BT * sizeof(int));
    for (int i = 0; i < BT; i++) tok[i] = rand() % d.V, tgt[i] = rand() % d.V;
    double best = 1e30;
    for (int it = 0; it < 6; it++) {
        double t0 = omp_get_wtime();
        zk_embed_forward(&d, tok, wte, wpe, &a);
        for (int l = 0; l < d.L; l++) zk_block_forward(&d, l, &bp[l], &a);
        zk_final_norm_forward(&d, lnf, lnf + C, &a);
        zk_head_forward(&d, wte, tgt, &a, NULL);
        zk_head_backward(&d, wte, dwte, tgt, &a, 1.0f / BT);
        zk_final_norm_backward(&d, lnf, dlnf, dlnf + C, &a);
        for (int l = d.L - 1; l >= 0; l--) zk_block_backward(&d, l, &bp[l], &bg[l], &a);
        zk_embed_backward(&d, tok, dwte, dwpe, &a);
        double t = omp_get_wtime() - t0;
        if (it > 0 && t < best) best = t;
    }
    printf("%.1f\n", BT / best);
    return 0;
}
CEOF
cat >"$tmp/tb.py" <<'PYEOF'
import sys, time
sys.path.insert(0, "tests/trainer")
import numpy as np, torch
import torch_gpt2
V, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
C, NH, L, T, B = 384, 6, 6, 256, 8
rng = np.random.default_rng(0)
blk = dict(zip(torch_gpt2.BLOCK, [(C,), (C,), (C, 3*C), (3*C,), (C, C), (C,), (C,), (C,),
                                  (C, 4*C), (4*C,), (4*C, C), (C,)]))
shapes = {"wte.weight": (V, C), "wpe.weight": (T, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
P = {n: torch.tensor(rng.normal(0, 0.02, shapes.get(n) or blk[n.split(".", 2)[2]]).astype(np.float32),
                     requires_grad=True) for n in torch_gpt2.param_names(L)}
x = torch.tensor(rng.integers(0, V, (B, T)))
y = torch.tensor(rng.integers(0, V, (B, T)))
best = 1e30
for it in range(6):
    t0 = time.perf_counter()
    torch_gpt2.forward(torch, P, x, y, NH, L).backward()
    t = time.perf_counter() - t0
    if it > 0:
        best = min(best, t)
print(f"{B * T / best:.1f}")
PYEOF
if ! cc -std=c11 -O3 -march=native -fno-math-errno -fopenmp -D_GNU_SOURCE -Itemplates/host \
     -o "$tmp/kb" "$tmp/kb.c" templates/host/zk_host*.c -lopenblas -lm; then
  echo "b_kernels: build failed"; exit 1
fi
# torch_run POLICY: one PyTorch run with OMP_WAIT_POLICY=POLICY ("unset": not in the environment)
torch_run() {
  if [ "$1" = unset ]; then env -u OMP_WAIT_POLICY "$PY" "$tmp/tb.py" "$V" "$THREADS"
  else OMP_WAIT_POLICY=$1 "$PY" "$tmp/tb.py" "$V" "$THREADS"; fi
}
policies=(PASSIVE unset)
[ "$PEER_WAIT" != best ] && policies=("$PEER_WAIT")
ours=(); theirs=(); ratios=(); wins=()
for i in $(seq "$PAIRS"); do
  o=$(OMP_WAIT_POLICY=PASSIVE "$tmp/kb" "$V" "$THREADS") || exit 1
  t=0; w=; line=
  for pol in "${policies[@]}"; do
    x=$(torch_run "$pol") || exit 1
    line+=" torch[$pol] $x"
    if "$PY" -c "import sys; sys.exit(not $x > $t)"; then t=$x; w=$pol; fi
  done
  r=$("$PY" -c "print(f'{$o / $t:.4f}')")
  echo "   pair $i: kernels $o tokens/s,$line tokens/s, ratio $r (peer: $w)"
  ours+=("$o"); theirs+=("$t"); ratios+=("$r"); wins+=("$w")
done
"$PY" - "${ZB_RESULTS:-}" "$THREADS" "$V" "${ours[*]}" "${theirs[*]}" "${ratios[*]}" "${wins[*]}" <<'PYEOF'
import json, statistics, sys
out, threads, V = sys.argv[1], sys.argv[2], sys.argv[3]
o, t, r = ([float(x) for x in a.split()] for a in sys.argv[4:7])
wins = {w: sys.argv[7].split().count(w) for w in sorted(set(sys.argv[7].split()))}
row = {"name": f"host kernels fwd+bwd gpt2 L6 d384 h6 T256 B8 V{V}, {threads} threads",
       "value": statistics.median(o), "unit": "tokens/s",
       "peer": f"torch 1.13 CPU fwd+bwd, {threads} threads", "peer_value": statistics.median(t),
       "ratio": statistics.median(r),
       "note": "median of pair-by-pair ratios; best of 5 iterations per run; no optimizer step; "
               "kernels OMP_WAIT_POLICY=PASSIVE; torch: the faster of its runs per pair, "
               "OMP_WAIT_POLICY " + ", ".join(f"{k} faster {n}x" for k, n in wins.items())}
if out:
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
else:
    print("   " + json.dumps(row))
print(f"   kernels {row['value']:.0f} tokens/s, torch {row['peer_value']:.0f} tokens/s, "
      f"ratio {row['ratio']:.2f} (median of {len(r)} pairs)")
PYEOF
