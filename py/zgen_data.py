"""zgen_data.py - `zgen data IN.jsonl -o OUT.zgd --tokenizer DIR`: JSONL records tokenized with the
model's own Hugging Face tokenizer into the document file the trainer reads (docs/DATA.md).

Records are read and checked in chunks and each chunk is tokenized in one batch call; a batch call
of a fast tokenizer gives the same ids as one call per string, so the result is the per-record
contract of DATA.md. Once an input error is found the rest is only checked (no tokenizing), so one
run reports the errors of the whole file. Exit status: 0 ok, 1 input errors, 2 usage.
"""
import argparse
import json
import os
import re
import signal
import sys
import time

import zgd

CHUNK = 1024            # records per tokenizer batch
MAX_ERRORS = 20         # printed; the rest are counted
PROGRESS_MIN = 2000     # records before a progress bar is worth drawing
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
ROLES = ("system", "user", "assistant", "tool")
SHAPES = ('one JSON object per line: {"text": ...}, {"prompt": ..., "response": ...} '
          'or {"messages": [{"role": ..., "content": ...}, ...]}')


class InputError(Exception):
    """An error in one record; main() adds the file:line."""


class Fatal(Exception):
    """An error that stops the run; the message is complete (path: error: ...)."""


def jtype(v):
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")


def need_str(obj, key, where=""):
    v = obj[key]
    if not isinstance(v, str):
        raise InputError('%s"%s" is %s, not a string' % (where, key, jtype(v)))
    return v


def parse_record(obj):
    """(kind, payload) of one JSON value: ("text", T), ("pr", (P, R)), ("chat", messages)."""
    if not isinstance(obj, dict):
        raise InputError("the record is %s, not an object (%s)" % (jtype(obj), SHAPES))
    kinds = [k for k, keys in (("text", ("text",)), ("prompt/response", ("prompt", "response")),
                               ("messages", ("messages",))) if any(x in obj for x in keys)]
    if not kinds:
        keys = ", ".join('"%s"' % k for k in list(obj)[:6]) or "none"
        raise InputError("the record has no \"text\", \"prompt\"/\"response\" or \"messages\" key "
                         "(its keys: %s; %s)" % (keys, SHAPES))
    if len(kinds) > 1:
        raise InputError("the record has keys of more than one kind (%s): keep one per record"
                         % ", ".join(kinds))
    if kinds[0] == "text":
        return "text", need_str(obj, "text")
    if kinds[0] == "prompt/response":
        for k in ("prompt", "response"):
            if k not in obj:
                raise InputError('"%s" without "%s" (a prompt/response record needs both)'
                                 % ("response" if k == "prompt" else "prompt", k))
        p, r = need_str(obj, "prompt"), need_str(obj, "response")
        if not r.strip():
            raise InputError('empty "response": nothing to train on (fill it or drop the record)')
        return "pr", (p, r)
    msgs = obj["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise InputError('"messages" must be a non-empty array of {"role", "content"} objects')
    for i, m in enumerate(msgs):
        w = "messages[%d]: " % i
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise InputError('%snot a {"role": ..., "content": ...} object' % w)
        role, content = need_str(m, "role", w), need_str(m, "content", w)
        if role not in ROLES:
            raise InputError('%sunknown role "%s" (%s)' % (w, role[:40], ", ".join(ROLES)))
        if role == "assistant" and not content.strip():
            raise InputError("%sempty assistant turn: nothing to train on (fill it or drop the "
                             "record)" % w)
    return "chat", msgs


# ---- Tokenizing one chunk

class Tokenizer:
    """The Hugging Face tokenizer and the ids the file's header records."""

    def __init__(self, path):
        if not os.path.isdir(path):
            raise Fatal("%s: error: no such folder (--tokenizer takes the model's Hugging Face "
                        "folder: tokenizer.json or tokenizer.model, tokenizer_config.json)" % path)
        if not any(os.path.exists(os.path.join(path, f)) for f in TOKENIZER_FILES):
            raise Fatal("%s: error: no tokenizer in this folder (none of %s; give the model's "
                        "Hugging Face folder)" % (path, ", ".join(TOKENIZER_FILES)))
        import warnings
        try:
            import transformers
        except ImportError as e:
            raise Fatal("zgen data: error: %s has no transformers (%s): run `bash "
                        "scripts/install-deps.sh`, or set ZGEN_PYTHON" % (sys.executable, e))
        transformers.logging.set_verbosity_error()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as e:          # transformers raises OSError, ValueError, KeyError, ...
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            first = re.sub(r"\s*Check ?out 'https?://\S*' for available files\.", "", first)
            raise Fatal("%s: error: cannot load the tokenizer: %s (the folder needs the model's "
                        "tokenizer files: tokenizer.json or tokenizer.model, tokenizer_config.json)"
                        % (path, first[:300]))
        t = self.tok
        if t.eos_token_id is None:
            raise Fatal('%s: error: the tokenizer has no eos token (set "eos_token" in '
                        "tokenizer_config.json)" % path)
        self.path = path
        self.eos = t.eos_token_id
        self.bos = -1 if t.bos_token_id is None else t.bos_token_id
        self.pad = -1 if t.pad_token_id is None else t.pad_token_id
        self.vocab = len(t)
        self.token_bytes = 2 if self.vocab <= 65536 else 4
        self.has_template = bool(getattr(t, "chat_template", None))

    def ids(self, texts, special):
        if not texts:
            return []
        return self.tok(texts, add_special_tokens=special, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]

    def render(self, msgs, gen):
        # apply_chat_template reads a list whose first item is a list as a batch, and cannot
        # look at an empty conversation's first item: the empty one goes as a batch of one
        if not msgs:
            return self.tok.apply_chat_template([[]], tokenize=False, add_generation_prompt=gen)[0]
        return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)


