/*
** fz_data.c — libFuzzer harness for the token-file reader (runtime/zr_data.c): llm.c headers with
** lying magic, versions and token counts, raw files of any size. Input: int32 seq_len, int32
** vocab_size, int64 step, then the file. When the file opens, the vocabulary scan and every rank's
** micro-batch of a small geometry are read (the batch offsets must stay inside the tokens: ASan
** watches the reads).
*/
#include "fz_util.h"
#include "zr_data.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fz_scratch();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    ZrData d;
    int seq_len = (int)(uint32_t)fz_take(&data, &size, 4);
    int vocab = (int)(uint32_t)fz_take(&data, &size, 4);
    int64_t step = (int64_t)fz_take(&data, &size, 8);
    snprintf(path, sizeof path, "%s/tokens.bin", fz_scratch());
    fz_write(path, data, size);
    if (zr_data_open(&d, path, seq_len) != 0) return 0;
    (void)zr_data_check_vocab(&d, vocab);
    if (seq_len <= 4096) {
        const int mb = 2, gas = 2, ws = 2;
        int32_t *in = malloc((size_t)mb * (size_t)seq_len * sizeof *in);
        int32_t *tg = malloc((size_t)mb * (size_t)seq_len * sizeof *tg);
        if (in && tg)
            for (int r = 0; r < ws; r++)
                for (int k = 0; k < gas; k++) (void)zr_data_fill_micro(&d, step, seq_len, mb, gas, ws, r, k, in, tg, NULL);
        free(in);
        free(tg);
    }
    zr_data_close(&d);
    return 0;
}
