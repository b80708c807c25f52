/*
** t_st.c — safetensors: our files read by an independent Python reader (train_ref.py), Python's
** files (F32, BF16, every F16 bit pattern) read by us, byte-identical rewrites, and each validation
** error with the tensor it names. Also the JSON reader under it and the GPT-2 config.json, and
** Hugging Face folders: one file or shards + index written and read back, every index and config.json
** disagreement named.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr.h"
#include "zr_half.h"
#include "zr_st.h"
#include "zt.h"
#include "zt_tmp.h"

#define PY "/usr/bin/python3"

static char dir[64];

static const char *tmp(const char *name) { return zt_tmp_in(dir, name); }

static const char *script(void)
{
    static char p[1024];
    const char *root = getenv("ZT_ROOT");
    snprintf(p, sizeof p, "%s/tests/runtime/train_ref.py", root ? root : ".");
    return p;
}

static int have_py(void) { return access(PY, X_OK) == 0 && access(script(), R_OK) == 0; }

/* Runs the reference script; 0 when it exits 0. Its output goes to our stdout. */
static int py(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", PY, script(), args);
    return system(cmd);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

/* A small GPT-2-like table; values seed + 0.25*i are exact in fp32. */
enum { NT = 5 };
static ZrStTensor tab[NT] = {
    { "wte.weight", 2, { 11, 6 }, NULL }, { "wpe.weight", 2, { 7, 6 }, NULL },
    { "h.0.attn.c_attn.weight", 2, { 6, 18 }, NULL }, { "h.0.ln_1.bias", 1, { 6 }, NULL },
    { "ln_f.weight", 1, { 6 }, NULL },
};
static float *vals[NT];

static void make_values(void)
{
    for (int i = 0; i < NT; i++) {
        int64_t n = tab[i].ndim == 1 ? tab[i].shape[0] : tab[i].shape[0] * tab[i].shape[1];
        vals[i] = malloc((size_t)n * sizeof(float));
        for (int64_t k = 0; k < n; k++) vals[i][k] = (float)(10 * i) + 0.25f * (float)k;
        tab[i].data = vals[i];
    }
}

static void t_write_read(void)
{
    static const char *const meta[] = { "format", "pt", "zgen", "test \"quoted\"", NULL };
    float *dst[NT];
    size_t n1, n2;
    char *a, *b;
    ZT_EQ_INT(zr_st_write(tmp("m.safetensors"), tab, NT, meta), 0);
    ZT_EQ_INT(zr_st_write(tmp("m2.safetensors"), tab, NT, meta), 0);
    a = slurp(tmp("m.safetensors"), &n1);
    b = slurp(tmp("m2.safetensors"), &n2);
    ZT_CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0); /* deterministic bytes */
    if (a) {
        uint64_t h;
        memcpy(&h, a, 8);
        ZT_EQ_INT(h % 8, 0);
        ZT_CHECK(a[8] == '{' && a[8 + h - 1] != 0);
    }
    free(a);
    free(b);
    for (int i = 0; i < NT; i++) dst[i] = calloc(256, sizeof(float));
    ZT_EQ_INT(zr_st_read_all(tmp("m.safetensors"), tab, NT, dst, 0), 0);
    for (int i = 0; i < NT; i++) {
        int64_t n = tab[i].ndim == 1 ? tab[i].shape[0] : tab[i].shape[0] * tab[i].shape[1];
        ZT_CHECKM(memcmp(dst[i], vals[i], (size_t)n * 4) == 0, "%s", tab[i].name);
        free(dst[i]);
    }
}

static void t_python_reads_ours(void)
{
    char args[1024];
    if (!have_py()) ZT_SKIP("no %s", PY);
    ZT_EQ_INT(zr_st_write(tmp("p.safetensors"), tab, NT, NULL), 0);
    snprintf(args, sizeof args, "st-read %s wte.weight:11x6:0,wpe.weight:7x6:10,"
             "h.0.attn.c_attn.weight:6x18:20,h.0.ln_1.bias:6:30,ln_f.weight:6:40", tmp("p.safetensors"));
    ZT_EQ_INT(py(args), 0);
    /* and a deliberately wrong expectation must fail there, or the check proves nothing */
    snprintf(args, sizeof args, "st-read %s wte.weight:11x6:1,wpe.weight:7x6:10,"
             "h.0.attn.c_attn.weight:6x18:20,h.0.ln_1.bias:6:30,ln_f.weight:6:40 2>/dev/null",
             tmp("p.safetensors"));
    ZT_CHECK(py(args) != 0);
}

