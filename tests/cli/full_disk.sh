#!/usr/bin/env bash
# The full-disk command of issue 24 on the bundled model: GPTQ w4, int16 activations and a
# Circle export into a directory that fills up while model.q.safetensors is written (its 8 MB
# lm_head is one write). Under ASan this crashed inside glibc's fwrite. Now: a non-zero exit, a
# message naming the file and the errno text, no sanitizer report, no temp file and no
# half-written final file. Two ways to fill the disk:
#  - always: a file-size limit (ulimit -f with SIGXFSZ ignored, so writes fail with EFBIG);
#  - when mount works here (root): the issue's own 20 MiB tmpfs (ENOSPC).
set -u
PDQ=${1:?usage: full_disk.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
disk=$tmp/disk
trap 'umount "$disk" 2>/dev/null; rm -rf "$tmp"' EXIT

quantize() { # OUT
    "$PDQ" quantize --model models/web-bible-llama-19m --calib data/web-bible/train.txt --method gptq --wbits 4 \
        --nsamples 4 --seq-len 128 --max-seq 32 --act-nsamples 1 --verify-steps 4 --export circle-full --quiet \
        --threads 2 --out "$1"
}
full() { # label out errno-text [prefix]
    local label=$1 out=$2 needle=$3 prefix=${4:-}
    if $prefix quantize "$out" >"$tmp/log" 2>&1; then bad "$label: exit 0"; return; fi
    ok "$label: exits non-zero"
    check "$label: no sanitizer report" "! grep -q Sanitizer '$tmp/log'"
    check "$label: the message names the file and the error" \
        "grep -qF '$out/model.q.safetensors: write failed: $needle (nothing written under this name)' '$tmp/log'"
    check "$label: no temp file" "[ -z \"\$(find '$out' -name '*.tmp.*')\" ]"
    check "$label: no model.q.safetensors" "[ ! -e '$out/model.q.safetensors' ]"
    grep -q Sanitizer "$tmp/log" && cat "$tmp/log"
}
limited() { (trap '' XFSZ; ulimit -f 16384; "$@"); } # 16 MiB per file: inside lm_head's write
full fsize-limit "$tmp/q" "File too large" limited

mkdir -p "$disk"
if mount -t tmpfs -o size=20m tmpfs "$disk" 2>/dev/null; then
    full tmpfs-20m "$disk/q" "No space left on device"
else
    echo "skip the 20 MiB tmpfs run (mount -t tmpfs is not permitted here; the file-size limit above still ran)"
fi
exit $fail
