#!/usr/bin/env bash
# pdq export --append-bucket 1,4,16: every bucket file under TICO's names, the manifest's bucket
# list; pdq chat --circle appends each later turn through the buckets (the plan it prints) and
# replies with the tokens of the in-memory chat fed token by token; verify --circle --append
# compares every appended token with the in-memory runtime and the FP32 reference; bad lists.
set -u
PDQ=${1:?usage: export_buckets.sh PDQ_BINARY}
M=models/web-bible-llama-19m
. "$(dirname "$0")/lib/checks.sh"
O=$tmp/out

"$PDQ" export --model $M --max-seq 48 --out $O --append-bucket 16,1,4 --quiet || bad "export exit status"
missing=""
for q in 1 4 16; do
    for l in 0 1 2 3; do [ -s $O/decoder_layer_append_prefill_q${q}_$l.circle ] || missing="$missing q${q}_$l"; done
done
for q in 4 16; do [ -s $O/model_append_prefill_q$q.circle ] || missing="$missing model_q$q"; done
check bucket-files "[ -z '$missing' ] || { echo 'missing:$missing'; false; }"
check no-old-names "! ls $O | grep -q 'decoder_layer_append_q'"
check manifest-buckets "jq -e '.append_buckets == [1,4,16] and (.bucket_rule | test(\"largest\"))' $O/manifest.json >/dev/null"
check manifest-files "jq -e '.files.decoder_layer_append_prefill_q16_3.inputs[2].shape == [1,2,32,32]' $O/manifest.json >/dev/null"

# chat: turn 2 has 13 tokens at length 10 (prompt 7 + 3 fed replies; the 4th reply token opens the turn)
printf 'In the beginning, God created\nAnd God said, Let there be light, and there was\nJesus wept.\n' >$tmp/turns
for pl in "" --per-layer; do
    "$PDQ" chat --circle $O $pl --max-new 4 --show-plan <$tmp/turns >$tmp/chat 2>$tmp/plan || bad "chat --circle$pl exit status"
    check "chat-plan$pl" "grep -q '^turn 2: 13 tokens at length 10: buckets 4 4 4 1\$' $tmp/plan"
    "$PDQ" chat --model $M --max-seq 48 --bucket 1 --max-new 4 <$tmp/turns >$tmp/chat_mem 2>/dev/null
    check "chat-replies$pl" "cmp -s $tmp/chat $tmp/chat_mem && [ -s $tmp/chat ]"
done

"$PDQ" chat --circle $O --chunk-prefill --show-plan --max-new 4 <$tmp/turns >$tmp/chat_chunk 2>$tmp/plan
check chat-chunked-prefill "grep -q '^turn 1: 7 tokens at length 0: buckets 4 1 1 1\$' $tmp/plan && cmp -s $tmp/chat_chunk $tmp/chat_mem"

for pl in "" --per-layer; do
    v=$("$PDQ" verify --circle $O $pl --model $M --prompt "In the beginning, God created" --steps 3 \
        --append "And God said, Let there be light, and there was light. And God saw the light" 2>&1)
    st=$?
    check "verify-append$pl" "[ $st = 0 ] && grep -q 'tokens identical' <<<\"\$v\" && grep -q '^append 20 tokens at length 10: buckets 16 4\$' <<<\"\$v\""
done

err bad-zero "'$PDQ' export --model $M --max-seq 48 --out $tmp/b --append-bucket 0" "must be in [1, max_seq-1 = 47]"
err bad-big "'$PDQ' export --model $M --max-seq 48 --out $tmp/b --append-bucket 4,48" "48 must be in [1, max_seq-1 = 47]"
err bad-list "'$PDQ' export --model $M --max-seq 48 --out $tmp/b --append-bucket 4,,8" "comma-separated"
err bad-hybrid "'$PDQ' export --model $M --max-seq 48 --out $tmp/b --hybrid" "needs a pdq quantized checkpoint"
exit $fail
