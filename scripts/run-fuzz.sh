#!/usr/bin/env bash
# Runs every fuzz target briefly from its seed corpus; fails on any crash.
set -euo pipefail
build=$1; secs=${2:-20}
shopt -s nullglob
for bin in "$build"/fuzz_*; do
  name=$(basename "$bin")
  seeds=tests/fuzz/corpus/${name#fuzz_}
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  echo "fuzz: $name for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 "$work" 2>&1 | tail -n 3
  rm -rf "$work"
done
