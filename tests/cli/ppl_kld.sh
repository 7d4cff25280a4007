#!/usr/bin/env bash
# pdq ppl: perplexity with its standard error, --eval-tokens, and --kld FP32DIR (llama.cpp-style
# KL divergence): the FP32 side is cached per evaluation file and reused (same numbers), its
# perplexity is the FP32 model's own, the model side's is `pdq ppl`'s; a model against itself has
# zero KLD; a damaged cache is recomputed. stories260K's 512-token vocabulary makes the KLD exact.
set -u
PDQ=${1:?usage: ppl_kld.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
export XDG_CACHE_HOME="$tmp/cache"
head -c 6000 $TINY/test.txt >"$tmp/eval.txt"
E="--text $tmp/eval.txt --max-len 128 --threads 1"

"$PDQ" ppl --model $M $E --json >"$tmp/p.json" 2>/dev/null
check ppl-se "jq -e '.ppl_se > 0 and .ppl_se < .ppl and .tokens > 1000' '$tmp/p.json' >/dev/null"
check ppl-text "'$PDQ' ppl --model $M $E 2>/dev/null | grep -Eq '^perplexity [0-9.]+ \+/- [0-9.]+ over'"
"$PDQ" ppl --model $M $E --eval-tokens 300 --json >"$tmp/p300.json" 2>/dev/null
check eval-tokens "jq -e '.tokens == 297 and .windows == 3' '$tmp/p300.json' >/dev/null"

check quantize "'$PDQ' quantize --model $M --method rtn --wbits 4 --abits none --quiet --out '$tmp/q' >/dev/null 2>&1"
"$PDQ" ppl --model "$tmp/q" $E --json >"$tmp/q.json" 2>/dev/null
"$PDQ" ppl --model "$tmp/q" $E --kld $M --json >"$tmp/k1.json" 2>"$tmp/k1.err"
"$PDQ" ppl --model "$tmp/q" $E --kld $M --json >"$tmp/k2.json" 2>/dev/null
check cache-written "jq -e '.kld.base_cached == false' '$tmp/k1.json' >/dev/null && [ -s \"\$(jq -r .kld_cache '$tmp/k1.json')\" ]"
check cache-reused "jq -e '.kld.base_cached == true' '$tmp/k2.json' >/dev/null"
check cache-same "[ \"\$(jq -c '.kld | del(.base_cached)' '$tmp/k1.json')\" = \"\$(jq -c '.kld | del(.base_cached)' '$tmp/k2.json')\" ]"
check kld-exact "jq -e '.kld.top_k == 512 and .kld.vocab == 512 and (.kld.base_mass - 1 | fabs) < 1e-6' '$tmp/k1.json' >/dev/null"
check kld-positive "jq -e '.kld.mean > 0 and .kld.se > 0 and .kld.median <= .kld.p99 and .kld.p99 <= .kld.max and .kld.top1 < 1 and .kld.top1 > 0.5' '$tmp/k1.json' >/dev/null"
check dp-order "jq -e '.kld | .dp_min <= .dp_p01 and .dp_p01 <= .dp_p05 and .dp_p05 <= .dp_median and .dp_median <= .dp_p95 and .dp_p95 <= .dp_p99 and .dp_p99 <= .dp_max and .dp_rms >= (.dp_mean | fabs)' '$tmp/k1.json' >/dev/null"
rel() { jq -en --argjson a "$1" --argjson b "$2" '(($a - $b) / $b | fabs) < 1e-6' >/dev/null; } # a b: equal to 1e-6
check ppl-model-side "rel \$(jq .ppl '$tmp/k1.json') \$(jq .ppl '$tmp/q.json') && [ \$(jq .tokens '$tmp/k1.json') = \$(jq .tokens '$tmp/q.json') ]"
check ppl-base-side "rel \$(jq .kld.ppl_base '$tmp/k1.json') \$(jq .ppl '$tmp/p.json')"
check ln-ratio "rel \$(jq '.kld.ln_ppl_ratio' '$tmp/k1.json') \$(jq -n \"(\$(jq .ppl '$tmp/q.json') / \$(jq .ppl '$tmp/p.json')) | log\")"

"$PDQ" ppl --model $M $E --kld $M --json >"$tmp/self.json" 2>/dev/null
check self-zero "jq -e '.kld.max < 1e-6 and .kld.top1 == 1 and (.kld.dp_max | fabs) < 1e-6 and (.kld.ln_ppl_ratio | fabs) < 1e-9' '$tmp/self.json' >/dev/null"
# a damaged cache is noticed and rebuilt
c=$(jq -r .kld_cache "$tmp/k1.json")
head -c 100 "$c" >"$tmp/x" && cp "$tmp/x" "$c"
"$PDQ" ppl --model "$tmp/q" $E --kld $M --json >"$tmp/k3.json" 2>"$tmp/k3.err"
check cache-damaged "grep -q 'ignoring cache' '$tmp/k3.err' && jq -e '.kld.base_cached == false' '$tmp/k3.json' >/dev/null &&
    [ \"\$(jq -c '.kld | del(.base_cached)' '$tmp/k1.json')\" = \"\$(jq -c '.kld | del(.base_cached)' '$tmp/k3.json')\" ]"
# another window setting is another cache entry
"$PDQ" ppl --model "$tmp/q" --text "$tmp/eval.txt" --max-len 64 --threads 1 --kld $M --json >"$tmp/k4.json" 2>/dev/null
check cache-keyed "jq -e '.kld.base_cached == false' '$tmp/k4.json' >/dev/null && [ \"\$(jq -r .kld_cache '$tmp/k4.json')\" != '$c' ]"
n_before=$(ls "$XDG_CACHE_HOME/pdq" | wc -l)
"$PDQ" ppl --model "$tmp/q" $E --eval-tokens 200 --kld $M --no-kld-cache >"$tmp/k5.txt" 2>/dev/null
check no-cache "[ \$(ls '$XDG_CACHE_HOME/pdq' | wc -l) = $n_before ] && grep -q 'Mean    KLD' '$tmp/k5.txt' && grep -q 'Same top-1' '$tmp/k5.txt'"
check top-k "'$PDQ' ppl --model '$tmp/q' $E --eval-tokens 200 --kld $M --kld-top 8 --no-kld-cache 2>/dev/null | grep -q 'top-8 of 512 tokens'"
# quantize --kld: the same numbers for the same weights and windows, from the same cache (to float
# rounding: quantize evaluates the dequantized weights it computed, `pdq ppl` the packed kernels;
# 1e-4 relative, the bound the packed path keeps to the dequantized one: 1e-6 absolute was 1.03e-6 off)
"$PDQ" quantize --model $M --method rtn --wbits 4 --abits none --eval "$tmp/eval.txt" --eval-len 128 --eval-stride 128 \
    --threads 1 --kld --quiet --out "$tmp/qk" >"$tmp/qk.txt" 2>"$tmp/qk.err"
check quantize-kld "grep -q 'FP32 logits reused from' '$tmp/qk.err' && grep -q '^KLD  *mean' '$tmp/qk.txt' &&
    jq -e --slurpfile k '$tmp/k1.json' '(.summary.kld.mean - \$k[0].kld.mean | fabs) < 1e-4 * \$k[0].kld.mean and (.summary.kld.top1 - \$k[0].kld.top1 | fabs) < 1e-3' '$tmp/qk/report.json' >/dev/null"
err kld-vocab "'$PDQ' ppl --model $M $E --kld models/web-bible-llama-19m --no-kld-cache" "vocabulary"
err eval-tokens-bad "'$PDQ' ppl --model $M $E --eval-tokens 1" "--eval-tokens must be an integer in [2,"
exit $fail
