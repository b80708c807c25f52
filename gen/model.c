/*
** model.c — the model IR: every parameter tensor of the architecture with its Hugging Face name,
** shape (in the arch's own layout: gpt2 [in, out] as HF's Conv1D, llama [out, in] as nn.Linear),
** owning module, layer, weight-decay flag and init kind, and the module table in forward order.
** Everything later (partition, schedule, memory, emitted tables) walks these two tables, so the
** trainer never hard-codes a tensor index (docs/CONTRIBUTING.md "Templates").
**
** Each architecture is one entry of `archs` below: its modules in forward order and, per module, its
** tensors with symbolic dimensions. Nothing else in the generator branches on the arch name; what the
** front end needs to know (rotary keys, tying rules, whether the trainer can run it), the trainer's
** host files and the kernels' activation layout are in ZgArch.
*/
#include <string.h>
#include "zg.h"

/* Symbolic dimensions, resolved against the spec by dim(). */
typedef enum {
    D_NONE,                     /* second dimension of a vector */
    D_VOCAB, D_CONTEXT, D_MODEL,
    D_QKV,                      /* 3 * d_model (gpt2's fused q|k|v) */
    D_KV,                       /* n_kv_heads * head size (llama's k and v projections) */
    D_FF,                       /* d_ff */
} Dim;

typedef struct ArchTensor {
    const char *name;           /* Hugging Face name; in a block, relative to the block's prefix */
    Dim d0, d1;
    ZgInit init;
    bool residual_proj;         /* init std / sqrt(2 * n_layers): projections into the residual */
    bool untied_only;           /* exists only with tie_embeddings: false (llama's lm_head.weight) */
} ArchTensor;

typedef struct ZgArchModule {
    ZgModKind kind;             /* ZG_MOD_BLOCK: repeated n_layers times */
    const char *name;           /* module name; a block's is a prefix taking the layer ("h.%d") */
    const ArchTensor *tensors;
    int n_tensors;
} ArchModule;

#define N(a) ((int)(sizeof a / sizeof a[0]))

