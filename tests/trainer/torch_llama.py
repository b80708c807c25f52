#!/usr/bin/env python3
"""torch_llama.py — a LLaMA reference in plain PyTorch (float64), written from Hugging Face's
LlamaForCausalLM (modeling_llama.py: LlamaRMSNorm, rotate_half / apply_rotary_pos_emb, repeat_kv,
eager causal attention, LlamaMLP, _compute_llama3_parameters), used as the oracle of the host llama
kernels (t_llama_kernels.sh).

  torch_llama.py run --x BIN --V .. --C .. --NH .. --NKV .. --F .. --L .. --B .. --T ..
                     [--theta X] [--llama3 FACTOR LOW HIGH ORIG] [--tied] [--seed S]
builds random weights (norm gains perturbed around 1) and a batch with one ignored target, writes
the case for BIN (x_llama_kernels), runs it, and compares: the loss within --loss-rtol relative,
every gradient within --grad-rtol of its norm (||g_c - g_t|| / ||g_t||). Prints one line per
tensor and ends with "N passed, N failed".
"""
import argparse, math, os, struct, subprocess, sys, tempfile

import numpy as np
import torch

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


def forward(p, tok, tgt, a):
    B, T = tok.shape
    hs, rep = a.C // a.NH, a.NH // a.NKV
    cos, sin = rope_tables(T, hs, a.theta, a.llama3)
    x = p["model.embed_tokens.weight"][tok]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(a.L):
        g = lambda n: p[f"model.layers.{l}.{n}"]
        h = rms_norm(x, g("input_layernorm.weight"), a.eps)
        q = (h @ g("self_attn.q_proj.weight").T).view(B, T, a.NH, hs).transpose(1, 2)
        k = (h @ g("self_attn.k_proj.weight").T).view(B, T, a.NKV, hs).transpose(1, 2)
        v = (h @ g("self_attn.v_proj.weight").T).view(B, T, a.NKV, hs).transpose(1, 2)
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
        out += [(pre + "input_layernorm.weight", (a.C,)), (pre + "self_attn.q_proj.weight", (a.C, a.C)),
                (pre + "self_attn.k_proj.weight", (kv, a.C)), (pre + "self_attn.v_proj.weight", (kv, a.C)),
                (pre + "self_attn.o_proj.weight", (a.C, a.C)), (pre + "post_attention_layernorm.weight", (a.C,)),
                (pre + "mlp.gate_proj.weight", (a.F, a.C)), (pre + "mlp.up_proj.weight", (a.F, a.C)),
                (pre + "mlp.down_proj.weight", (a.C, a.F))]
    out.append(("model.norm.weight", (a.C,)))
    if not a.tied:
        out.append(("lm_head.weight", (a.V, a.C)))
    return out


def main():
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
    with tempfile.TemporaryDirectory() as d:
        fin, fout = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        l3 = a.llama3 or [1.0, 1.0, 2.0, 1.0]
        with open(fin, "wb") as f:
            f.write(struct.pack("<16i", a.V, a.C, a.NH, a.NKV, a.F, a.L, a.B, a.T, 1 if a.llama3 else 0,
                                int(l3[3]), 1 if a.tied else 0, 0, 0, 0, 0, 0))
            f.write(struct.pack("<5d", a.eps, a.host_theta or a.theta, l3[0], l3[1], l3[2]))
            f.write(tok.tobytes())
            f.write(tgt.tobytes())
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
    loss = forward(p, torch.tensor(tok, dtype=torch.int64), torch.tensor(tgt, dtype=torch.int64), a)
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
