#!/usr/bin/env python3
"""torch_llama.py — a LLaMA reference in plain PyTorch (float64), written from Hugging Face's
LlamaForCausalLM (modeling_llama.py: LlamaRMSNorm, rotate_half / apply_rotary_pos_emb, repeat_kv,
eager causal attention, LlamaMLP, _compute_llama3_parameters), used as the oracle of the host llama
kernels (t_llama_kernels.sh) and of the emitted llama trainer (t_llama_train_parity.sh).

  torch_llama.py run --x BIN --V .. --C .. --NH .. --NKV .. --F .. --L .. --B .. --T ..
                     [--theta X] [--llama3 FACTOR LOW HIGH ORIG] [--tied] [--seed S] [--docs]
builds random weights (norm gains perturbed around 1) and a batch with one ignored target, writes
the case for BIN (x_llama_kernels), runs it, and compares: the loss within --loss-rtol relative,
every gradient within --grad-rtol of its norm (||g_c - g_t|| / ||g_t||). Prints one line per
tensor and ends with "N passed, N failed". --docs cuts each row into documents (docs/DATA.md): one
of length 1, others longer, and a padding document at the end of the first row; the reference
takes position ids restarting at each document and a block-causal mask, with no target across a
boundary or in the padding.

The trainer's oracle, over safetensors files with the Hugging Face names (batches as docs/SPEC.md and
torch_gpt2.py: step s, sequence j = the T+1 tokens at ((s*B + j)*T) mod (ntok - T - 1)):
  torch_llama.py init  --V --C --NH --NKV --F --L [--tied] [--seed] [--perturb] --out W.safetensors
  torch_llama.py grad  --weights W --tokens TOK --NH --NKV --B --T [rope flags] --out G.safetensors
                       (every gradient under its parameter's name, plus "loss" of shape [1])
  torch_llama.py train --weights W --tokens TOK --NH --NKV --B --T [rope flags] --steps --lr [--wd]
                       [--clip] --out LOSSES.jsonl   (AdamW with DeepSpeed's semantics)
Rope flags: [--theta X] [--llama3 FACTOR LOW HIGH ORIG] [--eps]. tie_embeddings is read from the
weights: no lm_head.weight means the head reads model.embed_tokens.weight; so are Qwen2's q, k, v
biases (init --qkv-bias writes them, zeros before --perturb; Qwen2ForCausalLM adds them before RoPE).
"""
import argparse, json, math, os, struct, subprocess, sys, tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch_gpt2  # noqa: E402  (the token files and the batch order)

torch.set_default_dtype(torch.float64)


