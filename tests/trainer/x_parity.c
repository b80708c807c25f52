/*
** x_parity.c — the host kernels' side of the PyTorch parity test (t_parity.sh).
**
**   x_parity --weights W.safetensors --tokens FILE --NH n --B b --T t --out G.safetensors
**
** Loads GPT-2 weights with Hugging Face names, takes the step-0 batch of docs/SPEC.md from the token
** file (llm.c or raw uint16), runs every module forward and backward through templates/host/ in the
** order the trainer does, and writes "loss" plus every gradient under its parameter's name, for
** torch_gpt2.py compare. A minimal safetensors reader and writer (F32 only) live here until the
** runtime has one.
*/
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../templates/host/zk_host.c"
#include "../../templates/host/zk_host_attn.c"
#include "../../templates/host/zk_host_ops.c"

#define DIE(...) (fprintf(stderr, "x_parity: " __VA_ARGS__), fputc('\n', stderr), exit(1))

/* ---------------------------------------------------------------------- safetensors (F32) */
typedef struct Tensor {
    char name[128];
    int ndim;
    int64_t shape[4];
    float *data;                /* numel floats (owned) */
    int64_t numel;
} Tensor;

typedef struct {
    const char *s, *end;
} Json;

static void ws(Json *j)
{
    while (j->s < j->end && (*j->s == ' ' || *j->s == '\n' || *j->s == '\t' || *j->s == '\r'))
        j->s++;
}
static void expect(Json *j, char c)
{
    ws(j);
    if (j->s >= j->end || *j->s != c) DIE("safetensors header: expected '%c'", c);
    j->s++;
}
static int peek(Json *j, char c)
{
    ws(j);
    return j->s < j->end && *j->s == c;
}
static void jstring(Json *j, char *out, size_t cap)
{
    expect(j, '"');
    size_t n = 0;
    while (j->s < j->end && *j->s != '"') {
        if (*j->s == '\\') j->s++; /* names here never need real unescaping */
        if (n + 1 < cap) out[n++] = *j->s;
        j->s++;
    }
    out[n] = 0;
    expect(j, '"');
}
static int jints(Json *j, int64_t *out, int cap)
{
    int n = 0;
    expect(j, '[');
    while (!peek(j, ']')) {
        char *e;
        long long v = strtoll(j->s, &e, 10);
        if (e == j->s) DIE("safetensors header: bad integer");
        j->s = e;
        if (n < cap) out[n] = v;
        n++;
        if (peek(j, ',')) j->s++;
    }
    expect(j, ']');
    return n;
}
static void jskip_object(Json *j) /* the __metadata__ object: strings only */
{
    char tmp[256];
    expect(j, '{');
    while (!peek(j, '}')) {
        jstring(j, tmp, sizeof tmp);
        expect(j, ':');
        jstring(j, tmp, sizeof tmp);
        if (peek(j, ',')) j->s++;
    }
    expect(j, '}');
}

static Tensor *st_load(const char *path, int *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) DIE("%s: %s", path, strerror(errno));
    uint64_t hlen;
    if (fread(&hlen, 8, 1, f) != 1 || hlen > (1u << 26)) DIE("%s: bad safetensors header", path);
    char *h = malloc(hlen);
    if (fread(h, 1, hlen, f) != hlen) DIE("%s: short header", path);
    long data_start = 8 + (long)hlen;
    Json j = {h, h + hlen};
    Tensor *t = NULL;
    int n = 0;
    expect(&j, '{');
    while (!peek(&j, '}')) {
        char key[128], field[32], dtype[16] = "";
        jstring(&j, key, sizeof key);
        expect(&j, ':');
        if (strcmp(key, "__metadata__") == 0) {
            jskip_object(&j);
        } else {
            t = realloc(t, (size_t)(n + 1) * sizeof *t);
            Tensor *x = &t[n++];
            memset(x, 0, sizeof *x);
            snprintf(x->name, sizeof x->name, "%s", key);
            int64_t off[2] = {0, 0};
            expect(&j, '{');
            while (!peek(&j, '}')) {
                jstring(&j, field, sizeof field);
                expect(&j, ':');
                if (strcmp(field, "dtype") == 0) jstring(&j, dtype, sizeof dtype);
                else if (strcmp(field, "shape") == 0) x->ndim = jints(&j, x->shape, 4);
                else if (strcmp(field, "data_offsets") == 0) jints(&j, off, 2);
                else DIE("%s: unknown field %s", path, field);
                if (peek(&j, ',')) j.s++;
            }
            expect(&j, '}');
            if (strcmp(dtype, "F32") != 0) DIE("%s: %s is %s, not F32", path, key, dtype);
            x->numel = 1;
            for (int i = 0; i < x->ndim; i++) x->numel *= x->shape[i];
            if (off[1] - off[0] != x->numel * 4) DIE("%s: %s: bad data_offsets", path, key);
            x->data = malloc((size_t)x->numel * 4 + 4);
            if (fseek(f, data_start + off[0], SEEK_SET) != 0 ||
                fread(x->data, 4, (size_t)x->numel, f) != (size_t)x->numel)
                DIE("%s: %s: data past the end of the file", path, key);
        }
        if (peek(&j, ',')) j.s++;
    }
    fclose(f);
    free(h);
    *count = n;
    return t;
}

