#!/usr/bin/env bash
# Machine-readable output: pdq quantize ends with a summary (text, or --json alone on stdout) that
# report.json keeps as "summary": file sizes and bits per weight as on disk over pdq info's
# parameter count, time per phase, perplexity and its change as report.json has them, top-1 and
# output paths; export --json lists the files as on disk; generate --json carries the text the
# plain command prints and its timings; inspect FILE.circle --json matches the text listing.
set -u
PDQ=${1:?usage: json_out.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
head -c 3000 $TINY/test.txt >"$tmp/eval.txt"
q="$tmp/q"
"$PDQ" quantize --model $M --calib $TINY/train.txt --method gptq --wbits 4 --nsamples 4 --seq-len 64 \
    --threads 2 --max-seq 32 --act-nsamples 2 --verify-steps 4 --eval "$tmp/eval.txt" --export circle-full \
    --json --out "$q" >"$tmp/s.json" 2>"$tmp/err"; rc=$?
check quantize-rc "[ $rc = 0 ]"
check json-only "jq -e . '$tmp/s.json' >/dev/null && grep -q 'GPTQ loss\|gptq' '$tmp/err'"
params=$("$PDQ" info --model $M --json | jq .parameters)
qbytes=$(stat -c %s "$q/model.q.safetensors")
check params "jq -e --argjson p $params '.parameters == \$p' '$tmp/s.json' >/dev/null"
check bpw "jq -e --argjson b $qbytes --argjson p $params '(.bits_per_weight - 8 * \$b / \$p | fabs) < 1e-9 and .files[\"model.q.safetensors\"] == \$b' '$tmp/s.json' >/dev/null"
check circle-bytes "jq -e --argjson c \$(du -b --apparent-size -s '$q/circle' | cut -f1) '.files.circle <= \$c and .files.circle > 0' '$tmp/s.json' >/dev/null"
check phases "jq -e '.seconds | has(\"fp32_eval\") and has(\"calibration\") and has(\"weights\") and has(\"activations\") and has(\"export\") and has(\"export_check\") and ([to_entries[] | select(.key != \"total\") | .value] | add) <= .total + 1e-6 and ([.[]] | min) >= 0' '$tmp/s.json' >/dev/null"
check ppl "jq -e --slurpfile r '$q/report.json' '.perplexity.fp32 == \$r[0].eval.fp32_ppl and .perplexity.quantized_weights == \$r[0].eval.quant_ppl and (.perplexity.change - (\$r[0].eval.quant_ppl - \$r[0].eval.fp32_ppl) | fabs) < 1e-12 and .perplexity.static_full == \$r[0].activations.ppl_static.full' '$tmp/s.json' >/dev/null"
check top1 "jq -e --slurpfile r '$q/report.json' '.top1_agreement == \$r[0].activations.verify.top1_agreement and .export_top1_agreement == \$r[0].export.quality.top1_agreement' '$tmp/s.json' >/dev/null"
check outputs "for f in \$(jq -r '.outputs[]' '$tmp/s.json'); do [ -e \"\$f\" ] || exit 1; done"
check stored "[ \"\$(jq -cS . '$tmp/s.json')\" = \"\$(jq -cS .summary '$q/report.json')\" ]"
check html-has-times "grep -q 'time per phase' '$q/report.html'"
"$PDQ" quantize --model $M --method rtn --wbits 8 --abits none --quiet --out "$tmp/r" >"$tmp/txt" 2>/dev/null
check text-summary "grep -q '^== summary ==' '$tmp/txt' && grep -Eq '^weights +rtn w8 -> .* bits per weight over 0.3M parameters' '$tmp/txt' && grep -q '^time ' '$tmp/txt' && grep -q '^outputs ' '$tmp/txt'"

# export --json: the files as on disk
"$PDQ" export --model "$q" --max-seq 32 --whole --json --out "$tmp/e" >"$tmp/e.json" 2>/dev/null
ok_sizes=1
while read -r name bytes; do [ "$(stat -c %s "$tmp/e/$name")" = "$bytes" ] || ok_sizes=0; done < <(jq -r '.files[] | "\(.name) \(.bytes)"' "$tmp/e.json")
check export-json "[ $ok_sizes = 1 ] && jq -e '.quantized == true and .max_seq == 32 and .total_bytes == ([.files[].bytes] | add) and (.files | length) == $(ls "$tmp/e" | wc -l)' '$tmp/e.json' >/dev/null"

# generate --json: the plain command's text, ids, timings
P="Once upon a time"
for mode in "--model $M" "--static --model $M --max-seq 32" "--circle $tmp/e"; do
    # shellcheck disable=SC2086
    j=$("$PDQ" generate $mode --prompt "$P" --max-new 10 --json 2>/dev/null)
    # shellcheck disable=SC2086
    t=$("$PDQ" generate $mode --prompt "$P" --max-new 10 2>/dev/null)
    check "generate-json [$mode]" "[ \"\$(jq -r .full_text <<<'$j')\" = \"\$t\" ] && jq -e '.new_tokens == (.ids | length) and .prompt == \"$P\" and .seconds.prefill >= 0 and .seconds.decode >= 0 and .decode_tokens_per_second >= 0 and (.text | length) > 0' <<<'$j' >/dev/null"
done

# inspect FILE.circle --json: the same counts and I/O as the text listing
f="$tmp/e/model_decode.q.circle"
"$PDQ" inspect "$f" >"$tmp/i.txt"
"$PDQ" inspect "$f" --json >"$tmp/i.json"
counts=$(sed -n 2p "$tmp/i.txt" | awk '{print $1, $4, $6}')
check inspect-json "[ \"\$(jq -r '[(.operator_codes | length), (.operators | length), (.tensors | length)] | join(\" \")' '$tmp/i.json')\" = '$counts' ]"
check inspect-io "[ \"\$(jq -c '[.inputs[].name], [.outputs[].name], [.outputs[].shape]' '$tmp/i.json')\" = \"\$(jq -c '.files.model_decode | [.inputs[].name], [.outputs[].name], [.outputs[].shape]' '$tmp/e/manifest.json')\" ]"
err inspect-bad "'$PDQ' inspect '$tmp/none.circle' --json" "none.circle"
exit $fail
