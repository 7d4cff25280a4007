#!/usr/bin/env bash
# pdq quantize --transform: the model the run quantizes, calibrates and exports is the transformed
# one (the exported Circle pair reproduces the in-memory fake-quant exactly, as for any model);
# quantizing through the view (the default: each layer transformed as it is read) writes the same
# bytes as quantizing the written checkpoint (--save-transformed), which has the original's
# perplexity (function-preserving); the set is recorded in report.json and pdq_quant.json; bad
# options fail with a message.
set -u
PDQ=${1:?usage: transforms.sh PDQ_BINARY}
SYNTH="${PDQ_BUILD_DIR:-$(dirname "$PDQ")}/pdq_synth"
. "$(dirname "$0")/lib/checks.sh"
need_stories
M=$STORIES

head -c 6000 $TINY/test.txt >"$tmp/eval.txt"
q="$tmp/q"
if "$PDQ" quantize --model $M --calib $TINY/train.txt --method rtn --wbits 4 --quiet --threads 1 \
    --transform r1,r2,cle,smooth --smooth-nsamples 2 --seq-len 64 --max-seq 32 --act-nsamples 1 --verify-steps 4 \
    --eval "$tmp/eval.txt" --eval-len 64 --eval-stride 64 --export circle-full --out "$q" >"$tmp/log" 2>&1; then
    ok run
else
    bad run; cat "$tmp/log"
fi
check report "jq -e '.transforms.name == \"r1+r2+cle+smooth\" and .transforms.fold_norms and .transforms.untied_lm_head and .transforms.r1_matrix == \"randomized hadamard\"' '$q/report.json' >/dev/null"
check pdq_quant "jq -e '.transforms.r2 == true and .transforms.smooth_alpha == 0.5' '$q/pdq_quant.json' >/dev/null"
check untied "jq -e '.tie_word_embeddings == false' '$q/config.json' >/dev/null && jq -e '.tie_word_embeddings == false' '$q/hf/config.json' >/dev/null"
check no-transformed-dir "[ ! -e '$q/transformed' ]"
p0=$("$PDQ" ppl --model $M --text "$tmp/eval.txt" --max-len 64 --stride 64 --json --threads 1 | jq .ppl)
check fp32-in-report "jq -e --argjson p '${p0:-0}' '(.eval.fp32_ppl - \$p) | fabs < 1e-5 * \$p' '$q/report.json' >/dev/null"
check exported "[ -s '$q/circle/model_prefill.q.circle' ] && jq -e '.export.quality.equal_in_memory == true' '$q/report.json' >/dev/null"
if "$PDQ" verify --circle "$q/circle" --model "$q" --prompt "Once upon a time" --steps 8 --threads 1 >"$tmp/v" 2>&1 &&
    grep -q "max |circle - in-memory| 0.000e+00 (tol 0.0e+00), tokens identical" "$tmp/v"; then
    ok verify-circle
else
    bad verify-circle; tail -3 "$tmp/v"
fi

# the view and the written checkpoint give the same codes (GPTQ, every transform, the untied lm_head
# quantized), and the written one keeps the original's perplexity
for v in view saved; do
    extra=; [ $v = saved ] && extra=--save-transformed
    "$PDQ" quantize --model $M --calib $TINY/train.txt --method gptq --nsamples 2 --seq-len 32 \
        --wbits 4 --abits none --quiet --threads 1 --transform r1,r2,cle,smooth --smooth-nsamples 2 $extra \
        --out "$tmp/$v" >"$tmp/l$v" 2>&1 || { bad quantize-$v; cat "$tmp/l$v"; }
done
check view-same-codes "cmp -s '$tmp/view/model.q.safetensors' '$tmp/saved/model.q.safetensors' && cmp -s '$tmp/view/hf/model.safetensors' '$tmp/saved/hf/model.safetensors' && cmp -s '$tmp/view/config.json' '$tmp/saved/config.json'"
check saved-untied "jq -e '.tie_word_embeddings == false' '$tmp/saved/transformed/config.json' >/dev/null"
p1=$("$PDQ" ppl --model "$tmp/saved/transformed" --text "$tmp/eval.txt" --max-len 64 --stride 64 --json --threads 1 | jq .ppl)
check ppl-preserved "jq -ne '($p0 - $p1) | fabs < 1e-4 * $p0' >/dev/null"

# the quantized model does not depend on the thread count (rotations on the pool, AVX2)
for t in 1 2; do
    "$PDQ" quantize --model $M --method rtn --wbits 4 --abits none --quiet --threads $t --transform r1,r2,cle \
        --out "$tmp/t$t" >"$tmp/lt$t" 2>&1 || { bad threads-$t; cat "$tmp/lt$t"; }
done
check threads-same "cmp -s '$tmp/t1/model.q.safetensors' '$tmp/t2/model.q.safetensors'"

err bad-name "'$PDQ' quantize --model $M --method rtn --transform r1,spin --out '$tmp/x'" "unknown transform 'spin'"
err smooth-calib "'$PDQ' quantize --model $M --method rtn --transform smooth --out '$tmp/x'" "needs --calib"
err save-without "'$PDQ' quantize --model $M --method rtn --save-transformed --out '$tmp/x'" "needs --transform"
err bad-alpha "'$PDQ' quantize --model $M --method rtn --transform smooth --smooth-alpha 2 --out '$tmp/x'" "--smooth-alpha"
"$SYNTH" --out "$tmp/s96" --hidden 96 --heads 4 --kv-heads 2 --layers 1 >/dev/null
err hadamard-size "'$PDQ' quantize --model '$tmp/s96' --method rtn --transform r1 --rotation hadamard --out '$tmp/x'" "only powers of two"
if "$PDQ" quantize --model "$tmp/s96" --method rtn --transform r1 --abits none --quiet --out "$tmp/r96" >"$tmp/l96" 2>&1; then
    check random-r1 "jq -e '.transforms.r1_matrix == \"random orthogonal\"' '$tmp/r96/report.json' >/dev/null"
else
    bad random-r1; cat "$tmp/l96"
fi
# GPTQ variants are recorded in both files
if "$PDQ" quantize --model $M --calib $TINY/train.txt --method gptq --nsamples 2 --seq-len 32 \
    --gptq-orig-inputs --mse-gptq --mse-gptq-steps 2 --abits none --quiet --threads 1 --out "$tmp/g" >"$tmp/lg" 2>&1; then
    check gptq-variants "jq -e '.orig_inputs and .mse_gptq and .mse_gptq_steps == 2 and (.transforms == null)' '$tmp/g/report.json' >/dev/null && jq -e '.orig_inputs and .mse_gptq' '$tmp/g/pdq_quant.json' >/dev/null"
else
    bad gptq-variants; cat "$tmp/lg"
fi
err mse-gptq-group "'$PDQ' quantize --model $M --calib $TINY/train.txt --nsamples 2 --seq-len 32 --mse-gptq --group 32 --partial-groups --abits none --out '$tmp/x'" "per output row"
exit $fail
