#!/usr/bin/env bash
# test: serial
# (serial: it counts page faults)
# A thread's exit keeps its heap's free pages for the next thread; the reclaimer then starts
# at once, however small the process, and gives them back if none comes: at least 6 of the
# 8 MB an ended thread used, within three decay delays in which the program makes no call
# (started at a later tick instead, it never started). And the decay tick runs once
# per delay on each heap after the process grows big, also when the reclaimer was running
# before (BOBOX_STATS_LIVE=1 starts it at once): a tick at every slow path gave back the
# pages of every size not allocated since the last, 262,000 page faults in the test's 200
# rounds against 13 (test/progs/mem_tick.c).
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_tick
for live in 0 1; do
    BOBOX_STATS_LIVE=$live XDG_RUNTIME_DIR=$TMP run_preload "$TMP/out" "$TMP/err" "$PROGS/mem_tick"
    cat "$TMP/out"
    grep -qx "reclaimer yes" "$TMP/out" || fail "BOBOX_STATS_LIVE=$live: no reclaimer after a thread that ended"
    back=$(sed -n 's/^exit_pages_back_kb //p' "$TMP/out")
    [ -n "$back" ] || fail "BOBOX_STATS_LIVE=$live: mem_tick printed no exit_pages_back_kb"
    [ "$back" -ge 6144 ] || fail "BOBOX_STATS_LIVE=$live: only $back KB of an ended thread's 8 MB went back"
    faults=$(sed -n 's/^churn_faults //p' "$TMP/out")
    [ -n "$faults" ] || fail "BOBOX_STATS_LIVE=$live: mem_tick printed no churn_faults"
    [ "$faults" -le 2000 ] || fail "BOBOX_STATS_LIVE=$live: $faults page faults in the churn (a tick at every slow path?)"
done
echo "mem_tick: ok"
