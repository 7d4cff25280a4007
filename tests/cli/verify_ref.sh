#!/usr/bin/env bash
# pdq verify names what it compares with: on a quantized directory the reference is its own
# dequantized weights (weight-only graphs then match it to rounding), --ref DIR the original FP32
# model (then they do not); one last PASS/FAIL line with the tolerance and top-1 x/y, and the exit
# status follows it; default prompts are the first lines of --text FILE or BOS alone.
set -u
PDQ=${1:?usage: verify_ref.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
T=$TINY/test.txt

check quantize-w "'$PDQ' quantize --model $M --method rtn --wbits 4 --abits none --quiet --out '$tmp/w' >/dev/null 2>&1"
check quantize-a "'$PDQ' quantize --model $M --method rtn --wbits 8 --calib $TINY/train.txt --max-seq 32 \
    --act-nsamples 2 --verify-steps 2 --quiet --out '$tmp/a' >/dev/null 2>&1"

# weight-only quantized dir, no --ref: the dequantized weights, matched to float rounding
"$PDQ" verify --model "$tmp/w" --max-seq 32 --steps 4 --json "$tmp/v1.json" >"$tmp/o1" 2>"$tmp/e1"; rc=$?
check deq-pass "[ $rc = 0 ] && tail -1 '$tmp/o1' | grep -q '^PASS  max |dlogit| .* (tol 1.0e-04), top-1 5/5 vs dequantized weights of $tmp/w'"
check deq-named "grep -q '^reference: dequantized weights of' '$tmp/o1' && jq -e '.reference | startswith(\"dequantized weights\")' '$tmp/v1.json' >/dev/null"
check bos-default "grep -q 'prompt: BOS (1) alone' '$tmp/e1' && jq -e '[.steps[] | select(.kind == \"prefill\")] | length == 1' '$tmp/v1.json' >/dev/null"
# the same graphs against the original FP32 model differ by the weight error: judged by top-1,
# and failing a float tolerance
"$PDQ" verify --model "$tmp/w" --ref $M --max-seq 32 --steps 4 --json "$tmp/v2.json" >"$tmp/o2" 2>/dev/null
check ref-top1 "tail -1 '$tmp/o2' | grep -Eq '^(PASS|FAIL)  max \|dlogit\| .* \(no limit\), top-1 [0-9]/5 \(min 0.9\) vs FP32 model $M'"
check ref-json "jq -e '.max_abs_diff > 1e-3 and .reference == \"FP32 model $M\" and .steps_compared == 5' '$tmp/v2.json' >/dev/null"
"$PDQ" verify --model "$tmp/w" --ref $M --max-seq 32 --steps 4 --tol 1e-4 >"$tmp/o2" 2>/dev/null; rc=$?
check ref-fail "[ $rc = 1 ] && tail -1 '$tmp/o2' | grep -q '^FAIL  max |dlogit| .* (tol 1.0e-04), top-1 [0-9]/5 (min 0.9) vs FP32 model $M'"
check ref-loose "'$PDQ' verify --model '$tmp/w' --ref $M --max-seq 32 --steps 4 --tol 100 2>/dev/null | tail -1 | grep -q '^PASS'"
# the FP32 model against itself given as --ref: the same numbers as without --ref
"$PDQ" verify --model $M --max-seq 32 --steps 3 --json "$tmp/v3.json" >/dev/null 2>&1
"$PDQ" verify --model $M --ref $M --max-seq 32 --steps 3 --json "$tmp/v4.json" >/dev/null 2>&1
check ref-self "[ \"\$(jq -c .steps '$tmp/v3.json')\" = \"\$(jq -c .steps '$tmp/v4.json')\" ]"

# fake-quant dir: judged by top-1 (min 0.9) unless --tol is given
"$PDQ" verify --model "$tmp/a" --ref $M --text $T --steps 3 --max-seq 32 --json "$tmp/v5.json" >"$tmp/o5" 2>"$tmp/e5"
check quant-line "tail -1 '$tmp/o5' | grep -Eq '^(PASS|FAIL)  max \|dlogit\| .* \(no limit\), top-1 [0-9]+/16 \(min 0.9\) vs FP32 model'"
check quant-status "[ \"\$(jq .pass '$tmp/v5.json')\" = \"\$(jq '.top1_agree >= 0.9 * .steps_compared' '$tmp/v5.json')\" ]"
check text-prompts "grep -q 'prompts: the first 4 lines of $T' '$tmp/e5' && jq -e '[.steps[] | select(.kind == \"prefill\")] | length == 4' '$tmp/v5.json' >/dev/null"
check min-top1-fail "! '$PDQ' verify --model '$tmp/a' --max-seq 32 --steps 3 --min-top1 1 --tol 0 >/dev/null 2>&1"
# the exported pair names its reference too
check export "'$PDQ' export --model '$tmp/a' --max-seq 32 --whole --quiet --out '$tmp/c' >/dev/null 2>&1"
"$PDQ" verify --circle "$tmp/c" --model "$tmp/a" --ref $M --steps 4 >"$tmp/o6" 2>/dev/null; rc=$?
check circle-ref "[ $rc = 0 ] && tail -1 '$tmp/o6' | grep -q '^PASS  max |circle - in-memory| 0.000e+00 (tol 0.0e+00), tokens identical; top-1 [0-9]/5 vs FP32 model $M'"

err ref-mismatch "'$PDQ' verify --model $M --ref models/web-bible-llama-19m --max-seq 16 --steps 1" "is not the same model"
err text-and-prompt "'$PDQ' verify --model $M --text $T --prompt hi --max-seq 16 --steps 1" "it excludes --prompt/--ids"
printf '\n\n' >"$tmp/empty.txt"
err text-empty "'$PDQ' verify --model $M --text '$tmp/empty.txt' --max-seq 16 --steps 1" "no non-empty line"
exit $fail
