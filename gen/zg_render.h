/*
** zg_render.h — renders the trainer for a plan: Lua templates -> out/<name>/ (lua.c, tpl.c, emit.c).
*/
#ifndef ZG_RENDER_H
#define ZG_RENDER_H
#include "zg.h"
/* Renders every template into outdir (created if missing). false after reporting an error. */
bool zg_render(const ZgPlan *p, const char *outdir);
#endif
