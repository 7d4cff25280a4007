#!/usr/bin/env bash
# The packed weight-only path against llama.cpp on one shape (SHAPE, default tinyllama; see
# scripts/peer/shapes.sh): RTN OUTDIRs of the checkpoint CK (w4 and w8 per-channel; w4 and w8
# in symmetric groups of 32 with f16 group scales, the size of llama.cpp's q4_0 / q8_0; uint8
# embedding and lm_head) and the f32 reference, each timed by `pdq bench` and right after it
# llama.cpp's GGUF of the same weights in the matching type (f32, q4_0, q8_0) by
# scripts/bench-peer.sh (skipped when llama.cpp is absent); the ratios pdq / llama.cpp per test
# and thread count, with each side's weight bytes and decode's packed bytes per second against
# the STREAM triad; then, on the TinyLlama shape, the integer Circle pair of an a16 export
# against the packed w4 decode (PDQ_BENCH_CIRCLE=0 skips). Prints one JSON object.
# Usage: bench-packed.sh BUILD [CK [TRIAD_1T TRIAD_2T]]
#   CK empty or absent: the checkpoint bench-peer.sh converts (PEER_CACHE/SHAPE, written if absent)
#   TRIAD_*: STREAM triad GB/s; measured here by BUILD/bench_stream when absent
#   VARIANTS: which pdq weights to time (default "f32 w4 w8 w4g32 w8g32")
set -euo pipefail
build=$1; ck=${2:-}; bw1=${3:-}; bw2=${4:-}
shape=${SHAPE:-tinyllama}
reps=${REPS:-3}
variants=${VARIANTS:-f32 w4 w8 w4g32 w8g32}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/peer/shapes.sh
. "$here/peer/shapes.sh"
peer_args "$shape" >/dev/null || exit 2
tmp=$(mktemp -d /tmp/pdq-bench-packed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log() { echo "bench-packed: $*" >&2; }
skipped() { log "skipped: $1"; python3 -c 'import json,sys; print(json.dumps({"shape": sys.argv[1], "skipped": sys.argv[2]}))' "$shape" "$1"; exit 0; }

if [ -z "$ck" ]; then
  ck=${PEER_CACHE:-/tmp/pdq-peer}/$shape
  if [ ! -f "$ck/config.json" ]; then
    mkdir -p "$(dirname "$ck")"
    log "$shape-shaped bf16 checkpoint in $ck"
    why=$(peer_synth "$shape" "$build" "$ck" 2>&1) || skipped "$why"
  fi
fi
if [ -z "$bw1" ] || [ -z "$bw2" ]; then
  log "memory bandwidth (STREAM triad, 1 and 2 threads)"
  stream=$("$build/bench_stream" 256 2)
  bw1=$(echo "$stream" | sed -n 's/.*"1": \([0-9.]*\).*/\1/p')
  bw2=$(echo "$stream" | sed -n 's/.*"2": \([0-9.]*\).*/\1/p')
fi
quant_args() {
  case $1 in
    w4) echo "--wbits 4" ;;
    w8) echo "--wbits 8" ;;
    w4g32) echo "--wbits 4 --group 32 --sym --group-scale f16" ;;
    w8g32) echo "--wbits 8 --group 32 --sym --group-scale f16" ;;
  esac
}
peer_type() { case $1 in f32) echo f32 ;; w4 | w4g32) echo q4_0 ;; w8 | w8g32) echo q8_0 ;; esac; }
for v in $variants; do
  [ "$v" = f32 ] && continue
  log "RTN $v of the $shape shape ($(quant_args "$v"))"
  # shellcheck disable=SC2046  # the variant's arguments are words
  "$build/pdq" quantize --model "$ck" --method rtn $(quant_args "$v") --abits none --quiet --out "$tmp/$v" >/dev/null 2>&1