static Tensor *find(Tensor *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    DIE("tensor %s not found", name);
}

static void st_save(const char *path, Tensor *t, int n)
{
    size_t cap = 256 + (size_t)n * 256, len = 0, off = 0;
    char *h = malloc(cap);
    len += (size_t)snprintf(h + len, cap - len, "{");
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                                i ? "," : "", t[i].name);
        for (int k = 0; k < t[i].ndim; k++)
            len += (size_t)snprintf(h + len, cap - len, "%s%lld", k ? "," : "",
                                    (long long)t[i].shape[k]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off,
                                off + (size_t)t[i].numel * 4);
        off += (size_t)t[i].numel * 4;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) DIE("%s: %s", path, strerror(errno));
    uint64_t hl = len;
    fwrite(&hl, 8, 1, f);
    fwrite(h, 1, len, f);
    for (int i = 0; i < n; i++) fwrite(t[i].data, 4, (size_t)t[i].numel, f);
    if (fclose(f) != 0) DIE("%s: write failed", path);
    free(h);
}

/* ---------------------------------------------------------------------- tokens */
static uint16_t *read_tokens(const char *path, long *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) DIE("%s: %s", path, strerror(errno));
    int32_t head[256];
    long skip = 0, n;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    if (size >= 1024 && fread(head, 4, 256, f) == 256 && head[0] == 20240520) {
        if (head[1] != 1) DIE("%s: llm.c version %d, expected 1", path, head[1]);
        skip = 1024, n = head[2];
    } else {
        n = size / 2;
    }
    uint16_t *tok = malloc((size_t)n * 2 + 2);
    fseek(f, skip, SEEK_SET);
    if (fread(tok, 2, (size_t)n, f) != (size_t)n) DIE("%s: short token file", path);
    fclose(f);
    *count = n;
    return tok;
}

/* ---------------------------------------------------------------------- main */
static const char *const BLOCK[12] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
    "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
    "mlp.c_proj.weight", "mlp.c_proj.bias"};

