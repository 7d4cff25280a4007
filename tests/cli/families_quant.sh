#!/usr/bin/env bash
# Quantize and export on the families of ../shared/reference/families that every path computes
# (qwen2: q/k/v biases, qwen3: q/k head norms, llama-bias: biases on all seven linears, phi3:
# stacked qkv_proj / gate_up_proj, phi4mini: those plus partial RoPE and longrope; gemma3's block
# below): GPTQ w4 a16
# with the Circle pair, per-layer files and the hybrid export; the exported pair equals the
# in-memory integer run logit for logit; integer mode stays as close to the float graphs as
# fake-quant does; flatc parses every file against the schema; the quantized checkpoint and its
# hf/ copy reload, and the hf/ copy holds the codes' values under the source's names and shapes
# (stacked tensors restacked in the source's row order), re-read by an independent Python reader. The checkpoints carry no tokenizer, so stories260K's (the same 512-token
# vocabulary size) is put beside them for calibration text. Skips when ../shared is absent.
set -u
PDQ=${1:?usage: families_quant.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
F=../shared/reference/families
S=../shared/models/stories260K
C=../shared/data/tinystories-260k/train.txt
if [ ! -d "$F" ] || [ ! -d "$S" ]; then
    echo "SKIP: $F or $S is absent"
    exit 0
fi
schema=../shared/circle/circle_schema.flatc2.fbs

# A tied lm_head (qwen2, qwen3, phi4mini, gemma3) is the embedding's uint8 codes: in the
# whole-model file both tensors read one buffer, in lm_head's own file it is UINT8, and no linear
# stays float.
tied_check() { # NAME SOURCE_DIR QUANT_DIR
    [ "$("$PDQ" info --model "$2" --json | jq -r .tie_word_embeddings)" = true ] || return 0
    "$PDQ" inspect "$3/circle/model_decode.q.circle" --json >"$tmp/$1.md.json"
    check "$1-tied-lm-head" "jq -e '[.tensors[] | select(.name == \"lm_head.weight\" or .name == \"model.embed_tokens.weight\")]
        | length == 2 and all(.type == \"UINT8\") and .[0].buffer == .[1].buffer' '$tmp/$1.md.json' >/dev/null &&
        '$PDQ' inspect '$3/circle/lm_head.q.circle' --json | jq -e '.tensors[] | select(.name == \"lm_head.weight\") | .type == \"UINT8\"' >/dev/null &&
        ! grep -q 'FULLY_CONNECTED INT16,FLOAT32' '$3/circle/manifest.json'"
}

for fam in qwen2 qwen3 llama-bias phi3 phi4mini; do
    m=$tmp/$fam-src
    mkdir -p "$m"
    cp "$F/$fam/ckpt/"* "$m/" && cp "$S/tokenizer.json" "$S/tokenizer_config.json" "$m/"
    q=$tmp/$fam-q
    "$PDQ" quantize --model "$m" --method gptq --wbits 4 --calib $C --nsamples 8 --seq-len 64 --max-seq 32 \
        --act-nsamples 2 --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out "$q" \
        --quiet >"$tmp/$fam.log" 2>&1 || { bad "$fam quantize: $(tail -n 2 "$tmp/$fam.log")"; continue; }
    check "$fam-report" "jq -e '.export.quality.equal_in_memory == true' '$q/report.json' >/dev/null"
    # the files carry the family's own names (its role table): Phi-3's q is the part of qkv_proj it
    # is cut from, Llama keeps q_proj; ptq.json's grids are keyed by the same names
    "$PDQ" inspect "$q/circle/decoder_layer_decode_1.q.circle" --json | jq -r '.tensors[].name' >"$tmp/$fam.names"
    case $fam in
    phi3 | phi4mini) check "$fam-names" "grep -qx model.layers.1.self_attn.qkv_proj.q.weight '$tmp/$fam.names' &&
        grep -qx model.layers.1.mlp.gate_up_proj.up.out '$tmp/$fam.names' && ! grep -Eq '[.](q|k|v|gate|up)_proj' '$tmp/$fam.names' &&
        jq -e '.edges | has(\"model.layers.1.self_attn.qkv_proj.k.out\")' '$q/ptq.json' >/dev/null" ;;
    llama-bias) check "$fam-names" "grep -qx model.layers.1.self_attn.q_proj.bias '$tmp/$fam.names' &&
        grep -qx model.layers.1.mlp.up_proj.out '$tmp/$fam.names' && ! grep -q qkv_proj '$tmp/$fam.names'" ;;
    esac
    tied_check "$fam" "$m" "$q"
    out=$("$PDQ" verify --circle "$q/circle" --model "$q" --ids "5 9 13 77 2 3" --steps 8 2>&1 | tail -n 1)
    case "$out" in "PASS  max |circle - in-memory| 0.000e+00 (tol 0.0e+00), tokens identical"*) ok "$fam circle == in-memory" ;;
    *) bad "$fam circle vs in-memory: $out" ;; esac
    # integer execution against fake-quant, both against the float graphs of the same weights
    fake=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3" --steps 8 --mode fake --json "$tmp/fake.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/fake.json")
    int=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3" --steps 8 --mode int --json "$tmp/int.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/int.json")
    check "$fam-int-vs-fake" "awk -v a=$int -v b=$fake 'BEGIN { exit !(a > 0 && a <= 1.05 * b + 1e-3) }'"
    # the hybrid (float activations, packed codes) export runs back exactly
    "$PDQ" export --model "$q" --hybrid --max-seq 32 --out "$tmp/$fam-h" --quiet >/dev/null 2>&1 || bad "$fam hybrid export"
    check "$fam-hybrid" "'$PDQ' verify --circle '$tmp/$fam-h' --model '$q' --ids '5 9 13' --steps 4 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00'"
    if [ -f "$schema" ] && command -v flatc >/dev/null; then
        n=0
        for f in "$q"/circle/*.circle "$tmp/$fam-h"/*.circle; do
            flatc --json --strict-json --raw-binary -o "$tmp/fj" "$schema" -- "$f" >/dev/null 2>&1 || bad "$fam flatc $f"
            n=$((n + 1))
        done
        ok "$fam: flatc parsed $n files"
    fi
    # the quantized checkpoint (packed and dequantized) and its hf/ copy load, and agree
    check "$fam-hf-copy" "'$PDQ' info --model '$q/hf' --json | jq -e '.family' >/dev/null"
    check "$fam-hf-values" "python3 '$(dirname "$0")/lib/check_restack.py' '$q' '$m' >'$tmp/$fam.restack'"
    [ "$fam" = phi3 ] && check "$fam-restacked" "grep -q 'qkv_proj.weight = q | k | v' '$tmp/$fam.restack' &&
        grep -q 'gate_up_proj.weight = gate | up' '$tmp/$fam.restack'"
    # (packed kernels on the codes against f32 on the dequantized copy: equal to rounding)
    seq 1 3 300 | awk '{ print $1 % 500 }' >"$tmp/ids"
    pq=$("$PDQ" ppl --model "$q" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    ph=$("$PDQ" ppl --model "$q/hf" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    check "$fam-packed-vs-hf" "awk -v a='$pq' -v b='$ph' 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d / b < 1e-3) }'"
    # every transform at once keeps the function: biases follow their outputs through R1, R2, CLE
    "$PDQ" quantize --model "$m" --calib $C --method rtn --wbits 8 --abits none --transform r1,r2,cle,smooth \
        --smooth-nsamples 2 --seq-len 64 --save-transformed --out "$tmp/$fam-t" --quiet >/dev/null 2>&1 || bad "$fam transform"
    p0=$("$PDQ" ppl --model "$m" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    p1=$("$PDQ" ppl --model "$tmp/$fam-t/transformed" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    check "$fam-transforms-preserve" "awk -v a='$p0' -v b='$p1' 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d / a < 1e-5) }'"
done

# gemma3: the sandwich block, (1 + w) norms, GELU-tanh, embedding scale, attention scale and a final
# softcap through GPTQ w4 a16, the Circle pair, the per-layer files and the hybrid export, on the
# reference weights with one RoPE table, a window no shorter than max_seq and a final softcap of 3
# (the real config, two tables and rings, follows)
G=$F/gemma3
m=$tmp/gemma3-src
mkdir -p "$m" && cp "$G/ckpt/"* "$m/" && cp "$S/tokenizer.json" "$S/tokenizer_config.json" "$m/"
jq '.rope_local_base_freq = .rope_theta | .rope_scaling = null | .sliding_window = 32 | .final_logit_softcapping = 3.0' \
    "$G/ckpt/config.json" >"$m/config.json"
q=$tmp/gemma3-q
if "$PDQ" quantize --model "$m" --method gptq --wbits 4 --calib $C --nsamples 8 --seq-len 64 --max-seq 32 --act-nsamples 2 \
    --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out "$q" --quiet >"$tmp/g.log" 2>&1; then
    check gemma3-report "jq -e '.export.quality.equal_in_memory == true' '$q/report.json' >/dev/null"
    tied_check gemma3 "$m" "$q"
    check gemma3-circle "'$PDQ' verify --circle '$q/circle' --model '$q' --ids '5 9 13 77 2 3' --steps 8 2>&1 | tail -n 1 | grep -q '^PASS  max |circle - in-memory| 0.000e+00'"
    fake=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3" --steps 8 --mode fake --json "$tmp/gf.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/gf.json")
    int=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3" --steps 8 --mode int --json "$tmp/gi.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/gi.json")
    check "gemma3-int-vs-fake ($int vs $fake)" "awk -v a=$int -v b=$fake 'BEGIN { exit !(a > 0 && a <= 1.05 * b + 1e-3) }'"
    "$PDQ" export --model "$q" --hybrid --max-seq 32 --out "$tmp/gemma3-h" --quiet >/dev/null 2>&1 || bad "gemma3 hybrid export"
    check gemma3-hybrid "'$PDQ' verify --circle '$tmp/gemma3-h' --model '$q' --ids '5 9 13' --steps 4 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00'"
    if [ -f "$schema" ] && command -v flatc >/dev/null; then
        n=0
        for f in "$q"/circle/*.circle "$tmp/gemma3-h"/*.circle; do
            flatc --json --strict-json --raw-binary -o "$tmp/gj" "$schema" -- "$f" >/dev/null 2>&1 || bad "gemma3 flatc $f"
            n=$((n + 1))
        done
        ok "gemma3: flatc parsed $n files"
        # the MLP's GELU carries approximate = true; the four norms of a layer are int16 gammas
        j=$tmp/gj/decoder_layer_prefill_0.q.json
        check gemma3-gelu-option "jq -e '[.operator_codes[] | .builtin_code] as \$c | [.subgraphs[0].operators[] |
            select(\$c[.opcode_index // 0] == \"GELU\") | .builtin_options.approximate] == [true]' '$j' >/dev/null"
        check gemma3-norms-int16 "jq -e '[.subgraphs[0].tensors[] | select(.name | test(\"(input|post_attention|pre_feedforward|post_feedforward)_layernorm.weight\$\")) | .type] == [\"INT16\", \"INT16\", \"INT16\", \"INT16\"]' '$j' >/dev/null"
    fi
    check gemma3-hf-copy "'$PDQ' info --model '$q/hf' --json | jq -e '.family == \"gemma3\"' >/dev/null"
    seq 1 3 300 | awk '{ print $1 % 500 }' >"$tmp/ids"
    pq=$("$PDQ" ppl --model "$q" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    ph=$("$PDQ" ppl --model "$q/hf" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
    check gemma3-packed-vs-hf "awk -v a='$pq' -v b='$ph' 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d / b < 1e-3) }'"
else
    bad "gemma3 quantize: $(tail -n 2 "$tmp/g.log")"
fi
# the real reference config: two RoPE tables (sliding layers: base 10000; the global layer:
# rope_theta with linear scaling 8) and max_seq 32 past the window of 8 (rings of 7 slots).
# Weight-only GPTQ; GPTQ w4 a16 with the Circle pair, per-layer files, an append bucket and the
# hybrid export: the whole-model files take cos_local / sin_local, rope_*_local.npy and the
# manifest's rope.layer_tables say which layers take which table, the exported files equal the
# in-memory run (integer and float mode), integer mode stays within fake-quant's bound, flatc
# parses every file; a manifest whose layer_tables contradict the layer types is refused. fold, R2,
# CLE and SmoothQuant keep the function; R1 is refused with the reason (the post-branch norms)
m=$tmp/gemma3-real
mkdir -p "$m" && cp "$G/ckpt/"* "$m/" && cp "$S/tokenizer.json" "$S/tokenizer_config.json" "$m/"
check gemma3-weight-only "'$PDQ' quantize --model '$m' --method gptq --wbits 4 --abits none --calib $C --nsamples 4 --seq-len 64 --out '$tmp/gw' --quiet >/dev/null 2>&1 && [ -f '$tmp/gw/model.q.safetensors' ]"
q=$tmp/gemma3-rq
if "$PDQ" quantize --model "$m" --method gptq --wbits 4 --calib $C --nsamples 8 --seq-len 64 --max-seq 32 --act-nsamples 2 \
    --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out "$q" --quiet >"$tmp/gr.log" 2>&1; then
    check gemma3-real-report "jq -e '.export.quality.equal_in_memory == true' '$q/report.json' >/dev/null"
    tied_check gemma3-real "$m" "$q"
    check gemma3-real-manifest "jq -e '.rope.layer_tables == [\"local\", \"local\", \"global\", \"local\"] and .rope.cos_local == \"rope_cos_local.npy\" and .rope.local_theta == 10000 and .kv_cache.ring_slots == 7' '$q/circle/manifest.json' >/dev/null"
    check gemma3-real-tables "[ -f '$q/circle/rope_cos_local.npy' ] && [ -f '$q/circle/rope_sin_local.npy' ] && ! cmp -s '$q/circle/rope_cos.npy' '$q/circle/rope_cos_local.npy'"
    for pl in "" --per-layer; do
        check "gemma3-real-circle$pl" "'$PDQ' verify --circle '$q/circle' $pl --model '$q' --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 --append-ids '3 4 5 6 7 8 9' 2>&1 | tail -n 1 | grep -q '^PASS  max |circle - in-memory| 0.000e+00'"
    done
    fake=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 12 --mode fake --json "$tmp/grf.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/grf.json")
    int=$("$PDQ" verify --model "$q" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 12 --mode int --json "$tmp/gri.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/gri.json")
    check "gemma3-real-int-vs-fake ($int vs $fake)" "awk -v a=$int -v b=$fake 'BEGIN { exit !(a > 0 && a <= 1.05 * b + 1e-3) }'"
    "$PDQ" export --model "$q" --hybrid --max-seq 32 --out "$tmp/gemma3-rh" --quiet >/dev/null 2>&1 || bad "gemma3 real hybrid export"
    check gemma3-real-hybrid "'$PDQ' verify --circle '$tmp/gemma3-rh' --model '$q' --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 2>&1 | tail -n 1 | grep -q 'max |circle - in-memory| 0.000e+00'"
    if [ -f "$schema" ] && command -v flatc >/dev/null; then
        n=0
        for f in "$q"/circle/*.circle "$tmp/gemma3-rh"/*.circle; do
            flatc --json --strict-json --raw-binary -o "$tmp/grj" "$schema" -- "$f" >/dev/null 2>&1 || bad "gemma3 real flatc $f"
            n=$((n + 1))
        done
        ok "gemma3 real config: flatc parsed $n files"
        check gemma3-real-inputs "jq -e '[.subgraphs[0].inputs[] as \$i | .subgraphs[0].tensors[\$i].name][0:7] == [\"input_ids\", \"attention_mask\", \"sliding_attention_mask\", \"cos\", \"sin\", \"cos_local\", \"sin_local\"]' '$tmp/grj/model_decode.q.json' >/dev/null"
    fi
    mkdir -p "$tmp/gbad" && cp "$q/circle/"* "$tmp/gbad/"
    jq '.rope.layer_tables = ["local", "local", "local", "local"]' "$q/circle/manifest.json" >"$tmp/gbad/manifest.json"
    err gemma3-real-bad-tables "'$PDQ' verify --circle '$tmp/gbad' --model '$q' --ids '5 9' --steps 2" \
        "rope.layer_tables[2] = \"local\": the local table is the sliding layers' (model.layer_types[2] is full_attention)"
else
    bad "gemma3 real-config quantize: $(tail -n 2 "$tmp/gr.log")"
fi
# fold, R2, CLE and SmoothQuant keep Gemma's function: the fold and SmoothQuant move the factor
# (1 + w) of the pre-norms (stored w becomes 0, or (1 + w) / s - 1), the post-branch norms stay;
# the view (each layer transformed as it is read) and the written checkpoint give the same codes
seq 1 3 300 | awk '{ print $1 % 500 }' >"$tmp/ids"
for v in view saved; do
    extra=; [ $v = saved ] && extra=--save-transformed
    "$PDQ" quantize --model "$m" --calib $C --method rtn --wbits 8 --abits none --transform fold,r2,cle,smooth \
        --smooth-nsamples 2 --seq-len 64 $extra --out "$tmp/gt-$v" --quiet >"$tmp/gt-$v.log" 2>&1 || bad "gemma3 transform ($v): $(tail -n 1 "$tmp/gt-$v.log")"
done
check gemma3-transform-view-same-codes "cmp -s '$tmp/gt-view/model.q.safetensors' '$tmp/gt-saved/model.q.safetensors'"
"$PDQ" quantize --model "$m" --calib $C --method rtn --wbits 8 --abits none --transform fold --save-transformed \
    --out "$tmp/gt-fold" --quiet >/dev/null 2>&1 || bad "gemma3 fold"
check gemma3-fold-values "python3 '$(dirname "$0")/lib/check_fold_gemma.py' '$tmp/gt-fold/transformed' '$m' 4"
p0=$("$PDQ" ppl --model "$m" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
p1=$("$PDQ" ppl --model "$tmp/gt-saved/transformed" --ids-file "$tmp/ids" --max-len 32 --stride 32 --json 2>/dev/null | jq .ppl)
check "gemma3-transforms-preserve ($p0 vs $p1)" "awk -v a='$p0' -v b='$p1' 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d / a < 1e-5) }'"
err gemma3-transform-r1 "'$PDQ' quantize --model '$m' --method rtn --wbits 8 --abits none --transform r1 --calib $C --out '$tmp/gt'" \
    "gemma3 model: R1 (--transform r1) cannot keep its function: the post-attention and post-feedforward norms scale the residual per channel"

# mistral: window 8 < max_seq 32, so every layer keeps a ring of 7 slots (decode past (1,n_kv,7,hd),
# mask (1,1,8)); a 12-token prompt, 12 steps and an append of 7 wrap the rings several times.
m=$tmp/mistral-src
mkdir -p "$m" && cp "$F/mistral/ckpt/"* "$m/" && cp "$S/tokenizer.json" "$S/tokenizer_config.json" "$m/"
"$PDQ" quantize --model "$m" --method gptq --wbits 4 --calib $C --nsamples 8 --seq-len 64 --max-seq 32 --act-nsamples 2 \
    --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out "$tmp/mq" --quiet >/dev/null 2>&1 || bad "mistral quantize"
check mistral-manifest "jq -e '.model.sliding_window == 8 and .kv_cache.ring_slots == 7 and (.model.layer_types | all(. == \"sliding_attention\"))' '$tmp/mq/circle/manifest.json' >/dev/null"
check mistral-report "jq -e '.export.quality.equal_in_memory == true' '$tmp/mq/report.json' >/dev/null"
check mistral-inspect "'$PDQ' inspect '$tmp/mq/circle' --json | jq -e '[.layers[].past_key[2]] | all(. == 7)' >/dev/null"
for pl in "" --per-layer; do
    check "mistral-circle$pl" "'$PDQ' verify --circle '$tmp/mq/circle' $pl --model '$tmp/mq' --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 --append-ids '3 4 5 6 7 8 9' 2>&1 | tail -n 1 | grep -q '^PASS  max |circle - in-memory| 0.000e+00'"
done
fake=$("$PDQ" verify --model "$tmp/mq" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 12 --mode fake --json "$tmp/fake.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/fake.json")
int=$("$PDQ" verify --model "$tmp/mq" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --steps 12 --mode int --json "$tmp/int.json" >/dev/null 2>&1; jq .max_abs_diff "$tmp/int.json")
check mistral-int-vs-fake "awk -v a=$int -v b=$fake 'BEGIN { exit !(a > 0 && a <= 1.05 * b + 1e-3) }'"
"$PDQ" export --model "$tmp/mq" --hybrid --max-seq 32 --out "$tmp/mh" --quiet >/dev/null 2>&1 || bad "mistral hybrid export"
check mistral-hybrid "'$PDQ' verify --circle '$tmp/mh' --model '$tmp/mq' --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00'"
if [ -f "$schema" ] && command -v flatc >/dev/null; then
    n=0
    for f in "$tmp"/mq/circle/*.circle "$tmp"/mh/*.circle; do
        flatc --json --strict-json --raw-binary -o "$tmp/fj" "$schema" -- "$f" >/dev/null 2>&1 || bad "mistral flatc $f"
        n=$((n + 1))
    done
    ok "mistral: flatc parsed $n files"
fi
# the transforms are weight-space: the window the masks apply changes nothing in them
"$PDQ" quantize --model "$m" --calib $C --method rtn --wbits 8 --abits none --transform r1,r2,cle,smooth \
    --smooth-nsamples 2 --seq-len 64 --save-transformed --out "$tmp/mt" --quiet >/dev/null 2>&1 || bad "mistral transform"
seq 1 3 300 | awk '{ print $1 % 500 }' >"$tmp/ids"
p0=$("$PDQ" ppl --model "$m" --ids-file "$tmp/ids" --max-len 32 --stride 16 --json 2>/dev/null | jq .ppl)
p1=$("$PDQ" ppl --model "$tmp/mt/transformed" --ids-file "$tmp/ids" --max-len 32 --stride 16 --json 2>/dev/null | jq .ppl)
check mistral-transforms-preserve "awk -v a='$p0' -v b='$p1' 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d / a < 1e-5) }'"
# phi4mini (partial RoPE, longrope): the float pair, cos/sin of 24 of 32 dims, equals the in-memory
# graphs; the manifest says the graphs use longrope's short factors (the only set a max_seq within
# original_max_position_embeddings reaches), and the cos/sin tables are those factors' rows with the
# attention factor, recomputed here from config.json
p=$F/phi4mini/ckpt
"$PDQ" export --model $p --max-seq 32 --out "$tmp/pe" --quiet >/dev/null 2>&1 || bad "phi4mini export"
check phi4mini-manifest "jq -e '.model.rotary_dim == 24' '$tmp/pe/manifest.json' >/dev/null"
check phi4mini-circle "'$PDQ' verify --circle '$tmp/pe' --model $p --ids '5 9 13 77 2 3 4 8 9 10 11 12' --steps 12 2>&1 | tail -n 1 | grep -q '^PASS  max |circle - in-memory| 0.000e+00'"
err phi4mini-longrope "'$PDQ' export --model $p --max-seq 256 --out '$tmp/pe2'" "exceeds longrope's original_max_position_embeddings 128"
check phi4mini-factor-set "jq -e '.rope.scaling == \"longrope\" and .rope.factor_set == \"short_factor\" and
    .rope.original_max_position_embeddings == 128 and (.rope.attention_scaling - 1.309307 | fabs) < 1e-5' '$tmp/pe/manifest.json' >/dev/null"
check phi4mini-short-tables "python3 - '$p/config.json' '$tmp/pe' <<'PY'
import json, math, struct, sys
cfg = json.load(open(sys.argv[1]))
def npy(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<H', b[8:10])[0]
    d = b[10 + n:]
    return struct.unpack('<%df' % (len(d) // 4), d)
cos, sin = npy(sys.argv[2] + '/rope_cos.npy'), npy(sys.argv[2] + '/rope_sin.npy')
neg = json.load(open(sys.argv[2] + '/manifest.json'))['rope']['convention'] == 'pre_negated_sin'
rd = int(cfg['hidden_size'] // cfg['num_attention_heads'] * cfg['partial_rotary_factor'])
sc = cfg['rope_scaling']
orig = cfg['original_max_position_embeddings']
attn = math.sqrt(1 + math.log(cfg['max_position_embeddings'] / orig) / math.log(orig))
worst = 0.0
for p in range(len(cos) // rd):
    for i in range(rd):
        f = p / (sc['short_factor'][i % (rd // 2)] * cfg['rope_theta'] ** (2 * (i % (rd // 2)) / rd))
        worst = max(worst, abs(cos[p * rd + i] - math.cos(f) * attn), abs(sin[p * rd + i] - (-1 if neg and i < rd // 2 else 1) * math.sin(f) * attn))
sys.exit(0 if len(cos) == 32 * rd and worst < 1e-5 else 1)
PY"
exit $fail
