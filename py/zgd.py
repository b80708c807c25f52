"""zgd.py - the document file (.zgd) of docs/DATA.md: read, write, and the trainer's row layout.

The layout functions here (pieces, plan_rows, fill_row, permutation) are the reference the C
trainer's tests compare against (runtime/zr_data.h), so they are written for plainness, one token
at a time, not for speed; zgen data only needs plan_rows' row count for its summary.
"""
import os
import struct
import tempfile

import numpy as np

MAGIC = 20261201
VERSION = 1
HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
PACK, PAD = 0, 1
LAYOUTS = {"pack": PACK, "pad": PAD}

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class ZgdError(Exception):
    """A file that is not a valid document file; the message names the file."""


class Zgd:
    """One document file in memory: doc_off int64 [n_docs + 1], tokens uint16/uint32 [n_tokens],
    mask uint8 [n_tokens], and the header's fields by name."""

    def __init__(self, doc_off, tokens, mask, layout=PACK, vocab=0, bos=-1, eos=-1, pad=-1,
                 seq_len=0, max_len=0, token_bytes=None):
        self.doc_off = np.asarray(doc_off, dtype=np.int64)
        self.mask = np.asarray(mask, dtype=np.uint8)
        if token_bytes is None:
            token_bytes = 2 if vocab <= 65536 else 4
        self.token_bytes = token_bytes
        self.tokens = np.asarray(tokens, dtype=np.uint16 if token_bytes == 2 else np.uint32)
        self.layout, self.vocab = layout, vocab
        self.bos, self.eos, self.pad = bos, eos, pad
        self.seq_len, self.max_len = seq_len, max_len

    @property
    def n_docs(self):
        return len(self.doc_off) - 1

    @property
    def n_tokens(self):
        return int(self.doc_off[-1])

    @property
    def trained(self):
        return int(self.mask.sum(dtype=np.int64))

    def doc(self, i):
        """(tokens, mask) of document i, views into the arrays."""
        a, b = int(self.doc_off[i]), int(self.doc_off[i + 1])
        return self.tokens[a:b], self.mask[a:b]

    def lengths(self):
        return np.diff(self.doc_off)

    def pad_token(self):
        """The id written at padding positions of a row: pad, else eos (docs/DATA.md, Rows)."""
        return self.pad if self.pad >= 0 else self.eos

    def header(self):
        h = [0] * HEADER_INTS
        h[0:8] = [MAGIC, VERSION, self.token_bytes, self.layout, self.vocab, self.bos, self.eos,
                  self.pad]
        for word, v in ((8, self.n_docs), (10, self.n_tokens), (12, self.trained)):
            h[word], h[word + 1] = v & 0xFFFFFFFF, v >> 32
        h[14], h[15] = self.seq_len, self.max_len
        # words 8..13 are halves of int64s: the low half is written as the unsigned value
        return struct.pack("<8i2I2I2I%di" % (HEADER_INTS - 14), *h)

    def check(self, name="<memory>"):
        """Raises ZgdError unless the arrays keep DATA.md's invariants."""
        off, n = self.doc_off, len(self.tokens)
        if len(off) < 1 or off[0] != 0 or off[-1] != n or len(self.mask) != n:
            raise ZgdError("%s: doc_off[0] must be 0 and doc_off[n_docs] the token count" % name)
        lens = np.diff(off)
        if len(lens) and lens.min() < 2:
            i = int(np.argmin(lens))
            raise ZgdError("%s: document %d has %d tokens (at least 2)" % (name, i, int(lens[i])))
        if n and self.mask.max() > 1:
            raise ZgdError("%s: mask values must be 0 or 1" % name)
        if len(lens) and self.mask[off[:-1]].any():
            raise ZgdError("%s: a document's first token is marked trained" % name)
        if self.vocab > 0 and n and int(self.tokens.max()) >= self.vocab:
            raise ZgdError("%s: token id %d >= vocabulary size %d"
                           % (name, int(self.tokens.max()), self.vocab))


