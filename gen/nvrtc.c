/*
** nvrtc.c — compiles the CUDA kernels with NVRTC at generation time and writes the embedded table.
**
** libnvrtc is opened with dlopen, never linked: zgen must build and run on machines without CUDA,
** where it emits the kernel sources only (render.c says so once). NVRTC compiles each template's
** text as is, named by its template path, so the line numbers in its log are template lines: an
** error is reported at templates/cuda/kernels/<k>.cu:<line> (or the header's template) with the
** kernel's name. A compilation for sm_XX yields both the cubin and the PTX it was made from.
**
** Cache: NVRTC takes about a second per kernel and architecture, and zgen runs in many tests, so
** results are kept under $ZGEN_CACHE (else $XDG_CACHE_HOME/zgen, else ~/.cache/zgen; "off" disables
** it), keyed by a 128-bit hash of everything that determines the output (NVRTC's version, the
** options, the kernel and header texts). NVRTC's output is deterministic (checked: two compilations
** give the same bytes), so the cache changes nothing but time; a cache file that cannot be read or
** written is ignored.
*/
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zg_nvrtc.h"
#include "zg_cuda_dec.h"
#include "zg_render.h"

const int zg_cuda_default_archs[] = {80, 90};
const int zg_cuda_n_default_archs = 2;

/* ------------------------------------------------------------------ the library */
typedef int nvrtcResult;                /* NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nvrtcProgram;
static struct {
    bool tried, ok;
    const char *why;
    char version[32];
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    const char *(*err)(nvrtcResult);
    nvrtcResult (*ver)(int *, int *);
} N;

bool zg_nvrtc_load(const char **why)
{
    if (N.tried) { if (why) *why = N.why; return N.ok; }
    N.tried = true;
    const char *env = getenv("ZGEN_NVRTC");
    if (env && strcmp(env, "off") == 0) {
        N.why = "ZGEN_NVRTC=off";
        if (why) *why = N.why;
        return false;
    }
    /* An explicit $ZGEN_NVRTC is the only library tried. */
    const char *names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
    void *h = NULL;
    if (env && *env) h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof names / sizeof *names && !h && !(env && *env); i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h && !(env && *env) && getenv("CUDA_HOME")) {
        char *p = zg_fmt("%s/lib64/libnvrtc.so", getenv("CUDA_HOME"));
        h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        free(p);
    }
    N.why = "libnvrtc.so was not found (install the CUDA toolkit, or set ZGEN_NVRTC to its path)";
    if (!h) { if (why) *why = N.why; return false; }
#define SYM(field, name) (*(void **)&N.field = dlsym(h, name)) != NULL
    bool all = SYM(create, "nvrtcCreateProgram") && SYM(compile, "nvrtcCompileProgram")
            && SYM(log_size, "nvrtcGetProgramLogSize") && SYM(log, "nvrtcGetProgramLog")
            && SYM(ptx_size, "nvrtcGetPTXSize") && SYM(ptx, "nvrtcGetPTX")
            && SYM(cubin_size, "nvrtcGetCUBINSize") && SYM(cubin, "nvrtcGetCUBIN")
            && SYM(destroy, "nvrtcDestroyProgram") && SYM(err, "nvrtcGetErrorString")
            && SYM(ver, "nvrtcVersion");
#undef SYM
    int major = 0, minor = 0;
    if (!all || N.ver(&major, &minor) != 0) {
        N.why = "libnvrtc.so lacks nvrtcGetCUBIN (NVRTC 11.1 or later is needed)";
        if (why) *why = N.why;
        return false;
    }
    snprintf(N.version, sizeof N.version, "%d.%d", major, minor);
    N.ok = true;
    return true;
}

const char *zg_nvrtc_version(void) { return N.ok ? N.version : NULL; }

/* ------------------------------------------------------------------ the cache */
typedef struct { uint64_t a, b; } Hash;

static void hash_add(Hash *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h->a = (h->a ^ p[i]) * 0x100000001b3ull;                /* FNV-1a */
        h->b = (h->b + p[i] + 1) * 0x9e3779b97f4a7c15ull;       /* a second, unrelated mix */
        h->b ^= h->b >> 29;
    }
    h->a ^= n; h->b += n;                                       /* field boundaries count */
}

