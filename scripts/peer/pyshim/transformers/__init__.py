"""The part of `transformers` that llama.cpp's converter uses for a byte-level BPE vocabulary
(Qwen2's, read by `get_vocab_base`), for Debian machines where the package does not exist:
AutoTokenizer.from_pretrained(dir) with vocab / get_vocab / get_added_vocab /
added_tokens_decoder / encode / decode. Reads tokenizer.json directly: added tokens matched
longest first, the normalizer (NFC or none), the Split pre-tokenizer's regex (Python's `regex`
module, Debian python3-regex), GPT-2's byte-to-unicode map and BPE by merge rank. encode must
be exact: the converter hashes the ids of a test string to name the pre-tokenizer in the GGUF
("qwen2"), and an unknown hash stops the conversion, so a wrong encoder fails loudly."""
import json
import os
import unicodedata

import regex


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class AddedToken:
    def __init__(self, t):
        self.content = t["content"]
        self.special = bool(t.get("special", False))
        self.normalized = bool(t.get("normalized", False))

    def __str__(self):
        return self.content


class _ByteLevelBPE:
    def __init__(self, dir_model):
        path = os.path.join(dir_model, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        model = tj.get("model", {})
        pre = tj.get("pre_tokenizer") or {}
        steps = pre.get("pretokenizers", [pre])
        split = [s for s in steps if s.get("type") == "Split"]
        if model.get("type") != "BPE" or not any(s.get("type") == "ByteLevel" for s in steps) or len(split) != 1:
            raise ValueError(f"{path}: this shim reads byte-level BPE with one Split regex only")
        norm = (tj.get("normalizer") or {}).get("type")
        if norm not in (None, "NFC"):
            raise ValueError(f"{path}: normalizer {norm} is not supported by this shim")
        self._nfc = norm == "NFC"
        self._split = regex.compile(split[0]["pattern"]["Regex"])
        self._vocab = dict(model["vocab"])
        merges = model["merges"]
        pairs = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]
        self._rank = {p: i for i, p in enumerate(pairs)}
        self.added_tokens_decoder = {t["id"]: AddedToken(t) for t in tj.get("added_tokens", [])}
        self._added = {t.content: i for i, t in self.added_tokens_decoder.items()}
        alts = sorted(self._added, key=len, reverse=True)
        self._added_re = regex.compile("|".join(regex.escape(a) for a in alts)) if alts else None
        self._b2u = _bytes_to_unicode()
        self._u2b = {u: b for b, u in self._b2u.items()}
        self._id2tok = {i: t for t, i in self._vocab.items()}
        self._id2tok.update({i: t.content for i, t in self.added_tokens_decoder.items()})

    @property
    def vocab(self):
        return self.get_vocab()

    def get_vocab(self):
        v = dict(self._vocab)
        v.update(self._added)
        return v

    def get_added_vocab(self):
        return dict(self._added)

    def _bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            best = min(range(len(parts) - 1), key=lambda i: self._rank.get((parts[i], parts[i + 1]), 1 << 62))
            if (parts[best], parts[best + 1]) not in self._rank:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        return [self._vocab[p] for p in parts]

    def _encode_plain(self, text):
        if self._nfc:
            text = unicodedata.normalize("NFC", text)
        pieces, pos = [], 0
        for m in self._split.finditer(text):   # Split "Isolated": matches and the gaps between them
            pieces += [text[pos:m.start()], m.group(0)]
            pos = m.end()
        pieces.append(text[pos:])
        ids = []
        for piece in filter(None, pieces):
            ids += self._bpe("".join(self._b2u[b] for b in piece.encode("utf-8")))
        return ids

    def encode(self, text, add_special_tokens=True):
        ids, pos = [], 0
        for m in (self._added_re.finditer(text) if self._added_re else []):
            ids += self._encode_plain(text[pos:m.start()])
            ids.append(self._added[m.group(0)])
            pos = m.end()
        return ids + self._encode_plain(text[pos:])

    def decode(self, ids):
        out, buf = [], bytearray()
        for i in ids:
            if i in self.added_tokens_decoder:
                out.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                out.append(self.added_tokens_decoder[i].content)
            else:
                buf += bytes(self._u2b[c] for c in self._id2tok[i])
        out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)


class AutoTokenizer:
    @staticmethod
    def from_pretrained(dir_model, **kwargs):
        return _ByteLevelBPE(str(dir_model))
