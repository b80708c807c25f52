/*
** t_hf_tok.c — what an export carries beside the weights (runtime/zr_hf_tok.c): the precedence of
** the id sources and the eos-list rule, ids that are no ids, generation_config.json's merge, the
** checkpoint record's round trip (a tokenizer folder that has gone since included), tokenizer
** folders refused or found, the copy (onto itself too) with stale files removed, and config.json
** with the ids. t_hf_export.sh runs the same through the trainer and transformers.
*/
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zr_json.h"
#include "zr_err.h"
#include "zr_st.h"
#include "zt.h"
#include "zt_tmp.h"

static char dir[128];

static void put(const char *name, const char *text)
{
    FILE *f = fopen(zt_tmp_in(dir, name), "w");
    if (f) { fputs(text, f); fclose(f); }
}

/* The whole of dir/name, or "" (static). */
static const char *get(const char *name)
{
    static char buf[8192];
    FILE *f = fopen(zt_tmp_in(dir, name), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

static int exists(const char *name) { struct stat sb; return lstat(zt_tmp_in(dir, name), &sb) == 0; }

static void mk(const char *name) { mkdir(zt_tmp_in(dir, name), 0755); }

static const int none[3] = {-1, -1, -1};

static void t_precedence(void)
{
    ZrHfExtra x;
    const int tok[3] = {1, -1, -1};
    mk("m1");
    put("m1/config.json", "{\"bos_token_id\": 5, \"eos_token_id\": 7, \"pad_token_id\": 0}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, tok);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m1")), 0);
    ZT_EQ_STR(x.id[ZR_HF_BOS], "1");
    ZT_EQ_STR(x.id[ZR_HF_EOS], "7");
    ZT_EQ_STR(x.id[ZR_HF_PAD], "0");
    ZT_CHECK(x.gen_base == NULL && x.n_tok == 0);
    zr_hf_extra_free(&x);
    /* a file given as the model (a .safetensors) adds nothing */
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m1/config.json")), 0);
    ZT_EQ_STR(x.id[ZR_HF_BOS], "");
    zr_hf_extra_free(&x);
}

static void t_eos_list(void)
{
    ZrHfExtra x;
    const int tok[3] = {1, 2, -1};
    mk("m2");
    put("m2/config.json", "{\"eos_token_id\": [\n    7,\n    2\n  ], \"pad_token_id\": -1}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, tok);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m2")), 0);
    ZT_EQ_STR(x.id[ZR_HF_EOS], "[7, 2]");
    ZT_EQ_STR(x.id[ZR_HF_PAD], "");          /* -1 says none */
    zr_hf_extra_free(&x);
    put("m2/config.json", "{\"eos_token_id\": [7, 8], \"bos_token_id\": null}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, tok);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m2")), 0);
    ZT_EQ_STR(x.id[ZR_HF_EOS], "2");         /* a list without ours: ours */
    ZT_EQ_STR(x.id[ZR_HF_BOS], "1");
    zr_hf_extra_free(&x);
    /* the generation config's list counts too */
    put("m2/config.json", "{}");
    put("m2/generation_config.json", "{\"eos_token_id\": [2, 9]}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, tok);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m2")), 0);
    ZT_EQ_STR(x.id[ZR_HF_EOS], "[2, 9]");
    zr_hf_extra_free(&x);
}

static void t_bad_ids(void)
{
    ZrHfExtra x;
    mk("m3");
    put("m3/config.json", "{\"eos_token_id\": \"</s>\"}");
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m3")), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "m3/config.json: \"eos_token_id\" is \"</s>\", not a token id"),
              "%s", zr_train_error());
    zr_hf_extra_free(&x);
    put("m3/config.json", "{\"eos_token_id\": 2,}");
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m3")), -EINVAL);
    ZT_CHECKM(strstr(zr_train_error(), "m3/config.json: not a JSON object"), "%s", zr_train_error());
    zr_hf_extra_free(&x);
}

