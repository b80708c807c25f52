/*
** train_hf.h — what a Hugging Face folder export carries beside the weights (runtime/zr_st.h,
** zr_hf_tok.c): the special-token ids, generation_config.json and the tokenizer's files. The
** trainer's sources for them, in their precedence (the data's tokenizer ids, --tokenizer DIR,
** --init-from DIR, then the --resume checkpoint's record), are gathered in one place, so that
** --export and the checkpoint meta that `zgen ckpt --export` reads always agree.
*/
#ifndef TRAIN_HF_H
#define TRAIN_HF_H
#include "zr.h"           /* defines: ZrHfExtra (zr_st.h) */

/* The export's extras from this run's sources (rank 0). -1 with the message in why[cap] when a
** source is unusable; x then holds what the sources before it gave (free it either way). */
int tr_hf_extra(ZrHfExtra *x, char *why, size_t cap);
/* The same, read and dropped: at startup, so that a bad --tokenizer fails before training. */
void tr_hf_check(void);
#endif
