#!/usr/bin/env bash
# scripts/check-layers.py itself, on copies of the tree: the repository passes; a new upward
# include fails naming the file, the header and both layers; a downward one passes; an
# allow-listed one passes, and once gone fails until its line is removed; an allow-list line without
# a reason fails; the table's "may include" column must say what its layer numbers say.
set -u
. "$(dirname "$0")/lib/checks.sh"
check repository "python3 scripts/check-layers.py . >'$tmp/out' || { cat '$tmp/out'; false; }"

fresh() { rm -rf "$tmp/r"; mkdir -p "$tmp/r/scripts"; cp -r src include docs "$tmp/r/"; cp scripts/layers-allowed.txt "$tmp/r/scripts/"; }
fails() { # name needle: the check on $tmp/r must fail and print needle
    if python3 scripts/check-layers.py "$tmp/r" >"$tmp/out" 2>&1; then bad "$1: exit 0"; return; fi
    if grep -qF -- "$2" "$tmp/out"; then ok "$1"; else bad "$1: no '$2' in: $(cat "$tmp/out")"; fi
}

fresh
sed -i '1i #include "circle/circle_defs.h"' "$tmp/r/src/util/status.c"
fails new-upward "src/util/status.c:1: includes circle/circle_defs.h (circle/, layer 10) from util/ (layer 0)"
fresh
sed -i '1i #include "pdq/ptq.h"' "$tmp/r/src/io/npy.c"
fails new-upward-public "src/io/npy.c:1: includes pdq/ptq.h (ptq/, layer 9) from io/ (layer 1)"
fresh
sed -i '1i #include "pdq/status.h"' "$tmp/r/src/circle/crt.c"
check downward "python3 scripts/check-layers.py '$tmp/r' >/dev/null"
fresh
# an allow-listed upward include, made here (the repository's own list may be empty)
sed -i '1i #include "circle/circle_defs.h"' "$tmp/r/src/util/status.c"
echo 'src/util/status.c: circle/circle_defs.h  # a move still to make' >>"$tmp/r/scripts/layers-allowed.txt"
check allowed "python3 scripts/check-layers.py '$tmp/r' >/dev/null"
sed -i '1d' "$tmp/r/src/util/status.c"
fails gone "src/util/status.c no longer includes circle/circle_defs.h upward: remove the line"
sed -i '\|^src/util/status.c: circle/circle_defs.h|d' "$tmp/r/scripts/layers-allowed.txt"
check gone-and-removed "python3 scripts/check-layers.py '$tmp/r' >/dev/null"
fresh
sed -i '1i #include "circle/circle_defs.h"' "$tmp/r/src/util/status.c"
echo 'src/util/status.c: circle/circle_defs.h' >>"$tmp/r/scripts/layers-allowed.txt"
fails no-reason "expected 'FILE: INCLUDE  # reason'"
fresh
sed -i 's/^| 1 | `io\/` \(.*\)| util |$/| 1 | `io\/` \1| util, kernels |/' "$tmp/r/docs/architecture.md"
fails may-include "io/ may include 'util, kernels', but its layer says 'util'"
exit $fail
