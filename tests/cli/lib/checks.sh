# Shared by the shell-level CLI tests (sourced, not run): a scratch dir removed on exit, progress
# bars off, and ok/bad/check/err helpers that record failures in $fail for `exit $fail`.
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PDQ_PROGRESS=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }   # name "shell condition"
err() { # name "cmd" needle: a non-zero exit and a message containing needle
    local out
    if out=$(eval "$2" 2>&1); then bad "$1: exit 0"; return; fi
    if grep -qF -- "$3" <<<"$out"; then ok "$1"; else bad "$1: no '$3' in: $out"; fi
}
