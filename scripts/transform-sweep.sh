#!/usr/bin/env bash
# Ablation of the float transforms before per-channel weight quantization: one pdq quantize run
# per (transform set x method), weights only (--abits none), and one markdown table with the
# perplexity, its increase over FP32 and the decoder's layer-wise GPTQ loss sum(tr(dW H dW^T))
# split by module kind: the squared output error each linear adds on its calibration inputs.
# Rotations leave squared errors unchanged, so those columns compare across fold/R1/R2; CLE and
# SmoothQuant rescale the outputs of v/up (and the norms' outputs), so their q/k/v/gate/up
# losses are in other units; o and down write the residual and stay comparable.
# usage: scripts/transform-sweep.sh MODEL CALIB EVAL [NSAMPLES] [SEQ_LEN] [WORKDIR] [WBITS] [SETS] [METHODS] [PDQ]
#   SETS: space-separated --transform values (default: none fold r1 r1,r2 cle smooth)
#   METHODS: default "rtn gptq"; extra pdq quantize flags via PDQ_SWEEP_FLAGS.
set -euo pipefail
M=${1:?usage: transform-sweep.sh MODEL CALIB EVAL [NSAMPLES] [SEQ_LEN] [WORKDIR] [WBITS] [SETS] [METHODS] [PDQ]}
CAL=${2:?calibration text}
EV=${3:?evaluation text}
NS=${4:-32}
SL=${5:-256}
WORK=${6:-/tmp/pdq-transform-sweep}
BITS=${7:-4}
SETS=${8:-"none fold r1 r1,r2 cle smooth"}
METHODS=${9:-"rtn gptq"}
PDQ=${10:-build/pdq}
EXTRA=${PDQ_SWEEP_FLAGS:-}
mkdir -p "$WORK"
fp32=$("$PDQ" ppl --model "$M" --text "$EV" --max-len 256 --stride 256 --json | jq -r .ppl)
echo "model $M, calibration $NS x $SL from $CAL, evaluation $EV (windows 256/256), w$BITS per-channel, FP32 ppl $fp32"
printf '| transform | method | ppl | vs FP32 | %% | GPTQ loss: q k v o gate up down | total | transform s | quantize s |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for set in $SETS; do
    for method in $METHODS; do
        out="$WORK/$(tr ',' '+' <<<"$set")-$method"
        # shellcheck disable=SC2086
        "$PDQ" quantize --model "$M" --calib "$CAL" --method "$method" --wbits "$BITS" --nsamples "$NS" --seq-len "$SL" \
            --transform "$set" --abits none --eval "$EV" --eval-fp32-ppl "$fp32" --quiet $EXTRA --out "$out" >"$out.log" 2>&1 ||
            { echo "FAILED: $set $method (see $out.log)"; tail -3 "$out.log"; continue; }
        r="$out/report.json"
        ppl=$(jq -r .eval.quant_ppl "$r")
        losses=$(jq -r '[ "q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj" ] as $k |
            if .total_gptq_loss then
              ($k | map(. as $n | [$r[0].modules[] | select(.name | endswith($n)) | .gptq_loss] | add | . * 1000 | round / 1000 | tostring) | join(" "))
            else "-" end' --slurpfile r "$r" "$r")
        total=$(jq -r 'if .total_gptq_loss then (.total_gptq_loss * 1000 | round / 1000) else "-" end' "$r")
        ts=$(jq -r 'if .transforms then (.transforms.seconds * 100 | round / 100) else 0 end' "$r")
        qs=$(jq -r '.seconds * 100 | round / 100' "$r")
        printf '| %s | %s | %.4f | %+.4f | %+.2f%% | %s | %s | %s | %s |\n' "$set" "$method" "$ppl" \
            "$(jq -n "$ppl - $fp32")" "$(jq -n "($ppl - $fp32) / $fp32 * 100")" "$losses" "$total" "$ts" "$qs"
    done
done
