/*
** hw.c — hardware profiles for the cost model: the built-in ones and profile files.
**
** A built-in profile is a spec-sheet figure times a stated efficiency, or a measured practical
** figure, each with its source (docs/PREDICT.md has the table; docs/PREDICT.md is
** where the figures come from). The `host` built-in holds the figures measured on this kind of
** machine (docs/CONTRIBUTING.md "Measured on this machine"); `bench/calibrate` measures the machine at hand and writes a
** profile file with the same keys, which zg_hw_load reads (errors located at file:line:col).
*/
#include <string.h>
#include <sys/stat.h>
#include "zg_predict.h"

#define GIGA 1e9
#define TERA 1e12

/* Efficiencies shared by the GPU profiles (assumptions, docs/PREDICT.md "Efficiencies"). */
#define MM_EFF 0.70             /* bf16 cuBLASLt GEMMs at GPT-2 shapes: fraction of dense peak */
#define ATTN_EFF 0.50           /* flash attention forward+backward: fraction of dense peak */
#define HBM_EFF 0.85            /* fused elementwise kernels: fraction of HBM spec bandwidth */
#define DRAM_EFF 0.70           /* STREAM-like sustained fraction of DDR/LPDDR spec bandwidth */
#define ADAM_BYTES 28.0         /* fused CPU Adam, 16-bit grads in and params out: 2+12 read, 12+2 written */
#define LAUNCH_S 20e-6          /* one schedule op = a handful of kernel launches (~5 us each) */

static ZgHw gpu(const char *name, double bf16, double fp32, double tf32, double hbm, double h2d, double d2h,
                double nvr, double nvw, double net, double dram)
{
    ZgHw h = {0};
    h.name = name;
    h.peak_flops[ZG_DTYPE_FP32] = fp32 * TERA;
    h.tf32_flops = tf32 * TERA;
    h.peak_flops[ZG_DTYPE_BF16] = h.peak_flops[ZG_DTYPE_FP16] = bf16 * TERA;
    h.mm_eff = MM_EFF;
    h.attn_eff = ATTN_EFF;
    h.mem_bw = hbm * GIGA * HBM_EFF;
    h.h2d_bw = h2d * GIGA;
    h.d2h_bw = d2h * GIGA;
    h.nvme_read_bw = nvr * GIGA;
    h.nvme_write_bw = nvw * GIGA;
    h.net_bw = net * GIGA;
    h.net_lat_s = 20e-6;        /* NCCL small-message latency on NVLink (assumption) */
    h.host_mem_bw = dram * GIGA * DRAM_EFF;
    h.cpu_adam_rate = h.host_mem_bw / ADAM_BYTES;
    h.op_overhead_s = LAUNCH_S;
    return h;
}

bool zg_hw_builtin(const char *name, ZgHw *hw)
{
    /* Columns: bf16 dense TF, fp32 TF, TF32 dense TF (tensor cores), HBM GB/s (spec), H2D, D2H, NVMe read, NVMe write (GB/s,
    ** practical), collective busbw GB/s (practical), host DRAM GB/s (spec, one socket).
    ** Sources per column in docs/PREDICT.md. */
    if (!strcmp(name, "h100-sxm"))
        *hw = gpu("h100-sxm", 989.4, 67, 494.7, 3350, 55.6, 52.8, 10, 5, 370, 307.2);
    else if (!strcmp(name, "h100-pcie"))
        *hw = gpu("h100-pcie", 756, 51, 378, 2000, 55.6, 52.8, 10, 5, 25, 307.2);
    else if (!strcmp(name, "a100-80gb"))
        *hw = gpu("a100-80gb", 312, 19.5, 156, 2039, 25.1, 25.1, 10, 5, 215, 204.8);
    else if (!strcmp(name, "h200"))
        *hw = gpu("h200", 989.4, 67, 494.7, 4800, 55.6, 52.8, 10, 5, 370, 307.2);
    else if (!strcmp(name, "gh200"))
        *hw = gpu("gh200", 989.4, 67, 494.7, 4000, 360, 360, 10, 5, 370, 512);
    else if (!strcmp(name, "host")) {
        ZgHw h = {0};           /* docs/CONTRIBUTING.md "Measured on this machine": a 2-core Ice Lake-SP VM, 2 threads */
        h.name = "host";
        h.host = true;
        h.peak_flops[0] = h.peak_flops[1] = h.peak_flops[2] = 160 * GIGA;  /* sgemm, GPT shapes */
        h.tf32_flops = h.peak_flops[0];   /* no TF32 on the CPU */
        h.mm_eff = 1.0;         /* the figure is already what sgemm reaches */
        h.attn_eff = 0.5;       /* assumption: attention as many small single-threaded sgemms */
        h.mem_bw = 19.1 * GIGA;    /* STREAM copy, counted bytes */
        h.h2d_bw = h.d2h_bw = 19.1 * GIGA;
        h.nvme_read_bw = 1.2 * GIGA;
        h.nvme_write_bw = 1.85 * GIGA;
        h.net_bw = 1.3 * GIGA;     /* Open MPI over shared memory: reductions 1.2-1.5 GB/s */
        h.net_lat_s = 50e-6;
        h.cpu_adam_rate = 1400e6;
        h.host_mem_bw = 19.1 * GIGA;
        h.op_overhead_s = 20e-6;
        *hw = h;
    } else
        return false;
    return true;
}

