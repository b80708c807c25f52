/*
** model.c — the model IR: every parameter tensor of the architecture with its Hugging Face name,
** shape (in the arch's own layout: gpt2 [in, out] as HF's Conv1D, llama [out, in] as nn.Linear),
** owning module, layer, weight-decay flag and init kind, and the module table in forward order.
** Everything later (partition, schedule, memory, emitted tables) walks these two tables, so the
** trainer never hard-codes a tensor index (docs/CONTRIBUTING.md "Templates").
**
** Each architecture is one file (gen/arch_<name>.c, listed in `archs` below): its modules in forward
** order and, per module, its tensors with symbolic dimensions, which this file walks; everything
** else the generator needs to know about the arch is in its ZgArch. The lookup by name is here.
*/
#include <string.h>
#include "zg_arch.h"

/* Each arch file's one symbol, read here only. */
extern const ZgArch zg_arch_gpt2, zg_arch_llama, zg_arch_qwen2;
static const ZgArch *const archs[] = {&zg_arch_gpt2, &zg_arch_llama, &zg_arch_qwen2};

const ZgArch *zg_arch_at(int i) { return i >= 0 && i < ZG_ARCH_N(archs) ? archs[i] : NULL; }

const ZgArch *zg_arch_find(const char *name)
{
    for (int i = 0; name && i < ZG_ARCH_N(archs); i++)
        if (!strcmp(archs[i]->name, name)) return archs[i];
    return NULL;
}

const ZgArch *zg_arch_find_hf(const char *model_type)
{
    for (int i = 0; model_type && i < ZG_ARCH_N(archs); i++)
        if (!strcmp(archs[i]->hf_model_type, model_type)) return archs[i];
    return NULL;
}

static const char *names(char *buf, size_t cap, bool rope_only)
{
    if (!buf[0])
        for (int i = 0, n = 0; i < ZG_ARCH_N(archs); i++)
            if (!rope_only || archs[i]->rope)
                snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", n++ ? ", " : "", archs[i]->name);
    return buf;
}

const char *zg_arch_names(void)
{
    static char buf[128];
    return names(buf, sizeof buf, false);
}

const char *zg_arch_rope_names(void)
{
    static char buf[128];
    return names(buf, sizeof buf, true);
}

static int64_t dim(const ZgModel *m, ZgDim d)
{
    switch (d) {
    case ZG_DIM_NONE: return 0;
    case ZG_DIM_VOCAB: return m->vocab_size;
    case ZG_DIM_CONTEXT: return m->context;
    case ZG_DIM_MODEL: return m->d_model;
    case ZG_DIM_QKV: return 3 * m->d_model;
    case ZG_DIM_KV: return m->n_heads > 0 ? m->n_kv_heads * (m->d_model / m->n_heads) : 0;
    case ZG_DIM_FF: return m->d_ff;
    }
    zg_unreachable();
}

static bool present(const ZgModel *m, const ZgArchTensor *t) { return !t->untied_only || !m->tie_embeddings; }

double zg_arch_params(const ZgModel *m)
{
    const ZgArch *a = zg_arch_find(m->arch);
    double total = 0;
    for (int i = 0; a && i < a->n_modules; i++) {
        const ZgArchModule *am = &a->modules[i];
        double sum = 0;
        for (int k = 0; k < am->n_tensors; k++) {
            const ZgArchTensor *t = &am->tensors[k];
            if (!present(m, t)) continue;
            sum += (double)dim(m, t->d0) * (t->d1 == ZG_DIM_NONE ? 1.0 : (double)dim(m, t->d1));
        }
        total += am->kind == ZG_MOD_BLOCK ? (double)m->n_layers * sum : sum;
    }
    return total;
}

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

/* Adds tensor `prefix``local` to the last module. d1 == 0 means a vector. The C identifier is the
** name without the block prefix (a block's fields repeat per layer), dots made underscores. */
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
    char *field = zg_xstrdup(local);
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

static void add_arch_module(const ZgModel *m, Builder *b, const ZgArchModule *am, int layer)
{
    const char *name = layer >= 0 ? zg_fmt(am->name, layer) : am->name;
    const char *prefix = layer >= 0 ? zg_fmt("%s.", name) : "";
    add_module(b, am->kind, layer, name);
    for (int k = 0; k < am->n_tensors; k++) {
        const ZgArchTensor *t = &am->tensors[k];
        if (present(m, t))
            add_tensor(b, prefix, t->name, dim(m, t->d0), dim(m, t->d1), t->init, t->residual_proj);
    }
}

static void build(const ZgModel *m, const ZgArch *a, Builder *b)
{
    for (int i = 0; i < a->n_modules; i++) {
        const ZgArchModule *am = &a->modules[i];
        if (am->kind != ZG_MOD_BLOCK) add_arch_module(m, b, am, -1);
        else
            for (int l = 0; l < (int)m->n_layers; l++) add_arch_module(m, b, am, l);
    }
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
    const ZgArch *a = zg_arch_find(m->arch);
    if (!a) {
        zg_error(m->loc_name, "model.arch '%s' is not supported (%s)", m->arch ? m->arch : "",
                 zg_arch_names());
        return false;
    }
    if (a->tie_required && !m->tie_embeddings) {
        zg_error(m->loc_name, "%s with tie_embeddings: false is not supported", a->name);
        return false;
    }
    Builder b = {.p = p};
    p->model = m;
    p->tensors = NULL;
    p->modules = NULL;
    p->n_tensors = p->n_modules = 0;
    build(m, a, &b);
    p->n_params = 0;
    for (int i = 0; i < p->n_tensors; i++) {
        p->tensors[i].flat_offset = p->n_params;
        p->n_params += p->tensors[i].numel;
    }
    /* Tied: lm_head owns no tensor and reads the embedding module's first tensor (the token table). */
    p->tied_tensor = -1;
    for (int i = 0; i < p->n_modules; i++)
        if (p->modules[i].kind == ZG_MOD_HEAD && p->modules[i].n_tensors == 0)
            for (int j = 0; j < p->n_modules; j++)
                if (p->modules[j].kind == ZG_MOD_EMBED) p->tied_tensor = p->modules[j].first_tensor;
    p->max_use_numel = 0;
    for (int i = 0; i < p->n_modules; i++) {
        ZgModule *md = &p->modules[i];
        md->use_numel = md->kind == ZG_MOD_HEAD && p->tied_tensor >= 0 ? p->tensors[p->tied_tensor].numel
                                                                       : md->numel;
        if (md->use_numel > p->max_use_numel) p->max_use_numel = md->use_numel;
    }
    p->largest_layer = largest_hf_module(p);
    return true;
}
