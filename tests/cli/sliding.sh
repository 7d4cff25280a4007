#!/usr/bin/env bash
# Sliding-window layers in the static contract, on synthetic checkpoints (no shared data): a mixed
# Qwen2 (use_sliding_window, max_window_layers 2 of 4: two full layers, two sliding ones with a
# window of 6, so rings of 5 slots at max_seq 32), an all-sliding Mistral and a Gemma 3 whose
# sliding layers take a local RoPE table.
# - pdq verify (static graphs vs the FP32 reference model, which reads the window per layer over a
#   full cache): every padding side x layout x RoPE convention x scale fusion, a prompt longer
#   than the window, 12 decode steps and an append bucket of 7 (> W) within 1e-4;
# - the float Circle export (whole and per layer, append buckets 4 and 8) equals the in-memory
#   runtime exactly, prefill, decode and bucketed appends; the manifest and pdq inspect give the
#   per-layer types and ring shapes; a manifest whose ring or layer types disagree is refused;
# - pdq bench --static reports the KV-cache bytes of the formula and decodes at --decode-at;
# - with ../shared's stories260K tokenizer and text: GPTQ w4 quantize + export of the mixed model,
#   the exported pair equal to the in-memory integer run.
set -u
PDQ=${1:?usage: sliding.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
SYNTH=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}/pdq_synth
q2=$tmp/q2
"$SYNTH" --family qwen2 --out $q2 --layers 4 --sliding-window 6 --max-window-layers 2 --vocab 512 >/dev/null || bad "synth qwen2"
"$SYNTH" --family mistral --out $tmp/mi --layers 2 --sliding-window 5 --vocab 512 >/dev/null || bad "synth mistral"
check info-layers "'$PDQ' info --model $q2 --json | jq -e '.layer_types == [\"full_attention\",\"full_attention\",\"sliding_attention\",\"sliding_attention\"]' >/dev/null"

