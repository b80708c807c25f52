/*
** t_auto.c — "auto" in a DeepSpeed config, filled as Hugging Face's Trainer fills it
** (transformers' HfTrainerDeepSpeedConfig) from the spec's train.* keys and zgen --steps: every
** value an HF-style config resolves to, checked against the spec's numbers and HF's defaults written
** out here (adam_beta1 0.9, adam_beta2 0.999, adam_epsilon 1e-8, weight_decay 0, max_grad_norm 1.0,
** gradient_accumulation_steps 1, warmup_steps 0, no --bf16/--fp16); the line printed for each "auto"
** and plan.txt's rows; the precision from train.dtype; warmup 0, not DeepSpeed's 1000; the errors for
** an "auto" HF does not fill, for a missing --steps and for a config that contradicts the spec; the
** sizing keys; and ZG_GEN_ARGS's quoting.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zt.h"
#include "zt_tmp.h"

#define HF "specs/configs/hf_auto.json"

static ZgModel model(int ws)
{
    ZgModel m;
    zg_model_defaults(&m);
    m.name = "t";
    m.vocab_size = 256, m.context = 128, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.d_ff = 256;
    m.seq_len = 128;
    zg_model_set_world_size(&m, ws);
    return m;
}

static const ZgLoc spec_at = {"spec.yaml", 9, 3};

static int load(const char *text, const ZgModel *m, ZgZero *z)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    ZgNode *root = zg_node_load_string(text, "t.json");
    if (root) zg_zero_load_node(root, "t.json", m, z);
    else zg_zero_defaults(z);
    if (root) zg_check(m, z);
    return zg_error_count();
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* 1-based line of the first occurrence of needle in text, counted here; 0 if absent. */
static int line_of(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    if (!p) return 0;
    int line = 1;
    for (const char *q = text; q < p; q++) line += *q == '\n';
    return line;
}

static const ZgTrainRow *row(const ZgTrainRow *rows, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].key, key)) return &rows[i];
    return NULL;
}

