/*
** ckpt.c — `zgen ckpt DIR --info | --export FILE [--dtype fp32|bf16] [--state S] [--buffer MIB]
** [--tokenizer DIR]`:
** a sharded trainer checkpoint read without launching a job (no MPI, one process).
**   --info    what the checkpoint holds: step, world size, stage, dtype, offload, the tensors with
**             their shapes and which shards hold them, every shard's size and blobs, and whether
**             every blob and chunk checksum holds (this reads every shard end to end).
**   --export  one Hugging Face-named safetensors of the master weights (or, with --state adam_m /
**             adam_v, of Adam's moments) plus config.json beside it (a path not ending in
**             .safetensors is a folder: model.safetensors and config.json inside). config.json comes
**             from the manifest's "hf_config" (the trainer's emitted rows, any arch). The tensors are streamed in
**             table order through one buffer: each piece is read by pread from the shards holding
**             it (chunk CRCs checked), converted, and appended, so memory is the buffer (default
**             8 MiB, plus half of it for bf16) and a 64 KiB chunk per shard, never the model. The
**             fp32 output is byte for byte what the trainer's own --export writes for that state.
**             A folder also gets what the trainer's folder export carries (runtime zr_hf_tok.c):
**             the token ids, generation_config.json and the tokenizer's files, from the manifest's
**             "hf_extra" record and --tokenizer DIR (which wins over the recorded folder).
** It links the runtime's checkpoint reader (zr_ckpt_set) and safetensors writer (zr_st_stream),
** so there is one definition of each format.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "zg.h"
#include "zg_ckpt.h"
#include "../runtime/zr_ckpt.h"
#include "../runtime/zr_half.h"
#include "../runtime/zr_json.h"
#include "../runtime/zr_err.h"
#include "../runtime/zr_st.h"

static const char CK_USAGE[] =
    "usage: zgen ckpt DIR --info\n"
    "       zgen ckpt DIR --export FILE.safetensors|FOLDER [--dtype fp32|bf16] [--state master|adam_m|adam_v]\n"
    "                     [--buffer MIB] [--tokenizer TOKDIR]\n"
    "DIR: a --save directory (its `latest` step) or one step_<N> directory inside it.\n"
    "  --info     step, world size, stage, tensors, shard sizes; reads every shard and checks checksums\n"
    "  --export   streams the tensors into one safetensors (Hugging Face names) + config.json beside it\n"
    "             (a FOLDER: FOLDER/model.safetensors + FOLDER/config.json, for from_pretrained, with\n"
    "             generation_config.json and the tokenizer files of TOKDIR, else of the folder the\n"
    "             checkpoint records);\n"
    "             memory: the buffer (default 8 MiB; 1.5x with bf16) + 64 KiB per shard\n"
    "exit status: 0 ok, 1 bad checkpoint or I/O error, 2 usage\n";

typedef struct Meta {
    char name[64], dtype[16], opt[16], par[16], arch[16];
    int64_t stage, world, vocab, context, d_model, n_layers, n_heads, d_ff, tie, params;
    double eps;
    int have_model;
    /* the manifest's "hf_config" (checkpoints saved since it exists): config.json's keys and their
    ** JSON values, as the trainer's emitted rows had them */
    ZrHfKey *hf;
    int n_hf;
} Meta;

static void get_str(const ZrJson *j, const char *k, char *out, size_t cap)
{
    out[0] = 0;
    if (zr_json_str(j, zr_json_get(j, 0, k), out, cap) != 0) snprintf(out, cap, "?");
}

static int64_t get_int(const ZrJson *j, const char *k, int *ok)
{
    int64_t v = -1;
    if (zr_json_i64(j, zr_json_get(j, 0, k), &v) != 0) *ok = 0;
    return v;
}

