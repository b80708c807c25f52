#!/usr/bin/env bash
# make_seeds.sh — regenerates tests/fuzz/corpus/ (committed; run from the repository root after
# `make all`): spec+config pairs from specs/ and tests/bad/ in fz_spec's input form, safetensors in
# the dtypes and layouts the reader takes (and the HF "transformer." prefix), checkpoints and token
# files from libzrt's own writers (tests/fuzz/x_seeds.c).
set -euo pipefail
c=tests/fuzz/corpus
rm -rf "$c" && mkdir -p "$c"/{spec,st,ckpt,data}
sep=$'\n#--config--\n'
# specs: the deepspeed: line points at ds.json, the config follows the separator
for s in specs/*.yaml; do
  cfg=$(sed -n 's/^deepspeed: *//p' "$s")
  { sed 's/^deepspeed:.*/deepspeed: ds.json/' "$s"; printf '%s' "$sep"; cat "specs/$cfg"; } >"$c/spec/$(basename "$s" .yaml)"
done
for f in specs/configs/*.json specs/configs/*.yaml tests/bad/*.json; do
  { sed 's/^deepspeed:.*/deepspeed: ds.json/' tests/bad/base.yaml; printf '%s' "$sep"; cat "$f"; } \
    >"$c/spec/cfg_$(basename "$f" | tr . _)"
done
for f in tests/bad/spec_*.yaml; do cp "$f" "$c/spec/bad_$(basename "$f" .yaml)"; done
python3 - "$c/st" <<'PY'
import json, struct, sys
out = sys.argv[1]
def st(name, tensors, meta=None, pad=True):
    hdr, data = {}, b""
    if meta: hdr["__metadata__"] = meta
    for n, (dt, shape, raw) in tensors.items():
        hdr[n] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    if pad: h += b" " * (-len(h) % 8)
    open(f"{out}/{name}", "wb").write(struct.pack("<Q", len(h)) + h + data)
f32 = lambda n: struct.pack(f"<{n}f", *[0.25 * i for i in range(n)])
h16 = lambda n: struct.pack(f"<{n}H", *[0x3c00 + i for i in range(n)])
st("f32", {"wte.weight": ("F32", [4, 2], f32(8)), "h.0.ln_1.bias": ("F32", [2], f32(2)),
           "h.0.attn.c_attn.weight": ("F32", [2, 6], f32(12))})
st("bf16_meta", {"wte.weight": ("BF16", [4, 2], h16(8)), "h.0.ln_1.bias": ("F16", [2], h16(2))},
   meta={"format": "pt"})
st("hf_prefix", {"transformer.wte.weight": ("F32", [4, 2], f32(8)), "h.0.attn.bias": ("F32", [1, 1, 2, 2], f32(4))},
   pad=False)
st("scalar_empty", {"s": ("F32", [], f32(1)), "e": ("F32", [0, 3], b"")})
PY
cc -std=c11 -O1 -D_GNU_SOURCE -Iruntime $(pkg-config --cflags ompi-c) -fopenmp -o /tmp/x_seeds.$$ tests/fuzz/x_seeds.c \
  build/libzrt.a $(pkg-config --libs liburing ompi-c) -fopenmp -lm -lpthread
/tmp/x_seeds.$$ "$c"; rm -f /tmp/x_seeds.$$
du -sh "$c"; ls "$c"/* | wc -l