def inv_freq(hs, theta, llama3):
    # fp32 as Hugging Face's default rope init, then LLaMA 3's wavelength-dependent scaling
    f = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.int64).float() / hs))
    if llama3:
        factor, low, high, orig = llama3
        low_wavelen, high_wavelen = orig / low, orig / high
        wavelen = 2 * math.pi / f
        scaled = torch.where(wavelen > low_wavelen, f / factor, f)
        smooth = (orig / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        f = torch.where(medium, smoothed, scaled)
    return f.float()


def rope_tables(T, hs, theta, llama3):
    f = inv_freq(hs, theta, llama3)
    ang = (f[None, :] * torch.arange(T, dtype=torch.float32)[:, None])   # fp32 as HF
    ang = torch.cat([ang, ang], dim=-1).double()
    return ang.cos(), ang.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def forward(p, tok, tgt, a, pos=None):
    B, T = tok.shape
    hs, rep = a.C // a.NH, a.NH // a.NKV
    qkv_bias = getattr(a, "qkv_bias", False)
    cos, sin = rope_tables(T, hs, a.theta, a.llama3)
    x = p["model.embed_tokens.weight"][tok]
    mask = torch.full((T, T), float("-inf")).triu(1)
    if pos is not None:     # HF's position_ids and a mask that keeps each query inside its document
        cos, sin = cos[pos][:, None], sin[pos][:, None]
        t = torch.arange(T)
        start = t[None, :] - pos                                   # (B, T) each query's first key
        ok = (t[None, None, :] <= t[None, :, None]) & (t[None, None, :] >= start[:, :, None])
        mask = torch.zeros(B, 1, T, T, dtype=torch.float64).masked_fill(~ok[:, None], float("-inf"))
    for l in range(a.L):
        g = lambda n: p[f"model.layers.{l}.{n}"]
        h = rms_norm(x, g("input_layernorm.weight"), a.eps)
        # Qwen2's q, k, v biases (Qwen2Attention: nn.Linear(bias=True)), added before the rotation
        lin = lambda n: h @ g(n + ".weight").T + (g(n + ".bias") if qkv_bias else 0.0)
        q = lin("self_attn.q_proj").view(B, T, a.NH, hs).transpose(1, 2)
        k = lin("self_attn.k_proj").view(B, T, a.NKV, hs).transpose(1, 2)
        v = lin("self_attn.v_proj").view(B, T, a.NKV, hs).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(rep, dim=1)      # repeat_kv: query head h reads kv head h // rep
        v = v.repeat_interleave(rep, dim=1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hs) + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, a.C)
        x = x + y @ g("self_attn.o_proj.weight").T
        h = rms_norm(x, g("post_attention_layernorm.weight"), a.eps)
        m = torch.nn.functional.silu(h @ g("mlp.gate_proj.weight").T) * (h @ g("mlp.up_proj.weight").T)
        x = x + m @ g("mlp.down_proj.weight").T
    x = rms_norm(x, p["model.norm.weight"], a.eps)
    head = p["model.embed_tokens.weight"] if a.tied else p["lm_head.weight"]
    logits = x @ head.T
    return torch.nn.functional.cross_entropy(logits.view(-1, a.V), tgt.view(-1), ignore_index=-1)