static void parse_meta(const char *text, Meta *m)
{
    ZrJson j;
    char err[128];
    int ok = 1;
    memset(m, 0, sizeof *m);
    if (zr_json_parse(&j, text, strlen(text), err, sizeof err) != 0) return;
    get_str(&j, "name", m->name, sizeof m->name);
    get_str(&j, "dtype", m->dtype, sizeof m->dtype);
    get_str(&j, "offload_optimizer", m->opt, sizeof m->opt);
    get_str(&j, "offload_param", m->par, sizeof m->par);
    get_str(&j, "arch", m->arch, sizeof m->arch);
    m->stage = get_int(&j, "stage", &ok);
    m->world = get_int(&j, "world", &ok);
    m->params = get_int(&j, "params", &ok);
    ok = 1;
    m->vocab = get_int(&j, "vocab_size", &ok);
    m->context = get_int(&j, "context", &ok);
    m->d_model = get_int(&j, "d_model", &ok);
    m->n_layers = get_int(&j, "n_layers", &ok);
    m->n_heads = get_int(&j, "n_heads", &ok);
    m->d_ff = get_int(&j, "d_ff", &ok);
    m->tie = get_int(&j, "tie_embeddings", &ok);
    if (zr_json_num(&j, zr_json_get(&j, 0, "norm_eps"), &m->eps) != 0) ok = 0;
    m->have_model = ok;
    int h = zr_json_get(&j, 0, "hf_config");
    if (h >= 0 && j.t[h].type == ZR_JSON_OBJ && j.t[h].n > 0 && (m->hf = calloc((size_t)j.t[h].n, sizeof *m->hf))) {
        for (int k = 0; k < j.t[h].n; k++) {
            int ki = zr_json_item(&j, h, 2 * k), vi = zr_json_item(&j, h, 2 * k + 1);
            char key[128];
            if (ki < 0 || vi < 0 || zr_json_str(&j, ki, key, sizeof key) != 0) continue;
            /* the value's own JSON text (a string's span is inside its quotes) */
            size_t a = j.t[vi].start, b = j.t[vi].end;
            if (j.t[vi].type == ZR_JSON_STR) { a--; b++; }
            char *v = malloc(b - a + 1);
            char *kd = strdup(key);
            if (!v || !kd) { free(v); free(kd); continue; }
            memcpy(v, text + a, b - a);
            v[b - a] = 0;
            m->hf[m->n_hf++] = (ZrHfKey){kd, NULL, v, NULL, 1, 0};
        }
    }
    zr_json_free(&j);
}

/* What a folder export gets beside the weights, as the checkpoint records it (none before it did). */
static void info_extra(const char *meta)
{
    ZrHfExtra x;
    zr_hf_extra_init(&x);
    if (zr_hf_extra_add_meta(&x, meta) < 0) {
        printf("hf extras: %s\n", zr_train_error());
        zr_hf_extra_free(&x);
        return;
    }
    printf("token ids: bos %s, eos %s, pad %s; generation_config %s; tokenizer %s%s\n",
           x.id[ZR_HF_BOS][0] ? x.id[ZR_HF_BOS] : "-", x.id[ZR_HF_EOS][0] ? x.id[ZR_HF_EOS] : "-",
           x.id[ZR_HF_PAD][0] ? x.id[ZR_HF_PAD] : "-", x.gen_base ? "recorded" : "none",
           x.tok_dir[0] ? x.tok_abs : x.tok_gone[0] ? x.tok_gone : "none",
           x.tok_gone[0] ? " (holds no tokenizer now)" : "");
    zr_hf_extra_free(&x);
}

static int info(ZrCkptSet *s, const Meta *m)
{
    int nt, w = zr_ckpt_set_world(s), bad = 0;
    const ZrCkptTensor *t = zr_ckpt_set_tensors(s, &nt);
    int64_t state[2] = {-1, -1};
    uint64_t total = 0, params = 0;
    printf("checkpoint %s (format %d)\n", zr_ckpt_set_dir(s), zr_ckpt_set_version(s));
    printf("step %lld, world size %d, stage %lld, dtype %s, offload optimizer %s, parameters %s, model %s\n",
           (long long)zr_ckpt_set_step(s), w, (long long)m->stage, m->dtype, m->opt, m->par, m->name);
    if (zr_ckpt_set_get(s, 0, "state", state, sizeof state) == 0)
        printf("optimizer steps done %lld, applied %lld\n", (long long)state[0], (long long)state[1]);
    for (int i = 0; i < nt; i++) params += (uint64_t)t[i].numel;
    info_extra(zr_ckpt_set_meta(s));
    printf("tensors %d, elements %llu (fp32 master %.1f MB; master + Adam m, v %.1f MB)\n", nt,
           (unsigned long long)params, params * 4 / 1e6, params * 12 / 1e6);
    for (int i = 0; i < nt; i++) {
        char shape[64];
        int k, n = snprintf(shape, sizeof shape, "[");
        for (k = 0; k < t[i].ndim; k++)
            n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", k ? ", " : "", (long long)t[i].shape[k]);
        snprintf(shape + n, sizeof shape - (size_t)n, "]");
        printf("  %-32s %-16s %12lld\n", t[i].name, shape, (long long)t[i].numel);
    }
    for (int r = 0; r < w; r++) {
        uint64_t bytes = 0, mb = 0, mo = 0;
        int rc = zr_ckpt_set_verify(s, r, &bytes);
        zr_ckpt_set_blob_at(s, r, "master", &mo, &mb);
        total += bytes;
        printf("  shard rank_%05d.zrs  %llu bytes  master %llu bytes at %llu  %s\n", r,
               (unsigned long long)bytes, (unsigned long long)mb, (unsigned long long)mo,
               rc ? "CHECKSUM FAILURE" : "checksums ok");
        if (rc) { fprintf(stderr, "zgen ckpt: %s\n", zr_train_error()); bad = 1; }
    }
    printf("%s: %d shards, %llu bytes read and checked\n", bad ? "checksums FAILED" : "checksums ok", w,
           (unsigned long long)total);
    return bad;
}

