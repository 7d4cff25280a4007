#!/usr/bin/env bash
# Opt-in: Open MPI from Debian, for pdq-mpi (the default build does not need it). Idempotent.
# Afterwards `make all` also builds build/pdq-mpi and the cli_mpi test runs instead of skipping.
exec bash "$(dirname "$0")/install-deps.sh" libopenmpi-dev openmpi-bin
