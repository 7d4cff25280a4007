#!/usr/bin/python3
"""Writes a SentencePiece tokenizer.model equivalent to a Llama-2 style tokenizer.json (BPE with
byte fallback), so llama.cpp's converter can read a pdq checkpoint that ships only tokenizer.json.
Used by scripts/bench-peer.sh only; pieces, ids and types follow tokenizer.json, scores are the
negated merge rank order (earlier id = higher score), as Llama-2's own model has them."""
import json
import sys

from sentencepiece import sentencepiece_model_pb2 as spm

src, dst = sys.argv[1], sys.argv[2]
tj = json.load(open(src, encoding="utf-8"))
vocab = tj["model"]["vocab"]
special = {t["content"]: t for t in tj.get("added_tokens", [])}
m = spm.ModelProto()
m.trainer_spec.model_type = spm.TrainerSpec.BPE
m.trainer_spec.vocab_size = len(vocab)
m.trainer_spec.byte_fallback = True
m.normalizer_spec.name = "identity"
m.normalizer_spec.add_dummy_prefix = True
m.normalizer_spec.remove_extra_whitespaces = False
for piece, i in sorted(vocab.items(), key=lambda kv: kv[1]):
    p = m.pieces.add()
    p.piece = piece
    p.score = -float(i)
    if piece == "<unk>":
        p.type = spm.ModelProto.SentencePiece.UNKNOWN
    elif piece in special and special[piece].get("special"):
        p.type = spm.ModelProto.SentencePiece.CONTROL
    elif piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
        p.type = spm.ModelProto.SentencePiece.BYTE
    else:
        p.type = spm.ModelProto.SentencePiece.NORMAL
open(dst, "wb").write(m.SerializeToString())