static int same_float(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}

static void t_we_read_python(void)
{
    char args[512];
    ZrSt st;
    size_t n;
    float *expect, *got = malloc(65536 * sizeof(float));
    static const struct { const char *name; int dtype; int64_t numel; } want[] = {
        { "wte.weight", ZR_DT_FP32, 15 }, { "h.0.ln_1.bias", ZR_DT_BF16, 7 },
        { "all_f16", ZR_DT_FP16, 65536 }, { "scalar", ZR_DT_FP32, 1 } };
    int64_t off = 0;
    if (!have_py()) ZT_SKIP("no %s", PY);
    snprintf(args, sizeof args, "st-write %s >/dev/null", dir);
    ZT_EQ_INT(py(args), 0);
    expect = (float *)slurp(tmp("py_expect.bin"), &n);
    ZT_EQ_INT(n, (15 + 7 + 65536 + 1) * 4);
    ZT_EQ_INT(zr_st_open(&st, tmp("py.safetensors")), 0);
    ZT_EQ_INT(st.n, 4);
    for (int i = 0; i < 4 && st.n == 4; i++) {
        int idx = zr_st_find(&st, want[i].name), bad = 0;
        ZT_CHECKM(idx >= 0, "%s", want[i].name);
        if (idx < 0) continue;
        ZT_EQ_INT(st.e[idx].dtype, want[i].dtype);
        ZT_EQ_INT(st.e[idx].numel, want[i].numel);
        ZT_EQ_INT(zr_st_read_range(&st, idx, 0, want[i].numel, got), 0);
        for (int64_t k = 0; k < want[i].numel; k++) bad += !same_float(got[k], expect[off + k]);
        ZT_CHECKM(bad == 0, "%s: %d values differ from numpy", want[i].name, bad);
        off += want[i].numel;
    }
    {   /* a slice of the F16 tensor, as a shard would read it */
        int idx = zr_st_find(&st, "all_f16");
        ZT_EQ_INT(zr_st_read_range(&st, idx, 1000, 24, got), 0);
        ZT_CHECK(same_float(got[0], expect[22 + 1000]) && same_float(got[23], expect[22 + 1023]));
        ZT_EQ_INT(zr_st_read_range(&st, idx, 65530, 7, got), -EINVAL);
    }
    zr_st_close(&st);
    ZT_EQ_INT(zr_st_open(&st, tmp("py_i64.safetensors")), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "dtype I64") && strstr(zr_train_error(), "tensor x"));
    free(expect);
    free(got);
}

