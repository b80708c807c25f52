#!/usr/bin/python3
"""Independent references for the trainer-support tests (t_st, t_lr, t_scaler, t_trace, t_ckpt).

Written from the formats' and DeepSpeed's definitions, not from libzrt's C code:
  st-write DIR       tiny safetensors writer: F32/BF16/F16 tensors + the expected fp32 values
  st-read FILE SPEC  tiny safetensors reader: checks the layout rules and the values of a C-written file
  json FILE...       each file must parse as JSON (one document) ; --lines: one object per line
  lr                 DeepSpeed's WarmupLR/WarmupDecayLR/WarmupCosineLR driven like the engine
  scaler             DeepSpeed's DynamicLossScaler.update_scale on overflow patterns
  trace FILE N       checks a merged Chrome trace of N ranks
Prints results on stdout; exits non-zero with a message on any mismatch.
"""
import json
import math
import struct
import sys

import numpy as np


def st_write(d):
    """Tensors with every dtype we read; expected fp32 values written beside them (raw float32)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    # bf16: keep the top 16 bits of an fp32 (round-to-nearest-even done by hand)
    b32 = (rng.standard_normal(7) * 100).astype(np.float32)
    u = b32.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    b_bits = u
    b_expect = (u.astype(np.uint32) << 16).view(np.float32)
    # f16: every bit pattern, so the C conversion is checked exhaustively (numpy is the oracle)
    h_bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    h_expect = h_bits.view(np.float16).astype(np.float32)
    tensors = [("wte.weight", "F32", [3, 5], a.tobytes(), a),
               ("h.0.ln_1.bias", "BF16", [7], b_bits.tobytes(), b_expect),
               ("all_f16", "F16", [256, 256], h_bits.tobytes(), h_expect),
               ("scalar", "F32", [], np.float32(2.5).tobytes(), np.array([2.5], np.float32))]
    # store data in reverse order of the header to show offsets, not order, locate data
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dt, shape, raw, _ in reversed(tensors):
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    with open(d + "/py.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(d + "/py_expect.bin", "wb") as f:
        for _, _, _, _, e in tensors:
            f.write(np.asarray(e, np.float32).tobytes())
    # a file with a dtype we must refuse
    h = json.dumps({"x": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    with open(d + "/py_i64.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(16))
    print("ok")


def st_read(path, spec):
    """spec: name:d0xd1:seed,... ; values are seed + 0.25*i (exact in fp32)."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0, "data start not 8-byte aligned"
    htext = raw[8:8 + n].decode()
    assert htext.rstrip(" ") == htext.rstrip(), "header padding must be spaces"
    header = json.loads(htext)
    data = raw[8 + n:]
    names = [k for k in header if k != "__metadata__"]
    want = [s.split(":") for s in spec.split(",")]
    assert names == [w[0] for w in want], f"order {names}"
    end = 0
    for name, shp, seed in want:
        e = header[name]
        shape = [int(x) for x in shp.split("x")] if shp else []
        assert e["dtype"] == "F32" and e["shape"] == shape, f"{name}: {e}"
        b, en = e["data_offsets"]
        assert b == end, f"{name}: not packed in order"
        cnt = int(np.prod(shape)) if shape else 1
        assert en - b == 4 * cnt
        v = np.frombuffer(data[b:en], np.float32)
        expect = float(seed) + 0.25 * np.arange(cnt, dtype=np.float64)
        assert np.array_equal(v.astype(np.float64), expect), f"{name}: values"
        end = en
    assert end == len(data), "trailing bytes after the last tensor"
    print("ok", len(names), header.get("__metadata__", {}))


def check_json(files, lines):
    for fn in files:
        text = open(fn).read()
        if lines:
            for ln in text.splitlines():
                obj = json.loads(ln)
                assert isinstance(obj, dict)
        else:
            json.loads(text)
    print("ok")


# ---- DeepSpeed lr schedules, transcribed from runtime/lr_schedules.py as documented ----
class Opt:
    def __init__(self, lr):
        self.param_groups = [{"lr": lr}]


class WarmupLR:
    def __init__(self, opt, warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=1000,
                 warmup_type="log"):
        self.opt = opt
        self.min_lr, self.max_lr = warmup_min_lr, warmup_max_lr
        self.delta = warmup_max_lr - warmup_min_lr
        self.W = max(2, warmup_num_steps)
        self.type = warmup_type
        self.inv_log = 1.0 / math.log(self.W)
        self.it = -1
        self.opt.param_groups[0]["lr"] = self.get_lr()  # init: min lr

    def get_lr(self):
        if self.it < 0:
            return self.min_lr
        return self.min_lr + self.delta * self.gamma()

    def warm(self):
        if self.type == "log":
            return self.inv_log * math.log(self.it + 1)
        return self.it / self.W

    def gamma(self):
        return self.warm() if self.it < self.W else 1.0

    def step(self):
        self.it += 1
        self.opt.param_groups[0]["lr"] = self.get_lr()


class WarmupDecayLR(WarmupLR):
    def __init__(self, opt, total_num_steps, **kw):
        self.T = total_num_steps
        super().__init__(opt, **kw)

    def gamma(self):
        if self.it < self.W:
            return self.warm()
        return max(0.0, float(self.T - self.it) / float(max(1.0, self.T - self.W)))


