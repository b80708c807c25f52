#!/usr/bin/env bash
# t_llama_ptxas.sh — the ptxas gate for llama's kernels (templates/cuda/kernels/rmsnorm.cu, rope.cu,
# swiglu.cu, attention_gqa_tc.cu, attention_gqa.cu): for specs/llama-tiny, llama2-7b and llama3-8b, each file is
# compiled as zgen compiles it (NVRTC, -std=c++17 --gpu-architecture=sm_XX, the kernel folder's
# headers and the spec's zk_shapes.h) for sm_80 and sm_90, and `ptxas -v` on the PTX must report, for
# every kernel function:
#   - no spill stores or loads, and no stack frame (local arrays) except in zd_rope_tables, which runs
#     once per run and whose double cos/sin keep libdevice's argument-reduction array (40 bytes) there;
#   - registers x block size <= 65536, the block size being the kernel's __launch_bounds__ (.maxntid;
#     every llama kernel has one: a kernel without is a failure here);
#   - static shared memory <= 48 KiB, and static + dynamic (attention_gqa_tc's ZK_ATC_*_SMEM, from
#     the kernel's macros and the spec's shapes) within the arch's opt-in limit (sm_80 163 KiB, sm_90
#     227 KiB);
# and every function the file declares (ZK_KERNEL) must be an .entry of its PTX (a llama spec's
# zk_shapes.h defines ZK_NKV, so no file may come out an empty module).
# zk_shapes.h is zgen's own (zg_cuda_shapes_h, printed by bin/tests/gen/x_cuda_shapes); it is
# checked against the spec's values first. The kernels are
# compiled with the storage zgen emits (ZK_IO 0) for llama-tiny, and with bf16 storage (ZK_IO 1, the
# 16-bit training layout) for all three. Prints the figures. Without NVRTC or ptxas only the
# zk_shapes.h checks run (the compilations are skipped).
. "$(dirname "$0")/../lib.sh"
CUDA=${CUDA_HOME:-/usr/local/cuda}
PTXAS=$(command -v ptxas || { [ -x "$CUDA/bin/ptxas" ] && echo "$CUDA/bin/ptxas"; })
nocuda=""
[ -n "$PTXAS" ] || nocuda="no ptxas"
[ -f "$CUDA/include/nvrtc.h" ] && ls "$CUDA"/lib64/libnvrtc.so >/dev/null 2>&1 || nocuda="no NVRTC"
zt_build bin/tests/gen/x_cuda_shapes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
K=templates/cuda/kernels
FILES="rmsnorm rope swiglu attention_gqa_tc attention_gqa"

