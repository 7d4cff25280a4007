#!/usr/bin/env bash
# The packed weight-only path from the command line: a quantized stories260K OUTDIR gives the
# same ppl, greedy ids and logits (within rounding) through generate/ppl/logits as its dequantized
# HF copy (OUTDIR/hf, today's f32 path), and pdq bench prints its documented JSON rows for both
# paths; bad bench arguments are errors.
set -u
PDQ=${1:?usage: packed.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES
Q=$tmp/q4

"$PDQ" quantize --model $M --method rtn --wbits 4 --group 32 --partial-groups --abits none --quiet --out $Q >/dev/null \
    || bad "quantize exit status"
a=$("$PDQ" ppl --model $Q --text $TINY/test.txt --max-len 128 --json --threads 2 | jq -r .ppl)
b=$("$PDQ" ppl --model $Q/hf --text $TINY/test.txt --max-len 128 --json --threads 1 | jq -r .ppl)
python3 -c "import sys; a,b=float('$a'),float('$b'); sys.exit(0 if abs(a-b)/b < 1e-4 else 1)" \
    && ok "ppl packed $a vs dequantized $b" || bad "ppl packed $a vs dequantized $b"

ga=$("$PDQ" generate --model $Q --ids "1 400 20" --max-new 24 --json | jq -c .ids)
gb=$("$PDQ" generate --model $Q/hf --ids "1 400 20" --max-new 24 --json | jq -c .ids)
[ "$ga" = "$gb" ] && ok "greedy ids equal" || bad "greedy ids packed $ga vs dequantized $gb"

"$PDQ" logits --model $Q --ids "1 400 20 31 99" --out $tmp/a.npy && "$PDQ" logits --model $Q/hf --ids "1 400 20 31 99" --out $tmp/b.npy \
    || bad "logits exit status"
python3 - "$tmp/a.npy" "$tmp/b.npy" <<'PY' && ok "logits close" || bad "logits differ"
import struct, sys
def load(p):
    d = open(p, 'rb').read()
    hl = struct.unpack('<H', d[8:10])[0]
    body = d[10 + hl:]
    return struct.unpack('<%df' % (len(body) // 4), body)
a, b = load(sys.argv[1]), load(sys.argv[2])
m = max(abs(x) for x in b)
sys.exit(0 if len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= 1e-4 * m else 1)
PY

js=$("$PDQ" bench --model $M --model $Q -p 16 -n 4 -t 1,2 -r 2 --json) || bad "bench exit status"
[ "$(jq length <<<"$js")" = 8 ] && ok "bench rows" || bad "bench rows: $js"
[ "$(jq -r '[.[] | select(.path == "packed")] | length' <<<"$js")" = 4 ] && ok "bench packed rows" || bad "bench packed rows"
jq -e 'all(.[]; .avg_ts > 0 and .avg_ts_cpu > 0 and (.samples_ts | length) == 2 and .weight_bytes > 0 and .peak_rss_mib > 0)' \
    <<<"$js" >/dev/null && ok "bench fields" || bad "bench fields: $js"
jq -e '[.[] | select(.test == "tg4")] | all(.avg_gbps > 0 and .n_gen == 4 and .n_prompt == 16)' <<<"$js" >/dev/null \
    && ok "bench decode rows" || bad "bench decode rows"
jq -e '[.[] | select(.test == "pp16")] | all(.n_gen == 0 and .n_prompt == 16)' <<<"$js" >/dev/null \
    && ok "bench prefill rows" || bad "bench prefill rows"
md=$("$PDQ" bench --model $Q -p 8 -n 0 -t 1 -r 1 2>/dev/null)
grep -q "| packed |" <<<"$md" && ok "bench markdown" || bad "bench markdown: $md"

"$PDQ" bench --model $Q -t 0 >/dev/null 2>&1 && bad "bench -t 0 accepted" || ok "bench -t 0 rejected"
"$PDQ" bench --model $Q -p 1x >/dev/null 2>&1 && bad "bench -p 1x accepted" || ok "bench -p 1x rejected"
"$PDQ" bench --model $tmp/nope >/dev/null 2>&1 && bad "bench missing model accepted" || ok "bench missing model rejected"
"$PDQ" bench >/dev/null 2>&1 && bad "bench without --model accepted" || ok "bench without --model rejected"
exit $fail
