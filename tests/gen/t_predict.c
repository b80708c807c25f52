/*
** t_predict.c — the cost model (gen/predict.c, gen/hw.c): its arithmetic on hand-built schedules
** against figures computed here from the model's shape (a compute-bound op equals FLOPs / peak; a
** collective's time; a wait holding compute back until the reduction ends, and not without it),
** a PCIe-bound plan naming H2D, the host profile putting everything on the cores, MFU's formula,
** the --json keys, built-in profiles, and profile files: round trip and errors at file:line.
*/
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "zg.h"
#include "zg_predict.h"
#include "zt.h"

static ZgModel M;
static ZgZero Z;

static ZgPlan *make_plan(int64_t C, int64_t L, int64_t T, int ws, int stage, ZgOffload opt)
{
    zg_model_defaults(&M);
    M.name = "t";
    M.vocab_size = 256; M.context = T; M.d_model = C; M.n_layers = L; M.n_heads = 4;
    M.d_ff = 4 * C; M.seq_len = T;
    zg_model_set_world_size(&M, ws);
    zg_zero_defaults(&Z);
    Z.stage = stage;
    Z.micro_batch = 4;
    Z.grad_accum = 1;
    Z.train_batch_size = 4 * ws;
    Z.offload_optimizer.device = opt;
    ZgPlan *p = calloc(1, sizeof *p);
    if (!zg_model_build(&M, p) || !zg_plan_build(&M, &Z, p)) return NULL;
    return p;
}

/* A profile where only what a test looks at costs anything. */
static ZgHw ideal(void)
{
    ZgHw h = {0};
    h.name = "ideal";
    h.peak_flops[0] = h.peak_flops[1] = h.peak_flops[2] = 1e12;
    h.mm_eff = h.attn_eff = 1.0;
    h.mem_bw = h.h2d_bw = h.d2h_bw = h.nvme_read_bw = h.nvme_write_bw = 1e30;
    h.net_bw = h.host_mem_bw = 1e30;
    h.cpu_adam_rate = 1e30;
    return h;
}

static void set_last(ZgPlan *p, ZgOp *ops, int n)
{
    p->sched.last = ops; p->sched.n_last = n;
    p->sched.n_step = 0;
}

static int find_ev(const ZgPrediction *pr, int kind, int nth)
{
    for (int i = 0; i < pr->n_ev; i++)
        if (pr->ev[i].kind == kind && nth-- == 0) return i;
    return -1;
}

static void t_compute_bound_equals_flops_over_peak(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
    ZT_CHECK(p != NULL);
    if (!p) return;
    ZgOp ops[] = {{.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};      /* block h.0 */
    set_last(p, ops, 1);
    ZgHw h = ideal();
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    double C = 64, T = 32, BT = 4 * T;
    double numel = 12 * C * C + 13 * C;         /* a GPT-2 block's parameters */
    double flops = 2 * BT * numel + 2 * BT * C * T;   /* matmuls + causal attention, forward */
    ZT_NEAR(pr.step_s, flops / 1e12, 0, 1e-9);
    ZT_EQ_INT(pr.bottleneck, ZG_RES_COMPUTE);
    /* attention at half efficiency adds exactly its FLOPs once more */
    h.attn_eff = 0.5;
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, (flops + 2 * BT * C * T) / 1e12, 0, 1e-9);
    /* backward: twice the forward */
    ops[0].kind = ZG_OP_BACKWARD;
    h.attn_eff = 1.0;
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, 2 * flops / 1e12, 0, 1e-9);
}

