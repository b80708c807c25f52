/*
** t_bad.c — every bad spec/config under tests/bad/ must be refused with the right message at the
** right line. The table is tests/bad/cases.txt (FILE|LINE|FRAGMENT); a file listed several times must
** produce all of its messages in one run (zgen reports every error, not the first). A file the front
** end accepts is planned too, so refusals of the planner (bounds, fit) are cases like any other.
*/
#include "zg_plan.h"
#include "zt.h"

#define BAD "tests/bad/"

/* Runs the front end on one bad file: a spec (spec_*.yaml) with its own config, or a config with
** tests/bad/base.yaml. Messages are kept by diag's quiet mode. */
static void run_front_end(const char *file)
{
    ZgModel m;
    ZgZero z;
    char path[512];
    snprintf(path, sizeof path, BAD "%s", file);
    zg_diag_reset();
    zg_diag_quiet(true);
    if (!strncmp(file, "spec_", 5)) {
        const ZgNode *ds = zg_spec_load(path, &m);
        if (m.name || ds) zg_zero_load(ds, &m, &z);
        else zg_zero_defaults(&z);
    } else {
        zg_spec_load(BAD "base.yaml", &m);
        ZT_CHECKM(zg_error_count() == 0, "base.yaml must be valid:\n%s", zg_diag_log());
        zg_zero_load_file(path, &m, &z);
    }
    zg_check(&m, &z);
    if (zg_error_count() == 0) {
        static ZgPlan p;
        memset(&p, 0, sizeof p);
        if (zg_model_build(&m, &p)) zg_plan_build(&m, &z, &p);
    }
}

static void t_cases(void)
{
    FILE *f = fopen(BAD "cases.txt", "r");
    ZT_CHECKM(f != NULL, "cannot open " BAD "cases.txt (run from the repository root)");
    if (!f) return;
    char line[1024], last_file[1024] = "";
    int n_cases = 0, n_files = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *bar1 = strchr(line, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
        ZT_CHECKM(bar2 != NULL, "malformed case line: %s", line);
        if (!bar2) continue;
        *bar1 = *bar2 = 0;
        const char *file = line, *frag = bar2 + 1;
        int at = atoi(bar1 + 1);
        if (strcmp(file, last_file) != 0) {
            run_front_end(file);
            snprintf(last_file, sizeof last_file, "%s", file);
            n_files++;
            ZT_CHECKM(zg_error_count() > 0, "%s: accepted, but it must be refused", file);
        }
        n_cases++;
        ZT_CHECKM(zg_diag_count_matching(frag, at) > 0, "%s: no message containing \"%s\" at line %d; got:\n%s",
                  file, frag, at, zg_diag_log());
    }
    fclose(f);
    ZT_CHECKM(n_files >= 30, "only %d bad files (need at least 30)", n_files);
    printf("  %d bad files, %d expected messages\n", n_files, n_cases);
}

/* Several independent errors in one file: each is reported, none stops the others. */
static void t_all_errors_reported(void)
{
    run_front_end("many.json");
    ZT_CHECKM(zg_error_count() >= 5, "many.json: %d errors, want >= 5:\n%s", zg_error_count(), zg_diag_log());
    run_front_end("spec_many.yaml");
    ZT_CHECKM(zg_error_count() >= 5, "spec_many.yaml: %d errors, want >= 5:\n%s", zg_error_count(), zg_diag_log());
}

static void t_missing_config_file(void)
{
    ZgModel m;
    ZgZero z;
    zg_diag_reset();
    zg_diag_quiet(true);
    zg_spec_load(BAD "base.yaml", &m);
    ZT_CHECK(!zg_zero_load_file(BAD "no_such_config.json", &m, &z));
    ZT_CHECKM(zg_diag_count_matching("cannot open 'tests/bad/no_such_config.json'", 0) == 1, "%s", zg_diag_log());
    zg_diag_reset();
    ZT_CHECK(zg_spec_load(BAD "no_such_spec.yaml", &m) == NULL);
    ZT_CHECKM(zg_diag_count_matching("cannot open", 0) == 1, "%s", zg_diag_log());
}

/* Only regular files are read: a directory or a device is refused at once, naming what it is (a FIFO
** would block; tests/gen/t_bounds.sh makes one). */
static void t_not_regular_file(void)
{
    ZgModel m;
    ZgZero z;
    zg_diag_reset();
    zg_diag_quiet(true);
    zg_spec_load(BAD "base.yaml", &m);
    ZT_CHECK(!zg_zero_load_file("tests/bad", &m, &z));
    ZT_CHECKM(zg_diag_count_matching("'tests/bad' is a directory", 0) == 1, "%s", zg_diag_log());
    zg_diag_reset();
    ZT_CHECK(zg_spec_load("/dev/null", &m) == NULL);
    ZT_CHECKM(zg_diag_count_matching("is a character device", 0) == 1, "%s", zg_diag_log());
}

/* The diagnostics a user sees: file:line:col, the source line, a caret under the column. */
static void t_printed_format(void)
{
    zg_diag_reset();
    zg_diag_quiet(false);
    fflush(stderr);
    FILE *saved = stderr;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    stderr = mem;
    ZgNode *n = zg_node_load_string("a: 1\nbb: {x: 2, x: 3}\n", "mem.yaml");
    stderr = saved;
    fclose(mem);
    ZT_CHECK(n != NULL);
    ZT_CHECKM(strstr(buf, "mem.yaml:2:12: error: duplicate key 'x'") != NULL, "got:\n%s", buf);
    ZT_CHECKM(strstr(buf, "bb: {x: 2, x: 3}\n") != NULL, "source line missing:\n%s", buf);
    /* the caret sits under column 12 (the second x) of the quoted line */
    const char *src = strstr(buf, "bb: {x: 2, x: 3}");
    const char *caret = src ? strchr(src, '^') : NULL;
    const char *nl = src ? strchr(src, '\n') : NULL;
    const char *bol = src ? memrchr(buf, '\n', (size_t)(src - buf)) : NULL;
    bol = bol ? bol + 1 : buf;
    ZT_CHECKM(caret && nl && caret - (nl + 1) == (src - bol) + 11, "caret not under column 12:\n%s", buf);
    ZT_CHECKM(strstr(buf, "note: 'x' was first set at line 2") != NULL, "got:\n%s", buf);
    free(buf);
    zg_diag_quiet(true);
}

int main(void)
{
    ZT_RUN(t_cases);
    ZT_RUN(t_all_errors_reported);
    ZT_RUN(t_missing_config_file);
    ZT_RUN(t_not_regular_file);
    ZT_RUN(t_printed_format);
    return zt_end();
}
