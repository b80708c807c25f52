/*
** main.c — the zgen command line. The whole pipeline is in pipeline(), in order, so it reads like
** the design: spec -> world-size override -> ZeRO config -> checks -> model IR -> sizing (partition,
** schedule, memory plan) -> bounds -> fit (or the refusal's advice) -> lowering -> plan.json /
** plan.txt -> render the trainer (or --predict: the prediction and its advice) -> summary. Each
** step is called from here; none calls a later one. Nothing else lives here.
** Exit codes: 0 ok, 1 input errors (all reported first), 2 usage.
*/
#include <stdlib.h>
#include <string.h>
#include "zg_plan.h"
#include "zg_render.h"
#include "zg_ckpt.h"
#include "zg_pytool.h"
#include "zg_predict.h"
#include "zg_cuda_dec.h"
#include "zg_fit.h"
#include "zg_size.h"

typedef struct Opts {
    const char *spec;
    const char *config;         /* -c: DeepSpeed config file instead of the spec's deepspeed: */
    const char *outdir;         /* -o: default out/<name> */
    int world_size;             /* --world-size; 0 = the spec's */
    bool estimate, json;
    const char *dump;           /* --dump=plan|spec */
    bool predict;               /* --predict: the cost model instead of rendering */
    const char *hardware;       /* --hardware NAME|FILE (default h100-sxm) */
    long long steps;            /* --steps N: fills scheduler total_num_steps "auto"; 0 = not given */
    const char *gen_args;       /* the arguments minus -o / --world-size (ZG_GEN_ARGS) */
} Opts;

static const char USAGE[] =
    "usage: zgen SPEC.yaml [-c DS_CONFIG] [-o DIR] [--world-size N] [--steps N] [--estimate] [--json]\n"
    "            [--dump=plan|spec] [--predict [--hardware NAME|FILE]]\n"
    "\n"
    "Reads a model spec and a DeepSpeed ZeRO config, checks them, plans where every byte lives on\n"
    "every rank, writes DIR/plan.json and DIR/plan.txt and renders the trainer into DIR\n"
    "(default out/<name>/).\n"
    "  -c FILE          DeepSpeed config (JSON or YAML); default: the spec's `deepspeed:`\n"
    "  -o DIR           output folder\n"
    "  --world-size N   plan for N ranks instead of the spec's train.world_size\n"
    "  --steps N        the run's optimizer steps: fills scheduler total_num_steps \"auto\"\n"
    "                   (HF's max_steps); zgen prints each \"auto\" it fills (docs/CONFIG.md)\n"
    "  --estimate       print DeepSpeed's memory estimator figures beside zgen's plan; no output\n"
    "  --json           with --estimate or --dump=plan: JSON instead of text\n"
    "  --dump=spec      print the parsed spec and config and stop\n"
    "  --dump=plan      also print plan.txt (or plan.json with --json) to stdout\n"
    "  --predict        predict the step (time, tokens/s, MFU, bottleneck) on --hardware, and the\n"
    "                   faster plans that fit the declared hardware; writes DIR/plan.*,\n"
    "                   DIR/predict.trace.json; --json for one JSON object (docs/PREDICT.md)\n"
    "  --hardware H     a built-in profile (h100-sxm, h100-pcie, a100-80gb, h200, gh200, host) or a\n"
    "                   profile file (bench/calibrate writes one); default h100-sxm\n"
    "  -h, --help       this text\n"
    "exit status: 0 ok, 1 input errors, 2 usage\n"
    "\n"
    "       zgen ckpt DIR --info | --export FILE [--dtype fp32|bf16]   (a checkpoint; zgen ckpt -h)\n"
    "       zgen --spec-from-hf CONFIG.json [-o SPEC.yaml] [--name NAME]  (a Hugging Face model's spec)\n"
    "       zgen data IN.jsonl -o OUT.zgd --tokenizer HF_DIR [--seq-len N] [--pack|--pad] [--max-len N]\n"
    "                                           (fine-tuning data for --data/--val; docs/DATA.md)\n"
    "       zgen plot RUN.jsonl... -o PLOT.png   zgen log RUN.jsonl --tensorboard DIR   (a --log file)\n";

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "zgen: %s%s%s\n%s", msg, arg ? ": " : "", arg ? arg : "", USAGE);
    return 2;
}

