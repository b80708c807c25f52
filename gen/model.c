/*
** model.c — the model IR: every parameter tensor of the architecture with its Hugging Face name,
** [in, out] shape, owning module, layer, weight-decay flag and init kind, and the module table in
** forward order. Everything later (partition, schedule, memory, emitted tables) walks these two
** tables, so the trainer never hard-codes a tensor index (STYLE.md "Avoid" on llm.c).
*/
#include <string.h>
#include "zg.h"

typedef struct Builder {
    ZgPlan *p;
    int cap_t, cap_m;
} Builder;

static int add_module(Builder *b, ZgModKind kind, int layer, const char *name)
{
    ZgPlan *p = b->p;
    if (p->n_modules == b->cap_m) {
        b->cap_m = b->cap_m ? 2 * b->cap_m : 16;
        p->modules = zg_xrealloc(p->modules, (size_t)b->cap_m * sizeof *p->modules);
    }
    ZgModule *md = &p->modules[p->n_modules];
    memset(md, 0, sizeof *md);
    md->kind = kind;
    md->layer = layer;
    md->name = name;
    md->first_tensor = p->n_tensors;
    md->gather_bucket = -1;
    return p->n_modules++;
}

/* Adds tensor `prefix``local` to the last module. d1 == 0 means a vector. */
static void add_tensor(Builder *b, const char *prefix, const char *local, int64_t d0, int64_t d1,
                       ZgInit init, bool residual_proj)
{
    ZgPlan *p = b->p;
    if (p->n_tensors == b->cap_t) {
        b->cap_t = b->cap_t ? 2 * b->cap_t : 64;
        p->tensors = zg_xrealloc(p->tensors, (size_t)b->cap_t * sizeof *p->tensors);
    }
    ZgTensor *t = &p->tensors[p->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = zg_fmt("%s%s", prefix, local);
    char *field = zg_xstrdup(prefix[0] == 'h' && prefix[1] == '.' ? local : t->name);
    for (char *c = field; *c; c++)
        if (*c == '.') *c = '_';
    t->field = field;
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->numel = d1 ? d0 * d1 : d0;
    t->module = p->n_modules - 1;
    ZgModule *md = &p->modules[t->module];
    t->layer = md->layer;
    t->decay = t->ndim >= 2;
    t->init = (int)init;
    t->residual_proj = residual_proj;
    t->reduce_bucket = -1;
    t->gather = -1;
    t->gather_offset = -1;
    t->persist_offset = -1;
    md->n_tensors++;
    md->numel += t->numel;
    p->n_tensors++;
}

static void build_gpt2(const ZgModel *m, Builder *b)
{
    int64_t V = m->vocab_size, C = m->d_model, F = m->d_ff, P = m->context;
    add_module(b, ZG_MOD_EMBED, -1, "embed");
    add_tensor(b, "", "wte.weight", V, C, ZG_INIT_NORMAL, false);
    add_tensor(b, "", "wpe.weight", P, C, ZG_INIT_NORMAL, false);
    for (int l = 0; l < (int)m->n_layers; l++) {
        const char *pre = zg_fmt("h.%d.", l);
        add_module(b, ZG_MOD_BLOCK, l, zg_fmt("h.%d", l));
        add_tensor(b, pre, "ln_1.weight", C, 0, ZG_INIT_ONES, false);
        add_tensor(b, pre, "ln_1.bias", C, 0, ZG_INIT_ZEROS, false);
        add_tensor(b, pre, "attn.c_attn.weight", C, 3 * C, ZG_INIT_NORMAL, false);
        add_tensor(b, pre, "attn.c_attn.bias", 3 * C, 0, ZG_INIT_ZEROS, false);
        add_tensor(b, pre, "attn.c_proj.weight", C, C, ZG_INIT_NORMAL, true);
        add_tensor(b, pre, "attn.c_proj.bias", C, 0, ZG_INIT_ZEROS, false);
        add_tensor(b, pre, "ln_2.weight", C, 0, ZG_INIT_ONES, false);
        add_tensor(b, pre, "ln_2.bias", C, 0, ZG_INIT_ZEROS, false);
        add_tensor(b, pre, "mlp.c_fc.weight", C, F, ZG_INIT_NORMAL, false);
        add_tensor(b, pre, "mlp.c_fc.bias", F, 0, ZG_INIT_ZEROS, false);
        add_tensor(b, pre, "mlp.c_proj.weight", F, C, ZG_INIT_NORMAL, true);
        add_tensor(b, pre, "mlp.c_proj.bias", C, 0, ZG_INIT_ZEROS, false);
    }
    add_module(b, ZG_MOD_FINAL_NORM, -1, "ln_f");
    add_tensor(b, "", "ln_f.weight", C, 0, ZG_INIT_ONES, false);
    add_tensor(b, "", "ln_f.bias", C, 0, ZG_INIT_ZEROS, false);
    int head = add_module(b, ZG_MOD_HEAD, -1, "lm_head");
    (void)head;                 /* tied: owns nothing, reads wte */
}

/* DeepSpeed's "largest layer": the most parameters held directly by one HF module, i.e. tensors
** that share the name prefix before their last '.' (wte.weight -> wte; h.0.mlp.c_fc.* -> c_fc). */
static int64_t largest_hf_module(const ZgPlan *p)
{
    int64_t best = 0;
    for (int i = 0; i < p->n_tensors;) {
        const char *dot = strrchr(p->tensors[i].name, '.');
        size_t len = (size_t)(dot - p->tensors[i].name);
        int64_t sum = 0;
        int j = i;
        for (; j < p->n_tensors; j++) {
            const char *n = p->tensors[j].name;
            if (strncmp(n, p->tensors[i].name, len) != 0 || n[len] != '.' || strchr(n + len + 1, '.'))
                break;
            sum += p->tensors[j].numel;
        }
        if (sum > best) best = sum;
        i = j;
    }
    return best;
}

bool zg_model_build(const ZgModel *m, ZgPlan *p)
{
    if (!m->arch || strcmp(m->arch, "gpt2") != 0) {
        zg_error(m->loc_name, "model.arch '%s' is not supported (gpt2 only)", m->arch ? m->arch : "");
        return false;
    }
    if (!m->tie_embeddings) {
        zg_error(m->loc_name, "gpt2 with tie_embeddings: false is not supported");
        return false;
    }
    Builder b = {.p = p};
    p->model = m;
    p->tensors = NULL;
    p->modules = NULL;
    p->n_tensors = p->n_modules = 0;
    build_gpt2(m, &b);
    p->n_params = 0;
    for (int i = 0; i < p->n_tensors; i++) {
        p->tensors[i].flat_offset = p->n_params;
        p->n_params += p->tensors[i].numel;
    }
    p->tied_tensor = 0;                     /* wte */
    p->max_use_numel = 0;
    for (int i = 0; i < p->n_modules; i++) {
        ZgModule *md = &p->modules[i];
        md->use_numel = md->kind == ZG_MOD_HEAD ? p->tensors[p->tied_tensor].numel : md->numel;
        if (md->use_numel > p->max_use_numel) p->max_use_numel = md->use_numel;
    }
    p->largest_layer = largest_hf_module(p);
    return true;
}
