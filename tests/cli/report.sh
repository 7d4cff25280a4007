#!/usr/bin/env bash
# pdq report: `pdq quantize` writes OUTDIR/report.html next to report.json; the page is one
# self-contained HTML file whose inline SVG charts draw the numbers of report.json and ptq.json
# (tests/cli/lib/check_report.py parses it with html.parser and xml.etree); a sweep array in
# report.json adds the ppl-vs-bits chart; bad directories and bad JSON are named errors.
set -u
PDQ=${1:?usage: report.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
head -c 4000 $TINY/test.txt >"$tmp/eval.txt"
q="$tmp/q"
check quantize "'$PDQ' quantize --model $M --calib $TINY/train.txt --method gptq --wbits 4 --nsamples 4 \
    --seq-len 64 --quiet --threads 2 --max-seq 32 --act-nsamples 2 --verify-steps 6 --eval '$tmp/eval.txt' \
    --out '$q' >'$tmp/log' 2>&1 || { cat '$tmp/log'; false; }"
check written "[ -s '$q/report.html' ]"
if python3 "$(dirname "$0")/lib/check_report.py" "$q/report.html" "$q/report.json" "$q/ptq.json" >"$tmp/py" 2>&1; then
    ok page
else
    bad page; cat "$tmp/py"
fi
check page-has-losses "grep -q 'class=\"chart losses\"' '$q/report.html'"

# A sweep (rows as a sweep script would merge them) adds a chart; --out writes elsewhere.
jq '.sweep = [{"method":"rtn","wbits":8,"ppl":10.5},{"method":"rtn","wbits":4,"ppl":12.25},
              {"method":"gptq","wbits":4,"ppl":11.0},{"method":"gptq","wbits":3,"ppl":13.5}]' "$q/report.json" >"$tmp/r.json"
mkdir -p "$tmp/s" && cp "$tmp/r.json" "$tmp/s/report.json" && cp "$q/ptq.json" "$tmp/s/"
check report-cmd "'$PDQ' report '$tmp/s' --out '$tmp/sweep.html' >/dev/null 2>&1 && [ -s '$tmp/sweep.html' ] && [ ! -e '$tmp/s/report.html' ]"
if python3 "$(dirname "$0")/lib/check_report.py" "$tmp/sweep.html" "$tmp/s/report.json" "$tmp/s/ptq.json" >"$tmp/py" 2>&1 &&
    grep -q 'ok   sweep-points' "$tmp/py"; then
    ok sweep
else
    bad sweep; cat "$tmp/py"
fi
# RTN without activations: no losses, no ptq.json, the page still parses and says so.
check rtn "'$PDQ' quantize --model $M --method rtn --wbits 8 --abits none --quiet --out '$tmp/r' >/dev/null 2>&1 &&
    python3 '$(dirname "$0")/lib/check_report.py' '$tmp/r/report.html' '$tmp/r/report.json' >/dev/null && grep -q 'an RTN run has no Hessian' '$tmp/r/report.html'"

err missing "'$PDQ' report '$tmp/none'" "$tmp/none/report.json: cannot open"
mkdir -p "$tmp/badj" && echo '{"modules": [' >"$tmp/badj/report.json"
err bad-json "'$PDQ' report '$tmp/badj'" "report.json: not valid JSON"
err usage "'$PDQ' report" "usage: pdq report"
exit $fail
