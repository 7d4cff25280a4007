#!/usr/bin/env bash
# pdq info: the bundled model's config values, parameter count (sum of stored tensor sizes),
# dtypes and tokenizer; a synthetic sharded/tied/llama3 checkpoint; errors.
set -u
PDQ=${1:?usage: info.sh PDQ_BINARY}
SYNTH=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}/pdq_synth
M=models/web-bible-llama-19m
fail=0
has() { # name haystack needle
    if grep -qF -- "$3" <<<"$2"; then echo "ok   $1"; else echo "FAIL $1: no '$3' in:"; echo "$2"; fail=1; fi
}

out=$("$PDQ" info --model $M) || { echo "FAIL info exit status"; fail=1; }
has hidden "$out" "hidden_size:        256"
has layers "$out" "layers:             4"
has heads "$out" "attention heads:    8 (kv heads 2, GQA, head_dim 32)"
has rope "$out" "rope:               default (theta 10000)"
has tied "$out" "tied embeddings:    no"
# 2 * 32000*256 + 4 * (2*256 + 256*256 + 2*64*256 + 256*256 + 3*688*256) + 256
has params "$out" "parameters:         19155200"
has dtypes "$out" "stored dtypes:      BF16 x39"
has shards "$out" "shards:             1"
has tokenizer "$out" "tokenizer:          llama2-bpe"
js=$("$PDQ" info --model $M --json)
has json-params "$js" '"parameters":19155200'
has json-dtypes "$js" '"dtypes":{"BF16":39}'
has json-eps "$js" '"rms_norm_eps":1e-05'
has json-tok "$js" '"tokenizer":"llama2-bpe"'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -x "$SYNTH" ]; then
    "$SYNTH" --out "$tmp/s" --shards 3 --tied --dtype f16 --rope-llama3 8,1,4,64 --heads 8 --kv-heads 8 --head-dim 16
    out=$("$PDQ" info --model "$tmp/s")
    has synth-shards "$out" "shards:             3"
    has synth-dtype "$out" "stored dtypes:      F16 x20"
    has synth-tied "$out" "tied embeddings:    yes"
    has synth-rope "$out" "rope:               llama3 (theta 10000, factor 8, low 1, high 4, original 64)"
    has synth-mha "$out" "attention heads:    8 (kv heads 8, head_dim 16)"
    has synth-tok "$out" "tokenizer:          none"
    # 300*64 + 2 * (2*64 + 3 * 128*64 + 64*128 + 3*160*64) + 64
    has synth-params "$out" "parameters:         146496"
else
    echo "FAIL no $SYNTH"; fail=1
fi

err=$("$PDQ" info --model "$tmp/none" 2>&1); rc=$?
[ $rc -ne 0 ] && has missing-dir "$err" "$tmp/none/config.json" || { echo "FAIL missing dir rc=$rc"; fail=1; }
mkdir "$tmp/bad" && cp $M/config.json "$tmp/bad/" && printf 'xxxxxxxxxxxx' > "$tmp/bad/model.safetensors"
err=$("$PDQ" info --model "$tmp/bad" 2>&1 >/dev/null); rc=$?
[ $rc -ne 0 ] && has bad-weights "$err" "model.safetensors" || { echo "FAIL bad weights rc=$rc"; fail=1; }
"$PDQ" info >/dev/null 2>&1; [ $? -eq 2 ] && echo "ok   usage" || { echo "FAIL usage exit status"; fail=1; }
"$PDQ" info --model $M --bogus >/dev/null 2>&1; [ $? -eq 2 ] && echo "ok   unknown flag" || { echo "FAIL unknown flag"; fail=1; }
exit $fail
