#!/usr/bin/env bash
# scripts/bench.sh (make bench) with stub benchmark binaries: every section reaches stdout as soon
# as it is measured (read while a later section is still running), the finished document is valid
# JSON and equal to what went to stdout, and an interrupted run leaves the previous bench.json
# untouched and no partial file behind.
set -u
PDQ=${1:?usage: bench_script.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
b="$tmp/build"
mkdir -p "$b"
stub() { printf '#!/usr/bin/env bash\n%s\n' "$2" >"$b/$1"; chmod +x "$b/$1"; }
stub bench_stream 'echo "{\"threads\": {\"1\": 10.5, \"2\": 20.5}}"'
stub bench_model 'echo "{\"decode_tok_s\": 1}"'
stub pdq_synth 'mkdir -p "$2"'
stub bench_section_alpha 'echo "{\"a\": 1}"'
stub bench_section_beta 'while [ ! -e "$BENCH_GO" ]; do sleep 0.1; done; echo "{\"b\": 2}"'
export BENCH_GO="$tmp/go"

# a complete run, watched while the last section waits
echo '{"old": true}' >"$b/bench.json"
setsid bash scripts/bench.sh "$b" "$b/bench.json" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do grep -q '"alpha"' "$tmp/out" && break; sleep 0.1; done
check streamed "grep -q '\"alpha\": {\"a\": 1}' '$tmp/out' && ! grep -q '\"beta\"' '$tmp/out' && grep -q '\"old\"' '$b/bench.json'"
touch "$BENCH_GO"
wait $pid; rc=$?
check complete "[ $rc = 0 ] && jq -e '.machine.stream.threads[\"2\"] == 20.5 and .alpha.a == 1 and .beta.b == 2' '$b/bench.json' >/dev/null"
check same-as-stdout "cmp -s '$tmp/out' '$b/bench.json'"

# an interrupted run: the previous document stays, no partial file
rm -f "$BENCH_GO"
cp "$b/bench.json" "$tmp/prev.json"
setsid bash scripts/bench.sh "$b" "$b/bench.json" >"$tmp/out2" 2>/dev/null &
pid=$!
for _ in $(seq 100); do grep -q '"alpha"' "$tmp/out2" && break; sleep 0.1; done
kill -TERM -- -"$pid" 2>/dev/null
wait $pid 2>/dev/null
check interrupted "cmp -s '$tmp/prev.json' '$b/bench.json' && [ ! -e '$b/bench.json.part' ] && [ -s '$tmp/out2' ]"
exit $fail
