/*
** x_llama_kernels.c — runs the host llama kernels (templates/host/llama/) on one micro-batch for
** t_llama_kernels.sh: reads the case torch_llama.py wrote (dims, tokens, targets, fp32 weights in
** the IR's tensor order), runs forward and backward module by module as the trainer will, and writes
** the loss and every parameter gradient for torch_llama.py to compare.
**   x_llama_kernels IN OUT
** IN : int32 hdr[16] {V, C, NH, NKV, F, L, B, T, llama3, original_context, tied, docs}, float64
**      {eps, theta, factor, low_freq_factor, high_freq_factor}, int32 tokens[B*T], targets[B*T]
**      (-1 = ignored), when docs: int32 pos[B*T] (each token's position in its document, docs/DATA.md),
**      then fp32 tensors: embed (V,C); per block input_layernorm (C), q (C,C),
**      k (KV,C), v (KV,C), o (C,C), post_attention_layernorm (C), gate (F,C), up (F,C), down (C,F);
**      norm (C); lm_head (V,C) unless tied.
** OUT: float64 loss, then the gradients in the same order as the tensors (fp32).
*/
#include <stdio.h>
#include <stdlib.h>

#include "../../templates/host/zk_host.c"
#include "../../templates/host/zk_host_attn.c"
#include "../../templates/host/zk_host_ops.c"
#include "../../templates/host/llama/llama_host.c"

static void die(const char *what)
{
    fprintf(stderr, "x_llama_kernels: %s\n", what);
    exit(1);
}

static void rd(FILE *f, void *p, size_t bytes)
{
    if (fread(p, 1, bytes, f) != bytes) die("short input");
}

int main(int argc, char **argv)
{
    if (argc != 3) die("usage: x_llama_kernels IN OUT");
    FILE *f = fopen(argv[1], "rb");
    if (!f) die("cannot open input");
    int hdr[16];
    double par[5];
    rd(f, hdr, sizeof hdr);
    rd(f, par, sizeof par);
    ZlDims d = {.V = hdr[0], .C = hdr[1], .NH = hdr[2], .NKV = hdr[3], .F = hdr[4], .L = hdr[5], .B = hdr[6],
                .T = hdr[7], .rope_llama3 = hdr[8], .rope_original_context = hdr[9], .eps = (float)par[0],
                .rope_theta = par[1], .rope_factor = par[2], .rope_low_freq_factor = par[3],
                .rope_high_freq_factor = par[4]};
    int tied = hdr[10], BT = d.B * d.T;
    size_t C = (size_t)d.C, F = (size_t)d.F, V = (size_t)d.V, KV = (size_t)d.NKV * (d.C / d.NH);
    size_t block = C + C * C + 2 * KV * C + C * C + C + 3 * F * C;
    size_t n = V * C + (size_t)d.L * block + C + (tied ? 0 : V * C);
    int *tok = malloc(sizeof(int) * BT), *tgt = malloc(sizeof(int) * BT);
    float *w = malloc(n * sizeof(float)), *g = calloc(n, sizeof(float));
    rd(f, tok, sizeof(int) * BT);
    rd(f, tgt, sizeof(int) * BT);
    int *pos = NULL;
    if (hdr[11]) {
        pos = malloc(sizeof(int) * BT);
        rd(f, pos, sizeof(int) * BT);
    }
    d.pos = pos;
    rd(f, w, n * sizeof(float));
    fclose(f);
    float *acts = malloc(zl_acts_floats(&d) * sizeof(float)), *scr = malloc(zl_scratch_floats(&d) * sizeof(float));
    ZlActs a;
    zl_acts_carve(&d, acts, scr, &a);
    zk_threads_init(0);

    ZlBlockParams *bp = malloc(sizeof *bp * (size_t)d.L);
    ZlBlockGrads *bg = malloc(sizeof *bg * (size_t)d.L);
    size_t off = V * C;
    for (int l = 0; l < d.L; l++) {
        const float *pw[9];
        float *pg[9];
        size_t sz[9] = {C, C * C, KV * C, KV * C, C * C, C, F * C, F * C, C * F};
        for (int k = 0; k < 9; k++) pw[k] = w + off, pg[k] = g + off, off += sz[k];
        bp[l] = (ZlBlockParams){.ln1_w = pw[0], .q_w = pw[1], .k_w = pw[2], .v_w = pw[3], .o_w = pw[4],
                                .ln2_w = pw[5], .gate_w = pw[6], .up_w = pw[7], .down_w = pw[8]};
        bg[l] = (ZlBlockGrads){.ln1_w = pg[0], .q_w = pg[1], .k_w = pg[2], .v_w = pg[3], .o_w = pg[4],
                               .ln2_w = pg[5], .gate_w = pg[6], .up_w = pg[7], .down_w = pg[8]};
    }
    size_t norm_off = off, head_off = tied ? 0 : off + C;

    zl_embed_forward(&d, tok, w, &a);
    for (int l = 0; l < d.L; l++) zl_block_forward(&d, l, &bp[l], &a);
    zl_final_norm_forward(&d, w + norm_off, &a);
    int count;
    double loss = zl_head_forward(&d, w + head_off, tgt, &a, &count);
    zl_head_backward(&d, w + head_off, g + head_off, tgt, &a, count ? 1.0f / (float)count : 0.0f);
    zl_final_norm_backward(&d, w + norm_off, g + norm_off, &a);
    for (int l = d.L - 1; l >= 0; l--) zl_block_backward(&d, l, &bp[l], &bg[l], &a);
    zl_embed_backward(&d, tok, g, &a);

    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(&loss, sizeof loss, 1, o) != 1 || fwrite(g, sizeof(float), n, o) != n || fclose(o))
        die("cannot write output");
    return 0;
}