/* TF32 (train.allow_tf32, gen/cuda_dec.c's zg_cuda_tf32): an fp32 plan that allows it runs its
** matmuls at the profile's TF32 peak, so a compute-bound forward takes their FLOPs / TF32 peak plus
** the attention's at the fp32 peak (attention.cu has no TF32 path), and MFU is against the TF32
** peak; without the key, in a bf16 plan or on a host profile the dtype's peak stays. The built-in
** figures are the datasheets' dense TF32 ones. */
static void t_tf32_peak(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgOp ops[] = {{.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};
    set_last(p, ops, 1);
    ZgHw h = ideal();
    h.tf32_flops = 7.5e12;
    double C = 64, T = 32, BT = 4 * T, numel = 12 * C * C + 13 * C;
    double flops = 2 * BT * numel + 2 * BT * C * T;
    ZgPrediction pr;
    const char *which = NULL;
    ZT_EQ_INT(Z.dtype, ZG_DTYPE_FP32);
    zg_predict(p, &h, &pr);
    double exact = pr.step_s;
    ZT_NEAR(exact, flops / 1e12, 0, 1e-9);
    ZT_NEAR(zg_predict_peak(p, &h, &which), 1e12, 0, 1e-12);
    ZT_EQ_STR(which, "fp32");
    M.allow_tf32 = true;
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, 2 * BT * numel / 7.5e12 + 2 * BT * C * T / 1e12, 0, 1e-9);
    ZT_NEAR(pr.mfu, pr.model_flops / pr.step_s / 7.5e12, 0, 1e-12);
    ZT_NEAR(zg_predict_peak(p, &h, &which), 7.5e12, 0, 1e-12);
    ZT_EQ_STR(which, "tf32");
    h.host = true;                              /* the host kernels have no TF32 */
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, exact, 0, 1e-9);
    h.host = false;
    Z.dtype = ZG_DTYPE_BF16;                    /* the key is inert in 16-bit plans */
    ZT_NEAR(zg_predict_peak(p, &h, &which), 1e12, 0, 1e-12);
    ZT_EQ_STR(which, "bf16");
    Z.dtype = ZG_DTYPE_FP32;
    M.allow_tf32 = false;
    ZgHw b;
    ZT_CHECK(zg_hw_builtin("h100-sxm", &b));
    ZT_NEAR(b.tf32_flops, 494.7e12, 0, 1e-12);  /* dense TF32 (989.4 with sparsity) */
    ZT_CHECK(zg_hw_builtin("a100-80gb", &b));
    ZT_NEAR(b.tf32_flops, 156e12, 0, 1e-12);
    ZT_CHECK(zg_hw_builtin("host", &b));
    ZT_NEAR(b.tf32_flops, b.peak_flops[ZG_DTYPE_FP32], 0, 1e-12);
}

