#!/usr/bin/python3
"""blobs_in_binary.py BINARY KERNEL_DIR ARCH... — checks that a linked train-cuda carries, for every
kernel declared in the kernel sources (ZK_KERNEL ... zd_name), a cubin (ELF, EM_CUDA, with a
.text.<kernel> section) and a PTX (.target sm_XX, with an .entry <kernel>) for each architecture.
The expected names come from the kernel sources (KERNEL_DIR: the templates, or an emitted
cuda/kernels, whose zk_shapes.h then says whether llama's ZK_NKV-guarded files count), the found
ones from the binary's bytes; prints one line per missing piece and exits 1 if any, else prints a
summary and exits 0."""
import glob
import re
import struct
import sys

binary, kdir, archs = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
# llama's kernel files compile only where zk_shapes.h defines ZK_NKV (an arch with rope): given an
# emitted kernel folder (with its zk_shapes.h), a model without it expects none of their kernels
try:
    nkv = re.search(r"^#define ZK_NKV ", open(kdir + "/zk_shapes.h").read(), re.M) is not None
except OSError:
    nkv = True
want = set()
for f in glob.glob(kdir + "/*.cu"):
    src = open(f).read()
    if not nkv and re.search(r"^#(ifdef ZK_NKV|if defined\(ZK_NKV\))", src, re.M):
        continue
    want |= set(re.findall(r"ZK_KERNEL\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(zd_\w+)", src))
data = open(binary, "rb").read()

cubin = {a: set() for a in archs}          # arch -> kernels with a .text section
for m in re.finditer(rb"\x7fELF\x02\x01", data):
    o = m.start()
    if struct.unpack_from("<H", data, o + 18)[0] != 190:      # EM_CUDA
        continue
    arch = (struct.unpack_from("<I", data, o + 48)[0] >> 8) & 0xFF
    shoff = struct.unpack_from("<Q", data, o + 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, o + 0x3A)
    base = o + shoff
    stroff = struct.unpack_from("<Q", data, base + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        name_off = struct.unpack_from("<I", data, base + i * shentsize)[0]
        s = o + stroff + name_off
        name = data[s:data.index(b"\0", s)].decode()
        if name.startswith(".text.") and arch in cubin:
            cubin[arch].add(name[6:])

ptx = {a: set() for a in archs}
for m in re.finditer(rb"\.target sm_(\d+)", data):
    arch = int(m.group(1))
    end = data.index(b"\0", m.start())
    if arch in ptx:
        ptx[arch] |= {e.decode() for e in re.findall(rb"\.entry (zd_\w+)", data[m.start():end])}

bad = 0
if not want:
    print("no ZK_KERNEL found in", kdir)
    bad = 1
for a in archs:
    for k in sorted(want - cubin[a]):
        print(f"missing cubin sm_{a}: {k}")
        bad = 1
    for k in sorted(want - ptx[a]):
        print(f"missing PTX sm_{a}: {k}")
        bad = 1
if not bad:
    print(f"{len(want)} kernels x {len(archs)} archs: cubin and PTX embedded")
sys.exit(bad)
