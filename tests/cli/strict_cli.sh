#!/usr/bin/env bash
# What the strict command line does when the input is fine: pdq --version and pdq help CMD;
# quantize prints its configuration first and creates --out (parents too) before any work;
# commands that run a quantized dir take max_seq from its ptq.json (no --max-seq needed); one
# max_seq default (256) for an HF dir; export of a weight-only dir says it writes float files.
# (The bad inputs are tests/cli/bad_inputs.sh.)
set -u
PDQ=${1:?usage: strict_cli.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
C=$TINY/train.txt

check version "'$PDQ' --version | grep -qE '^pdq [0-9]+\.[0-9]+\.[0-9]+$'"
check help-cmd "[ \"\$('$PDQ' help verify)\" == \"\$('$PDQ' verify --help)\" ] && '$PDQ' help verify | grep -q '^usage: pdq verify'"
check help-list "'$PDQ' help | grep -q '^  quantize '"
for c in $("$PDQ" help | awk '/^  [a-z]/ {print $1}'); do  # every listed command answers help with its usage
    check "help-$c" "'$PDQ' help $c | grep -q '^usage: pdq $c'"
done

# quantize: RTN w8 + int16 activations at max_seq 48 into a dir whose parents do not exist yet
q="$tmp/deep/er/q"
if "$PDQ" quantize --model $M --calib $C --method rtn --wbits 8 --abits 16 --max-seq 48 --act-nsamples 2 \
    --verify-steps 4 --quiet --threads 1 --out "$q" >"$tmp/out" 2>"$tmp/err"; then ok quantize-run; else bad quantize-run; cat "$tmp/err"; fi
check summary-first "head -n 1 '$tmp/err' | grep -qF 'pdq quantize: $M -> $q (5 layers, hidden 64, vocab 512)'"
check summary-lines "grep -q '^  weights      rtn w8 per-channel asym' '$tmp/err' && grep -q '^  activations  int16, minmax observer, max_seq 48' '$tmp/err'"
check out-created "[ -f '$q/ptq.json' ] && [ ! -e '$q/.pdq-write-probe' ]"

# the quantized dir's own max_seq: verify without --max-seq runs (48 from ptq.json) ...
check verify-stored "'$PDQ' verify --model '$q' --ids '1 403 407' --steps 3 --threads 1 >/dev/null 2>&1"
# ... and it is 48 indeed: a prompt + steps past 48 overflows the static cache
err verify-stored-48 "'$PDQ' verify --model '$q' --ids '1 403 407' --steps 50 --threads 1" "max_seq 48"
"$PDQ" export --model "$q" --out "$tmp/qx" --whole --quiet --threads 1 2>/dev/null
check export-stored "jq -e '.max_seq == 48 and .quantized == true' '$tmp/qx/manifest.json' >/dev/null"
check generate-static-stored "'$PDQ' generate --static --model '$q' --ids '1 403' --max-new 3 --threads 1 >/dev/null 2>&1"

# an HF dir: the one default, 256
"$PDQ" export --model $M --out "$tmp/hx" --whole --quiet --threads 1
check export-default "jq -e '.max_seq == 256' '$tmp/hx/manifest.json' >/dev/null"

# weight-only quantized dir: export says what it writes and how to get .q.circle files
"$PDQ" quantize --model $M --method rtn --wbits 8 --abits none --quiet --threads 1 --out "$tmp/w" >/dev/null 2>&1
"$PDQ" export --model "$tmp/w" --out "$tmp/wx" --whole --max-seq 32 --quiet --threads 1 2>"$tmp/werr"
check weight-only-note "grep -q 'writing float .circle' '$tmp/werr' && grep -q -- '--calib FILE --abits 16' '$tmp/werr'"
check weight-only-files "[ -f '$tmp/wx/model_prefill.circle' ] && [ ! -e '$tmp/wx/model_prefill.q.circle' ]"
exit $fail
