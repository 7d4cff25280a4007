#!/usr/bin/env bash
# The quantize job as a library call: examples/quantize_model.c, built against an installed copy
# of pdq (a DESTDIR stage, pkg-config only, pdq/*.h only), quantizes the bundled model through
# pdq_quantize_run and writes what `pdq quantize` writes with the same settings: the same
# checkpoint bytes, the same perplexity line, and `pdq ppl` on its output gives that number.
# A conflicting plan comes back as an error value naming the option.
set -u
PDQ=${1:?usage: example_quantize.sh PDQ_BINARY}
BUILD=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}
. "$(dirname "$0")/lib/checks.sh"

stage="$tmp/stage"
pfx="$stage/opt/pdq"
check install "DESTDIR='$stage' cmake --install '$BUILD' --prefix /opt/pdq >'$tmp/install.log' 2>&1"
check "installed header" "[ -e '$pfx/include/pdq/quantize_job.h' ]"
# the public header stands alone: only installed pdq/*.h, nothing of src/
check "no internal include" "! grep '#include' '$pfx/include/pdq/quantize_job.h' | grep -vq '\"pdq/'"
check "header compiles alone" "echo '#include <pdq/quantize_job.h>' | cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I'$pfx/include' -x c -"

export PKG_CONFIG_PATH="$pfx/lib/pkgconfig"
san=""
[ "${PDQ_ASAN:-0}" = 1 ] && san="-fsanitize=address,undefined"
# pdq.pc's prefix is relative to the .pc file, so the stage works without the real /opt/pdq
flags="$(pkg-config --cflags --libs pdq) -Wl,-rpath,$pfx/lib $san"
check "build quantize_model" "cc -std=c11 -Wall -Wextra -Werror examples/quantize_model.c $flags -o '$tmp/quantize_model' 2>'$tmp/build.log' || { cat '$tmp/build.log'; false; }"
check "linked to installed lib" "ldd '$tmp/quantize_model' | grep -q '$pfx/lib/libpdq.so'"

M=models/web-bible-llama-19m
C=data/web-bible/train.txt
E=data/web-bible/valid.txt
a="$tmp/a" b="$tmp/b"
check "example runs" "'$tmp/quantize_model' $M $C '$a' $E >'$tmp/a.out' 2>'$tmp/a.err' || { cat '$tmp/a.err'; false; }"
check "pdq quantize, same settings" "'$PDQ' quantize --model $M --calib $C --method gptq --wbits 4 --nsamples 4 --seq-len 128 \
    --abits none --eval $E --eval-tokens 4096 --quiet --threads 2 --out '$b' >'$tmp/b.out' 2>'$tmp/b.err' || { cat '$tmp/b.err'; false; }"
for f in model.q.safetensors pdq_quant.json hf/model.safetensors hf/config.json; do
    check "same $f" "cmp '$a/$f' '$b/$f'"
done
for f in report.json report.html; do check "wrote $f" "[ -s '$a/$f' ]"; done
check "summary in report.json" "grep -q '\"summary\"' '$a/report.json'"
pa=$(grep '^perplexity fp32' "$tmp/a.out")
pb=$(grep '^perplexity fp32' "$tmp/b.out")
if [ -n "$pa" ] && [ "$pa" = "$pb" ]; then ok "same perplexity line: $pa"; else bad "perplexity: '$pa' vs '$pb'"; fi
# the example's quantized perplexity is what pdq ppl computes on its checkpoint
q=$(sed -n 's/.*quantized \([0-9.]*\) .*/\1/p' <<<"$pa")
p=$("$PDQ" ppl --model "$a" --text $E --eval-tokens 4096 --max-len 256 --stride 256 --threads 2 --json 2>/dev/null |
    sed -n 's/^{"ppl": \([0-9.e+-]*\),.*/\1/p')
pr=$(printf '%.4f' "${p:-0}")
if [ -n "$q" ] && [ "$q" = "$pr" ]; then ok "pdq ppl on the example's checkpoint: $pr"; else bad "pdq ppl '$p' vs the job's '$q'"; fi
check "steps reported" "grep -q 'quantize_model: save done in' '$tmp/a.err' && grep -q 'quantize_model: quant eval done in' '$tmp/a.err'"
check "no summary printed by the library" "! grep -q '== summary ==' '$tmp/a.out'"
err "error value" "'$tmp/quantize_model' $M $C '$M'" "--out $M is the source model directory"
exit $fail
