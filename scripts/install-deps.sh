#!/usr/bin/env bash
# Installs pdq's Debian build dependencies (or the packages given) when any is missing. Idempotent.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev python3 jq
      libopenblas-dev liblapacke-dev libcjson-dev libpcre2-dev libcmocka-dev flatbuffers-compiler)
# Given packages instead (scripts/install-mpi.sh: the opt-in Open MPI).
[ $# -gt 0 ] && pkgs=("$@")
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
