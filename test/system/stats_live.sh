#!/usr/bin/env bash
# The live statistics (BOBOX_STATS_LIVE=1, allocator/tools/live.c): a running process keeps
# its figures in $XDG_RUNTIME_DIR/bobox-PID.stats, mode 0600, refreshed by the reclaimer;
# bobox-run --stat PID prints them (in use, mapped, resident, per size range and node, remote
# frees, heaps) as the process holds them (test/progs/mem_live: 61 MB in use, 20 MB small,
# 8 MB medium, one 32 MB large object, 1000 remote frees), --watch PID every second. The file
# goes at exit; one left by a killed process is removed by the next --stat, and so is any
# other of a process gone. Off (and a bad value, reported once), there is no file.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need "$RUN"
need_prog mem_live
export XDG_RUNTIME_DIR=$TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"

start() { # seconds, env...: starts mem_live, waits for "ready", sets pid
    local secs=$1; shift
    env "$@" LD_PRELOAD="$SO" "$PROGS/mem_live" "$secs" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    for _ in $(seq 100); do grep -q ready "$TMP/out" && break; sleep 0.1; done
    grep -q "ready $pid" "$TMP/out" || fail "mem_live did not start: $(cat "$TMP/err")"
}
file() { echo "$XDG_RUNTIME_DIR/bobox-$1.stats"; }

start 4 BOBOX_STATS_LIVE=1
sleep 0.6 # a refresh after "ready"
f=$(file $pid)
[ -f "$f" ] || fail "no $f"
[ "$(stat -c %a "$f")" = 600 ] || fail "$f has mode $(stat -c %a "$f"), not 600"
[ "$(stat -c %u "$f")" = "$(id -u)" ] || fail "$f is not the user's"
"$RUN" --stat $pid >"$TMP/stat" || fail "bobox-run --stat $pid exited with $?"
cat "$TMP/stat"
kb() { sed -nE "s/^$1 +([0-9]+) KB.*/\1/p" "$TMP/stat"; }
in_use=$(kb "in use") mapped=$(kb mapped) resident=$(kb resident)
((in_use >= 61000 && in_use < 70000)) || fail "in use $in_use KB, expected about 61 MB"
((mapped >= in_use && resident >= 60000)) || fail "mapped $mapped KB, resident $resident KB"
grep -qE "^small +[0-9]+ allocations, 2[0-9]{4} KB in use" "$TMP/stat" || fail "small: not about 20 MB in use"
grep -qE "^medium +32 allocations, (8[0-9]{3}|9[0-9]{3}) KB in use" "$TMP/stat" || fail "medium: not 32 allocations, 8 MB"
grep -qE "^large +1 allocations, 1 objects, 32768 KB in use" "$TMP/stat" || fail "large: not one 32 MB object"
grep -qE "^node 0 +superblocks in use [1-9]" "$TMP/stat" || fail "no node line"
grep -qE "^remote frees +1000$" "$TMP/stat" || fail "remote frees: not 1000"
# Shared heaps: none is left where the main thread took its CPU's over when it proved busy.
grep -qE "^heaps +1 live, [0-9]+ shared, 1 abandoned$" "$TMP/stat" || fail "heaps: not 1 live, a count of shared ones, 1 abandoned"
timeout 2.5 "$RUN" --watch $pid >"$TMP/watch"
n=$(grep -c "^bobox: process $pid, statistics of" "$TMP/watch")
((n >= 2)) || fail "--watch printed $n reports in 2.5 s"
wait $pid || fail "mem_live exited with $?"
grep -q done "$TMP/out" || fail "mem_live: $(cat "$TMP/out")"
[ -e "$f" ] && fail "$f is left after the process ended"
"$RUN" --stat $pid 2>"$TMP/err" && fail "--stat of an ended process succeeded"
grep -q "no live statistics of process $pid" "$TMP/err" || fail "--stat of an ended process: $(cat "$TMP/err")"

# Killed: the file stays until bobox-run finds the process gone. Another user file of a gone
# process is swept on the way.
sh -c 'exit 0' & dead=$!; wait $dead
touch "$(file $dead)"; chmod 600 "$(file $dead)"
start 30 BOBOX_STATS_LIVE=1
f=$(file $pid)
[ -f "$f" ] || fail "no $f"
kill -9 $pid; wait $pid 2>/dev/null
[ -f "$f" ] || fail "the killed process's file is gone already"
"$RUN" --stat $pid 2>"$TMP/err" && fail "--stat of a killed process succeeded"
grep -q "process $pid is gone; removed its stale statistics file" "$TMP/err" || fail "stale file: $(cat "$TMP/err")"
[ -e "$f" ] && fail "the stale $f was not removed"
[ -e "$(file $dead)" ] && fail "the stale file of process $dead was not swept"

# bobox-run --stats-live sets it for the program it runs.
"$RUN" --stats-live --pin=none -- "$PROGS/mem_live" 1 >"$TMP/out" 2>"$TMP/err" &
for _ in $(seq 100); do grep -q ready "$TMP/out" && break; sleep 0.1; done
pid=$(sed -n 's/^ready //p' "$TMP/out")
[ -n "$pid" ] || fail "mem_live under bobox-run did not start: $(cat "$TMP/err")"
"$RUN" --stat "$pid" | grep -qE "^in use +[0-9]+ KB" || fail "bobox-run --stats-live: no statistics of $pid"
wait

# Off, and a bad value: no file; the bad value said once.
start 1 BOBOX_STATS_LIVE=maybe
[ -e "$(file $pid)" ] && fail "a file with BOBOX_STATS_LIVE=maybe"
"$RUN" --stat $pid 2>"$TMP/err" && fail "--stat of a process without the live statistics succeeded"
grep -q "run it with bobox-run --stats-live or BOBOX_STATS_LIVE=1" "$TMP/err" || fail "--stat without the file: $(cat "$TMP/err")"
wait $pid
BOBOX_STATS_LIVE=maybe LD_PRELOAD=$SO "$PROGS/mem_live" 0 >/dev/null 2>"$TMP/bad" || fail "mem_live with a bad value"
[ "$(grep -c 'bobox: ignoring BOBOX_STATS_LIVE=maybe (expected 0 or 1)' "$TMP/bad")" = 1 ] ||
    fail "the bad value is not reported once: $(cat "$TMP/bad")"
"$RUN" --stat 2>/dev/null; [ $? = 2 ] || fail "--stat without a PID: not a usage error"
"$RUN" --stat x1 2>/dev/null; [ $? = 2 ] || fail "--stat x1: not a usage error"
echo PASS
