#!/usr/bin/env bash
# t_ptxas.sh — the ptxas gate: every kernel zgen emits fits the GPU it targets, for every spec in
# specs/*.yaml and every target arch (sm_80, sm_90). For each spec, zgen's embedded PTX (the bytes
# train-cuda loads where it has no cubin for the exact SM) is assembled with `ptxas -v` per kernel
# file and arch; each kernel function then must have
#   - no spill stores or loads (a spill means local-memory traffic in an inner loop);
#   - registers x block size <= 65536 (the register file of an SM: a bigger block cannot launch);
#     the block size is the kernel's __launch_bounds__ (.maxntid in the PTX), or 1024, CUDA's largest
#     block, for a kernel without bounds, since nothing else limits how it is launched;
#   - static shared memory <= 48 KiB (what a block may declare statically);
#   - shared memory within the arch's opt-in limit (sm_80 163 KiB, sm_90 227 KiB): the kernels use no
#     dynamic shared memory, so this is their static size again, checked for when they do.
# One line per spec/arch/kernel: registers, block size, spills, shared memory, ok or why not.
# zgen's NVRTC compile cache ($ZGEN_CACHE, else ~/.cache/zgen/nvrtc) keeps it quick once warm.
# ZR_PTXAS_SPECS="specs/a.yaml ..." restricts the specs. Skips (77) without NVRTC or ptxas.
set -u
cd "$(dirname "$0")/../.."
P=0; F=0; S=0
ok()   { echo "$1 ... ok"; P=$((P+1)); }
bad()  { echo "$1 ... FAIL"; shift; for l in "$@"; do echo "  $l"; done; F=$((F+1)); }
finish() { echo "$P passed, $F failed, $S skipped"; [ $F -eq 0 ] || exit 1; [ $P -gt 0 ] || exit 77; exit 0; }

