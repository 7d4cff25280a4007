#!/usr/bin/env bash
# pdq chat like llama-cli: a banner on stderr, replies on stdout as they are produced (read back
# through a coprocess before stdin closes), /reset (the same line then gets the same reply as in a
# fresh chat), /stats, /exit; a full cache drops the oldest turns (or resets) and the chat goes
# on; a first line longer than the cache is cut with a warning; sampling is seeded; --circle runs
# the exported pair and a quantized directory its fake-quant graphs, both matching generate.
set -u
PDQ=${1:?usage: chat.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
L1="Once upon a time"
L2="The cat sat"

printf '%s\n%s\n/reset\n%s\n/stats\n/exit\nnever answered\n' "$L1" "$L2" "$L1" |
    "$PDQ" chat --model $M --max-seq 64 --max-new 12 >"$tmp/o" 2>"$tmp/e"; rc=$?
check rc "[ $rc = 0 ]"
check banner "grep -q '^== pdq chat: static graphs of $M (float activations)' '$tmp/e' && grep -q '/exit ends (or Ctrl-D), /reset' '$tmp/e'"
check replies "[ \$(wc -l <'$tmp/o') = 3 ]"
check reset-same "[ \"\$(sed -n 1p '$tmp/o')\" = \"\$(sed -n 3p '$tmp/o')\" ] && [ \"\$(sed -n 1p '$tmp/o')\" != \"\$(sed -n 2p '$tmp/o')\" ]"
check stats "grep -Eq '^\[turns 3 \(1 in the cache\), cache [0-9]+/64 tokens, .* resets 1\]' '$tmp/e'"
# the first reply is the greedy continuation generate gives
gen=$("$PDQ" generate --model $M --prompt "$L1" --max-new 12 2>/dev/null)
r1=$(sed -n 1p "$tmp/o")
check first-reply "[ -n \"\$r1\" ] && [[ \"\$gen\" == *\"\$r1\" ]]"

# interactive: the reply arrives while stdin is still open
coproc CHAT { "$PDQ" chat --model $M --max-seq 64 --max-new 8 2>/dev/null; }
echo "$L1" >&"${CHAT[1]}"
if IFS= read -r -t 60 live <&"${CHAT[0]}" && [ -n "$live" ]; then ok live-reply; else bad live-reply; fi
echo "/exit" >&"${CHAT[1]}"
wait "$CHAT_PID"; check live-exit "[ $? = 0 ]"

# a small cache: turns keep coming, the oldest are dropped, every line gets a reply
for i in 1 2 3 4 5 6; do echo "$L2 number $i"; done >"$tmp/many"
"$PDQ" chat --model $M --max-seq 64 --max-new 10 <"$tmp/many" >"$tmp/o" 2>"$tmp/e"; rc=$?
check drop "[ $rc = 0 ] && [ \$(wc -l <'$tmp/o') = 6 ] && grep -q 'context full: dropped the 1 oldest turn after the first' '$tmp/e'"
"$PDQ" chat --model $M --max-seq 40 --max-new 10 --on-full reset <"$tmp/many" >"$tmp/o" 2>"$tmp/e"; rc=$?
check reset-on-full "[ $rc = 0 ] && [ \$(wc -l <'$tmp/o') = 6 ] && grep -q 'context full: starting over' '$tmp/e'"
python3 -c "print(' '.join(['word'] * 200))" | "$PDQ" chat --model $M --max-seq 32 --max-new 5 >"$tmp/o" 2>"$tmp/e"; rc=$?
check long-line "[ $rc = 0 ] && [ \$(wc -l <'$tmp/o') = 1 ] && grep -q 'the cache holds 32: keeping its last' '$tmp/e'"

# sampling flags: a seed gives the same replies again
s1=$(printf '%s\n%s\n' "$L1" "$L2" | "$PDQ" chat --model $M --max-seq 64 --temperature 0.9 --top-p 0.95 --seed 7 2>/dev/null)
s2=$(printf '%s\n%s\n' "$L1" "$L2" | "$PDQ" chat --model $M --max-seq 64 --temperature 0.9 --top-p 0.95 --seed 7 2>/dev/null)
check seeded "[ -n \"\$s1\" ] && [ \"\$s1\" = \"\$s2\" ]"

# the exported pair: the same replies as the in-memory graphs with the export's options
check export "'$PDQ' export --model $M --max-seq 64 --whole --quiet --out '$tmp/c' >/dev/null 2>&1"
c1=$(printf '%s\n%s\n' "$L1" "$L2" | "$PDQ" chat --circle "$tmp/c" --max-new 12 2>"$tmp/e")
m1=$(printf '%s\n%s\n' "$L1" "$L2" | "$PDQ" chat --model $M --max-seq 64 --max-new 12 --rope pre_negated_sin --scale-fusion k_proj --layout unrolled 2>/dev/null)
check circle "[ -n \"\$c1\" ] && [ \"\$c1\" = \"\$m1\" ] && grep -q 'the exported Circle pair in' '$tmp/e'"
# a quantized directory: its quantized graphs (integer mode by default), as generate --static runs them
check quantize "'$PDQ' quantize --model $M --calib $TINY/train.txt --method rtn --wbits 8 --max-seq 32 \
    --act-nsamples 2 --verify-steps 2 --quiet --out '$tmp/q' >/dev/null 2>&1"
q1=$(echo "$L1" | "$PDQ" chat --model "$tmp/q" --max-new 8 2>"$tmp/e")
qg=$("$PDQ" generate --static --model "$tmp/q" --max-seq 32 --prompt "$L1" --max-new 8 2>/dev/null)
check quant "grep -q \"integer execution of ptq.json's grids\" '$tmp/e' && [ -n \"\$q1\" ] && [[ \"\$qg\" == *\"\$q1\" ]]"
err both "'$PDQ' chat --model $M --circle '$tmp/c'" "--model and --circle exclude each other"
err bad-on-full "'$PDQ' chat --model $M --on-full never" "--on-full must be drop or reset"
exit $fail
