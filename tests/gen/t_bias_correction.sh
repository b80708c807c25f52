#!/usr/bin/env bash
# t_bias_correction.sh — optimizer.params.bias_correction: false (BERT-style Adam, issue 13) reaches
# the trainer: zgen emits ZG_BIAS_CORRECTION 0 (1 by default) and the emitted optimizer passes zr_adam
# step INT64_MAX then; and zr_adam at that step computes Adam without bias correction exactly as
# written out by hand here (m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, p -= lr m / (sqrt(v) + eps)),
# which step 1 (with correction) does not.
set -u
cd "${ZT_ROOT:-$(dirname "$0")/../..}"
ZGEN=$PWD/bin/zgen
P=0; F=0; S=0
ok()  { echo "$1 ... ok"; P=$((P+1)); }
bad() { echo "$1 ... FAIL"; echo "  $2"; F=$((F+1)); }
skip() { echo "$1 ... skip ($2)"; S=$((S+1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$ZGEN" ]; then
  bad zgen_built "bin/zgen missing (make bin/zgen)"; echo "$P passed, $F failed, $S skipped"; exit 1
fi

spec() {  # spec NAME OPT_PARAMS
  cat > "$tmp/$1.yaml" <<YAML
name: $1
model: {arch: gpt2, vocab_size: 64, context: 16, d_model: 32, n_layers: 1, n_heads: 2}
train: {world_size: 1}
deepspeed:
  train_micro_batch_size_per_gpu: 1
  optimizer: {type: Adam, params: {lr: 1.0e-3$2}}
YAML
}
spec nobc ", bias_correction: false"
spec bc ""
for n in nobc bc; do
  "$ZGEN" "$tmp/$n.yaml" -o "$tmp/$n" >"$tmp/$n.log" 2>&1 || bad "generate_$n" "$(head -3 "$tmp/$n.log")"
done
want() { [ "$1" = nobc ] && echo 0 || echo 1; }
for n in nobc bc; do
  if grep -qE "^#define ZG_BIAS_CORRECTION +$(want $n)\$" "$tmp/$n/zg_model.h"; then ok "constant_$n"
  else bad "constant_$n" "$(grep -n BIAS_CORRECTION "$tmp/$n/zg_model.h" || echo 'no ZG_BIAS_CORRECTION in zg_model.h')"; fi
done
if grep -q "ZG_BIAS_CORRECTION ? T.applied + 1 : INT64_MAX" "$tmp/nobc/train_optim.c"; then ok constant_used
else bad constant_used "train_optim.c does not pass step INT64_MAX without bias correction"; fi

# zr_adam at step INT64_MAX = Adam without bias correction, by hand
if [ ! -f build/libzrt.a ]; then
  skip adam_without_correction "build/libzrt.a missing (make build/libzrt.a)"
else
  cat > "$tmp/adam.c" <<'C'
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "zr_adam.h"
int main(void)
{
    enum { N = 37 };
    float p[N], m[N] = {0}, v[N] = {0}, g[N], p1[N], m1[N] = {0}, v1[N] = {0};
    double hp[N], hm[N] = {0}, hv[N] = {0};
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int i = 0; i < N; i++) p[i] = p1[i] = (float)(0.1 * (i - 18)), hp[i] = p[i];
    int bad = 0, differs = 0;
    for (int step = 1; step <= 3; step++) {
        for (int i = 0; i < N; i++) g[i] = (float)(0.01 * ((i * 7 + step * 3) % 11) - 0.05);
        ZrAdamCfg c = {(float)lr, (float)b1, (float)b2, (float)eps, 0.0f, 1, INT64_MAX, 1.0f};
        ZrAdamCfg c1 = c;
        c1.step = step;
        if (zr_adam_step(&c, p, m, v, g, ZR_DT_FP32, NULL, ZR_DT_BF16, N) != 0) return 2;
        if (zr_adam_step(&c1, p1, m1, v1, g, ZR_DT_FP32, NULL, ZR_DT_BF16, N) != 0) return 2;
        for (int i = 0; i < N; i++) {
            hm[i] = b1 * hm[i] + (1 - b1) * g[i];
            hv[i] = b2 * hv[i] + (1 - b2) * (double)g[i] * g[i];
            hp[i] -= lr * hm[i] / (sqrt(hv[i]) + eps);
            if (fabs(p[i] - hp[i]) > 1e-6 + 1e-5 * fabs(hp[i])) bad++;
            if (fabs(p1[i] - hp[i]) > 1e-6 + 1e-5 * fabs(hp[i])) differs++;
        }
    }
    printf("mismatches %d, with-correction differs %d\n", bad, differs);
    return bad == 0 && differs > 0 ? 0 : 1;
}
C
  # shellcheck disable=SC2046
  # (EXTRA_CFLAGS/EXTRA_LDFLAGS: make test SAN=1 exports the sanitizers libzrt was built with)
  if cc -std=c11 -O2 -D_GNU_SOURCE -fopenmp ${EXTRA_CFLAGS:-} -Iruntime -o "$tmp/adam" "$tmp/adam.c" build/libzrt.a \
       $(pkg-config --libs liburing ompi-c 2>/dev/null) -fopenmp -lm -lpthread ${EXTRA_LDFLAGS:-} 2>"$tmp/cc.log"; then
    out=$("$tmp/adam" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then ok "adam_without_correction ($out)"; else bad adam_without_correction "rc $rc: $out"; fi
  else
    bad adam_without_correction "does not compile: $(head -5 "$tmp/cc.log")"
  fi
fi

echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
