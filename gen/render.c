/*
** render.c — zg_render: every file of templates/trainer/ and the arch's files of templates/host/
** (ZgArch.host_files: its kernels and model adapter) into out/<name>/, and
** the CUDA backend's sources into out/<name>/cuda/ (templates/cuda/zr_simt.h, templates/cuda/kernels/
** as cuda/kernels/, the plan's shapes as cuda/kernels/zk_shapes.h, and cuda/zg_kernels_bin.{c,h}
** with every kernel compiled by NVRTC for each architecture: nvrtc.c; templates/cuda_trainer/ as
** cuda/trainer/, the CUDA trainer that `make cuda` / `make cuda-emu` build).
**
** `X.tpl` is rendered to `X` (tpl.c + lua.c), any other file is copied; emit.c adds the banner and
** writes. Each template renders in its own fresh Lua state (plan, gen, helper modules), so no
** template can change what another sees. Everything is rendered in memory first and written only
** when every template succeeded: a template error never leaves a half-updated trainer behind.
** All errors are reported (each at its template file:line) before returning false.
*/
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zg_cuda_dec.h"
#include "zg_nvrtc.h"
#include "zg_render.h"

/* One output file. */
typedef struct Item {
    char *src;                  /* absolute path of the template / file */
    char *rel;                  /* "templates/trainer/zg_model.h.tpl" */
    char *out;                  /* "zg_model.h" */
    bool is_tpl;
    char *data; size_t len;     /* rendered or copied content */
} Item;

static const char *const src_dirs[] = {"trainer", "host"};

/* The templates folder of the render in progress, so reports can quote template lines. */
static const char *report_dir;

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *zg_templates_dir(void)
{
    static char *found;
    static bool searched;
    if (searched) return found;
    searched = true;
    char buf[PATH_MAX];
    const char *env = getenv("ZGEN_TEMPLATES");
    if (env && *env) {
        if (realpath(env, buf) && is_dir(buf)) found = zg_xstrdup(buf);
        return found;
    }
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = 0;
    /* bin/zgen -> bin/../templates; test binaries sit deeper (bin/tests/gen/t_x). */
    for (int up = 0; up < 5; up++) {
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf) break;
        *slash = 0;
        char *cand = zg_fmt("%s/templates/trainer", buf);
        bool ok = is_dir(cand);
        free(cand);
        if (ok) {
            found = zg_fmt("%s/templates", buf);
            break;
        }
    }
    return found;
}

/* Parses "file:line: rest" where file starts with "templates/"; false if it does not. */
static bool parse_pos(const char *s, ZgLoc *loc, const char **rest)
{
    if (strncmp(s, "templates/", 10) != 0) return false;
    for (const char *c = strchr(s, ':'); c; c = strchr(c + 1, ':')) {
        char *end;
        long line = strtol(c + 1, &end, 10);
        if (end > c + 1 && *end == ':') {
            char *file = zg_xmalloc((size_t)(c - s) + 1);
            memcpy(file, s, (size_t)(c - s));
            file[c - s] = 0;
            loc->file = file;
            loc->line = (int)line;
            loc->col = 0;
            if (report_dir) {           /* diag quotes the line (it keeps the text) */
                char *path = zg_fmt("%s/%s", report_dir, file + 10);
                char *text = zg_emit_read_file(path, NULL);
                if (text) zg_diag_add_source(file, text);
                free(path);
            }
            *rest = end[1] == ' ' ? end + 2 : end + 1;
            return true;
        }
    }
    return false;
}

void zg_render_report(const char *err)
{
    char *text = zg_xstrdup(err);
    char *save = NULL;
    char *first = strtok_r(text, "\n", &save);
    ZgLoc loc = {0};
    const char *msg = first ? first : "unknown template error";
    if (first) parse_pos(first, &loc, &msg);
    zg_error(loc, "%s", msg);
    /* An error inside a helper module: the template lines that called it (traceback frames
    ** outside templates/lib/). An error located in a template needs no more. */
    bool in_lib = loc.file && strncmp(loc.file, "templates/lib/", 14) == 0;
    for (char *l; in_lib && (l = strtok_r(NULL, "\n", &save)) != NULL;) {
        while (*l == '\t' || *l == ' ') l++;
        ZgLoc at;
        const char *what;
        if (parse_pos(l, &at, &what) && strncmp(at.file, "templates/lib/", 14) != 0)
            zg_note(at, "called from here (%s)", what);
    }
    free(text);
}

static int item_cmp(const void *a, const void *b)
{
    return strcmp(((const Item *)a)->out, ((const Item *)b)->out);
}