/* specs/configs/hf_auto.json with specs/tiny.yaml and --steps 20: every value from tiny.yaml's
** train: keys (micro 4, lr 1e-3, weight decay 0.1; world size 2) or HF's defaults (warmup 0). */
static void t_hf_config(void)
{
    char *spec = slurp("specs/tiny.yaml");
    ZT_CHECKM(spec && strstr(spec, "micro_batch_size: 4") && strstr(spec, "lr: 1.0e-3") &&
              strstr(spec, "weight_decay: 0.1") && !strstr(spec, "warmup_steps") && strstr(spec, "world_size: 2"),
              "specs/tiny.yaml's train: keys changed; update the expected values here");
    ZgModel m;
    ZgZero z;
    zg_diag_reset();
    zg_diag_quiet(true);
    zg_spec_load("specs/tiny.yaml", &m);
    m.steps = 20;
    zg_zero_load_file(HF, &m, &z);
    zg_check(&m, &z);
    ZT_CHECKM(zg_error_count() == 0 && zg_warn_count() == 0, "%s", zg_diag_log());
    ZT_EQ_INT(z.micro_batch, 4);
    ZT_EQ_INT(z.grad_accum, 1);
    ZT_EQ_INT(z.train_batch_size, 4 * 1 * 2);
    ZT_CHECK(z.lr == 1e-3 && z.beta1 == 0.9 && z.beta2 == 0.999 && z.eps == 1e-8 && z.weight_decay == 0.1);
    ZT_CHECK(z.gradient_clipping == 1.0);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP32);
    ZT_EQ_INT(z.sched, ZG_SCHED_WARMUP_DECAY);
    ZT_CHECK(z.warmup_min_lr == 0 && z.warmup_max_lr == 1e-3);
    ZT_EQ_INT(z.warmup_num_steps_in, 0);             /* HF's warmup_steps, not DeepSpeed's 1000 */
    ZT_EQ_INT(z.warmup_num_steps, 2);                /* run as DeepSpeed runs 0: max(2, n) */
    ZT_EQ_INT(z.total_num_steps, 20);
    ZT_EQ_INT(z.prefetch_bucket_size, 14745);        /* 0.9 x 128^2 = 14745.6 */
    ZT_EQ_INT(z.param_persistence_threshold, 1280);  /* 10 x 128 */
    ZT_CHECK(!(z.sizes_set & ZG_SET_REDUCE_BUCKET));

    /* one resolution per "auto" of the file, at its line, in file order */
    char *text = slurp(HF);
    ZT_CHECK(text != NULL);
    if (!text) return;
    int n = 0, line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') line++;
        if (!strncmp(p, "\"auto\"", 6)) {
            ZT_CHECKM(n < z.n_autos && z.autos[n].at.line == line, "auto %d at line %d", n, line);
            n++;
        }
    }
    ZT_EQ_INT(z.n_autos, n);
    for (int s = 0; s < ZG_NS; s++) {
        char *want = zg_fmt("\"%s\": \"auto\"", strrchr(zg_setting_key((ZgSetting)s), '.')
                                                ? strrchr(zg_setting_key((ZgSetting)s), '.') + 1 : zg_setting_key((ZgSetting)s));
        if (strstr(text, want)) ZT_CHECKM(z.from[s].kind == ZG_FROM_AUTO, "%s", zg_setting_key((ZgSetting)s));
        free(want);
    }

    /* the lines zgen prints */
    FILE *f = tmpfile();
    ZT_CHECK(f != NULL);
    if (!f) return;
    zg_zero_print_auto(&z, f);
    rewind(f);
    static char out[1 << 14];
    out[fread(out, 1, sizeof out - 1, f)] = 0;
    fclose(f);
    const struct { const char *needle, *line; } want[] = {
        {"\"lr\": \"auto\"", "optimizer.params.lr: \"auto\" -> 0.001 (spec train.lr)"},
        {"\"betas\": \"auto\"", "optimizer.params.betas: \"auto\" -> [0.9, 0.999] (HF default"},
        {"\"eps\": \"auto\"", "optimizer.params.eps: \"auto\" -> 1e-08 (HF default"},
        {"\"weight_decay\": \"auto\"", "optimizer.params.weight_decay: \"auto\" -> 0.1 (spec train.weight_decay)"},
        {"\"warmup_min_lr\": \"auto\"", "scheduler.params.warmup_min_lr: \"auto\" -> 0 ("},
        {"\"warmup_max_lr\": \"auto\"", "scheduler.params.warmup_max_lr: \"auto\" -> 0.001 ("},
        {"\"warmup_num_steps\": \"auto\"", "scheduler.params.warmup_num_steps: \"auto\" -> 0 (HF default warmup_steps 0"},
        {"\"total_num_steps\": \"auto\"", "scheduler.params.total_num_steps: \"auto\" -> 20 (zgen --steps)"},
        {"\"train_batch_size\": \"auto\"", "train_batch_size: \"auto\" -> 8 (micro 4 x accumulation 1 x world size 2)"},
        {"\"train_micro_batch_size_per_gpu\": \"auto\"", "train_micro_batch_size_per_gpu: \"auto\" -> 4 (spec train.micro_batch_size)"},
        {"\"gradient_accumulation_steps\": \"auto\"", "gradient_accumulation_steps: \"auto\" -> 1 (HF default 1"},
        {"\"gradient_clipping\": \"auto\"", "gradient_clipping: \"auto\" -> 1 (HF default"},
        {"\"stage3_param_persistence_threshold\": \"auto\"", "zero_optimization.stage3_param_persistence_threshold: \"auto\" -> 1280 (HF's 10 x d_model)"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *l = zg_fmt("zgen: " HF ":%d: %s", line_of(text, want[i].needle), want[i].line);
        ZT_CHECKM(strstr(out, l) != NULL, "no line \"%s\" in:\n%s", l, out);
        free(l);
    }
    /* the bf16 line: the enabled key under "bf16" */
    char *bf = zg_fmt("zgen: " HF ":%d: bf16.enabled: \"auto\" -> false (HF default: no --bf16",
                      line_of(text, "\"bf16\"") + 1);
    ZT_CHECKM(strstr(out, bf) != NULL, "no line \"%s\" in:\n%s", bf, out);
    free(bf);

    /* plan.txt's rows */
    ZgTrainRow rows[ZG_NS];
    int nr = zg_plan_training_rows(&z, rows);
    const ZgTrainRow *r = row(rows, nr, "optimizer.params.lr");
    ZT_CHECK(r && !strcmp(r->value, "0.001") && !strcmp(r->from, "auto") && !strcmp(r->source, "spec train.lr") &&
             r->line == line_of(text, "\"lr\": \"auto\""));
    r = row(rows, nr, "scheduler.type");
    ZT_CHECK(r && !strcmp(r->value, "WarmupDecayLR") && !strcmp(r->from, "config") && r->json_string);
    r = row(rows, nr, "scheduler.params.warmup_type");
    ZT_CHECK(r && !strcmp(r->value, "log") && !strcmp(r->from, "default"));
    r = row(rows, nr, "optimizer.params.bias_correction");
    ZT_CHECK(r && !strcmp(r->value, "true") && !strcmp(r->from, "default"));
    ZT_CHECK(!row(rows, nr, "fp16.loss_scale"));    /* an fp32 plan scales no loss */
    ZT_CHECK(!row(rows, nr, "scheduler.params.cos_min_ratio"));
}

