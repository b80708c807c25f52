"""zgen_log.py - `zgen log RUN.jsonl --tensorboard DIR`: a trainer --log file as TensorBoard event
files (torch.utils.tensorboard), one scalar per log key, at the log's own step numbers, so a run
can be compared with others in TensorBoard. Keys the line lacks (val_loss outside evaluation steps,
loss_scale in logs that predate it) and non-finite values (null in the log) are not written.
Exit status: 0 ok, 1 a bad log, 2 usage.
"""
import argparse
import math
import os
import sys

from zgen_plot import LogError, read_log

# log key -> TensorBoard tag
TAGS = (("loss", "train/loss"), ("val_loss", "val/loss"), ("lr", "lr"),
        ("grad_norm", "grad_norm"), ("tokens_per_s", "tokens_per_s"), ("loss_scale", "loss_scale"))


def main(argv):
    ap = argparse.ArgumentParser(prog="zgen log",
                                 description="Convert a trainer --log file to TensorBoard events.")
    ap.add_argument("log", metavar="RUN.jsonl")
    ap.add_argument("--tensorboard", metavar="DIR", required=True,
                    help="the folder for the event files (tensorboard --logdir DIR)")
    a = ap.parse_args(argv)
    try:
        recs = read_log(a.log)
    except LogError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    try:
        os.makedirs(a.tensorboard, exist_ok=True)
    except OSError as e:
        sys.stderr.write("%s: error: cannot make the folder: %s\n" % (a.tensorboard,
                                                                      e.strerror or e))
        return 1
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        sys.stderr.write("zgen log: error: %s has no torch / tensorboard (%s): run `bash "
                         "scripts/install-deps.sh`, or set ZGEN_PYTHON\n" % (sys.executable, e))
        return 1
    w = SummaryWriter(log_dir=a.tensorboard)
    n = 0
    for r in recs:
        for key, tag in TAGS:
            v = r.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                w.add_scalar(tag, float(v), r["step"])
                n += 1
    w.close()
    print("zgen log: %s -> %s: %d steps, %d scalars" % (a.log, a.tensorboard, len(recs), n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
