"""tiny_hf.py - a tiny Hugging Face model folder and JSONL datasets, made locally (no hub).

  tiny_hf.py tokenizer DIR            a byte-level BPE tokenizer trained on a built-in corpus:
                                      tokenizer.json, tokenizer_config.json (bos <s>, eos </s>,
                                      pad <pad>, a chat template), special_tokens_map.json
      [--no-template]                 tokenizer_config.json without a chat template
  tiny_hf.py llama DIR [--seed S]     the tokenizer plus a tiny LlamaForCausalLM (fp32, 2 layers,
                                      C 32, 4 heads, 2 kv heads, F 64, 128 positions) saved with
                                      save_pretrained (config.json, model.safetensors)
  tiny_hf.py qwen2 DIR [--seed S]     the same as a Qwen2ForCausalLM, its weights drawn with std 0.2
      [--sliding-window]              (logits far from uniform) and its q, k, v biases normal(0, 0.5)
                                      (Qwen2 initialises them to 0); with --sliding-window its
                                      config.json says use_sliding_window true
  tiny_hf.py jsonl DIR [--n N] [--seed S]
                                      DIR/pr.jsonl (prompt/response), DIR/chat.jsonl (messages),
                                      DIR/text.jsonl (text); N records each (default 200), and
                                      DIR/*_val.jsonl with N/5 records
"""
import argparse
import json
import os
import random

WORDS = ("the a one two three red green blue cat dog bird fish tree house river stone sun moon "
         "runs jumps sleeps sings eats sees finds takes gives makes small big old new quick slow "
         "happy sad near far under over into from with and or but then what who where why how "
         "is are was were will can may must hello world answer question please thanks yes no").split()

CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}"
                 "{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}"
                 "{% elif m['role'] == 'system' %}{{ '<<SYS>> ' + m['content'] + ' <</SYS>>' }}"
                 "{% else %}{{ ' ' + m['content'] + eos_token }}{% endif %}{% endfor %}")


def sentence(rng, lo=3, hi=12):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def make_tokenizer(out, template=True):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    rng = random.Random(7)
    corpus = [sentence(rng, 3, 20) for _ in range(2000)] + ["[INST] [/INST] <<SYS>> <</SYS>>"] * 50
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    from tokenizers import processors
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")
    if template:
        fast.chat_template = CHAT_TEMPLATE
    os.makedirs(out, exist_ok=True)
    fast.save_pretrained(out)
    return fast


def make_llama(out, seed):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    fast = make_tokenizer(out)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
                      tie_word_embeddings=False, bos_token_id=fast.bos_token_id,
                      eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
    model = LlamaForCausalLM(cfg).float()
    model.save_pretrained(out, safe_serialization=True)


def make_qwen2(out, seed, sliding_window=False):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    fast = make_tokenizer(out)
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
                      tie_word_embeddings=False, use_sliding_window=sliding_window, sliding_window=16,
                      initializer_range=0.2,
                      bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                      pad_token_id=fast.pad_token_id)
    model = Qwen2ForCausalLM(cfg).float()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".bias"):
                p.normal_(0.0, 0.5)
    model.save_pretrained(out, safe_serialization=True)


def make_jsonl(out, n, seed):
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    for suffix, count in (("", n), ("_val", max(1, n // 5))):
        with open(os.path.join(out, "pr%s.jsonl" % suffix), "w") as f:
            for _ in range(count):
                f.write(json.dumps({"prompt": sentence(rng) + "?", "response": sentence(rng)}) + "\n")
        with open(os.path.join(out, "chat%s.jsonl" % suffix), "w") as f:
            for _ in range(count):
                msgs = []
                if rng.random() < 0.3:
                    msgs.append({"role": "system", "content": sentence(rng, 2, 5)})
                for _ in range(rng.randint(1, 2)):
                    msgs.append({"role": "user", "content": sentence(rng)})
                    msgs.append({"role": "assistant", "content": sentence(rng)})
                f.write(json.dumps({"messages": msgs}) + "\n")
        with open(os.path.join(out, "text%s.jsonl" % suffix), "w") as f:
            for _ in range(count):
                f.write(json.dumps({"text": sentence(rng, 1, 30)}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["tokenizer", "llama", "qwen2", "jsonl"])
    ap.add_argument("dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--no-template", action="store_true")
    ap.add_argument("--sliding-window", action="store_true")
    a = ap.parse_args()
    if a.what == "tokenizer":
        make_tokenizer(a.dir, not a.no_template)
    elif a.what == "llama":
        make_llama(a.dir, a.seed)
    elif a.what == "qwen2":
        make_qwen2(a.dir, a.seed, a.sliding_window)
    else:
        make_jsonl(a.dir, a.n, a.seed)


if __name__ == "__main__":
    main()
