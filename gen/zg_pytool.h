/*
** zg_pytool.h — `zgen data|plot|log` (pytool.c): the Python tools of py/ run with the project's
** interpreter, so users type one command name for the whole tool chain.
*/
#ifndef ZG_PYTOOL_H
#define ZG_PYTOOL_H
#include <stdbool.h>
/* Whether argv1 names a Python tool (data, plot, log). */
bool zg_pytool_is(const char *argv1);
/* argv[0] is the tool's name: execs ROOT/py/zgen_<tool>.py with argv[1..] and does not return;
** returns 1 after printing why when it cannot (no interpreter, no script, exec failure). */
int zg_pytool_main(int argc, char **argv);
#endif
