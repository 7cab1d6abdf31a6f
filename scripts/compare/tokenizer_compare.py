#!/usr/bin/env python3
"""fdpp's tokenizers against the reference ones over a few hundred varied strings.

    python3 scripts/compare/tokenizer_compare.py --fdpp build/fdpp [--models-dir models] [--n 400]
        [--opt-dir DIR] [--workdir DIR] [--out results.json]

Tokenizers compared (each on `fdpp tokenize --input-jsonl`, one process per tokenizer):
  gpt2       the GPT-2 files of MODELS/tokenizers/gpt2 vs transformers' GPT2TokenizerFast (and the
             slow GPT2Tokenizer, and scripts/compare/gpt2_reference_bpe.py) built from the same files;
  opt-style  the same merges with OPT's id layout (<s> <pad> </s> <unk> first, the other pieces
             shifted by 4) and OPT's special_tokens_map.json, vs AutoTokenizer on that folder. The
             real OPT vocab.json orders pieces differently (fairseq's dictionary: "Hello" is 31414,
             GPT-2's 15496, not 15496 + 4); pass a real OPT tokenizer folder with --opt-dir to
             compare on it too;
  chatglm2   MODELS/tokenizers/chatglm2/tokenizer.model vs the `sentencepiece` module plus ChatGLM2's
             prefix [gMASK] sop (64790, 64792), which is what THUDM's ChatGLMTokenizer returns.
Per tokenizer: ids without special tokens, ids with the default BOS/prefix, and decode(ids) vs
the reference's decode(skip_special_tokens=True). Exit status 1 on any mismatch.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402


# ------------------------------------------------------------------------------------------
# Test strings: the CI fixture strings plus random compositions of hard cases.
# ------------------------------------------------------------------------------------------

POOLS = {
    "words": ["Hello", "world", "the", "quick", "brown", "fox", "tokenizer", "FlashDecoding",
              "GPU", "naïve", "café", "Zürich", "über", "straße", "Ελληνικά", "русский", "日本語",
              "中文", "한국어", "عربى", "עברית", "हिन्दी", "ไทย", "Tiếng Việt", "ǅemal"],
    "contractions": ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "n't",
                     "’s", "O'Neil", "rock'n'roll", "'''", "''"],
    "numbers": ["0", "7", "42", "2023", "3.14159", "1,000,000", "-17", "+3", "1e-5", "0x1F",
                "٣٤٥", "१२३", "½", "²", "Ⅻ", "１２３"],
    "punct": [".", ",", "!", "?", "...", "—", "–", "«", "»", "“", "”", "(", ")", "[", "]", "{", "}",
              "<", ">", "/", "\\", "#", "@", "$", "%", "^", "&", "*", "_", "=", "+", "|", "~", "`",
              "。", "，", "！", "？", "：", "；", "、"],
    "space": [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u2003", "\u3000",
              "\u200b", "\u180e", "\u0085", "\u2028", " \t \n"],
    "emoji": ["😀", "😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "❤️", "🤖", "🦙", "✅", "⚡", "🏳️‍🌈"],
    "code": ["def f(x):\n    return x**2", "for (int i = 0; i < n; ++i) {}", "<div class=\"a\">",
             "SELECT * FROM t;", "https://example.com/a?b=1&c=2#d", "user@example.org",
             "snake_case", "camelCase", "kebab-case", "#include <cstdio>", "$HOME/.bashrc"],
    "specials": ["<|endoftext|>", "</s>", "<s>", "<pad>", "<unk>", "[gMASK]", "sop"],
}


def fixture_strings():
    sys.path.insert(0, HERE)
    from gpt2_fixture_strings import S  # noqa: E402
    return list(S)


def random_text(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        pool = rng.choice(list(POOLS))
        if pool == "specials" and rng.random() < 0.7:
            pool = "words"
        parts.append(rng.choice(POOLS[pool]))
        if rng.random() < 0.5:
            parts.append(rng.choice(["", " ", " ", "  ", "\n"]))
    if rng.random() < 0.15:  # random code points from assigned, non-surrogate ranges
        ranges = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x6ff),
                  (0x900, 0x97f), (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3),
                  (0x1f300, 0x1f64f), (0x300, 0x36f)]
        lo, hi = rng.choice(ranges)
        parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 20))))
    if rng.random() < 0.05:
        parts.append(rng.choice("abcxyz") * rng.randint(50, 400))
    return "".join(parts)


def make_strings(n, seed):
    rng = random.Random(seed)
    out = fixture_strings()
    while len(out) < n:
        out.append(random_text(rng))
    return [s for s in out if s]  # fdpp and HF agree trivially on ""; keep the list meaningful


# ------------------------------------------------------------------------------------------
# Model folders for `fdpp tokenize` (it needs a config.json of a supported model_type).
# ------------------------------------------------------------------------------------------


def write_json(path, obj):
    common.write_json(path, obj, indent=1, ensure_ascii=False)


def opt_config(vocab, bos, eos):
    return {"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 1,
            "num_attention_heads": 4, "vocab_size": vocab, "max_position_embeddings": 64,
            "bos_token_id": bos, "eos_token_id": eos}


def gpt2_folder(src, dst):
    os.makedirs(dst, exist_ok=True)
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(src, f), dst)
    write_json(os.path.join(dst, "config.json"), opt_config(50257, 50256, 50256))
    write_json(os.path.join(dst, "special_tokens_map.json"),
               {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>"})
    write_json(os.path.join(dst, "tokenizer_config.json"),
               {"add_bos_token": False, "tokenizer_class": "GPT2Tokenizer"})
    return dst


def opt_style_folder(src, dst):
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "vocab.json"), encoding="utf-8") as f:
        gpt2 = json.load(f)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece, i in gpt2.items():
        if piece != "<|endoftext|>":
            vocab[piece] = i + 4
    write_json(os.path.join(dst, "vocab.json"), vocab)
    shutil.copy(os.path.join(src, "merges.txt"), dst)
    write_json(os.path.join(dst, "config.json"), opt_config(50272, 2, 2))
    # facebook/opt-*'s files.
    write_json(os.path.join(dst, "special_tokens_map.json"),
               {"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>", "pad_token": "<pad>"})
    write_json(os.path.join(dst, "tokenizer_config.json"),
               {"add_bos_token": True, "add_prefix_space": False, "errors": "replace",
                "bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>", "pad_token": "<pad>",
                "tokenizer_class": "GPT2Tokenizer"})
    return dst


def chatglm_folder(src, dst):
    os.makedirs(dst, exist_ok=True)
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, f), dst)
    write_json(os.path.join(dst, "config.json"),
               {"model_type": "chatglm", "hidden_size": 64, "ffn_hidden_size": 128,
                "num_layers": 1, "num_attention_heads": 4, "kv_channels": 16,
                "multi_query_attention": True, "multi_query_group_num": 2,
                "padded_vocab_size": 65024, "seq_length": 64, "add_qkv_bias": True,
                "eos_token_id": 2, "pad_token_id": 0})
    return dst


# ------------------------------------------------------------------------------------------
# Running both sides.
# ------------------------------------------------------------------------------------------


def run_fdpp(fdpp, folder, strings, workdir, no_bos):
    path = os.path.join(workdir, "strings.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for s in strings:
            f.write(json.dumps(s) + "\n")
    cmd = [fdpp, "tokenize", "-m", folder, "--input-jsonl", path] + (["--no-bos"] if no_bos else [])
    res = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip()}")
    # split("\n"), not splitlines(): the JSON carries raw U+2028, U+0085, ... inside strings.
    rows = [json.loads(l) for l in res.stdout.split("\n") if l.strip()]
    if len(rows) != len(strings):
        raise RuntimeError(f"fdpp returned {len(rows)} rows for {len(strings)} strings")
    return rows


def compare(name, strings, fdpp_plain, fdpp_bos, ref_plain, ref_bos, ref_decode, report):
    """fdpp_*: rows from fdpp; ref_*: functions of a string (ids) and of ids (text)."""
    mism = {"ids": [], "ids_with_bos": [], "decode": []}
    for s, fp, fb in zip(strings, fdpp_plain, fdpp_bos):
        rp = ref_plain(s)
        if fp["ids"] != rp:
            i = next((k for k, (a, b) in enumerate(zip(fp["ids"], rp)) if a != b),
                     min(len(fp["ids"]), len(rp)))
            mism["ids"].append({"text": s, "fdpp": fp["ids"], "ref": rp, "first_diff": i,
                                "fdpp_pieces": fp["pieces"][max(0, i - 2):i + 3]})
        rb = ref_bos(s)
        if rb is not None and fb["ids"] != rb:
            mism["ids_with_bos"].append({"text": s, "fdpp": fb["ids"], "ref": rb})
        rd = ref_decode(fp["ids"])
        if fp["decoded"] != rd:
            mism["decode"].append({"text": s, "fdpp": fp["decoded"], "ref": rd})
    n_bad = sum(len(v) for v in mism.values())
    print(f"{name:<10} {len(strings)} strings: id mismatches {len(mism['ids'])}, with BOS/prefix "
          f"{len(mism['ids_with_bos'])}, decode {len(mism['decode'])}"
          + ("  OK" if n_bad == 0 else "  MISMATCH"))
    for kind, rows in mism.items():
        for r in rows[:5]:
            print(f"  [{kind}] {json.dumps(r, ensure_ascii=False)[:400]}")
    report[name] = {"strings": len(strings), **{k: len(v) for k, v in mism.items()},
                    "examples": {k: v[:20] for k, v in mism.items()}}
    return n_bad == 0


def check_bpe(name, folder, strings, args, report, hf_kwargs):
    import transformers
    try:
        fast = transformers.AutoTokenizer.from_pretrained(folder, use_fast=True, **hf_kwargs)
    except TypeError:  # a transformers without the use_fast switch
        fast = transformers.AutoTokenizer.from_pretrained(folder, **hf_kwargs)
    print(f"{name:<10} reference: {type(fast).__name__} (transformers {transformers.__version__})")
    plain = run_fdpp(args.fdpp, folder, strings, args.workdir, no_bos=True)
    bos = run_fdpp(args.fdpp, folder, strings, args.workdir, no_bos=False)
    ok = compare(name, strings, plain, bos,
                 lambda s: fast(s, add_special_tokens=False)["input_ids"],
                 lambda s: fast(s)["input_ids"],
                 lambda ids: fast.decode(ids, skip_special_tokens=True,
                                         clean_up_tokenization_spaces=False),
                 report)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fdpp", required=True, help="the fdpp binary")
    ap.add_argument("--models-dir", default=common.models_dir())
    ap.add_argument("--opt-dir", action="append", default=[],
                    help="a real OPT tokenizer folder (vocab.json, merges.txt, side files)")
    ap.add_argument("--n", type=int, default=400, help="number of strings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", help="scratch folder (default: a temporary one)")
    ap.add_argument("--out", help="write the report here (JSON)")
    args = ap.parse_args()
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="tokcmp-")
    os.makedirs(args.workdir, exist_ok=True)
    tok_dir = os.path.join(args.models_dir, "tokenizers")
    strings = make_strings(args.n, args.seed)
    report, ok = {}, True

    # GPT-2 numbering: the fast tokenizer, the slow one and OpenAI's algorithm must all agree.
    g = gpt2_folder(os.path.join(tok_dir, "gpt2"), os.path.join(args.workdir, "gpt2"))
    ok &= check_bpe("gpt2", g, strings, args, report, {})
    import transformers
    sys.path.insert(0, HERE)
    import gpt2_reference_bpe
    openai = gpt2_reference_bpe.Gpt2Bpe(os.path.join(g, "vocab.json"), os.path.join(g, "merges.txt"))
    plain = run_fdpp(args.fdpp, g, strings, args.workdir, no_bos=True)
    refs = [("gpt2-openai", openai.encode, openai.decode)]
    try:  # the Python (slow) GPT2Tokenizer, where this transformers still has one
        slow = transformers.GPT2Tokenizer(os.path.join(g, "vocab.json"),
                                          os.path.join(g, "merges.txt"))
        refs.append(("gpt2-slow", lambda s: slow(s, add_special_tokens=False)["input_ids"],
                     lambda ids: slow.decode(ids, skip_special_tokens=True,
                                             clean_up_tokenization_spaces=False)))
    except Exception as e:  # noqa: BLE001 - report and go on with the other references
        print(f"gpt2-slow  skipped: {type(e).__name__}: {e}")
    for label, enc, dec in refs:
        ok &= compare(label, strings, plain, plain, enc, lambda s: None, dec, report)

    o = opt_style_folder(os.path.join(tok_dir, "gpt2"), os.path.join(args.workdir, "opt-style"))
    ok &= check_bpe("opt-style", o, strings, args, report, {})
    for i, d in enumerate(args.opt_dir):
        ok &= check_bpe(f"opt-real{i}", d, strings, args, report, {})
        # A published example (facebook/opt-125m's GPT2Tokenizer, BOS </s> = 2 in front).
        text = "Today is a beautiful day and I want"
        got = run_fdpp(args.fdpp, d, [text], args.workdir, no_bos=False)[0]["ids"]
        want = [2, 5625, 16, 10, 2721, 183, 8, 38, 236]
        print(f"opt-real{i}  '{text}': fdpp {got}, published {want}"
              + ("  OK" if got == want else "  MISMATCH"))
        ok &= got == want

    # ChatGLM2: SentencePiece plus the [gMASK] sop prefix.
    import sentencepiece as spm
    c = chatglm_folder(os.path.join(tok_dir, "chatglm2"), os.path.join(args.workdir, "chatglm2"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(c, "tokenizer.model"))
    n = sp.vocab_size()
    assert n == 64789, f"ChatGLM2's SentencePiece has {n} pieces, expected 64789"
    prefix = [n + 1, n + 3]  # [gMASK], sop
    plain = run_fdpp(args.fdpp, c, strings, args.workdir, no_bos=True)
    with_prefix = run_fdpp(args.fdpp, c, strings, args.workdir, no_bos=False)
    ok &= compare("chatglm2", strings, plain, with_prefix, lambda s: sp.encode(s),
                  lambda s: prefix + sp.encode(s),
                  lambda ids: sp.decode([i for i in ids if i < n]), report)

    report["ok"] = bool(ok)
    if args.out:
        write_json(args.out, report)
    print("tokenizer_compare:", "OK" if ok else "MISMATCHES (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
