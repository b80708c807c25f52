"""hf_io.py - the Python side of the Hugging Face folder tests (t_hf_gpt2.sh, t_hf_llama.sh).

Written from the formats, not from zgen's code: the tensor names and shapes of GPT2LMHeadModel and
LlamaForCausalLM, config.json as transformers' config classes read it, safetensors (8-byte header
length, JSON header, data) and the sharded layout of save_pretrained (model-0000K-of-0000N.safetensors
plus model.safetensors.index.json with metadata.total_size and weight_map). torch is the oracle for
bf16 / fp16 rounding (round to nearest even); widening is done with integer bit shifts, not torch.

  hf_io.py write DIR --arch gpt2|llama --V --C --L --NH [--NKV] --F --ctx [--tie 0|1] [--eps]
                    [--theta] [--llama3 F,LO,HI,ORIG] [--dtype fp32|bf16|fp16] [--shards K]
                    [--prefix transformer.] [--extra] [--head-anyway] [--seed S]
      writes a model folder; --extra adds buffers HF checkpoints carry (GPT-2's attn.bias masks,
      llama's rotary inv_freq); --head-anyway writes lm_head.weight for a tied llama
  hf_io.py compare SRC OUT --expect same|widen|bf16
      OUT (an export) against SRC (what was loaded): `same` every value equal, `widen` OUT fp32
      equal to SRC's 16-bit values widened, `bf16` OUT bf16 equal to torch's rounding of SRC fp32
  hf_io.py validate OUT --arch A --V .. (same shape flags) [--dtype D] [--shards K]
      what from_pretrained needs: config.json keys and values, index consistency, every tensor
      of the architecture with its shape, metadata format pt; K = expected shard count (0: any)
  hf_io.py mutate DIR KIND  shape|missing|unexpected|config|index: a damaged copy in place
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

DT = {"F32": (np.float32, 4), "BF16": (np.uint16, 2), "F16": (np.float16, 2)}


# ---------------------------------------------------------------- safetensors files
def read_file(path):
    """{name: (dtype string, shape, raw numpy array)}, metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        np_dt, size = DT[e["dtype"]]
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"])) if e["shape"] else 1
        assert end - b == count * size, f"{path}: {name}: offsets {b}..{end} for {count} x {size}"
        arr = np.frombuffer(data[b:end], dtype=np.dtype(np_dt).newbyteorder("<")).reshape(e["shape"])
        out[name] = (e["dtype"], tuple(e["shape"]), arr.copy())
    return out, meta


def write_file(path, tensors, meta=None):
    """tensors: list of (name, dtype string, numpy array holding that dtype's bits)."""
    header, blobs, off = {}, [], 0
    if meta is not None:
        header["__metadata__"] = meta
    for name, dts, arr in tensors:
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dts, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_folder(d):
    """{name: (dtype, shape, array, file)}, index (or None)."""
    idx_path = os.path.join(d, "model.safetensors.index.json")
    single = os.path.join(d, "model.safetensors")
    out = {}
    if os.path.exists(single):
        files, index = ["model.safetensors"], None
    else:
        index = json.load(open(idx_path))
        files = sorted(set(index["weight_map"].values()))
    for fn in files:
        t, meta = read_file(os.path.join(d, fn))
        assert meta is not None and meta.get("format") == "pt", f"{fn}: metadata {meta} lacks format pt"
        for k, v in t.items():
            assert k not in out, f"{k} in two files"
            out[k] = v + (fn,)
    return out, index


def to_f32(dts, arr):
    """Exact widening by bit manipulation (no torch)."""
    if dts == "F32":
        return arr.astype(np.float32)
    if dts == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.astype(np.float32)           # numpy's fp16 -> fp32 is exact


def from_f32(dts, a):
    """fp32 numpy array -> (dtype string, bits) with torch's rounding."""
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    if dts == "F32":
        return a.astype(np.float32)
    if dts == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    return t.to(torch.float16).numpy()