for M in $q2 $tmp/mi; do
    all=1
    for pad in left right; do for lay in batched unrolled; do for rope in hf pre_negated_sin; do for sf in none k_proj; do
        out=$("$PDQ" verify --model "$M" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --ids "7 8 9" --max-seq 32 --steps 12 \
              --padding $pad --layout $lay --rope $rope --scale-fusion $sf --append-ids "3 4 5 6 7 8 9" --bucket 7 2>&1 | tail -n 1)
        # within 1e-4 and every top-1 the same (x/x)
        if ! [[ "$out" =~ ^PASS\ \ max\ \|dlogit\|\ .*\(tol\ 1\.0e-04\),\ top-1\ ([0-9]+)/([0-9]+)\ vs ]] ||
            [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
            bad "verify $M $pad $lay $rope $sf: $out"
            all=0
        fi
    done; done; done; done
    [ $all = 1 ] && ok "$(basename $M): verify within 1e-4, 16 option combinations, both paddings"
done

O=$tmp/q2c
"$PDQ" export --model $q2 --out $O --max-seq 32 --append-bucket 4,8 --quiet >/dev/null 2>&1 || bad "export"
check manifest-types "jq -e '.model.layer_types == [\"full_attention\",\"full_attention\",\"sliding_attention\",\"sliding_attention\"] and .kv_cache.ring_slots == 5 and .kv_cache.layer_slots == [31,31,5,5]' $O/manifest.json >/dev/null"
check inspect-shapes "'$PDQ' inspect $O --json | jq -e '[.layers[].past_key[2]] == [31,31,5,5] and [.layers[].decode_mask[2]] == [32,32,6,6]' >/dev/null"
check decode-file-shape "'$PDQ' inspect $O/decoder_layer_decode_3.circle | grep -q '(1,2,5,16) model.layers.3.past_key'"
check whole-masks "'$PDQ' inspect $O/model_decode.circle | grep -q '(1,1,6) sliding_attention_mask'"
for pl in "" --per-layer; do
    v=$("$PDQ" verify --circle $O $pl --model $q2 --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 6 \
        --append-ids "3 4 5 6 7 8 9 10 11 12 13 14 15" 2>&1)
    check "circle$pl == in-memory" "grep -q '^PASS  max |circle - in-memory| 0.000e+00' <<<\"\$v\" && grep -q 'append 14 tokens at length 18: buckets 8 4 1 1' <<<\"\$v\""
done
B=$tmp/bad
cp -r $O $B
jq '.kv_cache.ring_slots = 6' $O/manifest.json >$B/manifest.json
err bad-ring "'$PDQ' verify --circle $B --model $q2 --ids '5 9' --steps 2" "kv_cache.ring_slots = 6: the contract's ring for window 6 at max_seq 32 is 5"
jq '.model.layer_types = ["full_attention","sliding_attention","sliding_attention","sliding_attention"] | del(.kv_cache.layer_slots)' $O/manifest.json >$B/manifest.json
err bad-types "'$PDQ' verify --circle $B --model $q2 --ids '5 9' --steps 2" "model.layers.1.past_key has shape (1,2,31,16), the manifest's contract needs (1,2,5,16)"
jq '.model.layer_types = ["full_attention"]' $O/manifest.json >$B/manifest.json
err bad-types-count "'$PDQ' verify --circle $B --model $q2 --ids '5 9' --steps 2" "model.layer_types has 1 entries, num_hidden_layers is 4"

# KV-cache bytes: (full layers x (max_seq-1) + sliding layers x (W-1)) x n_kv x hd x 2 x 4
kvb=$("$PDQ" bench --model $q2 --static -p 0 -n 4 -r 1 -t 1 --decode-at 20 --max-seq 32 --json 2>/dev/null | jq '.[0].kv_cache_bytes')
check bench-kv-bytes "[ '$kvb' = $(((2 * 31 + 2 * 5) * 2 * 16 * 2 * 4)) ]"
err bench-max-seq "'$PDQ' bench --model $q2 --static -p 0 -n 4 -r 1 --decode-at 30 --max-seq 32" "--max-seq 32 is shorter than the longest test (34 positions)"

# Gemma 3 (synthetic): every 3rd layer global, window 6 < max_seq 32, sliding layers on the local
# RoPE table (base 10000) and the global layer on rope_theta 1e6: pdq verify within 1e-4, and the
# float Circle export (whole and per layer, buckets 4 and 8) equal to the in-memory runtime, the
# whole-model files taking cos_local / sin_local, the manifest naming each layer's table
g3=$tmp/g3
"$SYNTH" --family gemma3 --out $g3 --layers 3 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --window 6 --window-pattern 3 \
    --rope-theta 1e6 --vocab 512 >/dev/null || bad "synth gemma3"
for pad in left right; do
    out=$("$PDQ" verify --model $g3 --ids "5 9 13 77 2 3 4 8 9 10 11 12" --ids "7 8 9" --max-seq 32 --steps 12 --padding $pad \
          --append-ids "3 4 5 6 7 8 9" --bucket 7 2>&1 | tail -n 1)
    check "gemma3-local-rope verify $pad" "[[ '$out' =~ ^PASS\ \ max\ \|dlogit\|\ .*\(tol\ 1\.0e-04\) ]]"
done
G3=$tmp/g3c
"$PDQ" export --model $g3 --out $G3 --max-seq 32 --append-bucket 4,8 --quiet >/dev/null 2>&1 || bad "gemma3 export"
check gemma3-manifest "jq -e '.rope.layer_tables == [\"local\",\"local\",\"global\"] and .kv_cache.layer_slots == [5,5,31]' $G3/manifest.json >/dev/null"
check gemma3-whole-inputs "'$PDQ' inspect $G3/model_decode.circle | grep -q '(1,1,16) cos_local'"
check gemma3-inspect-tables "'$PDQ' inspect $G3 --json | jq -e '[.layers[].rope_table] == [\"local\",\"local\",\"global\"]' >/dev/null"
check inspect-one-table "'$PDQ' inspect $O --json | jq -e '[.layers[] | has(\"rope_table\")] | any | not' >/dev/null"
for pl in "" --per-layer; do
    v=$("$PDQ" verify --circle $G3 $pl --model $g3 --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 6 \
        --append-ids "3 4 5 6 7 8 9 10 11 12 13 14 15" 2>&1)
    check "gemma3 circle$pl == in-memory" "grep -q '^PASS  max |circle - in-memory| 0.000e+00' <<<\"\$v\" && grep -q 'append 14 tokens at length 18: buckets 8 4 1 1' <<<\"\$v\""
done

S=../shared/models/stories260K
C=../shared/data/tinystories-260k/train.txt
if [ -d "$S" ] && [ -f "$C" ]; then
    cp "$S/tokenizer.json" "$S/tokenizer_config.json" $q2/
    Q=$tmp/q2q
    "$PDQ" quantize --model $q2 --method gptq --wbits 4 --calib $C --nsamples 8 --seq-len 64 --max-seq 32 --act-nsamples 2 \
        --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out $Q --quiet >$tmp/q.log 2>&1 || bad "quantize: $(tail -n 2 $tmp/q.log)"
    check quant-report "jq -e '.export.quality.equal_in_memory == true' $Q/report.json >/dev/null"
    for pl in "" --per-layer; do
        check "quant circle$pl == in-memory" "'$PDQ' verify --circle $Q/circle $pl --model $Q --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 --append-ids '3 4 5 6 7' 2>&1 | tail -n 1 | grep -q '^PASS  max |circle - in-memory| 0.000e+00'"
    done
else
    echo "SKIP (part): $S or $C absent: no quantize of the mixed model"
fi
exit $fail
