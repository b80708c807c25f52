/*
** fz_st.c — libFuzzer harness for the safetensors reader (runtime/zr_st.c), which `--init-from`
** feeds with files from the internet: header lengths past the file, JSON that lies, dtypes, shapes
** and offsets that disagree, overlaps, numbers at the edges of int64. The whole input is the file.
** When it opens, every entry is read whole and at an input-chosen range, and the file is checked
** against a small expected table with and without extra tensors allowed. The same bytes are also
** a model folder's config.json (checked against a few rows) and its model.safetensors.index.json.
*/
#include "fz_util.h"
#include "zr_st.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fz_scratch();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ZrSt st;
    static const ZrStTensor want[] = {
        {"wte.weight", 2, {4, 2}, NULL},
        {"h.0.ln_1.bias", 1, {2}, NULL},
        {"h.0.attn.c_attn.weight", 2, {2, 6}, NULL},
    };
    static const ZrHfKey rows[] = {
        {"model_type", NULL, "\"llama\"", NULL, 1, 1},
        {"hidden_size", NULL, "64", "4096", 1, 1},
        {"n_positions", "n_ctx", "32", "1024", 1, 1},
        {"rope_scaling", NULL, "null", "null", 1, 1},
        {"rope_scaling.factor", "rope_scaling.type", "8.0", NULL, 0, 1},
        {"architectures", NULL, "[\"X\"]", "", 1, 1},
    };
    ZrStModel m;
    /* the same bytes as a model folder's config.json and as its index (Hugging Face folders) */
    snprintf(path, sizeof path, "%s/hf", fz_scratch());
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/hf/config.json", fz_scratch());
    fz_write(path, data, size);
    (void)zr_st_hf_config_check(path, rows, (int)(sizeof rows / sizeof rows[0]));
    snprintf(path, sizeof path, "%s/hf/model.safetensors.index.json", fz_scratch());
    fz_write(path, data, size);
    snprintf(path, sizeof path, "%s/hf", fz_scratch());
    if (zr_st_model_open(&m, path) == 0) zr_st_model_close(&m);
    snprintf(path, sizeof path, "%s/in.safetensors", fz_scratch());
    fz_write(path, data, size);
    if (zr_st_open(&st, path) != 0) return 0;
    for (int i = 0; i < st.n; i++) {
        const ZrStEntry *e = &st.e[i];
        int64_t n = e->numel < (1 << 20) ? e->numel : (1 << 20);
        float *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
        if (!buf) break;
        if (zr_st_read_range(&st, i, 0, n, buf) != 0 && n == e->numel) abort(); /* validated entry */
        /* a range from the input's last bytes: may be anything, must be refused or read in bounds */
        if (size >= 16) {
            int64_t first, cnt;
            memcpy(&first, data + size - 16, 8);
            memcpy(&cnt, data + size - 8, 8);
            if (cnt >= 0 && cnt <= n) (void)zr_st_read_range(&st, i, first, cnt, buf);
        }
        free(buf);
        if (zr_st_find(&st, e->name) < 0) abort();  /* an entry must find itself */
    }
    (void)zr_st_check(&st, want, 3, 0);
    (void)zr_st_check(&st, want, 3, 1);
    (void)zr_st_find(&st, "transformer.wte.weight");
    zr_st_close(&st);
    return 0;
}
