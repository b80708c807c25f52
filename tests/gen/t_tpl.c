/*
** t_tpl.c — the template engine (tpl.c + lua.c), the helper modules of templates/lib, emission
** (emit.c) and error reporting (render.c): plain text, ${} expressions, statement lines, loops,
** errors at the template's file:line for syntax and runtime errors, environment isolation, the
** plan as tables, banners and atomic writes. Expected strings are written out by hand.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zt.h"
#include "zg_render.h"
#include "../../runtime/zr_plan.h"

static const char *root(void)
{
    const char *r = getenv("ZT_ROOT");
    return r && *r ? r : ".";
}

static char *tpl_dir(void) { return zg_fmt("%s/templates", root()); }

/* Renders `text` as template `name` in z; NULL and *err on failure. */
static char *render_in(ZgLua *z, const char *name, const char *text, char **err)
{
    ZgTpl t;
    char *out = NULL;
    size_t len;
    *err = NULL;
    if (!zg_tpl_compile(name, text, strlen(text), &t, err)) return NULL;
    if (!zg_lua_render(z, &t, &out, &len, err)) out = NULL;
    else if (strlen(out) != len) { free(out); out = zg_xstrdup("(NUL in output)"); }
    zg_tpl_free(&t);
    return out;
}

/* Renders in a fresh state without plan or modules; returns output or "ERR:<message>". */
static char *render(const char *text)
{
    ZgLua *z = zg_lua_new();
    char *err;
    char *out = render_in(z, "templates/t/x.tpl", text, &err);
    zg_lua_free(z);
    if (!out) {
        out = zg_fmt("ERR:%s", err ? err : "?");
        free(err);
    }
    return out;
}