def names(a):
    kv = a.NKV * (a.C // a.NH)
    out = [("model.embed_tokens.weight", (a.V, a.C))]
    for l in range(a.L):
        pre = f"model.layers.{l}."
        out += [(pre + "input_layernorm.weight", (a.C,)), (pre + "self_attn.q_proj.weight", (a.C, a.C))]
        if getattr(a, "qkv_bias", False):
            out.append((pre + "self_attn.q_proj.bias", (a.C,)))
        out.append((pre + "self_attn.k_proj.weight", (kv, a.C)))
        if getattr(a, "qkv_bias", False):
            out.append((pre + "self_attn.k_proj.bias", (kv,)))
        out.append((pre + "self_attn.v_proj.weight", (kv, a.C)))
        if getattr(a, "qkv_bias", False):
            out.append((pre + "self_attn.v_proj.bias", (kv,)))
        out += [(pre + "self_attn.o_proj.weight", (a.C, a.C)), (pre + "post_attention_layernorm.weight", (a.C,)),
                (pre + "mlp.gate_proj.weight", (a.F, a.C)), (pre + "mlp.up_proj.weight", (a.F, a.C)),
                (pre + "mlp.down_proj.weight", (a.C, a.F))]
    out.append(("model.norm.weight", (a.C,)))
    if not a.tied:
        out.append(("lm_head.weight", (a.V, a.C)))
    return out


# ------------------------------------------------------------------------------------- trainer oracle
def model_args(a, arrays):
    """The shape of the model in the weights (V, C, F, L, tied) with the command's heads and rope."""
    V, C = arrays["model.embed_tokens.weight"].shape
    L = len({n.split(".")[2] for n in arrays if n.startswith("model.layers.")})
    F = arrays["model.layers.0.mlp.gate_proj.weight"].shape[0] if L else 4 * C
    return argparse.Namespace(V=V, C=C, F=F, L=L, NH=a.NH, NKV=a.NKV, eps=a.eps, theta=a.theta,
                              llama3=tuple(a.llama3) if a.llama3 else None,
                              tied="lm_head.weight" not in arrays,
                              qkv_bias="model.layers.0.self_attn.q_proj.bias" in arrays)


def load_params(path, a):
    arrays, _ = safetensors_io.load(path)
    m = model_args(a, arrays)
    want = names(m)
    missing = [n for n, _ in want if n not in arrays]
    if missing:
        raise SystemExit(f"{path}: missing tensors {missing[:4]}")
    P = {n: torch.tensor(arrays[n].astype(np.float64), requires_grad=True) for n, _ in want}
    return P, m


def cmd_init(a):
    rng = np.random.default_rng(a.seed)
    out = {}
    for n, shape in names(a):
        if n.endswith(".bias"):
            w = np.zeros(shape)
        elif len(shape) == 1:
            w = np.ones(shape)
        else:
            std = 0.02 / math.sqrt(2 * a.L) if n.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
            w = rng.normal(0.0, std, shape)
        if a.perturb:
            w = w + rng.normal(0.0, a.perturb, shape)
        out[n] = w.astype(np.float32)
    safetensors_io.save(a.out, out, {"format": "pt"})
    print(f"wrote {a.out}: {sum(v.size for v in out.values())} parameters")


def cmd_grad(a):
    P, m = load_params(a.weights, a)
    x, y = torch_gpt2.batch(torch_gpt2.read_tokens(a.tokens), 0, a.B, a.T)
    loss = forward(P, torch.tensor(x), torch.tensor(y), m)
    loss.backward()
    out = {"loss": np.array([loss.item()], dtype=np.float32)}
    out.update({n: p.grad.numpy().astype(np.float32) for n, p in P.items()})
    safetensors_io.save(a.out, out)
    print(f"wrote {a.out}: loss {loss.item():.9g}")


def cmd_train(a):
    P, mo = load_params(a.weights, a)
    toks = torch_gpt2.read_tokens(a.tokens)
    m = {n: torch.zeros_like(p) for n, p in P.items()}
    v = {n: torch.zeros_like(p) for n, p in P.items()}
    log = open(a.out, "w") if a.out else sys.stdout
    for step in range(a.steps):
        x, y = torch_gpt2.batch(toks, step, a.B, a.T)
        for p in P.values():
            p.grad = None
        loss = forward(P, torch.tensor(x), torch.tensor(y), mo)
        loss.backward()
        t = step + 1
        norm = torch_gpt2.adamw_step(torch, P, m, v, t, a.lr, a.beta1, a.beta2, a.eps_adam, a.wd, a.clip)
        print(json.dumps({"step": t, "loss": loss.item(), "grad_norm": norm, "lr": a.lr}),
              file=log, flush=True)


def trainer_main(argv):
    ap = argparse.ArgumentParser(description="the llama trainer's PyTorch oracle")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("init")
    for k in ["V", "C", "NH", "NKV", "F", "L"]:
        s.add_argument("--" + k, type=int, required=True)
    s.add_argument("--tied", action="store_true")
    s.add_argument("--qkv-bias", action="store_true", help="Qwen2's q, k, v biases")
    s.add_argument("--seed", type=int, default=1234)
    s.add_argument("--perturb", type=float, default=0.0,
                   help="add normal(0, PERTURB) to every tensor (non-trivial gains)")
    s.add_argument("--out", required=True)
    for name in ("grad", "train"):
        s = sub.add_parser(name)
        s.add_argument("--weights", required=True)
        s.add_argument("--tokens", required=True)
        for k in ["NH", "NKV", "B", "T"]:
            s.add_argument("--" + k, type=int, required=True)
        s.add_argument("--theta", type=float, default=10000.0)
        s.add_argument("--llama3", type=float, nargs=4, default=None)
        s.add_argument("--eps", type=float, default=1e-5)
        s.add_argument("--out", required=(name == "grad"))
        if name == "train":
            s.add_argument("--steps", type=int, default=10)
            s.add_argument("--lr", type=float, default=1e-3)
            s.add_argument("--wd", type=float, default=0.0)
            s.add_argument("--clip", type=float, default=1.0)
            s.add_argument("--beta1", type=float, default=0.9)
            s.add_argument("--beta2", type=float, default=0.999)
            s.add_argument("--eps-adam", type=float, default=1e-8)
    a = ap.parse_args(argv)
    torch.set_num_threads(2)
    return {"init": cmd_init, "grad": cmd_grad, "train": cmd_train}[a.cmd](a) or 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("init", "grad", "train"):
        return trainer_main(sys.argv[1:])
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("--x", required=True)
    for k in ["V", "C", "NH", "NKV", "F", "L", "B", "T"]:
        ap.add_argument("--" + k, type=int, required=True)
    ap.add_argument("--theta", type=float, default=10000.0)
    ap.add_argument("--host-theta", type=float, default=None, help="negative control: another base for the host")
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--llama3", type=float, nargs=4, default=None)
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("--host-no-docs", action="store_true", help="negative control: the host sees no documents")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    p = {}
    for n, shape in names(a):
        if len(shape) == 1:
            w = 1.0 + 0.3 * rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) * (0.5 / math.sqrt(shape[1]))
            if "embed" in n:
                w = rng.standard_normal(shape)
        p[n] = torch.tensor(w.astype(np.float32).astype(np.float64), requires_grad=True)
    tok = rng.integers(0, a.V, size=(a.B, a.T)).astype(np.int32)
    tgt = rng.integers(0, a.V, size=(a.B, a.T)).astype(np.int32)
    tgt[0, a.T // 2] = -1
    pos = None
    if a.docs:
        pos = np.zeros((a.B, a.T), np.int32)
        for b in range(a.B):
            # documents of lengths 1, 3, then the rest in pieces of 4; row 0 ends in 3 tokens of padding
            cuts, t = [0, 1, 4], 4
            while t + 4 < a.T:
                t += 4
                cuts.append(t)
            if b == 0 and a.T - 3 > cuts[-1]:
                cuts.append(a.T - 3)
            for c0, c1 in zip(cuts, cuts[1:] + [a.T]):
                pos[b, c0:c1] = np.arange(c1 - c0)
                tgt[b, c1 - 1] = -1                  # a document's last token predicts nothing
            if b == 0:
                tgt[0, a.T - 3:] = -1                # the padding trains nothing
    with tempfile.TemporaryDirectory() as d:
        fin, fout = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        l3 = a.llama3 or [1.0, 1.0, 2.0, 1.0]
        with open(fin, "wb") as f:
            f.write(struct.pack("<16i", a.V, a.C, a.NH, a.NKV, a.F, a.L, a.B, a.T, 1 if a.llama3 else 0,
                                int(l3[3]), 1 if a.tied else 0, 1 if a.docs and not a.host_no_docs else 0,
                                0, 0, 0, 0))
            f.write(struct.pack("<5d", a.eps, a.host_theta or a.theta, l3[0], l3[1], l3[2]))
            f.write(tok.tobytes())
            f.write(tgt.tobytes())
            if pos is not None and not a.host_no_docs:
                f.write(pos.tobytes())
            for n, _ in names(a):
                f.write(p[n].detach().numpy().astype(np.float32).tobytes())
        r = subprocess.run([a.x, fin, fout], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            print("0 passed, 1 failed")
            return 1
        raw = open(fout, "rb").read()
    got_loss = struct.unpack("<d", raw[:8])[0]
    got = np.frombuffer(raw[8:], dtype=np.float32)
    a.llama3 = tuple(a.llama3) if a.llama3 else None
    loss = forward(p, torch.tensor(tok, dtype=torch.int64), torch.tensor(tgt, dtype=torch.int64), a,
                   None if pos is None else torch.tensor(pos, dtype=torch.int64))
    loss.backward()
    passed = failed = 0
    rel = abs(got_loss - loss.item()) / abs(loss.item())
    ok = rel <= a.loss_rtol
    print(f"loss {loss.item():.8f} host {got_loss:.8f} rel {rel:.2e} {'ok' if ok else 'FAIL'}")
    passed, failed = passed + ok, failed + (not ok)
    off = 0
    for n, shape in names(a):
        cnt = int(np.prod(shape))
        gh = torch.tensor(got[off:off + cnt].astype(np.float64)).view(shape)
        off += cnt
        gt = p[n].grad
        r = ((gh - gt).norm() / gt.norm()).item()
        ok = r <= a.grad_rtol
        print(f"{n} rel {r:.2e} max {(gh - gt).abs().max().item():.2e} {'ok' if ok else 'FAIL'}")
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