/* bf16.enabled / fp16.enabled "auto" from train.dtype (HF: --bf16 / --fp16; neither by default) */
static void t_dtype(void)
{
    const char *cfg = "{\"train_micro_batch_size_per_gpu\": 1, \"fp16\": {\"enabled\": \"auto\"}, "
                      "\"bf16\": {\"enabled\": \"auto\"}}";
    const struct { bool set; ZgDtype spec, want; } c[] = {
        {true, ZG_DTYPE_BF16, ZG_DTYPE_BF16}, {true, ZG_DTYPE_FP16, ZG_DTYPE_FP16},
        {true, ZG_DTYPE_FP32, ZG_DTYPE_FP32}, {false, ZG_DTYPE_FP32, ZG_DTYPE_FP32},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        ZgModel m = model(2);
        ZgZero z;
        if (c[i].set) m.loc_train[ZG_TA_DTYPE] = spec_at, m.train_dtype = c[i].spec;
        ZT_CHECKM(load(cfg, &m, &z) == 0, "%s", zg_diag_log());
        ZT_EQ_INT(z.dtype, c[i].want);
        ZT_EQ_INT(z.from[ZG_S_BF16].kind, ZG_FROM_AUTO);
        ZT_EQ_INT(z.from[ZG_S_FP16].kind, ZG_FROM_AUTO);
        ZT_EQ_INT(zg_warn_count(), 0);
    }
    ZgModel m = model(2);
    ZgZero z;
    m.loc_train[ZG_TA_DTYPE] = spec_at, m.train_dtype = ZG_DTYPE_BF16;
    /* a config without fp16/bf16 sections runs fp32, as DeepSpeed; the unused spec value is said */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1}", &m, &z), 0);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP32);
    ZT_CHECKM(zg_warn_count() == 1 && zg_diag_count_matching("the spec's train.dtype bf16 is not used", 9) == 1,
              "%s", zg_diag_log());
    /* a config value against the spec's (HF's mismatch): the config's, with a warning at its line */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1,\n \"bf16\": {\"enabled\": false}}", &m, &z), 0);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_FP32);
    ZT_CHECKM(zg_diag_count_matching("bf16.enabled is false here, not as the spec's train.dtype bf16", 2) == 1,
              "%s", zg_diag_log());
    /* hf_auto_zero2.json's pair, fp16 "auto" beside bf16 true: an fp32 spec is not used, an fp16 one
    ** enables both (refused) */
    const char *pair = "{\"train_micro_batch_size_per_gpu\": 1, \"fp16\": {\"enabled\": \"auto\"}, "
                       "\"bf16\": {\"enabled\": true}}";
    m.train_dtype = ZG_DTYPE_FP32;
    ZT_EQ_INT(load(pair, &m, &z), 0);
    ZT_EQ_INT(z.dtype, ZG_DTYPE_BF16);
    ZT_CHECKM(zg_diag_count_matching("bf16.enabled is true here, not as the spec's train.dtype fp32", 1) == 1,
              "%s", zg_diag_log());
    m.train_dtype = ZG_DTYPE_FP16;
    ZT_EQ_INT(load(pair, &m, &z), 1);
    ZT_CHECK(zg_diag_count_matching("fp16 and bf16 are both enabled", 1) == 1);
}

