#!/usr/bin/env bash
# Perplexity sweep of weight quantization on the bundled model: FP32, RTN and GPTQ at w8/w4/w3,
# per-channel and group 32, with embedding/lm_head in float and with the uint8 defaults.
# Calibration: the train split; evaluation: the test split (windows 256, stride 256). Weights
# only (--abits none: activations stay float).
# usage: scripts/quant-sweep.sh [PDQ_BINARY] [WORKDIR] [NSAMPLES] [SEQ_LEN]
set -euo pipefail
PDQ=${1:-build/pdq}
WORK=${2:-/tmp/pdq-quant-sweep}
NS=${3:-128}
SL=${4:-512}
M=models/web-bible-llama-19m
CAL=data/web-bible/train.txt
EV=data/web-bible/test.txt
mkdir -p "$WORK"
fp32=$("$PDQ" ppl --model $M --text $EV --max-len 256 --stride 256 --json | jq -r .ppl)
printf '| method | bits | group | embed/lm_head | ppl | increase over FP32 | GPTQ loss / RTN loss (decoder) |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
printf '| fp32 | - | - | float | %.4f | - | - |\n' "$fp32"
for emb in none 8; do
    for method in rtn gptq; do
        for bits in 8 4 3; do
            for group in 0 32; do
                out="$WORK/$method-w$bits-g$group-e$emb"
                gflag=(); [ "$group" != 0 ] && gflag=(--group "$group" --partial-groups)
                "$PDQ" quantize --model $M --calib $CAL --method $method --wbits $bits "${gflag[@]}" \
                    --nsamples "$NS" --seq-len "$SL" --embed-bits $emb --lm-head-bits $emb \
                    --abits none --eval $EV --eval-fp32-ppl "$fp32" --quiet --out "$out" >/dev/null
                r="$out/report.json"
                ppl=$(jq -r .eval.quant_ppl "$r")
                ratio=$(jq -r 'if .total_rtn_loss then (.total_gptq_loss / .total_rtn_loss * 1000 | round / 1000) else "-" end' "$r")
                label=$([ "$emb" = none ] && echo float || echo uint8)
                printf '| %s | %s | %s | %s | %.4f | %+.4f | %s |\n' "$method" "$bits" \
                    "$([ "$group" = 0 ] && echo per-channel || echo "$group")" "$label" "$ppl" \
                    "$(jq -n "$ppl - $fp32")" "$ratio"
            done
        done
    done
done
# The sweep as one page: its rows as report.json's "sweep" (one line per method, grouping and
# embedding setting) -> WORKDIR/report.html with perplexity against weight bits.
jq -s --argjson fp32 "$fp32" '{method: "sweep", eval: {fp32_ppl: $fp32}, sweep: [.[] | select(.eval) |
    {method: "\(.method) \(if .group > 0 then "g\(.group)" else "per-channel" end) \(if .embed_bits == "none" then "float" else "uint8" end)",
     wbits, ppl: .eval.quant_ppl}]}' "$WORK"/*/report.json >"$WORK/report.json.new"
mv "$WORK/report.json.new" "$WORK/report.json"
"$PDQ" report "$WORK" >&2
