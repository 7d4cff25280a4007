#!/usr/bin/env bash
# HellaSwag in llama.cpp's 6-line format, scored by llama.cpp's llama-perplexity --hellaswag and
# by pdq eval (acc_norm_llamacpp: llama.cpp's rule, docs/eval.md) on the same weights and the same
# tasks, with the items per second of each at the same thread count.
#
#   scripts/eval-vs-llamacpp.sh MODEL_DIR MODEL_F32.gguf [N_TASKS] [THREADS]
#
# MODEL_F32.gguf is the same checkpoint converted to F32 with llama.cpp's own converter. The first
# N_TASKS (default 400) tasks of ../shared/data/tasks/hellaswag/hellaswag_val_full.txt go to a
# scratch file, and llama.cpp is asked for all of its tasks, so it takes them in file order (below
# the file's count it draws them at random, which pdq does not reproduce). llama-perplexity comes
# from $LLAMACPP_BIN (default ../peer/llama.cpp/build/bin); without it the script says so and
# exits 0. Nothing of llama.cpp is part of this repository.
set -u
MODEL=${1:?usage: eval-vs-llamacpp.sh MODEL_DIR MODEL_F32.gguf [N_TASKS] [THREADS]}
GGUF=${2:?usage: eval-vs-llamacpp.sh MODEL_DIR MODEL_F32.gguf [N_TASKS] [THREADS]}
N=${3:-400}
THREADS=${4:-1}
BIN=${LLAMACPP_BIN:-../peer/llama.cpp/build/bin}
PDQ=${PDQ:-build/pdq}
HS=../shared/data/tasks/hellaswag/hellaswag_val_full.txt
if [ ! -x "$BIN/llama-perplexity" ]; then echo "SKIP: $BIN/llama-perplexity absent (set LLAMACPP_BIN)"; exit 0; fi
if [ ! -f "$GGUF" ]; then echo "SKIP: $GGUF absent (convert $MODEL to F32 GGUF with llama.cpp's converter)"; exit 0; fi
if [ ! -f "$HS" ]; then echo "SKIP: $HS absent"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n $((6 * N)) "$HS" >"$tmp/hs.txt"
n=$(($(wc -l <"$tmp/hs.txt") / 6))

t0=$(date +%s.%N)
"$BIN/llama-perplexity" -m "$GGUF" -f "$tmp/hs.txt" --hellaswag --hellaswag-tasks "$n" -t "$THREADS" -c 512 -b 512 \
    >"$tmp/llama.out" 2>"$tmp/llama.err" || { echo "llama-perplexity failed:"; tail -5 "$tmp/llama.err"; exit 1; }
t1=$(date +%s.%N)
# the last "<task>\t<acc %>..." line is the score over all tasks
lc=$(grep -hE '^[0-9]+'$'\t' "$tmp/llama.out" "$tmp/llama.err" | tail -1 | cut -f2 | tr -d '%' | awk '{print $1 / 100}')
"$PDQ" eval --model "$MODEL" --task hellaswag --data "$tmp/hs.txt" --threads "$THREADS" --json >"$tmp/pdq.json" 2>/dev/null ||
    { echo "pdq eval failed"; exit 1; }
t2=$(date +%s.%N)
pc=$(jq -r '.results[0].acc_norm_llamacpp' "$tmp/pdq.json")
echo "tasks            $n"
echo "llama.cpp        acc_norm $lc  ($(echo "$n / ($t1 - $t0)" | bc -l | xargs printf '%.2f') items/s, $THREADS thread(s))"
echo "pdq (llama rule) acc_norm $pc  ($(echo "$n / ($t2 - $t1)" | bc -l | xargs printf '%.2f') items/s)"
echo "pdq (harness)    acc_norm $(jq -r '.results[0].acc_norm' "$tmp/pdq.json")"
# llama.cpp prints its score with 8 decimals in percent
awk -v a="$lc" -v b="$pc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-6) }' && echo "same acc_norm" || { echo "acc_norm differs"; exit 1; }