def chat_docs(tk, recs):
    """[(tokens, mask) or InputError] for chat records: the whole conversation rendered once, and
    for each assistant turn k the renderings of messages[:k] with the generation prompt (where the
    turn starts) and of messages[:k+1] (where it ends); both must be token prefixes of the whole,
    else the template is not prefix-stable there and the turn's tokens are not known."""
    texts, plans = [], []
    for msgs in recs:
        try:
            strs = [tk.render(msgs, False)]
            for k, m in enumerate(msgs):
                if m["role"] == "assistant":
                    strs += [tk.render(msgs[:k], True), tk.render(msgs[:k + 1], False)]
        except Exception as e:          # jinja2 TemplateError, or raise_exception() in a template
            plans.append(InputError("chat template: %s" % (str(e).splitlines() or [""])[0][:300]))
            continue
        # a rendering equal to the whole (the last turn of a conversation that ends with it)
        # is tokenized once
        refs = []
        for x in strs:
            refs.append(refs[0] if refs and x == strs[0] else len(texts))
            if refs[-1] == len(texts):
                texts.append(x)
        plans.append(refs)
    ids = tk.ids(texts, False)
    out = []
    for msgs, plan in zip(recs, plans):
        if isinstance(plan, InputError):
            out.append(plan)
            continue
        full = ids[plan[0]]
        mask = [0] * len(full)
        turns = [k for k, m in enumerate(msgs) if m["role"] == "assistant"]
        err = None
        for i, k in enumerate(turns):
            pre, post = ids[plan[1 + 2 * i]], ids[plan[2 + 2 * i]]
            if full[:len(post)] != post or post[:len(pre)] != pre:
                err = InputError(
                    "messages[%d]: the chat template is not prefix-stable: the tokens of the "
                    "conversation up to this assistant turn are not a prefix of the whole "
                    "conversation's, so the turn's tokens cannot be told apart (zgen data needs a "
                    "template that renders a turn the same whatever follows; write the record "
                    "as prompt/response instead)" % k)
                break
            if len(post) == len(pre):
                err = InputError("messages[%d]: the chat template renders this assistant turn "
                                 "as no tokens" % k)
                break
            for t in range(len(pre), len(post)):
                mask[t] = 1
        out.append(err if err else (full, mask))
    return out


def chunk_docs(tk, recs):
    """(tokens, mask) or InputError for each (kind, payload) of recs, in order. The first token of
    a document is never a target, whatever its kind."""
    out = [None] * len(recs)
    by = {"text": [], "pr": [], "chat": []}
    for i, (kind, payload) in enumerate(recs):
        by[kind].append(i)
    eos = tk.eos
    texts = tk.ids([recs[i][1] for i in by["text"]], True)
    for i, ids in zip(by["text"], texts):
        out[i] = (ids + [eos], [0] + [1] * len(ids))
    prompts = tk.ids([recs[i][1][0] for i in by["pr"]], True)
    resps = tk.ids([recs[i][1][1] for i in by["pr"]], False)
    for i, p, r in zip(by["pr"], prompts, resps):
        out[i] = (p + r + [eos], [0] * len(p) + [1] * (len(r) + 1))
    for i, d in zip(by["chat"], chat_docs(tk, [recs[i][1] for i in by["chat"]])):
        out[i] = d
    for d in out:
        if not isinstance(d, InputError) and d[1]:
            d[1][0] = 0
    return out


# ---- The run

