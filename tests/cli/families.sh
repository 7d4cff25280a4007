#!/usr/bin/env bash
# Every family of ../shared/reference/families through the static graphs: `pdq verify` (prefill,
# decode, a 4-token append bucket) against the FP32 reference model, which test_families checks
# against HF's own outputs, within 1e-4 on every padding side, attention layout, RoPE convention
# and scale fusion; `pdq info` names the family; paths not built yet refuse by name. Skips when
# ../shared is absent.
set -u
PDQ=${1:?usage: families.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
F=../shared/reference/families
if [ ! -d "$F" ]; then
    echo "SKIP: $F is absent"
    exit 0
fi

for fam in qwen2 qwen3 phi3 phi4mini mistral llama-bias; do
    M=$F/$fam/ckpt
    all=1
    for pad in left right; do for lay in batched unrolled; do for rope in hf pre_negated_sin; do for sf in none k_proj; do
        # a 12-token prompt and 12 steps pass the windows of 8 (mistral) on both sides
        out=$("$PDQ" verify --model "$M" --ids "5 9 13 77 2 3 4 8 9 10 11 12" --ids "7 8 9" --max-seq 32 --steps 12 \
              --padding $pad --layout $lay --rope $rope --scale-fusion $sf --append-ids "3 4 5 6" --bucket 4 2>&1 | tail -n 1)
        case "$out" in
        "PASS  max |dlogit| "*"(tol 1.0e-04), top-1 34/34 vs FP32 model $M") ;;
        *) bad "$fam verify $pad $lay $rope $sf: $out"; all=0 ;;
        esac
    done; done; done; done
    [ $all = 1 ] && ok "$fam: verify within 1e-4, 16 option combinations"
done

# mistral over a conversation that wraps its rings (window 8: 7 slots) seven times: a 12-token
# prompt, 40 decode steps and a 7-token append at max_seq 64
check mistral-wraps "'$PDQ' verify --model $F/mistral/ckpt --ids '5 9 13 77 2 3 4 8 9 10 11 12' --max-seq 64 --steps 40 \
    --append-ids '3 4 5 6 7 8 9' --bucket 3 2>&1 | tail -n 1 | grep -q '^PASS  max |dlogit| .*(tol 1.0e-04), top-1 \([0-9]*\)/\1 '"

check info-family "'$PDQ' info --model $F/qwen3/ckpt --json | jq -e '.family == \"qwen3\" and .qk_norm == true' >/dev/null"
check info-bias "'$PDQ' info --model $F/qwen2/ckpt | grep -Eq 'biases: +q_proj k_proj v_proj$'"