/* The schedule: warmup_num_steps "auto" is HF's warmup_steps (0 by default), not DeepSpeed's 1000;
** total_num_steps "auto" is zgen --steps, and without it an error says so. */
static void t_schedule(void)
{
    ZgModel m = model(2);
    ZgZero z;
    const char *warm = "{\"train_micro_batch_size_per_gpu\": 1, \"scheduler\": {\"type\": \"WarmupLR\",\n"
                       " \"params\": {\"warmup_num_steps\": \"auto\", \"warmup_max_lr\": \"auto\", \"warmup_min_lr\": \"auto\"}},\n"
                       " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4}}}";
    ZT_CHECKM(load(warm, &m, &z) == 0, "%s", zg_diag_log());
    ZT_EQ_INT(z.warmup_num_steps_in, 0);
    ZT_EQ_INT(z.warmup_num_steps, 2);
    ZT_EQ_INT(zg_warn_count(), 0);                   /* not "raised to 2": nobody wrote 0 */
    ZT_CHECK(z.warmup_max_lr == 3e-4 && z.warmup_min_lr == 0);
    ZgTrainRow rows[ZG_NS];
    int nr = zg_plan_training_rows(&z, rows);
    const ZgTrainRow *r = row(rows, nr, "scheduler.params.warmup_num_steps");
    ZT_CHECK(r && r->note && strstr(r->note, "max(2, 0) = 2"));
    m.loc_train[ZG_TA_WARMUP] = spec_at, m.train_warmup_steps = 25;
    ZT_EQ_INT(load(warm, &m, &z), 0);
    ZT_EQ_INT(z.warmup_num_steps, 25);

    const char *decay = "{\"train_micro_batch_size_per_gpu\": 1,\n \"scheduler\": {\"type\": \"WarmupDecayLR\",\n"
                        " \"params\": {\"total_num_steps\": \"auto\"}}}";
    ZgModel b = model(2);
    ZT_EQ_INT(load(decay, &b, &z), 1);
    ZT_CHECKM(zg_diag_count_matching("total_num_steps is \"auto\" but zgen was given no --steps", 3) == 1, "%s", zg_diag_log());
    ZT_CHECK(zg_diag_count_matching("pass --steps N to zgen", 3) == 1);
    b.steps = 300;
    ZT_EQ_INT(load(decay, &b, &z), 0);
    ZT_EQ_INT(z.total_num_steps, 300);
    ZT_EQ_INT(z.warmup_num_steps, 1000);             /* left out: DeepSpeed's default, as DeepSpeed */
    /* a written length against --steps (HF's mismatch): the config's, with a warning; the same number
    ** is silent */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"scheduler\": {\"type\": \"WarmupDecayLR\", "
                   "\"params\": {\"total_num_steps\": 100}}}", &b, &z), 0);
    ZT_EQ_INT(z.total_num_steps, 100);
    ZT_CHECK(zg_diag_count_matching("total_num_steps is 100 here, not zgen --steps 300", 1) == 1);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"scheduler\": {\"type\": \"WarmupDecayLR\", "
                   "\"params\": {\"total_num_steps\": 300}}}", &b, &z), 0);
    ZT_EQ_INT(zg_diag_count_matching("not zgen --steps", 0), 0);
    /* left out: still DeepSpeed's error (it has no default), whose note names "auto" and --steps */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"scheduler\": {\"type\": \"WarmupCosineLR\"}}", &b, &z), 1);
    ZT_CHECK(zg_diag_count_matching("with zgen --steps N", 1) == 1);
    /* the spec's warmup with no scheduler, or one that leaves the key out: not used, and said */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1}", &m, &z), 0);
    ZT_CHECK(zg_diag_count_matching("train.warmup_steps 25 is not used: the config has no scheduler", 9) == 1);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"scheduler\": {\"type\": \"WarmupLR\"}}", &m, &z), 0);
    ZT_EQ_INT(z.warmup_num_steps, 1000);
    ZT_CHECK(zg_diag_count_matching("leaves warmup_num_steps out (DeepSpeed's default 1000)", 9) == 1);
}