class WarmupCosineLR:
    def __init__(self, opt, total_num_steps, warmup_min_ratio=0.0, warmup_num_steps=1000,
                 cos_min_ratio=0.0001, warmup_type="log"):
        self.opt, self.T = opt, total_num_steps
        self.wmin, self.cmin, self.type = warmup_min_ratio, cos_min_ratio, warmup_type
        self.W = max(2, warmup_num_steps)
        self.inv_log = 1.0 / math.log(self.W)
        self.org = opt.param_groups[0]["lr"]
        self.it = -1
        self.opt.param_groups[0]["lr"] = self.org * self.wmin  # init: the min ratio

    def ratio(self):
        if self.it < self.W:
            r = self.inv_log * math.log(self.it + 1) if self.type == "log" else self.it / self.W
            return self.wmin + r * (1.0 - self.wmin)
        p = min(1.0, (self.it - self.W + 1) / max(1, self.T - self.W))
        r = (1 + math.cos(math.pi * p)) / 2
        return max(0.0, self.cmin + (1.0 - self.cmin) * r)

    def step(self):
        self.it += 1
        self.opt.param_groups[0]["lr"] = self.org * self.ratio()


def lr_main():
    """stdin: one schedule per line: kind lr min max W type T wmin cmin steps skipmask
    prints, per line, the lr each optimizer step ran with (skipped steps do not step the scheduler)."""
    for ln in sys.stdin:
        f = ln.split()
        if not f:
            continue
        kind, lr, mn, mx, W, typ, T, wmin, cmin, steps, mask = f
        lr, mn, mx, wmin, cmin = map(float, (lr, mn, mx, wmin, cmin))
        W, T, steps = int(W), int(T), int(steps)
        opt = Opt(lr)
        if kind == "warmup":
            s = WarmupLR(opt, mn, mx, W, typ)
        elif kind == "decay":
            s = WarmupDecayLR(opt, T, warmup_min_lr=mn, warmup_max_lr=mx, warmup_num_steps=W,
                              warmup_type=typ)
        else:
            s = WarmupCosineLR(opt, T, wmin, W, cmin, typ)
        out = []
        for k in range(steps):
            out.append(repr(opt.param_groups[0]["lr"]))  # the lr optimizer.step() uses
            skipped = mask[k % len(mask)] == "1"
            if not skipped:  # engine: lr_scheduler.step() only when the step was applied
                s.step()
        print(" ".join(out))


# ---- DeepSpeed DynamicLossScaler.update_scale ----
def scaler_main():
    """stdin lines: init_power window hysteresis consecutive min_scale pattern(0/1 string)
    prints per step: scale_after cur_hysteresis_after"""
    for ln in sys.stdin:
        f = ln.split()
        if not f:
            continue
        power, window, hyst, consec, mn, pat = int(f[0]), int(f[1]), int(f[2]), f[3] == "1", float(f[4]), f[5]
        cur_scale, cur_iter, last_overflow_iter = 2.0 ** power, 0, -1
        delayed_shift = cur_h = hyst
        out = []
        for ch in pat:
            overflow = ch == "1"
            if overflow:
                if delayed_shift == 1 or cur_h == 1:
                    if cur_scale == mn:
                        out.append("RAISE")
                        break
                    cur_scale = max(cur_scale / 2.0, mn)
                else:
                    cur_h -= 1
                last_overflow_iter = cur_iter
            else:
                if consec:
                    cur_h = delayed_shift
                if (cur_iter - last_overflow_iter) % window == 0:
                    if not consec:
                        cur_h = delayed_shift
                    cur_scale *= 2.0
            cur_iter += 1
            out.append(f"{cur_scale!r}:{cur_h}")
        print(" ".join(out))


def trace_main(path, world):
    t = json.load(open(path))
    ev = t["traceEvents"]
    world = int(world)
    pids = {e["pid"] for e in ev}
    assert pids == set(range(world)), pids
    for e in ev:
        assert e["ph"] in ("X", "B", "E", "i", "M"), e
        if e["ph"] != "M":
            assert e["tid"] in (0, 1, 2) and isinstance(e["ts"], (int, float)), e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert all(names[(p, 0)] == "compute" and names[(p, 1)] == "comm" and names[(p, 2)] == "io"
               for p in range(world)), names
    # B/E nest per (pid, tid)
    stack = {}
    for e in ev:
        k = (e["pid"], e["tid"])
        if e["ph"] == "B":
            stack.setdefault(k, []).append(e["name"])
        elif e["ph"] == "E":
            assert stack.get(k) and stack[k].pop() == e["name"], ("unbalanced", e)
    assert all(not v for v in stack.values()), stack
    counts = [sum(1 for e in ev if e["pid"] == p and e["ph"] != "M") for p in range(world)]
    print("ok", " ".join(map(str, counts)))


def main():
    cmd = sys.argv[1]
    if cmd == "st-write":
        st_write(sys.argv[2])
    elif cmd == "st-read":
        st_read(sys.argv[2], sys.argv[3])
    elif cmd == "json":
        lines = "--lines" in sys.argv
        check_json([a for a in sys.argv[2:] if a != "--lines"], lines)
    elif cmd == "lr":
        lr_main()
    elif cmd == "scaler":
        scaler_main()
    elif cmd == "trace":
        trace_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
