#!/usr/bin/env bash
# The heap profiler must not move the objects it does not sample: a sampled small object's bin
# still sees its malloc and free through a shadow object (docs/profiling.md). prof_shadow runs a
# fixed sequence (FIFO and LIFO, 16 B to 16 KB) without the profiler and with it at a rate of
# 4 KB (most mallocs of 4 KB and more are sampled); every object not sampled must land at the
# same offset in both runs. Before the fix, a shadow malloc that crossed the next countdown took
# the bin's next chain with objects left on the top one, and the sequences parted. About 1 second.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog prof_shadow
P=$PROGS/prof_shadow

timeout 60 env LD_PRELOAD="$SO" "$P" >"$TMP/off" || fail "prof_shadow failed without the profiler"
timeout 60 env BOBOX_PROF="$TMP/p" BOBOX_PROF_RATE=4096 LD_PRELOAD="$SO" "$P" >"$TMP/on" ||
    fail "prof_shadow failed under BOBOX_PROF"
[ "$(wc -l <"$TMP/off")" = "$(wc -l <"$TMP/on")" ] || fail "the runs made different numbers of mallocs"
grep -q S "$TMP/off" && fail "objects served as sampled without the profiler"
paste -d' ' "$TMP/off" "$TMP/on" | awk '
    $2 == "S" { sampled++; next }
    $1 == $2 { same++; next }
    { if (!first) first = NR ": " $1 " without the profiler, " $2 " with it"; moved++ }
    END {
        printf "%d sampled, %d at the same offset, %d moved\n", sampled, same, moved
        if (moved) { print "first moved: malloc " first; exit 1 }
        if (sampled < 1000 || same < 10000) { print "too few samples or objects to compare"; exit 1 }
    }' || fail "the profiler moved objects it did not sample"
echo "prof_shadow: ok"
