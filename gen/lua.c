/*
** lua.c — the embedded Lua 5.4 that renders templates (docs/TEMPLATES.md "Environment").
**
** A ZgLua is one lua_State with only base, string, table, math and utf8 opened, and a "base"
** environment table (registry ref) holding the functions templates may use, `plan`, `gen` and the
** helper modules of templates/lib/. Templates and modules never run with the state's globals as
** _ENV: each gets a fresh table whose metatable forwards reads to the base and turns an undefined
** name or a global assignment into an error, so typos fail loudly and nothing leaks between
** templates. `pairs` is replaced by a sorted walk because Lua's string hashes are seeded per run
** and output must be byte-identical across runs. Every call runs under lua_pcall with a traceback
** handler; errors come back as malloc'd strings "templates/<file>:<line>: message\n<traceback>".
** The tables themselves (`plan`, `gen`, `enums`) are built by lua_plan.c.
*/
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "zg_render.h"
#include "zg_lua_plan.h"

struct ZgLua {
    lua_State *L;
    int base;                   /* registry ref of the base environment table */
};

/* {===================================================================== base functions */
/* Output buffer of the template being rendered (upvalue of _o). */
typedef struct Out { char *p; size_t n, cap; } Out;

/* _o(...): appends its string arguments to the output. */
static int l_out(lua_State *L)
{
    Out *o = lua_touserdata(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = lua_tolstring(L, i, &len);
        if (!s || lua_type(L, i) != LUA_TSTRING) return luaL_error(L, "internal: _o argument %d", i);
        if (o->n + len + 1 > o->cap) {
            o->cap = (o->n + len + 1) * 2 + 256;
            o->p = zg_xrealloc(o->p, o->cap);
        }
        memcpy(o->p + o->n, s, len);
        o->n += len;
        o->p[o->n] = 0;
    }
    return 0;
}

/* The shortest "%.*g" of x that reads back as x, with ".0" when it would look like an integer. */
static void push_double(lua_State *L, double x)
{
    char s[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, x);
        if (strtod(s, NULL) == x) break;
    }
    if (!strpbrk(s, ".eEn")) strcat(s, ".0");
    lua_pushstring(L, s);
}

/* _s(value, "expr text"): a ${} value as text; nil, booleans and tables are template bugs. */
static int l_str(lua_State *L)
{
    const char *expr = luaL_optstring(L, 2, "?");
    switch (lua_type(L, 1)) {
    case LUA_TSTRING: lua_settop(L, 1); return 1;
    case LUA_TNUMBER:
        if (lua_isinteger(L, 1)) {
            lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, 1));
        } else {
            double x = lua_tonumber(L, 1);
            if (!isfinite(x)) return luaL_error(L, "${%s} is %f, not a finite number", expr, x);
            push_double(L, x);
        }
        return 1;
    case LUA_TNIL: return luaL_error(L, "${%s} is nil", expr);
    case LUA_TBOOLEAN:
        return luaL_error(L, "${%s} is a boolean (write cfmt.bool(...) for 0/1)", expr);
    default: return luaL_error(L, "${%s} is a %s, not a string or number", expr, luaL_typename(L, 1));
    }
}

/* Sort key of one table key: numbers before strings; others have no stable order. */
typedef struct Key { int pos; bool is_num; double num; const char *s; size_t len; } Key;

static int key_cmp(const void *a, const void *b)
{
    const Key *x = a, *y = b;
    if (x->is_num != y->is_num) return x->is_num ? -1 : 1;
    if (x->is_num) return (x->num > y->num) - (x->num < y->num);
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Iterator of l_pairs: upvalues (sorted keys, next position). */
static int sorted_next(lua_State *L)
{
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(2)) + 1;
    lua_pushinteger(L, i);
    lua_replace(L, lua_upvalueindex(2));
    if (lua_rawgeti(L, lua_upvalueindex(1), i) == LUA_TNIL) return 1;
    lua_pushvalue(L, -1);
    lua_rawget(L, 1);
    return 2;
}