# The compiler: zgen's NVRTC call (gen/nvrtc.c), with every header of the kernel folder by name.
cat >"$tmp/nvrtc.c" <<'C'
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) { perror(p); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) exit(2);
    s[n] = 0;
    fclose(f);
    return s;
}
/* nvrtc ARCH KERNEL.cu OUT.ptx NAME=PATH... */
int main(int argc, char **argv)
{
    int nh = argc - 4;
    const char **ht = malloc(sizeof *ht * (size_t)(nh + 1)), **hn = malloc(sizeof *hn * (size_t)(nh + 1));
    for (int i = 0; i < nh; i++) {
        char *eq = argv[4 + i];
        while (*eq != '=') eq++;
        *eq = 0;
        hn[i] = argv[4 + i];
        ht[i] = slurp(eq + 1);
    }
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%s", argv[1]);
    const char *opts[] = {arch, "-std=c++17"};
    nvrtcProgram p;
    if (nvrtcCreateProgram(&p, slurp(argv[2]), argv[2], nh, ht, hn) != NVRTC_SUCCESS) return 1;
    nvrtcResult r = nvrtcCompileProgram(p, 2, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    char *log = malloc(n + 1);
    nvrtcGetProgramLog(p, log);
    if (r != NVRTC_SUCCESS) { fprintf(stderr, "%s\n", log); return 1; }
    nvrtcGetPTXSize(p, &n);
    char *ptx = malloc(n);
    nvrtcGetPTX(p, ptx);
    FILE *f = fopen(argv[3], "wb");
    if (!f || fputs(ptx, f) < 0 || fclose(f)) return 1;
    return 0;
}
C
if [ -z "$nocuda" ] && ! cc -std=c11 -I"$CUDA/include" "$tmp/nvrtc.c" -o "$tmp/nvrtc" -L"$CUDA/lib64" -lnvrtc \
     -Wl,-rpath,"$CUDA/lib64" 2>"$tmp/cc.log"
then fail nvrtc_driver "$(head -3 "$tmp/cc.log")"; zt_end; fi

# $1 spec, $2 the define, $3 the value the spec gives it
want_def() { grep -q "^#define $2 $3\b" "$tmp/$1/zk_shapes.h" || why="$why; zk_shapes.h lacks '#define $2 $3'"; }

for spec in llama-tiny llama2-7b llama3-8b; do
  mkdir -p "$tmp/$spec"
  if ! bin/tests/gen/x_cuda_shapes "specs/$spec.yaml" >"$tmp/$spec/zk_shapes.h" 2>"$tmp/log"; then
    fail "shapes_$spec" "$(head -3 "$tmp/log")"; continue
  fi
  # the values, read from the spec itself
  why=""
  for key in n_kv_heads d_model n_heads d_ff; do
    val=$(grep -E "^  $key:" "specs/$spec.yaml" | awk '{print $2}')
    case $key in n_kv_heads) def=ZK_NKV ;; d_model) def=ZK_C ;; n_heads) def=ZK_NH ;; d_ff) def=ZK_F ;; esac
    want_def "$spec" $def "$val"
  done
  theta=$(grep -E '^  rope_theta:' "specs/$spec.yaml" | awk '{print $2}')
  want_def "$spec" ZK_ROPE_THETA "$(printf '%.17g' "$theta")"
  if grep -q 'type: llama3' "specs/$spec.yaml"; then
    want_def "$spec" ZK_ROPE_LLAMA3 1
    for k in factor:FACTOR low_freq_factor:LOW high_freq_factor:HIGH original_context:OLD; do
      val=$(grep -oE "${k%%:*}: [0-9.]+" "specs/$spec.yaml" | head -1 | awk '{print $2}')
      want_def "$spec" "ZK_ROPE_${k##*:}" "$(printf '%.17g' "$val")"
    done
  else
    want_def "$spec" ZK_ROPE_LLAMA3 0
  fi
  if [ -z "$why" ]; then ok "shapes_$spec"; else fail "shapes_$spec" "${why#; }"; fi
  [ -z "$nocuda" ] || { skip "ptxas_$spec" "$nocuda"; continue; }

  ios="1"; [ "$spec" = llama-tiny ] && ios="0 1"
  for io in $ios; do
    d=$tmp/$spec/io$io; mkdir -p "$d"
    sed "s/^#define ZK_IO [0-9]*/#define ZK_IO $io/" "$tmp/$spec/zk_shapes.h" >"$d/zk_shapes.h"
    hdrs="zk_shapes.h=$d/zk_shapes.h"
    for h in "$K"/*.cuh "$K"/*.h; do hdrs="$hdrs $(basename "$h")=$h"; done
    # attention_gqa_tc's dynamic shared memory, from its macros and these shapes
    { echo '#include <stdio.h>'; echo "#include \"$d/zk_shapes.h\""; echo '#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))'
      grep -hE '^#define ZK_ATC_(HS|HP|BQ|BK|P16|PP|SP|OP|T16|TP|TS|TO|FWD_SMEM|DQ_SMEM|DKV_SMEM) ' "$K/zk_attn_tc.cuh"
      echo 'int main(void) { printf("%d %d %d\n", ZK_ATC_FWD_SMEM, ZK_ATC_DQ_SMEM, ZK_ATC_DKV_SMEM); return 0; }'
    } >"$d/smem.c"
    read -r s_fwd s_dq s_dkv < <(cc "$d/smem.c" -o "$d/smem" && "$d/smem")
    for a in 80 90; do
      limit=$(( a == 80 ? 163 * 1024 : 227 * 1024 ))
      why=""
      for f in $FILES; do
        ptx=$d/$f.sm$a.ptx
        if ! "$tmp/nvrtc" $a "$K/$f.cu" "$ptx" $hdrs 2>"$d/nvrtc.log"; then why="$why; $f: NVRTC: $(grep -m2 error "$d/nvrtc.log")"; continue; fi
        if ! "$PTXAS" -v -arch=sm_$a "$ptx" -o "$ptx.cubin" >"$d/v" 2>&1; then why="$why; $f: ptxas: $(head -2 "$d/v")"; continue; fi
        for fn in $(grep -A1 '^ZK_KERNEL' "$K/$f.cu" | grep -oE '\bzd_[a-z0-9_]+\(' | tr -d '(' | sort -u); do
          grep -q "\.entry $fn(" "$ptx" || why="$why; $f: $fn is not in the PTX"
        done
        # one line per entry: name registers spill-stores spill-loads stack static-smem maxntid
        rows=$(awk 'FNR == 1 { file++ }
                    file == 1 && /\.entry / { n = $0; sub(/.*\.entry[ \t]+/, "", n); sub(/\(.*/, "", n); cur = n }
                    file == 1 && /\.maxntid/ { s = $0; sub(/.*\.maxntid[ \t]+/, "", s); split(s, x, /[ ,]+/); nt[cur] = x[1] * (x[2] ? x[2] : 1) * (x[3] ? x[3] : 1) }
                    file == 2 && /Compiling entry function/ { match($0, /'"'"'[a-z_0-9]+'"'"'/); f = substr($0, RSTART + 1, RLENGTH - 2); st = 0; ss = 0; sl = 0; sm = 0 }
                    file == 2 && /bytes stack frame/ { st = $1; ss = $5; sl = $9 }
                    file == 2 && /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15) + 0
                      if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH - 11) + 0
                      print f, r, ss, sl, st, sm, nt[f] + 0 }' "$ptx" "$d/v")
        while read -r n r ss sl st sm nt; do
          [ -n "$n" ] || continue
          case $n in *gqa_tc_forward) dyn=$s_fwd ;; *gqa_tc_backward_dq) dyn=$s_dq ;; *gqa_tc_backward_dkv) dyn=$s_dkv ;; *) dyn=0 ;; esac
          echo "  $spec io$io sm_$a $n: $r registers x $nt threads = $((r * nt)), spills $ss/$sl, stack $st, smem static $sm dynamic $dyn"
          [ "$ss" = 0 ] && [ "$sl" = 0 ] || why="$why; $n spills ($ss/$sl)"
          [ "$st" = 0 ] || [ "$n" = zd_rope_tables ] || why="$why; $n has a stack frame ($st bytes)"
          [ "$nt" -gt 0 ] || why="$why; $n has no __launch_bounds__"
          [ $((r * nt)) -le 65536 ] || why="$why; $n: $r registers x $nt > 65536"
          [ "$sm" -le 49152 ] || why="$why; $n: $sm bytes of static shared memory > 48 KiB"
          [ $((sm + dyn)) -le $limit ] || why="$why; $n: $((sm + dyn)) bytes of shared memory > $limit"
        done <<<"$rows"
      done
      if [ -z "$why" ]; then ok "ptxas_${spec}_io${io}_sm$a"; else fail "ptxas_${spec}_io${io}_sm$a" "${why#; }"; fi
    done
  done
done
zt_end
