#!/usr/bin/env bash
# One task scored by llama.cpp's llama-perplexity and by pdq eval with llama.cpp's rule
# (acc_norm_llamacpp, docs/eval.md) on the same weights and the same items, with the items per
# second and CPU seconds of each at the same thread count.
#
#   [TASK=hellaswag|arc_easy] scripts/eval-vs-llamacpp.sh MODEL_DIR MODEL.gguf [N_TASKS] [THREADS]
#
# MODEL.gguf is the same checkpoint converted with llama.cpp's own converter (F32; or its
# llama-quantize output against a pdq quantized MODEL_DIR, where the weights differ).
# TASK=hellaswag (default): ../shared/data/tasks/hellaswag/hellaswag_val_full.txt (all 10042 tasks)
#   through llama-perplexity --hellaswag --hellaswag-tasks N_TASKS (default 400), which draws its
#   tasks with std::mt19937(1) without replacement, and pdq eval --llamacpp-tasks N_TASKS, which
#   reproduces that draw: the same tasks in the same order. Every running accuracy llama.cpp
#   prints (one line per task) is checked against pdq's --samples, not only the last one.
# TASK=arc_easy: the first N_TASKS items of ../shared/data/tasks/arc/ARC-Easy-Dev.jsonl (all 570
#   by default) in llama.cpp's binary multiple-choice file (scripts/llamacpp-mc-file.py, lm-eval's
#   ARC prompt) through --multiple-choice, which keeps the file's order when it takes all tasks;
#   pdq eval --task arc_easy --limit N_TASKS --llamacpp-rule. PDQ_LLAMA_RULE=0 leaves the rule out
#   on pdq's side (each choice then runs once: the harness's split only) and compares speed only.
# llama.cpp runs with an F32 KV cache (LLAMA_KV=f32, -ctk/-ctv) so that both sides compute in F32;
# LLAMA_KV=f16 is llama.cpp's default, which rounds K and V to half precision (docs/eval.md: it
# moves logits by about 1e-3 on stories260K and flips near ties).
# llama-perplexity comes from $LLAMACPP_BIN (default ../peer/llama.cpp/build/bin); without it the
# script says so and exits 0. KEEP=DIR keeps both sides' outputs. Nothing of llama.cpp is part of
# this repository.
set -u
usage="usage: [TASK=hellaswag|arc_easy] eval-vs-llamacpp.sh MODEL_DIR MODEL.gguf [N_TASKS] [THREADS]"
MODEL=${1:?$usage}
GGUF=${2:?$usage}
TASK=${TASK:-hellaswag}
THREADS=${4:-1}
BIN=${LLAMACPP_BIN:-../peer/llama.cpp/build/bin}
PDQ=${PDQ:-build/pdq}
RULE=${PDQ_LLAMA_RULE:-1}
# llama.cpp packs whole tasks into one context of CTX tokens; each sequence keeps its own
# positions, so CTX may exceed the model's length (a 512-token vocabulary needs more than 512)
CTX=${LLAMA_CTX:-2048}
KV=${LLAMA_KV:-f32}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case $TASK in
  hellaswag) DATA=../shared/data/tasks/hellaswag/hellaswag_val_full.txt; N=${3:-400}; RULE=1 ;;
  arc_easy) DATA=../shared/data/tasks/arc/ARC-Easy-Dev.jsonl; N=${3:-570} ;;
  *) echo "$usage"; exit 2 ;;
