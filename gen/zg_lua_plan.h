/*
** zg_lua_plan.h — lua_plan.c's interface to lua.c: each function pushes one table (the plan, the
** generation facts, the shared enum names) on L's stack; lua.c stores it in the templates' base
** environment.
*/
#ifndef ZG_LUA_PLAN_H
#define ZG_LUA_PLAN_H
#include <lua.h>
#include "zg_render.h"

void zg_lua_push_enums(lua_State *L);                      /* enums.tiers, .ops, ... (zr_enums.h) */
void zg_lua_push_plan(lua_State *L, const ZgPlan *p);      /* the plan, as docs/TEMPLATES.md lists */
/* hf_config.c: sets plan.hf_config and plan.hf_ignore on the table at the top of the stack */
void zg_lua_push_hf(lua_State *L, const ZgModel *m);
void zg_lua_push_gen(lua_State *L, const ZgGenInfo *g);    /* gen.root, .spec, .outputs, .sources */
#endif
