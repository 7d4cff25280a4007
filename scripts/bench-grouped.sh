#!/usr/bin/env bash
# Grouped weights against llama.cpp (issue 27) on the TinyLlama-1.1B shape with random bf16
# weights: pdq RTN w4 / w8 in groups of 32, symmetric, f16 scales (4.5 / 8.5 bits a weight) and
# per channel, against llama.cpp's q4_0 / q8_0 (groups of 32, f16 scale) of the same weights.
# Each pair is alternated round by round (pdq bench, then llama-bench, -p 128 -n 64, one
# repetition each), and the ratio pdq / llama.cpp is taken per round, so a machine whose speed
# drifts still gives comparable pairs; the median round is reported with the spread. The w4 g32
# pair also times the public CLI: `pdq generate` of 129 tokens minus 1 token, over 128, against
# llama-bench's tg64. Prints one JSON object on stdout; progress on stderr.
# llama.cpp is never part of pdq: point LLAMA_CPP at a build (default ../peer/llama.cpp).
#   LLAMA_CPP  llama.cpp tree with build/bin/llama-bench and llama-quantize
#   CACHE      checkpoint, GGUF files and OUTDIRs kept between runs (default /tmp/pdq-grouped)
#   ROUNDS     rounds per pair (default 3)     THREADS  thread counts (default "1 2")
#   PAIRS      which pairs (default "w4g32:q4_0 w8g32:q8_0 w4:q4_0 w8:q8_0"); the peer q4_0o8 is
#              q4_0 with a q8_0 output layer, as precise as pdq's uint8 lm_head
# Usage: bench-grouped.sh [BUILD]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
lcpp=${LLAMA_CPP:-$here/../../peer/llama.cpp}
cache=${CACHE:-/tmp/pdq-grouped}
rounds=${ROUNDS:-3}
threads=${THREADS:-1 2}
pairs=${PAIRS:-w4g32:q4_0 w8g32:q8_0 w4:q4_0 w8:q8_0}
py=/usr/bin/python3
log() { echo "bench-grouped: $*" >&2; }
[ -x "$lcpp/build/bin/llama-bench" ] && [ -x "$lcpp/build/bin/llama-quantize" ] ||
  { log "no llama.cpp build at $lcpp"; printf '{"skipped": "no llama.cpp build at %s"}\n' "$lcpp"; exit 0; }

mkdir -p "$cache"
ck=$cache/tinyllama-shape
if [ ! -f "$ck/tokenizer.model" ]; then
  log "TinyLlama-1.1B-shaped bf16 checkpoint in $ck"
  rm -rf "$ck"
  "$build/pdq_synth" --out "$ck" --hidden 2048 --intermediate 5632 --layers 22 --heads 32 --kv-heads 4 \
    --vocab 32000 --dtype bf16 --max-pos 2048 --seed 1 >/dev/null
  # llama.cpp reads a Llama-2 tokenizer as SentencePiece: the bundled model's (vocab 32000)
  cp models/web-bible-llama-19m/tokenizer.json models/web-bible-llama-19m/tokenizer_config.json "$ck/"
  $py "$here/peer/spm_from_tokenizer_json.py" "$ck/tokenizer.json" "$ck/tokenizer.model"
fi
if [ ! -f "$cache/tl-bf16.gguf" ]; then
  log "GGUF bf16 with llama.cpp's convert_hf_to_gguf.py"
  PYTHONPATH=$here/peer/pyshim nice $py "$here/peer/run_convert.py" "$lcpp/convert_hf_to_gguf.py" "$ck" \
    --outtype bf16 --outfile "$cache/tl-bf16.gguf.tmp" >&2
  mv "$cache/tl-bf16.gguf.tmp" "$cache/tl-bf16.gguf"
fi
# q4_0o8: q4_0 with an 8-bit output layer (q8_0), the precision of pdq's uint8 lm_head (llama.cpp's
# q4_0 preset keeps it in q6_K); only when a pair names it
for q in q4_0 q8_0 $(case " $pairs " in *:q4_0o8\ *) echo q4_0o8 ;; esac); do
  if [ ! -f "$cache/tl-$q.gguf" ]; then
    log "llama-quantize $q"
    extra=(); [ "$q" = q4_0o8 ] && extra=(--output-tensor-type q8_0)
    nice "$lcpp/build/bin/llama-quantize" "${extra[@]}" "$cache/tl-bf16.gguf" "$cache/tl-$q.gguf.tmp" "${q%o8}" >/dev/null 2>&1
    mv "$cache/tl-$q.gguf.tmp" "$cache/tl-$q.gguf"
  fi
