#!/usr/bin/env bash
# test: slow=60
# (slow: the whole API suite again, under ulimit -v (about 40 s))
# The small arena: reserved, holding every small object, and emptied by malloc_trim without an
# address-space limit; shrunk when the program sets one itself; absent under one (ulimit -v),
# where every free takes the two-level map: small objects, and the whole API suite (invalid
# and double frees included), still behave.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_small_arena
need "$BUILD/test/preload_api"
LD_PRELOAD=$SO "$PROGS/mem_small_arena" reserved || fail "mem_small_arena reserved exited with $?"
LD_PRELOAD=$SO "$PROGS/mem_small_arena" limited || fail "mem_small_arena limited exited with $?"
(
    ulimit -v 16000000
    LD_PRELOAD=$SO "$PROGS/mem_small_arena" absent || fail "mem_small_arena absent exited with $?"
    # the suite's report goes to a file: on a failure, the failed case is shown
    LD_PRELOAD=$SO "$BUILD/test/preload_api" >"$TMP/api.log" ||
        { grep -B5 -A20 FAILED "$TMP/api.log" | head -60; tail -5 "$TMP/api.log"; fail "preload_api under ulimit -v failed"; }
) || exit 1
echo PASS
