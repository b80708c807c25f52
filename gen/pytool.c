/*
** pytool.c — `zgen data`, `zgen plot`, `zgen log`: the tools written in Python (py/zgen_<tool>.py;
** tokenizers and plotting live there, not in C) started with the project's interpreter.
** The repository root is found from /proc/self/exe (ROOT/bin/zgen), not from the working directory,
** so the commands work from anywhere. The interpreter is $ZGEN_PYTHON, else ROOT/build/py/bin/python,
** the venv scripts/install-deps.sh makes (Debian's torch + the pinned Hugging Face packages); the
** system python3 is not tried, since it lacks those packages and would fail later and less clearly.
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "zg_pytool.h"

static const char *const TOOLS[] = { "data", "plot", "log" };
#define NTOOLS (sizeof TOOLS / sizeof TOOLS[0])

bool zg_pytool_is(const char *argv1)
{
    for (size_t i = 0; argv1 && i < NTOOLS; i++)
        if (!strcmp(argv1, TOOLS[i])) return true;
    return false;
}

/* ROOT: /proc/self/exe less its last two components (bin/zgen). 0 or -errno. */
static int find_root(char *root, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", root, cap - 1);
    if (n < 0) return -errno;
    if ((size_t)n >= cap - 1) return -ENAMETOOLONG;
    root[n] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(root, '/');
        if (!slash) return -ENOENT;
        *slash = 0;
    }
    if (!root[0]) strcpy(root, "/");
    return 0;
}

/* The interpreter's path into py; 0, or 1 after saying what to do. */
static int pick_python(const char *root, const char *tool, char *py, size_t cap)
{
    const char *env = getenv("ZGEN_PYTHON");
    if (env && *env) {
        if (access(env, X_OK) != 0) {
            fprintf(stderr, "zgen %s: ZGEN_PYTHON=%s: not an executable (%s)\n", tool, env, strerror(errno));
            return 1;
        }
        snprintf(py, cap, "%s", env);
        return 0;
    }
    if ((size_t)snprintf(py, cap, "%s/build/py/bin/python", root) >= cap) {
        fprintf(stderr, "zgen %s: path too long: %s\n", tool, root);
        return 1;
    }
    if (access(py, X_OK) != 0) {
        fprintf(stderr,
                "zgen %s: no Python for the data tools: %s is missing; run `bash scripts/install-deps.sh`\n"
                "  (or `make deps`) in %s, or set ZGEN_PYTHON to a python with transformers and matplotlib\n",
                tool, py, root);
        return 1;
    }
    return 0;
}

int zg_pytool_main(int argc, char **argv)
{
    const char *tool = argv[0];
    char root[PATH_MAX], py[PATH_MAX + 32], script[PATH_MAX + 32];
    int rc = find_root(root, sizeof root);
    if (rc) {
        fprintf(stderr, "zgen %s: cannot find the repository from /proc/self/exe: %s\n", tool, strerror(-rc));
        return 1;
    }
    if ((size_t)snprintf(script, sizeof script, "%s/py/zgen_%s.py", root, tool) >= sizeof script) {
        fprintf(stderr, "zgen %s: path too long: %s\n", tool, root);
        return 1;
    }
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "zgen %s: %s: %s (bin/zgen runs the tools of the repository it was built in)\n",
                tool, script, strerror(errno));
        return 1;
    }
    if (pick_python(root, tool, py, sizeof py)) return 1;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) {
        fprintf(stderr, "zgen %s: out of memory\n", tool);
        return 1;
    }
    args[0] = py;
    args[1] = script;
    for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
    execv(py, args);
    fprintf(stderr, "zgen %s: cannot run %s: %s\n", tool, py, strerror(errno));
    free(args);
    return 1;
}