/* Lists the files to emit, sorted by output name; false after reporting. */
static bool list_items(const ZgArch *arch, const char *tpl_dir, Item **items, int *n_items)
{
    Item *it = NULL;
    int n = 0;
    bool ok = true;
    for (size_t d = 0; d < sizeof src_dirs / sizeof *src_dirs; d++) {
        char *dir = zg_fmt("%s/%s", tpl_dir, src_dirs[d]);
        /* host/: the files the arch table names (its kernels and model adapter), emitted flat */
        if (d == 1 && arch && arch->host_files && is_dir(dir)) {
            for (const char *const *f = arch->host_files; *f; f++) {
                const char *base = strrchr(*f, '/') ? strrchr(*f, '/') + 1 : *f;
                it = zg_xrealloc(it, (size_t)(n + 1) * sizeof *it);
                Item *x = &it[n++];
                memset(x, 0, sizeof *x);
                x->src = zg_fmt("%s/%s", dir, *f);
                x->rel = zg_fmt("templates/%s/%s", src_dirs[d], *f);
                x->out = zg_xstrdup(base);
            }
            free(dir);
            continue;
        }
        DIR *dp = opendir(dir);
        if (!dp) {
            if (errno != ENOENT) {
                zg_error((ZgLoc){0}, "cannot read %s: %s", dir, strerror(errno));
                ok = false;
            }
            free(dir);
            continue;
        }
        for (struct dirent *e; (e = readdir(dp)) != NULL;) {
            const char *f = e->d_name;
            size_t len = strlen(f);
            if (f[0] == '.' || f[len - 1] == '~') continue;
            char *src = zg_fmt("%s/%s", dir, f);
            struct stat st;
            if (stat(src, &st) != 0 || !S_ISREG(st.st_mode)) { free(src); continue; }
            it = zg_xrealloc(it, (size_t)(n + 1) * sizeof *it);
            Item *x = &it[n++];
            memset(x, 0, sizeof *x);
            x->src = src;
            x->rel = zg_fmt("templates/%s/%s", src_dirs[d], f);
            x->is_tpl = len > 4 && strcmp(f + len - 4, ".tpl") == 0;
            x->out = x->is_tpl ? zg_fmt("%.*s", (int)(len - 4), f) : zg_xstrdup(f);
        }
        closedir(dp);
        free(dir);
    }
    if (n) qsort(it, (size_t)n, sizeof *it, item_cmp);
    for (int i = 1; i < n; i++)
        if (strcmp(it[i].out, it[i - 1].out) == 0) {
            zg_error((ZgLoc){zg_xstrdup(it[i].rel), 1, 0}, "emits %s, as %s does too", it[i].out, it[i - 1].rel);
            ok = false;
        }
    *items = it;
    *n_items = n;
    return ok;
}

/* Renders one template into x->data; false after reporting. */
static bool render_one(const ZgPlan *p, const char *tpl_dir, ZgGenInfo *gi, Item *x, const char *text,
                       size_t len)
{
    ZgTpl t;
    char *err = NULL;
    if (!zg_tpl_compile(x->rel, text, len, &t, &err)) {
        zg_render_report(err);
        free(err);
        return false;
    }
    ZgLua *z = zg_lua_new();
    gi->template_path = x->rel;
    gi->output = x->out;
    zg_lua_set_plan(z, p);
    zg_lua_set_gen(z, gi);
    bool ok = zg_lua_load_libs(z, tpl_dir, &err) && zg_lua_render(z, &t, &x->data, &x->len, &err);
    if (!ok) {
        zg_render_report(err);
        free(err);
    }
    zg_lua_free(z);
    zg_tpl_free(&t);
    return ok;
}

/* ------------------------------------------------------------------ the CUDA backend */
/* Output files under cuda/, rendered in memory like the others. */
typedef struct CudaOut {
    char **names;               /* "cuda/kernels/attention.cu" */
    char **data; size_t *len;
    int n;
} CudaOut;