static char *cache_dir(void)
{
    const char *z = getenv("ZGEN_CACHE");
    if (z && strcmp(z, "off") == 0) return NULL;
    if (z && *z) return zg_fmt("%s/nvrtc", z);
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && *x) return zg_fmt("%s/zgen/nvrtc", x);
    const char *home = getenv("HOME");
    return home && *home ? zg_fmt("%s/.cache/zgen/nvrtc", home) : NULL;
}

static const char cache_magic[8] = "ZGKC01\n";

static bool cache_get(const char *path, ZgKernelBin *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[8];
    uint64_t n[2];
    bool ok = fread(magic, 8, 1, f) == 1 && memcmp(magic, cache_magic, 8) == 0 && fread(n, sizeof n, 1, f) == 1
           && n[0] < (1ull << 32) && n[1] < (1ull << 32);
    if (ok) {
        out->cubin = zg_xmalloc(n[0] + 1);
        out->ptx = zg_xmalloc(n[1] + 1);
        ok = fread(out->cubin, 1, n[0], f) == n[0] && fread(out->ptx, 1, n[1], f) == n[1] && fgetc(f) == EOF;
        out->cubin_len = n[0];
        out->ptx_len = n[1];
        out->ptx[n[1]] = 0;
        if (!ok) { free(out->cubin); free(out->ptx); out->cubin = NULL; out->ptx = NULL; }
    }
    fclose(f);
    return ok;
}

static void mkdir_p(const char *dir)
{
    char *p = zg_xstrdup(dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0777); *s = '/'; }
    mkdir(p, 0777);
    free(p);
}

static void cache_put(const char *dir, const char *path, const ZgKernelBin *b)
{
    mkdir_p(dir);
    char *tmp = zg_fmt("%s.tmp.%ld", path, (long)getpid());
    zg_emit_tmp_register(tmp);          /* removed if zgen is interrupted while writing it */
    FILE *f = fopen(tmp, "wb");
    if (!f) { zg_emit_tmp_unregister(tmp); free(tmp); return; }
    uint64_t n[2] = {b->cubin_len, b->ptx_len};
    bool ok = fwrite(cache_magic, 8, 1, f) == 1 && fwrite(n, sizeof n, 1, f) == 1
           && fwrite(b->cubin, 1, b->cubin_len, f) == b->cubin_len && fwrite(b->ptx, 1, b->ptx_len, f) == b->ptx_len;
    if (fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
    zg_emit_tmp_unregister(tmp);
    free(tmp);
}

/* ------------------------------------------------------------------ compiling */
/* "file(line): error: message" -> file, line, message; false for any other line. */
static bool parse_log_line(char *l, char **file, int *line, char **msg)
{
    char *open = strchr(l, '(');
    if (!open || open == l) return false;
    char *end;
    long n = strtol(open + 1, &end, 10);
    if (end == open + 1 || strncmp(end, "): ", 3) != 0) return false;
    char *kind = end + 3;
    if (strncmp(kind, "error: ", 7) == 0) *msg = kind + 7;
    else if (strncmp(kind, "catastrophic error: ", 20) == 0) *msg = kind + 20;
    else return false;
    *open = 0;
    *file = l;
    *line = (int)n;
    return true;
}

static void report_log(const ZgCudaSrc *k, const ZgCudaSrc *hdr, int n_hdr, int arch, const char *log)
{
    char *text = zg_xstrdup(log), *save = NULL;
    int reported = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *file, *msg;
        int line;
        if (!parse_log_line(l, &file, &line, &msg)) continue;
        const ZgCudaSrc *src = strcmp(file, k->rel) == 0 ? k : NULL;
        for (int i = 0; i < n_hdr && !src; i++)
            if (strcmp(file, hdr[i].name) == 0 || strcmp(file, hdr[i].rel) == 0) src = &hdr[i];
        ZgLoc at = {src ? src->rel : zg_xstrdup(file), line, 0};
        if (src && src->text) zg_diag_add_source(src->rel, src->text);
        zg_error(at, "CUDA kernel '%s' (sm_%d): %s", k->name, arch, msg);
        reported++;
    }
    if (!reported)
        zg_error((ZgLoc){k->rel, 0, 0}, "CUDA kernel '%s' (sm_%d) failed to compile: %s", k->name, arch, log);
    free(text);
}