/* pairs(t) in sorted key order, so that output never depends on hash seeds. */
static int l_pairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_newtable(L);                                    /* stack: t, keys */
    int n = 0;
    for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
        int kt = lua_type(L, -2);
        if (kt != LUA_TNUMBER && kt != LUA_TSTRING)
            return luaL_error(L, "pairs: a %s key has no order; use numbers or strings",
                              lua_typename(L, kt));
        lua_pushvalue(L, -2);
        lua_rawseti(L, 2, ++n);
    }
    Key *k = zg_xcalloc((size_t)n + 1, sizeof *k);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        k[i].pos = i + 1;
        k[i].is_num = lua_type(L, -1) == LUA_TNUMBER;
        if (k[i].is_num) k[i].num = lua_tonumber(L, -1);
        else k[i].s = lua_tolstring(L, -1, &k[i].len);  /* anchored by the keys table */
        lua_pop(L, 1);
    }
    qsort(k, (size_t)n, sizeof *k, key_cmp);
    lua_createtable(L, n, 0);                           /* stack: t, keys, sorted */
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, k[i].pos);
        lua_rawseti(L, 3, i + 1);
    }
    free(k);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, sorted_next, 2);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* __index of an environment: the base's value, or an error naming the undefined name. */
static int env_index(lua_State *L)
{
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    return luaL_error(L, "undefined name '%s'", luaL_tolstring(L, 2, NULL));
}
static int env_newindex(lua_State *L)
{
    return luaL_error(L, "assignment to global '%s' (declare it local)", luaL_tolstring(L, 2, NULL));
}

/* Pushes a fresh strict environment over the base. */
static void push_env(ZgLua *z)
{
    lua_State *L = z->L;
    lua_newtable(L);
    lua_createtable(L, 0, 3);
    lua_rawgeti(L, LUA_REGISTRYINDEX, z->base);
    lua_pushcclosure(L, env_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, env_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushliteral(L, "environment");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
}

/* Message handler: the message plus a traceback. */
static int msgh(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* Calls the function on top (below it nargs arguments) protected; false and *err on error. */
static bool pcall(lua_State *L, int nargs, int nres, char **err)
{
    int at = lua_gettop(L) - nargs;
    lua_pushcfunction(L, msgh);
    lua_insert(L, at);
    int rc = lua_pcall(L, nargs, nres, at);
    lua_remove(L, at);
    if (rc == LUA_OK) return true;
    *err = zg_xstrdup(lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
    lua_pop(L, 1);
    return false;
}

ZgLua *zg_lua_new(void)
{
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
        {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL},
    };
    static const char *const keep[] = {
        "assert", "error", "ipairs", "select", "tonumber", "tostring", "type", "pcall",
        "rawequal", "rawlen", "rawget", "setmetatable", "string", "table", "math", "utf8", NULL,
    };
    ZgLua *z = zg_xcalloc(1, sizeof *z);
    lua_State *L = z->L = luaL_newstate();
    if (!L) { fprintf(stderr, "zgen: out of memory creating the Lua state\n"); exit(1); }
    for (const luaL_Reg *r = libs; r->name; r++) {
        luaL_requiref(L, r->name, r->func, 1);
        lua_pop(L, 1);
    }
    /* Not for templates, even through the string metatable: bytecode, and randomness (output
    ** must be the same on every run). */
    lua_getglobal(L, "string");
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
    lua_getglobal(L, "math");
    lua_pushnil(L);
    lua_setfield(L, -2, "random");
    lua_pushnil(L);
    lua_setfield(L, -2, "randomseed");
    lua_pop(L, 1);

    lua_createtable(L, 0, 32);                          /* stack: base */
    for (const char *const *k = keep; *k; k++) {
        lua_getglobal(L, *k);
        lua_setfield(L, -2, *k);
    }
    lua_pushcfunction(L, l_pairs);
    lua_setfield(L, -2, "pairs");
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "unpack");
    lua_setfield(L, -3, "unpack");
    lua_pop(L, 1);
    z->base = luaL_ref(L, LUA_REGISTRYINDEX);
    return z;
}

void zg_lua_free(ZgLua *z)
{
    if (!z) return;
    lua_close(z->L);
    free(z);
}

/* Sets base[name] = value on top (popped). */
static void set_base(ZgLua *z, const char *name)
{
    lua_rawgeti(z->L, LUA_REGISTRYINDEX, z->base);
    lua_insert(z->L, -2);
    lua_setfield(z->L, -2, name);
    lua_pop(z->L, 1);
}
/* }===================================================================== */

/* {===================================================================== the plan and gen (lua_plan.c) */
void zg_lua_set_plan(ZgLua *z, const ZgPlan *p)
{
    zg_lua_push_enums(z->L);
    set_base(z, "enums");
    zg_lua_push_plan(z->L, p);
    set_base(z, "plan");
}

void zg_lua_set_gen(ZgLua *z, const ZgGenInfo *g)
{
    zg_lua_push_gen(z->L, g);
    set_base(z, "gen");
}
/* }===================================================================== */

/* {===================================================================== modules and rendering */
static bool is_ident(const char *s)
{
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

bool zg_lua_load_lib(ZgLua *z, const char *name, const char *text, size_t len, char **err)
{
    lua_State *L = z->L;
    char *chunk = zg_fmt("@templates/lib/%s.lua", name);
    *err = NULL;
    if (!is_ident(name)) {
        *err = zg_fmt("%s:1: module name '%s' is not a Lua identifier", chunk + 1, name);
        free(chunk);
        return false;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, z->base);
    int taken = lua_getfield(L, -1, name) != LUA_TNIL;
    lua_pop(L, 2);
    if (taken) {
        *err = zg_fmt("%s:1: module name '%s' is already taken in the template environment",
                      chunk + 1, name);
        free(chunk);
        return false;
    }
    int rc = luaL_loadbufferx(L, text, len, chunk, "t");
    free(chunk);
    if (rc != LUA_OK) {
        *err = zg_xstrdup(lua_tostring(L, -1));
        lua_pop(L, 1);
        return false;
    }
    push_env(z);
    lua_setupvalue(L, -2, 1);                           /* the chunk's _ENV */
    if (!pcall(L, 0, 1, err)) return false;
    if (!lua_istable(L, -1)) {
        *err = zg_fmt("templates/lib/%s.lua: the module returned a %s, not a table of functions",
                      name, luaL_typename(L, -1));
        lua_pop(L, 1);
        return false;
    }
    set_base(z, name);
    return true;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool zg_lua_load_libs(ZgLua *z, const char *tpl_dir, char **err)
{
    char *dir = zg_fmt("%s/lib", tpl_dir);
    DIR *d = opendir(dir);
    *err = NULL;
    if (!d) {
        *err = zg_fmt("templates/lib: cannot open %s: %s", dir, strerror(errno));
        free(dir);
        return false;
    }
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".lua") != 0) continue;
        names = zg_xrealloc(names, (size_t)(n + 1) * sizeof *names);
        names[n++] = zg_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, str_cmp);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        char *path = zg_fmt("%s/%s", dir, names[i]);
        size_t len;
        char *text = zg_emit_read_file(path, &len);
        names[i][strlen(names[i]) - 4] = 0;
        if (!text) {
            *err = zg_fmt("templates/lib/%s.lua: cannot read %s: %s", names[i], path, strerror(errno));
            ok = false;
        } else {
            ok = zg_lua_load_lib(z, names[i], text, len, err);
        }
        free(text);
        free(path);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    free(dir);
    return ok;
}

