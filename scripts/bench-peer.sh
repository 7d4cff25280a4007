#!/usr/bin/env bash
# llama.cpp side of the peer comparison: a random checkpoint of SHAPE (scripts/peer/shapes.sh:
# tinyllama, the default, qwen2.5-0.5b or gemma3-1b) converted by llama.cpp's own
# convert_hf_to_gguf.py to GGUF f32 and quantized by llama-quantize, then timed by llama-bench
# (-p 128 -n 32, 1 and 2 threads). Usage: bench-peer.sh BUILD [SHAPE]
# Prints one JSON object on stdout: {"skipped": reason} when llama.cpp, its converter's Python
# packages, the shape's family (in pdq_synth or in the converter) or its tokenizer is absent,
# else {"llama_cpp": {"shape", "checkpoint", "rows": [...]}}. llama.cpp is never part of pdq:
# build it outside the repository (docs/peer-bench.md) and point LLAMA_CPP at it.
#   LLAMA_CPP   llama.cpp source tree with build/bin/llama-bench (default ../peer/llama.cpp)
#   PEER_CACHE  where checkpoints and GGUF files are kept between runs (default /tmp/pdq-peer);
#               bench-packed.sh times pdq on the same PEER_CACHE/SHAPE checkpoint
#   PEER_TYPES  GGUF types to time (default "f32 q4_0 q8_0"; any llama-quantize type)
#   REPS        llama-bench repetitions (default 3)
set -euo pipefail
build=${1:-build}
shape=${2:-tinyllama}
here=$(cd "$(dirname "$0")" && pwd)
lcpp=$(realpath -m "${LLAMA_CPP:-$here/../../peer/llama.cpp}")
cache=${PEER_CACHE:-/tmp/pdq-peer}
reps=${REPS:-3}
# shellcheck source=scripts/peer/shapes.sh
. "$here/peer/shapes.sh"
log() { echo "bench-peer: $*" >&2; }
skip() { log "skipped: $1"; printf '{"skipped": %s}\n' "$(printf '%s' "$1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"; exit 0; }

peer_args "$shape" >/dev/null || exit 2
[ -x "$lcpp/build/bin/llama-bench" ] || skip "no llama.cpp build at $lcpp (set LLAMA_CPP)"
[ -x "$lcpp/build/bin/llama-quantize" ] || skip "no llama-quantize in $lcpp/build/bin"
class=$(peer_hf_class "$shape")
grep -q "register(.*\"$class\"" "$lcpp/convert_hf_to_gguf.py" ||
  skip "llama.cpp's convert_hf_to_gguf.py at $lcpp does not register $class"
py=/usr/bin/python3
$py -c 'import torch, numpy, sentencepiece, google.protobuf, tqdm, yaml' 2>/dev/null ||
  skip "llama.cpp's converter needs Debian python3-torch python3-numpy python3-sentencepiece python3-protobuf python3-tqdm python3-yaml"
# a byte-level BPE vocabulary goes through scripts/peer/pyshim/transformers, which splits with regex
[ "$shape" != qwen2.5-0.5b ] || $py -c 'import regex' 2>/dev/null ||
  skip "the Qwen tokenizer shim needs Debian python3-regex"

mkdir -p "$cache"
ck=$cache/$shape
if [ ! -f "$ck/config.json" ]; then   # bench-packed.sh may have written it already
  log "$shape-shaped bf16 checkpoint in $ck"
  why=$(peer_synth "$shape" "$build" "$ck" 2>&1) || skip "$why"
fi
if [ ! -f "$ck/.peer-tokenizer" ]; then
  why=$(peer_tokenizer "$shape" "$ck" "$py" 2>&1) || skip "$why"
  touch "$ck/.peer-tokenizer"
fi
g=$cache/$shape
if [ ! -f "$g-f32.gguf" ]; then
  log "converting to GGUF f32 with llama.cpp's convert_hf_to_gguf.py"
  PYTHONPATH=$here/peer/pyshim $py "$here/peer/run_convert.py" "$lcpp/convert_hf_to_gguf.py" "$ck" \
    --outtype f32 --outfile "$g-f32.gguf.tmp" >&2
  mv "$g-f32.gguf.tmp" "$g-f32.gguf"
fi
types=${PEER_TYPES:-f32 q4_0 q8_0}
for q in $types; do
  if [ "$q" != f32 ] && [ ! -f "$g-$q.gguf" ]; then
    log "llama-quantize $q"
    "$lcpp/build/bin/llama-quantize" "$g-f32.gguf" "$g-$q.gguf.tmp" "$q" >/dev/null 2>&1
    mv "$g-$q.gguf.tmp" "$g-$q.gguf"
  fi
done
models=()
for q in $types; do models+=(-m "$g-$q.gguf"); done
log "llama-bench -p 128 -n 32 -t 1,2 -r $reps on $types ($shape)"
rows=$("$lcpp/build/bin/llama-bench" "${models[@]}" -p 128 -n 32 -t 1,2 -r "$reps" -o json 2>/dev/null)
echo "$rows" | python3 -c '
import json, sys
shape, lcpp, ck = sys.argv[1:4]
rows = json.load(sys.stdin)
out = [{"model": r["model_type"], "bytes": r["model_size"], "threads": r["n_threads"],
        "n_prompt": r["n_prompt"], "n_gen": r["n_gen"], "tok_s": r["avg_ts"], "tok_s_sd": r["stddev_ts"],
        "build_commit": r.get("build_commit", "")} for r in rows]
print(json.dumps({"llama_cpp": {"dir": lcpp, "shape": shape, "checkpoint": ck, "rows": out}}))' "$shape" "$lcpp" "$ck"