/* The attention's peak follows gen's kernel choice (gen/cuda_dec.c zg_cuda_att_tc): tensor cores in
** a 16-bit plan whose head size the tiling serves (here 16), so the whole forward at the bf16 peak;
** CUDA cores in fp32 arithmetic beyond it (head size 160: attention.cu), so the attention's FLOPs at
** the fp32 peak and the matmuls' still at the bf16 one. */
static void t_attention_peak(void)
{
    ZgHw h = ideal();
    h.peak_flops[ZG_DTYPE_BF16] = 8e12;
    for (int big = 0; big < 2; big++) {
        double C = big ? 640 : 64, T = 32, BT = 4 * T, numel = 12 * C * C + 13 * C;
        ZgPlan *p = make_plan((int64_t)C, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
        if (!p) { ZT_CHECK(p != NULL); return; }
        Z.dtype = ZG_DTYPE_BF16;
        ZgOp ops[] = {{.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};
        set_last(p, ops, 1);
        ZgPrediction pr;
        zg_predict(p, &h, &pr);
        ZT_NEAR(pr.step_s, 2 * BT * numel / 8e12 + 2 * BT * C * T / (big ? 1e12 : 8e12), 0, 1e-9);
        Z.dtype = ZG_DTYPE_FP32;
    }
}

static void t_mfu_formula(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgHw h = ideal();
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    double C = 64, T = 32, L = 2, V = 256;
    double N = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
    double tokens = 4 * T;
    ZT_NEAR(pr.model_flops, (6 * N + 6 * L * C * T) * tokens, 0, 1e-12);
    ZT_CHECK(pr.step_s > 0);
    ZT_NEAR(pr.mfu, pr.model_flops / pr.step_s / 1e12, 0, 1e-12);
    ZT_NEAR(pr.tokens_per_s, tokens / pr.step_s, 0, 1e-12);
}

static void t_wait_holds_compute(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 2, 0, ZG_OFFLOAD_NONE);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgHw h = ideal();
    h.net_bw = 1e6;                             /* a slow network */
    h.net_lat_s = 1e-3;
    int k = 0;
    double numel = (double)p->buckets[k].numel;
    double red = 1e-3 + 2.0 * (2 - 1) * numel * 4 / 2 / 1e6;   /* fp32 all-reduce over 2 ranks */
    double C = 64, T = 32, BT = 4 * T;
    double fwd = (2 * BT * (12 * C * C + 13 * C) + 2 * BT * C * T) / 1e12;
    ZgOp with[] = {{.kind = ZG_OP_BACKWARD, .arg = 1, .slot = -1},
                   {.kind = ZG_OP_REDUCE, .arg = k, .slot = -1},
                   {.kind = ZG_OP_WAIT_REDUCE, .arg = k, .slot = -1},
                   {.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};
    set_last(p, with, 4);
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    int r = find_ev(&pr, ZG_OP_REDUCE, 0), f = find_ev(&pr, ZG_OP_FORWARD, 0);
    ZT_CHECK(r >= 0 && f >= 0);
    if (r < 0 || f < 0) return;
    ZT_NEAR(pr.ev[r].dur, red, 0, 1e-9);
    ZT_NEAR(pr.ev[r].start, 2 * fwd, 0, 1e-9);  /* after the backward it reduces */
    ZT_CHECK(pr.ev[f].start >= pr.ev[r].start + pr.ev[r].dur - 1e-12);
    ZT_NEAR(pr.step_s, 3 * fwd + red, 0, 1e-9);
    ZT_EQ_INT(pr.bottleneck, ZG_RES_NET);
    ZT_CHECK(strstr(zg_predict_verdict(&pr), "network-bound") != NULL);
    /* without the wait the forward overlaps the reduction */
    ZgOp without[] = {{.kind = ZG_OP_BACKWARD, .arg = 1, .slot = -1},
                      {.kind = ZG_OP_REDUCE, .arg = k, .slot = -1},
                      {.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};
    set_last(p, without, 3);
    zg_predict(p, &h, &pr);
    f = find_ev(&pr, ZG_OP_FORWARD, 0);
    ZT_NEAR(pr.ev[f].start, 2 * fwd, 0, 1e-9);
    ZT_NEAR(pr.step_s, 2 * fwd + red, 0, 1e-9);
}

static void t_pcie_bound_names_h2d(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 2, ZG_OFFLOAD_CPU);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgHw h = ideal();
    h.h2d_bw = 1e6;                             /* 1 MB/s PCIe host -> device */
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    ZT_EQ_INT(pr.bottleneck, ZG_RES_H2D);
    /* every owned parameter goes back once, 4 bytes (fp32 plan) */
    ZT_NEAR(pr.crit_s[ZG_RES_H2D], (double)p->shard.opt_numel * 4 / 1e6, 0, 1e-6);
    ZT_CHECK(strstr(zg_predict_verdict(&pr), "H2D-bound") != NULL);
    ZT_CHECK(strstr(zg_predict_verdict(&pr), "H2D of updated parameters") != NULL);
    /* the CPU does Adam when the optimizer is offloaded */
    h = ideal();
    h.cpu_adam_rate = 1e6;
    zg_predict(p, &h, &pr);
    ZT_EQ_INT(pr.bottleneck, ZG_RES_CPU);
    ZT_NEAR(pr.step_s, (double)p->shard.opt_numel / 1e6, 2e-3, 0);   /* + the tiny compute */
}

static void t_host_profile_serialises(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 2, 2, ZG_OFFLOAD_CPU);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgHw h;
    ZT_CHECK(zg_hw_builtin("host", &h));
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    ZT_CHECK(pr.busy_s[ZG_RES_COMPUTE] > 0);
    ZT_EQ_INT(pr.busy_s[ZG_RES_NET] > 0, 0);
    ZT_EQ_INT(pr.busy_s[ZG_RES_CPU] > 0, 0);
    ZT_EQ_INT(pr.busy_s[ZG_RES_H2D] > 0, 0);
    /* one resource: the step is its busy time */
    ZT_NEAR(pr.step_s, pr.busy_s[ZG_RES_COMPUTE], 0, 1e-9);
}

/* A host profile with host_kernels uses the rates measured at the width nearest the plan's. */
static void t_host_width_table(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgOp ops[] = {{.kind = ZG_OP_FORWARD, .arg = 1, .slot = -1}};
    set_last(p, ops, 1);
    ZgHw h = ideal();
    h.host = true;
    h.n_widths = 2;
    h.widths[0] = (struct ZgHwWidth){128, 1e9, 1e30, 1e30};
    h.widths[1] = (struct ZgHwWidth){1024, 4e9, 1e30, 1e30};
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    double C = 64, BT = 4 * 32;
    ZT_NEAR(pr.step_s, 2 * BT * (12 * C * C + 13 * C) / 1e9, 0, 1e-9);   /* 64 is nearer 128 */
    h.widths[0].d_model = 16;                   /* 4x away beats 1024's 16x */
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, 2 * BT * (12 * C * C + 13 * C) / 1e9, 0, 1e-9);
    h.widths[0].d_model = 2;                    /* 32x away: 1024 (16x) is nearer */
    zg_predict(p, &h, &pr);
    ZT_NEAR(pr.step_s, 2 * BT * (12 * C * C + 13 * C) / 4e9, 0, 1e-9);
}

