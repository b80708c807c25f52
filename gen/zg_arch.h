/*
** zg_arch.h — the vocabulary an architecture file (gen/arch_<name>.c) describes its architecture in:
** its tensors with symbolic shapes, the Hugging Face config.json keys `--spec-from-hf` maps to spec
** keys and the values it refuses, and the config.json rows an export writes and an --init-from
** checks. One arch is one ZgArch (gen/zg.h) made of these tables; the generic walkers read them
** (model.c: tensors, hf.c: spec from a config, hf_config.c: config rows), so adding an arch adds a
** file (its one symbol, `const ZgArch zg_arch_<name>`) and a line in model.c's list, and no
** generator code branches on an arch's name.
*/
#ifndef ZG_ARCH_H
#define ZG_ARCH_H

#include "zg_plan.h"

/* ---------------------------------------------------------------------- tensors */
/* Symbolic dimensions, resolved against the spec by model.c. */
typedef enum {
    ZG_DIM_NONE,                /* second dimension of a vector */
    ZG_DIM_VOCAB, ZG_DIM_CONTEXT, ZG_DIM_MODEL,
    ZG_DIM_QKV,                 /* 3 * d_model (a fused q|k|v) */
    ZG_DIM_KV,                  /* n_kv_heads * head size (separate k and v projections) */
    ZG_DIM_FF,                  /* d_ff */
} ZgDim;

typedef struct ZgArchTensor {
    const char *name;           /* Hugging Face name; in a block, relative to the block's prefix */
    ZgDim d0, d1;
    ZgInit init;
    bool residual_proj;         /* init std / sqrt(2 * n_layers): projections into the residual */
    bool untied_only;           /* exists only with tie_embeddings: false (an own lm_head.weight) */
} ZgArchTensor;

typedef struct ZgArchModule {
    ZgModKind kind;             /* ZG_MOD_BLOCK: repeated n_layers times */
    const char *name;           /* module name; a block's is a prefix taking the layer ("h.%d") */
    const ZgArchTensor *tensors;
    int n_tensors;
} ZgArchModule;

/* ---------------------------------------------------------------------- zgen --spec-from-hf */
typedef struct ZgHfSpecKey {
    const char *hf;             /* config.json key */
    const char *alt;            /* older spelling, or NULL */
    const char *spec;           /* spec key under model: */
    char type;                  /* 'i' integer, 'n' number, 'b' boolean */
    const char *def;            /* value when absent or null (NULL: required; "" = leave out) */
} ZgHfSpecKey;

/* A config.json key whose value, when present and not null, must be `want` (JSON text: "false",
** "\"silu\"", "null" for "must be absent or null"); anything else is refused naming the key. */
typedef struct ZgHfRefusal {
    const char *key;
    const char *want;
    const char *why;            /* the note: what zgen's arch is instead */
} ZgHfRefusal;

/* ---------------------------------------------------------------------- config.json rows */
/* Where a row's value comes from (hf_config.c turns each into JSON text). */
typedef enum {
    ZG_HF_NONE,                 /* absent: no value (a required key) */
    ZG_HF_ANY,                  /* absent: anything goes (not checked when missing) */
    ZG_HF_LIT,                  /* the row's literal JSON text */
    ZG_HF_CLASS,                /* ["<ZgArch.hf_class>"] */
    ZG_HF_VOCAB, ZG_HF_CONTEXT, ZG_HF_D_MODEL, ZG_HF_N_LAYERS, ZG_HF_N_HEADS, ZG_HF_N_KV_HEADS, ZG_HF_D_FF,
    ZG_HF_4D_MODEL, ZG_HF_HEAD_DIM, ZG_HF_NORM_EPS, ZG_HF_TIE, ZG_HF_ROPE_THETA,
    ZG_HF_ROPE_SCALING,         /* null, or {"rope_type": "llama3", ...} */
    ZG_HF_ROPE_FACTOR, ZG_HF_ROPE_LOW, ZG_HF_ROPE_HIGH, ZG_HF_ROPE_ORIG,
} ZgHfSrc;

/* One config.json key. The row order is the written config.json's; torch_dtype is appended by the
** writer (the export's dtype, a run-time choice). */
typedef struct ZgHfRow {
    const char *key, *alt;      /* "a.b" = member b of object a (check only); alt: another spelling */
    ZgHfSrc value;
    const char *lit;            /* ZG_HF_LIT value */
    ZgHfSrc absent;             /* what transformers assumes when missing or null */
    const char *absent_lit;     /* ZG_HF_LIT absent */
    bool write;                 /* in the exported config.json */
    bool check;                 /* an --init-from config.json must agree */
    bool llama3_only;           /* only with rope_scaling llama3 */
} ZgHfRow;

#define ZG_ARCH_N(a) ((int)(sizeof a / sizeof a[0]))

#endif