# ---------------------------------------------------------------- the architectures
def tensors_of(a):
    """[(name, shape)] of the model in Hugging Face order (no transformer. prefix)."""
    C, V, L, F, ctx = a.C, a.V, a.L, a.F, a.ctx
    out = []
    if a.arch == "gpt2":
        out += [("wte.weight", (V, C)), ("wpe.weight", (ctx, C))]
        for i in range(L):
            p = f"h.{i}."
            out += [(p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
                    (p + "attn.c_attn.weight", (C, 3 * C)), (p + "attn.c_attn.bias", (3 * C,)),
                    (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
                    (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
                    (p + "mlp.c_fc.weight", (C, F)), (p + "mlp.c_fc.bias", (F,)),
                    (p + "mlp.c_proj.weight", (F, C)), (p + "mlp.c_proj.bias", (C,))]
        out += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    else:
        kv = a.NKV * (C // a.NH)
        out += [("model.embed_tokens.weight", (V, C))]
        for i in range(L):
            p = f"model.layers.{i}."
            out += [(p + "input_layernorm.weight", (C,)), (p + "self_attn.q_proj.weight", (C, C)),
                    (p + "self_attn.k_proj.weight", (kv, C)), (p + "self_attn.v_proj.weight", (kv, C)),
                    (p + "self_attn.o_proj.weight", (C, C)), (p + "post_attention_layernorm.weight", (C,)),
                    (p + "mlp.gate_proj.weight", (F, C)), (p + "mlp.up_proj.weight", (F, C)),
                    (p + "mlp.down_proj.weight", (C, F))]
        out += [("model.norm.weight", (C,))]
        if not a.tie:
            out += [("lm_head.weight", (V, C))]
    return out


def config_of(a):
    """What transformers' GPT2Config / LlamaConfig would write for these sizes."""
    if a.arch == "gpt2":
        return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": a.V,
                "n_positions": a.ctx, "n_ctx": a.ctx, "n_embd": a.C, "n_layer": a.L, "n_head": a.NH,
                "n_inner": a.F, "activation_function": "gelu_new", "layer_norm_epsilon": a.eps,
                "tie_word_embeddings": True}
    rs = None
    if a.llama3:
        f, lo, hi, orig = a.llama3.split(",")
        rs = {"rope_type": "llama3", "factor": float(f), "low_freq_factor": float(lo),
              "high_freq_factor": float(hi), "original_max_position_embeddings": int(orig)}
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": a.V,
            "hidden_size": a.C, "intermediate_size": a.F, "num_hidden_layers": a.L,
            "num_attention_heads": a.NH, "num_key_value_heads": a.NKV, "max_position_embeddings": a.ctx,
            "rms_norm_eps": a.eps, "rope_theta": a.theta, "rope_scaling": rs, "hidden_act": "silu",
            "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": bool(a.tie)}


# ---------------------------------------------------------------- commands
def cmd_write(a):
    os.makedirs(a.dir, exist_ok=True)
    g = torch.Generator().manual_seed(a.seed)
    dts = {"fp32": "F32", "bf16": "BF16", "fp16": "F16"}[a.dtype]
    tl = []
    for name, shape in tensors_of(a):
        v = (torch.randn(shape, generator=g) * 0.5).numpy()
        tl.append((a.prefix + name, dts, from_f32(dts, v)))
    if a.extra and a.arch == "gpt2":
        for i in range(a.L):      # the causal-mask buffers of old GPT-2 checkpoints
            tl.append((f"{a.prefix}h.{i}.attn.bias", "F32", np.ones((1, 1, a.ctx, a.ctx), np.float32)))
    if a.extra and a.arch == "llama":
        for i in range(a.L):
            half = (a.C // a.NH) // 2
            tl.append((f"model.layers.{i}.self_attn.rotary_emb.inv_freq", "F32", np.ones(half, np.float32)))
    if a.head_anyway:
        emb = [t for t in tl if t[0] == "model.embed_tokens.weight"][0]
        tl.append(("lm_head.weight", emb[1], emb[2].copy()))
    cfg = config_of(a)
    cfg["torch_dtype"] = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[a.dtype]
    json.dump(cfg, open(os.path.join(a.dir, "config.json"), "w"), indent=2)
    meta = {"format": "pt"}
    if a.shards <= 1:
        write_file(os.path.join(a.dir, "model.safetensors"), tl, meta)
        return 0
    k = a.shards
    per = (len(tl) + k - 1) // k
    wm, total = {}, 0
    for s in range(k):
        fn = f"model-{s + 1:05d}-of-{k:05d}.safetensors"
        part = tl[s * per:(s + 1) * per]
        write_file(os.path.join(a.dir, fn), part, meta)
        for name, _, arr in part:
            wm[name] = fn
            total += arr.nbytes
    json.dump({"metadata": {"total_size": total}, "weight_map": wm},
              open(os.path.join(a.dir, "model.safetensors.index.json"), "w"), indent=2)
    return 0


def strip(name):
    return name[len("transformer."):] if name.startswith("transformer.") else name


def cmd_compare(a):
    src, _ = read_folder(a.src)
    out, _ = read_folder(a.out)
    src = {strip(k): v for k, v in src.items()}
    bad = 0
    for name, (dts, shape, arr, fn) in out.items():
        if name not in src:
            print(f"{name}: in the export, not in the source"); bad += 1; continue
        sdt, sshape, sarr, _ = src[name]
        if shape != sshape:
            print(f"{name}: shape {shape} vs {sshape}"); bad += 1; continue
        if a.expect in ("same", "widen"):
            if dts != "F32":
                print(f"{name}: export dtype {dts}, expected F32"); bad += 1; continue
            if a.expect == "same" and sdt != "F32":
                print(f"{name}: source is {sdt}; use --expect widen"); bad += 1; continue
            want = to_f32(sdt, sarr)
            if not np.array_equal(arr.view(np.uint32), want.view(np.uint32)):
                d = np.max(np.abs(arr - want))
                print(f"{name}: values differ (max {d})"); bad += 1
        else:
            if dts != "BF16":
                print(f"{name}: export dtype {dts}, expected BF16"); bad += 1; continue
            want = from_f32("BF16", to_f32(sdt, sarr))
            if not np.array_equal(arr, want):
                n = int(np.sum(arr != want))
                print(f"{name}: {n} bf16 values differ from torch's rounding"); bad += 1
    skip = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")
    for name in src:
        if name not in out and not name.endswith(skip) and not (name == "lm_head.weight" and a.tied_ok):
            print(f"{name}: in the source, not in the export"); bad += 1
    print(f"compared {len(out)} tensors: {bad} problems")
    return 1 if bad else 0


def cmd_validate(a):
    d = a.out
    bad = []
    cfg = json.load(open(os.path.join(d, "config.json")))
    want = config_of(a)
    want["torch_dtype"] = {"fp32": "float32", "bf16": "bfloat16"}[a.dtype]
    if a.arch == "llama":
        want["head_dim"] = a.C // a.NH
    for k, v in want.items():
        if k not in cfg:
            bad.append(f"config.json: no {k}")
        elif isinstance(v, float) or isinstance(cfg[k], float):
            if cfg[k] is None or v is None or abs(float(cfg[k]) - float(v)) > 1e-12 * abs(float(v)):
                bad.append(f"config.json: {k} = {cfg[k]!r}, expected {v!r}")
        elif cfg[k] != v:
            bad.append(f"config.json: {k} = {cfg[k]!r}, expected {v!r}")
    t, index = read_folder(d)
    files = sorted(set(v[3] for v in t.values()))
    if a.shards == 1 and (index is not None or files != ["model.safetensors"]):
        bad.append(f"expected one model.safetensors, found {files}")
    if a.shards > 1:
        names = [f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors" for s in range(a.shards)]
        if index is None or files != names:
            bad.append(f"expected shards {names}, found {files}")
        if os.path.exists(os.path.join(d, "model.safetensors")):
            bad.append("a model.safetensors beside the shards")
    if index is not None:
        total = sum(v[2].nbytes for v in t.values())
        if index.get("metadata", {}).get("total_size") != total:
            bad.append(f"index total_size {index.get('metadata')} != {total}")
        for name, v in t.items():
            if index["weight_map"].get(name) != v[3]:
                bad.append(f"index puts {name} in {index['weight_map'].get(name)}, it is in {v[3]}")
        if set(index["weight_map"]) != set(t):
            bad.append("index weight_map names differ from the files' tensors")
    exp = dict(tensors_of(a))
    dts = {"fp32": "F32", "bf16": "BF16"}[a.dtype]
    for name, shape in exp.items():
        if name not in t:
            bad.append(f"missing {name}")
        elif t[name][1] != shape or t[name][0] != dts:
            bad.append(f"{name}: {t[name][0]} {t[name][1]}, expected {dts} {shape}")
    for name in t:
        if name not in exp:
            bad.append(f"unexpected {name}")
    for b in bad:
        print(b)
    print(f"validated {d}: {len(t)} tensors in {len(files)} file(s), {len(bad)} problems")
    return 1 if bad else 0


def cmd_mutate(a):
    d, kind = a.dir, a.kind
    idx = os.path.join(d, "model.safetensors.index.json")
    if kind == "config":
        cfg = json.load(open(os.path.join(d, "config.json")))
        key = "n_embd" if cfg["model_type"] == "gpt2" else "num_key_value_heads"
        cfg[key] = cfg[key] * 2
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        return 0
    if kind == "index":
        ix = json.load(open(idx))
        k = sorted(ix["weight_map"])[0]
        other = sorted(set(ix["weight_map"].values()) - {ix["weight_map"][k]})[0]
        ix["weight_map"][k] = other
        json.dump(ix, open(idx, "w"))
        return 0
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) \
        else ["model.safetensors"]
    if kind == "shape":                  # the last shard holding a matrix
        files = [f for f in files if any(v[2].ndim == 2 for v in read_file(os.path.join(d, f))[0].values())]
    fn = os.path.join(d, files[-1])      # the last shard
    t, meta = read_file(fn)
    tl = [(k, v[0], v[2]) for k, v in t.items()]
    if kind == "shape":
        k, dts, arr = [x for x in tl if x[2].ndim == 2][0]
        tl = [(n, s, (v[:, :-1].copy() if n == k else v)) for n, s, v in tl]
        print(k)
    elif kind == "missing":              # the last parameter (not a buffer) of the last shard
        gone = [x[0] for x in tl if not x[0].endswith((".attn.bias", ".inv_freq"))][-1]
        print(gone)
        tl = [x for x in tl if x[0] != gone]
        if os.path.exists(idx):
            ix = json.load(open(idx))
            del ix["weight_map"][gone]
            json.dump(ix, open(idx, "w"))
    elif kind == "unexpected":
        tl.append(("stray.weight", "F32", np.zeros(3, np.float32)))
        if os.path.exists(idx):
            ix = json.load(open(idx))
            ix["weight_map"]["stray.weight"] = files[-1]
            json.dump(ix, open(idx, "w"))
        print("stray.weight")
    write_file(fn, tl, meta)
    print(files[-1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)

    def shape_flags(s):
        s.add_argument("--arch", default="gpt2")
        for k in ("V", "C", "L", "NH", "F", "ctx"):
            s.add_argument("--" + k, type=int, required=True)
        s.add_argument("--NKV", type=int, default=0)
        s.add_argument("--tie", type=int, default=-1)
        s.add_argument("--eps", type=float, default=1e-5)
        s.add_argument("--theta", type=float, default=10000.0)
        s.add_argument("--llama3", default="")
        s.add_argument("--dtype", default="fp32")
        s.add_argument("--shards", type=int, default=0)

    w = sub.add_parser("write"); w.add_argument("dir"); shape_flags(w)
    w.add_argument("--prefix", default=""); w.add_argument("--extra", action="store_true")
    w.add_argument("--head-anyway", action="store_true"); w.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("compare"); c.add_argument("src"); c.add_argument("out")
    c.add_argument("--expect", choices=["same", "widen", "bf16"], required=True)
    c.add_argument("--tied-ok", action="store_true")
    v = sub.add_parser("validate"); v.add_argument("out"); shape_flags(v)
    m = sub.add_parser("mutate"); m.add_argument("dir"); m.add_argument("kind")
    a = ap.parse_args()
    if a.cmd in ("write", "validate"):
        if a.NKV == 0:
            a.NKV = a.NH
        if a.tie < 0:
            a.tie = 1 if a.arch == "gpt2" else 0
    return {"write": cmd_write, "compare": cmd_compare, "validate": cmd_validate,
            "mutate": cmd_mutate}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
