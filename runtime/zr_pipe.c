/*
** zr_pipe.c — the pipelined NVMe optimizer step (see zr_pipe.h for the layout and the schedule).
** Buffer b holds sub-group j with j % buffer_count == b. Before sub-group j is read into its buffer,
** the write of sub-group j - buffer_count from that buffer must be complete. Adam runs in chunks of
** ZR_PIPE_CHUNK elements with zr_nvme_poll between them, so the ring is refilled while the CPU works
** and the disk never idles for a whole sub-group's compute.
*/
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zr_pipe.h"

struct ZrPipe {
    ZrNvme *f;
    int nbuf;                 /* buffer_count */
    int64_t max_numel;        /* elements per sub-group at most */
    int64_t ab;               /* bytes of one array in a buffer: zr_pipe_array_bytes(max_numel) */
    ZrPipeLayout lay;
    char **buf;               /* nbuf pinned buffers of 3*ab bytes: [p | m | v] */
    ZrNvmeReq (*rd)[3], (*wr)[3];   /* per buffer: reads and writes of its three arrays */
    char *held;               /* per buffer: 1 from swap-in until swap-out (not to be overwritten) */
    int own_bufs;             /* 1: buffers allocated here */
    int fresh;                /* 1: the next op starts a new step (stats reset) */
    double t_start;
    ZrPipeStats st;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t dt_size(ZrDtype t) { return t == ZR_DT_FP32 ? 4 : 2; }

int64_t zr_pipe_array_bytes(int64_t numel)
{
    return (numel * 4 + ZR_NVME_ALIGN - 1) / ZR_NVME_ALIGN * ZR_NVME_ALIGN;
}

int64_t zr_pipe_sg_bytes(int64_t numel) { return 3 * zr_pipe_array_bytes(numel); }

int64_t zr_pipe_buf_bytes(int64_t max_numel) { return 3 * zr_pipe_array_bytes(max_numel); }

int64_t zr_pipe_layout(ZrSubGroupRow *sg, int n, int64_t base)
{
    int64_t off = (base + ZR_NVME_ALIGN - 1) / ZR_NVME_ALIGN * ZR_NVME_ALIGN;
    for (int i = 0; i < n; i++) {
        sg[i].nvme_offset_bytes = off;
        off += zr_pipe_sg_bytes(sg[i].numel);
    }
    return off;
}

static int wait3(ZrPipe *p, ZrNvmeReq *r, double *acc)
{
    int rc = 0;
    double t0 = now();
    for (int k = 0; k < 3; k++)
        if (r[k].state == 1 || r[k].state == 2) {
            int e = zr_nvme_wait(p->f, &r[k]);
            if (!rc) rc = e;
        }
    if (acc) *acc += now() - t0;
    return rc;
}

static int busy3(const ZrNvmeReq *r)
{
    return r[0].state == 1 || r[1].state == 1 || r[2].state == 1;
}

void zr_pipe_destroy(ZrPipe *p)
{
    if (!p) return;
    if (p->buf) {
        for (int b = 0; b < p->nbuf; b++) {
            wait3(p, p->rd[b], NULL);
            wait3(p, p->wr[b], NULL);
        }
        zr_nvme_register_buffers(p->f, NULL, NULL, 0);
        if (p->own_bufs)
            for (int b = 0; b < p->nbuf; b++) zr_nvme_free(p->buf[b], (size_t)(3 * p->ab));
    }
    free(p->buf);
    free(p->held);
    free(p->rd);
    free(p->wr);
    free(p);
}

int zr_pipe_create(ZrPipe **out, ZrNvme *f, int buffer_count, int64_t max_numel,
                   const ZrPipeLayout *lay, void *const *bufs)
{
    *out = NULL;
    if (!f || buffer_count < 1 || max_numel < 1) return -EINVAL;
    for (int b = 0; bufs && b < buffer_count; b++)
        if (!bufs[b] || (uintptr_t)bufs[b] % ZR_NVME_ALIGN) return -EINVAL;
    if (lay && !lay->interleaved && (lay->master < 0 || lay->m < 0 || lay->v < 0)) return -EINVAL;
    ZrPipe *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->f = f;
    p->nbuf = buffer_count;
    p->max_numel = max_numel;
    p->ab = zr_pipe_array_bytes(max_numel);
    p->lay = lay ? *lay : (ZrPipeLayout){1, 0, 0, 0};
    p->fresh = 1;
    p->own_bufs = !bufs;
    p->rd = calloc((size_t)buffer_count, sizeof *p->rd);
    p->wr = calloc((size_t)buffer_count, sizeof *p->wr);
    p->held = calloc((size_t)buffer_count, 1);
    size_t *lens = calloc((size_t)buffer_count, sizeof *lens);
    int rc = (p->rd && p->wr && p->held && lens) ? 0 : -ENOMEM;
    if (!rc) p->buf = calloc((size_t)buffer_count, sizeof *p->buf);
    if (!rc && !p->buf) rc = -ENOMEM;
    for (int b = 0; b < buffer_count && !rc; b++) {
        p->buf[b] = bufs ? bufs[b] : zr_nvme_alloc((size_t)(3 * p->ab));
        lens[b] = (size_t)(3 * p->ab);
        if (!p->buf[b]) rc = -ENOMEM;
    }
    if (!rc) rc = zr_nvme_register_buffers(f, (void *const *)p->buf, lens, buffer_count);
    free(lens);
    if (rc) { zr_pipe_destroy(p); return rc; }
    *out = p;
    return 0;
}

static int check_sg(const ZrPipe *p, const ZrSubGroupRow *sg)
{
    return (!sg || sg->numel < 0 || sg->numel > p->max_numel || sg->nvme_offset_bytes < 0)
               ? -EINVAL : 0;
}

/* File offsets of the sub-group's p, m, v. */
static void file_offs(const ZrPipe *p, const ZrSubGroupRow *s, int64_t off[3])
{
    int64_t o = s->nvme_offset_bytes, ab = zr_pipe_array_bytes(s->numel);
    if (p->lay.interleaved) { off[0] = o; off[1] = o + ab; off[2] = o + 2 * ab; }
    else { off[0] = p->lay.master + o; off[1] = p->lay.m + o; off[2] = p->lay.v + o; }
}

/* Queues the three reads (write = 0) or writes of sub-group s into / from buffer b. */
static int issue(ZrPipe *p, const ZrSubGroupRow *s, int b, int write)
{
    int64_t off[3], n = s->numel * 4;
    file_offs(p, s, off);
    for (int k = 0; k < 3; k++) {
        char *mem = p->buf[b] + k * p->ab;
        int rc = write ? zr_nvme_write_async(p->f, mem, n, off[k], &p->wr[b][k])
                       : zr_nvme_read_async(p->f, mem, n, off[k], &p->rd[b][k]);
        if (rc) return rc;
    }
    if (write) p->held[b] = 0;
    if (write) p->st.bytes_written += 3 * n;
    else p->st.bytes_read += 3 * n;
    return 0;
}

static void begin(ZrPipe *p)
{
    if (!p->fresh) return;
    memset(&p->st, 0, sizeof p->st);
    p->t_start = now();
    p->fresh = 0;
}

int zr_pipe_put(ZrPipe *p, const ZrSubGroupRow *sg, const float *master, const float *m,
                const float *v)
{
    if (check_sg(p, sg) || !master) return -EINVAL;
    int rc = zr_pipe_finish(p);
    if (rc) return rc;
    int64_t n = sg->numel * 4;
    char *b = p->buf[0];
    memcpy(b, master, (size_t)n);
    if (m) memcpy(b + p->ab, m, (size_t)n); else memset(b + p->ab, 0, (size_t)n);
    if (v) memcpy(b + 2 * p->ab, v, (size_t)n); else memset(b + 2 * p->ab, 0, (size_t)n);
    ZrPipeStats keep = p->st;             /* put/get are not part of a step */
    rc = issue(p, sg, 0, 1);
    int rc2 = wait3(p, p->wr[0], NULL);
    p->st = keep;
    p->fresh = 1;
    return rc ? rc : rc2;
}

int zr_pipe_get(ZrPipe *p, const ZrSubGroupRow *sg, float *master, float *m, float *v)
{
    if (check_sg(p, sg)) return -EINVAL;
    int rc = zr_pipe_finish(p);
    if (rc) return rc;
    ZrPipeStats keep = p->st;
    rc = issue(p, sg, 0, 0);
    int rc2 = wait3(p, p->rd[0], NULL);
    p->st = keep;
    p->fresh = 1;
    if (rc || rc2) return rc ? rc : rc2;
    int64_t n = sg->numel * 4;
    if (master) memcpy(master, p->buf[0], (size_t)n);
    if (m) memcpy(m, p->buf[0] + p->ab, (size_t)n);
    if (v) memcpy(v, p->buf[0] + 2 * p->ab, (size_t)n);
    return 0;
}

/* -EBUSY if buffer b holds a sub-group not yet swapped out (a schedule that reads ahead into the
** buffer in use: with the plan's SWAP_IN(i+1)-before-OPTIMIZER(i) order, buffer_count 1). */
static int read_into(ZrPipe *p, const ZrSubGroupRow *s, int b)
{
    if (p->held[b]) return -EBUSY;
    int rc = wait3(p, p->wr[b], &p->st.write_wait_s);     /* the buffer's previous sub-group */
    if (!rc) rc = wait3(p, p->rd[b], &p->st.read_wait_s);
    if (!rc) rc = issue(p, s, b, 0);
    if (!rc) p->held[b] = 1;
    return rc;
}

static int compute(ZrPipe *p, const ZrAdamCfg *c, const ZrSubGroupRow *s, int b,
                   const void *grad, ZrDtype gdt, void *p16, ZrDtype p16dt)
{
    int rc = wait3(p, p->rd[b], &p->st.read_wait_s);
    if (rc || !c) return rc;
    float *pm = (float *)p->buf[b], *mm = (float *)(p->buf[b] + p->ab);
    float *vm = (float *)(p->buf[b] + 2 * p->ab);
    for (int64_t k = 0; k < s->numel; k += ZR_PIPE_CHUNK) {
        int64_t len = s->numel - k < ZR_PIPE_CHUNK ? s->numel - k : ZR_PIPE_CHUNK;
        const char *g = (const char *)grad + (s->shard_offset + k) * dt_size(gdt);
        char *o = p16 ? (char *)p16 + (s->shard_offset + k) * dt_size(p16dt) : NULL;
        double t0 = now();
        rc = zr_adam_step(c, pm + k, mm + k, vm + k, g, gdt, o, p16dt, len);
        p->st.adam_s += now() - t0;
        if (rc) return rc;
        rc = zr_nvme_poll(p->f);                       /* refill the disk queue */
        if (rc < 0) return rc;
    }
    return 0;
}

static int buffer_of(const ZrPipe *p, const ZrSubGroupRow *sg)
{
    return (check_sg(p, sg) || sg->buffer < 0 || sg->buffer >= p->nbuf) ? -EINVAL : sg->buffer;
}

int zr_pipe_swap_in(ZrPipe *p, const ZrSubGroupRow *sg)
{
    int b = buffer_of(p, sg);
    if (b < 0) return b;
    begin(p);
    return read_into(p, sg, b);
}

int zr_pipe_optimize(ZrPipe *p, const ZrAdamCfg *c, const ZrSubGroupRow *sg, const void *grad,
                     ZrDtype gdt, void *p16, ZrDtype p16dt)
{
    int b = buffer_of(p, sg);
    if (b < 0 || (c && !grad)) return -EINVAL;
    begin(p);
    return compute(p, c, sg, b, grad, gdt, p16, p16dt);
}

int zr_pipe_swap_out(ZrPipe *p, const ZrSubGroupRow *sg)
{
    int b = buffer_of(p, sg);
    if (b < 0) return b;
    begin(p);
    return issue(p, sg, b, 1);
}

int zr_pipe_finish(ZrPipe *p)
{
    int rc = 0;
    for (int b = 0; b < p->nbuf; b++) {               /* wait for everything, keep the first error */
        int r1 = wait3(p, p->rd[b], &p->st.read_wait_s);
        int r2 = wait3(p, p->wr[b], &p->st.write_wait_s);
        if (!rc) rc = r1 ? r1 : r2;
    }
    int r3 = zr_nvme_wait_all(p->f);
    memset(p->held, 0, (size_t)p->nbuf);
    if (!p->fresh) p->st.total_s = now() - p->t_start;
    p->fresh = 1;
    return rc ? rc : r3;
}

int zr_pipe_step(ZrPipe *p, const ZrAdamCfg *c, const ZrSubGroupRow *sg, int n, const void *grad,
                 ZrDtype gdt, void *p16, ZrDtype p16dt)
{
    if (n < 0 || (n > 0 && !sg) || (c && !grad)) return -EINVAL;
    for (int i = 0; i < n; i++)
        if (check_sg(p, &sg[i])) return -EINVAL;
    int rc = zr_pipe_finish(p);
    if (rc) return rc;
    begin(p);
    int ahead = p->nbuf >= 3 ? p->nbuf - 2 : p->nbuf - 1;   /* read-ahead distance */
    int next = 0;
    for (int i = 0; i < n && !rc; i++) {
        /* Read ahead into free buffers; block for a buffer only for sub-group i itself. */
        while (!rc && next < n && next <= i + ahead) {
            int b = next % p->nbuf;
            if (next != i && busy3(p->wr[b])) break;
            rc = read_into(p, &sg[next], b);
            next++;
        }
        if (!rc) rc = compute(p, c, &sg[i], i % p->nbuf, grad, gdt, p16, p16dt);
        while (!rc && next < n && next <= i + ahead && !busy3(p->wr[next % p->nbuf]))
            rc = read_into(p, &sg[next], next % p->nbuf), next++;
        if (!rc) rc = issue(p, &sg[i], i % p->nbuf, 1);
    }
    int rc2 = zr_pipe_finish(p);
    return rc ? rc : rc2;
}

void zr_pipe_stats(const ZrPipe *p, ZrPipeStats *out) { *out = p->st; }