static void t_json_keys(void)
{
    ZgPlan *p = make_plan(64, 2, 32, 1, 0, ZG_OFFLOAD_NONE);
    if (!p) { ZT_CHECK(p != NULL); return; }
    ZgHw h;
    ZT_CHECK(zg_hw_builtin("h100-sxm", &h));
    ZgPrediction pr;
    zg_predict(p, &h, &pr);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ZgAdviceList adv;
    zg_advise(p, &h, &pr, &adv);
    zg_predict_print(p, &h, &pr, &adv, true, f);
    fclose(f);
    ZT_CHECK(adv.n == 0 && adv.why_none != NULL);     /* no hardware.device_memory: nothing checked */
    ZT_CHECK(strstr(buf, "\"faster\": []}") != NULL);
    const char *keys[] = {"\"step_s\": ", "\"tokens_per_s\": ", "\"mfu\": ", "\"bottleneck\": \""};
    for (int i = 0; i < 4; i++) ZT_CHECKM(strstr(buf, keys[i]) != NULL, "key %s in %s", keys[i], buf);
    const char *s = strstr(buf, "\"step_s\": ");
    if (s) ZT_NEAR(atof(s + 10), pr.step_s, 0, 1e-5);
    ZT_CHECK(buf[0] == '{' && buf[len - 2] == '}');
    free(buf);
}