esac
if [ ! -x "$BIN/llama-perplexity" ]; then echo "SKIP: $BIN/llama-perplexity absent (set LLAMACPP_BIN)"; exit 0; fi
if [ ! -f "$GGUF" ]; then echo "SKIP: $GGUF absent (convert $MODEL to GGUF with llama.cpp's converter)"; exit 0; fi
if [ ! -f "$DATA" ]; then echo "SKIP: $DATA absent"; exit 0; fi
# user + system CPU seconds of each side (steadier than wall time on a shared machine)
TIME="/usr/bin/time -f %U+%S"
[ -x /usr/bin/time ] || TIME=
cpu() { [ -f "$1" ] && echo ", $(tail -1 "$1" | bc -l | xargs printf '%.1f') s CPU" || true; }
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json "$tmp"/*.time "$KEEP"/ 2>/dev/null; rm -rf "$tmp"' EXIT
if [ "$TASK" = hellaswag ]; then
  # llama.cpp's own HellaSwag mode on the whole file; pdq picks the same tasks
  n=$(( $(wc -l <"$DATA") / 6 ))
  [ "$N" -lt "$n" ] && n=$N
  ltask=$DATA
  lmode=(--hellaswag --hellaswag-tasks "$n")
  pdata=$DATA
  plimit=(--llamacpp-tasks "$n" --samples "$tmp/pdq.samples.json")
else
  # --multiple-choice keeps the file's order when it takes all its tasks: the first N items
  out=$(python3 "$here/llamacpp-mc-file.py" "$DATA" "$tmp/task.bin" "$N") || exit 1
  n=${out%% *}
  ltask=$tmp/task.bin
  lmode=(--multiple-choice --multiple-choice-tasks "$n")
  pdata=$DATA
  plimit=(--limit "$n")
fi
prule=()
[ "$TASK" = arc_easy ] && [ "$RULE" = 1 ] && prule=(--llamacpp-rule)

t0=$(date +%s.%N)
$TIME -o "$tmp/llama.time" "$BIN/llama-perplexity" -m "$GGUF" -f "$ltask" "${lmode[@]}" -t "$THREADS" -c "$CTX" -b "$CTX" -ctk "$KV" -ctv "$KV" \
    >"$tmp/llama.out" 2>"$tmp/llama.err" || { echo "llama-perplexity failed:"; tail -5 "$tmp/llama.err"; exit 1; }
t1=$(date +%s.%N)
# the last "<task>\t<acc %>..." line is the score over all tasks
lc=$(grep -hE '^[0-9]+'$'\t' "$tmp/llama.out" "$tmp/llama.err" | tail -1 | cut -f2 | tr -d '%' | awk '{print $1 / 100}')
$TIME -o "$tmp/pdq.time" "$PDQ" eval --model "$MODEL" --task "$TASK" --data "$pdata" "${plimit[@]}" "${prule[@]}" \
    --threads "$THREADS" --json >"$tmp/pdq.json" 2>"$tmp/pdq.err" || { echo "pdq eval failed:"; tail -3 "$tmp/pdq.err"; exit 1; }
t2=$(date +%s.%N)
pc=$(jq -r '.results[0].acc_norm_llamacpp' "$tmp/pdq.json")
echo "task             $TASK, $n items, $THREADS thread(s), llama.cpp KV cache $KV"
echo "llama.cpp        acc_norm $lc  ($(echo "$n / ($t1 - $t0)" | bc -l | xargs printf '%.2f') items/s$(cpu "$tmp/llama.time"))"
echo "pdq (llama rule) acc_norm $pc  ($(echo "$n / ($t2 - $t1)" | bc -l | xargs printf '%.2f') items/s$(cpu "$tmp/pdq.time")$([ "$RULE" = 1 ] && echo ", both rules scored"))"
echo "pdq (harness)    acc $(jq -r '.results[0].acc' "$tmp/pdq.json")  acc_norm $(jq -r '.results[0].acc_norm' "$tmp/pdq.json")"
[ "$RULE" = 1 ] || exit 0
# llama.cpp prints its score with 8 decimals in percent
if [ "$TASK" = hellaswag ]; then
  # each task's running accuracy (llama.cpp: "<i>\t<100 * correct / i>" after task i)
  grep -hE '^[0-9]+'$'\t' "$tmp/llama.out" "$tmp/llama.err" | cut -f2 >"$tmp/llama.running"
  jq -r '.pred_llamacpp == .gold' "$tmp/pdq.samples.json" | awk '{ c += ($1 == "true"); printf "%.8f\n", 100 * c / NR }' >"$tmp/pdq.running"
  paste "$tmp/llama.running" "$tmp/pdq.running" | awk -v n="$n" '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6) bad++; if (d > 1e-6 && !first) first = NR } END {
      if (NR != n) { print "llama.cpp printed " NR " tasks, expected " n; exit 1 }
      if (bad) { print "the running accuracies differ at " bad " of " n " tasks, first after task " first; exit 1 }
      print "same task by task (" n " running accuracies)" }' || exit 1
fi
awk -v a="$lc" -v b="$pc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-6) }' && echo "same acc_norm" || { echo "acc_norm differs"; exit 1; }
