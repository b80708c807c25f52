#!/usr/bin/env bash
# t_nvrtc.sh — zgen compiles every CUDA kernel with NVRTC at generation time and embeds it:
#   - for specs/tiny.yaml and specs/gpt2-124m.yaml, out/<name>/cuda/zg_kernels_bin.c holds, for every
#     templates/cuda/kernels/*.cu and for sm_80 and sm_90, a cubin (an ELF for EM_CUDA) and a PTX with
#     `.target sm_XX` whose .entry list is every kernel function of the file (none for llama's files,
#     guarded by ZK_NKV, in a spec whose zk_shapes.h has no ZK_NKV); the table is read by
#     compiling the emitted C with a small reader, not by parsing the text;
#   - ptxas (when present) accepts the tiny spec's PTX for its target;
#   - the emitted kernel sources compile for the CPU under the emitted zr_simt.h (tiny: fp32 storage,
#     gpt2-124m: bf16);
#   - output is byte-identical with the compile cache off and on (NVRTC is deterministic);
#   - a broken kernel is reported with the kernel's name at its template file:line (kernel file and
#     shared header), zgen exits 1 and writes nothing;
#   - without NVRTC (ZGEN_NVRTC=off or a missing library) zgen emits the sources, says so once, and
#     the table is empty.
# Skips (77) when NVRTC is not installed.
set -u
cd "$(dirname "$0")/../.."
P=0; F=0; S=0
ok()   { echo "$1 ... ok"; P=$((P+1)); }
bad()  { echo "$1 ... FAIL"; shift; for l in "$@"; do echo "  $l"; done; F=$((F+1)); }
finish() { echo "$P passed, $F failed, $S skipped"; [ $F -eq 0 ] || exit 1; [ $P -gt 0 ] || exit 77; exit 0; }

