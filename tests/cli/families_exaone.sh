#!/usr/bin/env bash
# EXAONE 3.x (ExaoneForCausalLM) through every path, on the bundled Llama model rewritten in
# EXAONE's layout (lib/exaone_copy.py: the same bytes under EXAONE's tensor names, its config.json
# fields). EXAONE computes Llama's function, so each output must equal the Llama copy's: the
# logits bit for bit, the static prefill / decode / append graphs within verify's tolerance, and
# GPTQ / RTN w4 a16 quantize + Circle export whose files carry EXAONE's names
# (transformer.h.N.attn.attention.q_proj ...) and whose logits equal the Llama copy's export's
# (each pair's files run the other's in-memory integer graphs to 0 difference). The quantized
# checkpoint holds the Llama copy's codes under EXAONE's module names, and the transforms (R1, R2,
# CLE, SmoothQuant) give the Llama copy's logits. Needs only the repository.
set -u
PDQ=${1:?usage: families_exaone.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
L=models/web-bible-llama-19m
C=data/web-bible/train.txt
E=$tmp/exaone
python3 "$(dirname "$0")/lib/exaone_copy.py" $L $E || { bad "exaone copy"; exit 1; }
IDS="1 13825 1497 304 670 766 455"

check info "'$PDQ' info --model $E --json | jq -e '.family == \"exaone\" and .num_hidden_layers == 4' >/dev/null"
"$PDQ" logits --model $E --ids "$IDS" --out $tmp/e.npy >/dev/null 2>&1 && "$PDQ" logits --model $L --ids "$IDS" --out $tmp/l.npy >/dev/null 2>&1
check logits-equal-llama "cmp -s $tmp/e.npy $tmp/l.npy"
# the static graphs: prefill + decode, append, and TICO's other options
check verify "'$PDQ' verify --model $E --ids '$IDS' --steps 8 --max-seq 32 | tail -n 1 | grep -q '^PASS'"
check verify-append "'$PDQ' verify --model $E --ids '$IDS' --steps 2 --max-seq 32 --append-ids '2701 29892 455' --bucket 4 | tail -n 1 | grep -q '^PASS'"
check verify-tico "'$PDQ' verify --model $E --ids '$IDS' --steps 4 --max-seq 32 --layout unrolled --scale-fusion k_proj --rope pre_negated_sin | tail -n 1 | grep -q '^PASS'"

for method in gptq rtn; do
    for src in llama exaone; do
        m=$L; [ $src = exaone ] && m=$E
        "$PDQ" quantize --model $m --calib $C --method $method --wbits 4 --abits 16 --max-seq 32 --nsamples 4 --seq-len 64 \
            --act-nsamples 2 --verify-steps 4 --export circle-full,circle-per-layer --append-bucket 4 --out $tmp/$src-$method \
            --quiet >$tmp/$src-$method.log 2>&1 || bad "$src $method quantize: $(tail -n 2 $tmp/$src-$method.log)"
    done
    q=$tmp/exaone-$method ql=$tmp/llama-$method
    check $method-report "jq -e '.export.quality.equal_in_memory == true' $q/report.json >/dev/null"
    check $method-quality-equals-llama "[ \"\$(jq -c .export.quality $q/report.json)\" = \"\$(jq -c .export.quality $ql/report.json)\" ]"
    # the files' names are EXAONE's, none is Llama's
    for f in decoder_layer_decode_1 token_embedding lm_head model_decode; do
        "$PDQ" inspect $q/circle/$f.q.circle --json | jq -r '.tensors[].name'
    done >$tmp/names
    check $method-names "grep -qx transformer.h.1.attn.attention.q_proj.weight $tmp/names &&
        grep -qx transformer.h.1.mlp.c_fc_0.out $tmp/names && grep -qx transformer.wte.weight $tmp/names &&
        grep -qx transformer.ln_f.weight $tmp/names && grep -qx transformer.h.3.ln_2.out $tmp/names &&
        ! grep -Eq 'model[.]|self_attn|layernorm|_proj[.](q|k|v)' $tmp/names"
    check $method-ptq-names "jq -e '.edges | has(\"transformer.h.0.attn.attention.new_k\") and has(\"transformer.wte.out\")' $q/ptq.json >/dev/null"
    # each export's files reproduce the other copy's in-memory integer run exactly: equal logits
    check $method-llama-files-run-exaone "'$PDQ' verify --circle $ql/circle --model $q --ids '$IDS' --steps 8 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00'"
    check $method-exaone-files-run-llama "'$PDQ' verify --circle $q/circle --model $ql --ids '$IDS' --steps 8 2>&1 | grep -q 'max |circle - in-memory| 0.000e+00'"
    check $method-same-codes "python3 - $ql $q <<'PY'
import json, struct, sys
sys.path.insert(0, '$(dirname "$0")/lib')
from exaone_copy import module
def header(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop('__metadata__', None)
    return h, b[8 + n:]
(hl, dl), (he, de) = header(sys.argv[1] + '/model.q.safetensors'), header(sys.argv[2] + '/model.q.safetensors')
want = {module(k): v for k, v in hl.items()}
assert sorted(want) == sorted(he), sorted(set(want) ^ set(he))
for k, v in want.items():
    a, b = v['data_offsets'], he[k]['data_offsets']
    assert dl[a[0]:a[1]] == de[b[0]:b[1]], k
PY"
done
check hf-copy-names "'$PDQ' info --model $tmp/exaone-gptq/hf --json | jq -e '.family == \"exaone\"' >/dev/null"
# every transform at once: the transformed checkpoint (EXAONE's names) equals the Llama copy's
for src in llama exaone; do
    m=$L; [ $src = exaone ] && m=$E
    "$PDQ" quantize --model $m --calib $C --method rtn --wbits 8 --abits none --transform r1,r2,cle,smooth --smooth-nsamples 2 \
        --seq-len 64 --save-transformed --out $tmp/$src-t --quiet >/dev/null 2>&1 || bad "$src transform"
    "$PDQ" logits --model $tmp/$src-t/transformed --ids "$IDS" --out $tmp/$src-t.npy >/dev/null 2>&1
done
check transforms-equal-llama "cmp -s $tmp/llama-t.npy $tmp/exaone-t.npy && '$PDQ' info --model $tmp/exaone-t/transformed --json | jq -e '.family == \"exaone\"' >/dev/null"

# anything but SiLU is refused, naming EXAONE's field
python3 "$(dirname "$0")/lib/exaone_copy.py" $L $tmp/gelu activation_function='"gelu"'
err gelu-refused "'$PDQ' info --model $tmp/gelu" "activation_function 'gelu' is not supported"
exit $fail