static void dump_spec(const ZgModel *m, const ZgZero *z)
{
    printf("name %s arch %s vocab %lld context %lld d_model %lld layers %lld heads %lld d_ff %lld "
           "seq_len %lld world_size %d gpus_per_node %d\n", m->name, m->arch, (long long)m->vocab_size,
           (long long)m->context, (long long)m->d_model, (long long)m->n_layers,
           (long long)m->n_heads, (long long)m->d_ff, (long long)m->seq_len, m->world_size,
           m->gpus_per_node);
    const ZgArch *arch = zg_arch_find(m->arch);
    if (arch && arch->rope) {           /* rotary archs only: gpt2's dump is unchanged */
        printf("n_kv_heads %lld norm_eps %g rope_theta %g tie_embeddings %d rope_scaling ", (long long)m->n_kv_heads,
               m->norm_eps, m->rope_theta, m->tie_embeddings);
        if (m->rope_llama3)
            printf("llama3 factor %g low_freq_factor %g high_freq_factor %g original_context %lld\n", m->rope_factor,
                   m->rope_low_freq_factor, m->rope_high_freq_factor, (long long)m->rope_original_context);
        else
            printf("none\n");
    }
    printf("stage %d dtype %s batch %lld = %lld x %lld x %d optimizer %s lr %g offload_optimizer %s "
           "offload_param %s overlap_comm %d reduce_bucket_size %lld sub_group_size %lld\n", z->stage,
           zg_dtype_name(z->dtype), (long long)z->train_batch_size, (long long)z->micro_batch,
           (long long)z->grad_accum, m->world_size, z->optimizer ? z->optimizer : "-", z->lr,
           zg_offload_name(z->offload_optimizer.device), zg_offload_name(z->offload_param.device),
           z->overlap_comm, (long long)z->reduce_bucket_size, (long long)z->sub_group_size);
}

static void summary(const ZgPlan *p, const char *dir, bool json)
{
    const ZgMemPlan *mp = &p->mem;
    if (json) {
        printf("{\"plan\": \"%s/plan.txt\"", dir);
        for (int t = 0; t < ZG_NTIERS; t++)
            printf(", \"%s_bytes\": %lld", zg_tier_name((ZgTier)t), (long long)mp->tier_bytes[t]);
        printf("}\n");
        return;
    }
    printf("zgen: %s: %lld parameters, ZeRO stage %d, %d ranks -> %s/plan.txt\n", p->model->name,
           (long long)p->n_params, p->zero->stage, p->model->world_size, dir);
    printf("memory per rank:");
    for (int t = 0; t < ZG_NTIERS; t++)
        printf(" %s %.3f GiB%s", zg_tier_name((ZgTier)t),
               (double)mp->tier_bytes[t] / (1024.0 * 1024.0 * 1024.0), t + 1 < ZG_NTIERS ? "," : "\n");
}

static int errors_exit(void)
{
    int n = zg_error_count();
    fprintf(stderr, "%d error%s\n", n, n == 1 ? "" : "s");
    return 1;
}

static int predict(const ZgPlan *p, const Opts *o, const char *dir)
{
    ZgHw hw;
    if (!zg_hw_get(o->hardware ? o->hardware : "h100-sxm", &hw)) return errors_exit();
    ZgPrediction pr;
    zg_predict(p, &hw, &pr);
    ZgAdviceList adv;
    zg_advise(p, &hw, &pr, &adv);
    const char *trace = zg_fmt("%s/predict.trace.json", dir);
    if (!zg_predict_write_trace(p, &pr, trace)) {
        zg_error((ZgLoc){0}, "cannot write %s", trace);
        return errors_exit();
    }
    /* plan.txt gets the same summary, so the plan read before launch carries its prediction */
    FILE *f = fopen(zg_fmt("%s/plan.txt", dir), "a");
    if (f) {
        fprintf(f, "\n== predicted step (zgen --predict --hardware %s) ==\n", hw.name);
        zg_predict_print(p, &hw, &pr, &adv, false, f);
        fprintf(f, "predicted timeline: %s\n", trace);
        fclose(f);
    }
    zg_predict_print(p, &hw, &pr, &adv, o->json, stdout);
    if (!o->json) printf("predicted timeline: %s (chrome://tracing or ui.perfetto.dev)\n", trace);
    return 0;
}