static void t_genconf(void)
{
    ZrHfExtra x;
    ZrJson j;
    char err[100];
    const int tok[3] = {1, 2, 0};
    mk("m4");
    mk("o4");
    put("m4/generation_config.json", "{\"_from_model_config\": true, \"eos_token_id\": 7, \"do_sample\": true,\n"
                                     " \"nested\": {\"a\": [1, 2]}, \"note\": \"x\\\"y\"}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, tok);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m4")), 0);
    ZT_EQ_CALL(zr_hf_extra_write(&x, zt_tmp_in(dir, "o4")), 0);
    const char *g = get("o4/generation_config.json");
    ZT_EQ_STR(g, "{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n  \"pad_token_id\": 0,\n"
                 "  \"do_sample\": true,\n  \"nested\": {\"a\": [1, 2]},\n  \"note\": \"x\\\"y\"\n}\n");
    ZT_EQ_CALL(zr_json_parse(&j, g, strlen(g), err, sizeof err), 0);
    zr_json_free(&j);
    zr_hf_extra_free(&x);
    /* an id we have none of stays the source's */
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, (const int[3]){1, -1, -1});
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m4")), 0);
    ZT_EQ_CALL(zr_hf_extra_write(&x, zt_tmp_in(dir, "o4")), 0);
    ZT_CHECKM(strstr(get("o4/generation_config.json"), "\"eos_token_id\": 7"), "%s", get("o4/generation_config.json"));
    zr_hf_extra_free(&x);
    /* nothing to say: no file */
    mk("o5");
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_write(&x, zt_tmp_in(dir, "o5")), 0);
    ZT_CHECK(!exists("o5/generation_config.json"));
    zr_hf_extra_free(&x);
}

static void t_tokenizer_folders(void)
{
    ZrHfExtra x;
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "nope")), -ENOENT);
    ZT_CHECKM(strstr(zr_train_error(), "nope: No such file or directory"), "%s", zr_train_error());
    put("afile", "x");
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "afile")), -ENOTDIR);
    mk("t0");
    put("t0/tokenizer_config.json", "{}");   /* configures a tokenizer, is none */
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "t0")), -ENOENT);
    ZT_CHECKM(strstr(zr_train_error(), "holds no tokenizer.json, tokenizer.model"), "%s", zr_train_error());
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "t0")), 0);
    ZT_EQ_INT(x.n_tok, 0);
    mk("t1");
    put("t1/tokenizer.model", "SPM");
    put("t1/tokenizer_config.json", "{\"a\": 1}");
    ZT_CHECK(symlink(zt_tmp_in(dir, "gone"), zt_tmp_in(dir, "t1/special_tokens_map.json")) == 0);
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "t1")), -ENOENT);
    ZT_CHECKM(strstr(zr_train_error(), "t1/special_tokens_map.json: cannot read"), "%s", zr_train_error());
    unlink(zt_tmp_in(dir, "t1/special_tokens_map.json"));
    mk("t1/added_tokens.json");               /* a folder where a file belongs */
    ZT_CHECK(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "t1")) < 0);
    ZT_CHECKM(strstr(zr_train_error(), "t1/added_tokens.json: cannot read: not a regular file"), "%s",
              zr_train_error());
    rmdir(zt_tmp_in(dir, "t1/added_tokens.json"));
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "t1")), 0);
    ZT_EQ_INT(x.n_tok, 2);
    ZT_CHECK(x.tok_abs[0] == '/');
    /* the first source wins: a later folder's tokenizer is not taken */
    mk("t2");
    put("t2/tokenizer.json", "{}");
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "t2")), 0);
    ZT_CHECK(strstr(x.tok_dir, "t1") != NULL);
    zr_hf_extra_free(&x);
}

static void t_copy(void)
{
    ZrHfExtra x;
    mk("t3");
    mk("o3");
    put("t3/tokenizer.json", "{\"model\": 1}");
    put("t3/chat_template.jinja", "{{ bos_token }}");
    put("o3/vocab.txt", "stale");             /* of another tokenizer */
    put("o3/weights.txt", "not ours");
    zr_hf_extra_init(&x);
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "t3")), 0);
    ZT_EQ_CALL(zr_hf_extra_write(&x, zt_tmp_in(dir, "o3")), 0);
    ZT_EQ_STR(get("o3/tokenizer.json"), "{\"model\": 1}");
    ZT_EQ_STR(get("o3/chat_template.jinja"), "{{ bos_token }}");
    ZT_CHECK(!exists("o3/vocab.txt"));
    ZT_EQ_STR(get("o3/weights.txt"), "not ours");
    /* an export into the tokenizer's own folder keeps it */
    ZT_EQ_CALL(zr_hf_extra_write(&x, zt_tmp_in(dir, "t3")), 0);
    ZT_EQ_STR(get("t3/tokenizer.json"), "{\"model\": 1}");
    zr_hf_extra_free(&x);
}