/* betas / eps / weight_decay / gradient_clipping "auto": the spec's train.* or HF's defaults */
static void t_optimizer(void)
{
    const char *cfg = "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_clipping\": \"auto\",\n"
                      " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 5e-4, \"betas\": \"auto\", "
                      "\"eps\": \"auto\", \"weight_decay\": \"auto\"}}}";
    ZgModel m = model(2);
    ZgZero z;
    ZT_CHECKM(load(cfg, &m, &z) == 0, "%s", zg_diag_log());
    ZT_CHECK(z.beta1 == 0.9 && z.beta2 == 0.999 && z.eps == 1e-8 && z.weight_decay == 0 && z.gradient_clipping == 1.0);
    m.loc_train[ZG_TA_BETAS] = m.loc_train[ZG_TA_EPS] = m.loc_train[ZG_TA_WD] = m.loc_train[ZG_TA_CLIP] = spec_at;
    m.train_beta1 = 0.8, m.train_beta2 = 0.95, m.train_eps = 1e-6, m.train_weight_decay = 0.05;
    m.train_max_grad_norm = 0.5;
    ZT_CHECKM(load(cfg, &m, &z) == 0, "%s", zg_diag_log());
    ZT_CHECK(z.beta1 == 0.8 && z.beta2 == 0.95 && z.eps == 1e-6 && z.weight_decay == 0.05 && z.gradient_clipping == 0.5);
    ZT_CHECK(z.lr == 5e-4);                          /* no train.lr: the config's */
    /* the spec's lr against the config's (HF's mismatch): the config's, with a warning naming both */
    m.train_lr = 1e-4;
    ZT_EQ_INT(load(cfg, &m, &z), 0);
    ZT_CHECK(z.lr == 5e-4);
    ZT_CHECKM(zg_diag_count_matching("optimizer.params.lr is 0.0005 here, not the spec's train.lr 0.0001", 2) == 1,
              "%s", zg_diag_log());
    /* left out of the config: the spec's lr; the other keys keep DeepSpeed's defaults, said */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"AdamW\", \"params\": {}}}",
                   &m, &z), 0);
    ZT_CHECK(z.lr == 1e-4 && z.weight_decay == 0 && z.beta1 == 0.9);
    ZT_EQ_INT(z.from[ZG_S_LR].kind, ZG_FROM_SPEC);
    ZT_EQ_INT(zg_warn_count(), 4);                   /* betas, eps, weight_decay, gradient_clipping */
    ZT_CHECK(zg_diag_count_matching("the spec's train.weight_decay 0.05 is not used", 9) == 1);
    /* no optimizer section: zgen's AdamW from the spec, as HF's Trainer builds its own */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"gradient_clipping\": 0.5}", &m, &z), 0);
    ZT_CHECK(z.lr == 1e-4 && z.beta1 == 0.8 && z.beta2 == 0.95 && z.eps == 1e-6 && z.weight_decay == 0.05);
    ZT_EQ_INT(zg_warn_count(), 0);
    /* no train.lr for lr "auto": an error naming the key to set */
    ZgModel bare = model(2);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": \"auto\"}}}",
                   &bare, &z), 1);
    ZT_CHECK(zg_diag_count_matching("add train.lr to the spec", 1) == 1);
}

/* An "auto" HF's Trainer does not fill is an error at its line, naming the key. */
static void t_not_filled(void)
{
    ZgModel m = model(2);
    ZgZero z;
    const char *cfg = "{\"train_micro_batch_size_per_gpu\": 1,\n"
                      " \"zero_optimization\": {\"stage\": 2, \"allgather_bucket_size\": \"auto\"},\n"
                      " \"fp16\": {\"enabled\": true, \"initial_scale_power\": \"auto\"},\n"
                      " \"optimizer\": {\"type\": \"Adam\", \"params\": {\"lr\": 1e-3, \"adam_w_mode\": \"auto\"}},\n"
                      " \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_type\": \"auto\"}},\n"
                      " \"wall_clock_breakdown\": \"auto\", \"tensorboard\": \"auto\"}";
    ZT_EQ_INT(load(cfg, &m, &z), 6);
    const struct { const char *key; int line; } e[] = {
        {"zero_optimization.allgather_bucket_size", 2}, {"fp16.initial_scale_power", 3},
        {"optimizer.params.adam_w_mode", 4}, {"scheduler.params.warmup_type", 5}, {"wall_clock_breakdown", 6},
        {"tensorboard", 6},
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
        char *w = zg_fmt("%s cannot be \"auto\"", e[i].key);
        ZT_CHECKM(zg_diag_count_matching(w, e[i].line) == 1, "%s at %d:\n%s", w, e[i].line, zg_diag_log());
        free(w);
    }
    /* amp "auto": HF enables amp only for its Apex backend, which zgen does not have */
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"amp\": {\"enabled\": \"auto\", \"opt_level\": \"auto\"}}", &m, &z), 0);
    ZT_EQ_INT(z.n_autos, 1);
    ZT_CHECK(z.n_autos == 1 && !strcmp(z.autos[0].key, "amp.enabled"));
}

