#!/usr/bin/env bash
# The packed weight-only path against llama.cpp on the TinyLlama-1.1B shape, in one run:
# RTN w4 / w8 OUTDIRs (per-channel, uint8 embedding and lm_head) of the checkpoint CK, timed by
# `pdq bench` next to the f32 reference, then llama.cpp's f32 / q4_0 / q8_0 of the same weights
# by scripts/bench-peer.sh (skipped when llama.cpp is absent), and the ratios pdq / llama.cpp per
# test and thread count, with decode's packed bytes per second against the STREAM triad; then
# the integer Circle pair of an a16 export against the packed w4 decode (PDQ_BENCH_CIRCLE=0 skips).
# Prints one JSON object. Usage: bench-packed.sh BUILD CK TRIAD_1T TRIAD_2T
set -euo pipefail
build=$1; ck=$2; bw1=$3; bw2=$4
reps=${REPS:-3}
tmp=$(mktemp -d /tmp/pdq-bench-packed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log() { echo "bench-packed: $*" >&2; }
for b in 4 8; do
  log "RTN w$b of the TinyLlama shape"
  "$build/pdq" quantize --model "$ck" --method rtn --wbits $b --abits none --quiet --out "$tmp/w$b" >/dev/null 2>&1
done
log "pdq bench (f32 reference, packed w4, packed w8): -p 128 -n 32 -t 1,2 -r $reps, one process each (peak RSS per model)"
pdq_rows=$(for d in "$ck" "$tmp/w4" "$tmp/w8"; do "$build/pdq" bench --model "$d" -p 128 -n 32 -t 1,2 -r "$reps" --json; done |
  python3 -c 'import json, sys; dec = json.JSONDecoder(); s = sys.stdin.read(); rows = []; i = 0
while i < len(s):
    if s[i].isspace(): i += 1; continue
    v, i = dec.raw_decode(s, i); rows += v
print(json.dumps(rows))')
# Circle integer decode against the weight-only w4 path: an RTN w4 a16 export of the same
# checkpoint (max_seq 64, 2 calibration windows: the timing does not depend on them), its pair
# timed by `pdq bench` (circle-int rows), then the w4 decode again right after, in the same minutes.
circle='[]'; w4_next='[]'
if [ "${PDQ_BENCH_CIRCLE:-1}" = 1 ]; then
  log "RTN w4 a16 Circle export of the TinyLlama shape (max_seq 64; about 6 min; PDQ_BENCH_CIRCLE=0 skips)"
  # calibration reads text: a synthetic checkpoint has no tokenizer, so it borrows the bundled
  # model's (the same 32000-token vocabulary) through a directory of links
  src=$ck
  if [ ! -f "$ck/tokenizer.json" ]; then
    src=$tmp/ck-tok; mkdir -p "$src"
    for f in "$ck"/*; do ln -s "$(realpath "$f")" "$src/"; done
    tokdir=$(realpath "$(dirname "$0")/../models/web-bible-llama-19m")
    ln -s "$tokdir/tokenizer.json" "$tokdir/tokenizer_config.json" "$src/"
  fi
  "$build/pdq" quantize --model "$src" --out "$tmp/a16" --method rtn --wbits 4 --abits 16 \
    --calib "${CALIB:-data/web-bible/train.txt}" --max-seq 64 --act-nsamples 2 --verify-steps 2 \
    --export circle-full --quiet >/dev/null 2>&1
  log "pdq bench of the Circle pair (integer mode), then packed w4 decode again: -p 64 -n 32 -t 1,2 -r $reps"
  circle=$("$build/pdq" bench --model "$tmp/a16/circle" -p 64 -n 32 -t 1,2 -r "$reps" --json)
  w4_next=$("$build/pdq" bench --model "$tmp/w4" -p 0 -n 32 -t 1,2 -r "$reps" --json)
fi
peer=$(REPS=$reps bash "$(dirname "$0")/bench-peer.sh" "$build")
python3 - "$pdq_rows" "$peer" "$bw1" "$bw2" "$ck" "$tmp" "$circle" "$w4_next" <<'PY'
import json, sys
rows, peer = json.loads(sys.argv[1]), json.loads(sys.argv[2])
circle, w4_next = json.loads(sys.argv[7]), json.loads(sys.argv[8])
triad = {1: float(sys.argv[3]), 2: float(sys.argv[4])}
ck, tmp = sys.argv[5], sys.argv[6]
def kind(r):
    p = r["model"].rstrip("/")
    return "f32" if p == ck.rstrip("/") else ("w4" if p.endswith("/w4") else "w8")
out = {"pdq": [], "llama_cpp": peer.get("llama_cpp", {}).get("rows", []), "ratios": []}
if "skipped" in peer: out["llama_cpp_skipped"] = peer["skipped"]
peer_type = {"f32": "F32", "w4": "Q4_0", "w8": "Q8_0"}
for r in rows:
    k = kind(r)
    row = {"weights": k, "test": r["test"], "threads": r["n_threads"], "tok_s": r["avg_ts"], "tok_s_sd": r["stddev_ts"],
           "tok_s_per_cpu_s": r.get("avg_ts_cpu"), "weight_bytes": r["weight_bytes"], "peak_rss_mib": r["peak_rss_mib"]}
    if r["n_gen"] > 0:
        row["decode_gbps"] = r["avg_gbps"]
        row["of_triad"] = round(r["avg_gbps"] / triad[r["n_threads"]], 3) if r["n_threads"] in triad else None
    out["pdq"].append(row)
    for p in out["llama_cpp"]:
        same = (p["n_gen"] > 0) == (r["n_gen"] > 0) and p["threads"] == r["n_threads"] and p["model"].endswith(peer_type[k])
        if same:
            out["ratios"].append({"weights": k, "vs": p["model"], "test": r["test"], "threads": r["n_threads"],
                                  "pdq_over_llama_cpp": round(r["avg_ts"] / p["tok_s"], 3)})
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
