#!/usr/bin/env bash
# pdq quantize … --export circle-full,circle-per-layer: one command from the HF checkpoint to the
# quantized Circle pair + per-layer files in OUTDIR/circle, with report.json's export section
# (files and sizes as on disk; perplexity through the exported prefill and top-1 vs FP32 through
# the exported pair, equal to the in-memory activation-step numbers); pdq ppl --circle gives the
# same perplexity; verify --circle finds identical int16 outputs (tol 0) in both layouts.
set -u
PDQ=${1:?usage: quantize_export.sh PDQ_BINARY}
M=models/web-bible-llama-19m
. "$(dirname "$0")/lib/checks.sh"

head -c 5000 data/web-bible/test.txt >"$tmp/eval.txt"
q="$tmp/q"
if "$PDQ" quantize --model $M --calib data/web-bible/train.txt --method rtn --wbits 4 --quiet --threads 2 \
    --max-seq 32 --act-nsamples 1 --verify-steps 4 --eval "$tmp/eval.txt" --eval-len 32 --eval-stride 32 \
    --export circle-full,circle-per-layer --append-bucket 4 --out "$q" >"$tmp/log" 2>&1; then
    ok run
else
    bad run; cat "$tmp/log"
fi
for f in model_prefill.q model_decode.q token_embedding.q lm_head.q decoder_layer_prefill_3.q decoder_layer_decode_0.q \
    decoder_layer_append_prefill_q4_1.q model_append_prefill_q4.q; do
    check "file $f" "[ -s '$q/circle/$f.circle' ]"
done
check manifest "jq -e '.quantized == true and .max_seq == 32 and .rope.convention == \"pre_negated_sin\" and .inexact_weight_channels == 0' '$q/circle/manifest.json' >/dev/null"
# every listed file with its size on disk, and every .circle listed
sizes_ok=1
while read -r name bytes; do
    [ "$(stat -c %s "$q/circle/$name")" = "$bytes" ] || sizes_ok=0
done < <(jq -r '.export.files[] | "\(.name) \(.bytes)"' "$q/report.json")
check sizes "[ $sizes_ok = 1 ] && [ \$(jq '[.export.files[] | select(.name | endswith(\".circle\"))] | length' '$q/report.json') = \$(ls '$q/circle' | grep -c '\.circle\$') ]"
check total "jq -e '.export.total_bytes == ([.export.files[].bytes] | add)' '$q/report.json' >/dev/null"
# the exported pair's quality is the in-memory one, to the last bit
check ppl-equal "jq -e '.export.quality.ppl == .activations.ppl_static.full and .export.quality.ppl > 1' '$q/report.json' >/dev/null"
check top1-equal "jq -e '.export.quality.top1_agreement == .activations.verify.top1_agreement and .export.quality.max_abs_diff == .activations.verify.max_abs_diff and .export.quality.steps_compared == 20' '$q/report.json' >/dev/null"
check flagged-equal "jq -e '.export.quality.equal_in_memory == true' '$q/report.json' >/dev/null"
# same BLAS thread count as the quantize run: BLAS sums in a thread-count dependent order
ppl=$("$PDQ" ppl --circle "$q/circle" --text "$tmp/eval.txt" --json --threads 2 --mode fake 2>/dev/null | jq '.ppl')
check ppl-circle "jq -e --argjson p '${ppl:-0}' '.activations.ppl_static.full == \$p' '$q/report.json' >/dev/null"
# integer mode (the default) through the files: the in-memory integer perplexity, bit for bit, any thread count
for t in 1 2; do
    ppl=$("$PDQ" ppl --circle "$q/circle" --text "$tmp/eval.txt" --json --threads $t 2>/dev/null | jq '.ppl')
    check ppl-circle-int-$t "jq -e --argjson p '${ppl:-0}' '.activations.integer.ppl_static_int == \$p' '$q/report.json' >/dev/null"
done
for pl in "" --per-layer; do
    if "$PDQ" verify --circle "$q/circle" --model "$q" --prompt "In the beginning, God created" --steps 12 $pl --threads 2 \
        --append "And God said, Let there be light" >"$tmp/v" 2>&1 && grep -q "^append 9 tokens at length 19: buckets 4 4 1$" "$tmp/v" &&
        grep -q "max |circle - in-memory| 0.000e+00 (tol 0.0e+00), tokens identical" "$tmp/v"; then
        ok "verify-exact${pl}"
    else
        bad "verify-exact${pl}"; tail -3 "$tmp/v"
    fi
