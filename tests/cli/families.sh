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
err gemma-refused "'$PDQ' info --model $F/gemma3/ckpt" "model_type 'gemma3_text' is not supported"
err longrope-max-seq "'$PDQ' verify --model $F/phi4mini/ckpt --ids '1 2 3' --max-seq 256" \
    "max_seq 256 exceeds longrope's original_max_position_embeddings 128"
exit $fail
