"""zgen_plot.py - `zgen plot RUN.jsonl [RUN2.jsonl ...] -o loss.png`: the trainer's --log files
(runtime/zr_log.c: one JSON object per step with step, loss, lr, grad_norm, loss_scale, skipped,
tokens_per_s, ms, and val_loss / val_tokens on evaluation steps) drawn as three panels over the
step: train and validation loss, learning rate, tokens/s. Several runs share the axes.

read_log() is also zgen_log.py's reader, so both commands accept and refuse the same files.
Exit status: 0 ok, 1 a bad log, 2 usage.
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import tempfile


class LogError(Exception):
    """A log that cannot be read; the message is complete (file:line: error: ...)."""


def read_log(path):
    """The log's records (dicts, in file order) with JSON null (a non-finite value in the trainer)
    as NaN, so a plot shows a gap. Raises LogError naming file:line."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise LogError("%s: error: cannot read: %s" % (path, e.strerror or e))
    recs = []
    with f:
        for line, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise LogError("%s:%d: error: not a JSON line (%s); is this the trainer's --log "
                               "file?" % (path, line, getattr(e, "msg", e)))
            if not isinstance(obj, dict) or not isinstance(obj.get("step"), int) \
                    or isinstance(obj.get("step"), bool):
                raise LogError('%s:%d: error: not a step record (an object with an integer '
                               '"step"); is this the trainer\'s --log file?' % (path, line))
            for k, v in obj.items():
                if v is None:
                    obj[k] = math.nan
            recs.append(obj)
    if not recs:
        raise LogError("%s:1: error: empty log: no step records (did the run take a step?)" % path)
    return recs


def series(recs, key):
    """(steps, values) of the records that have key with a number."""
    xs, ys = [], []
    for r in recs:
        v = r.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            xs.append(r["step"])
            ys.append(float(v))
    return xs, ys


def labels(paths):
    """Short names for the legend: the file names, or their parent folders when those repeat."""
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) < len(names):
        names = [os.path.join(os.path.basename(os.path.dirname(os.path.abspath(p))),
                              os.path.basename(p)) for p in paths]
    return names


def plot(runs, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_lr, ax_tps) = plt.subplots(3, 1, sharex=True, figsize=(9, 9),
                                                 gridspec_kw={"height_ratios": [2, 1, 1]})
    for i, (name, recs) in enumerate(runs):
        c = "C%d" % (i % 10)
        ax_loss.plot(*series(recs, "loss"), color=c, lw=1.2, label="%s train" % name)
        vx, vy = series(recs, "val_loss")
        if vx:
            ax_loss.plot(vx, vy, color=c, ls="--", marker="o", ms=3, label="%s val" % name)
        ax_lr.plot(*series(recs, "lr"), color=c, lw=1.2, label=name)
        ax_tps.plot(*series(recs, "tokens_per_s"), color=c, lw=1.0, label=name)
    ax_loss.set_ylabel("loss")
    ax_loss.legend(fontsize=8)
    ax_lr.set_ylabel("learning rate")
    ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    ax_tps.set_ylabel("tokens/s")
    ax_tps.set_xlabel("step")
    for ax in (ax_loss, ax_lr, ax_tps):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    # written beside the target and renamed, so a failed plot leaves no partial PNG
    d = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(out) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=100)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(prog="zgen plot",
                                 description="Plot trainer --log files: loss and val_loss, lr, "
                                 "tokens/s against the step.")
    ap.add_argument("logs", nargs="+", metavar="RUN.jsonl")
    ap.add_argument("-o", dest="output", required=True, metavar="PLOT.png")
    a = ap.parse_args(argv)
    try:
        runs = list(zip(labels(a.logs), [read_log(p) for p in a.logs]))
    except LogError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    if importlib.util.find_spec("matplotlib") is None:
        sys.stderr.write("zgen plot: error: %s has no matplotlib: run `bash "
                         "scripts/install-deps.sh`, or set ZGEN_PYTHON\n" % sys.executable)
        return 1
    try:
        plot(runs, a.output)
    except OSError as e:
        sys.stderr.write("%s: error: cannot write: %s\n" % (a.output, e.strerror or e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