/* Writes a file from a header text and `data` zero bytes; hlen_override != 0 replaces the length. */
static void raw_st(const char *path, const char *header, size_t data, uint64_t hlen_override)
{
    FILE *f = fopen(path, "wb");
    uint64_t h = hlen_override ? hlen_override : strlen(header);
    fwrite(&h, 8, 1, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

static int open_err(const char *path, const char *needle)
{
    ZrSt st;
    int rc = zr_st_open(&st, path);
    if (rc == 0) { zr_st_close(&st); printf("  opened %s\n", path); return 0; }
    if (!strstr(zr_train_error(), needle)) { printf("  message: %s\n", zr_train_error()); return 0; }
    return 1;
}

static void t_validation(void)
{
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
    ZrSt st;
    raw_st(tmp("ok.st"), ok, 24, 0);
    ZT_EQ_INT(zr_st_open(&st, tmp("ok.st")), 0);
    zr_st_close(&st);
    raw_st(tmp("trunc.st"), ok, 20, 0);
    ZT_CHECK(open_err(tmp("trunc.st"), "tensor a: data_offsets [0, 24] outside the 20 data bytes"));
    raw_st(tmp("hlen.st"), ok, 24, 1u << 20);
    ZT_CHECK(open_err(tmp("hlen.st"), "header length 1048576"));
    raw_st(tmp("json.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],}}", 24, 0);
    ZT_CHECK(open_err(tmp("json.st"), "not valid JSON"));
    raw_st(tmp("span.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24, 0);
    ZT_CHECK(open_err(tmp("span.st"), "need 24"));
    raw_st(tmp("over.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, 0);
    ZT_CHECK(open_err(tmp("over.st"), "overlap"));
    raw_st(tmp("dup.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                          "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, 0);
    ZT_CHECK(open_err(tmp("dup.st"), "appears twice"));
    raw_st(tmp("neg.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, 0);
    ZT_CHECK(open_err(tmp("neg.st"), "shape[0]"));
    raw_st(tmp("key.st"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"offsets\":[0,4]}}", 4, 0);
    ZT_CHECK(open_err(tmp("key.st"), "exactly dtype"));
    {
        FILE *f = fopen(tmp("short.st"), "wb");
        fwrite("abc", 1, 3, f);
        fclose(f);
        ZT_CHECK(open_err(tmp("short.st"), "shorter than"));
    }
    ZT_CHECK(open_err(tmp("nofile.st"), "nofile.st"));
}

static void t_expected_table(void)
{
    ZrStTensor want[NT];
    ZrSt st;
    const char *e;
    ZT_EQ_INT(zr_st_write(tmp("t.safetensors"), tab, NT, NULL), 0);
    ZT_EQ_INT(zr_st_open(&st, tmp("t.safetensors")), 0);
    memcpy(want, tab, sizeof want);
    ZT_EQ_INT(zr_st_check(&st, want, NT, 0), 0);
    want[1].shape[0] = 8;                  /* wrong shape */
    want[3].name = "h.0.ln_1.weight";      /* missing; makes h.0.ln_1.bias extra */
    ZT_EQ_INT(zr_st_check(&st, want, NT, 0), -EINVAL);
    e = zr_train_error();
    ZT_CHECK(strstr(e, "3 problems") != NULL);
    ZT_CHECK(strstr(e, "wpe.weight has shape [7, 6], expected [8, 6]") != NULL);
    ZT_CHECK(strstr(e, "missing h.0.ln_1.weight") != NULL);
    ZT_CHECK(strstr(e, "unexpected tensor h.0.ln_1.bias") != NULL);
    ZT_EQ_INT(zr_st_check(&st, want, NT, 1), -EINVAL); /* extras allowed, the rest still wrong */
    ZT_CHECK(strstr(zr_train_error(), "2 problems") != NULL);
    memcpy(want, tab, sizeof want);
    ZT_EQ_INT(zr_st_check(&st, want, NT - 1, 1), 0);    /* HF files carry extra buffers */
    zr_st_close(&st);
    {   /* GPT2LMHeadModel files prefix names with "transformer." */
        ZrStTensor pre = tab[0];
        pre.name = "transformer.wte.weight";
        ZT_EQ_INT(zr_st_write(tmp("hf.safetensors"), &pre, 1, NULL), 0);
        ZT_EQ_INT(zr_st_open(&st, tmp("hf.safetensors")), 0);
        ZT_EQ_INT(zr_st_find(&st, "wte.weight"), 0);
        ZT_EQ_INT(zr_st_check(&st, tab, 1, 0), 0);
        zr_st_close(&st);
    }
    {   /* a table row (1-D rows carry shape[1] = 0) becomes the same entry as a hand-made one */
        ZrTensorRow row = { .name = "h.0.ln_1.bias", .ndim = 1, .shape = { 6, 0 }, .numel = 6 };
        ZrStTensor t;
        zr_st_from_row(&t, &row, vals[3]);
        ZT_EQ_INT(zr_st_write(tmp("row.safetensors"), &t, 1, NULL), 0);
        ZT_EQ_INT(zr_st_open(&st, tmp("row.safetensors")), 0);
        ZT_EQ_INT(zr_st_check(&st, &tab[3], 1, 0), 0);
        zr_st_close(&st);
    }
    {   /* writer refuses duplicates */
        ZrStTensor two[2] = { tab[0], tab[0] };
        ZT_EQ_INT(zr_st_write(tmp("dup.safetensors"), two, 2, NULL), -EINVAL);
        ZT_CHECK(access(tmp("dup.safetensors"), F_OK) != 0);
    }
}

static void t_json(void)
{
    static const char *const bad[] = { "", "{", "{\"a\":1,}", "[1,]", "01", "1.", "\"abc", "{\"a\" 1}",
                                       "[1] x", "\"\\q\"", "tru", "{1:2}", "\"a\nb\"" };
    const char *doc = " {\"k\\u00e9y\": [1, -2.5e3, true, false, null, {\"x\": \"\\ud83d\\ude00\\n\"}], "
                      "\"n\": 18446744073709551615, \"m\": -9} ";
    ZrJson j;
    char err[128], s[64];
    uint64_t u;
    int64_t i64;
    double d;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ZT_CHECKM(zr_json_parse(&j, bad[k], strlen(bad[k]), err, sizeof err) == -EINVAL, "accepted '%s'", bad[k]);
    }
    ZT_EQ_INT(zr_json_parse(&j, doc, strlen(doc), err, sizeof err), 0);
    if (j.t) {
        int arr = zr_json_get(&j, 0, "k\xc3\xa9y"), o;
        ZT_CHECK(arr > 0 && j.t[arr].type == ZR_JSON_ARR && j.t[arr].n == 6);
        ZT_EQ_INT(zr_json_num(&j, zr_json_item(&j, arr, 1), &d), 0);
        ZT_CHECK(d == -2500.0);
        ZT_EQ_INT(j.t[zr_json_item(&j, arr, 4)].type, ZR_JSON_NULL);
        o = zr_json_item(&j, arr, 5);
        ZT_EQ_INT(zr_json_str(&j, zr_json_get(&j, o, "x"), s, sizeof s), 0);
        ZT_CHECK(!strcmp(s, "\xf0\x9f\x98\x80\n"));
        ZT_EQ_INT(zr_json_u64(&j, zr_json_get(&j, 0, "n"), &u), 0);
        ZT_CHECK(u == UINT64_MAX);
        ZT_EQ_INT(zr_json_i64(&j, zr_json_get(&j, 0, "n"), &i64), -ERANGE);
        ZT_EQ_INT(zr_json_i64(&j, zr_json_get(&j, 0, "m"), &i64), 0);
        ZT_EQ_INT(i64, -9);
        ZT_EQ_INT(zr_json_u64(&j, zr_json_item(&j, arr, 1), &u), -EINVAL);
        ZT_EQ_INT(zr_json_get(&j, 0, "absent"), -1);
        zr_json_free(&j);
    }
    {   /* depth bound */
        char deep[400];
        memset(deep, '[', 200);
        memset(deep + 200, ']', 200);
        ZT_EQ_INT(zr_json_parse(&j, deep, 400, err, sizeof err), -EINVAL);
        ZT_CHECK(strstr(err, "deep") != NULL);
    }
}

static void t_config(void)
{
    ZrGpt2Config c = { 256, 128, 96, 3, 4, 384, 1e-5, 1 };
    size_t n;
    char *text, args[600], v[64];
    ZrJson j;
    uint64_t u;
    double eps;
    ZT_EQ_INT(zr_st_write_gpt2_config(tmp("config.json"), &c), 0);
    text = slurp(tmp("config.json"), &n);
    ZT_EQ_INT(zr_json_parse(&j, text, n, NULL, 0), 0);
    ZT_EQ_INT(zr_json_str(&j, zr_json_get(&j, 0, "model_type"), v, sizeof v), 0);
    ZT_EQ_STR(v, "gpt2");
    ZT_EQ_INT(zr_json_str(&j, zr_json_item(&j, zr_json_get(&j, 0, "architectures"), 0), v, sizeof v), 0);
    ZT_EQ_STR(v, "GPT2LMHeadModel");
    ZT_EQ_INT(zr_json_u64(&j, zr_json_get(&j, 0, "n_inner"), &u), 0);
    ZT_EQ_INT(u, 384);
    ZT_EQ_INT(zr_json_u64(&j, zr_json_get(&j, 0, "n_positions"), &u), 0);
    ZT_EQ_INT(u, 128);
    ZT_EQ_INT(zr_json_num(&j, zr_json_get(&j, 0, "layer_norm_epsilon"), &eps), 0);
    ZT_CHECK(eps == 1e-5);
    ZT_EQ_INT(j.t[zr_json_get(&j, 0, "tie_word_embeddings")].type, ZR_JSON_TRUE);
    zr_json_free(&j);
    free(text);
    if (have_py()) {
        snprintf(args, sizeof args, "json %s >/dev/null", tmp("config.json"));
        ZT_EQ_INT(py(args), 0);
    }
    c.n_head = 5;
    ZT_EQ_INT(zr_st_write_gpt2_config(tmp("bad.json"), &c), -EINVAL);
}

/* {===== Hugging Face folders (zr_st_hf.c) */

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static float bf16_round(float v) { return zr_bf16_to_f32(zr_f32_to_bf16(v)); }

static void t_folder_single(void)
{
    ZrStModel m;
    char d[300];
    float got[128];
    int f, idx;
    snprintf(d, sizeof d, "%s/single", dir);
    mkdir(d, 0755);
    ZT_EQ_INT(zr_st_write_model(d, tab, NT, ZR_DT_FP32, 0, NULL), 0);
    ZT_CHECK(access(tmp("single/model.safetensors"), F_OK) == 0);
    ZT_CHECK(access(tmp("single/model.safetensors.index.json"), F_OK) != 0);
    ZT_EQ_INT(zr_st_model_open(&m, d), 0);
    ZT_EQ_INT(m.nf, 1);
    ZT_EQ_STR(m.config, "");            /* no config.json in this folder */
    ZT_EQ_INT(zr_st_model_check(&m, tab, NT, NULL, 0), 0);
    ZT_EQ_INT(zr_st_model_find(&m, "h.0.attn.c_attn.weight", &f, &idx), 0);
    ZT_EQ_INT(zr_st_read_range(&m.f[f], idx, 5, 3, got), 0);
    ZT_CHECK(got[0] == 20 + 1.25f && got[2] == 20 + 1.75f);
    ZT_EQ_INT(zr_st_model_find(&m, "nope", &f, &idx), -ENOENT);
    {   /* a long list of problems is cut, the count and the HINT stay */
        static char names[40][64];
        ZrStTensor many[40];
        for (int i = 0; i < 40; i++) {
            snprintf(names[i], sizeof names[i], "model.layers.%d.self_attn.q_proj.weight", i);
            many[i] = tab[0];
            many[i].name = names[i];
        }
        ZT_EQ_INT(zr_st_model_check(&m, many, 40, NULL, 0), -EINVAL);
        ZT_CHECK(strstr(zr_train_error(), "45 problems") != NULL);
        ZT_CHECK(strstr(zr_train_error(), " ... (HINT: ") != NULL);
    }
    zr_st_model_close(&m);
    /* a file path still opens as a one-file model */
    ZT_EQ_INT(zr_st_model_open(&m, tmp("single/model.safetensors")), 0);
    ZT_EQ_INT(zr_st_model_check(&m, tab, NT, NULL, 0), 0);
    zr_st_model_close(&m);
}

static void t_folder_shards(void)
{
    /* bf16 bytes: wte 132, wpe 84, c_attn 216, ln_1.bias 12, ln_f 12; with shards of at most 100
    ** bytes filled in order, one too large alone: {wte} {wpe} {c_attn} {ln_1.bias, ln_f} */
    static const char *const file_of[NT] = {"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                                            "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors",
                                            "model-00004-of-00004.safetensors"};
    ZrStModel m;
    ZrJson j;
    char d[300], name[100], v[64];
    size_t n;
    uint64_t total;
    char *text;
    snprintf(d, sizeof d, "%s/shards", dir);
    mkdir(d, 0755);
    ZT_EQ_INT(zr_st_write_model(d, tab, NT, ZR_DT_BF16, 100, NULL), 0);
    text = slurp(tmp("shards/model.safetensors.index.json"), &n);
    ZT_CHECK(text != NULL);
    if (!text) return;
    ZT_EQ_INT(zr_json_parse(&j, text, n, NULL, 0), 0);
    ZT_EQ_INT(zr_json_u64(&j, zr_json_get(&j, zr_json_get(&j, 0, "metadata"), "total_size"), &total), 0);
    ZT_EQ_INT(total, 456);
    for (int i = 0; i < NT; i++) {
        int w = zr_json_get(&j, 0, "weight_map");
        ZT_EQ_INT(zr_json_str(&j, zr_json_get(&j, w, tab[i].name), v, sizeof v), 0);
        ZT_EQ_STR(v, file_of[i]);
        snprintf(name, sizeof name, "shards/%s", file_of[i]);
        ZT_CHECK(access(tmp(name), F_OK) == 0);
    }
    zr_json_free(&j);
    free(text);
    ZT_EQ_INT(zr_st_model_open(&m, d), 0);
    ZT_EQ_INT(m.nf, 4);
    ZT_EQ_INT(zr_st_model_check(&m, tab, NT, NULL, 0), 0);
    for (int i = 0; i < NT; i++) {
        int f, idx;
        float got[128];
        int64_t ne = tab[i].ndim == 1 ? tab[i].shape[0] : tab[i].shape[0] * tab[i].shape[1];
        ZT_EQ_INT(zr_st_model_find(&m, tab[i].name, &f, &idx), 0);
        ZT_CHECK(strstr(m.f[f].path, file_of[i]) != NULL);
        ZT_EQ_INT(m.f[f].e[idx].dtype, ZR_DT_BF16);
        ZT_EQ_INT(zr_st_read_range(&m.f[f], idx, 0, ne, got), 0);
        for (int64_t k = 0; k < ne; k++) ZT_CHECKM(got[k] == bf16_round(vals[i][k]), "%s[%lld]", tab[i].name, (long long)k);
    }
    {   /* names what differs, with the file */
        ZrStTensor want[NT];
        const char *ig[] = {".c_attn.weight"};
        memcpy(want, tab, sizeof want);
        want[1].shape[0] = 8;
        want[4].name = "ln_f.bias";
        ZT_EQ_INT(zr_st_model_check(&m, want, NT, NULL, 0), -EINVAL);
        const char *e = zr_train_error();
        ZT_CHECK(strstr(e, "3 problems") != NULL);
        ZT_CHECK(strstr(e, "model-00002-of-00004.safetensors: wpe.weight has shape [7, 6], expected [8, 6]") != NULL);
        ZT_CHECK(strstr(e, "missing ln_f.bias") != NULL);
        ZT_CHECK(strstr(e, "model-00004-of-00004.safetensors: unexpected tensor ln_f.weight") != NULL);
        want[2].name = "h.0.attn.other";   /* now c_attn is unexpected too, but ignored by suffix */
        ZT_EQ_INT(zr_st_model_check(&m, want, NT, ig, 1), -EINVAL);
        ZT_CHECK(strstr(zr_train_error(), "4 problems") != NULL);
        ZT_CHECK(strstr(zr_train_error(), "unexpected tensor h.0.attn.c_attn.weight") == NULL);
    }
    zr_st_model_close(&m);
    /* a single file written later replaces the index (and the stale index goes) */
    ZT_EQ_INT(zr_st_write_model(d, tab, NT, ZR_DT_BF16, 0, NULL), 0);
    ZT_CHECK(access(tmp("shards/model.safetensors.index.json"), F_OK) != 0);
}

static void t_index_errors(void)
{
    ZrStModel m;
    char d[300];
    snprintf(d, sizeof d, "%s/idx", dir);
    mkdir(d, 0755);
    ZT_EQ_INT(zr_st_write(tmp("idx/a.safetensors"), tab, 2, NULL), 0);
    ZT_EQ_INT(zr_st_model_open(&m, d), -ENOENT);
    ZT_CHECK(strstr(zr_train_error(), "without model.safetensors or model.safetensors.index.json") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"), "{\"metadata\": {}}");
    ZT_EQ_INT(zr_st_model_open(&m, d), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "no \"weight_map\"") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"), "{\"weight_map\": {\"wte.weight\": \"../a.safetensors\"}}");
    ZT_EQ_INT(zr_st_model_open(&m, d), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "weight_map[\"wte.weight\"] is not a file name of this folder") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"),
             "{\"weight_map\": {\"wte.weight\": \"a.safetensors\", \"wpe.weight\": \"a.safetensors\", "
             "\"ln_f.weight\": \"a.safetensors\"}}");
    ZT_EQ_INT(zr_st_model_open(&m, d), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "weight_map puts ln_f.weight in") != NULL);
    ZT_CHECK(strstr(zr_train_error(), "a.safetensors, which holds no such tensor") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"), "{\"weight_map\": {\"wte.weight\": \"a.safetensors\"}}");
    ZT_EQ_INT(zr_st_model_open(&m, d), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "a.safetensors: holds wpe.weight, which") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"), "{\"weight_map\": {\"wte.weight\": \"b.safetensors\"}}");
    ZT_EQ_INT(zr_st_model_open(&m, d), -ENOENT);       /* the shard itself is missing */
    ZT_CHECK(strstr(zr_train_error(), "b.safetensors") != NULL);
    put_text(tmp("idx/model.safetensors.index.json"),
             "{\"metadata\": {\"total_size\": 216}, \"weight_map\": {\"wte.weight\": \"a.safetensors\", "
             "\"wpe.weight\": \"a.safetensors\"}}");
    put_text(tmp("idx/config.json"), "{}");
    ZT_EQ_INT(zr_st_model_open(&m, d), 0);
    ZT_CHECK(strstr(m.config, "idx/config.json") != NULL);
    ZT_EQ_INT(zr_st_model_check(&m, tab, 2, NULL, 0), 0);
    zr_st_model_close(&m);
}

static void t_hf_config(void)
{
    static const ZrHfKey k[] = {
        {"architectures", NULL, "[\"LlamaForCausalLM\"]", "", 1, 0},
        {"model_type", NULL, "\"llama\"", NULL, 1, 1},
        {"hidden_size", NULL, "64", "4096", 1, 1},
        {"n_positions", "n_ctx", "32", "1024", 1, 1},
        {"num_key_value_heads", NULL, "2", "4", 1, 1},
        {"rms_norm_eps", NULL, "1e-05", "1e-06", 1, 1},
        {"rope_scaling", NULL, "{\"rope_type\": \"llama3\", \"factor\": 8.0}", "null", 1, 0},
        {"rope_scaling.factor", NULL, "8.0", NULL, 0, 1},
        {"rope_scaling.rope_type", "rope_scaling.type", "\"llama3\"", NULL, 0, 1},
        {"tie_word_embeddings", NULL, "false", "false", 1, 1},
    };
    const int n = (int)(sizeof k / sizeof k[0]);
    ZrJson j;
    size_t len;
    char *text, v[64];
    double x;
    ZT_EQ_INT(zr_st_hf_config_write(tmp("hf.json"), k, n, "bfloat16"), 0);
    text = slurp(tmp("hf.json"), &len);
    ZT_EQ_INT(zr_json_parse(&j, text, len, NULL, 0), 0);
    ZT_EQ_INT(zr_json_str(&j, zr_json_get(&j, 0, "torch_dtype"), v, sizeof v), 0);
    ZT_EQ_STR(v, "bfloat16");
    ZT_EQ_INT(zr_json_num(&j, zr_json_get(&j, zr_json_get(&j, 0, "rope_scaling"), "factor"), &x), 0);
    ZT_CHECK(x == 8.0);
    ZT_EQ_INT(zr_json_get(&j, 0, "rope_scaling.factor"), -1);      /* check-only rows are not written */
    zr_json_free(&j);
    free(text);
    ZT_EQ_INT(zr_st_hf_config_check(tmp("hf.json"), k, n), 0);      /* agrees with itself */
    /* another spelling of numbers, the alt key, defaults where the model has them: agrees */
    put_text(tmp("ok.json"), "{\"model_type\": \"llama\", \"hidden_size\": 64.0, \"n_ctx\": 32, "
             "\"num_key_value_heads\": 2, \"rms_norm_eps\": 1.0e-5, \"rope_scaling\": {\"type\": \"llama3\", "
             "\"factor\": 8}, \"tie_word_embeddings\": null, \"unrelated\": [1, 2]}");
    ZT_EQ_INT(zr_st_hf_config_check(tmp("ok.json"), k, n), 0);
    /* each disagreement named with both values */
    put_text(tmp("bad.json"), "{\"model_type\": \"gpt2\", \"hidden_size\": 128, \"rms_norm_eps\": 1e-6, "
             "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 4.0}, \"tie_word_embeddings\": true}");
    ZT_EQ_INT(zr_st_hf_config_check(tmp("bad.json"), k, n), -EINVAL);
    const char *e = zr_train_error();
    ZT_CHECK(strstr(e, "7 keys disagree") != NULL);
    ZT_CHECK(strstr(e, "\"model_type\" is \"gpt2\", the model has \"llama\"") != NULL);
    ZT_CHECK(strstr(e, "\"hidden_size\" is 128, the model has 64") != NULL);
    ZT_CHECK(strstr(e, "\"n_positions\" is missing, which means 1024, the model has 32") != NULL);
    ZT_CHECK(strstr(e, "\"num_key_value_heads\" is missing, which means 4, the model has 2") != NULL);
    ZT_CHECK(strstr(e, "\"rms_norm_eps\" is 1e-6, the model has 1e-05") != NULL);
    ZT_CHECK(strstr(e, "\"rope_scaling.factor\" is 4.0, the model has 8.0") != NULL);
    ZT_CHECK(strstr(e, "\"tie_word_embeddings\" is true, the model has false") != NULL);
    put_text(tmp("noscale.json"), "{\"model_type\": \"llama\", \"hidden_size\": 64, \"n_positions\": 32, "
             "\"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-5, \"rope_scaling\": null}");
    ZT_EQ_INT(zr_st_hf_config_check(tmp("noscale.json"), k, n), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "no \"rope_scaling.factor\", the model has 8.0") != NULL);
    put_text(tmp("notjson.json"), "{\"a\": }");
    ZT_EQ_INT(zr_st_hf_config_check(tmp("notjson.json"), k, n), -EINVAL);
    ZT_CHECK(strstr(zr_train_error(), "notjson.json: not a JSON object") != NULL);
}

/* A ZeRO-3 rank reads only the ranges it owns: after the page cache of a 16 MiB shard is dropped,
** reading 1 MiB from its middle leaves only a little of the file resident (the header, that range,
** the kernel's read-ahead), counted with mincore on a mapping of our own. */
static void t_ranges_only(void)
{
    enum { NBIG = 4 << 20 };            /* floats: 16 MiB */
    ZrStTensor big = { "big.weight", 2, { 1024, NBIG / 1024 }, NULL };
    ZrStModel m;
    char d[300];
    unsigned char *vec;
    size_t bytes, pages, resident = 0;
    long pg = sysconf(_SC_PAGESIZE);
    float *vals_big = calloc(NBIG, sizeof *vals_big), *got = malloc((1 << 18) * sizeof *got);
    int fd, f, idx;
    snprintf(d, sizeof d, "%s/big", dir);
    mkdir(d, 0755);
    big.data = vals_big;
    ZT_EQ_INT(zr_st_write_model(d, &big, 1, ZR_DT_FP32, 0, NULL), 0);
    free(vals_big);
    fd = open(tmp("big/model.safetensors"), O_RDONLY);
    bytes = (size_t)lseek(fd, 0, SEEK_END);
    pages = (bytes + (size_t)pg - 1) / (size_t)pg;
    vec = malloc(pages);
    void *probe = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    mincore(probe, bytes, vec);
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    if (resident > pages / 8) {
        munmap(probe, bytes); close(fd); free(vec); free(got);
        ZT_SKIP("this file system keeps the file's pages resident (%zu of %zu after DONTNEED)", resident, pages);
    }
    ZT_EQ_INT(zr_st_model_open(&m, d), 0);
    ZT_EQ_INT(zr_st_model_find(&m, "big.weight", &f, &idx), 0);
    ZT_EQ_INT(zr_st_read_range(&m.f[f], idx, NBIG / 2, 1 << 18, got), 0);
    mincore(probe, bytes, vec);
    resident = 0;
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    ZT_CHECKM(resident * (size_t)pg < 4u << 20, "%zu KiB of the 16 MiB file resident after reading 1 MiB",
              resident * (size_t)pg >> 10);
    ZT_CHECK(resident * (size_t)pg >= 1u << 20);     /* the range itself was read */
    printf("# t_ranges_only: %zu KiB of the %zu KiB file resident after reading 1024 KiB of it\n",
           resident * (size_t)pg >> 10, bytes >> 10);
    zr_st_model_close(&m);
    munmap(probe, bytes);
    close(fd);
    free(vec);
    free(got);
}

/* }===== */

int main(void)
{
    if (zt_tmpdir_make(dir, sizeof dir, "st")) return 1;
    make_values();
    ZT_RUN(t_write_read);
    ZT_RUN(t_python_reads_ours);
    ZT_RUN(t_we_read_python);
    ZT_RUN(t_validation);
    ZT_RUN(t_expected_table);
    ZT_RUN(t_json);
    ZT_RUN(t_config);
    ZT_RUN(t_folder_single);
    ZT_RUN(t_folder_shards);
    ZT_RUN(t_index_errors);
    ZT_RUN(t_hf_config);
    ZT_RUN(t_ranges_only);
    zt_tmpdir_remove(dir);
    return zt_end();
}