/* mkdir -p of the directory part of path */
static void make_parent(const char *path)
{
    char p[1200];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') { *c = 0; mkdir(p, 0755); *c = '/'; }
}

/* Checkpoints whose meta predates the config.json rows (ZgArch ckpt_legacy_config). */
static bool legacy_arch(const char *arch)
{
    const ZgArch *a = zg_arch_find(arch);
    return a && a->ckpt_legacy_config;
}

static int export(ZrCkptSet *s, const Meta *m, const char *path, int bf16, const char *state, int64_t buf_bytes,
                  const char *tokenizer)
{
    int nt, rc = 0;
    ZrHfExtra x;
    /* every source is checked before anything is written: a bad one leaves no half folder */
    zr_hf_extra_init(&x);
    const char *bad = tokenizer && zr_hf_extra_add_tokenizer(&x, tokenizer) < 0 ? "--tokenizer: "
                      : zr_hf_extra_add_meta(&x, zr_ckpt_set_meta(s)) < 0 ? "" : NULL;
    if (bad) {
        fprintf(stderr, "zgen ckpt: %s%s\n", bad, zr_train_error());
        zr_hf_extra_free(&x);
        return 1;
    }
    const ZrCkptTensor *t = zr_ckpt_set_tensors(s, &nt);
    ZrStTensor *st = calloc((size_t)nt + 1, sizeof *st);
    int64_t cap = buf_bytes / 4;
    float *buf = malloc((size_t)cap * 4);
    uint16_t *half = bf16 ? malloc((size_t)cap * 2) : NULL;
    ZrStStream out;
    char gen[96];
    if (!st || !buf || (bf16 && !half)) {
        fprintf(stderr, "zgen ckpt: out of memory\n");
        free(st); free(buf); free(half);
        zr_hf_extra_free(&x);
        return 1;
    }
    /* PATH.safetensors: that file, config.json beside it; any other PATH: a folder that
    ** from_pretrained loads (PATH/model.safetensors + PATH/config.json; one file, unsharded) */
    char file[1100], cfg[1100];
    const char *folder = path;
    size_t pl = strlen(path);
    if (pl > 12 && !strcmp(path + pl - 12, ".safetensors")) {
        folder = NULL;
        const char *slash = strrchr(path, '/');
        snprintf(file, sizeof file, "%s", path);
        snprintf(cfg, sizeof cfg, "%.*s/config.json", slash ? (int)(slash - path) : 1, slash ? path : ".");
    } else {
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
    }
    path = file;
    snprintf(gen, sizeof gen, "zgen %s", m->name);
    const char *md[] = {"format", "pt", "generator", gen, NULL};
    for (int i = 0; i < nt; i++) {
        st[i].name = t[i].name;
        st[i].ndim = t[i].ndim;
        for (int k = 0; k < t[i].ndim; k++) st[i].shape[k] = t[i].shape[k];
    }
    make_parent(path);
    if ((rc = zr_st_stream_begin(&out, path, st, nt, bf16 ? ZR_DT_BF16 : ZR_DT_FP32, md)) != 0) goto fail;
    for (int i = 0; i < nt; i++)
        for (int64_t lo = 0; lo < t[i].numel; lo += cap) {
            int64_t n = t[i].numel - lo < cap ? t[i].numel - lo : cap;
            if ((rc = zr_ckpt_set_read(s, state, i, lo, n, buf, 0)) != 0) { zr_st_stream_abort(&out); goto fail; }
            if (bf16) zr_f32_to_bf16_n(half, buf, n);
            if ((rc = zr_st_stream_write(&out, bf16 ? (const void *)half : buf, (size_t)n * (bf16 ? 2 : 4))) != 0)
                goto fail;
        }
    if ((rc = zr_st_stream_end(&out)) != 0) goto fail;
    if (m->n_hf > 0) {
        if ((rc = zr_hf_extra_config_write(cfg, m->hf, m->n_hf, bf16 ? "bfloat16" : "float32", &x)) != 0)
            goto fail;
    } else if (m->have_model && legacy_arch(m->arch)) {
        ZrGpt2Config c = {(int)m->vocab, (int)m->context, (int)m->d_model, (int)m->n_layers, (int)m->n_heads,
                          (int)m->d_ff, m->eps, (int)m->tie};
        if ((rc = zr_st_write_gpt2_config(cfg, &c)) != 0) goto fail;
    } else {
        fprintf(stderr, "zgen ckpt: warning: the checkpoint's meta has no model description; no "
                "config.json written\n");
    }
    if (folder && (rc = zr_hf_extra_write(&x, folder)) != 0) goto fail;
    if (folder && !x.n_tok) {
        char note[2400];
        zr_hf_extra_note(&x, folder, note, sizeof note);
        fprintf(stderr, "zgen ckpt: note: %s\n", note);
    }
    printf("zgen ckpt: %s: %d tensors, %s, step %lld, from %d shards (%llu bytes read)%s%s\n", path, nt,
           bf16 ? "bf16" : "fp32", (long long)zr_ckpt_set_step(s), zr_ckpt_set_world(s),
           (unsigned long long)zr_ckpt_set_bytes_read(s), x.n_tok ? "; tokenizer from " : "",
           x.n_tok ? x.tok_dir : "");
    free(st); free(buf); free(half);
    zr_hf_extra_free(&x);
    return 0;
fail:
    fprintf(stderr, "zgen ckpt: %s\n", zr_train_error());
    free(st); free(buf); free(half);
    zr_hf_extra_free(&x);
    return 1;
}

