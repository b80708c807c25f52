/*
** zg_render.h — renders the trainer for a plan: Lua templates -> out/<name>/.
** Four files, one job each (docs/TEMPLATES.md describes the template language and environment):
**   tpl.c     template text -> Lua source, one Lua line per template line (so Lua's positions are
**             template positions: the line map is the identity by construction);
**   lua.c     the embedded Lua 5.4 state: restricted libraries, the strict environment, the plan as
**             presized tables, the templates/lib helper modules, protected rendering;
**   emit.c    output files: banner in the file's comment syntax, temp file + rename;
**   render.c  zg_render: finds the templates, renders every one in memory, then writes them all.
** Errors inside the renderer are strings "templates/<file>:<line>: message" (+ traceback lines),
** malloc'd; render.c turns them into zg_error reports at that location.
*/
#ifndef ZG_RENDER_H
#define ZG_RENDER_H
#include "zg_plan.h"

/* ======================================================================= render.c */
/* Renders every template into outdir (created if missing). false after reporting an error. */
bool zg_render(const ZgPlan *p, const char *outdir);
/* As zg_render with an explicit templates folder (NULL = zg_templates_dir()). */
bool zg_render_from(const ZgPlan *p, const char *outdir, const char *tpl_dir);
/* The templates folder: $ZGEN_TEMPLATES, else `templates/` beside the running binary's folder or one
** of its parents (bin/../templates). Absolute, malloc'd once; NULL if not found. */
const char *zg_templates_dir(void);
/* Reports a renderer error string (see above) through zg_error + zg_note. */
void zg_render_report(const char *err);

/* ======================================================================= tpl.c */
/* Statement lines: first non-blank characters "@@" then a blank or the end of the line. */
#define ZG_TPL_STMT "@@"

typedef struct ZgTpl {
    char *name;                 /* "templates/trainer/zg_model.h.tpl" (chunk name without '@') */
    char *lua;                  /* the Lua source; line k is template line k */
    size_t lua_len;
    int n_lines;                /* template lines (= Lua lines) */
} ZgTpl;

/* Compiles template text named `name`. false and *err (malloc'd "name:line: message") on a
** template error such as an unclosed ${. */
bool zg_tpl_compile(const char *name, const char *text, size_t len, ZgTpl *out, char **err);
void zg_tpl_free(ZgTpl *t);

/* ======================================================================= lua.c */
typedef struct ZgLua ZgLua;

/* Facts of this generation handed to templates as the `gen` table. */
typedef struct ZgGenInfo {
    const char *root;           /* absolute repository root (parent of the templates folder) */
    const char *spec;           /* spec path as given */
    const char *name;           /* spec name */
    const char *template_path;  /* "templates/trainer/zg_model.h.tpl" */
    const char *output;         /* "zg_model.h" */
    const char *const *outputs; /* every output file name, sorted */
    int n_outputs;
} ZgGenInfo;

/* A state with only base/string/table/math/utf8 opened and the template base environment. */
ZgLua *zg_lua_new(void);
void zg_lua_free(ZgLua *z);
/* Sets `plan` in the base environment (presized tables, field names as in ZgPlan). */
void zg_lua_set_plan(ZgLua *z, const ZgPlan *p);
/* Sets `gen` in the base environment. */
void zg_lua_set_gen(ZgLua *z, const ZgGenInfo *g);
/* Loads every Lua file of <tpl_dir>/lib (sorted) as module <basename>. false and *err on failure. */
bool zg_lua_load_libs(ZgLua *z, const char *tpl_dir, char **err);
/* Loads one helper module from text (chunk "@templates/lib/<name>.lua"); tests use it directly. */
bool zg_lua_load_lib(ZgLua *z, const char *name, const char *text, size_t len, char **err);
/* Renders a compiled template in a fresh environment over the base. On success *out (malloc'd,
** NUL-terminated) and *out_len; else false and *err. */
bool zg_lua_render(ZgLua *z, const ZgTpl *t, char **out, size_t *out_len, char **err);
/* Enum names handed to Lua (also used by tests to check they cover every enumerator). */
const char *zg_lua_op_name(int k);          /* "gather", ...; NULL past the last */
const char *zg_lua_tier_name(int t);        /* "device", ... */
const char *zg_lua_memcat_name(int c);      /* "param16", ... */

/* ======================================================================= emit.c */
/* The banner line(s) for an output file name, in its comment syntax, ending in '\n'; NULL when
** the format has no comments (e.g. .json). malloc'd. */
char *zg_emit_banner(const char *filename, const char *spec);
/* Writes dir/name = banner + data (after a leading "#!" line if any) through a temp file in dir
** and rename. false after reporting (zg_error). */
bool zg_emit_file(const char *dir, const char *name, const char *spec, const char *data, size_t len);
/* mkdir -p. false after reporting. */
bool zg_emit_mkdirs(const char *dir);
/* Reads a whole file (NUL-terminated, malloc'd). NULL with errno set on failure. */
char *zg_emit_read_file(const char *path, size_t *len);
#endif