static int pipeline(const Opts *o)
{
    static ZgModel m;
    static ZgZero z;
    static ZgPlan p;
    zg_emit_cleanup_on_signals();       /* an interrupted run leaves no temp files behind */
    const ZgNode *ds = zg_spec_load(o->spec, &m);
    /* A spec with errors still has its config checked, so one run reports both files' errors;
    ** only a spec that names no config at all stops here. */
    if (zg_error_count() && !ds && !o->config) return errors_exit();
    if (o->world_size) zg_model_set_world_size(&m, o->world_size);
    m.steps = o->steps;
    m.gen_args = o->gen_args;
    if (o->config) zg_zero_load_file(o->config, &m, &z);
    else zg_zero_load(ds, &m, &z);
    zg_check(&m, &z);
    if (zg_error_count()) return errors_exit();
    zg_zero_print_auto(&z, stderr);     /* each "auto" once, with what filled it */
    if (o->dump && !strcmp(o->dump, "spec")) {
        dump_spec(&m, &z);
        return 0;
    }
    if (!zg_model_build(&m, &p)) return errors_exit();
    zg_size_plan(&m, &z, &p);   /* partition -> schedule -> memory plan, re-planned until the
                                ** planner's own choices fit */
    if (!zg_plan_within_bounds(&p)) return errors_exit();
    zg_size_ds_defaults(&m, &z, &p);    /* what DeepSpeed's defaults would plan (plan.txt) */
    if (!zg_fit_ok(&p)) {
        zg_fit_refuse(&p);      /* why, and the first changes that fit */
        return errors_exit();
    }
    zg_lower_build(&p);         /* every op row complete: what trainers execute */
    if (o->estimate) {
        zg_estimate_print(&p, o->json, stdout);
        return 0;
    }
    const char *dir = o->outdir ? o->outdir : zg_fmt("out/%s", m.name);
    if (!zg_plan_write_files(&p, dir)) return errors_exit();
    if (o->predict) return predict(&p, o, dir);
    /* An arch the trainer cannot run yet is planned (plan.txt, --estimate, --dump=plan) but not
    ** emitted: a trainer that would fail at its first step is worse than a clear refusal. */
    const ZgArch *arch = zg_arch_find(m.arch);
    if (arch && arch->emit_missing) {
        if (o->dump && !strcmp(o->dump, "plan")) {
            if (o->json) zg_plan_write_json(&p, stdout);
            else zg_plan_write_txt(&p, stdout);
            fprintf(stderr, "zgen: note: arch %s: no trainer emitted: %s\n", arch->name, arch->emit_missing);
            return 0;
        }
        zg_error(m.loc_arch, "cannot emit a trainer for arch %s: %s", arch->name, arch->emit_missing);
        zg_note(m.loc_arch, "the plan is written (%s/plan.txt, plan.json); --estimate and --dump=plan work", dir);
        return errors_exit();
    }
    if (!zg_render(&p, dir)) return errors_exit();
    const char *no_cuda = zg_cuda_missing(&p);
    if (no_cuda)
        fprintf(stderr, "zgen: note: arch %s: no train-cuda for this plan (make cuda refuses): %s\n", m.arch,
                no_cuda);
    if (o->dump && !strcmp(o->dump, "plan")) {
        if (o->json) zg_plan_write_json(&p, stdout);
        else zg_plan_write_txt(&p, stdout);
        return 0;
    }
    summary(&p, dir, o->json);
    return 0;
}

int main(int argc, char **argv)
{
    Opts o = {0};
    if (argc > 1 && !strcmp(argv[1], "ckpt")) return zg_ckpt_main(argc - 1, argv + 1);
    if (argc > 1 && zg_pytool_is(argv[1])) return zg_pytool_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "--spec-from-hf")) return zg_hf_main(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "-c") || !strcmp(a, "-o") || !strcmp(a, "--world-size")) {
            if (i + 1 >= argc) return usage_error("missing value after", a);
            const char *v = argv[++i];
            if (a[1] == 'c') o.config = v;
            else if (a[1] == 'o') o.outdir = v;
            else {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > (1 << 20)) return usage_error("bad --world-size", v);
                o.world_size = (int)n;
            }
        } else if (!strncmp(a, "--world-size=", 13)) {
            char *end;
            long n = strtol(a + 13, &end, 10);
            if (*end || n < 1 || n > (1 << 20)) return usage_error("bad --world-size", a + 13);
            o.world_size = (int)n;
        } else if (!strcmp(a, "--steps") || !strncmp(a, "--steps=", 8)) {
            if (!a[7] && i + 1 >= argc) return usage_error("missing value after", a);
            const char *v = a[7] ? a + 8 : argv[++i];
            char *end;
            long long n = strtoll(v, &end, 10);
            if (!*v || *end || n < 1 || n > 1000000000000LL) return usage_error("bad --steps", v);
            o.steps = n;
        } else if (!strcmp(a, "--predict")) {
            o.predict = true;
        } else if (!strcmp(a, "--hardware")) {
            if (i + 1 >= argc) return usage_error("missing value after", a);
            o.hardware = argv[++i];
        } else if (!strncmp(a, "--hardware=", 11)) {
            o.hardware = a + 11;
        } else if (!strcmp(a, "--estimate")) {
            o.estimate = true;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strncmp(a, "--dump=", 7)) {
            o.dump = a + 7;
            if (strcmp(o.dump, "plan") && strcmp(o.dump, "spec"))
                return usage_error("--dump takes plan or spec", a);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option", a);
        } else if (o.spec) {
            return usage_error("more than one spec", a);
        } else {
            o.spec = a;
        }
    }
    if (!o.spec) return usage_error("no spec given", NULL);
    if (o.hardware && !o.predict) return usage_error("--hardware needs --predict", o.hardware);
    o.gen_args = zg_gen_args(argc, argv);
    return pipeline(&o);
}
