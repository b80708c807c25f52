#!/usr/bin/env bash
# t_attention_tc_ptxas.sh — the tensor-core attention kernels (templates/cuda/kernels/attention_tc.cu)
# as zgen compiles them with NVRTC fit the GPU: for specs with head size 32 (tiny), 64 (gpt2-124m)
# and 128 (gpt2-10b), sm_80 and sm_90, `ptxas -v` on the embedded PTX reports, for each of the three
# entries, no spill stores or loads, no stack frame, registers x 256 threads <= 65536 and no static
# shared memory; the dynamic shared memory each launch asks for (ZK_ATC_*_SMEM, evaluated with the
# spec's zk_shapes.h) is within the opt-in limit (sm_80 163 KiB, sm_90 227 KiB).
# Prints the figures. Skips (77) without NVRTC or ptxas.
set -u
cd "$(dirname "$0")/../.."
P=0; F=0; S=0
ok()   { echo "$1 ... ok"; P=$((P+1)); }
bad()  { echo "$1 ... FAIL"; shift; for l in "$@"; do echo "  $l"; done; F=$((F+1)); }
finish() { echo "$P passed, $F failed, $S skipped"; [ $F -eq 0 ] || exit 1; [ $P -gt 0 ] || exit 77; exit 0; }

[ -x bin/zgen ] || { bad zgen_built "bin/zgen is not built (make bin/zgen)"; finish; }
PTXAS=$(command -v ptxas || { [ -x /usr/local/cuda/bin/ptxas ] && echo /usr/local/cuda/bin/ptxas; })
[ -n "$PTXAS" ] || { echo "all ... skip (no ptxas)"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ZGEN_CACHE=${ZGEN_CACHE:-$tmp/cache}

cat >"$tmp/dump.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "zg_kernels_bin.h"
int main(int argc, char **argv)
{
  (void)argc;
  for (int i = 0; i < zg_n_kernel_blobs; i++) {
      const ZgKernelBlob *b = &zg_kernel_blobs[i];
      if (!b->is_ptx || strcmp(b->name, "attention_tc") != 0) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/sm%d.ptx", argv[1], b->arch);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(b->bytes, 1, b->size, f) != b->size || fclose(f)) return 1;
  }
  return 0;
}
C

for spec in tiny gpt2-124m gpt2-10b; do
  out=$tmp/$spec
  if ! bin/zgen "specs/$spec.yaml" -o "$out" >"$tmp/log" 2>&1; then bad "zgen_$spec" "$(tail -5 "$tmp/log")"; continue; fi
  if grep -q "not precompiled" "$tmp/log"; then
    echo "all ... skip (NVRTC not installed)"; echo "$P passed, $F failed, 1 skipped"; [ $F -eq 0 ] || exit 1; exit 77
  fi
  mkdir -p "$out/ptx"
  if ! cc -std=c11 -I"$out/cuda" "$tmp/dump.c" "$out/cuda/zg_kernels_bin.c" -o "$tmp/dump" || ! "$tmp/dump" "$out/ptx"; then
    bad "dump_$spec" "could not dump the PTX"; continue
  fi
  # the dynamic shared memory, from the kernel's own macros and the spec's shapes
  { echo '#include <stdio.h>'; echo '#include "zk_shapes.h"'; echo '#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))'
    grep -hE '^#define ZK_ATC_(HS|HP|BQ|BK|P16|PP|SP|OP|T16|TP|TS|TO|FWD_SMEM|DQ_SMEM|DKV_SMEM) ' templates/cuda/kernels/zk_attn_tc.cuh
    echo 'int main(void) { printf("%d %d %d %d\n", ZK_ATC_HS, ZK_ATC_FWD_SMEM, ZK_ATC_DQ_SMEM, ZK_ATC_DKV_SMEM); return 0; }'
  } >"$tmp/smem.c"
  read -r hs fwd dq dkv < <(cc -I"$out/cuda/kernels" "$tmp/smem.c" -o "$tmp/smem" && "$tmp/smem")
  for a in 80 90; do
    f=$out/ptx/sm$a.ptx
    [ -s "$f" ] || { bad "ptxas_${spec}_sm$a" "no attention_tc PTX for sm_$a"; continue; }
    if ! "$PTXAS" -v -arch=sm_$a "$f" -o "$f.cubin" >"$tmp/v" 2>&1; then bad "ptxas_${spec}_sm$a" "$(head -3 "$tmp/v")"; continue; fi
    limit=$(( a == 80 ? 163 * 1024 : 227 * 1024 ))
    why=""
    # one line per entry: name regs spill_stores spill_loads stack smem
    rows=$(awk '/Compiling entry function/ { match($0, /'"'"'[a-z_0-9]+'"'"'/); n = substr($0, RSTART + 1, RLENGTH - 2); st = 0; ss = 0; sl = 0; sm = 0 }
                /bytes stack frame/ { st = $1; ss = $5; sl = $9 }
                /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15) + 0
                  if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH - 11) + 0
                  print n, r, ss, sl, st, sm }' "$tmp/v")
    [ "$(echo "$rows" | grep -c .)" = 3 ] || why="$why; want 3 entries, got: $(echo $rows)"
    while read -r n r ss sl st sm; do
      [ -n "$n" ] || continue
      case $n in *forward) dyn=$fwd ;; *dq) dyn=$dq ;; *) dyn=$dkv ;; esac
      echo "  HS $hs sm_$a $n: $r registers (x 256 = $((r * 256))), spill stores $ss, loads $sl, stack $st, static smem $sm, dynamic smem $dyn"
      [ "$ss" = 0 ] && [ "$sl" = 0 ] && [ "$st" = 0 ] || why="$why; $n spills ($ss/$sl, stack $st)"
      [ $((r * 256)) -le 65536 ] || why="$why; $n: $r registers x 256 > 65536"
      [ "$sm" = 0 ] || why="$why; $n declares $sm bytes of static shared memory"
      [ "$dyn" -le "$limit" ] || why="$why; $n: $dyn bytes of dynamic shared memory > $limit"
    done <<<"$rows"
    if [ -z "$why" ]; then ok "ptxas_${spec}_sm$a"; else bad "ptxas_${spec}_sm$a" "${why#; }"; fi
  done
done
finish