bool zg_nvrtc_compile(const ZgCudaSrc *k, const ZgCudaSrc *hdr, int n_hdr, int arch, ZgKernelBin *out)
{
    memset(out, 0, sizeof *out);
    out->kernel = k->name;
    out->arch = arch;
    if (!zg_nvrtc_load(NULL)) return false;
    char *opt_arch = zg_fmt("--gpu-architecture=sm_%d", arch);
    const char *opts[] = {opt_arch, "-std=c++17"};
    int n_opts = (int)(sizeof opts / sizeof *opts);

    Hash h = {0xcbf29ce484222325ull, 0x243f6a8885a308d3ull};
    hash_add(&h, N.version, strlen(N.version));
    for (int i = 0; i < n_opts; i++) hash_add(&h, opts[i], strlen(opts[i]));
    hash_add(&h, k->rel, strlen(k->rel));
    hash_add(&h, k->text, strlen(k->text));
    for (int i = 0; i < n_hdr; i++) {
        hash_add(&h, hdr[i].name, strlen(hdr[i].name));
        hash_add(&h, hdr[i].text, strlen(hdr[i].text));
    }
    char *dir = cache_dir(), *path = NULL;
    if (dir) path = zg_fmt("%s/%016llx%016llx", dir, (unsigned long long)h.a, (unsigned long long)h.b);
    bool ok = path && cache_get(path, out);
    if (ok) goto done;

    const char **htext = zg_xcalloc((size_t)n_hdr + 1, sizeof *htext), **hname = zg_xcalloc((size_t)n_hdr + 1, sizeof *hname);
    for (int i = 0; i < n_hdr; i++) { htext[i] = hdr[i].text; hname[i] = hdr[i].name; }
    nvrtcProgram prog = NULL;
    nvrtcResult r = N.create(&prog, k->text, k->rel, n_hdr, htext, hname);
    free(htext);
    free(hname);
    if (r != 0) {
        zg_error((ZgLoc){k->rel, 0, 0}, "CUDA kernel '%s': NVRTC cannot create the program: %s", k->name, N.err(r));
        goto done;
    }
    r = N.compile(prog, n_opts, opts);
    if (r != 0) {
        size_t n = 0;
        char *log = NULL;
        if (N.log_size(prog, &n) == 0 && n) {
            log = zg_xmalloc(n + 1);
            if (N.log(prog, log) != 0) log[0] = 0;
            log[n] = 0;
        }
        report_log(k, hdr, n_hdr, arch, log && *log ? log : N.err(r));
        free(log);
        N.destroy(&prog);
        goto done;
    }
    size_t nc = 0, np = 0;
    if (N.cubin_size(prog, &nc) != 0 || N.ptx_size(prog, &np) != 0 || nc == 0 || np == 0) {
        zg_error((ZgLoc){k->rel, 0, 0}, "CUDA kernel '%s' (sm_%d): NVRTC returned no cubin or PTX", k->name, arch);
        N.destroy(&prog);
        goto done;
    }
    out->cubin = zg_xmalloc(nc);
    out->ptx = zg_xmalloc(np + 1);
    ok = N.cubin(prog, (char *)out->cubin) == 0 && N.ptx(prog, out->ptx) == 0;
    out->cubin_len = nc;
    out->ptx[np] = 0;
    out->ptx_len = strlen(out->ptx);        /* the size NVRTC gives counts the NUL */
    N.destroy(&prog);
    if (!ok) zg_error((ZgLoc){k->rel, 0, 0}, "CUDA kernel '%s' (sm_%d): cannot read NVRTC's output", k->name, arch);
    else if (path) cache_put(dir, path, out);
done:
    free(dir);
    free(path);
    free(opt_arch);
    return ok;
}