int zg_ckpt_main(int argc, char **argv)
{
    const char *dir = NULL, *exp = NULL, *state = "master", *tokenizer = NULL;
    int do_info = 0, bf16 = 0, rc;
    int64_t buf_mib = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(CK_USAGE, stdout); return 0; }
        else if (!strcmp(a, "--info")) do_info = 1;
        else if (!strcmp(a, "--export") && has_val) exp = argv[++i];
        else if (!strcmp(a, "--tokenizer") && has_val) tokenizer = argv[++i];
        else if (!strcmp(a, "--dtype") && has_val) {
            const char *v = argv[++i];
            if (!strcmp(v, "bf16")) bf16 = 1;
            else if (strcmp(v, "fp32")) { fprintf(stderr, "zgen ckpt: --dtype takes fp32 or bf16, not %s\n%s", v, CK_USAGE); return 2; }
        } else if (!strcmp(a, "--state") && has_val) {
            state = argv[++i];
            if (strcmp(state, "master") && strcmp(state, "adam_m") && strcmp(state, "adam_v")) {
                fprintf(stderr, "zgen ckpt: --state takes master, adam_m or adam_v, not %s\n%s", state, CK_USAGE);
                return 2;
            }
        } else if (!strcmp(a, "--buffer") && has_val) {
            char *end;
            buf_mib = strtoll(argv[++i], &end, 10);
            if (*end || buf_mib < 1 || buf_mib > 4096) { fprintf(stderr, "zgen ckpt: bad --buffer %s (MiB, 1..4096)\n", argv[i]); return 2; }
        } else if (a[0] == '-') {
            fprintf(stderr, "zgen ckpt: unknown option or missing value: %s\n%s", a, CK_USAGE);
            return 2;
        } else if (dir) {
            fprintf(stderr, "zgen ckpt: more than one directory: %s\n%s", a, CK_USAGE);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir || (!do_info && !exp)) { fprintf(stderr, "zgen ckpt: give DIR and --info or --export\n%s", CK_USAGE); return 2; }
    size_t el = exp ? strlen(exp) : 0;
    if (tokenizer && (!exp || (el > 12 && !strcmp(exp + el - 12, ".safetensors")))) {
        fprintf(stderr, "zgen ckpt: --tokenizer goes with --export FOLDER (a .safetensors file carries no "
                "tokenizer)\n%s", CK_USAGE);
        return 2;
    }
    ZrCkptSet *s;
    if (zr_ckpt_set_open(&s, dir, -1) < 0) { fprintf(stderr, "zgen ckpt: %s\n", zr_train_error()); return 1; }
    Meta m;
    parse_meta(zr_ckpt_set_meta(s), &m);
    int nt;
    if (!zr_ckpt_set_tensors(s, &nt)) {
        fprintf(stderr, "zgen ckpt: %s is a format-1 checkpoint (no tensor index): resume it with the "
                "trainer that wrote it and --save again to read it here\n", dir);
        zr_ckpt_set_close(s);
        return 1;
    }
    rc = do_info ? info(s, &m) : 0;
    if (!rc && exp) rc = export(s, &m, exp, bf16, state, buf_mib << 20, tokenizer);
    zr_ckpt_set_close(s);
    return rc;
}