PTXAS=$(command -v ptxas || { [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ] && echo "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas"; })
if [ -z "$PTXAS" ]; then echo "all ... skip (no ptxas)"; echo "0 passed, 0 failed, 1 skipped"; exit 77; fi
[ -x bin/zgen ] || { bad zgen_built "bin/zgen is not built (make bin/zgen)"; finish; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Writes every PTX of a table to <folder>/<kernel>.sm<arch>.ptx.
cat >"$tmp/dump.c" <<'C'
#include <stdio.h>
#include "zg_kernels_bin.h"
int main(int argc, char **argv)
{
  (void)argc;
  for (int i = 0; i < zg_n_kernel_blobs; i++) {
      const ZgKernelBlob *b = &zg_kernel_blobs[i];
      if (!b->is_ptx) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.sm%d.ptx", argv[1], b->name, b->arch);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(b->bytes, 1, b->size, f) != b->size || fclose(f)) return 1;
  }
  return 0;
}
C

# The checks on `ptxas -v` output, one kernel function per record.
# Input: the PTX (for .maxntid) and ptxas's log. Output: one line per function; "FAIL" in the line
# when a limit is broken.
cat >"$tmp/gate.awk" <<'AWK'
FNR == 1 { file++ }
file == 1 && /^\.(visible )?\.?entry/ || file == 1 && /\.entry / {
    name = $0; sub(/.*\.entry[ \t]+/, "", name); sub(/\(.*/, "", name); cur = name; bound[cur] = 0
}
file == 1 && /\.maxntid/ { s = $0; sub(/.*\.maxntid[ \t]+/, "", s); split(s, d, /[ ,]+/); bound[cur] = d[1] * (d[2] ? d[2] : 1) * (d[3] ? d[3] : 1) }
file == 2 && /Compiling entry function/ { f = $0; sub(/.*entry function '/, "", f); sub(/'.*/, "", f); order[++n] = f }
file == 2 && /bytes spill stores/ { nw = split($0, w, /[ ,]+/); for (i = 1; i + 3 <= nw; i++) { if (w[i + 1] == "bytes" && w[i + 2] == "spill" && w[i + 3] == "stores") st[f] = w[i]; if (w[i + 1] == "bytes" && w[i + 2] == "spill" && w[i + 3] == "loads") ld[f] = w[i] } }
file == 2 && /Used [0-9]+ registers/ {
    s = $0; sub(/.*Used /, "", s); regs[f] = s + 0
    sm = 0; if ($0 ~ /bytes smem/) { t = $0; sub(/ bytes smem.*/, "", t); sub(/.*[ ,]/, "", t); sm = t + 0 }
    smem[f] = sm
}
END {
    for (k = 1; k <= n; k++) {
        f = order[k]; b = bound[f] ? bound[f] : 1024; why = ""
        if (st[f] + 0 > 0 || ld[f] + 0 > 0) why = why " spills"
        if (regs[f] * b > 65536) why = why " registers*block=" regs[f] * b ">65536"
        if (smem[f] > 49152) why = why " static-smem>48KiB"
        if (smem[f] > optin) why = why " smem>opt-in(" optin ")"
        printf "%s regs=%d block=%d%s spill_st=%d spill_ld=%d smem=%d %s\n", f, regs[f], b,
               bound[f] ? "" : "(no bounds)", st[f], ld[f], smem[f], why == "" ? "ok" : "FAIL" why
    }
}
AWK

start=$(date +%s)
for spec in ${ZR_PTXAS_SPECS:-specs/*.yaml}; do
  name=$(basename "$spec" .yaml)
  out="$tmp/$name"
  if ! bin/zgen "$spec" -o "$out" >"$tmp/zgen.log" 2>&1; then
    # an arch whose trainer zgen refuses to emit (ZgArch.emit_missing) has no kernels
    # to gate; any other failure of zgen is a failure of the gate
    if grep -q "cannot emit a trainer for arch" "$tmp/zgen.log"; then
      echo "ptxas_$name ... skip (no trainer emitted for this arch yet: no kernels to gate)"; S=$((S+1)); continue
    fi
    bad "ptxas_$name" "zgen failed: $(head -5 "$tmp/zgen.log")"; continue
  fi
  # a plan without train-cuda (gen/cuda_dec.c zg_cuda_missing says why: a head size no attention
  # kernel serves) gets no cuda/: nothing to gate
  if grep -q "no train-cuda" "$tmp/zgen.log"; then
    echo "ptxas_$name ... skip (no train-cuda for this plan: no kernels emitted)"; S=$((S+1)); continue
  fi
  if grep -q "not precompiled" "$tmp/zgen.log"; then
    echo "ptxas_$name ... skip (NVRTC not installed)"; S=$((S+1)); continue
  fi
  mkdir -p "$out/ptx"
  if ! cc -std=c11 -I"$out/cuda" "$tmp/dump.c" "$out/cuda/zg_kernels_bin.c" -o "$tmp/dump" || ! "$tmp/dump" "$out/ptx"; then
    bad "ptxas_$name" "could not dump the PTX"; continue
  fi
  for arch in 80 90; do
    optin=$(( arch >= 90 ? 227 * 1024 : 163 * 1024 ))
    fails=""; nk=0
    for ptx in "$out"/ptx/*.sm$arch.ptx; do
      k=$(basename "$ptx" .sm$arch.ptx)
      if ! "$PTXAS" -v -arch=sm_$arch "$ptx" -o "$ptx.cubin" >"$ptx.log" 2>&1; then
        fails="$fails $k:ptxas-rejected"; sed 's/^/  /' "$ptx.log" | head -5; continue
      fi
      while read -r line; do
        echo "  $name sm_$arch $k: $line"
        nk=$((nk + 1))
        case "$line" in *FAIL*) fails="$fails $k:${line%% *}";; esac
      done < <(awk -v optin=$optin -f "$tmp/gate.awk" "$ptx" "$ptx.log")
    done
    if [ $nk -eq 0 ]; then bad "ptxas_${name}_sm$arch" "no kernel function found in ptxas's output"
    elif [ -z "$fails" ]; then ok "ptxas_${name}_sm$arch"
    else bad "ptxas_${name}_sm$arch" "over a limit:$fails"; fi
  done
done
echo "  (ptxas gate: $(( $(date +%s) - start )) s for $(ls ${ZR_PTXAS_SPECS:-specs/*.yaml} | wc -l) specs)"
finish