const char *zg_hw_builtin_names(void) { return "h100-sxm, h100-pcie, a100-80gb, h200, gh200, host"; }

/* {===================================================================== profile files */
typedef struct Key {
    const char *name;
    size_t off;                 /* offsetof(ZgHw, field) */
    double scale;               /* file unit -> model unit */
    double lo, hi;              /* allowed range in the file's unit */
} Key;

static const Key keys[] = {
    {"matmul_efficiency", offsetof(ZgHw, mm_eff), 1, 1e-3, 1},
    {"attention_efficiency", offsetof(ZgHw, attn_eff), 1, 1e-3, 1},
    {"memory_gbs", offsetof(ZgHw, mem_bw), GIGA, 1e-3, 1e6},
    {"h2d_gbs", offsetof(ZgHw, h2d_bw), GIGA, 1e-3, 1e6},
    {"d2h_gbs", offsetof(ZgHw, d2h_bw), GIGA, 1e-3, 1e6},
    {"nvme_read_gbs", offsetof(ZgHw, nvme_read_bw), GIGA, 1e-3, 1e6},
    {"nvme_write_gbs", offsetof(ZgHw, nvme_write_bw), GIGA, 1e-3, 1e6},
    {"collective_gbs", offsetof(ZgHw, net_bw), GIGA, 1e-3, 1e6},
    {"collective_latency_us", offsetof(ZgHw, net_lat_s), 1e-6, 0, 1e6},
    {"cpu_adam_mparams", offsetof(ZgHw, cpu_adam_rate), 1e6, 1e-3, 1e9},
    {"host_memory_gbs", offsetof(ZgHw, host_mem_bw), GIGA, 1e-3, 1e6},
    {"op_overhead_us", offsetof(ZgHw, op_overhead_s), 1e-6, 0, 1e6},
};
enum { NKEYS = sizeof keys / sizeof keys[0] };

static const char *const dtype_keys[3] = {"fp32", "bf16", "fp16"};

static bool matmul_tflops(const ZgNode *v, ZgHw *hw)
{
    if (v->kind != ZG_NMAP) {
        zg_error(v->loc, "matmul_tflops must be a mapping {fp32: TF, bf16: TF, fp16: TF, tf32: TF}, not %s",
                 zg_node_kind_name(v));
        return false;
    }
    bool ok = true;
    for (int i = 0; i < v->n; i++) {
        int d = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(v->keys[i], dtype_keys[k])) d = k;
        if (!strcmp(v->keys[i], "tf32")) d = 3;      /* the TF32 tensor-core peak (tf32_flops) */
        if (d < 0) {
            zg_error(v->key_locs[i], "unknown key matmul_tflops.%s", v->keys[i]);
            zg_note(v->key_locs[i], "the keys are fp32, bf16, fp16 and tf32 (dense TFLOP/s)");
            ok = false;
            continue;
        }
        double x;
        if (!zg_node_num(v->vals[i], zg_fmt("matmul_tflops.%s", v->keys[i]), 1e-6, 1e6, &x))
            ok = false;
        else if (d == 3) hw->tf32_flops = x * TERA;
        else hw->peak_flops[d] = x * TERA;
    }
    return ok;
}

static bool host_kernels(const ZgNode *v, ZgHw *hw)
{
    if (v->kind != ZG_NSEQ) {
        zg_error(v->loc, "host_kernels must be a list of {d_model, matmul_gflops, attention_gflops, "
                 "layernorm_gbs}, not %s", zg_node_kind_name(v));
        return false;
    }
    if (v->n > ZG_HW_MAX_WIDTHS) {
        zg_error(v->loc, "host_kernels has %d entries; at most %d", v->n, ZG_HW_MAX_WIDTHS);
        return false;
    }
    static const char *const names[4] = {"d_model", "matmul_gflops", "attention_gflops", "layernorm_gbs"};
    static const double scale[4] = {1, GIGA, GIGA, GIGA};
    bool ok = true;
    hw->n_widths = 0;
    for (int i = 0; i < v->n; i++) {
        const ZgNode *e = v->vals[i];
        if (e->kind != ZG_NMAP) {
            zg_error(e->loc, "host_kernels[%d] must be a mapping, not %s", i, zg_node_kind_name(e));
            ok = false;
            continue;
        }
        double x[4] = {0};
        for (int k = 0; k < e->n; k++) {
            int j = 0;
            while (j < 4 && strcmp(names[j], e->keys[k])) j++;
            if (j == 4) {
                zg_error(e->key_locs[k], "unknown key host_kernels[%d].%s", i, e->keys[k]);
                zg_note(e->key_locs[k], "the keys are d_model, matmul_gflops, attention_gflops, layernorm_gbs");
                ok = false;
            } else if (!zg_node_num(e->vals[k], zg_fmt("host_kernels[%d].%s", i, names[j]), 1e-6, 1e9, &x[j]))
                ok = false;
        }
        for (int j = 0; j < 4; j++)
            if (x[j] <= 0 && zg_node_index(e, names[j]) < 0) {
                zg_error(e->loc, "host_kernels[%d] has no %s", i, names[j]);
                ok = false;
            }
        hw->widths[hw->n_widths++] = (struct ZgHwWidth){x[0], x[1] * scale[1], x[2] * scale[2],
                                                        x[3] * scale[3]};
    }
    return ok;
}

