#!/usr/bin/env python3
"""GPT-2 byte-level BPE as OpenAI's encoder.py wrote it (the `regex` module, merges applied
pair by pair by rank): an implementation independent of fdpp's, for fixtures and checks.

    python3 scripts/compare/gpt2_reference_bpe.py VOCAB_JSON MERGES_TXT "text" ["text" ...]
    python3 scripts/compare/gpt2_reference_bpe.py VOCAB_JSON MERGES_TXT --jsonl STRINGS.jsonl

prints one JSON list of ids per text. Special tokens (--special, default <|endoftext|>) are
split out of the text first, as transformers does. Needs only `regex` (pip: regex).
"""
import argparse
import json
import sys

import regex

PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Gpt2Bpe:
    def __init__(self, vocab_path, merges_path, specials=("<|endoftext|>",)):
        with open(vocab_path, encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        merges = [tuple(l.split()) for l in lines if l.strip()]
        self.ranks = {}
        for i, m in enumerate(merges):
            self.ranks.setdefault(m, i)
        self.byte_encoder = bytes_to_unicode()
        self.specials = sorted((s for s in specials if s in self.encoder), key=len, reverse=True)
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            out, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        self.cache[token] = word
        return word

    def encode_plain(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            sym = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(sym))
        return ids

    def decode(self, ids):
        """Text of ids, special tokens dropped, invalid UTF-8 replaced (errors="replace")."""
        if not hasattr(self, "decoder"):
            self.decoder = {v: k for k, v in self.encoder.items()}
            self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        special = {self.encoder[s] for s in self.specials}
        data = bytearray(self.byte_decoder[c] for i in ids if i not in special
                         for c in self.decoder[i])
        return data.decode("utf-8", errors="replace")

    def encode(self, text):
        ids, pos = [], 0
        while True:
            hits = [(text.find(s, pos), -len(s), s) for s in self.specials]
            hits = [h for h in hits if h[0] >= 0]
            if not hits:
                return ids + self.encode_plain(text[pos:])
            at, _, s = min(hits)
            ids += self.encode_plain(text[pos:at]) + [self.encoder[s]]
            pos = at + len(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vocab")
    ap.add_argument("merges")
    ap.add_argument("texts", nargs="*")
    ap.add_argument("--jsonl", help="file with one JSON string per line")
    ap.add_argument("--special", action="append", help="special token (repeatable)")
    args = ap.parse_args()
    bpe = Gpt2Bpe(args.vocab, args.merges, args.special or ("<|endoftext|>",))
    texts = list(args.texts)
    if args.jsonl:
        with open(args.jsonl, encoding="utf-8") as f:
            texts += [json.loads(l) for l in f if l.strip()]
    for t in texts:
        print(json.dumps(bpe.encode(t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