# Gemma 3: pdq logits on the 37-token prompt (past the window of 8) and pdq ppl against HF's
# outputs; pdq info shows the family's features
G=$F/gemma3
if command -v python3 >/dev/null; then
    "$PDQ" logits --model $G/ckpt --ids "$(jq -r '.cases[2].ids | join(" ")' $G/ref/prompts.json)" --out $tmp/g.npy \
        >/dev/null 2>&1 || bad "gemma3 logits exit status"
    d=$(python3 - $tmp/g.npy $G/ref/prompt2/prefill_logits.npy <<'PY'
import struct, sys
def read(path):
    b = open(path, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; d = b[10 + hl:]
    return struct.unpack("<%df" % (len(d) // 4), d)
a, b = read(sys.argv[1]), read(sys.argv[2])
print(max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) else 1e9)
PY
)
    check "gemma3-logits (max |dlogit| $d)" "awk 'BEGIN { exit !($d <= 1e-4) }'"
fi
jq -r '.ppl_ids | join(" ")' $G/ref/prompts.json >$tmp/g_ppl.txt
p=$("$PDQ" ppl --model $G/ckpt --ids-file $tmp/g_ppl.txt --max-len 64 --stride 32 --json 2>/dev/null | jq .ppl)
ref=$(jq .perplexity.ppl_f64 $G/ref/ppl-w64-s32/result.json)
check "gemma3-ppl ($p vs HF $ref)" "awk 'BEGIN { d = ($p - $ref) / $ref; exit !(d <= 1e-5 && d >= -1e-5) }'"
check gemma3-info "'$PDQ' info --model $G/ckpt --json | jq -e '.family == \"gemma3\" and .block == \"sandwich\" and
    .layer_types == [\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"] and
    .rope_local_base_freq == 10000 and .rope_type == \"linear\" and .hidden_activation == \"gelu_pytorch_tanh\"' >/dev/null"
check gemma3-info-text "'$PDQ' info --model $G/ckpt | grep -q '^local rope: *theta 10000 on sliding layers'"
# the static graphs on the REAL config: sliding layers take the local RoPE table (base 10000) and
# the global layer rope_theta with linear scaling (factor 8), and max_seq 32 is past the window of
# 8, so the sliding layers run on rings of 7 slots: every option combination within 1e-4 of the
# reference model (prefill, decode, an append bucket of 4, both padding sides)
all=1
for pad in left right; do for lay in batched unrolled; do for rope in hf pre_negated_sin; do for sf in none k_proj; do
    out=$("$PDQ" verify --model $G/ckpt --ids "5 9 13 77 2 3 4 8 9 10 11 12" --ids "7 8 9" --max-seq 32 --steps 12 \
          --padding $pad --layout $lay --rope $rope --scale-fusion $sf --append-ids "3 4 5 6" --bucket 4 2>&1 | tail -n 1)
    case "$out" in
    "PASS  max |dlogit| "*"(tol 1.0e-04), top-1 34/34 vs FP32 model $G/ckpt") ;;
    *) bad "gemma3 verify (local RoPE, rings) $pad $lay $rope $sf: $out"; all=0 ;;
    esac
done; done; done; done
[ $all = 1 ] && ok "gemma3 real config (two RoPE tables, rings): verify within 1e-4, 16 option combinations"
# the final softcap (absent from the reference config) on the reference weights with a cap of 3
# below the largest logit (about 4), with one RoPE table (local base = rope_theta, no scaling):
# every option combination within 1e-4 of the reference model
mkdir -p $tmp/g1
ln -s "$(cd $G/ckpt && pwd)/model.safetensors" $tmp/g1/model.safetensors
jq '.rope_local_base_freq = .rope_theta | .rope_scaling = null | .sliding_window = 32 | .final_logit_softcapping = 3.0' \
    $G/ckpt/config.json >$tmp/g1/config.json
all=1
for pad in left right; do for lay in batched unrolled; do for rope in hf pre_negated_sin; do for sf in none k_proj; do
    out=$("$PDQ" verify --model $tmp/g1 --ids "5 9 13 77 2 3 4 8 9 10 11 12" --ids "7 8 9" --max-seq 32 --steps 12 \
          --padding $pad --layout $lay --rope $rope --scale-fusion $sf --append-ids "3 4 5 6" --bucket 4 2>&1 | tail -n 1)
    case "$out" in
    "PASS  max |dlogit| "*"(tol 1.0e-04), top-1 34/34 vs FP32 model $tmp/g1") ;;
    *) bad "gemma3 block verify $pad $lay $rope $sf: $out"; all=0 ;;
    esac
done; done; done; done
[ $all = 1 ] && ok "gemma3 block: verify within 1e-4, 16 option combinations"
# past the window: the sliding layers keep rings of 31 slots, the full ones the whole cache
check gemma3-verify-rings "'$PDQ' verify --model $tmp/g1 --ids '2 5 9 11 13 17 19 23 29 31 37 41' --max-seq 64 --steps 44 --append-ids '3 4 5 6 7' 2>&1 | tail -n 1 | grep -q '^PASS'"
# the text part of a Gemma3ForConditionalGeneration checkpoint: the same weights under
# language_model.* and the fields under text_config give the text model's logits bit for bit
if command -v python3 >/dev/null; then
    mkdir -p $tmp/mm
    jq '{model_type: "gemma3", architectures: ["Gemma3ForConditionalGeneration"], eos_token_id: .eos_token_id,
         text_config: (del(.eos_token_id) | .model_type = "gemma3_text"), vision_config: {hidden_size: 8}}' \
        $G/ckpt/config.json >$tmp/mm/config.json
    python3 - $G/ckpt/model.safetensors $tmp/mm/model.safetensors <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h = {("language_model." + k if k != "__metadata__" else k): v for k, v in h.items()}
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
    ids="$(jq -r '.cases[2].ids | join(" ")' $G/ref/prompts.json)"
    "$PDQ" logits --model $tmp/mm --ids "$ids" --out $tmp/mm.npy >/dev/null 2>&1 || bad "gemma3 multimodal logits exit status"
    "$PDQ" logits --model $G/ckpt --ids "$ids" --out $tmp/text.npy >/dev/null 2>&1
    check gemma3-multimodal-text "cmp -s $tmp/mm.npy $tmp/text.npy"
    check gemma3-multimodal-info "'$PDQ' info --model $tmp/mm | grep -q '^architecture: *gemma3'"
fi
err gemma3-multimodal-quantize "'$PDQ' quantize --model $tmp/mm --calib /dev/null --wbits 4 --out $tmp/mq" \
    "gemma3 model: the text model of a multimodal checkpoint (config.json 'model_type') not yet supported by quantization"
err longrope-max-seq "'$PDQ' verify --model $F/phi4mini/ckpt --ids '1 2 3' --max-seq 256" \
    "max_seq 256 exceeds longrope's original_max_position_embeddings 128"
exit $fail