[ -x bin/zgen ] || { bad zgen_built "bin/zgen is not built (make bin/zgen)"; finish; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ZGEN_CACHE=$tmp/cache

if ! bin/zgen specs/tiny.yaml -o "$tmp/tiny" >"$tmp/log" 2>&1; then bad zgen_tiny "$(head -20 "$tmp/log")"; finish; fi
# The emitted kernel sources (banner, zk_shapes.h and all) also compile for the CPU under the emitted
# zr_simt.h, all in one translation unit, strictly (this needs no NVRTC).
emu_compiles() {   # $1 label, $2 output folder
  printf '#define ZR_SIMT_IMPL\n#include "zr_simt.h"\n' >"$tmp/emu_$1.cpp"
  for f in "$2"/cuda/kernels/*.cu; do echo "#include \"kernels/$(basename "$f")\"" >>"$tmp/emu_$1.cpp"; done
  if g++ -std=c++17 -Wall -Wextra -Werror -I"$2/cuda" -I"$2/cuda/kernels" -c "$tmp/emu_$1.cpp" -o "$tmp/emu_$1.o" 2>"$tmp/emu.log"
  then ok "emitted_sources_compile_for_cpu_$1"
  else bad "emitted_sources_compile_for_cpu_$1" "$(head -10 "$tmp/emu.log")"; fi
}
emu_compiles tiny "$tmp/tiny"

if grep -q "not precompiled" "$tmp/log"; then
  echo "all ... skip (NVRTC not installed: $(grep -o 'precompiled: [^;]*' "$tmp/log"))"
  echo "0 passed, 0 failed, 1 skipped"; exit 77
fi

# The reader: prints "name arch kind size ok" per blob, where ok says the cubin starts with the ELF
# magic for a 64-bit EM_CUDA (190) object, or the PTX has ".target sm_<arch>" and ends in its NUL.
cat >"$tmp/reader.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "zg_kernels_bin.h"
int main(void)
{
    for (int i = 0; i < zg_n_kernel_blobs; i++) {
        const ZgKernelBlob *b = &zg_kernel_blobs[i];
        int good;
        if (b->is_ptx) {
            char want[32];
            snprintf(want, sizeof want, ".target sm_%d", b->arch);
            good = b->bytes[b->size] == 0 && strstr((const char *)b->bytes, want) != NULL;
        } else {
            good = b->size > 64 && memcmp(b->bytes, "\177ELF", 4) == 0 && b->bytes[4] == 2
                && (b->bytes[18] | b->bytes[19] << 8) == 190;
        }
        printf("%s %d %s %zu %d\n", b->name, b->arch, b->is_ptx ? "ptx" : "cubin", b->size, good);
    }
    return 0;
}
C

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

kernels=$(cd templates/cuda/kernels && ls *.cu | sed 's/\.cu$//')
check_spec() {   # $1 label, $2 output folder
  local label=$1 out=$2 miss="" badblob="" noentry=""
  if ! cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$out/cuda" "$tmp/reader.c" "$out/cuda/zg_kernels_bin.c" \
       -o "$tmp/reader_$label" 2>"$tmp/cc.log"; then bad "table_compiles_$label" "$(head -10 "$tmp/cc.log")"; return; fi
  ok "table_compiles_$label"
  "$tmp/reader_$label" >"$tmp/table_$label"
  for k in $kernels; do
    for a in 80 90; do
      for kind in cubin ptx; do
        line=$(grep "^$k $a $kind " "$tmp/table_$label")
        [ -n "$line" ] || { miss="$miss $k/sm_$a/$kind"; continue; }
        [ "${line##* }" = 1 ] || badblob="$badblob $k/sm_$a/$kind"
      done
    done
  done
  n=$(wc -l <"$tmp/table_$label"); want=$(( $(echo $kernels | wc -w) * 4 ))
  if [ -z "$miss$badblob" ] && [ "$n" = "$want" ]; then ok "every_kernel_every_arch_$label"
  else bad "every_kernel_every_arch_$label" "missing:$miss" "bad blobs:$badblob" "rows $n, want $want"; fi
  # every kernel function of a file is an .entry of its PTX, for both targets
  mkdir -p "$tmp/ptx_$label"
  if ! cc -std=c11 -I"$out/cuda" "$tmp/dump.c" "$out/cuda/zg_kernels_bin.c" -o "$tmp/dump_$label" \
     || ! "$tmp/dump_$label" "$tmp/ptx_$label"; then bad "entries_$label" "could not dump the PTX"; return; fi
  for k in $kernels; do
    # llama's kernel files (guarded by ZK_NKV, which zk_shapes.h defines for archs with rotary
    # grouped-query attention only) are empty modules for the others: no entry at all
    if grep -qE '^#(ifdef ZK_NKV|if defined\(ZK_NKV\))' "templates/cuda/kernels/$k.cu" \
       && ! grep -q '^#define ZK_NKV ' "$out/cuda/kernels/zk_shapes.h"; then
      for a in 80 90; do
        ! grep -q '\.entry ' "$tmp/ptx_$label/$k.sm$a.ptx" 2>/dev/null || noentry="$noentry $k:sm_$a:not-empty"
      done
      continue
    fi
    # the kernels: the name that follows ZK_KERNEL (on its line or the next, after __launch_bounds__)
    for fn in $(grep -A1 '^ZK_KERNEL' "templates/cuda/kernels/$k.cu" | grep -oE '\bzd_[a-z0-9_]+\(' | tr -d '(' | sort -u); do
      for a in 80 90; do
        grep -q "\.entry $fn(" "$tmp/ptx_$label/$k.sm$a.ptx" 2>/dev/null || noentry="$noentry $k:$fn:sm_$a"
      done
    done
  done
  if [ -z "$noentry" ]; then ok "entries_$label"; else bad "entries_$label" "not in the PTX:$noentry"; fi
}
check_spec tiny "$tmp/tiny"

if bin/zgen specs/gpt2-124m.yaml -o "$tmp/g124" >"$tmp/log" 2>&1; then check_spec gpt2_124m "$tmp/g124"; emu_compiles gpt2_124m "$tmp/g124"
else bad zgen_gpt2_124m "$(head -20 "$tmp/log")"; fi

# ptxas accepts the PTX (the tiny spec's, both targets).
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
  PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  rejected=""
  if [ -d "$tmp/ptx_tiny" ]; then
    for f in "$tmp"/ptx_tiny/*.ptx; do
      a=${f##*.sm}; a=${a%.ptx}
      "$PTXAS" -arch=sm_$a "$f" -o "$f.cubin" 2>"$tmp/ptxas.log" || rejected="$rejected $(basename "$f"): $(head -2 "$tmp/ptxas.log")"
    done
    if [ -z "$rejected" ] && ls "$tmp"/ptx_tiny/*.ptx >/dev/null 2>&1; then ok ptxas_accepts_ptx; else bad ptxas_accepts_ptx "$rejected"; fi
  else bad ptxas_accepts_ptx "could not dump the PTX"; fi
else
  echo "ptxas_accepts_ptx ... skip (no ptxas)"; S=$((S+1))
fi

# Same bytes with the cache off (fresh NVRTC compilations) as from the cache (cuda/ only: the
# trainer templates are other engineers' and may change between the two runs).
if ZGEN_CACHE=off bin/zgen specs/tiny.yaml -o "$tmp/tiny2" >/dev/null 2>&1 && d=$(diff -r "$tmp/tiny/cuda" "$tmp/tiny2/cuda" 2>&1)
then ok identical_uncached; else bad identical_uncached "$(echo "${d:-zgen failed}" | head -5)"; fi

# A broken kernel: reported with its name at the template line; exit 1; no trainer file written
# (plan.txt/plan.json come first, by design of main.c).
cp -r templates "$tmp/tpl"
line=$(grep -n 'float v = zk_ld(x + i) + zk_ld(bias + i % ZK_F);' "$tmp/tpl/cuda/kernels/gelu.cu" | cut -d: -f1)
sed -i "${line}s/zk_ld(bias + i % ZK_F)/zk_ld(bias + i % ZK_F) + not_declared_here/" "$tmp/tpl/cuda/kernels/gelu.cu"
ZGEN_TEMPLATES=$tmp/tpl bin/zgen specs/tiny.yaml -o "$tmp/broken" >"$tmp/log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "templates/cuda/kernels/gelu.cu:$line:.*error.*'gelu'.*not_declared_here" "$tmp/log" \
   && [ ! -e "$tmp/broken/cuda" ] && [ ! -e "$tmp/broken/Makefile" ]
then ok broken_kernel_reported
else bad broken_kernel_reported "rc $rc, want 1; line $line; written: $([ -e "$tmp/broken/cuda" ] && echo yes || echo no)" "$(head -8 "$tmp/log")"; fi

# ... and an error in the shared header is reported at the header's line.
cp templates/cuda/kernels/gelu.cu "$tmp/tpl/cuda/kernels/gelu.cu"
hline=$(grep -n '^ZK_DEV float zk_maxf' "$tmp/tpl/cuda/kernels/zk_common.cuh" | cut -d: -f1)
sed -i "${hline}s/return a > b ? a : b;/return a > b ? a : bogus_b;/" "$tmp/tpl/cuda/kernels/zk_common.cuh"
ZGEN_TEMPLATES=$tmp/tpl bin/zgen specs/tiny.yaml -o "$tmp/broken" >"$tmp/log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "templates/cuda/kernels/zk_common.cuh:$hline:.*error.*bogus_b" "$tmp/log"
then ok broken_header_reported
else bad broken_header_reported "rc $rc; line $hline" "$(head -8 "$tmp/log")"; fi

# Without NVRTC: sources only, one note, an empty table that still compiles.
for how in off /nonexistent/libnvrtc.so; do
  rm -rf "$tmp/nonv"
  ZGEN_NVRTC=$how bin/zgen specs/tiny.yaml -o "$tmp/nonv" >"$tmp/log" 2>&1; rc=$?
  notes=$(grep -c "not precompiled" "$tmp/log")
  if [ $rc -eq 0 ] && [ "$notes" = 1 ] && [ -f "$tmp/nonv/cuda/kernels/attention.cu" ] \
     && grep -q "zg_n_kernel_blobs = 0" "$tmp/nonv/cuda/zg_kernels_bin.c" \
     && cc -std=c11 -Wall -Wextra -Werror -c -I"$tmp/nonv/cuda" "$tmp/nonv/cuda/zg_kernels_bin.c" -o "$tmp/e.o"
  then ok "without_nvrtc_${how//\//_}"
  else bad "without_nvrtc_${how//\//_}" "rc $rc, notes $notes" "$(head -5 "$tmp/log")"; fi
done
finish
