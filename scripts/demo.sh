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

# The whole job in one command: GPTQ w4 weights + int16 activations (a16) calibrated on the train
# split, quality on the test split, and the Circle pair (model_prefill / model_decode .q.circle) plus
# the per-layer files TICO also writes, checked through the files themselves in report.json.
qout="$out"
step "pdq quantize --method gptq --wbits 4 --abits 16 --export circle-full,circle-per-layer -> $qout"
"$pdq" quantize --model "$model" --calib data/web-bible/train.txt --method gptq --wbits 4 --abits 16 \
    --max-seq 256 --eval data/web-bible/test.txt --export circle-full,circle-per-layer --out "$qout" \
    --nsamples 32 --seq-len 256 --act-nsamples 8 --quiet

step "pdq verify --circle (exported pair vs the in-memory fake-quant runtime, 32 greedy steps)"
"$pdq" verify --circle "$qout/circle" --model "$qout" --prompt "In the beginning, God created" --steps 32 | tail -n 1

step "pdq generate --circle (the exported files drive the external KV cache)"
"$pdq" generate --circle "$qout/circle" --prompt "In the beginning, God created" --max-new 32

step "results"
echo "Circle pair:  $qout/circle/model_prefill.q.circle, $qout/circle/model_decode.q.circle"
echo "per-layer:    $qout/circle/token_embedding.q.circle, decoder_layer_{prefill,decode}_<i>.q.circle, lm_head.q.circle"
echo "contract:     $qout/circle/manifest.json"
echo "report:       $qout/report.json"
if command -v jq >/dev/null; then
    jq '{weights_only_ppl: .eval, activations_ppl_static: .activations.ppl_static,
         top1_vs_fp32_in_memory: .activations.verify.top1_agreement,
         exported_pair: .export.quality, export_mib: (.export.total_bytes / 1048576 | floor)}' "$qout/report.json"
fi
