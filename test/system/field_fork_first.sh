#!/usr/bin/env bash
# Guards against: a child deadlocking when a thread forks during another thread's first malloc.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_fork_first
compare_preload fork_first "$PROGS/field_fork_first" 500
grep -qx "500 rounds, 0 children failed" "$TMP/fork_first.bobox.out" || fail "$(cat "$TMP/fork_first.bobox.out")"
# Under bobox-run the pinning shim also has fork and thread-start handlers.
compare_run fork_first_pinned "$PROGS/field_fork_first" 200
echo PASS