bool zg_lua_render(ZgLua *z, const ZgTpl *t, char **out, size_t *out_len, char **err)
{
    lua_State *L = z->L;
    char *chunk = zg_fmt("@%s", t->name);
    int rc = luaL_loadbufferx(L, t->lua, t->lua_len, chunk, "t");
    free(chunk);
    *err = NULL;
    *out = NULL;
    *out_len = 0;
    if (rc != LUA_OK) {
        /* "near '_o'" names the compiled form of a text line, not anything in the template. */
        static const char near_o[] = "near '_o'";
        const char *msg = lua_tostring(L, -1);
        size_t n = strlen(msg), k = sizeof near_o - 1;
        if (n > k && strcmp(msg + n - k, near_o) == 0)
            *err = zg_fmt("%.*sbefore this text line", (int)(n - k), msg);
        else
            *err = zg_xstrdup(msg);
        lua_pop(L, 1);
        return false;
    }
    push_env(z);
    lua_setupvalue(L, -2, 1);
    Out o = {0};
    lua_pushlightuserdata(L, &o);
    lua_pushcclosure(L, l_out, 1);
    lua_pushcfunction(L, l_str);
    if (!pcall(L, 2, 0, err)) {
        free(o.p);
        return false;
    }
    *out = o.p ? o.p : zg_xstrdup("");
    *out_len = o.n;
    return true;
}
/* }===================================================================== */