/* GPT-2 as Hugging Face's GPT2LMHeadModel (transformer.* prefix dropped, as in its safetensors). */
static const ArchTensor gpt2_embed[] = {
    {"wte.weight", D_VOCAB, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"wpe.weight", D_CONTEXT, D_MODEL, ZG_INIT_NORMAL, false, false},
};
static const ArchTensor gpt2_block[] = {
    {"ln_1.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
    {"ln_1.bias", D_MODEL, D_NONE, ZG_INIT_ZEROS, false, false},
    {"attn.c_attn.weight", D_MODEL, D_QKV, ZG_INIT_NORMAL, false, false},
    {"attn.c_attn.bias", D_QKV, D_NONE, ZG_INIT_ZEROS, false, false},
    {"attn.c_proj.weight", D_MODEL, D_MODEL, ZG_INIT_NORMAL, true, false},
    {"attn.c_proj.bias", D_MODEL, D_NONE, ZG_INIT_ZEROS, false, false},
    {"ln_2.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
    {"ln_2.bias", D_MODEL, D_NONE, ZG_INIT_ZEROS, false, false},
    {"mlp.c_fc.weight", D_MODEL, D_FF, ZG_INIT_NORMAL, false, false},
    {"mlp.c_fc.bias", D_FF, D_NONE, ZG_INIT_ZEROS, false, false},
    {"mlp.c_proj.weight", D_FF, D_MODEL, ZG_INIT_NORMAL, true, false},
    {"mlp.c_proj.bias", D_MODEL, D_NONE, ZG_INIT_ZEROS, false, false},
};
static const ArchTensor gpt2_final[] = {
    {"ln_f.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
    {"ln_f.bias", D_MODEL, D_NONE, ZG_INIT_ZEROS, false, false},
};
static const ArchModule gpt2_modules[] = {
    {ZG_MOD_EMBED, "embed", gpt2_embed, N(gpt2_embed)},
    {ZG_MOD_BLOCK, "h.%d", gpt2_block, N(gpt2_block)},
    {ZG_MOD_FINAL_NORM, "ln_f", gpt2_final, N(gpt2_final)},
    {ZG_MOD_HEAD, "lm_head", NULL, 0},      /* tied: owns nothing, reads wte */
};

/* LLaMA as Hugging Face's LlamaForCausalLM: nn.Linear weights [out, in], no biases. */
static const ArchTensor llama_embed[] = {
    {"model.embed_tokens.weight", D_VOCAB, D_MODEL, ZG_INIT_NORMAL, false, false},
};
static const ArchTensor llama_block[] = {
    {"input_layernorm.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
    {"self_attn.q_proj.weight", D_MODEL, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"self_attn.k_proj.weight", D_KV, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"self_attn.v_proj.weight", D_KV, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"self_attn.o_proj.weight", D_MODEL, D_MODEL, ZG_INIT_NORMAL, true, false},
    {"post_attention_layernorm.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
    {"mlp.gate_proj.weight", D_FF, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"mlp.up_proj.weight", D_FF, D_MODEL, ZG_INIT_NORMAL, false, false},
    {"mlp.down_proj.weight", D_MODEL, D_FF, ZG_INIT_NORMAL, true, false},
};
static const ArchTensor llama_final[] = {
    {"model.norm.weight", D_MODEL, D_NONE, ZG_INIT_ONES, false, false},
};
static const ArchTensor llama_head[] = {
    {"lm_head.weight", D_VOCAB, D_MODEL, ZG_INIT_NORMAL, false, true},
};
static const ArchModule llama_modules[] = {
    {ZG_MOD_EMBED, "embed", llama_embed, N(llama_embed)},
    {ZG_MOD_BLOCK, "model.layers.%d", llama_block, N(llama_block)},
    {ZG_MOD_FINAL_NORM, "model.norm", llama_final, N(llama_final)},
    {ZG_MOD_HEAD, "lm_head", llama_head, N(llama_head)},
};

/* The trainer's host files per arch (templates/host/, emitted flat): the gpt2 kernels are also
** llama's building blocks (threads, zk_sgemm, zk_exp), so llama lists them too. */
static const char *const gpt2_files[] = {
    "gpt2_host.c", "gpt2_host.h", "gpt2_host_attn.c", "gpt2_host_math.h", "gpt2_host_ops.c",
    "gpt2/gpt2_model.c", NULL,
};
static const char *const llama_files[] = {
    "gpt2_host.c", "gpt2_host.h", "gpt2_host_attn.c", "gpt2_host_math.h", "gpt2_host_ops.c",
    "llama/llama_host.c", "llama/llama_host.h", "llama/llama_model.c", NULL,
};

/* Activation layouts: gpt2_host.h and llama_host.h state them term by term ("Memory"). */
#define GPT2_ACTS {.btc = 2, .bt = 3, .btv = 1}                     /* encoded; lnf, mean, rstd, logits, losses */
#define GPT2_LAYER {.btc = 8, .bt = 4, .att = 1, .btf = 2}
#define GPT2_SCRATCH {.btc = 6, .att = 1, .btf = 2}
#define LLAMA_ACTS {.btc = 2, .bt = 2, .btv = 1}                    /* encoded; lnf, rstd, logits, losses */
#define LLAMA_LAYER {.btc = 6, .bt = 2, .btkv = 2, .att = 1, .btf = 3}
#define LLAMA_SCRATCH {.btc = 4, .btkv = 2, .att = 1, .btf = 3, .rope = 1}

/* train-cuda's device layouts, array by array as the adapters carve them (the activation dtype unless
** f32): templates/cuda_trainer/gpt2/cuda_gpt2.c and llama/cuda_llama.c. */
#define A(n, t) {n, ZG_DA_##t, false}
#define F(n, t) {n, ZG_DA_##t, true}
static const ZgDevArr gpt2_dev_fixed[] = {        /* encoded, lnf, lnf mean/rstd, logits, losses */
    A(1, BTC), A(1, BTC), F(1, BT), F(1, BT), A(1, BTV), F(1, BT), {0},
};
static const ZgDevArr gpt2_dev_layer[] = {        /* ln1, mean, rstd, qkv, atty, lse, residual2,
                                                  ** ln2, mean, rstd, fch, fch_gelu, residual3 */
    A(1, BTC), F(1, BT), F(1, BT), A(3, BTC), A(1, BTC), F(1, LSE), A(1, BTC),
    A(1, BTC), F(1, BT), F(1, BT), A(1, BTF), A(1, BTF), A(1, BTC), {0},
};
static const ZgDevArr gpt2_dev_scratch[] = {      /* dresidual, dln, dqkv, datty, D, dfch, dfch_gelu,
                                                  ** ones, position buckets, tokens, targets,
                                                  ** positions, colsum, token buckets */
    A(1, BTC), A(1, BTC), A(3, BTC), A(1, BTC), F(1, LSE), A(1, BTF), A(1, BTF),
    A(1, BT), F(1, TOKBKT), F(1, BT), F(1, BT), F(1, BT), F(1, COLSUM), F(1, TOKBKT), {0},
};
static const ZgDevArr llama_dev_fixed[] = {       /* encoded, lnf, lnf rstd, logits, losses */
    A(1, BTC), A(1, BTC), F(1, BT), A(1, BTV), F(1, BT), {0},
};
static const ZgDevArr llama_dev_layer[] = {       /* ln1, rstd, q, k, v, atty, lse, residual2,
                                                  ** ln2, rstd, gate, up, h, residual3 */
    A(1, BTC), F(1, BT), A(1, BTC), A(1, BTKV), A(1, BTKV), A(1, BTC), F(1, LSE), A(1, BTC),
    A(1, BTC), F(1, BT), A(1, BTF), A(1, BTF), A(1, BTF), A(1, BTC), {0},
};
static const ZgDevArr llama_dev_scratch[] = {     /* dresidual, dln, dq, dk, dv, datty, D, dgate, dup,
                                                  ** dh, RoPE cos, sin, tokens, targets, positions,
                                                  ** colsum, token buckets */
    A(1, BTC), A(1, BTC), A(1, BTC), A(1, BTKV), A(1, BTKV), A(1, BTC), F(1, LSE), A(1, BTF), A(1, BTF),
    A(1, BTF), F(1, ROPE), F(1, ROPE), F(1, BT), F(1, BT), F(1, BT), F(1, COLSUM), F(1, TOKBKT), {0},
};
#undef A
#undef F

static const ZgArch archs[] = {
    {"gpt2", "GPT2LMHeadModel", "[in, out]", false, true, true, false, NULL,
     gpt2_modules, N(gpt2_modules), gpt2_files, NULL, "gpt2/cuda_gpt2.c", gpt2_dev_fixed, gpt2_dev_layer,
     gpt2_dev_scratch, GPT2_ACTS, GPT2_LAYER, GPT2_SCRATCH},
    {"llama", "LlamaForCausalLM", "[out, in]", true, false, false, true, NULL,
     llama_modules, N(llama_modules), llama_files, NULL, "llama/cuda_llama.c", llama_dev_fixed,
     llama_dev_layer, llama_dev_scratch, LLAMA_ACTS, LLAMA_LAYER, LLAMA_SCRATCH},
};

const ZgArch *zg_arch_find(const char *name)
{
    for (int i = 0; name && i < N(archs); i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

const char *zg_arch_names(void)
{
    static char buf[128];
    if (!buf[0])
        for (int i = 0; i < N(archs); i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", archs[i].name);
    return buf;
}

static int64_t dim(const ZgModel *m, Dim d)
{
    switch (d) {
    case D_NONE: return 0;
    case D_VOCAB: return m->vocab_size;
    case D_CONTEXT: return m->context;
    case D_MODEL: return m->d_model;
    case D_QKV: return 3 * m->d_model;
    case D_KV: return m->n_heads > 0 ? m->n_kv_heads * (m->d_model / m->n_heads) : 0;
    case D_FF: return m->d_ff;
    }
    zg_unreachable();
}

static bool present(const ZgModel *m, const ArchTensor *t) { return !t->untied_only || !m->tie_embeddings; }

double zg_arch_params(const ZgModel *m)
{
    const ZgArch *a = zg_arch_find(m->arch);
    double total = 0;
    for (int i = 0; a && i < a->n_modules; i++) {
        const ArchModule *am = &a->modules[i];
        double sum = 0;
        for (int k = 0; k < am->n_tensors; k++) {
            const ArchTensor *t = &am->tensors[k];
            if (!present(m, t)) continue;
            sum += (double)dim(m, t->d0) * (t->d1 == D_NONE ? 1.0 : (double)dim(m, t->d1));
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

static void add_arch_module(const ZgModel *m, Builder *b, const ArchModule *am, int layer)
{
    const char *name = layer >= 0 ? zg_fmt(am->name, layer) : am->name;
    const char *prefix = layer >= 0 ? zg_fmt("%s.", name) : "";
    add_module(b, am->kind, layer, name);
    for (int k = 0; k < am->n_tensors; k++) {
        const ArchTensor *t = &am->tensors[k];
        if (present(m, t))
            add_tensor(b, prefix, t->name, dim(m, t->d0), dim(m, t->d1), t->init, t->residual_proj);
    }
}

static void build(const ZgModel *m, const ZgArch *a, Builder *b)
{
    for (int i = 0; i < a->n_modules; i++) {
        const ArchModule *am = &a->modules[i];
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
