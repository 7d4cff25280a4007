#!/usr/bin/env bash
# Activation PTQ through the command line: a tiny a16 calibration (RTN w8 weights, max_seq 64)
# writes ptq.json and the report's activations section; inspect lists the grids (the KV cache's
# shared one included); verify / generate --static / ppl --static run the fake-quant graphs;
# uint8 and EMA variants; clear errors.
set -u
PDQ=${1:?usage: ptq.sh PDQ_BINARY}
M=models/web-bible-llama-19m
. "$(dirname "$0")/lib/checks.sh"

head -c 6000 data/web-bible/test.txt >"$tmp/eval.txt"
q="$tmp/q"
common="--model $M --calib data/web-bible/train.txt --method rtn --wbits 8 --quiet --threads 1 --max-seq 64 --act-nsamples 3 --verify-steps 4"
if "$PDQ" quantize $common --decode-calib-steps 4 --compare-calib --eval "$tmp/eval.txt" --out "$q" >"$tmp/log" 2>&1; then
    ok a16-run
else
    bad a16-run; cat "$tmp/log"
fi
check ptq-json "jq -e '.format == \"pdq-ptq\" and .activation_dtype == \"int16\" and .max_seq == 64 and .calibration.decode_steps == 4' '$q/ptq.json' >/dev/null"
check int16-grids "jq -e '[.groups[] | select(.dtype == \"int16\") | .zero_point == 0 and .qmax == 32767 and (.scale - ([(.min|fabs), .max] | max) / 32767) >= 0 and (.scale - ([(.min|fabs), .max] | max) / 32767) < 1.2e-7 * .scale + 1e-30] | all' '$q/ptq.json' >/dev/null"
check mask-fixed "jq -e '.groups[.edges[\"model.layers.2.attention_mask\"]] | .fixed and .min == -120 and .max == 0' '$q/ptq.json' >/dev/null"
check kv-shared "jq -e '.edges[\"model.layers.1.past_key\"] == .edges[\"model.layers.1.self_attn.new_k\"] and .edges[\"model.layers.1.past_value\"] == .edges[\"model.layers.1.self_attn.new_v\"]' '$q/ptq.json' >/dev/null"
check report-act "jq -e '.activations.dtype == \"int16\" and .activations.ppl_static.fp32 > 1 and .activations.ppl_static.full > 1 and (.activations.verify.steps | length) == 20 and .activations.verify.top1_agreement >= 0.9 and (.activations.calibration_variants | length) == 2 and (.activations.continuations | length) == 4' '$q/report.json' >/dev/null"
check table "grep -q 'full, calib prefill+decode (4)' '$tmp/log' && grep -q 'full, calib prefill only' '$tmp/log' && grep -q 'fp32 (static prefill graph)' '$tmp/log'"
# a16 costs almost nothing over weight-only on this model
check a16-close "jq -e '(.activations.ppl_static.full - .activations.ppl_static.weight_only | fabs) < 0.1' '$q/report.json' >/dev/null"

"$PDQ" inspect --model "$q" >"$tmp/insp" 2>&1
check inspect-lists "grep -q 'model.layers.0.self_attn.q_proj.out *int16' '$tmp/insp' && [ \$(tail -n +3 '$tmp/insp' | wc -l) -eq \$(jq '.edges | length' '$q/ptq.json') ]"
"$PDQ" inspect --model "$q" --edge model.layers.1.past_key >"$tmp/insp1" 2>&1
check inspect-edge "grep -q 'shares model.layers.1.self_attn.new_k' '$tmp/insp1' && [ \$(grep -c '^model\\.' '$tmp/insp1') -eq 1 ]"
check inspect-json "'$PDQ' inspect --model '$q' --edge lm_head.out --json | jq -e '.edges[0].dtype == \"int16\" and .edges[0].clipped_fraction == 0' >/dev/null"
err inspect-noedge "'$PDQ' inspect --model '$q' --edge no.such" "no edge named"
err inspect-circle "'$PDQ' inspect '$tmp/x.circle'" "x.circle"
err inspect-nodir "'$PDQ' inspect --model '$tmp/none'" "ptq.json"

# the fake-quant graphs in the runtime commands
"$PDQ" verify --model "$q" --prompt "In the beginning" --max-seq 64 --steps 4 --threads 1 --mode fake >"$tmp/v" 2>"$tmp/verr"
check verify-fq "grep -q 'fake-quantized int16 activations' '$tmp/verr'"
check verify-runs "[ -s '$tmp/v' ]"
"$PDQ" generate --static --model "$q" --max-seq 64 --prompt "In the beginning" --max-new 6 --threads 1 --mode fake >"$tmp/g" 2>"$tmp/gerr"
check generate-fq "grep -q 'fake-quantized' '$tmp/gerr' && grep -q 'In the beginning' '$tmp/g'"
pq=$("$PDQ" ppl --model "$q" --static --text "$tmp/eval.txt" --json --threads 1 --mode fake 2>/dev/null | jq -r .ppl)
full=$(jq -r .activations.ppl_static.full "$q/report.json")
check ppl-static-fq "awk -v a='$pq' -v b='$full' 'BEGIN { exit !(a > 1 && (a - b < 1e-3 && b - a < 1e-3)) }'"
# integer execution (the default): the perplexity report.json measured for it, to the last digit printed
pi=$("$PDQ" ppl --model "$q" --static --text "$tmp/eval.txt" --json --threads 2 2>"$tmp/perr" | jq -r .ppl)
check ppl-static-int "grep -q 'integer execution' '$tmp/perr' && jq -e --argjson p '${pi:-0}' '(.activations.integer.ppl_static_int - \$p | fabs) < 1e-6 and (.activations.integer.ppl_diff | fabs) < 0.05' '$q/report.json' >/dev/null"
check report-int "jq -e '.activations.integer.vs_fake_quant.top1_agreement >= 0.9 and .activations.integer.vs_fake_quant.rows == 20 and .activations.integer.verify_int.steps_compared == 20' '$q/report.json' >/dev/null"
pw=$("$PDQ" ppl --model "$q/hf" --static --max-seq 64 --text "$tmp/eval.txt" --json --threads 1 2>/dev/null | jq -r .ppl)
wo=$(jq -r .activations.ppl_static.weight_only "$q/report.json")
check ppl-static-float "awk -v a='$pw' -v b='$wo' 'BEGIN { exit !(a > 1 && (a - b < 1e-3 && b - a < 1e-3)) }'"
err verify-options "'$PDQ' verify --model '$q' --prompt hi --max-seq 64 --steps 1 --layout unrolled" "calibrated with"
err verify-maxseq "'$PDQ' verify --model '$q' --prompt hi --max-seq 128 --steps 1" "exceeds the calibrated max_seq"