static void t_builtins(void)
{
    const char *names[] = {"h100-sxm", "h100-pcie", "a100-80gb", "h200", "gh200", "host"};
    ZgHw h;
    for (int i = 0; i < 6; i++) {
        ZT_CHECKM(zg_hw_builtin(names[i], &h), "%s", names[i]);
        ZT_CHECK(h.peak_flops[ZG_DTYPE_BF16] > 0 && h.mem_bw > 0 && h.cpu_adam_rate > 0);
    }
    ZT_CHECK(!zg_hw_builtin("h100", &h));
    zg_hw_builtin("h100-sxm", &h);
    ZT_NEAR(h.peak_flops[ZG_DTYPE_BF16], 989.4e12, 0, 1e-12);   /* docs/PREDICT.md */
    zg_hw_builtin("a100-80gb", &h);
    ZT_NEAR(h.peak_flops[ZG_DTYPE_BF16], 312e12, 0, 1e-12);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/t_predict_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void t_profile_file(void)
{
    ZgHw h, back;
    zg_hw_builtin("a100-80gb", &h);
    h.name = "mine";
    h.n_widths = 2;
    h.widths[0] = (struct ZgHwWidth){128, 12.5e9, 6e9, 3e9};
    h.widths[1] = (struct ZgHwWidth){256, 20e9, 9e9, 2e9};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    zg_hw_write(&h, f);
    fclose(f);
    const char *path = write_tmp(buf);
    free(buf);
    zg_diag_reset();
    ZT_CHECK(zg_hw_load(path, &back));
    ZT_EQ_STR(back.name, "mine");
    ZT_NEAR(back.peak_flops[ZG_DTYPE_BF16], h.peak_flops[ZG_DTYPE_BF16], 0, 1e-5);
    ZT_NEAR(back.h2d_bw, h.h2d_bw, 0, 1e-5);
    ZT_NEAR(back.cpu_adam_rate, h.cpu_adam_rate, 0, 1e-5);
    ZT_NEAR(back.net_lat_s, h.net_lat_s, 0, 1e-5);
    ZT_EQ_INT(back.host, false);
    ZT_EQ_INT(back.n_widths, 2);
    ZT_NEAR(back.widths[1].d_model, 256, 0, 0);
    ZT_NEAR(back.widths[1].matmul_flops, 20e9, 0, 1e-5);
    ZT_NEAR(back.widths[0].attn_flops, 6e9, 0, 1e-5);
    ZT_NEAR(back.widths[0].mem_bw, 3e9, 0, 1e-5);

    /* a partial file keeps its base's figures */
    path = write_tmp("{\"base\": \"h100-sxm\", \"h2d_gbs\": 12.5}\n");
    zg_diag_reset();
    ZT_CHECK(zg_hw_load(path, &back));
    ZT_NEAR(back.h2d_bw, 12.5e9, 0, 1e-12);
    ZT_NEAR(back.peak_flops[ZG_DTYPE_BF16], 989.4e12, 0, 1e-12);
    ZT_NEAR(back.tf32_flops, 494.7e12, 0, 1e-12);
    /* the TF32 peak is a matmul_tflops key, and written back */
    path = write_tmp("{\"base\": \"host\", \"matmul_tflops\": {\"tf32\": 3.5}}\n");
    zg_diag_reset();
    ZT_CHECK(zg_hw_load(path, &back));
    ZT_NEAR(back.tf32_flops, 3.5e12, 0, 1e-12);
    ZT_NEAR(back.peak_flops[ZG_DTYPE_FP32], 160e9, 0, 1e-12);

    /* errors, each at its line */
    path = write_tmp("{\n  \"base\": \"host\",\n  \"hbm_gbs\": 3000,\n  \"h2d_gbs\": \"fast\",\n"
                     "  \"matmul_tflops\": {\"int8\": 1},\n  \"d2h_gbs\": -1,\n"
                     "  \"host_kernels\": [{\"d_model\": 128, \"matmul_gflops\": 1,\n"
                     "    \"attention_gflop\": 1, \"layernorm_gbs\": 1}]\n}\n");
    zg_diag_reset();
    zg_diag_quiet(true);
    ZT_CHECK(!zg_hw_load(path, &back));
    ZT_EQ_INT(zg_diag_count_matching("unknown hardware profile key 'hbm_gbs'", 3), 1);
    ZT_EQ_INT(zg_diag_count_matching("h2d_gbs must be a number", 4), 1);
    ZT_EQ_INT(zg_diag_count_matching("matmul_tflops.int8", 5), 1);
    ZT_EQ_INT(zg_diag_count_matching("d2h_gbs must be in", 6), 1);
    ZT_EQ_INT(zg_diag_count_matching("unknown key host_kernels[0].attention_gflop", 8), 1);
    ZT_EQ_INT(zg_diag_count_matching("host_kernels[0] has no attention_gflops", 7), 1);
    path = write_tmp("{\"base\": \"h900\"}\n");
    zg_diag_reset();
    ZT_CHECK(!zg_hw_load(path, &back));
    ZT_EQ_INT(zg_diag_count_matching("no built-in profile", 1), 1);
    zg_diag_reset();
    ZT_CHECK(!zg_hw_get("/nonexistent/profile.json", &back));
    ZT_EQ_INT(zg_diag_count_matching("no built-in profile of that name", 0), 1);
    zg_diag_quiet(false);
    zg_diag_reset();
    unlink(path);
}

int main(void)
{
    ZT_RUN(t_compute_bound_equals_flops_over_peak);
    ZT_RUN(t_tf32_peak);
    ZT_RUN(t_attention_peak);
    ZT_RUN(t_mfu_formula);
    ZT_RUN(t_wait_holds_compute);
    ZT_RUN(t_pcie_bound_names_h2d);
    ZT_RUN(t_host_profile_serialises);
    ZT_RUN(t_host_width_table);
    ZT_RUN(t_json_keys);
    ZT_RUN(t_builtins);
    ZT_RUN(t_profile_file);
    return zt_end();
}
