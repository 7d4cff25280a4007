#!/usr/bin/env bash
# pdq circle-run and pdq inspect on the hostile Circle seeds (tests/fuzz/corpus/circle_run/,
# made by tests/test_circle_hostile.c): every refused file exits 1 (not a signal) with a message
# naming the file; GATHER ids out of range fed as .npy fail at run time with the index named.
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
exit $fail
