#!/usr/bin/env python3
"""make_corpus.py — a learnable synthetic corpus for the demo and the trainer tests.

Byte-level tokens (vocab 256) of English-like sentences drawn from a small probabilistic grammar with
a fixed seed: the text has short-range structure (spelling, word order, agreement) that a tiny GPT-2
learns within a few hundred steps, so a falling loss is visible in about a minute on a CPU. Written
in llm.c's token-file format (256 x int32 header: magic 20240520, version 1, token count; then uint16
tokens) unless --raw asks for a bare uint16 file (nanoGPT's format). Only the standard library, so it
runs under any python3.

usage: make_corpus.py OUT [--tokens N] [--seed S] [--raw]
"""
import argparse
import random
import struct
import sys

SUBJECTS = [("the cat", "s"), ("a dog", "s"), ("the old man", "s"), ("my sister", "s"),
            ("the birds", "p"), ("two children", "p"), ("we", "p"), ("they", "p")]
VERBS = [("sees", "see"), ("likes", "like"), ("finds", "find"), ("follows", "follow"),
         ("paints", "paint"), ("carries", "carry")]
OBJECTS = ["the red ball", "a small boat", "the green house", "an apple", "the river",
           "a yellow kite", "the tall tree", "some bread"]
PLACES = ["in the park", "by the sea", "at home", "under the bridge", "near the school"]
TIMES = ["today", "every morning", "at night", "on sunday"]


def sentence(rng):
    subj, num = rng.choice(SUBJECTS)
    third, plain = rng.choice(VERBS)
    verb = third if num == "s" else plain
    words = [subj, verb, rng.choice(OBJECTS)]
    if rng.random() < 0.5:
        words.append(rng.choice(PLACES))
    if rng.random() < 0.3:
        words.append(rng.choice(TIMES))
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--raw", action="store_true", help="bare uint16 tokens, no llm.c header")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    text = bytearray()
    while len(text) < a.tokens:
        text += sentence(rng).encode("ascii")
        text += b"\n" if rng.random() < 0.2 else b" "
    toks = bytes(text[:a.tokens])
    with open(a.out, "wb") as f:
        if not a.raw:
            hdr = [0] * 256
            hdr[0], hdr[1], hdr[2] = 20240520, 1, len(toks)
            f.write(struct.pack("<256i", *hdr))
        f.write(struct.pack("<%dH" % len(toks), *toks))
    print(f"{a.out}: {len(toks)} tokens ({'raw uint16' if a.raw else 'llm.c'})", file=sys.stderr)


if __name__ == "__main__":
    main()
