"""Compares one trainer run with PyTorch's reference, for the parity tests (t_train_parity.sh,
t_llama_train_parity.sh): the step-1 loss (1e-5 relative), every dumped gradient (1e-4 of its norm),
and the losses of 10 AdamW steps (1e-4 relative). The bounds are the parity tests' stated ones.

usage: parity_check.py REF_DIR RUN_DIR NAME
REF_DIR holds torch's ref_grad.safetensors (with "loss") and ref_losses.jsonl; RUN_DIR the trainer's
grad.safetensors (--dump-grads), l1.jsonl (1 step) and l10.jsonl (10 steps). Exit 0 when all match.
"""
import json
import sys

import numpy as np

import safetensors_io


def main(ref_dir, run_dir, name):
    ref, _ = safetensors_io.load(f"{ref_dir}/ref_grad.safetensors")
    got, _ = safetensors_io.load(f"{run_dir}/grad.safetensors")
    l1 = [json.loads(x) for x in open(f"{run_dir}/l1.jsonl")]
    rl = float(ref["loss"][0])
    gl = l1[0]["loss"]
    bad = 0
    rel = abs(gl - rl) / abs(rl)
    print(f"# {name}: step-1 loss {gl:.9g} torch {rl:.9g} rel {rel:.2e}")
    if rel > 1e-5:
        bad += 1
        print(f"# {name}: loss over 1e-5")
    worst = ("", 0.0)
    for n, r in ref.items():
        if n == "loss":
            continue
        if n not in got or got[n].shape != r.shape:
            print(f"# {name}: gradient {n} missing or misshapen")
            bad += 1
            continue
        r64 = r.astype(np.float64)
        g64 = got[n].astype(np.float64)
        e = np.linalg.norm(g64 - r64) / max(np.linalg.norm(r64), 1e-30)
        if e > worst[1]:
            worst = (n, e)
        if e > 1e-4:
            print(f"# {name}: gradient {n} rel {e:.2e} over 1e-4")
            bad += 1
    extra = sorted(set(got) - set(ref))
    if extra:
        print(f"# {name}: gradients torch does not have: {extra[:4]}")
        bad += 1
    print(f"# {name}: {len(ref) - 1} gradients, worst {worst[0]} rel {worst[1]:.2e}")
    rt = [json.loads(x)["loss"] for x in open(f"{ref_dir}/ref_losses.jsonl")]
    gt = [json.loads(x)["loss"] for x in open(f"{run_dir}/l10.jsonl")]
    if len(gt) != 10:
        print(f"# {name}: {len(gt)} losses logged, expected 10")
        bad += 1
    w = max(abs(a - b) / abs(b) for a, b in zip(gt, rt))
    print(f"# {name}: 10 AdamW steps, losses {gt[0]:.6f} -> {gt[-1]:.6f} (torch {rt[-1]:.6f}), "
          f"worst rel {w:.2e}")
    if w > 1e-4:
        bad += 1
    if abs(rt[-1] - rt[0]) < 1e-3:
        print(f"# {name}: torch loss did not move: test is blind")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
