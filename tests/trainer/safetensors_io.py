"""safetensors_io.py - read and write .safetensors files with numpy only (no safetensors package).

The format: an 8-byte little-endian header length N, N bytes of JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the end of the header, an
optional "__metadata__" of strings), then the raw little-endian data. The writer pads the header
with spaces to a multiple of 8 bytes, so every tensor starts 8-byte aligned as in the reference
implementation, and writes tensors in the order given (Hugging Face names, model order).
"""
import json
import struct

import numpy as np

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "U16": np.uint16,
           "BOOL": np.bool_}
_NAMES = {np.dtype(v).str: k for k, v in _DTYPES.items()}


def load(path):
    """Returns ({name: numpy array}, metadata dict); arrays are copies in file order."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        dt = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        b, e = info["data_offsets"]
        shape = tuple(info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if e - b != count * dt.itemsize or e > len(data):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {b}..{e}")
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(shape).copy()
    return out, meta


def save(path, tensors, metadata=None):
    """tensors: an ordered mapping name -> numpy array (written in that order)."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        a = np.ascontiguousarray(arr)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        key = np.dtype(a.dtype).newbyteorder("<").str
        if key not in _NAMES:
            raise ValueError(f"tensor {name}: dtype {a.dtype} not supported")
        b = a.tobytes()
        header[name] = {"dtype": _NAMES[key], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
