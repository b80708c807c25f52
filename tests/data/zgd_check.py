"""zgd_check.py - the independent side of tests/data/t_zgen_data.sh.

  zgd_check.py contract LIST   LIST: lines NAME TOKDIR IN.jsonl OUT.zgd pack|pad SEQ_LEN MAX_LEN
      (tab-separated, 0 for none); for each, parses OUT.zgd with its own reader (struct, not
      py/zgd.py) and compares it record by record with DATA.md's contract computed here with
      transformers directly: text and prompt/response by tokenizer calls one string at a time;
      messages by apply_chat_template with a copy of the template whose assistant part is
      wrapped in {% generation %} tags, so the trained tokens come from transformers' own
      assistant mask (character offsets), not from prefix renderings. With a SEQ_LEN it adds the
      row count it expects (its own count) for the test to compare with zgen data's summary.
      One line per file: ok|fail, NAME, the counts or the first difference.
  zgd_check.py genprompt TOKDIR IN.jsonl OUT.zgd
                          messages made with a template that has a generation prompt: trained
                          are the assistant turns' content and eos, not their header
  zgd_check.py rows       py/zgd.py's row layout against a hand-worked example (below)
  zgd_check.py shuffle    py/zgd.py's splitmix64 and permutation against known values and an
                          implementation of the recipe written here
genprompt, rows and shuffle print one line and exit 0 when everything matches, else the first difference and 1.
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Mismatch(Exception):
    """A difference between the file and the contract."""


def fail(msg):
    print("MISMATCH: %s" % msg)
    sys.exit(1)


def read_zgd(path):
    data = open(path, "rb").read()
    h = struct.unpack("<256i", data[:1024])
    n_docs = (h[8] & 0xFFFFFFFF) | (h[9] << 32)
    n_tok = (h[10] & 0xFFFFFFFF) | (h[11] << 32)
    trained = (h[12] & 0xFFFFFFFF) | (h[13] << 32)
    tb = h[2]
    want = 1024 + 8 * (n_docs + 1) + n_tok * tb + n_tok
    if len(data) != want:
        raise Mismatch("%s: %d bytes, expected %d from the header" % (path, len(data), want))
    off = struct.unpack_from("<%dq" % (n_docs + 1), data, 1024)
    p = 1024 + 8 * (n_docs + 1)
    toks = struct.unpack_from("<%d%s" % (n_tok, "H" if tb == 2 else "I"), data, p)
    mask = data[p + tb * n_tok:]
    docs = [(list(toks[off[i]:off[i + 1]]), list(mask[off[i]:off[i + 1]])) for i in range(n_docs)]
    return h, n_docs, n_tok, trained, off, docs


def expected_docs(tok, path, max_len):
    gen_tok = None
    eos = tok.eos_token_id
    docs = []
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        r = json.loads(line)
        if "text" in r:
            t = tok(r["text"]).input_ids + [eos]
            m = [0] + [1] * (len(t) - 1)
        elif "prompt" in r:
            p = tok(r["prompt"]).input_ids
            q = tok(r["response"], add_special_tokens=False).input_ids
            t = p + q + [eos]
            m = [0] * len(p) + [1] * (len(q) + 1)
        else:
            if gen_tok is None:
                gen_tok = generation_copy(tok)
            out = gen_tok.apply_chat_template(r["messages"], tokenize=True, return_dict=True,
                                              return_assistant_tokens_mask=True)
            t, m = list(out["input_ids"]), list(out["assistant_masks"])
            m[0] = 0
        if max_len and len(t) > max_len:
            t, m = t[:max_len], m[:max_len]
        if sum(m) == 0:
            continue
        docs.append((t, m))
    return docs


def generation_copy(tok):
    """The tokenizer with tests/data/tiny_hf.py's template, its assistant part in generation tags
    (the rendered text is the same)."""
    import copy
    assistant = "{{ ' ' + m['content'] + eos_token }}"
    if assistant not in tok.chat_template:
        raise Mismatch("the template is not tiny_hf.py's; this check knows only that one")
    g = copy.deepcopy(tok)
    g.chat_template = tok.chat_template.replace(
        assistant, "{% generation %}" + assistant + "{% endgeneration %}")
    return g


def count_rows(lengths, s, layout):
    """Rows of s tokens: a document of L > s tokens takes ceil((L-1)/(s-1)) pieces, all but the
    last s tokens long; pad gives each piece a row, pack starts a row when a piece overflows."""
    n, fill = 0, s
    for L in lengths:
        k = 1 if L <= s else -(-(L - 1) // (s - 1))
        sizes = [s] * (k - 1) + [L - (k - 1) * (s - 1)]
        for x in sizes:
            if layout == "pad" or fill + x > s:
                n, fill = n + 1, 0
            fill += x
    return n


def check_one(tok, inp, path, layout, seq_len, max_len):
    """The result line of one file, or raises Mismatch."""
    h, n_docs, n_tok, trained, off, docs = read_zgd(path)
    exp = expected_docs(tok, inp, max_len)
    want_tb = 2 if len(tok) <= 65536 else 4
    pad = -1 if tok.pad_token_id is None else tok.pad_token_id
    bos = -1 if tok.bos_token_id is None else tok.bos_token_id
    fields = [("magic", h[0], 20261201), ("version", h[1], 1), ("token_bytes", h[2], want_tb),
              ("layout", h[3], {"pack": 0, "pad": 1}[layout]), ("vocab", h[4], len(tok)),
              ("bos", h[5], bos), ("eos", h[6], tok.eos_token_id), ("pad", h[7], pad),
              ("n_docs", n_docs, len(exp)), ("n_tokens", n_tok, sum(len(t) for t, _ in exp)),
              ("trained", trained, sum(sum(m) for _, m in exp)), ("seq_len", h[14], seq_len),
              ("max_len", h[15], max_len), ("words 16..255", list(h[16:]), [0] * 240)]
    for name, got, want in fields:
        if got != want:
            raise Mismatch("header %s: %r, expected %r" % (name, got, want))
    if off[0] != 0 or any(off[i + 1] - off[i] < 2 for i in range(n_docs)):
        raise Mismatch("doc_off: not from 0 or a document under 2 tokens")
    for i, ((t, m), (et, em)) in enumerate(zip(docs, exp)):
        if t != et:
            raise Mismatch("document %d tokens %s, expected %s" % (i, t[:40], et[:40]))
        if m != em:
            raise Mismatch("document %d mask %s, expected %s" % (i, m[:60], em[:60]))
    msg = "%d documents, %d tokens, %d trained, %d-bit" % (n_docs, n_tok, trained, 8 * h[2])
    if seq_len:
        msg += ", rows %d" % count_rows([len(t) for t, _ in exp], seq_len, layout)
    return msg


def contract(argv):
    """argv[0]: a file of tab-separated lines NAME TOKDIR IN.jsonl OUT.zgd LAYOUT SEQ_LEN MAX_LEN;
    prints "ok<TAB>NAME<TAB>result" or "fail<TAB>NAME<TAB>MISMATCH: ..." per line."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import transformers
    transformers.logging.set_verbosity_error()
    toks = {}
    for line in open(argv[0]):
        name, tokdir, inp, path, layout, seq_len, max_len = line.rstrip("\n").split("\t")
        if tokdir not in toks:
            toks[tokdir] = transformers.AutoTokenizer.from_pretrained(tokdir, local_files_only=True)
        try:
            res = "ok\t%s\t%s" % (name, check_one(toks[tokdir], inp, path, layout, int(seq_len),
                                                   int(max_len)))
        except Mismatch as e:
            res = "fail\t%s\tMISMATCH: %s" % (name, e)
        print(res)


