#!/usr/bin/env bash
# Runs every fuzz target briefly from its seed corpus; fails on any crash or sanitizer report.
# The per-unit limit (FUZZ_UNIT_TIMEOUT, default 120 s) is a hang detector, not a speed test:
# one unit of a 64 KiB input under ASan can take seconds on a loaded 2-core machine, and a
# slow but correct unit must not fail `make test`. Fixture loading happens in each target's
# LLVMFuzzerInitialize, outside any unit's time.
set -euo pipefail
build=$1; secs=${2:-20}; unit_timeout=${FUZZ_UNIT_TIMEOUT:-120}
shopt -s nullglob
for bin in "$build"/fuzz_*; do
  name=$(basename "$bin")
  seeds=tests/fuzz/corpus/${name#fuzz_}
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  echo "fuzz: $name for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=65536 -timeout="$unit_timeout" -rss_limit_mb=2048 "$work" 2>&1 | tail -n 3
  rm -rf "$work"
done
