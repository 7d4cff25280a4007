#!/usr/bin/env bash
# pdq quantize: a small GPTQ run (few short windows) writes the quantized checkpoint, the
# dequantized HF copy and report.json; both load in `pdq ppl` with identical results; RTN with an
# override; clear errors for bad flags, short calibration text and tied embeddings.
set -u
PDQ=${1:?usage: quantize.sh PDQ_BINARY}
SYNTH=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}/pdq_synth
M=models/web-bible-llama-19m
. "$(dirname "$0")/lib/checks.sh"

head -c 8000 data/web-bible/test.txt >"$tmp/eval.txt"
q="$tmp/q"
if "$PDQ" quantize --model $M --calib data/web-bible/train.txt --method gptq --wbits 4 --group 32 --partial-groups \
    --nsamples 4 --seq-len 64 --abits none --eval "$tmp/eval.txt" --eval-len 128 --eval-stride 128 --threads 1 \
    --out "$q" >"$tmp/log" 2>&1; then ok gptq-run; else bad gptq-run; cat "$tmp/log"; fi
for f in pdq_quant.json model.q.safetensors report.json config.json tokenizer.json hf/config.json hf/model.safetensors; do
    check "exists $f" "[ -s '$q/$f' ]"
done
check report-parses "jq -e '.method == \"gptq\" and .wbits == 4 and .group == 32 and (.modules | length) == 30' '$q/report.json' >/dev/null"
check report-losses "jq -e '[.modules[] | select(.gptq_loss) | .gptq_loss <= .rtn_loss] | (length == 28 and all)' '$q/report.json' >/dev/null"
check report-eval "jq -e '.eval.fp32_ppl > 1 and .eval.quant_ppl > 1 and .eval.max_len == 128' '$q/report.json' >/dev/null"
check scheme-json "jq -e '.tensors[\"model.layers.0.mlp.down_proj\"] | .bits == 4 and .packed and .g_idx and .shape == [256, 688]' '$q/pdq_quant.json' >/dev/null"
check table-printed "grep -q 'model.layers.3.mlp.down_proj' '$tmp/log'"
check hf-f32 "jq -e '.torch_dtype == \"float32\"' '$q/hf/config.json' >/dev/null"
# the quantized checkpoint and the dequantized HF copy are the same model, and the in-process
# evaluation saw exactly it
p1=$("$PDQ" ppl --model "$q" --text "$tmp/eval.txt" --max-len 128 --stride 128 --json | jq -r .ppl)
p2=$("$PDQ" ppl --model "$q/hf" --text "$tmp/eval.txt" --max-len 128 --stride 128 --json | jq -r .ppl)
p3=$(jq -r .eval.quant_ppl "$q/report.json")
p0=$(jq -r .eval.fp32_ppl "$q/report.json")
# (the OUTDIR runs the packed weight-only kernels, the HF copy the f32 path: equal within rounding)
check ppl-quant-loads "[ -n '$p1' ] && jq -en '($p1 - $p2) | fabs < 1e-4 * $p2' >/dev/null"
check ppl-matches-report "jq -en '($p1 - $p3) | fabs < 1e-4' >/dev/null"
check ppl-close-to-fp32 "jq -en '$p1 / $p0 < 1.2 and $p1 / $p0 > 0.95' >/dev/null"

# RTN needs no calibration; an override lands in the scheme; float embeddings stay float
if "$PDQ" quantize --model $M --method rtn --wbits 3 --override down_proj=8 --override model.layers.1.self_attn.q_proj=5 \
    --embed-bits none --lm-head-bits none --quiet --out "$tmp/r" >"$tmp/log" 2>&1; then ok rtn-run; else bad rtn-run; cat "$tmp/log"; fi
check rtn-override "jq -e '.tensors[\"model.layers.2.mlp.down_proj\"].bits == 8 and .tensors[\"model.layers.1.self_attn.q_proj\"].bits == 5 and .tensors[\"model.layers.0.self_attn.q_proj\"].bits == 3 and .tensors[\"model.layers.2.mlp.down_proj\"].packed == false' '$tmp/r/pdq_quant.json' >/dev/null"
check rtn-float-embed "jq -e '(.tensors | has(\"model.embed_tokens\") | not) and (.tensors | has(\"lm_head\") | not)' '$tmp/r/pdq_quant.json' >/dev/null"
check rtn-loads "\"$PDQ\" ppl --model '$tmp/r' --text '$tmp/eval.txt' --max-len 64 --stride 64 >/dev/null"

# errors
printf 'In the beginning.\n' >"$tmp/short.txt"
err group-divides "'$PDQ' quantize --model $M --method rtn --group 48 --out '$tmp/x'" "does not divide"
err bits-range "'$PDQ' quantize --model $M --method rtn --wbits 9 --out '$tmp/x'" "out of range"
err embed-bits "'$PDQ' quantize --model $M --method rtn --embed-bits 1 --out '$tmp/x'" "--embed-bits"
err override-typo "'$PDQ' quantize --model $M --method rtn --override down_prj=8 --out '$tmp/x'" "matches no decoder linear"
err calib-short "'$PDQ' quantize --model $M --calib '$tmp/short.txt' --abits none --nsamples 2 --seq-len 64 --out '$tmp/x'" "too short"
err calib-needed "'$PDQ' quantize --model $M --method gptq --out '$tmp/x'" "--calib"
err method "'$PDQ' quantize --model $M --method awq --out '$tmp/x'" "gptq or rtn"
if [ -x "$SYNTH" ]; then
    "$SYNTH" --out "$tmp/tied" --tied >/dev/null
    err tied-bits "'$PDQ' quantize --model '$tmp/tied' --method rtn --embed-bits 8 --lm-head-bits none --out '$tmp/x'" "tied embeddings"
    if "$PDQ" quantize --model "$tmp/tied" --method rtn --wbits 4 --group 16 --quiet --out "$tmp/t" >"$tmp/log" 2>&1 &&
        "$PDQ" info --model "$tmp/t" >/dev/null; then ok tied-rtn; else bad tied-rtn; cat "$tmp/log"; fi
fi
exit $fail