bool zg_hw_load(const char *path, ZgHw *hw)
{
    int errors = zg_error_count();
    ZgNode *root = zg_node_load_file(path);
    if (!root) return false;
    ZgLoc top = root->loc;
    if (root->kind != ZG_NMAP) {
        zg_error(top, "a hardware profile must be a mapping of keys (docs/PREDICT.md), not %s",
                 zg_node_kind_name(root));
        return false;
    }
    const char *base = "host";
    const ZgNode *b = zg_node_get(root, "base");
    if (b && zg_node_str(b, "base", &base) && !zg_hw_builtin(base, hw)) {
        zg_error(b->loc, "base '%s' is no built-in profile", base);
        zg_note(b->loc, "built-in profiles: %s", zg_hw_builtin_names());
        return false;
    }
    if (!b) zg_hw_builtin("host", hw);
    hw->name = zg_xstrdup(path);
    for (int i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        const ZgNode *v = root->vals[i];
        if (!strcmp(k, "base")) continue;
        if (!strcmp(k, "name")) {
            const char *s;
            if (zg_node_str(v, "name", &s)) hw->name = s;
            continue;
        }
        if (!strcmp(k, "backend")) {
            const char *s;
            if (!zg_node_str(v, "backend", &s)) continue;
            if (!strcmp(s, "host")) hw->host = true;
            else if (!strcmp(s, "device")) hw->host = false;
            else zg_error(v->loc, "backend must be host or device, not '%s'", s);
            continue;
        }
        if (!strcmp(k, "host_kernels")) {
            host_kernels(v, hw);
            continue;
        }
        if (!strcmp(k, "matmul_tflops")) {
            matmul_tflops(v, hw);
            continue;
        }
        int j = 0;
        while (j < NKEYS && strcmp(keys[j].name, k)) j++;
        if (j == NKEYS) {
            zg_error(root->key_locs[i], "unknown hardware profile key '%s'", k);
            zg_note(root->key_locs[i], "keys: name, base, backend, matmul_tflops, matmul_efficiency, "
                    "attention_efficiency, memory_gbs, h2d_gbs, d2h_gbs, nvme_read_gbs, "
                    "nvme_write_gbs, collective_gbs, collective_latency_us, cpu_adam_mparams, "
                    "host_memory_gbs, op_overhead_us, host_kernels (docs/PREDICT.md)");
            continue;
        }
        double x;
        if (zg_node_num(v, k, keys[j].lo, keys[j].hi, &x))
            *(double *)((char *)hw + keys[j].off) = x * keys[j].scale;
    }
    return zg_error_count() == errors;
}

bool zg_hw_get(const char *name_or_path, ZgHw *hw)
{
    if (zg_hw_builtin(name_or_path, hw)) return true;
    struct stat st;
    if (stat(name_or_path, &st) != 0) {
        zg_error((ZgLoc){0}, "--hardware %s: no built-in profile of that name and no such file",
                 name_or_path);
        zg_note((ZgLoc){0}, "built-in profiles: %s; or a profile file (bench/calibrate writes one)",
                zg_hw_builtin_names());
        return false;
    }
    return zg_hw_load(name_or_path, hw);
}

void zg_hw_write(const ZgHw *hw, FILE *f)
{
    fprintf(f, "{\n  \"name\": \"%s\",\n  \"backend\": \"%s\",\n", hw->name, hw->host ? "host" : "device");
    fprintf(f, "  \"matmul_tflops\": {\"fp32\": %.6g, \"bf16\": %.6g, \"fp16\": %.6g, \"tf32\": %.6g}",
            hw->peak_flops[0] / TERA, hw->peak_flops[1] / TERA, hw->peak_flops[2] / TERA, hw->tf32_flops / TERA);
    for (int j = 0; j < NKEYS; j++)
        fprintf(f, ",\n  \"%s\": %.6g", keys[j].name,
                *(const double *)((const char *)hw + keys[j].off) / keys[j].scale);
    if (hw->n_widths) {
        fputs(",\n  \"host_kernels\": [", f);
        for (int i = 0; i < hw->n_widths; i++)
            fprintf(f, "%s\n    {\"d_model\": %g, \"matmul_gflops\": %.6g, \"attention_gflops\": %.6g, "
                    "\"layernorm_gbs\": %.6g}", i ? "," : "", hw->widths[i].d_model,
                    hw->widths[i].matmul_flops / GIGA, hw->widths[i].attn_flops / GIGA, hw->widths[i].mem_bw / GIGA);
        fputs("\n  ]", f);
    }
    fputs("\n}\n", f);
}
/* }===================================================================== */