class Run:
    """Counts, the documents so far (numpy chunks), and the errors, for one input file."""

    def __init__(self, args, tk):
        self.a, self.tk = args, tk
        self.kinds = {"text": 0, "pr": 0, "chat": 0}
        self.blank = self.dropped = self.truncated = 0
        self.tok_parts, self.mask_parts, self.lengths = [], [], []
        self.n_errors = 0
        self.template_reported = False
        self.bar = None

    def error(self, line, msg):
        self.n_errors += 1
        if self.n_errors <= MAX_ERRORS:
            if self.bar:
                self.bar.clear()
            sys.stderr.write("%s:%d: error: %s\n" % (self.a.input, line, msg))

    def add_chunk(self, lines, recs):
        if self.n_errors:
            return
        import numpy as np
        toks, mask = [], []
        docs = chunk_docs(self.tk, recs)
        errs = [(ln, d) for ln, d in zip(lines, docs) if isinstance(d, InputError)]
        for ln, e in errs:
            self.error(ln, str(e))
        if errs:
            return
        for t, m in docs:
            if self.a.max_len and len(t) > self.a.max_len:
                t, m = t[:self.a.max_len], m[:self.a.max_len]
                self.truncated += 1
            if not any(m):
                self.dropped += 1
                continue
            toks += t
            mask += m
            self.lengths.append(len(t))
        self.tok_parts.append(np.array(toks, dtype=np.uint32))
        self.mask_parts.append(np.array(mask, dtype=np.uint8))

    def read(self, f, size):
        self.bar = bar = Progress(size) if sys.stderr.isatty() and not self.a.quiet else None
        lines, recs, n, done = [], [], 0, 0
        for line, raw in enumerate(f, 1):
            done += len(raw)
            if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                self.blank += 1
                continue
            n += 1
            rec = self.parse(line, raw)
            if rec is not None:
                self.kinds[rec[0]] += 1
                lines.append(line)
                recs.append(rec)
            if len(recs) == CHUNK:
                self.add_chunk(lines, recs)
                lines, recs = [], []
                if bar and n > PROGRESS_MIN:
                    bar.show(done, n)
        self.add_chunk(lines, recs)
        if bar:
            bar.clear()
        return n, line if n else 1

    def parse(self, line, raw):
        try:
            try:
                s = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError("not UTF-8 text (byte %d of the line)" % (e.start + 1))
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as e:
                raise InputError("invalid JSON: %s at column %d (each line must be one "
                                 "complete JSON object)" % (e.msg, e.colno))
            kind, payload = parse_record(obj)
        except InputError as e:
            self.error(line, str(e))
            return None
        if kind == "chat" and not self.tk.has_template:
            if not self.template_reported:
                self.error(line, "a messages record, but the tokenizer (%s) has no chat_template "
                           "(add the model's template to its tokenizer_config.json, or write the "
                           "records as prompt/response); later messages records not reported"
                           % self.tk.path)
                self.template_reported = True
            return None
        return kind, payload


class Progress:
    """A one-line bar on stderr, redrawn at most ten times a second."""

    def __init__(self, size):
        self.size, self.last, self.drawn = max(size, 1), 0.0, False

    def show(self, done, n):
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last, self.drawn = now, True
        frac = min(done / self.size, 1.0)
        w = 30
        sys.stderr.write("\rzgen data: [%-*s] %3d%% %d records" % (w, "#" * int(frac * w),
                                                                  int(frac * 100), n))
        sys.stderr.flush()

    def clear(self):
        """Erases the bar, so an error message or the summary starts on a clean line."""
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.drawn = False


def summary(a, run, z):
    k = run.kinds
    n_rec = k["text"] + k["pr"] + k["chat"]
    parts = ["%d %s" % (k[x], name) for x, name in (("text", "text"), ("pr", "prompt/response"),
                                                    ("chat", "messages")) if k[x]]
    layout = "pad" if z.layout == zgd.PAD else "pack"
    pct = 100.0 * z.trained / max(z.n_tokens, 1)
    out = ["zgen data: %s -> %s (%s, %d-bit tokens, vocabulary %d)"
           % (a.input, a.output, layout, 8 * z.token_bytes, z.vocab),
           "  records    %d: %s%s" % (n_rec, ", ".join(parts),
                                       ", %d blank lines skipped" % run.blank if run.blank else ""),
           "  documents  %d, %d tokens, %d trained targets (%.1f%%)"
           % (z.n_docs, z.n_tokens, z.trained, pct),
           "  dropped    %d (no trained target)" % run.dropped,
           "  truncated  %d (%s)" % (run.truncated, "--max-len %d" % a.max_len if a.max_len
                                     else "no --max-len")]
    if a.seq_len:
        lens = z.lengths()
        rows = zgd.plan_rows(lens, a.seq_len, z.layout)
        split = [int(x) for x in lens if x > a.seq_len]
        n_pieces = sum(len(zgd.pieces(x, a.seq_len)) for x in split)
        fill = 100.0 * (len(rows) * a.seq_len - sum(sum(s[2] for s in r) for r in rows)) \
            / max(len(rows) * a.seq_len, 1)
        out.append("  rows       %d of %d tokens (%s, unshuffled), %.1f%% padding; %d documents "
                   "longer than a row, split into %d pieces"
                   % (len(rows), a.seq_len, layout, fill, len(split), n_pieces))
    else:
        out.append("  rows       (give --seq-len N, the spec's train.seq_len, for the row count)")
    print("\n".join(out))


