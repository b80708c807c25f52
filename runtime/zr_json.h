/*
** zr_json.h — a small JSON reader for the headers we parse (safetensors, checkpoint manifests):
** the whole text is tokenised into a flat array in document order; each token knows its type, its
** span in the text and how many tokens its subtree holds, so walking an object is index arithmetic.
** Strict RFC 8259 grammar (no trailing commas, no comments); strings may hold escapes, which
** zr_json_str decodes (\uXXXX to UTF-8, surrogate pairs included).
*/
#ifndef ZR_JSON_H
#define ZR_JSON_H
#include <stddef.h>
#include <stdint.h>

typedef enum { ZR_JSON_OBJ, ZR_JSON_ARR, ZR_JSON_STR, ZR_JSON_NUM, ZR_JSON_TRUE, ZR_JSON_FALSE,
               ZR_JSON_NULL } ZrJsonType;

typedef struct ZrJsonTok {
    int type;                   /* ZrJsonType */
    size_t start, end;          /* text span; strings: inside the quotes */
    int n;                      /* direct children: members (key+value pairs) or array items */
    int span;                   /* tokens in this subtree, itself included */
} ZrJsonTok;

typedef struct ZrJson {
    const char *text;
    size_t len;
    ZrJsonTok *t;               /* [nt], t[0] the root */
    int nt, cap;
} ZrJson;

/* Parses text[len]; -EINVAL with "offset N: what" in err (cap errcap) on bad JSON. Free with _free. */
int zr_json_parse(ZrJson *j, const char *text, size_t len, char *err, size_t errcap);
void zr_json_free(ZrJson *j);
/* Index of the value of `key` in object token obj, or -1. */
int zr_json_get(const ZrJson *j, int obj, const char *key);
/* Index of item k of array token arr, or -1. Members of an object: key at 2k, value at 2k+1. */
int zr_json_item(const ZrJson *j, int arr, int k);
/* Decodes string token i into out (NUL-terminated); -ENAMETOOLONG when it does not fit. */
int zr_json_str(const ZrJson *j, int i, char *out, size_t cap);
/* 1 when string token i equals s (escapes decoded). */
int zr_json_str_eq(const ZrJson *j, int i, const char *s);
/* Number token i as an exact non-negative integer (no fraction/exponent); -EINVAL otherwise. */
int zr_json_u64(const ZrJson *j, int i, uint64_t *v);
int zr_json_i64(const ZrJson *j, int i, int64_t *v);
int zr_json_num(const ZrJson *j, int i, double *v);
#endif