/* ------------------------------------------------------------------ emitted files */
/* The rotary grouped-query attention constants, for an arch whose table entry says rope (llama):
** llama's kernel files (rmsnorm.cu, rope.cu, swiglu.cu, attention_gqa_tc.cu) compile only where
** ZK_NKV is defined, so for the other archs they are empty modules. Doubles with 17 digits: the
** kernels recompute the host's RoPE frequencies from them bit for bit. */
static char *rope_shapes(const ZgModel *m)
{
    const ZgArch *a = zg_arch_find(m->arch);
    if (!a || !a->rope) return zg_xstrdup("");
    char *s = zg_fmt("#define ZK_NKV %lld  /* key/value heads (grouped-query attention) */\n"
                     "#define ZK_ROPE_THETA %.17g  /* RoPE base */\n"
                     "#define ZK_ROPE_LLAMA3 %d  /* LLaMA 3 frequency scaling */\n",
                     (long long)m->n_kv_heads, m->rope_theta, m->rope_llama3 ? 1 : 0);
    if (!m->rope_llama3) return s;
    char *t = zg_fmt("%s#define ZK_ROPE_FACTOR %.17g\n#define ZK_ROPE_LOW %.17g  /* low_freq_factor */\n"
                     "#define ZK_ROPE_HIGH %.17g  /* high_freq_factor */\n"
                     "#define ZK_ROPE_OLD %lld  /* original context */\n",
                     s, m->rope_factor, m->rope_low_freq_factor, m->rope_high_freq_factor,
                     (long long)m->rope_original_context);
    free(s);
    return t;
}

char *zg_cuda_shapes_h(const ZgPlan *p)
{
    const ZgModel *m = p->model;
    /* train-cuda's activation storage, attention kernel and --check tolerances: cuda_dec.c */
    int io = zg_cuda_act_io(p);
    int64_t sm[3];
    int tc = zg_cuda_att_tc(p, sm);
    char *rope = rope_shapes(m);
    char *epi = zg_fmt("/* train-cuda (gen/cuda_dec.c): linear layers with fused GEMM epilogues (zr_gpu_gemm_lt) */\n"
                       "#define ZK_GEMM_EPI %d\n"
                       "/* train-cuda (gen/cuda_dec.c): fp32 GEMMs on TF32 tensor cores (train.allow_tf32) */\n"
                       "#define ZK_TF32 %d\n%s", zg_cuda_gemm_epi(p), zg_cuda_tf32(p), rope);
    free(rope);
    rope = epi;
    char *s = zg_fmt("/* The model's shapes, baked into every kernel (zk_common.cuh includes this file). */\n"
                  "#ifndef ZK_SHAPES_H\n#define ZK_SHAPES_H\n"
                  "#define ZK_C %lld   /* d_model */\n"
                  "#define ZK_NH %lld  /* heads */\n"
                  "#define ZK_T %lld   /* tokens per sequence */\n"
                  "#define ZK_V %lld   /* vocabulary */\n"
                  "#define ZK_F %lld   /* d_ff */\n"
                  "#define ZK_L %lld   /* blocks */\n"
                  "#define ZK_IO %d    /* 16-bit storage: 0 fp32, 1 bf16, 2 fp16 */\n"
                  "/* train-cuda (gen/cuda_dec.c): tensor-core attention and its shared memory (bytes) */\n"
                  "#define ZK_ATT_TC %d\n"
                  "#define ZK_ATT_TC_FWD_SMEM %lld\n"
                  "#define ZK_ATT_TC_DQ_SMEM %lld\n"
                  "#define ZK_ATT_TC_DKV_SMEM %lld\n"
                  "/* --check: max|dev-host| <= 1e-6 + ZG_CHECK_RTOL max|host| per tensor; loss sum relative */\n"
                  "#define ZG_CHECK_RTOL %.17g\n"
                  "#define ZG_CHECK_LOSS_RTOL %.17g\n"
                  "%s#endif\n",
                  (long long)m->d_model, (long long)m->n_heads, (long long)m->seq_len, (long long)m->vocab_size,
                  (long long)m->d_ff, (long long)m->n_layers, io, tc, (long long)sm[0], (long long)sm[1],
                  (long long)sm[2], zg_cuda_check_rtol(p),
                  zg_cuda_check_loss_rtol(p), rope);
    free(rope);
    return s;
}