def positive(lo):
    def conv(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError("not an integer: %s" % s)
        if v < lo or v >= 1 << 31:
            raise argparse.ArgumentTypeError("%s: must be at least %d" % (s, lo))
        return v
    return conv


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="zgen data", description="JSONL records -> a document file for the trainer's --data "
        "/ --val, tokenized with the model's Hugging Face tokenizer (docs/DATA.md).")
    ap.add_argument("input", metavar="IN.jsonl")
    ap.add_argument("-o", dest="output", metavar="OUT.zgd", required=True)
    ap.add_argument("--tokenizer", metavar="DIR", required=True,
                    help="the model's Hugging Face folder (read locally, never downloaded)")
    ap.add_argument("--seq-len", type=positive(2), default=0, metavar="N",
                    help="the spec's train.seq_len: the summary counts rows of N tokens")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--pack", dest="layout", action="store_const", const=zgd.PACK,
                   help="documents end to end in rows (default)")
    g.add_argument("--pad", dest="layout", action="store_const", const=zgd.PAD,
                   help="one document per row, the rest padding")
    ap.add_argument("--max-len", type=positive(2), default=0, metavar="N",
                    help="cut documents to their first N tokens")
    ap.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    a = ap.parse_args(argv)
    if a.layout is None:
        a.layout = zgd.PACK
    return a


def run(a):
    out_dir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK | os.X_OK):
        raise Fatal("%s: error: cannot write there (%s is not a writable folder)"
                    % (a.output, out_dir))
    if os.path.exists(a.output) and os.path.exists(a.input) and os.path.samefile(a.input, a.output):
        raise Fatal("%s: error: -o names the input file" % a.output)
    try:
        f = open(a.input, "rb")
        size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise Fatal("%s: error: cannot read: %s" % (a.input, e.strerror or e))
    with f:
        tk = Tokenizer(a.tokenizer)
        r = Run(a, tk)
        n, last = r.read(f, size)
    if not n:
        r.error(1, "no records (the file is empty or holds only blank lines; %s)" % SHAPES)
    elif not r.n_errors and not r.lengths:
        r.error(last, "all %d records were dropped: none has a trained target left%s"
                % (n, " after --max-len %d (raise it)" % a.max_len if a.max_len else ""))
    if r.n_errors:
        if r.n_errors > MAX_ERRORS:
            sys.stderr.write("%s: %d more errors not shown\n" % (a.input, r.n_errors - MAX_ERRORS))
        sys.stderr.write("%d error%s; nothing written\n" % (r.n_errors, "" if r.n_errors == 1
                                                            else "s"))
        return 1
    import numpy as np
    off = np.zeros(len(r.lengths) + 1, dtype=np.int64)
    np.cumsum(r.lengths, out=off[1:])
    tokens = np.concatenate(r.tok_parts)
    if int(tokens.max()) >= tk.vocab:       # checked before a 16-bit file could wrap it
        raise Fatal("%s: error: the tokenizer gave id %d, not below its len() %d"
                    % (a.tokenizer, int(tokens.max()), tk.vocab))
    z = zgd.Zgd(off, tokens, np.concatenate(r.mask_parts), layout=a.layout,
                vocab=tk.vocab, bos=tk.bos, eos=tk.eos, pad=tk.pad, seq_len=a.seq_len,
                max_len=a.max_len, token_bytes=tk.token_bytes)
    try:
        zgd.write(a.output, z)
    except OSError as e:
        raise Fatal("%s: error: cannot write: %s" % (a.output, e.strerror or e))
    if not a.quiet:
        summary(a, r, z)
    return 0


def main(argv):
    a = parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"          # a tokenizer folder is read, never fetched
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # SIGTERM as an exception, so zgd.write's cleanup runs and no temporary file is left
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(a)
    except Fatal as e:
        sys.stderr.write("%s\n" % e)
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("zgen data: interrupted; nothing written\n")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
