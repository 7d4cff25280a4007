#!/usr/bin/env bash
# pdq tokenize: the README's Llama-2 examples (HF transformers.js ids), --no-special, --json,
# --file, a directory holding only tokenizer.json, and errors.
set -u
PDQ=${1:?usage: tokenize.sh PDQ_BINARY}
M=models/web-bible-llama-19m
fail=0
check() { # name expected actual
    if [ "$2" == "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}

check hello "1 15043 29892 590 11203 338 274 1082" "$("$PDQ" tokenize --model $M --text "Hello, my dog is cute")"
check genesis "1 512 278 6763 29892 4177 2825 278 14200 575 322 278 8437 29889" \
    "$("$PDQ" tokenize --model $M --text "In the beginning, God created the heavens and the earth.")"
check no-special "15043 29892 590 11203 338 274 1082" "$("$PDQ" tokenize --model $M --text "Hello, my dog is cute" --no-special)"
check json '{"ids": [1, 15043, 29892, 590, 11203, 338, 274, 1082]}' "$("$PDQ" tokenize --model $M --text "Hello, my dog is cute" --json)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'Hello, my dog is cute' > "$tmp/in.txt"
check file "1 15043 29892 590 11203 338 274 1082" "$("$PDQ" tokenize --model $M --file "$tmp/in.txt")"
# A directory with only tokenizer.json: the post-processor still adds <s>.
mkdir "$tmp/tokonly" && cp $M/tokenizer.json "$tmp/tokonly/"
check tokenizer-only "1 15043 29892 590 11203 338 274 1082" "$("$PDQ" tokenize --model "$tmp/tokonly" --text "Hello, my dog is cute")"
# Llama-3 fixture (no BOS in this early tokenizer.json; ids from transformers.js).
check llama3 "9906 11 856 5679 374 19369" "$("$PDQ" tokenize --model tests/fixtures/tokenizers/llama3 --text "Hello, my dog is cute")"
# The corpus test split with BOS has as many ids as its HF token file.
n=$("$PDQ" tokenize --model $M --file data/web-bible/test.txt | wc -w)
check test-split-count "$(( $(stat -c %s data/web-bible/tokens-llama2/test.u16.bin) / 2 ))" "$n"

# Errors: non-zero exit and a message naming the problem.
err=$("$PDQ" tokenize --model "$tmp/nowhere" --text hi 2>&1 >/dev/null); rc=$?
check missing-dir-rc 1 "$rc"
case "$err" in *nowhere/tokenizer.json*) echo "ok   missing-dir-msg";; *) echo "FAIL missing-dir-msg: $err"; fail=1;; esac
echo '{"model": {"type": "WordPiece", "vocab": {"a": 0}}}' > "$tmp/tokonly/tokenizer.json"
err=$("$PDQ" tokenize --model "$tmp/tokonly" --text hi 2>&1 >/dev/null); rc=$?
check wordpiece-rc 1 "$rc"
case "$err" in *WordPiece*) echo "ok   wordpiece-msg";; *) echo "FAIL wordpiece-msg: $err"; fail=1;; esac
"$PDQ" tokenize --model $M >/dev/null 2>&1; check no-text-rc 2 "$?"
"$PDQ" tokenize --model $M --text a --file "$tmp/in.txt" >/dev/null 2>&1; check both-rc 2 "$?"
"$PDQ" tokenize --model $M --text a --bogus >/dev/null 2>&1; check unknown-flag-rc 2 "$?"
"$PDQ" tokenize --model $M --file "$tmp/missing.txt" >/dev/null 2>&1; check missing-file-rc 1 "$?"
exit $fail
