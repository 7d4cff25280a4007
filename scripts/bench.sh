#!/usr/bin/env bash
# make bench: speed figures of one run, as one JSON document on stdout (progress on stderr).
# Sections: machine bandwidth (STREAM triad), reference model on the bundled model and on a
# TinyLlama-1.1B-shaped random bf16 checkpoint generated on the fly, plus the sections that
# other benches add (static runtime, GPTQ, Circle export) when their binaries exist, and the
# packed weight-only path against llama.cpp (scripts/bench-packed.sh; llama.cpp only when built).
# Each section is printed as soon as it is measured; the document also goes to OUT (default
# BUILD/bench.json), written under OUT.part and renamed only when complete, so an interrupted run
# leaves the previous OUT as it was. The 40-minute whole-model GPTQ of the 1.1B shape runs only
# with PDQ_BENCH_GPTQ_WHOLE=1 (make bench GPTQ_WHOLE=1).
set -euo pipefail
build=${1:-build}
out=${2:-$build/bench.json}
model=${MODEL:-models/web-bible-llama-19m}
export PDQ_BENCH_GPTQ_WHOLE=${PDQ_BENCH_GPTQ_WHOLE:-0}
tmp=$(mktemp -d /tmp/pdq-bench-XXXXXX)
part="$out.part"
trap 'rm -rf "$tmp" "$part"' EXIT
trap 'exit 130' INT TERM
: >"$part"

log() { echo "bench: $*" >&2; }
emit() { printf '%s' "$*" | tee -a "$part"; }   # to stdout as it comes, and to the partial file

log "memory bandwidth (STREAM triad, 1 and 2 threads)"
stream=$("$build/bench_stream" 256 2)
bw1=$(echo "$stream" | sed -n 's/.*"1": \([0-9.]*\).*/\1/p')
bw2=$(echo "$stream" | sed -n 's/.*"2": \([0-9.]*\).*/\1/p')
emit "{
  \"machine\": {\"nproc\": $(nproc), \"stream\": $stream}"

log "reference model on $model"
small1=$("$build/bench_model" "$model" 1 128 64 "$bw1")
small2=$("$build/bench_model" "$model" 2 128 64 "$bw2")
emit ",
  \"reference\": {
    \"bundled\": {\"model\": \"$model\", \"threads_1\": $small1, \"threads_2\": $small2}"

big=$tmp/tinyllama-shape
log "generating a TinyLlama-1.1B-shaped bf16 checkpoint in $big"
t0=$(date +%s.%N)
"$build/pdq_synth" --out "$big" --hidden 2048 --intermediate 5632 --layers 22 --heads 32 --kv-heads 4 \
  --vocab 32000 --dtype bf16 --max-pos 2048 --seed 1 >/dev/null
t1=$(date +%s.%N)
log "reference model on the TinyLlama shape"
big1=$("$build/bench_model" "$big" 1 64 8 "$bw1")
big2=$("$build/bench_model" "$big" 2 64 8 "$bw2")
emit ",
    \"tinyllama_1_1b_shape\": {\"synth_write_s\": $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}"), \"threads_1\": $big1, \"threads_2\": $big2}
  }"

if [ -x "$build/pdq" ]; then
  log "section packed (pdq bench on RTN w4/w8 of the TinyLlama shape; llama.cpp alongside when present)"
  emit ",
  \"packed\": $(bash "$(dirname "$0")/bench-packed.sh" "$build" "$big" "$bw1" "$bw2")"
fi

for b in "$build"/bench_section_*; do
  [ -x "$b" ] || continue
  name=$(basename "$b"); name=${name#bench_section_}
  log "section $name"
  sec=$("$b" "$model" "$big")
  emit ",
  \"$name\": $sec"
done
emit "
}
"
mv "$part" "$out"
log "wrote $out"
