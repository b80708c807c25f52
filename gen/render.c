/* render.c — placeholder until the Lua renderer lands; renders nothing. */
#include "zg_render.h"
bool zg_render(const ZgPlan *p, const char *outdir)
{
    (void)p; (void)outdir;
    return true;
}