done
# pdq bench over the pair: circle-int rows (and circle-fake by --mode), a decode that does not fit
# max_seq is an error naming it
js=$("$PDQ" bench --model "$q/circle" -p 32 -n 8 -t 1,2 -r 2 --json 2>/dev/null)
check bench-circle "jq -e 'length == 4 and all(.[]; .path == \"circle-int\" and .avg_ts > 0 and (.samples_ts | length) == 2) and ([.[].test] == [\"pp32\", \"tg8\", \"pp32\", \"tg8\"])' <<<\"\$js\" >/dev/null"
# decode's weight bytes from the config: every layer's linears as uint4 nibbles and the uint8
# lm_head (the norms' int16 gammas and the graph's scalars add well under 1 %); the float path
# reads their float32 copies, 4 bytes an element
read -r D F L KV HD V < <(jq -r '"\(.hidden_size) \(.intermediate_size) \(.num_hidden_layers) \(.num_key_value_heads) \(.head_dim) \(.vocab_size)"' $M/config.json)
elems=$(( L * (2 * D * D + 2 * KV * HD * D + 3 * F * D) ))
want=$(( elems / 2 + V * D ))
check bench-circle-bytes "jq -e --argjson w $want '.[1].weight_bytes >= \$w and .[1].weight_bytes < \$w * 1.01 and .[1].avg_gbps > 0' <<<\"\$js\" >/dev/null"
js=$("$PDQ" bench --model "$q/circle" -p 0 -n 4 -t 1 -r 1 --mode fake --json 2>/dev/null)
check bench-circle-fake "jq -e '.[0].path == \"circle-fake\" and .[0].avg_ts > 0' <<<\"\$js\" >/dev/null"
check bench-circle-fake-bytes "jq -e --argjson w $(( 4 * (elems + V * D) )) '.[0].weight_bytes >= \$w and .[0].weight_bytes < \$w * 1.01' <<<\"\$js\" >/dev/null"
err bench-circle-too-long "'$PDQ' bench --model '$q/circle' -p 0 -n 20 -t 1 -r 1" "decode-prompt + n needs 36 positions, the export has max_seq 32"
# pdq bench --static: the in-memory static runtime of the same OUTDIR in integer and fake-quant
# mode, and of the float checkpoint; --mode int without ptq.json is an error naming it
js=$("$PDQ" bench --model "$q" --static -p 16 -n 8 -t 1,2 -r 2 --json 2>/dev/null)
check bench-static-int "jq -e 'length == 4 and all(.[]; .path == \"static-int\" and .avg_ts > 0 and (.samples_ts | length) == 2 and .peak_rss_mib > 0) and ([.[].test] == [\"pp16\", \"tg8\", \"pp16\", \"tg8\"])' <<<\"\$js\" >/dev/null"
js=$("$PDQ" bench --model "$q" --model $M --static --mode fake -p 0 -n 4 -t 1 -r 1 --json 2>/dev/null)
check bench-static-fake-float "jq -e 'length == 2 and .[0].path == \"static-fake\" and .[1].path == \"static-float\" and all(.[]; .avg_ts > 0 and .n_prompt == 16)' <<<\"\$js\" >/dev/null"
err bench-static-int-float "'$PDQ' bench --model $M --static --mode int -p 8 -n 0 -t 1 -r 1" "--mode int needs a quantized checkpoint with ptq.json"
check logits-compared "jq -e '.export.quality.logits_vs_in_memory.differing_logits == 0 and .export.quality.logits_vs_in_memory.windows > 0 and .export.quality.logits_vs_in_memory.max_code_steps == 0' '$q/report.json' >/dev/null"
# the hybrid form of the same checkpoint: float activations, the packed codes; runs back exactly
h="$tmp/h"
"$PDQ" export --model "$q" --hybrid --max-seq 32 --append-bucket 4 --out "$h" --quiet || bad "hybrid export exit status"
check hybrid-files "[ -s '$h/model_decode.w4.circle' ] && [ -s '$h/decoder_layer_append_prefill_q4_3.w4.circle' ] && [ -s '$h/lm_head.w4.circle' ]"
check hybrid-manifest "jq -e '.file_tag == \".w4\" and .activations == \"float32\" and .quantized == false and (.consumer_requirements | index(\"FULLY_CONNECTED FLOAT32,UINT4[const,per-channel],none -> FLOAT32\")) != null' '$h/manifest.json' >/dev/null"
"$PDQ" export --model $M --whole --max-seq 32 --out "$tmp/f" --quiet || bad "float export exit status"
check hybrid-smaller "[ \$(( \$(stat -c %s '$h/model_decode.w4.circle') * 3 )) -lt \$(stat -c %s '$tmp/f/model_decode.circle') ]"
for pl in "" --per-layer; do
    if "$PDQ" verify --circle "$h" --model "$q" --prompt "In the beginning, God created" --steps 4 --append "And God said" $pl \
        --threads 2 >"$tmp/v" 2>&1 && grep -q "circle .* (hybrid): max |circle - in-memory| 0.000e+00" "$tmp/v"; then
        ok "verify-hybrid${pl}"
    else
        bad "verify-hybrid${pl}"; tail -3 "$tmp/v"
    fi
done
# --abits none: the export is the hybrid form, checked logit by logit against the in-memory runtime
w="$tmp/w"
if "$PDQ" quantize --model $M --method rtn --wbits 4 --abits none --quiet --threads 2 --max-seq 32 --verify-steps 2 \
    --eval "$tmp/eval.txt" --eval-len 32 --eval-stride 32 --export circle-full --out "$w" >"$tmp/log" 2>&1; then ok run-abits-none; else bad run-abits-none; cat "$tmp/log"; fi
check abits-none-hybrid "[ -s '$w/circle/model_prefill.w4.circle' ] && jq -e '.export.quality.equal_in_memory == true and .export.quality.logits_vs_in_memory.differing_logits == 0' '$w/report.json' >/dev/null"
err bucket-no-export "'$PDQ' quantize --model $M --method rtn --append-bucket 4 --out '$tmp/x'" "--append-bucket needs --export"
err bucket-too-big "'$PDQ' quantize --model $M --method rtn --max-seq 32 --export circle-full --append-bucket 32 --out '$tmp/x'" "max_seq-1 = 31"
out=$("$PDQ" quantize --model $M --method rtn --export circle-half --out "$tmp/x" 2>&1)
check bad-export "[ \$? -ne 0 ] || true; grep -q 'circle-full and/or circle-per-layer' <<<\"\$out\""
out=$("$PDQ" ppl --circle "$tmp/none" --text "$tmp/eval.txt" 2>&1)
check ppl-circle-missing "grep -q 'manifest' <<<\"\$out\""
exit $fail