static void cuda_add(CudaOut *co, char *name, char *data, size_t len)
{
    co->names = zg_xrealloc(co->names, (size_t)(co->n + 1) * sizeof *co->names);
    co->data = zg_xrealloc(co->data, (size_t)(co->n + 1) * sizeof *co->data);
    co->len = zg_xrealloc(co->len, (size_t)(co->n + 1) * sizeof *co->len);
    co->names[co->n] = name;
    co->data[co->n] = data;
    co->len[co->n++] = len;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted plain-file names of dir (none if it does not exist). */
static char **list_dir(const char *dir, int *n)
{
    char **names = NULL;
    *n = 0;
    DIR *dp = opendir(dir);
    if (!dp) return NULL;
    for (struct dirent *e; (e = readdir(dp)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || e->d_name[len - 1] == '~') continue;
        char *path = zg_fmt("%s/%s", dir, e->d_name);
        struct stat st;
        bool reg = stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!reg) continue;
        names = zg_xrealloc(names, (size_t)(*n + 1) * sizeof *names);
        names[(*n)++] = zg_xstrdup(e->d_name);
    }
    closedir(dp);
    if (*n) qsort(names, (size_t)*n, sizeof *names, str_cmp);
    return names;
}

static bool ends_in(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* templates/cuda_trainer/ (the CUDA trainer's orchestration, docs/CUDA_TRAINER.md) verbatim into
** cuda/trainer/: outside gen.sources, so only `make cuda` / `make cuda-emu` compile it. Its top-level
** files, and the arch's model adapter from its subfolder (ZgArch.cuda_adapter) under its base name. */
static bool cuda_trainer_add(const ZgPlan *p, const char *tpl_dir, CudaOut *co)
{
    const char *tpl, *name = zg_cuda_adapter_file(p, &tpl);
    if (tpl) {
        char *path = zg_fmt("%s/cuda_trainer/%s", tpl_dir, tpl);
        size_t len;
        char *text = zg_emit_read_file(path, &len);
        bool got = text != NULL;
        if (got) cuda_add(co, zg_fmt("cuda/trainer/%s", name), text, len);
        else zg_error((ZgLoc){0}, "cannot read %s: %s", path, strerror(errno));
        free(path);
        if (!got) return false;
    }
    char *dir = zg_fmt("%s/cuda_trainer", tpl_dir);
    int n;
    char **files = list_dir(dir, &n);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *path = zg_fmt("%s/%s", dir, files[i]);
        char *text = zg_emit_read_file(path, &len);
        if (text) cuda_add(co, zg_fmt("cuda/trainer/%s", files[i]), text, len);
        else { zg_error((ZgLoc){0}, "cannot read %s: %s", path, strerror(errno)); ok = false; }
        free(path);
        free(files[i]);
    }
    free(files);
    free(dir);
    return ok;
}

/* Reads templates/cuda, compiles the kernels; false after reporting (NVRTC errors included). */
static bool cuda_render(const ZgPlan *p, const char *tpl_dir, CudaOut *co)
{
    char *cdir = zg_fmt("%s/cuda", tpl_dir);
    bool have = is_dir(cdir);
    free(cdir);
    if (!have) return true;             /* a templates folder without a CUDA backend */
    char *simt = zg_fmt("%s/cuda/zr_simt.h", tpl_dir), *kdir = zg_fmt("%s/cuda/kernels", tpl_dir);
    bool ok = true;
    size_t len;
    char *text = zg_emit_read_file(simt, &len);
    if (text) cuda_add(co, zg_xstrdup("cuda/zr_simt.h"), text, len);
    bool ok_tr = cuda_trainer_add(p, tpl_dir, co);
    int n;
    char **files = list_dir(kdir, &n);
    ZgCudaSrc *kern = zg_xcalloc((size_t)n + 1, sizeof *kern), *hdr = zg_xcalloc((size_t)n + 2, sizeof *hdr);
    int nk = 0, nh = 0;
    for (int i = 0; i < n; i++) {
        char *path = zg_fmt("%s/%s", kdir, files[i]);
        text = zg_emit_read_file(path, &len);
        free(path);
        if (!text) {
            zg_error((ZgLoc){0}, "cannot read %s/%s: %s", kdir, files[i], strerror(errno));
            ok = false;
            continue;
        }
        cuda_add(co, zg_fmt("cuda/kernels/%s", files[i]), text, len);
        ZgCudaSrc s = {files[i], zg_fmt("templates/cuda/kernels/%s", files[i]), text};
        if (ends_in(files[i], ".cu")) {
            s.name = zg_fmt("%.*s", (int)(strlen(files[i]) - 3), files[i]);
            kern[nk++] = s;
        } else {
            hdr[nh++] = s;
        }
    }
    char *shapes = zg_cuda_shapes_h(p);
    hdr[nh++] = (ZgCudaSrc){"zk_shapes.h", "cuda/kernels/zk_shapes.h (generated)", shapes};
    cuda_add(co, zg_xstrdup("cuda/kernels/zk_shapes.h"), shapes, strlen(shapes));

    ZgKernelBin *bins = zg_xcalloc((size_t)nk * (size_t)zg_cuda_n_default_archs + 1, sizeof *bins);
    int nb = 0;
    const char *why = NULL;
    if (ok && nk && zg_nvrtc_load(&why)) {
        /* after a kernel's first failure its other archs are skipped: the same errors, once */
        for (int i = 0; i < nk; i++)
            for (int a = 0; a < zg_cuda_n_default_archs; a++) {
                if (zg_nvrtc_compile(&kern[i], hdr, nh, zg_cuda_default_archs[a], &bins[nb])) nb++;
                else { ok = false; break; }
            }
    } else if (ok && nk) {
        zg_note((ZgLoc){0}, "CUDA kernels not precompiled: %s; cuda/ has their sources only", why);
    }
    if (ok) {
        size_t blen;
        char *bin = zg_cuda_bin_c(bins, nb, zg_nvrtc_version(), &blen);
        cuda_add(co, zg_xstrdup("cuda/zg_kernels_bin.c"), bin, blen);
        char *h = zg_cuda_bin_h();
        cuda_add(co, zg_xstrdup("cuda/zg_kernels_bin.h"), h, strlen(h));
    }
    ok = ok && ok_tr;
    for (int i = 0; i < nb; i++) { free(bins[i].cubin); free(bins[i].ptx); }
    free(bins);
    free(kern);     /* names and texts stay: zgen is short-lived, and errors may quote them */
    free(hdr);
    free(files);
    free(simt);
    free(kdir);
    return ok;
}

/* Writes co's files under outdir; false after reporting. */
static bool cuda_write(const char *outdir, const char *spec, const CudaOut *co)
{
    bool ok = true;
    for (int i = 0; i < co->n && ok; i++) {
        const char *slash = strrchr(co->names[i], '/');
        char *dir = zg_fmt("%s/%.*s", outdir, (int)(slash - co->names[i]), co->names[i]);
        ok = zg_emit_mkdirs(dir) && zg_emit_file(dir, slash + 1, spec, co->data[i], co->len[i]);
        free(dir);
    }
    return ok;
}

bool zg_render_from(const ZgPlan *p, const char *outdir, const char *tpl_dir)
{
    if (!tpl_dir) tpl_dir = zg_templates_dir();
    if (!tpl_dir) {
        zg_error((ZgLoc){0}, "cannot find zgen's templates folder");
        zg_note((ZgLoc){0}, "set ZGEN_TEMPLATES to the repository's templates/ folder");
        return false;
    }
    char *root = zg_xstrdup(tpl_dir);
    char *slash = strrchr(root, '/');
    if (slash && slash != root) *slash = 0;

    report_dir = tpl_dir;
    Item *items;
    int n;
    const ZgArch *arch = zg_arch_find(p->model->arch);
    bool ok = list_items(arch, tpl_dir, &items, &n);
    const char **outs = zg_xcalloc((size_t)n + 1, sizeof *outs);
    for (int i = 0; i < n; i++) outs[i] = items[i].out;
    ZgGenInfo gi = {
        .root = root, .spec = p->model->spec_path, .name = p->model->name,
        .outputs = outs, .n_outputs = n,
    };
    for (int i = 0; i < n; i++) {
        Item *x = &items[i];
        size_t len;
        char *text = zg_emit_read_file(x->src, &len);
        if (!text) {
            zg_error((ZgLoc){0}, "cannot read %s: %s", x->src, strerror(errno));
            ok = false;
            continue;
        }
        if (!x->is_tpl) {
            x->data = text;
            x->len = len;
            continue;
        }
        ok = render_one(p, tpl_dir, &gi, x, text, len) && ok;
        free(text);
    }
    CudaOut co = {0};
    if (ok && !zg_cuda_missing(p)) ok = cuda_render(p, tpl_dir, &co);   /* no cuda/ it cannot build */
    if (ok) ok = zg_emit_mkdirs(outdir);
    for (int i = 0; i < n && ok; i++)
        ok = zg_emit_file(outdir, items[i].out, p->model->spec_path, items[i].data, items[i].len);
    if (ok) ok = cuda_write(outdir, p->model->spec_path, &co);
    for (int i = 0; i < co.n; i++) free(co.names[i]);
    free(co.names); free(co.data); free(co.len);
    for (int i = 0; i < n; i++) {
        free(items[i].src); free(items[i].rel); free(items[i].out); free(items[i].data);
    }
    free(items);
    free(outs);
    report_dir = NULL;
    free(root);
    return ok;
}

bool zg_render(const ZgPlan *p, const char *outdir)
{
    return zg_render_from(p, outdir, NULL);
}
