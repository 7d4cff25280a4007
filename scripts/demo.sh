#!/usr/bin/env bash
# make demo: the main job on the bundled model, from the HF checkpoint to quality numbers.
set -euo pipefail
pdq=${1:-build/pdq}
model=${2:-models/web-bible-llama-19m}
out=${DEMO_OUT:-out/demo}
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "pdq info --model $model"
"$pdq" info --model "$model"

step "pdq generate (FP32 reference, greedy)"
"$pdq" generate --model "$model" --prompt "In the beginning, God created" --max-new 32

step "pdq ppl on the test split (window 256, stride 256)"
"$pdq" ppl --model "$model" --text data/web-bible/test.txt --max-len 256 --stride 256