#define RENDERS(text, want)                                                   \
    do {                                                                      \
        char *got_ = render(text);                                            \
        ZT_CHECKM(strcmp(got_, want) == 0, "render(%s)\n    got  [%s]\n    want [%s]", \
                  #text, got_, want);                                         \
        free(got_);                                                           \
    } while (0)

/* The render fails and its message starts with `prefix` and contains `frag`. */
#define FAILS(text, prefix, frag)                                             \
    do {                                                                      \
        char *got_ = render(text);                                            \
        ZT_CHECKM(strncmp(got_, "ERR:" prefix, strlen("ERR:" prefix)) == 0 && strstr(got_, frag), \
                  "render(%s) = [%s], want error %s...%s", #text, got_, prefix, frag); \
        free(got_);                                                           \
    } while (0)

static void t_plain_text(void)
{
    RENDERS("", "");
    RENDERS("hello\nworld\n", "hello\nworld\n");
    RENDERS("no newline at end", "no newline at end");
    RENDERS("\n\n", "\n\n");
    RENDERS("quotes \" and \\ and \t tab and $ and { } and @ @@x\n",
            "quotes \" and \\ and \t tab and $ and { } and @ @@x\n");
    RENDERS("#include <x.h>\n%.o: %.c\n", "#include <x.h>\n%.o: %.c\n");
    RENDERS("bytes \x01\x7f\xc3\xa9\n", "bytes \x01\x7f\xc3\xa9\n");
}

static void t_expressions(void)
{
    RENDERS("x=${1 + 2}\n", "x=3\n");
    RENDERS("${'a'}${\"b\"}${'c' .. 'd'}\n", "abcd\n");
    RENDERS("${2.5} ${1e-5} ${3.0} ${0.1} ${-7}\n", "2.5 1e-05 3.0 0.1 -7\n");
    RENDERS("${9007199254740993}\n", "9007199254740993\n");       /* int64 stays exact */
    RENDERS("${({a = 7}).a} ${\"}\"} ${'{'}\n", "7 } {\n");        /* braces inside */
    RENDERS("${[[x}y]]}\n", "x}y\n");
    RENDERS("a${ 1 }b${2}c", "a1b2c");
    RENDERS("${\"${\"}literal\n", "${literal\n");
    RENDERS("${string.format('%05d', 42)} ${math.max(3, 9)} ${#'four'}\n", "00042 9 4\n");
}

static void t_statements_and_loops(void)
{
    RENDERS("@@ for i = 1, 3 do\nrow ${i}\n@@ end\n", "row 1\nrow 2\nrow 3\n");
    RENDERS("  @@ local x = 5\n\t@@ local y = x * 2\n${x + y}\n", "15\n");
    RENDERS("@@\nonly\n@@ -- a comment\n", "only\n");
    RENDERS("@@ for i = 1,\n@@ 2 do\n${i}\n@@ end\n", "1\n2\n");
    RENDERS("@@ local t = {'a', 'b'}\n@@ for i, v in ipairs(t) do\n${i}:${v}${i < #t and ',' or ''}\n"
            "@@ end\n", "1:a,\n2:b\n");
    RENDERS("@@ if 1 > 2 then\nno\n@@ else\nyes\n@@ end\n", "yes\n");
    /* pairs walks keys in sorted order: numbers, then strings */
    RENDERS("@@ for k, v in pairs({b = 2, a = 1, c = 3, [2] = 'x', [1] = 'y'}) do\n${k}=${v}\n@@ end\n",
            "1=y\n2=x\na=1\nb=2\nc=3\n");
}

/* The line map is the identity: Lua line k holds the code of template line k. */
static void t_line_map(void)
{
    const char *text = "text ${1}\n@@ for i = 1, 2 do\n\n  @@ local q = '${'\n${'a\\nb'} x\n@@ end";
    ZgTpl t;
    char *err = NULL;
    ZT_CHECK(zg_tpl_compile("templates/t/m.tpl", text, strlen(text), &t, &err));
    if (err) return;
    ZT_EQ_INT(t.n_lines, 6);
    int nl = 0;
    for (size_t i = 0; i < t.lua_len; i++) nl += t.lua[i] == '\n';
    ZT_EQ_INT(nl, 6);
    const char *want[] = {"_o(\"text \", _s", "for i = 1, 2 do", "_o(\"\\n\")", "local q = '${'",
                          "_s(('a\\nb')", "end"};
    const char *line = t.lua;
    for (int k = 0; k < 6; k++) {
        const char *e = strchr(line, '\n');
        char *l = zg_fmt("%.*s", (int)(e - line), line);
        ZT_CHECKM(strstr(l, want[k]) != NULL, "Lua line %d is [%s], want it to hold [%s]", k + 1, l, want[k]);
        free(l);
        line = e + 1;
    }
    zg_tpl_free(&t);
}

static void t_compile_errors_cite_line(void)
{
    FAILS("a\nb ${1 +\n", "templates/t/x.tpl:2: ", "unclosed ${");
    FAILS("ok\n\n${}\n", "templates/t/x.tpl:3: ", "empty ${}");
    FAILS("${'}\n", "templates/t/x.tpl:1: ", "unclosed");
}

static void t_syntax_errors_cite_line(void)
{
    FAILS("a\nb\n@@ local x = = 1\nc\n", "templates/t/x.tpl:3: ", "unexpected symbol");
    FAILS("1\n2\n3\n4 ${1 +* 2}\n", "templates/t/x.tpl:4: ", "unexpected symbol");
    FAILS("@@ for i = 1, 3\nx\n", "templates/t/x.tpl:2: ", "'do' expected before this text line");
    FAILS("x\n@@ for i = 1, 3 do\ny\n", "templates/t/x.tpl:", "(to close 'for' at line 2)");
}

static void t_runtime_errors_cite_line(void)
{
    FAILS("a\n\n${nothing.x}\n", "templates/t/x.tpl:3: ", "undefined name 'nothing'");
    FAILS("@@ local t = {}\n\n\nv ${t.x}\n", "templates/t/x.tpl:4: ", "${t.x} is nil");
    FAILS("\n${1 < 2}\n", "templates/t/x.tpl:2: ", "is a boolean");
    FAILS("${{}}\n", "templates/t/x.tpl:1: ", "is a table");
    FAILS("${1/0}\n", "templates/t/x.tpl:1: ", "not a finite number");
    FAILS("x\ny\n@@ error('boom')\n", "templates/t/x.tpl:3: ", "boom");
    FAILS("@@ local t = nil\n@@ for i = 1, 2 do\n${i}\n@@ local n = #t\n@@ end\n",
          "templates/t/x.tpl:4: ", "attempt to get length");
}

/* A helper module's error is at the module's line; the traceback names the template's. */
static void t_module_errors(void)
{
    ZgLua *z = zg_lua_new();
    char *err = NULL;
    const char *lib = "local M = {}\nfunction M.f(x)\n  return x.y\nend\nreturn M\n";
    ZT_CHECK(zg_lua_load_lib(z, "mylib", lib, strlen(lib), &err));
    free(err);
    char *out = render_in(z, "templates/t/uses.tpl", "one\n${mylib.f(nil)}\n", &err);
    ZT_CHECK(out == NULL);
    ZT_CHECKM(err && strncmp(err, "templates/lib/mylib.lua:3: ", 27) == 0, "err = %s", err);
    ZT_CHECKM(err && strstr(err, "templates/t/uses.tpl:2:"), "traceback lacks the template line: %s", err);
    free(err);
    /* a module with a syntax error, one that returns no table, a name already taken */
    ZT_CHECK(!zg_lua_load_lib(z, "broken", "local = 1", 9, &err));
    ZT_CHECKM(err && strncmp(err, "templates/lib/broken.lua:1:", 27) == 0, "err = %s", err);
    free(err);
    ZT_CHECK(!zg_lua_load_lib(z, "notable", "return 1", 8, &err));
    ZT_CHECKM(err && strstr(err, "not a table"), "err = %s", err);
    free(err);
    ZT_CHECK(!zg_lua_load_lib(z, "mylib", "return {}", 9, &err));
    ZT_CHECKM(err && strstr(err, "already taken"), "err = %s", err);
    free(err);
    ZT_CHECK(!zg_lua_load_lib(z, "string", "return {}", 9, &err));
    free(err);
    zg_lua_free(z);
}

static void t_env_isolation(void)
{
    /* no globals: reading an unknown name or assigning one is an error */
    FAILS("@@ x = 1\n", "templates/t/x.tpl:1: ", "assignment to global 'x'");
    const char *denied[] = {"io", "os", "require", "load", "loadfile", "dofile", "debug", "print",
                            "_G", "package", "collectgarbage", "next", "getmetatable", "coroutine"};
    for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
        char *t = zg_fmt("${type(%s)}\n", denied[i]);
        char *got = render(t);
        ZT_CHECKM(strstr(got, "undefined name") != NULL, "%s is reachable: %s", denied[i], got);
        free(got);
        free(t);
    }
    RENDERS("${type(string.dump)} ${type(math.random)} ${type(_ENV)}\n", "nil nil table\n");
    /* two templates in one state: locals and the environment do not carry over */
    ZgLua *z = zg_lua_new();
    char *err;
    char *a = render_in(z, "templates/t/a.tpl", "@@ local y = 1\n@@ _ENV.z = 2\n${y + z}\n", &err);
    ZT_CHECKM(a == NULL && err && strstr(err, "assignment to global 'z'"), "a = %s, err = %s", a, err);
    free(a);
    free(err);
    char *b = render_in(z, "templates/t/b.tpl", "${y}\n", &err);
    ZT_CHECKM(b == NULL && err && strstr(err, "undefined name 'y'"), "b = %s", b);
    free(b);
    free(err);
    /* rawset into a template's own environment stays in that template */
    char *c = render_in(z, "templates/t/c.tpl", "@@ local t = {}\n${rawequal(_ENV, _ENV) and 'ok'}\n", &err);
    ZT_CHECKM(c && strcmp(c, "ok\n") == 0, "c = %s %s", c, err ? err : "");
    free(c);
    zg_lua_free(z);
}

/* The real helper modules of templates/lib. */
static void t_cfmt_rows_shape(void)
{
    ZgLua *z = zg_lua_new();
    char *err = NULL, *dir = tpl_dir();
    ZT_CHECKM(zg_lua_load_libs(z, dir, &err), "%s", err ? err : "");
    struct { const char *tpl, *want; } cases[] = {
        {"${cfmt.str('a\"b\\\\c\\n\\1\\128')}", "\"a\\\"b\\\\c\\n\\001\\200\""},
        {"${cfmt.str('what?\?!')}", "\"what\\?\\?!\""},
        {"${cfmt.int(-3)} ${cfmt.i64(8589934592)} ${cfmt.u64(1234)} ${cfmt.u64(-1)}",
         "-3 INT64_C(8589934592) UINT64_C(1234) UINT64_C(0xffffffffffffffff)"},
        {"${cfmt.double(0.1)} ${cfmt.double(1e-5)} ${cfmt.double(3)} ${cfmt.double(0.9990000000000001)}",
         "0.1 1e-05 3.0 0.9990000000000001"},
        {"${cfmt.bool(true)}${cfmt.bool(false)} ${cfmt.ident('h.0.attn.c_attn.weight')} ${cfmt.ident('3x')}",
         "10 H_0_ATTN_C_ATTN_WEIGHT _3X"},
        {"${cfmt.comment('a */ b /* c\\nd')}", "a * / b / * c d"},
        {"${shape.bytes(812)}|${shape.bytes(1536)}|${shape.bytes(3 * 1024 * 1024 * 1024)}",
         "812 B|1.50 KiB|3.00 GiB"},
        {"${shape.ceil_div(10, 4)} ${shape.round_up(10, 4)} ${shape.range(4, 6)}", "3 12 [4, 10)"},
        {"@@ local R = rows.new()\n@@ R:add({'\"a\"', 1, 100}, 'first')\n@@ R:add({'\"bbb\"', 22, 3}, 'second')\n"
         "${R:render('  ')}", "  {\"a\",   1,  100},  /* first */\n  {\"bbb\", 22, 3},    /* second */"},
        {"@@ local R = rows.new()\n${R:size()} ${R:render('  ', 'none at stage 1')}",
         "1   {0},  /* placeholder: none at stage 1 */"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = render_in(z, "templates/t/lib.tpl", cases[i].tpl, &err);
        ZT_CHECKM(got && strcmp(got, cases[i].want) == 0, "%s\n    got  [%s]\n    want [%s]", cases[i].tpl,
                  got ? got : err, cases[i].want);
        free(got);
        free(err);
        err = NULL;
    }
    /* argument checks point at the template line */
    char *got = render_in(z, "templates/t/lib.tpl", "\n${cfmt.int(1.5)}\n", &err);
    ZT_CHECKM(!got && err && strncmp(err, "templates/t/lib.tpl:2: cfmt.int", 31) == 0, "err = %s", err);
    free(err);
    got = render_in(z, "templates/t/lib.tpl", "${cfmt.make_path('/a b')}\n", &err);
    ZT_CHECKM(!got && err && strstr(err, "cannot be written into a Makefile"), "err = %s", err);
    free(err);
    zg_lua_free(z);
    free(dir);
}

/* The plan handed to Lua: field names as in ZgPlan, 0-based index fields, int64 as integers. */
static void t_plan_tables(void)
{
    static ZgModel m;
    static ZgZero zc;
    static ZgPlan p;
    char *spec = zg_fmt("%s/specs/tiny.yaml", root());
    if (access(spec, R_OK) != 0) { free(spec); ZT_SKIP("no specs/tiny.yaml"); }
    zg_diag_quiet(true);
    const ZgNode *ds = zg_spec_load(spec, &m);
    if (!zg_error_count()) zg_zero_load(ds, &m, &zc);
    if (!zg_error_count()) zg_check(&m, &zc);
    bool built = !zg_error_count() && zg_model_build(&m, &p) && zg_plan_build(&m, &zc, &p);
    zg_diag_quiet(false);
    if (!built) { free(spec); ZT_SKIP("specs/tiny.yaml does not plan: %s", zg_diag_last()); }
    ZgLua *z = zg_lua_new();
    zg_lua_set_plan(z, &p);
    char *err;
    int t = p.n_tensors - 1, k = p.n_buckets - 1;
    char *want = zg_fmt("%s %lld %d %s %d %s integer %lld %s %s %d %s %lld\n", m.name, (long long)m.d_model,
                        p.n_tensors, p.tensors[t].name, t, p.modules[p.tensors[t].module].name,
                        (long long)p.n_params, zg_lua_tier_name((int)p.mem.regions[0].tier),
                        zg_lua_op_name((int)p.sched.micro[0].kind), p.buckets[k].first_tensor,
                        p.zero->stage == 3 ? "true" : "false", (long long)p.mem.tier_bytes[ZG_TIER_DEVICE]);
    char *got = render_in(z, "templates/t/plan.tpl",
                          "@@ local t = plan.tensors[#plan.tensors]\n"
                          "${plan.model.name} ${plan.model.d_model} ${#plan.tensors} ${t.name} ${t.index} "
                          "${plan.modules[t.module + 1].name} ${math.type(plan.n_params)} ${plan.n_params} "
                          "${plan.mem.regions[1].tier} ${plan.sched.micro[1].kind} "
                          "${plan.buckets[#plan.buckets].first_tensor} ${tostring(plan.zero.stage == 3)} "
                          "${plan.mem.tier_bytes.device}\n", &err);
    ZT_CHECKM(got && strcmp(got, want) == 0, "\n    got  [%s]\n    want [%s]", got ? got : err, want);
    free(got);
    free(want);
    zg_lua_free(z);
    free(spec);
}

/* The Lua names cover every enumerator, and zr_plan.h mirrors zg_plan.h's enums. */
static void t_enum_mirrors(void)
{
    ZT_EQ_INT(ZR_NOPS, ZG_NOPS);
    ZT_EQ_INT(ZR_NMEM, ZG_NMEM);
    ZT_EQ_INT(ZR_NTIERS, ZG_NTIERS);
    ZT_EQ_INT(ZR_OP_GRAD_COPY, ZG_OP_GRAD_COPY);
    ZT_EQ_INT(ZR_OP_PARAM_SWAP_IN, ZG_OP_PARAM_SWAP_IN);
    ZT_EQ_INT(ZR_MEM_STAGING, ZG_MEM_STAGING);
    ZT_EQ_INT(ZR_DT_FP16, ZG_DTYPE_FP16);
    ZT_EQ_INT(ZR_MOD_HEAD, ZG_MOD_HEAD);
    for (int k = 0; k < ZG_NOPS; k++) ZT_CHECKM(zg_lua_op_name(k) != NULL, "op %d has no Lua name", k);
    for (int c = 0; c < ZG_NMEM; c++) ZT_CHECKM(zg_lua_memcat_name(c) != NULL, "memcat %d has no name", c);
    for (int t = 0; t < ZG_NTIERS; t++) ZT_CHECKM(zg_lua_tier_name(t) != NULL, "tier %d has no name", t);
    ZT_EQ_STR(zg_lua_op_name(ZG_OP_WAIT_GATHER), "wait_gather");
    ZT_CHECK(zg_lua_op_name(ZG_NOPS) == NULL);
}

static void t_banner(void)
{
    char *b = zg_emit_banner("zg_tables.c", "specs/tiny.yaml");
    ZT_EQ_STR(b, "/* generated by zgen from specs/tiny.yaml; do not edit */\n");
    free(b);
    b = zg_emit_banner("Makefile", "s.yaml");
    ZT_EQ_STR(b, "# generated by zgen from s.yaml; do not edit\n");
    free(b);
    b = zg_emit_banner("run.sh", "s.yaml");
    ZT_EQ_STR(b, "# generated by zgen from s.yaml; do not edit\n");
    free(b);
    b = zg_emit_banner("README.md", "s.yaml");
    ZT_EQ_STR(b, "<!-- generated by zgen from s.yaml; do not edit -->\n");
    free(b);
    ZT_CHECK(zg_emit_banner("config.json", "s.yaml") == NULL);
    b = zg_emit_banner("x.h", "evil*/name\n.yaml");         /* cannot end the comment early */
    ZT_EQ_STR(b, "/* generated by zgen from evil* /name?.yaml; do not edit */\n");
    free(b);
}

static void t_emit_file(void)
{
    char dir[] = "/tmp/zg_t_tpl_XXXXXX";
    ZT_CHECK(mkdtemp(dir) != NULL);
    char *sub = zg_fmt("%s/a/b", dir);
    ZT_CHECK(zg_emit_mkdirs(sub));
    ZT_CHECK(zg_emit_file(sub, "x.sh", "s.yaml", "#!/bin/sh\necho hi\n", 19));
    char *path = zg_fmt("%s/x.sh", sub);
    size_t len;
    char *got = zg_emit_read_file(path, &len);
    ZT_EQ_STR(got ? got : "", "#!/bin/sh\n# generated by zgen from s.yaml; do not edit\necho hi\n");
    free(got);
    ZT_CHECK(zg_emit_file(sub, "x.sh", "s.yaml", "", 0));            /* replaced, not appended */
    got = zg_emit_read_file(path, &len);
    ZT_EQ_STR(got ? got : "", "# generated by zgen from s.yaml; do not edit\n");
    free(got);
    struct stat st;
    ZT_CHECK(stat(path, &st) == 0 && (st.st_mode & 0444) == 0444);   /* not mkstemp's 0600 */
    char *cmd = zg_fmt("test $(ls -A %s | wc -l) -eq 1", sub);      /* no temp file left */
    ZT_CHECK(system(cmd) == 0);
    free(cmd);
    cmd = zg_fmt("rm -rf %s", dir);
    ZT_CHECK(system(cmd) == 0);
    free(cmd);
    free(path);
    free(sub);
}

/* zg_render_report: the message at its template line, and for a module's error the template line
** that called it. */
static void t_report(void)
{
    zg_diag_reset();
    zg_diag_quiet(true);
    zg_render_report("templates/trainer/zg_model.h.tpl:12: undefined name 'x'\nstack traceback:\n"
                     "\t[C]: in ?\n\ttemplates/trainer/zg_model.h.tpl:12: in main chunk");
    ZT_EQ_INT(zg_error_count(), 1);
    ZT_EQ_INT(zg_diag_count_matching("undefined name 'x'", 12), 1);
    zg_render_report("templates/lib/rows.lua:40: boom\nstack traceback:\n\t[C]: in function 'error'\n"
                     "\ttemplates/lib/rows.lua:40: in method 'add'\n"
                     "\ttemplates/trainer/zg_tables.c.tpl:17: in main chunk\n\t[C]: in ?");
    ZT_EQ_INT(zg_diag_count_matching("boom", 40), 1);
    ZT_CHECKM(zg_diag_count_matching("called from here (in main chunk)", 40) == 1, "%s", zg_diag_log());
    ZT_EQ_INT(zg_diag_count_matching("in method 'add'", 0), 0);    /* frames inside lib/ are noise */
    zg_diag_quiet(false);
    zg_diag_reset();
}

int main(void)
{
    ZT_RUN(t_plain_text);
    ZT_RUN(t_expressions);
    ZT_RUN(t_statements_and_loops);
    ZT_RUN(t_line_map);
    ZT_RUN(t_compile_errors_cite_line);
    ZT_RUN(t_syntax_errors_cite_line);
    ZT_RUN(t_runtime_errors_cite_line);
    ZT_RUN(t_module_errors);
    ZT_RUN(t_env_isolation);
    ZT_RUN(t_cfmt_rows_shape);
    ZT_RUN(t_plan_tables);
    ZT_RUN(t_enum_mirrors);
    ZT_RUN(t_banner);
    ZT_RUN(t_emit_file);
    ZT_RUN(t_report);
    return zt_end();
}