def write(path, z):
    """Writes z to path atomically: a temporary file beside it, then os.replace; on any failure
    the temporary file is removed and path is left as it was."""
    z.check(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)         # mkstemp makes 0600; the file gets the usual mode
            os.umask(umask)
            os.fchmod(f.fileno(), 0o666 & ~umask)
            f.write(z.header())
            f.write(z.doc_off.astype("<i8").tobytes())
            f.write(z.tokens.astype("<u2" if z.token_bytes == 2 else "<u4").tobytes())
            f.write(z.mask.tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read(path):
    """Reads and validates a document file; ZgdError names what is wrong."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER_BYTES:
        raise ZgdError("%s: %d bytes, shorter than the header" % (path, len(data)))
    h = struct.unpack("<8i2I2I2I%di" % (HEADER_INTS - 14), data[:HEADER_BYTES])
    if h[0] != MAGIC or h[1] != VERSION:
        raise ZgdError("%s: magic %d version %d, not a document file (%d, %d)"
                       % (path, h[0], h[1], MAGIC, VERSION))
    tb = h[2]
    if tb not in (2, 4) or h[3] not in (PACK, PAD):
        raise ZgdError("%s: token_bytes %d layout %d" % (path, tb, h[3]))
    n_docs, n_tokens, trained = (h[8] | h[9] << 32, h[10] | h[11] << 32, h[12] | h[13] << 32)
    want = HEADER_BYTES + 8 * (n_docs + 1) + n_tokens * (tb + 1)
    if len(data) != want:
        raise ZgdError("%s: %d bytes, the header says %d" % (path, len(data), want))
    p = HEADER_BYTES
    off = np.frombuffer(data, "<i8", n_docs + 1, p)
    p += 8 * (n_docs + 1)
    tokens = np.frombuffer(data, "<u2" if tb == 2 else "<u4", n_tokens, p)
    p += tb * n_tokens
    mask = np.frombuffer(data, np.uint8, n_tokens, p)
    z = Zgd(off, tokens, mask, layout=h[3], vocab=h[4], bos=h[5], eos=h[6], pad=h[7],
            seq_len=h[14], max_len=h[15], token_bytes=tb)
    if n_docs and np.any(np.diff(off) < 0):
        raise ZgdError("%s: doc_off decreases" % path)
    z.check(path)
    if z.trained != trained:
        raise ZgdError("%s: header says %d trained targets, the mask has %d"
                       % (path, trained, z.trained))
    return z


# ---- Rows (docs/DATA.md "Rows"): the reference layout

def pieces(length, seq_len):
    """(start, n) of the pieces a document of `length` tokens is cut into for rows of seq_len:
    piece k starts at k*(seq_len-1), so consecutive pieces share one token, and the shared token
    is a target of the earlier piece only (a document's first token never is)."""
    if length <= seq_len:
        return [(0, length)]
    out, start = [], 0
    while True:
        n = min(seq_len, length - start)
        out.append((start, n))
        if start + n == length:
            return out
        start += seq_len - 1


def plan_rows(lengths, seq_len, layout, order=None):
    """One epoch's rows: a list of rows, each a list of segments (doc, start, n); the rest of a
    row after its segments is padding. order: the documents' order (default 0, 1, ...)."""
    rows, cur, fill = [], [], 0
    for d in range(len(lengths)) if order is None else order:
        for start, n in pieces(int(lengths[d]), seq_len):
            if cur and (layout == PAD or fill + n > seq_len):
                rows.append(cur)
                cur, fill = [], 0
            cur.append((d, start, n))
            fill += n
    if cur:
        rows.append(cur)
    return rows


def fill_row(z, row, seq_len):
    """tokens, pos, targets (lists of seq_len ints) of one planned row of document file z.
    targets[t] is the token at t+1 when t+1 is in the same segment and trained, else -1."""
    pad = z.pad_token()
    tokens, pos, targets = [pad] * seq_len, list(range(seq_len)), [-1] * seq_len
    t = 0
    for d, start, n in row:
        a = int(z.doc_off[d]) + start
        for i in range(n):
            tokens[t + i] = int(z.tokens[a + i])
            pos[t + i] = i
            if i + 1 < n and z.mask[a + i + 1]:
                targets[t + i] = int(z.tokens[a + i + 1])
        t += n
    for i in range(seq_len - t):       # padding is a segment of its own, positions from 0
        pos[t + i] = i
    return tokens, pos, targets


# ---- Shuffle (docs/DATA.md "Shuffle")

def splitmix64(state):
    """Returns (new state, output): the state advances by the golden gamma, the output mixes it."""
    state = (state + GOLDEN) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def permutation(n, seed, epoch):
    """The document order of `epoch`: Fisher-Yates from the end over 0..n-1, j = next % (i+1),
    with splitmix64 started at seed ^ (epoch * GOLDEN) (all modulo 2^64)."""
    p = list(range(n))
    state = (seed ^ (epoch * GOLDEN)) & MASK64
    for i in range(n - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def epoch_rows(z, seq_len, epoch, seed=0, shuffle=True):
    """The planned rows of one epoch (evaluation: epoch 0, shuffle False)."""
    order = permutation(z.n_docs, seed, epoch) if shuffle else None
    return plan_rows(z.lengths(), seq_len, z.layout, order)
