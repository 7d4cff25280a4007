#!/usr/bin/env bash
# llama.cpp side of the peer comparison (make bench-peer): the TinyLlama-1.1B-shaped checkpoint
# that bench.sh uses, converted with llama.cpp's own converter to GGUF f32 and quantized to q4_0
# and q8_0 by llama-quantize, then timed by llama-bench (-p 128 -n 32, 1 and 2 threads).
# Prints one JSON object on stdout: {"skipped": reason} when llama.cpp is absent, else the
# llama-bench rows. llama.cpp is never part of pdq: build it outside the repository
# (DEVELOPERS.md) and point LLAMA_CPP at it.
#   LLAMA_CPP   llama.cpp source tree with build/bin/llama-bench (default ../peer/llama.cpp)
#   PEER_CACHE  where the checkpoint and GGUF files are kept between runs (default /tmp/pdq-peer)
#   REPS        llama-bench repetitions (default 3)
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
lcpp=${LLAMA_CPP:-$here/../../peer/llama.cpp}
cache=${PEER_CACHE:-/tmp/pdq-peer}
reps=${REPS:-3}
log() { echo "bench-peer: $*" >&2; }
skip() { log "skipped: $1"; printf '{"skipped": "%s"}\n' "$1"; exit 0; }

[ -x "$lcpp/build/bin/llama-bench" ] || skip "no llama.cpp build at $lcpp (set LLAMA_CPP)"
[ -x "$lcpp/build/bin/llama-quantize" ] || skip "no llama-quantize in $lcpp/build/bin"
py=/usr/bin/python3
$py -c 'import torch, numpy, sentencepiece, google.protobuf, tqdm, yaml' 2>/dev/null ||
  skip "llama.cpp's converter needs Debian python3-torch python3-numpy python3-sentencepiece python3-protobuf python3-tqdm python3-yaml"

mkdir -p "$cache"
ck=$cache/tinyllama-shape
if [ ! -f "$ck/tokenizer.model" ]; then
  log "TinyLlama-1.1B-shaped bf16 checkpoint in $ck"
  rm -rf "$ck"
  "$build/pdq_synth" --out "$ck" --hidden 2048 --intermediate 5632 --layers 22 --heads 32 --kv-heads 4 \
    --vocab 32000 --dtype bf16 --max-pos 2048 --seed 1 >/dev/null
  # llama.cpp reads a Llama-2 tokenizer as SentencePiece: the bundled model's (vocab 32000).
  cp models/web-bible-llama-19m/tokenizer.json models/web-bible-llama-19m/tokenizer_config.json "$ck/"
  $py "$here/peer/spm_from_tokenizer_json.py" "$ck/tokenizer.json" "$ck/tokenizer.model"
fi
if [ ! -f "$cache/tl-f32.gguf" ]; then
  log "converting to GGUF f32 with llama.cpp's convert_hf_to_gguf.py"
  PYTHONPATH=$here/peer/pyshim $py "$here/peer/run_convert.py" "$lcpp/convert_hf_to_gguf.py" "$ck" \
    --outtype f32 --outfile "$cache/tl-f32.gguf.tmp" >&2
  mv "$cache/tl-f32.gguf.tmp" "$cache/tl-f32.gguf"
fi
for q in q4_0 q8_0; do
  if [ ! -f "$cache/tl-$q.gguf" ]; then
    log "llama-quantize $q"
    "$lcpp/build/bin/llama-quantize" "$cache/tl-f32.gguf" "$cache/tl-$q.gguf.tmp" $q >/dev/null 2>&1
    mv "$cache/tl-$q.gguf.tmp" "$cache/tl-$q.gguf"
  fi
done
log "llama-bench -p 128 -n 32 -t 1,2 -r $reps on f32, q4_0, q8_0"
rows=$("$lcpp/build/bin/llama-bench" -m "$cache/tl-f32.gguf" -m "$cache/tl-q4_0.gguf" -m "$cache/tl-q8_0.gguf" \
  -p 128 -n 32 -t 1,2 -r "$reps" -o json 2>/dev/null)
commit=$(cd "$lcpp" && grep -o 'c392e509' -m1 -r . 2>/dev/null | head -1 || true)
printf '{"llama_cpp": {"dir": "%s", "rows": %s}}\n' "$lcpp" "$(echo "$rows" | $py -c '
import json, sys
rows = json.load(sys.stdin)
out = [{"model": r["model_type"], "bytes": r["model_size"], "threads": r["n_threads"],
        "n_prompt": r["n_prompt"], "n_gen": r["n_gen"], "tok_s": r["avg_ts"], "tok_s_sd": r["stddev_ts"],
        "build_commit": r.get("build_commit", "")} for r in rows]
print(json.dumps(out))')"
