#!/usr/bin/env bash
# Opt-in: Open MPI from Debian, for pdq-mpi (the default build does not need it). Idempotent.
# Afterwards `make all` also builds build/pdq-mpi and the cli_mpi test runs instead of skipping.
set -euo pipefail
pkgs=(libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "pdq: Open MPI missing: ${missing[*]}" >&2
  echo "run as root: apt-get update && $cmd" >&2
  exit 1
fi
echo "pdq: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