done
# pdq and llama.cpp alternate, one pair per variant (pdq bench, then llama-bench of the matching
# GGUF type), so each ratio compares runs minutes apart on a machine whose load changes
for v in $variants; do
  d=$tmp/$v; [ "$v" = f32 ] && d=$ck
  log "pdq bench $v: -p 128 -n 32 -t 1,2 -r $reps, one process (peak RSS)"
  "$build/pdq" bench --model "$d" -p 128 -n 32 -t 1,2 -r "$reps" --json >"$tmp/pdq-$v.json"
  cat "$d"/*.safetensors | wc -c >"$tmp/bytes-$v"
  PEER_TYPES=$(peer_type "$v") REPS=$reps bash "$here/bench-peer.sh" "$build" "$shape" >"$tmp/peer-$v.json"
done
# Circle integer decode against the weight-only w4 path: an RTN w4 a16 export of the same
# checkpoint (max_seq 64, 2 calibration windows: the timing does not depend on them), its pair
# timed by `pdq bench` (circle-int rows), then the w4 decode again right after, in the same minutes.
circle='[]'; w4_next='[]'
if [ "${PDQ_BENCH_CIRCLE:-1}" = 1 ] && [ "$shape" = tinyllama ] && [ -d "$tmp/w4" ]; then
  log "RTN w4 a16 Circle export of the TinyLlama shape (max_seq 64; about 6 min; PDQ_BENCH_CIRCLE=0 skips)"
  # calibration reads text: a synthetic checkpoint has no tokenizer, so it borrows the bundled
  # model's (the same 32000-token vocabulary) through a directory of links
  src=$ck
  if [ ! -f "$ck/tokenizer.json" ]; then
    src=$tmp/ck-tok; mkdir -p "$src"
    for f in "$ck"/*; do ln -s "$(realpath "$f")" "$src/"; done
    tokdir=$(realpath "$here/../models/web-bible-llama-19m")
    ln -s "$tokdir/tokenizer.json" "$tokdir/tokenizer_config.json" "$src/"
  fi
  "$build/pdq" quantize --model "$src" --out "$tmp/a16" --method rtn --wbits 4 --abits 16 \
    --calib "${CALIB:-data/web-bible/train.txt}" --max-seq 64 --act-nsamples 2 --verify-steps 2 \
    --export circle-full --quiet >/dev/null 2>&1
  log "pdq bench of the Circle pair (integer mode), then packed w4 decode again: -p 64 -n 32 -t 1,2 -r $reps"
  circle=$("$build/pdq" bench --model "$tmp/a16/circle" -p 64 -n 32 -t 1,2 -r "$reps" --json)
  w4_next=$("$build/pdq" bench --model "$tmp/w4" -p 0 -n 32 -t 1,2 -r "$reps" --json)
fi
python3 - "$tmp" "$variants" "$bw1" "$bw2" "$ck" "$circle" "$w4_next" "$shape" <<'PY'
import json, sys
tmp, variants = sys.argv[1], sys.argv[2].split()
triad = {1: float(sys.argv[3]), 2: float(sys.argv[4])}
ck, circle, w4_next, shape = sys.argv[5].rstrip("/"), json.loads(sys.argv[6]), json.loads(sys.argv[7]), sys.argv[8]
out = {"shape": shape, "checkpoint": ck, "pdq": [], "llama_cpp": [], "ratios": []}
for v in variants:
    rows = json.load(open(f"{tmp}/pdq-{v}.json"))
    peer = json.load(open(f"{tmp}/peer-{v}.json"))
    file_bytes = int(open(f"{tmp}/bytes-{v}").read())
    if "skipped" in peer: out["llama_cpp_skipped"] = peer["skipped"]
    prow = peer.get("llama_cpp", {}).get("rows", [])
    out["llama_cpp"] += [dict(p, after_pdq=v) for p in prow]
    for r in rows:
        row = {"weights": v, "test": r["test"], "threads": r["n_threads"], "tok_s": r["avg_ts"], "tok_s_sd": r["stddev_ts"],
               "tok_s_per_cpu_s": r.get("avg_ts_cpu"), "weight_bytes": r["weight_bytes"], "file_bytes": file_bytes,
               "peak_rss_mib": r["peak_rss_mib"]}
        if r["n_gen"] > 0:
            row["decode_gbps"] = r["avg_gbps"]
            row["of_triad"] = round(r["avg_gbps"] / triad[r["n_threads"]], 3) if r["n_threads"] in triad else None
        out["pdq"].append(row)
        for p in prow:
            if (p["n_gen"] > 0) == (r["n_gen"] > 0) and p["threads"] == r["n_threads"]:
                out["ratios"].append({"weights": v, "vs": p["model"], "test": r["test"], "threads": r["n_threads"],
                                      "pdq_over_llama_cpp": round(r["avg_ts"] / p["tok_s"], 3),
                                      "pdq_file_bytes": file_bytes, "llama_cpp_bytes": p["bytes"]})
if circle:
    c = {"rows": circle, "packed_w4_after": w4_next, "ratios": []}
    for r in circle:
        for w in w4_next:
            if r["n_gen"] > 0 and w["n_gen"] == r["n_gen"] and w["n_threads"] == r["n_threads"]:
                c["ratios"].append({"test": r["test"], "threads": r["n_threads"],
                                    "circle_int_over_packed_w4": round(r["avg_ts"] / w["avg_ts"], 3)})
    out["circle_int"] = c
print(json.dumps(out))
PY