# group-wise weights (groups of 32, the 688-wide down_proj's last one shorter) with the k_proj
# scale fold: integer execution measured in the report; `ppl --static` at 2 threads gives the
# perplexity the report measured at 1 (to the last digit printed), and the exported files
# (BlockwiseQuantization) give `ppl --static`'s, bit for bit, in integer and fake-quant mode;
# verify --circle: the files equal the in-memory runtime
qg="$tmp/qg"
if "$PDQ" quantize ${common/--wbits 8/--wbits 4 --group 32 --partial-groups} --scale-fusion k_proj --rope pre_negated_sin \
    --layout unrolled --eval "$tmp/eval.txt" --out "$qg" >"$tmp/logg" 2>&1; then ok grouped-run; else bad grouped-run; cat "$tmp/logg"; fi
check grouped-int "jq -e '(.activations.integer | has(\"unsupported\") | not) and .activations.integer.vs_fake_quant.top1_agreement >= 0.9 and (.activations.integer.ppl_diff | fabs) < 0.05' '$qg/report.json' >/dev/null"
pg=$("$PDQ" ppl --model "$qg" --static --text "$tmp/eval.txt" --json --threads 2 2>/dev/null | jq -r .ppl)
check grouped-ppl-int "jq -e --argjson p '${pg:-0}' '(.activations.integer.ppl_static_int - \$p | fabs) < 1e-6' '$qg/report.json' >/dev/null"
if "$PDQ" export --model "$qg" --out "$qg/circle" --quiet >"$tmp/gx" 2>&1; then ok grouped-export; else bad grouped-export; cat "$tmp/gx"; fi
check grouped-manifest "jq -e '(.weights | test(\"BlockwiseQuantization\")) and (.consumer_requirements | index(\"FULLY_CONNECTED INT16,UINT4[const,blockwise],none -> INT16\")) != null' '$qg/circle/manifest.json' >/dev/null"
pc=$("$PDQ" ppl --circle "$qg/circle" --text "$tmp/eval.txt" --json --threads 2 2>/dev/null | jq '.ppl')
check grouped-ppl-circle "[ -n '$pc' ] && [ '$pc' = '$pg' ]"
pf=$("$PDQ" ppl --model "$qg" --static --text "$tmp/eval.txt" --json --threads 2 --mode fake 2>/dev/null | jq '.ppl')
pcf=$("$PDQ" ppl --circle "$qg/circle" --text "$tmp/eval.txt" --json --threads 2 --mode fake 2>/dev/null | jq '.ppl')
check grouped-ppl-circle-fake "[ -n '$pf' ] && [ '$pf' = '$pcf' ]"
check grouped-verify-circle "'$PDQ' verify --circle '$qg/circle' --model '$qg' --prompt 'In the beginning' --steps 6 --threads 2 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00 (tol 0.0e+00), tokens identical'"

# uint8 activations with the EMA observer and the TICO NPU graph options
q8="$tmp/q8"
if "$PDQ" quantize ${common/--verify-steps 4/} --abits 8 --observer ema --ema-momentum 0.8 --rope pre_negated_sin --scale-fusion k_proj \
    --layout unrolled --verify-steps 2 --out "$q8" >"$tmp/log8" 2>&1; then ok a8-run; else bad a8-run; cat "$tmp/log8"; fi
check a8-json "jq -e '.activation_dtype == \"uint8\" and .observer == \"ema\" and .static_opts.layout == \"unrolled\" and ([.groups[] | .qmin == 0 and .qmax == 255 and .zero_point >= 0 and .zero_point <= 255] | all)' '$q8/ptq.json' >/dev/null"
check a8-clips "jq -e '[.groups[] | .clipped] | add > 0' '$q8/ptq.json' >/dev/null"
check a8-verify "'$PDQ' verify --model '$q8' --prompt 'And God said' --max-seq 64 --steps 2 >/dev/null 2>&1"

# errors
err abits-value "'$PDQ' quantize $common --abits 12 --out '$tmp/x'" "--abits"
err abits-nocalib "'$PDQ' quantize --model $M --method rtn --abits 16 --out '$tmp/x'" "--calib"
err observer "'$PDQ' quantize $common --observer mean --out '$tmp/x'" "--observer"
err decode-steps "'$PDQ' quantize $common --decode-calib-steps 63 --out '$tmp/x'" "--decode-calib-steps"
exit $fail
