#!/usr/bin/env bash
# Embedding: `cmake --install` into a scratch prefix (and a DESTDIR stage) puts bin/pdq,
# lib/libpdq.so, include/pdq/*.h and lib/pkgconfig/pdq.pc there; examples/*.c build against that
# installed copy with nothing but `pkg-config --cflags --libs pdq` and generate the same text as
# pdq's own commands (FP32 model, quantized fake-quant model, exported Circle pair); every public
# header compiles as C++ and links (extern "C").
set -u
PDQ=${1:?usage: examples.sh PDQ_BINARY}
BUILD=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}
. "$(dirname "$0")/lib/checks.sh"

pfx="$tmp/prefix"
check install "cmake --install '$BUILD' --prefix '$pfx' >'$tmp/install.log' 2>&1"
for f in bin/pdq lib/libpdq.so lib/pkgconfig/pdq.pc include/pdq/model.h include/pdq/circle_export.h; do
    check "installed $f" "[ -e '$pfx/$f' ]"
done
check headers-all "[ \$(ls '$pfx/include/pdq' | wc -l) = \$(ls include/pdq/*.h | wc -l) ]"
check stage "DESTDIR='$tmp/stage' cmake --install '$BUILD' --prefix /opt/pdq >/dev/null 2>&1 && [ -e '$tmp/stage/opt/pdq/lib/libpdq.so' ] &&
    PKG_CONFIG_PATH='$tmp/stage/opt/pdq/lib/pkgconfig' pkg-config --cflags pdq | grep -q 'stage/opt/pdq/lib/pkgconfig/../../include'"

export PKG_CONFIG_PATH="$pfx/lib/pkgconfig"
# An ASan build's library needs the sanitizer runtime in the program too.
san=""
[ "${PDQ_ASAN:-0}" = 1 ] && san="-fsanitize=address,undefined"
flags="$(pkg-config --cflags --libs pdq) -Wl,-rpath,$pfx/lib $san"
for e in circle_generate model_generate; do
    check "build $e" "cc -std=c11 -Wall -Wextra -Werror examples/$e.c $flags -o '$tmp/$e' 2>'$tmp/$e.log' || { cat '$tmp/$e.log'; false; }"
done
check "linked to installed lib" "ldd '$tmp/model_generate' | grep -q '$pfx/lib/libpdq.so'"

for h in include/pdq/*.h; do echo "#include <pdq/$(basename "$h")>"; done >"$tmp/all.cpp"
echo 'int main() { return pdq_code_name(PDQ_OK) == 0; }' >>"$tmp/all.cpp"
check cxx-headers "g++ -std=c++17 -Wall -Wextra -Werror -x c++ '$tmp/all.cpp' $flags -o '$tmp/cxx' && '$tmp/cxx'"

need_stories
M=$STORIES
P="Once upon a time"
q="$tmp/q"
check quantize "'$PDQ' quantize --model $M --calib $TINY/train.txt --method rtn --wbits 8 --quiet --threads 2 \
    --max-seq 32 --act-nsamples 2 --verify-steps 4 --export circle-full --out '$q' >'$tmp/qlog' 2>&1 || { cat '$tmp/qlog'; false; }"
same() { # name "example command" "pdq command": identical stdout, non-empty
    local a b
    a=$(eval "$2" 2>"$tmp/err") || { bad "$1: example failed: $(cat "$tmp/err")"; return; }
    b=$(eval "$3" 2>/dev/null)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "$1"; else bad "$1: '$a' vs '$b'"; fi
}
same fp32-model "'$tmp/model_generate' $M '$P' 20" "'$PDQ' generate --model $M --prompt '$P' --max-new 20"
same quant-model "'$tmp/model_generate' '$q' '$P' 20" "'$PDQ' generate --static --model '$q' --max-seq 32 --prompt '$P' --max-new 20"
same circle-pair "'$tmp/circle_generate' '$q/circle' '$P' 20" "'$PDQ' generate --circle '$q/circle' --prompt '$P' --max-new 20"
err example-missing "'$tmp/circle_generate' '$tmp/none' '$P'" "tokenizer"
exit $fail