def genprompt(argv):
    """argv: TOKDIR IN.jsonl OUT.zgd, made with a template whose generation prompt is the assistant
    header: each document's trained tokens must decode to the assistant turns' ' ' + content +
    eos, the header of each turn not among them."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import transformers
    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(argv[0], local_files_only=True)
    recs = [json.loads(line) for line in open(argv[1]) if line.strip()]
    docs = read_zgd(argv[2])[5]
    if len(docs) != len(recs):
        fail("%d documents for %d records" % (len(docs), len(recs)))
    for i, (r, (t, m)) in enumerate(zip(recs, docs)):
        got = tok.decode([x for x, k in zip(t, m) if k], skip_special_tokens=False,
                         clean_up_tokenization_spaces=False)
        want = "".join(" " + x["content"] + tok.eos_token for x in r["messages"]
                       if x["role"] == "assistant")
        if got != want:
            fail("document %d trains %r, expected %r" % (i, got, want))
    print("%d conversations: the assistant turns' content and eos, no header" % len(docs))


# ---- rows: the hand-worked example (seq_len 4, P the padding id)
#   A = 10 11          mask 0 1          (2 tokens, the minimum)
#   D = 40 41          mask 0 1
#   B = 20 .. 25       mask 0 1 1 1 0 1  (6 > 4: pieces 20..23 and 23..25)
#   C = 30 31 32       mask 0 0 1
#   E = 50 .. 53       mask 0 1 1 1      (exactly one row)
#   F = 60 .. 64       mask 0 1 1 1 1    (5: pieces 60..63 and 63 64)
DOCS = [([10, 11], [0, 1]), ([40, 41], [0, 1]), ([20, 21, 22, 23, 24, 25], [0, 1, 1, 1, 0, 1]),
        ([30, 31, 32], [0, 0, 1]), ([50, 51, 52, 53], [0, 1, 1, 1]),
        ([60, 61, 62, 63, 64], [0, 1, 1, 1, 1])]
P = -7          # replaced by the file's padding id


def R(tokens, pos, targets):
    """A row as fill_row returns it."""
    return tokens, pos, targets


PACK_ROWS = [
    R([10, 11, 40, 41], [0, 1, 0, 1], [11, -1, 41, -1]),      # A and D share a row
    R([20, 21, 22, 23], [0, 1, 2, 3], [21, 22, 23, -1]),      # B's first piece: a row of its own
    R([23, 24, 25, P], [0, 1, 2, 0], [-1, 25, -1, -1]),       # B's second: 24 is masked
    R([30, 31, 32, P], [0, 1, 2, 0], [-1, 32, -1, -1]),       # C does not fit after B's rest
    R([50, 51, 52, 53], [0, 1, 2, 3], [51, 52, 53, -1]),
    R([60, 61, 62, 63], [0, 1, 2, 3], [61, 62, 63, -1]),
    R([63, 64, P, P], [0, 1, 0, 1], [64, -1, -1, -1]),
]
PAD_ROWS = [
    R([10, 11, P, P], [0, 1, 0, 1], [11, -1, -1, -1]),
    R([40, 41, P, P], [0, 1, 0, 1], [41, -1, -1, -1]),
    PACK_ROWS[1], PACK_ROWS[2], PACK_ROWS[3], PACK_ROWS[4], PACK_ROWS[5], PACK_ROWS[6],
]
# order C, A, D (pack): C alone, then A and D together
ORDER_ROWS = [R([30, 31, 32, P], [0, 1, 2, 0], [-1, 32, -1, -1]), PACK_ROWS[0]]


def rows(argv):
    import tempfile
    sys.path.insert(0, os.path.join(ROOT, "py"))
    import zgd
    off = [0]
    for t, _ in DOCS:
        off.append(off[-1] + len(t))
    toks = [x for t, _ in DOCS for x in t]
    mask = [x for _, m in DOCS for x in m]
    n_checked = 0
    for pad_id, eos in ((7, 2), (-1, 3)):          # no pad id: padding is eos
        padv = pad_id if pad_id >= 0 else eos
        for layout, want, order in ((zgd.PACK, PACK_ROWS, None), (zgd.PAD, PAD_ROWS, None),
                                    (zgd.PACK, ORDER_ROWS, [3, 0, 1])):
            z = zgd.Zgd(off, toks, mask, layout=layout, vocab=100, bos=1, eos=eos, pad=pad_id)
            with tempfile.TemporaryDirectory() as d:   # and through the file
                zgd.write(os.path.join(d, "x.zgd"), z)
                z = zgd.read(os.path.join(d, "x.zgd"))
                h = read_zgd(os.path.join(d, "x.zgd"))
                if h[0][3] != layout or h[0][7] != pad_id or h[1] != 6 or h[3] != 14:
                    fail("header of the written example: %s" % (h[0][:16],))
            plan = zgd.plan_rows(z.lengths(), 4, layout, order)
            got = [zgd.fill_row(z, r, 4) for r in plan]
            exp = [([padv if x == P else x for x in tk], pos, tg) for tk, pos, tg in want]
            if [tuple(map(list, g)) for g in got] != [tuple(map(list, e)) for e in exp]:
                fail("layout %d pad %d order %s:\n got %s\nwant %s" % (layout, pad_id, order,
                                                                      got, exp))
            if order is None and sum(t >= 0 for g in got for t in g[2]) != 14:
                fail("targets: every trained target once (14)")
            n_checked += len(got)
    print("%d rows as worked by hand" % n_checked)


# ---- shuffle: splitmix64 from state 0 gives the published first outputs of the generator
SPLITMIX0 = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]


def own_permutation(n, seed, epoch):
    m = (1 << 64) - 1
    x = (seed ^ (epoch * 0x9E3779B97F4A7C15)) & m
    p = list(range(n))
    i = n - 1
    while i > 0:
        x = (x + 0x9E3779B97F4A7C15) & m
        z = x
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & m
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & m
        z ^= z >> 31
        j = z % (i + 1)
        p[i], p[j] = p[j], p[i]
        i -= 1
    return p


def shuffle(argv):
    sys.path.insert(0, os.path.join(ROOT, "py"))
    import zgd
    s, outs = 0, []
    for _ in range(4):
        s, r = zgd.splitmix64(s)
        outs.append(r)
    if outs != SPLITMIX0:
        fail("splitmix64 from 0: %s" % [hex(x) for x in outs])
    for n, seed, epoch in ((1, 0, 0), (2, 5, 0), (10, 0, 0), (10, 0, 1), (1000, 1234, 7),
                           (97, (1 << 64) - 1, 3)):
        p = zgd.permutation(n, seed, epoch)
        if sorted(p) != list(range(n)) or p != own_permutation(n, seed, epoch):
            fail("permutation(%d, %d, %d) = %s" % (n, seed, epoch, p[:12]))
    if zgd.permutation(50, 1, 0) == zgd.permutation(50, 1, 1):
        fail("epochs 0 and 1 give the same order")
    print("splitmix64 and permutations as the recipe says")


if __name__ == "__main__":
    {"contract": contract, "genprompt": genprompt, "rows": rows,
     "shuffle": shuffle}[sys.argv[1]](sys.argv[2:])
