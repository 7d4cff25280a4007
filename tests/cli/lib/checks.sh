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

# Data that came from outside the project (llama2.c's stories260K and the TinyStories text
# sampled with it) is never in the repository: tests read it from ../shared, relative to the
# repository root they run in, and skip with a message when it is absent (exit 77, ctest's
# SKIP_RETURN_CODE; a failure recorded before the skip still fails).
STORIES=../shared/models/stories260K
TINY=../shared/data/tinystories-260k
need_stories() {
    [ -f "$STORIES/model.safetensors" ] && [ -f "$TINY/train.txt" ] && [ -f "$TINY/test.txt" ] && return 0
    echo "SKIP: $STORIES or $TINY is absent (shared data, not in the repository)"
    exit $((fail ? 1 : 77))
}
