"""hf_export_check.py - what t_hf_export.sh asks of an exported folder, with transformers itself.

  hf_export_check.py load DIR [--bos B --eos E --pad P] [--eos-list A,B] [--field K=JSON ...]
      AutoTokenizer.from_pretrained(DIR) and LlamaForCausalLM.from_pretrained(DIR) load; config.json's
      and generation_config.json's bos/eos/pad ids equal the tokenizer's (or the ids given: --eos-list
      is an eos list, e.g. 2,7); generation_config.json holds each --field as given; and a greedy
      generate() whose logits are forced to the tokenizer's eos at the 4th new token stops right
      there, far below max_new_tokens: generate() stops on the exported eos.
  hf_export_check.py bare DIR
      config.json has no bos/eos/pad ids and the folder has no generation_config.json and no
      tokenizer files; LlamaForCausalLM.from_pretrained(DIR) still loads.
  hf_export_check.py zgd OUT --vocab V --bos B --eos E --pad P [--n N] [--seed S]
      a document file (docs/DATA.md) of random documents whose header names those ids
"""
import argparse
import json
import os
import random
import struct
import sys

TOK_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "merges.txt",
             "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
             "chat_template.jinja", "chat_template.json")
IDS = ("bos_token_id", "eos_token_id", "pad_token_id")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def load(a):
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList
    tok = AutoTokenizer.from_pretrained(a.dir)
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    gen = json.load(open(os.path.join(a.dir, "generation_config.json")))
    want = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id}
    for k, v in (("bos_token_id", a.bos), ("eos_token_id", a.eos), ("pad_token_id", a.pad)):
        if v is not None and v != want[k]:
            fail("the tokenizer's %s is %s, the test expects %s" % (k, want[k], v))
    if a.eos_list:
        want["eos_token_id"] = [int(x) for x in a.eos_list.split(",")]
    for name, d in (("config.json", cfg), ("generation_config.json", gen)):
        for k in IDS:
            if d.get(k) != want[k]:
                fail("%s: %s is %r, expected %r" % (name, k, d.get(k), want[k]))
    for f in a.field:
        k, v = f.split("=", 1)
        if gen.get(k) != json.loads(v):
            fail("generation_config.json: %s is %r, expected %s" % (k, gen.get(k), v))
    if "_from_model_config" in gen:
        fail("generation_config.json says _from_model_config")
    model = LlamaForCausalLM.from_pretrained(a.dir)
    if model.generation_config.eos_token_id != want["eos_token_id"]:
        fail("model.generation_config.eos_token_id is %r" % model.generation_config.eos_token_id)
    eos = tok.eos_token_id
    enc = tok("the cat runs", return_tensors="pt")
    prompt = {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}

    class ForceEos(LogitsProcessor):
        """eos from the 4th new token on: generate() must stop there, on its own"""
        def __call__(self, ids, scores):
            if ids.shape[1] >= prompt["input_ids"].shape[1] + 3:
                scores[:] = -1e9
                scores[:, eos] = 0
            return scores

    with torch.no_grad():
        free = model.generate(**prompt, max_new_tokens=8, do_sample=False)
        out = model.generate(**prompt, max_new_tokens=40, do_sample=False,
                             logits_processor=LogitsProcessorList([ForceEos()]))
    new = out[0, prompt["input_ids"].shape[1]:].tolist()
    if len(new) != 4 or new[-1] != eos:
        fail("generate() did not stop at eos %d: new tokens %s" % (eos, new))
    if free.shape[1] > prompt["input_ids"].shape[1] + 8:
        fail("generate() ran past max_new_tokens")
    print("tokenizer and model load; ids bos %s eos %s pad %s in config.json and generation_config.json; "
          "generate() stops at eos after %d new tokens" % (want["bos_token_id"], want["eos_token_id"],
                                                          want["pad_token_id"], len(new)))


def bare(a):
    from transformers import LlamaForCausalLM
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    for k in IDS:
        if k in cfg:
            fail("config.json has %s %r, from no source" % (k, cfg[k]))
    have = [f for f in TOK_FILES + ("generation_config.json",) if os.path.exists(os.path.join(a.dir, f))]
    if have:
        fail("the folder holds %s" % ", ".join(have))
    LlamaForCausalLM.from_pretrained(a.dir)
    print("no ids, no generation_config.json, no tokenizer files; the model loads")


def zgd(a):
    rng = random.Random(a.seed)
    docs = [[a.bos] + [rng.randrange(3, a.vocab) for _ in range(rng.randint(5, 30))] + [a.eos]
            for _ in range(a.n)]
    off = [0]
    for d in docs:
        off.append(off[-1] + len(d))
    ntok = off[-1]
    mask = b"".join(b"\0" + b"\1" * (len(d) - 1) for d in docs)
    head = [0] * 256
    head[0:8] = [20261201, 1, 2, 0, a.vocab, a.bos, a.eos, a.pad]
    head[8], head[9] = a.n & 0xffffffff, a.n >> 32
    head[10], head[11] = ntok & 0xffffffff, ntok >> 32
    trained = sum(len(d) - 1 for d in docs)
    head[12], head[13] = trained & 0xffffffff, trained >> 32
    with open(a.out + ".tmp", "wb") as f:
        f.write(struct.pack("<256i", *head))
        f.write(struct.pack("<%dq" % len(off), *off))
        f.write(struct.pack("<%dH" % ntok, *[t for d in docs for t in d]))
        f.write(mask)
    os.replace(a.out + ".tmp", a.out)
    print("wrote %s: %d documents, %d tokens" % (a.out, a.n, ntok))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["load", "bare", "zgd"])
    ap.add_argument("dir")
    ap.add_argument("--bos", type=int)
    ap.add_argument("--eos", type=int)
    ap.add_argument("--pad", type=int)
    ap.add_argument("--eos-list")
    ap.add_argument("--field", action="append", default=[])
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.out = a.dir
    {"load": load, "bare": bare, "zgd": zgd}[a.what](a)


if __name__ == "__main__":
    main()