static void t_meta_round_trip(void)
{
    ZrHfExtra x, y;
    char meta[12000];
    mk("tk \"q\\");
    put("tk \"q\\/tokenizer.json", "{}");
    mk("m6");
    put("m6/generation_config.json", "{\"temperature\": 0.6, \"eos_token_id\": [2, 9]}");
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, (const int[3]){1, 2, -1});
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&x, zt_tmp_in(dir, "tk \"q\\")), 0);
    ZT_EQ_CALL(zr_hf_extra_add_folder(&x, zt_tmp_in(dir, "m6")), 0);
    char *text = zr_hf_extra_meta(&x);
    ZT_CHECK(text != NULL);
    snprintf(meta, sizeof meta, "{\"name\": \"m\", \"hf_extra\": %s}", text ? text : "{}");
    free(text);
    zr_hf_extra_init(&y);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, meta), 0);
    ZT_EQ_STR(y.id[ZR_HF_BOS], "1");
    ZT_EQ_STR(y.id[ZR_HF_EOS], "[2, 9]");
    ZT_EQ_STR(y.id[ZR_HF_PAD], "");
    ZT_CHECK(y.gen_base && x.gen_base && !strcmp(y.gen_base, x.gen_base));
    ZT_EQ_STR(y.tok_abs, x.tok_abs);
    ZT_EQ_INT(y.n_tok, 1);
    zr_hf_extra_free(&y);
    /* --tokenizer given to zgen ckpt wins over the record */
    mk("t7");
    put("t7/vocab.json", "{}");
    zr_hf_extra_init(&y);
    ZT_EQ_CALL(zr_hf_extra_add_tokenizer(&y, zt_tmp_in(dir, "t7")), 0);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, meta), 0);
    ZT_CHECK(strstr(y.tok_dir, "t7") != NULL);
    ZT_EQ_STR(y.id[ZR_HF_BOS], "1");
    zr_hf_extra_free(&y);
    /* a record whose folder holds no tokenizer now is noted */
    unlink(zt_tmp_in(dir, "tk \"q\\/tokenizer.json"));
    zr_hf_extra_init(&y);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, meta), 0);
    ZT_EQ_INT(y.n_tok, 0);
    ZT_EQ_STR(y.tok_gone, x.tok_abs);
    char note[9000];
    zr_hf_extra_note(&y, "out", note, sizeof note);
    ZT_CHECKM(strstr(note, "out carries no tokenizer") && strstr(note, "holds none now") &&
              strstr(note, "--tokenizer DIR"), "%s", note);
    zr_hf_extra_free(&y);
    zr_hf_extra_free(&x);
    /* checkpoints saved before the record: nothing, no error */
    zr_hf_extra_init(&y);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, "{\"name\": \"m\", \"hf_config\": {\"eos_token_id\": 3}}"), 0);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, "{}"), 0);
    ZT_EQ_STR(y.id[ZR_HF_EOS], "");
    ZT_CHECK(!y.gen_base && !y.n_tok && !y.tok_gone[0]);
    zr_hf_extra_free(&y);
    zr_hf_extra_init(&y);
    zr_hf_extra_set_tokens(&y, none);
    ZT_EQ_CALL(zr_hf_extra_add_meta(&y, "{\"hf_extra\": {\"bos_token_id\": \"x\"}}"), -EINVAL);
    zr_hf_extra_free(&y);
}

static void t_config(void)
{
    ZrHfExtra x;
    ZrJson j;
    char err[100];
    const ZrHfKey rows[] = {
        {"model_type", NULL, "\"llama\"", NULL, 1, 1},
        {"bos_token_id", NULL, "9", NULL, 1, 0},      /* a row of the same key: ours replaces it */
        {"vocab_size", NULL, "300", NULL, 1, 1},
    };
    zr_hf_extra_init(&x);
    zr_hf_extra_set_tokens(&x, (const int[3]){1, -1, 0});
    snprintf(x.id[ZR_HF_EOS], sizeof x.id[ZR_HF_EOS], "[2, 9]");
    ZT_EQ_CALL(zr_hf_extra_config_write(zt_tmp_in(dir, "config.json"), rows, 3, "float32", &x), 0);
    const char *c = get("config.json");
    ZT_EQ_STR(c, "{\n  \"model_type\": \"llama\",\n  \"vocab_size\": 300,\n  \"bos_token_id\": 1,\n"
                 "  \"eos_token_id\": [2, 9],\n  \"pad_token_id\": 0,\n  \"torch_dtype\": \"float32\"\n}\n");
    ZT_EQ_CALL(zr_json_parse(&j, c, strlen(c), err, sizeof err), 0);
    zr_json_free(&j);
    ZT_EQ_CALL(zr_hf_extra_config_write(zt_tmp_in(dir, "config.json"), rows, 3, "float32", NULL), 0);
    ZT_CHECK(strstr(get("config.json"), "\"bos_token_id\": 9") != NULL);
    zr_hf_extra_free(&x);
}

int main(void)
{
    if (zt_tmpdir_make(dir, sizeof dir, "hftok") != 0) return 1;
    ZT_RUN(t_precedence);
    ZT_RUN(t_eos_list);
    ZT_RUN(t_bad_ids);
    ZT_RUN(t_genconf);
    ZT_RUN(t_tokenizer_folders);
    ZT_RUN(t_copy);
    ZT_RUN(t_meta_round_trip);
    ZT_RUN(t_config);
    zt_tmpdir_remove(dir);
    return zt_end();
}
