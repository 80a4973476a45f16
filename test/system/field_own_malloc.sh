#!/usr/bin/env bash
# Guards against: breaking a program that brings its own malloc family (a static allocator).
# Its allocator must keep serving everything, libc and threads included; ours is unused.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_own_malloc
compare_preload own_malloc "$PROGS/field_own_malloc"
grep -qx "own malloc served: yes" "$TMP/own_malloc.bobox.out" || fail "the program's malloc was not used"
# What BOBOX_STATS shows then: our allocator served nothing (docs/limits.md).
timeout 60 env BOBOX_STATS=1 LD_PRELOAD="$SO" "$PROGS/field_own_malloc" >/dev/null 2>"$TMP/stats" || fail "run with BOBOX_STATS=1 failed"
cat "$TMP/stats"
grep -qx "bobox: allocations: small 0, medium 0, large 0; remote frees 0" "$TMP/stats" || fail "bobox served allocations"
echo PASS