/* The sizing keys HF derives from the hidden size (d_model 64 here) */
static void t_sizing(void)
{
    ZgModel m = model(2);
    ZgZero z;
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, "
                   "\"stage3_prefetch_bucket_size\": \"auto\", \"stage3_max_live_parameters\": 1e9}}", &m, &z), 0);
    ZT_EQ_INT(z.prefetch_bucket_size, 3686);         /* 0.9 x 64^2 = 3686.4 */
    ZT_CHECK(z.sizes_set & ZG_SET_PREFETCH);
    ZT_EQ_INT(load("{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 2, "
                   "\"stage3_param_persistence_threshold\": \"auto\", \"reduce_bucket_size\": \"auto\"}}", &m, &z), 0);
    ZT_EQ_INT(z.param_persistence_threshold, 100000);   /* HF fills it at stage 3 only */
    ZT_CHECK(!(z.sizes_set & ZG_SET_REDUCE_BUCKET));
    ZT_CHECK(z.n_autos == 2 && z.autos[0].text && strstr(z.autos[0].text, "unused below stage 3"));
    ZT_CHECK(z.n_autos == 2 && z.autos[1].text && strstr(z.autos[1].text, "d_model^2 = 4096"));
}

/* The spec's new train.* keys: read, bounded, and located */
static void t_spec_keys(void)
{
    char dir[64];
    if (zt_tmpdir_make(dir, sizeof dir, "auto") != 0) return;
    const char *path = zt_tmp_in(dir, "s.yaml");
    FILE *f = fopen(path, "w");
    fputs("name: s\nmodel: {arch: gpt2, vocab_size: 64, context: 16, d_model: 32, n_layers: 1, n_heads: 2}\n"
          "train:\n  betas: [0.8, 0.95]\n  eps: 1.0e-6\n  weight_decay: 0\n  warmup_steps: 0\n"
          "  max_grad_norm: 0.5\n  dtype: bf16\n", f);
    fclose(f);
    ZgModel m;
    zg_diag_reset();
    zg_diag_quiet(true);
    zg_spec_load(path, &m);
    ZT_CHECKM(zg_error_count() == 0, "%s", zg_diag_log());
    ZT_CHECK(m.train_beta1 == 0.8 && m.train_beta2 == 0.95 && m.train_eps == 1e-6 && m.train_max_grad_norm == 0.5);
    ZT_EQ_INT(m.train_dtype, ZG_DTYPE_BF16);
    ZT_CHECK(zg_train_arg_set(&m, ZG_TA_WD) && zg_train_arg_set(&m, ZG_TA_WARMUP));   /* 0 is a value */
    ZT_EQ_INT(m.loc_train[ZG_TA_DTYPE].line, 9);
    ZT_CHECK(!zg_train_arg_set(&m, ZG_TA_LR) && !zg_train_arg_set(&m, ZG_TA_MICRO));
    f = fopen(path, "w");
    fputs("name: s\nmodel: {arch: gpt2, vocab_size: 64, context: 16, d_model: 32, n_layers: 1, n_heads: 2}\n"
          "train:\n  betas: [0.9, 1.0]\n  dtype: float16\n  warmup_step: 3\n", f);
    fclose(f);
    zg_diag_reset();
    zg_spec_load(path, &m);
    ZT_EQ_INT(zg_error_count(), 3);
    ZT_CHECK(zg_diag_count_matching("train.betas must be below 1", 4) == 1);
    ZT_CHECK(zg_diag_count_matching("train.dtype must be bf16, fp16 or fp32, not 'float16'", 5) == 1);
    ZT_CHECK(zg_diag_count_matching("did you mean 'warmup_steps'", 6) == 1);
    zt_tmpdir_remove(dir);
}

/* ZG_GEN_ARGS: the arguments as given, without -o and --world-size, quoted where a shell needs it */
static void t_gen_args(void)
{
    /* argv's strings are writable; these literals are only read */
#define W(x) ((char *)(x))
    char *const a[] = {W("bin/zgen"), W("specs/my spec.yaml"), W("-o"), W("out/x"), W("--world-size"), W("4"),
                       W("-c"), W("c.json"), W("--world-size=8"), W("--steps"), W("20"), W("it's"),
                       W("--dump=plan"), W("")};
    char *s = zg_gen_args(14, a);
    ZT_EQ_STR(s, "'specs/my spec.yaml' -c c.json --steps 20 'it'\\''s' --dump=plan ''");
    free(s);
    char *const b[] = {W("zgen"), W("specs/tiny.yaml")};
    s = zg_gen_args(2, b);
    ZT_EQ_STR(s, "specs/tiny.yaml");
    free(s);
}

int main(void)
{
    ZT_RUN(t_hf_config);
    ZT_RUN(t_dtype);
    ZT_RUN(t_schedule);
    ZT_RUN(t_optimizer);
    ZT_RUN(t_not_filled);
    ZT_RUN(t_sizing);
    ZT_RUN(t_spec_keys);
    ZT_RUN(t_gen_args);
    return zt_end();
}