/* A growing string. */
typedef struct { char *s; size_t n, cap; } Buf;
static void put(Buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = zg_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void puts_(Buf *b, const char *s) { put(b, s, strlen(s)); }
static void putf(Buf *b, char *s) { puts_(b, s); free(s); }

/* bytes as C string literal lines: printable ASCII as is, the rest as 3-digit octal escapes (never
** ambiguous with a following digit), 76 bytes a line. */
static void put_bytes(Buf *b, const unsigned char *p, size_t n)
{
    char esc[8];
    for (size_t i = 0; i < n; i += 76) {
        puts_(b, "    \"");
        for (size_t j = i; j < n && j < i + 76; j++) {
            unsigned c = p[j];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') put(b, (const char *)&p[j], 1);
            else { snprintf(esc, sizeof esc, "\\%03o", c); puts_(b, esc); }
        }
        puts_(b, "\"\n");
    }
}

char *zg_cuda_bin_h(void)
{
    return zg_xstrdup(
        "/* The kernels compiled by zgen with NVRTC: one cubin and one PTX per kernel and architecture.\n"
        "** A kernel file's functions (extern \"C\") are all in its module: load `bytes` with\n"
        "** cuModuleLoadData (cubin for the device's sm, else the PTX of the highest arch not above it). */\n"
        "#ifndef ZG_KERNELS_BIN_H\n#define ZG_KERNELS_BIN_H\n#include <stddef.h>\n"
        "typedef struct ZgKernelBlob {\n"
        "    const char *name;                /* kernel file: \"attention\" */\n"
        "    int arch;                        /* 80 = sm_80 */\n"
        "    int is_ptx;                      /* 0 cubin (ELF), 1 PTX text (NUL-terminated) */\n"
        "    const unsigned char *bytes;\n"
        "    size_t size;                     /* bytes, without the PTX's NUL */\n"
        "} ZgKernelBlob;\n"
        "extern const ZgKernelBlob zg_kernel_blobs[];\n"
        "extern const int zg_n_kernel_blobs; /* 0 when zgen ran without NVRTC */\n"
        "extern const char zg_kernels_nvrtc[]; /* NVRTC version, \"\" when none */\n"
        "#endif\n");
}

char *zg_cuda_bin_c(const ZgKernelBin *bins, int n, const char *nvrtc_version, size_t *len)
{
    Buf b = {0};
    puts_(&b, "#include \"zg_kernels_bin.h\"\n");
    /* the arrays are long string literals, beyond the 4095 characters ISO C promises */
    puts_(&b, "#if defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n\n");
    for (int i = 0; i < n; i++) {
        const ZgKernelBin *k = &bins[i];
        putf(&b, zg_fmt("static const unsigned char zk_%s_sm%d_cubin[%zu] =\n", k->kernel, k->arch, k->cubin_len + 1));
        put_bytes(&b, k->cubin, k->cubin_len);
        puts_(&b, ";\n");
        putf(&b, zg_fmt("static const unsigned char zk_%s_sm%d_ptx[%zu] =\n", k->kernel, k->arch, k->ptx_len + 1));
        put_bytes(&b, (const unsigned char *)k->ptx, k->ptx_len);
        puts_(&b, ";\n\n");
    }
    putf(&b, zg_fmt("const char zg_kernels_nvrtc[] = \"%s\";\n", nvrtc_version ? nvrtc_version : ""));
    putf(&b, zg_fmt("const int zg_n_kernel_blobs = %d;\n", 2 * n));
    puts_(&b, "const ZgKernelBlob zg_kernel_blobs[] = {\n");
    for (int i = 0; i < n; i++) {
        const ZgKernelBin *k = &bins[i];
        putf(&b, zg_fmt("    {\"%s\", %d, 0, zk_%s_sm%d_cubin, %zu},\n", k->kernel, k->arch, k->kernel, k->arch, k->cubin_len));
        putf(&b, zg_fmt("    {\"%s\", %d, 1, zk_%s_sm%d_ptx, %zu},\n", k->kernel, k->arch, k->kernel, k->arch, k->ptx_len));
    }
    if (!n) puts_(&b, "    {NULL, 0, 0, NULL, 0},\n");
    puts_(&b, "};\n");
    *len = b.n;
    return b.s;
}
