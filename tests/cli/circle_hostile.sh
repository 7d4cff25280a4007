#!/usr/bin/env bash
# pdq circle-run and pdq inspect on the hostile Circle seeds (tests/fuzz/corpus/circle_run/,
# made by tests/test_circle_hostile.c): every refused file exits 1 (not a signal) with a message
# naming the file; GATHER ids out of range fed as .npy fail at run time with the index named;
# a manifest claiming 2^31-1 layers is refused before it sizes anything.
set -u
PDQ=${1:?usage: circle_hostile.sh PDQ_BINARY}
source tests/cli/lib/checks.sh
C=tests/fuzz/corpus/circle_run

n=0
for f in $C/*.circle; do
    case $(basename $f) in ok_* | export_* | sslice_stride_max.circle | gather_runtime_index.circle) continue ;; esac
    out=$("$PDQ" circle-run $f --out $tmp/o 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$f" <<<"$out"; then n=$((n + 1)); else bad "circle-run $(basename $f): exit $rc: $out"; fi
    "$PDQ" inspect $f >/dev/null 2>&1; rc=$?
    [ $rc -le 1 ] || bad "inspect $(basename $f): exit $rc"
done
check "circle-run refuses $n hostile files with exit 1 and the file named" "[ $n -ge 30 ]"
err slice-begin "'$PDQ' circle-run $C/slice_begin_max.circle --out $tmp/o" "operator 0 (SLICE)"
err rank0-softmax "'$PDQ' circle-run $C/rank0_softmax.circle --out $tmp/o" "rank >= 1"
err fc-65536 "'$PDQ' circle-run $C/fc_65536x65536.circle --out $tmp/o" "2147483647 elements"

# runtime ids: row 3 then 0 then 1 works, id 9 is refused by the kernel
python3 - "$tmp" <<'EOF'
import struct, sys
def npy(path, vals):
    hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(vals)
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<%di" % len(vals), *vals))
npy(sys.argv[1] + "/good.npy", [3, 0, 1])
npy(sys.argv[1] + "/bad.npy", [3, 9, 1])
EOF
check gather-good "'$PDQ' circle-run $C/gather_runtime_index.circle --input $tmp/good.npy --out $tmp/g >/dev/null"
err gather-bad "'$PDQ' circle-run $C/gather_runtime_index.circle --input $tmp/bad.npy --out $tmp/b" "index 9 out of range [0,4)"
# a hostile manifest next to good files: the layer count is bounded before it sizes anything
"${PDQ_BUILD_DIR:-build}/pdq_synth" --out $tmp/m --hidden 16 --intermediate 24 --layers 1 --heads 2 --kv-heads 1 \
    --vocab 32 >/dev/null && "$PDQ" export --model $tmp/m --out $tmp/e --max-seq 8 --quiet || bad "synth + export"
check manifest-good "'$PDQ' generate --circle $tmp/e --ids '1 2 3' --max-new 1 >/dev/null"
python3 -c "
import json, sys
p = sys.argv[1] + '/e/manifest.json'
j = json.load(open(p)); j['model']['num_hidden_layers'] = 2147483647; json.dump(j, open(p, 'w'))" "$tmp"
err manifest-layers "'$PDQ' generate --circle $tmp/e --ids '1 2 3' --max-new 1" "model.num_hidden_layers = 2147483647: must be an integer in [1, 1024]"
exit $fail