int main(int argc, char **argv)
{
    const char *wpath = NULL, *tpath = NULL, *out = NULL;
    int NH = 0, B = 0, T = 0, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--weights")) wpath = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens")) tpath = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--NH")) NH = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--B")) B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--T")) T = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else DIE("unknown option %s", argv[i]);
    }
    if (!wpath || !tpath || !out || NH <= 0 || B <= 0 || T <= 0)
        DIE("usage: x_parity --weights W --tokens F --NH n --B b --T t --out G [--threads n]");
    zk_threads_init(threads);

    int nt;
    Tensor *W = st_load(wpath, &nt);
    Tensor *wte = find(W, nt, "wte.weight"), *wpe = find(W, nt, "wpe.weight");
    ZkDims d = {.B = B, .T = T, .C = (int)wte->shape[1], .NH = NH, .V = (int)wte->shape[0],
                .eps = 1e-5f};
    char name[160];
    for (;;) {
        snprintf(name, sizeof name, "h.%d.ln_1.weight", d.L);
        int found = 0;
        for (int i = 0; i < nt; i++) found |= !strcmp(W[i].name, name);
        if (!found) break;
        d.L++;
    }
    if (d.L == 0 || d.C % NH || wpe->shape[0] < T) DIE("weights do not fit NH=%d T=%d", NH, T);
    d.F = (int)find(W, nt, "h.0.mlp.c_fc.weight")->shape[1];

    /* gradients: same names, shapes and order as the weights, "loss" first */
    int ng = 1 + 2 + 12 * d.L + 2;
    Tensor *G = calloc((size_t)ng, sizeof *G);
    const Tensor **src = calloc((size_t)ng, sizeof *src);
    snprintf(G[0].name, sizeof G[0].name, "loss");
    G[0].ndim = 1, G[0].shape[0] = 1, G[0].numel = 1, G[0].data = calloc(1, 4);
    int k = 1;
    src[k++] = wte, src[k++] = wpe;
    for (int l = 0; l < d.L; l++)
        for (int i = 0; i < 12; i++) {
            snprintf(name, sizeof name, "h.%d.%s", l, BLOCK[i]);
            src[k++] = find(W, nt, name);
        }
    src[k++] = find(W, nt, "ln_f.weight");
    src[k++] = find(W, nt, "ln_f.bias");
    for (int i = 1; i < ng; i++) {
        G[i] = *src[i];
        G[i].data = calloc((size_t)G[i].numel, 4);
    }

    /* the step-0 batch */
    long ntok;
    uint16_t *tok = read_tokens(tpath, &ntok);
    long span = ntok - T - 1;
    if (span <= 0) DIE("%s: too few tokens", tpath);
    int BT = B * T, *in = malloc((size_t)BT * sizeof(int)), *tg = malloc((size_t)BT * sizeof(int));
    for (int j = 0; j < B; j++) {
        long o = ((long)j * T) % span;
        for (int t = 0; t < T; t++) {
            in[j * T + t] = tok[o + t];
            tg[j * T + t] = tok[o + t + 1];
            if (tok[o + t] >= d.V || tok[o + t + 1] >= d.V) DIE("token out of vocabulary");
        }
    }

    float *acts = malloc(zk_acts_floats(&d) * sizeof(float));
    float *scr = malloc(zk_scratch_floats(&d) * sizeof(float));
    ZkActs a;
    zk_acts_carve(&d, acts, scr, &a);
    zk_embed_forward(&d, in, wte->data, wpe->data, &a);
    for (int l = 0; l < d.L; l++) {
        const Tensor *const *p = src + 3 + 12 * l;
        ZkBlockParams bp = {p[0]->data, p[1]->data, p[2]->data, p[3]->data, p[4]->data,
                            p[5]->data, p[6]->data, p[7]->data, p[8]->data, p[9]->data,
                            p[10]->data, p[11]->data};
        zk_block_forward(&d, l, &bp, &a);
    }
    zk_final_norm_forward(&d, src[ng - 2]->data, src[ng - 1]->data, &a);
    G[0].data[0] = zk_head_forward(&d, wte->data, tg, &a, NULL);
    zk_head_backward(&d, wte->data, G[1].data, tg, &a, 1.0f / (float)BT);
    zk_final_norm_backward(&d, src[ng - 2]->data, G[ng - 2].data, G[ng - 1].data, &a);
    for (int l = d.L - 1; l >= 0; l--) {
        const Tensor *const *p = src + 3 + 12 * l;
        Tensor *g = G + 3 + 12 * l;
        ZkBlockParams bp = {p[0]->data, p[1]->data, p[2]->data, p[3]->data, p[4]->data,
                            p[5]->data, p[6]->data, p[7]->data, p[8]->data, p[9]->data,
                            p[10]->data, p[11]->data};
        ZkBlockGrads bg = {g[0].data, g[1].data, g[2].data, g[3].data, g[4].data, g[5].data,
                           g[6].data, g[7].data, g[8].data, g[9].data, g[10].data, g[11].data};
        zk_block_backward(&d, l, &bp, &bg, &a);
    }
    zk_embed_backward(&d, in, G[1].data, G[2].data, &a);
    st_save(out, G, ng);
    printf("wrote %s: loss %.9g (V=%d C=%d NH=%d F=%d L=%d B=%d T=%d)\n", out, G[0].data[0], d.V,
           d.C, d.NH, d.F, d.L, B, T);
    return 0;
}
