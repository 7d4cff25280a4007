#!/usr/bin/env bash
# pdq export / circle-run / inspect FILE.circle / verify --circle / generate --circle on the bundled
# model: the files and manifest, circle-run of the whole prefill graph vs the FP32 reference
# logits (pdq logits), the Circle runtime vs the in-memory runtime, greedy ids vs the reference
# generate, and error exits.
set -u
PDQ=${1:?usage: export.sh PDQ_BINARY}
M=models/web-bible-llama-19m
fail=0
has() { # name haystack needle
    if grep -qF -- "$3" <<<"$2"; then echo "ok   $1"; else echo "FAIL $1: no '$3' in:"; echo "$2" | head -20; fail=1; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
O=$tmp/out

"$PDQ" export --model $M --max-seq 16 --out $O --append-bucket 4 --quiet || { echo "FAIL export exit status"; fail=1; }
for f in model_prefill model_decode token_embedding lm_head decoder_layer_prefill_0 decoder_layer_decode_3 decoder_layer_append_prefill_q4_2 model_append_prefill_q4; do
    [ -s $O/$f.circle ] && echo "ok   file $f" || { echo "FAIL missing $f.circle"; fail=1; }
done
[ -e $O/decoder_layer_prefill_4.circle ] && { echo "FAIL layer 4 exported"; fail=1; }
man=$(cat $O/manifest.json)
has manifest-seq "$man" '"max_seq":	16'
has manifest-fill "$man" '"fill":	-120'
has manifest-rope "$man" '"convention":	"pre_negated_sin"'
has manifest-past "$man" '"name":	"model.layers.0.past_key"'

ins=$("$PDQ" inspect $O/model_decode.circle)
has inspect-rms "$ins" "RMS_NORM         code   -6 version 1"
has inspect-fc "$ins" "FULLY_CONNECTED  code    9 version 1"
has inspect-in "$ins" "INT32     (1,1) input_ids"
has inspect-past "$ins" "FLOAT32   (1,2,15,32) model.layers.3.past_value"

# circle-run of the whole prefill graph on .npy inputs vs the FP32 reference logits
if command -v python3 >/dev/null; then
    ids="1 450 3186 310 278 6171"
    "$PDQ" logits --model $M --ids "$ids" --out $tmp/ref.npy >/dev/null || { echo "FAIL logits"; fail=1; }
    python3 - "$O" "$tmp" $ids <<'PY'
import struct, sys
out, tmp, ids = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
S, n = 16, len(ids)
def write(path, code, shape, vals):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (code, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%d%s" % (len(vals), code[-2]), *vals))
def read(path):
    b = open(path, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; d = b[10 + hl:]
    return struct.unpack("<%df" % (len(d) // 4), d)
cos, sin = read(out + "/rope_cos.npy"), read(out + "/rope_sin.npy")
hd = len(cos) // S
write(tmp + "/ids.npy", "<i4", (1, S), ids + [0] * (S - n))
write(tmp + "/mask.npy", "<f4", (1, S, S), [0.0 if (i < n and j <= i) else -120.0 for i in range(S) for j in range(S)])
rows = lambda t: [t[(i if i < n else 0) * hd + k] for i in range(S) for k in range(hd)]
write(tmp + "/cos.npy", "<f4", (1, S, hd), rows(cos))
write(tmp + "/sin.npy", "<f4", (1, S, hd), rows(sin))
PY
    run=$("$PDQ" circle-run $O/model_prefill.circle --input $tmp/ids.npy --input $tmp/mask.npy --input $tmp/cos.npy \
          --input $tmp/sin.npy --out $tmp/run) || { echo "FAIL circle-run exit status"; fail=1; }
    has circle-run-out "$run" "output 0: lm_head.out"
    has circle-run-k "$run" "output 8: model.layers.3.self_attn.new_v"
    d=$(python3 - "$tmp" <<'PY'
import struct, sys
def read(path):
    b = open(path, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; d = b[10 + hl:]
    return struct.unpack("<%df" % (len(d) // 4), d)
ref, got = read(sys.argv[1] + "/ref.npy"), read(sys.argv[1] + "/run/output_0.npy")
print("%.3g" % max(abs(a - b) for a, b in zip(ref, got[:len(ref)])))
PY
)
    if python3 -c "import sys; sys.exit(0 if float('$d') <= 1e-4 else 1)"; then echo "ok   circle-run vs reference ($d)"
    else echo "FAIL circle-run vs reference: $d"; fail=1; fi
else
    echo "skip circle-run (no python3)"
fi

v=$("$PDQ" verify --circle $O --model $M --ids "1 450 3186 310 278" --steps 10) || { echo "FAIL verify --circle exit status"; fail=1; }
has verify-whole "$v" "circle whole-model (float)"
has verify-tokens "$v" "tokens identical"
v=$("$PDQ" verify --circle $O --per-layer --model $M --ids "1 450 3186 310 278" --steps 10) || { echo "FAIL verify --circle --per-layer"; fail=1; }
has verify-layers "$v" "circle per-layer (float)"

g1=$("$PDQ" generate --circle $O --ids "1 450 3186 310 278" --max-new 10 --json --ignore-eos | jq -c '{prompt_ids, ids}')
g2=$("$PDQ" generate --model $M --ids "1 450 3186 310 278" --max-new 10 --json --ignore-eos | jq -c '{prompt_ids, ids}')
if [ "$g1" = "$g2" ]; then echo "ok   generate --circle ids = reference"; else echo "FAIL generate: $g1 vs $g2"; fail=1; fi
g3=$("$PDQ" generate --circle $O --per-layer --ids "1 450 3186 310 278" --max-new 10 --json --ignore-eos | jq -c '{prompt_ids, ids}')
[ "$g3" = "$g2" ] && echo "ok   generate --circle --per-layer" || { echo "FAIL generate per-layer: $g3"; fail=1; }

# errors
head -c 1000 $O/lm_head.circle >$tmp/trunc.circle
e=$("$PDQ" inspect $tmp/trunc.circle 2>&1) && { echo "FAIL inspect of a truncated file succeeded"; fail=1; }
has err-trunc "$e" "trunc.circle"
e=$("$PDQ" circle-run $O/lm_head.circle --out $tmp/x 2>&1) && { echo "FAIL circle-run without inputs"; fail=1; }
has err-inputs "$e" "has 1 inputs, 0 --input given"
e=$("$PDQ" export --model $M --max-seq 1 --out $tmp/bad 2>&1) && { echo "FAIL export max-seq 1"; fail=1; }
has err-seq "$e" "--max-seq must be an integer in [2, 32768], got '1'"
e=$("$PDQ" verify --circle $O --model $M --ids "1 2 3" --steps 20 2>&1) && { echo "FAIL verify past max_seq"; fail=1; }
has err-verify-seq "$e" "exceed the export's max_seq 16"
exit $fail
