#!/usr/bin/env bash
# pdq verify / generate --static / chat: the static runtime against the reference model through
# the command line: tolerance exit status, the JSON schema, every option, append, errors.
set -u
PDQ=${1:?usage: verify.sh PDQ_BINARY}
M=models/web-bible-llama-19m
fail=0
check() { # name expected actual
    if [ "$2" == "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Two rows of different lengths, 3 decode steps, an appended turn in buckets of 2; every option.
for opts in "--rope hf --scale-fusion none --layout batched --padding left" \
            "--rope pre_negated_sin --scale-fusion k_proj --layout unrolled --padding right"; do
    # shellcheck disable=SC2086
    "$PDQ" verify --model $M --prompt "In the beginning God created" --ids "1 512 278" --max-seq 32 --steps 3 \
        --append " and the earth" --bucket 2 --tol 1e-4 --json "$tmp/v.json" $opts > "$tmp/out.txt"
    check "tol-rc [$opts]" 0 "$?"
    check "lines [$opts]" 1 "$(grep -c 'max |dlogit| over all steps' "$tmp/out.txt")"
    # JSON: 2 prefill + 6 decode + 2 rows x turn-length append entries, schema fields, worst <= 1e-4.
    res=$(python3 - "$tmp/v.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["steps"]
kinds = [e["kind"] for e in s]
ok = all(set(e) == {"step", "kind", "row", "mean_abs_diff", "max_abs_diff", "peir", "top1_agree"} for e in s)
ok = ok and kinds.count("prefill") == 2 and kinds.count("decode") == 6 and kinds.count("append") >= 2
ok = ok and all(isinstance(e["top1_agree"], bool) and e["top1_agree"] for e in s)
ok = ok and max(e["max_abs_diff"] for e in s) == d["max_abs_diff"] <= 1e-4
ok = ok and all(0 <= e["mean_abs_diff"] <= e["max_abs_diff"] and e["peir"] >= 0 for e in s)
ok = ok and sorted({e["row"] for e in s}) == [0, 1]
print("ok" if ok else "bad " + json.dumps(d)[:400])
PY
)
    check "json [$opts]" ok "$res"
done

# An impossible tolerance fails with status 1 and says so.
err=$("$PDQ" verify --model $M --ids "1 512 278 6763" --max-seq 16 --steps 1 --tol 0 2>&1 >/dev/null); rc=$?
check tol-zero-rc 1 "$rc"
case "$err" in *exceeds*) echo "ok   tol-zero-msg";; *) echo "FAIL tol-zero-msg: $err"; fail=1;; esac

# Errors: prompt longer than max_seq, append overflowing the cache, bad option values.
err=$("$PDQ" verify --model $M --ids "1 2 3 4 5 6 7 8 9" --max-seq 8 --steps 1 2>&1 >/dev/null); rc=$?
check long-prompt-rc 1 "$rc"
case "$err" in *max_seq*) echo "ok   long-prompt-msg";; *) echo "FAIL long-prompt-msg: $err"; fail=1;; esac
err=$("$PDQ" verify --model $M --ids "1 2 3" --max-seq 8 --steps 2 --append-ids "5 6 7 8 9" --bucket 2 2>&1 >/dev/null); rc=$?
check append-full-rc 1 "$rc"
case "$err" in *append*) echo "ok   append-full-msg";; *) echo "FAIL append-full-msg: $err"; fail=1;; esac
"$PDQ" verify --model $M --ids "1 2" --max-seq 8 --steps 1 --rope sideways >/dev/null 2>&1; check bad-rope-rc 2 "$?"
"$PDQ" verify --model $M --ids "1 2" --max-seq 8 --steps 1 --padding middle >/dev/null 2>&1; check bad-pad-rc 2 "$?"
"$PDQ" verify --model $M --max-seq 8 --steps 1 >/dev/null 2>&1; check no-prompt-bos-rc 0 "$?"

# generate --static: same greedy ids as the reference generate.
ids() { jq -c '{prompt_ids, ids}'; } # generate --json also holds text and timings
ref=$("$PDQ" generate --model $M --prompt "In the beginning" --max-new 24 --json | ids)
for layout in batched unrolled; do
    got=$("$PDQ" generate --static --model $M --prompt "In the beginning" --max-new 24 --max-seq 40 --layout $layout --json | ids)
    check "generate-static-$layout" "$ref" "$got"
done
# batch of prompts: each row as the reference alone would generate it
printf 'In the beginning\nAnd God said unto Moses\n' > "$tmp/prompts.txt"
got=$("$PDQ" generate --static --model $M --batch-prompts "$tmp/prompts.txt" --max-new 8 --max-seq 32 --json | jq -c '[.rows[] | {prompt_ids, ids}]')
r0=$("$PDQ" generate --model $M --prompt "In the beginning" --max-new 8 --json | ids)
r1=$("$PDQ" generate --model $M --prompt "And God said unto Moses" --max-new 8 --json | ids)
check generate-static-batch "[$r0,$r1]" "$got"

# chat: two piped turns produce two reply lines; the second turn goes through append.
out=$(printf 'In the beginning God\nAnd he said unto them\n' | "$PDQ" chat --model $M --max-seq 64 --max-new 6 --bucket 4)
check chat-rc 0 "$?"
check chat-lines 2 "$(printf '%s\n' "$out" | wc -l)"

exit $fail