done
quant() { # name, pdq quantize arguments
  local out=$cache/$1; shift
  [ -f "$out/model.q.safetensors" ] && return
  log "pdq quantize $* -> $out"
  rm -rf "$out"
  nice "$build/pdq" quantize --model "$ck" --method rtn --abits none --quiet --out "$out" "$@" >/dev/null 2>&1
}
quant w4g32 --wbits 4 --group 32 --sym
quant w8g32 --wbits 8 --group 32 --sym
quant w4 --wbits 4
quant w8 --wbits 8

res=$cache/rounds.jsonl
: >"$res"
for t in $threads; do
  for pr in $pairs; do
    mine=${pr%%:*}; peer=${pr##*:}
    for r in $(seq "$rounds"); do
      log "threads $t, $mine vs $peer, round $r of $rounds"
      a=$(nice "$build/pdq" bench --model "$cache/$mine" -p 128 -n 64 -t "$t" -r 1 --json)
      b=$(nice "$lcpp/build/bin/llama-bench" -m "$cache/tl-$peer.gguf" -p 128 -n 64 -t "$t" -r 1 -o json 2>/dev/null)
      g=null
      if [ "$mine" = w4g32 ]; then # the public CLI: 129 tokens minus 1 token, over 128
        s0=$(date +%s.%N)
        nice "$build/pdq" generate --model "$cache/$mine" --ids "1 2 3 4 5 6 7 8" --max-new 1 --ignore-eos \
          --threads "$t" >/dev/null 2>&1
        s1=$(date +%s.%N)
        nice "$build/pdq" generate --model "$cache/$mine" --ids "1 2 3 4 5 6 7 8" --max-new 129 --ignore-eos \
          --threads "$t" >/dev/null 2>&1
        s2=$(date +%s.%N)
        g=$($py -c "print(128 / (($s2 - $s1) - ($s1 - $s0)))")
      fi
      printf '{"threads": %s, "pdq": "%s", "peer": "%s", "round": %s, "a": %s, "b": %s, "generate_tok_s": %s}\n' \
        "$t" "$mine" "$peer" "$r" "$a" "$b" "$g" >>"$res"
    done
  done
done
$py - "$res" "$lcpp" <<'PY'
import json, statistics, sys
text, dec, rows, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while i < len(text):  # one object per round, each over several lines (llama-bench's JSON)
    if text[i].isspace(): i += 1; continue
    r, i = dec.raw_decode(text, i); rows.append(r)
out = {"llama_cpp": sys.argv[2], "pairs": []}
keys = sorted({(r["threads"], r["pdq"], r["peer"]) for r in rows})
for t, mine, peer in keys:
    rs = [r for r in rows if (r["threads"], r["pdq"], r["peer"]) == (t, mine, peer)]
    row = {"threads": t, "pdq": mine, "llama_cpp": peer, "rounds": len(rs)}
    for test, is_gen in (("pp128", False), ("tg64", True)):
        ratios, a_ts, b_ts = [], [], []
        for r in rs:
            a = [x for x in r["a"] if (x["n_gen"] > 0) == is_gen][0]
            b = [x for x in r["b"] if (x["n_gen"] > 0) == is_gen][0]
            ratios.append(a["avg_ts"] / b["avg_ts"]); a_ts.append(a["avg_ts"]); b_ts.append(b["avg_ts"])
            row["pdq_weight_bytes"], row["pdq_peak_rss_mib"] = a["weight_bytes"], a["peak_rss_mib"]
            row["llama_cpp_model_bytes"] = b["model_size"]
        row[test] = {"ratio_median": round(statistics.median(ratios), 3), "ratio_min": round(min(ratios), 3),
                     "ratio_max": round(max(ratios), 3), "pdq_tok_s": round(statistics.median(a_ts), 2),
                     "llama_cpp_tok_s": round(statistics.median(b_ts), 2)}
    gen = [r["generate_tok_s"] / [x for x in r["b"] if x["n_gen"] > 0][0]["avg_ts"] for r in rs if r["generate_tok_s"]]
    if gen:
        row["generate_over_tg64"] = {"ratio_median": round(statistics.median(gen), 3), "ratio_min": round(min(gen), 3),
                                     "ratio_max": round(max(gen), 3)}
    out["pairs"].append(row)
print(json.dumps(out, indent=1))
PY
