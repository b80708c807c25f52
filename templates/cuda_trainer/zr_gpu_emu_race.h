/*
** zr_gpu_emu_race.h — the GPU stand-in's race checker (included by zr_gpu_emu.cpp only; docs/
** CUDA_TRAINER.md, Races). Kept apart from the stand-in's streams and operations because it is a
** self-contained piece of bookkeeping: vector clocks that record/wait and the host's syncs carry,
** and a shadow of device bytes. Each operation declares the byte ranges it reads and writes; every
** access is checked, when its operation is enqueued, against the other streams' accesses to the
** same bytes, and one that no chain of record/wait/sync orders before it is a race (so the verdict
** does not depend on the scheduler's interleaving).
*/
#ifndef ZR_GPU_EMU_RACE_H
#define ZR_GPU_EMU_RACE_H
#include <stdint.h>
#include <stdio.h>

#include <map>
#include <string>
#include <vector>

typedef std::vector<uint64_t> Clock;   /* operations of stream i ordered before: clock[i] */

/* A byte range one operation reads or writes. */
struct Fp { uintptr_t a, b; int write; };

/* The race checker's shadow: disjoint byte segments, each with its last writer and, per stream, its
** last reader since that write. */
struct Acc { int stream = -1; uint64_t idx = 0; std::string what; };
struct Seg { uintptr_t end; Acc w; std::vector<Acc> r; };
typedef std::map<uintptr_t, Seg> Shadow;

static uint64_t at(const Clock &c, int i) { return (size_t)i < c.size() ? c[(size_t)i] : 0; }

static void join(Clock &c, const Clock &o)
{
    if (c.size() < o.size()) c.resize(o.size(), 0);
    for (size_t i = 0; i < o.size(); i++) if (o[i] > c[i]) c[i] = o[i];
}

/* Segment boundary at x: the segment containing x is cut in two. */
static void cut(Shadow &sh, uintptr_t x)
{
    auto it = sh.upper_bound(x);
    if (it == sh.begin()) return;
    --it;
    if (it->first == x || it->second.end <= x) return;
    Seg tail = it->second;
    it->second.end = x;
    sh.emplace(x, std::move(tail));
}

static bool ordered(const Acc &a, const Clock &vc) { return a.stream < 0 || at(vc, a.stream) >= a.idx; }

static std::string race_report(const std::string &b, int bw, const Acc &a, int aw, uintptr_t lo, uintptr_t hi)
{
    char buf[160];
    snprintf(buf, sizeof buf, " bytes [%#lx, %#lx)", (unsigned long)lo, (unsigned long)hi);
    return "emulated GPU: race: " + b + (bw ? " writes" : " reads") + buf + " that " + a.what +
           (aw ? " wrote" : " read") + ", and no record/wait/sync orders the two";
}

/* One access of the operation `what` (index n on stream `stream`, whose clock is vc) to [f.a, f.b):
** "" when it is ordered after every conflicting access, else the race, named. */
static std::string check_access(Shadow &sh, int stream, uint64_t n, const Clock &vc, const std::string &what,
                                const Fp &f)
{
    if (f.b <= f.a) return "";
    cut(sh, f.a);
    cut(sh, f.b);
    uintptr_t x = f.a;                   /* fill the gaps with fresh segments */
    while (x < f.b) {
        auto it = sh.lower_bound(x);
        uintptr_t next = it == sh.end() || it->first > f.b ? f.b : it->first;
        if (next > x) { sh.emplace(x, Seg{next, Acc(), {}}); x = next; continue; }
        x = it->second.end;
    }
    Acc me{stream, n, what};
    for (auto it = sh.lower_bound(f.a); it != sh.end() && it->first < f.b; ++it) {
        Seg &sg = it->second;
        if (!ordered(sg.w, vc)) return race_report(what, f.write, sg.w, 1, it->first, sg.end);
        if (f.write) {
            for (const Acc &r : sg.r)
                if (!ordered(r, vc)) return race_report(what, 1, r, 0, it->first, sg.end);
            sg.w = me;
            sg.r.clear();
        } else {
            if (sg.r.size() <= (size_t)stream) sg.r.resize((size_t)stream + 1);
            sg.r[(size_t)stream] = me;
        }
    }
    return "";
}
#endif
