#!/usr/bin/env bash
# Every bad command-line input of tests/cli/bad_inputs.tsv: the command must exit with the
# listed status (2: the command line is wrong, 1: a named file or dir is unusable), print the
# listed message, and never answer with the whole usage text. The table in tests/README.md is
# generated from the same file and checked here, so the documented cases and the tested ones
# cannot drift apart.
#   bash tests/cli/bad_inputs.sh PDQ_BINARY   run the cases (ctest: cli_bad_inputs)
#   bash tests/cli/bad_inputs.sh --table      print the README rows of these cases
set -u
here=$(cd "$(dirname "$0")" && pwd)
cases="$here/bad_inputs.tsv"
readme="$here/../README.md"
test_name=cli_bad_inputs

# README rows, one section per class, in the file's order.
table() {
    local last="" class code want cmd
    while IFS=$'\t' read -r class code want cmd; do
        case "$class" in ''|'#'*) continue;; esac
        if [ "$class" != "$last" ]; then
            [ -n "$last" ] && echo
            echo "### CLI: $class"
            echo
            echo "| class | input | expected error | test |"
            echo "| --- | --- | --- | --- |"
            last=$class
        fi
        # a "|" inside a table cell must be escaped, code span or not
        echo "| $class | \`${cmd//|/\\|}\` | exit $code, \`${want//|/\\|}\` | $test_name |"
    done <"$cases"
}

if [ "${1:-}" = "--table" ]; then table; exit 0; fi
PDQ=${1:?usage: bad_inputs.sh PDQ_BINARY | --table}
source "$here/lib/checks.sh"

# Fixtures. short-tok: the bundled TinyStories model with its tokenizer cut to 400 of its 512
# tokens (merges that need a removed token dropped), so generated ids can fall outside it.
need_stories
M=$STORIES C=$TINY/train.txt E=$TINY/test.txt T=$tmp
mkdir -p "$T/adir" "$T/short-tok"
: >"$T/empty.txt"
echo "Once upon a time." >"$T/tiny.txt"
echo "not a directory" >"$T/afile"
cp "$M"/config.json "$M"/model.safetensors "$M"/tokenizer_config.json "$T/short-tok/"
python3 - "$M/tokenizer.json" "$T/short-tok/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
m = t["model"]
m["vocab"] = {k: v for k, v in m["vocab"].items() if v < 400}
m["merges"] = [x for x in m["merges"] if all(p in m["vocab"] for p in x.split(" ") + [x.replace(" ", "")])]
json.dump(t, open(sys.argv[2], "w"))
PY
# q16: an int16-activation quantized checkpoint calibrated at max_seq 32 (rope hf, batched)
"$PDQ" quantize --model $M --calib $C --method rtn --wbits 8 --max-seq 32 --act-nsamples 1 --verify-steps 2 --quiet \
    --threads 1 --out "$T/q16" >"$T/q16.log" 2>&1 || { bad "fixture q16: $(cat "$T/q16.log")"; }
n=0
while IFS=$'\t' read -r class code want cmd; do
    case "$class" in ''|'#'*) continue;; esac
    n=$((n + 1))
    run="timeout 120 \"\$PDQ\"${cmd#pdq}" # every case starts with "pdq "
    out=$(eval "$run" 2>&1 </dev/null); rc=$?
    name="$class: $cmd"
    if [ "$rc" != "$code" ]; then bad "$name: exit $rc, expected $code: $(head -c 600 <<<"$out")"
    elif ! grep -qF -- "$want" <<<"$out"; then bad "$name: no '$want' in: $(head -c 600 <<<"$out")"
    elif grep -q "^usage: pdq" <<<"$out"; then bad "$name: answered with the usage text"
    elif grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" <<<"$out"; then bad "$name: sanitizer report: $(head -c 600 <<<"$out")"
    else ok "$name"
    fi
done <"$cases"

# The README lists exactly these cases, as --table prints them.
expected=$(table | grep "| $test_name |$")
listed=$(grep "| $test_name |$" "$readme")
if [ "$expected" == "$listed" ]; then ok "tests/README.md lists the $n cases"
else bad "tests/README.md and bad_inputs.tsv differ (regenerate with: bash tests/cli/bad_inputs.sh --table):
$(diff <(echo "$expected") <(echo "$listed") | head -20)"
fi
[ "$n" -ge 60 ] && ok "$n cases (>= 60)" || bad "only $n cases"
exit $fail
