#!/usr/bin/python3
"""torch_gpt2.py - the PyTorch reference for zgen's GPT-2: the oracle of the parity tests.

The model is written functionally over a dict of tensors with the Hugging Face GPT-2 names and
layouts (linear weights [in, out]), fp32, so weights and gradients go in and out of safetensors
files name for name. Batches follow docs/SPEC.md: at step s, sequence j is the T+1 tokens at offset
((s*B + j)*T) mod (ntok - T - 1); inputs are the first T, targets the last T.

Commands (each prints what it wrote):
  init     random weights:  --V --C --NH --L --ctx [--F] [--seed] [--perturb] --out W.safetensors
  tokens   random tokens:   --V --n [--seed] [--format llmc|raw] --out FILE
  grad     one forward+backward of step 0: --weights --tokens --NH --B --T --out G.safetensors
           (every gradient under its parameter's name, plus "loss" of shape [1])
  train    N AdamW steps with DeepSpeed semantics: --weights --tokens --NH --B --T --steps --lr
           [--wd] [--clip] [--beta1] [--beta2] [--eps] [--out LOSSES.jsonl] [--export W.safetensors]
  compare  --ref R.safetensors --got G.safetensors [--loss-rtol] [--grad-rtol]: per tensor
           ||got - ref|| / ||ref|| and max |got - ref|; exit 1 when over the tolerance.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

BLOCK = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
         "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
         "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]


def param_names(L):
    names = ["wte.weight", "wpe.weight"]
    for i in range(L):
        names += [f"h.{i}.{n}" for n in BLOCK]
    return names + ["ln_f.weight", "ln_f.bias"]


def n_layers(names):
    return len({n.split(".")[1] for n in names if n.startswith("h.")})


# ------------------------------------------------------------------------------------- data
def read_tokens(path):
    """llm.c format (256 int32 header: magic 20240520, version 1, count; uint16 tokens) or raw
    uint16, told apart by the magic."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size >= 1024:
        head = raw[:1024].view("<i4")
        if head[0] == 20240520:
            if head[1] != 1:
                raise SystemExit(f"{path}: llm.c token file version {head[1]}, expected 1")
            n = int(head[2])
            return raw[1024:1024 + 2 * n].view("<u2").astype(np.int64)
    return raw[:raw.size // 2 * 2].view("<u2").astype(np.int64)


def batch(tokens, step, B, T):
    span = tokens.size - T - 1
    if span <= 0:
        raise SystemExit(f"token file too short: {tokens.size} tokens for seq_len {T}")
    rows = [tokens[((step * B + j) * T) % span:][:T + 1] for j in range(B)]
    x = np.stack([r[:T] for r in rows])
    y = np.stack([r[1:] for r in rows])
    return x, y


# ------------------------------------------------------------------------------------- model
def forward(torch, P, idx, targets, NH, L, eps=1e-5):
    F = torch.nn.functional
    B, T = idx.shape
    C = P["wte.weight"].shape[1]
    hs = C // NH
    x = P["wte.weight"][idx] + P["wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(L):
        p = lambda n: P[f"h.{i}.{n}"]  # noqa: E731
        h = F.layer_norm(x, (C,), p("ln_1.weight"), p("ln_1.bias"), eps)
        qkv = h @ p("attn.c_attn.weight") + p("attn.c_attn.bias")
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        h = F.layer_norm(x, (C,), p("ln_2.weight"), p("ln_2.bias"), eps)
        h = F.gelu(h @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias"), approximate="tanh")
        x = x + h @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    x = F.layer_norm(x, (C,), P["ln_f.weight"], P["ln_f.bias"], eps)
    logits = x @ P["wte.weight"].t()
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def load_params(torch, path):
    arrays, _ = safetensors_io.load(path)
    names = param_names(n_layers(arrays))
    missing = [n for n in names if n not in arrays]
    if missing:
        raise SystemExit(f"{path}: missing tensors {missing[:4]}")
    return {n: torch.tensor(arrays[n], dtype=torch.float32, requires_grad=True) for n in names}


def setup_torch():
    import torch
    torch.set_num_threads(2)
    return torch


# ------------------------------------------------------------------------------------- commands
def cmd_init(a):
    rng = np.random.default_rng(a.seed)
    F = a.F or 4 * a.C
    shapes = {"wte.weight": (a.V, a.C), "wpe.weight": (a.ctx, a.C), "ln_f.weight": (a.C,),
              "ln_f.bias": (a.C,)}
    blk = dict(zip(BLOCK, [(a.C,), (a.C,), (a.C, 3 * a.C), (3 * a.C,), (a.C, a.C), (a.C,), (a.C,),
                           (a.C,), (a.C, F), (F,), (F, a.C), (a.C,)]))
    out = {}
    for n in param_names(a.L):
        shape = shapes.get(n) or blk[n.split(".", 2)[2]]
        if n.endswith("ln_1.weight") or n.endswith("ln_2.weight") or n == "ln_f.weight":
            w = np.ones(shape)
        elif len(shape) == 1:
            w = np.zeros(shape)
        else:
            std = 0.02 / math.sqrt(2 * a.L) if n.endswith("c_proj.weight") else 0.02
            w = rng.normal(0.0, std, shape)
        if a.perturb:
            w = w + rng.normal(0.0, a.perturb, shape)
        out[n] = w.astype(np.float32)
    safetensors_io.save(a.out, out, {"format": "pt"})
    print(f"wrote {a.out}: {sum(v.size for v in out.values())} parameters")


def cmd_tokens(a):
    rng = np.random.default_rng(a.seed)
    toks = rng.integers(0, a.V, size=a.n).astype("<u2")
    with open(a.out, "wb") as f:
        if a.format == "llmc":
            head = np.zeros(256, dtype="<i4")
            head[:3] = [20240520, 1, a.n]
            f.write(head.tobytes())
        f.write(toks.tobytes())
    print(f"wrote {a.out}: {a.n} tokens ({a.format})")


def cmd_grad(a):
    torch = setup_torch()
    P = load_params(torch, a.weights)
    x, y = batch(read_tokens(a.tokens), 0, a.B, a.T)
    loss = forward(torch, P, torch.tensor(x), torch.tensor(y), a.NH, n_layers(P))
    loss.backward()
    out = {"loss": np.array([loss.item()], dtype=np.float32)}
    out.update({n: p.grad.numpy() for n, p in P.items()})
    safetensors_io.save(a.out, out)
    print(f"wrote {a.out}: loss {loss.item():.9g}")


def adamw_step(torch, P, m, v, t, lr, beta1, beta2, eps, wd, clip):
    """One optimizer step with DeepSpeed's semantics on the gradients in P (torch_llama uses it too):
    the global norm in float64, clipping by clip = (norm + 1e-6) / clip_grad when above 1, then
    AdamW with decoupled weight decay on matrices, applied first (adam_w_mode). Returns the norm."""
    with torch.no_grad():
        norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in P.values()))
        if clip > 0 and (norm + 1e-6) / clip > 1:
            coef = clip / (norm + 1e-6)
            for p in P.values():
                p.grad.mul_(coef)
        bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        for n, p in P.items():
            g = p.grad
            if wd and p.dim() >= 2:
                p.mul_(1 - lr * wd)
            m[n].mul_(beta1).add_(g, alpha=1 - beta1)
            v[n].mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = v[n].sqrt() / math.sqrt(bc2) + eps
            p.addcdiv_(m[n], denom, value=-lr / bc1)
    return norm


def cmd_train(a):
    torch = setup_torch()
    P = load_params(torch, a.weights)
    L = n_layers(P)
    toks = read_tokens(a.tokens)
    m = {n: torch.zeros_like(p) for n, p in P.items()}
    v = {n: torch.zeros_like(p) for n, p in P.items()}
    log = open(a.out, "w") if a.out else sys.stdout
    for step in range(a.steps):
        x, y = batch(toks, step, a.B, a.T)
        for p in P.values():
            p.grad = None
        loss = forward(torch, P, torch.tensor(x), torch.tensor(y), a.NH, L)
        loss.backward()
        t = step + 1
        norm = adamw_step(torch, P, m, v, t, a.lr, a.beta1, a.beta2, a.eps, a.wd, a.clip)
        print(json.dumps({"step": t, "loss": loss.item(), "grad_norm": norm, "lr": a.lr}),
              file=log, flush=True)
    if a.export:
        safetensors_io.save(a.export, {n: p.detach().numpy() for n, p in P.items()},
                            {"format": "pt"})


def cmd_compare(a):
    ref, _ = safetensors_io.load(a.ref)
    got, _ = safetensors_io.load(a.got)
    passed = failed = 0
    for n, r in ref.items():
        if n not in got or got[n].shape != r.shape:
            print(f"{n} ... FAIL (missing or shape {got[n].shape if n in got else None})")
            failed += 1
            continue
        r64, g64 = r.astype(np.float64), got[n].astype(np.float64)
        diff = np.abs(g64 - r64)
        nr = np.linalg.norm(r64)
        rel = np.linalg.norm(g64 - r64) / nr if nr > 0 else np.linalg.norm(g64)
        tol = a.loss_rtol if n == "loss" else a.grad_rtol
        ok = rel <= tol
        passed, failed = passed + ok, failed + (not ok)
        print(f"{n} ... {'ok' if ok else 'FAIL'} (rel {rel:.3g}, max |diff| {diff.max():.3g}, "
              f"norm {nr:.4g})")
    print(f"{passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("init")
    for k in ("V", "C", "NH", "L", "ctx"):
        s.add_argument("--" + k, type=int, required=True)
    s.add_argument("--F", type=int, default=0)
    s.add_argument("--seed", type=int, default=1234)
    s.add_argument("--perturb", type=float, default=0.0,
                   help="add normal(0, PERTURB) to every tensor (non-trivial gains and biases)")
    s.add_argument("--out", required=True)
    s = sub.add_parser("tokens")
    s.add_argument("--V", type=int, required=True)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--format", choices=["llmc", "raw"], default="llmc")
    s.add_argument("--out", required=True)
    for name in ("grad", "train"):
        s = sub.add_parser(name)
        s.add_argument("--weights", required=True)
        s.add_argument("--tokens", required=True)
        s.add_argument("--NH", type=int, required=True)
        s.add_argument("--B", type=int, required=True)
        s.add_argument("--T", type=int, required=True)
        s.add_argument("--out", required=(name == "grad"))
        if name == "train":
            s.add_argument("--steps", type=int, default=10)
            s.add_argument("--lr", type=float, default=1e-3)
            s.add_argument("--wd", type=float, default=0.0)
            s.add_argument("--clip", type=float, default=1.0)
            s.add_argument("--beta1", type=float, default=0.9)
            s.add_argument("--beta2", type=float, default=0.999)
            s.add_argument("--eps", type=float, default=1e-8)
            s.add_argument("--export", default="")
    s = sub.add_parser("compare")
    s.add_argument("--ref", required=True)
    s.add_argument("--got", required=True)
    s.add_argument("--loss-rtol", type=float, default=1e-5)
    s.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    return {"init": cmd_init, "tokens": cmd_tokens, "grad": cmd_grad, "train": cmd_train,
            "compare": cmd_compare}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
