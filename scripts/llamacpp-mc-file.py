#!/usr/bin/env python3
"""ARC (AI2's JSON Lines, or the HF export) or HellaSwag in llama.cpp's 6-line format to
llama.cpp's binary multiple-choice file.

    scripts/llamacpp-mc-file.py ARC-Easy-Dev.jsonl|hellaswag_val_full.txt OUT.bin [LIMIT]

`llama-perplexity --multiple-choice -f OUT.bin` reads it (examples/perplexity/perplexity.cpp at
b4747, multiple_choice_task::deserialize). Layout, little-endian:

    uint32 n_task; uint32 offset[n_task]   (byte offset of each task from the file's start)
    per task: string question; answers mc1; answers mc2
    string  = uint32 size, then size bytes (UTF-8, no terminator)
    answers = uint32 n, n strings, n int32 labels (1 = correct)

HellaSwag (a .txt file: context, gold index, 4 endings per task): the question is the context
and the answers the endings. --multiple-choice scores them by --hellaswag's rule, but in the
file's order, where --hellaswag draws its tasks at random (without replacement; pdq eval
--llamacpp-tasks reproduces that draw, docs/eval.md).
ARC: the question is lm-eval's ARC context "Question: {stem}\\nAnswer:" and the answers are the
choices' texts; llama.cpp scores `question + " " + answer`, the harness's context plus its
" " + choice. mc2 is empty (llama.cpp does not use it). Tasks keep the file's order, so the first
LIMIT items are those `pdq eval --task arc_easy --limit LIMIT` scores. Standard library only, so
it runs without the converter's packages.
"""
import json
import struct
import sys


def hellaswag_items(path, limit):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    n = len(lines) // 6
    for t in range(n if limit is None else min(n, limit)):
        ctx, gold, *endings = lines[6 * t:6 * t + 6]
        yield ctx, endings, int(gold)


def arc_items(path, limit):
    if path.endswith(".txt"):
        yield from hellaswag_items(path, limit)
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            if limit is not None and limit <= 0:
                return
            o = json.loads(line)
            if "choices" in o:  # HF allenai/ai2_arc: top-level choices {text, label}
                stem, texts, labels = o["question"], o["choices"]["text"], o["choices"]["label"]
            else:  # AI2: question {stem, choices [{text, label}]}
                stem = o["question"]["stem"]
                texts = [c["text"] for c in o["question"]["choices"]]
                labels = [c["label"] for c in o["question"]["choices"]]
            gold = labels.index(o["answerKey"])
            yield "Question: " + stem + "\nAnswer:", texts, gold
            if limit is not None:
                limit -= 1


def pack_string(s):
    b = s.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def pack_task(question, answers, gold):
    out = pack_string(question) + struct.pack("<I", len(answers))
    out += b"".join(pack_string(a) for a in answers)
    out += struct.pack("<%di" % len(answers), *[int(i == gold) for i in range(len(answers))])
    return out + struct.pack("<I", 0)  # mc2: no answers


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[2])
    limit = int(argv[3]) if len(argv) == 4 else None
    blobs = [pack_task(q, a, g) for q, a, g in arc_items(argv[1], limit)]
    if not blobs:
        sys.exit("%s: no items" % argv[1])
    for q, a, _ in arc_items(argv[1], limit):
        if any(not x for x in a):
            sys.exit("an empty choice in %r: llama.cpp refuses empty answers" % q)
    pos = 4 + 4 * len(blobs)
    offsets = []
    for b in blobs:
        offsets.append(pos)
        pos += len(b)
    with open(argv[2], "wb") as f:
        f.write(struct.pack("<I", len(blobs)) + struct.pack("<%dI" % len(offsets), *offsets))
        f.write(b"".join(blobs))
    print("%d tasks -> %s" % (len(blobs), argv[2]))


if __name__ == "__main__":
    main(sys.argv)
