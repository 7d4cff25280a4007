#!/usr/bin/env bash
# stories260K from ../shared (a real TinyStories Llama by llama2.c's author: head_dim 8, ffn 172,
# GQA 8/4, tied, vocab 512): config as its README states, greedy text from BOS equal to what
# llama2.c prints for the original checkpoint, tokenizer round trip, perplexity on its corpus.
set -u
PDQ=${1:?usage: stories260k.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
want=$(cat tests/fixtures/llama2c/stories260K-greedy.txt)

out=$("$PDQ" info --model $M)
check info-heads "grep -qF 'attention heads:    8 (kv heads 4, GQA, head_dim 8)' <<<\"\$out\""
check info-tied "grep -qF 'tied embeddings:    yes' <<<\"\$out\""
check info-params "grep -qF 'parameters:         260032' <<<\"\$out\""

# 64 new tokens cover the reference sentence; the generated text must start with it exactly.
got=$("$PDQ" generate --model $M --prompt "" --max-new 64 --threads 1)
check greedy-llama2c "[ \"\${got:0:\${#want}}\" = \"\$want\" ]"
[ "${got:0:${#want}}" = "$want" ] || echo "  got:  $got"

ids=$("$PDQ" tokenize --model $M --text "$want" --json)
check tokenize-json "grep -q '\"ids\": \[1, ' <<<\"\$ids\""

ppl=$("$PDQ" ppl --model $M --text $TINY/test.txt --max-len 256 --stride 256 --json --threads 1)
# Text sampled from the model itself at temperature 1: its perplexity is low but not trivial.
check ppl-range "python3 -c 'import json,sys; p=json.loads(sys.argv[1])[\"ppl\"]; sys.exit(0 if 1.5 < p < 20 else 1)' '$ppl'"

# quantize verifies on prompts from the model's own domain: the first 4 non-empty lines of
# --eval, 8 words each (an independent awk cut of the same file), not the fixed Bible verses.
head -c 4000 $TINY/test.txt >"$tmp/eval.txt"
"$PDQ" quantize --model $M --method rtn --wbits 8 --abits int16 --calib "$tmp/eval.txt" --eval "$tmp/eval.txt" \
    --max-seq 64 --nsamples 2 --verify-steps 4 --threads 1 --quiet --out "$tmp/q" >/dev/null 2>"$tmp/q.err"
awk 'NF { n = NF < 8 ? NF : 8; s = $1; for (i = 2; i <= n; i++) s = s " " $i; print s; if (++k == 4) exit }' \
    "$tmp/eval.txt" >"$tmp/want-prompts"
jq -r '.. | objects | select(has("continuations")) | .continuations[].prompt' "$tmp/q/report.json" >"$tmp/got-prompts" 2>/dev/null
check verify-prompts-domain "[ -s '$tmp/want-prompts' ] && cmp -s '$tmp/want-prompts' '$tmp/got-prompts' &&
    grep -q 'verify  *the first 4 lines of .* as prompts' '$tmp/q.err'"
exit $fail
