#!/usr/bin/env bash
# test: serial
# (serial: it measures what stays resident after two decay delays)
# Guards against: a process idle after a spike keeping its peak, because caches are given back
# only on its own calls. After two decay delays (the default, 1 s) without a single call, at
# most 3% of the 1.8 GB peak stays resident (30-43 MB measured: the idle thread's bins keep
# blocks in two to four 10 MB superblocks); the reclaimer thread does it, also in a forked
# child; it blocks every signal a program can handle; a small program never gets one.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog mem_idle
need_prog alloc_gen_lines
check() { # label, output line
    local pct threads
    echo "$1: $2"
    pct=$(sed -nE 's/.*\(([0-9.]+)%\).*/\1/p' <<<"$2")
    threads=$(sed -nE 's/.*threads ([0-9]+).*/\1/p' <<<"$2")
    [ -n "$pct" ] || fail "$1: no reading"
    awk -v p="$pct" 'BEGIN { exit !(p <= 3) }' || fail "$1: $pct% of the peak still resident after two decay delays"
    [ "$threads" = 2 ] || fail "$1: expected the program's main thread and the reclaimer, found $threads threads"
}
out=$(LD_PRELOAD=$SO timeout 60 "$PROGS/mem_idle" 2.2) || fail "mem_idle failed"
check "idle" "$out"
out=$(LD_PRELOAD=$SO timeout 60 "$PROGS/mem_idle" 2.2 fork) || fail "mem_idle fork failed"
check "forked child" "$out"
# The main thread ends with pthread_exit and the last thread of the program ends: so must the
# process, although the reclaimer runs (before it looked for that, the process never ended).
start=$SECONDS
LD_PRELOAD=$SO timeout 20 "$PROGS/mem_idle" 0 pthread_exit || fail "the process outlived its last thread (rc $?)"
[ $((SECONDS - start)) -le 10 ] || fail "the process took $((SECONDS - start)) s to end after its last thread"
echo "pthread_exit: the process ended after its last thread"
# With the pinning shim, the reclaimer takes no place in the plan: only the program's two
# threads are pinned.
if [ -f "$PIN" ]; then
    LD_PRELOAD=$PIN:$SO BOBOX_PIN_VERBOSE=1 "$PROGS/mem_idle" 2.2 >"$TMP/pin.out" 2>"$TMP/pin.err" ||
        fail "mem_idle with the shim failed"
    check "pinned" "$(cat "$TMP/pin.out")"
    n=$(grep -c "^bobox-pin: thread=" "$TMP/pin.err")
    [ "$n" = 2 ] || { cat "$TMP/pin.err" "$TMP/pin.out"; fail "the shim pinned $n threads (the program made 2)"; }
fi
# The reclaimer (named bobox-reclaim) blocks every signal but those no thread can block
# (SIGKILL, SIGSTOP) and glibc's own two below SIGRTMIN, so the program's handlers never run on
# it; the program's threads keep their mask (empty here).
LD_PRELOAD=$SO "$PROGS/mem_idle" 3 >/dev/null &
pid=$!
reclaimer=
for _ in $(seq 100); do
    for task in /proc/$pid/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = bobox-reclaim ] && reclaimer=$task
    done
    [ -n "$reclaimer" ] && break
    sleep 0.1
done
[ -n "$reclaimer" ] || { kill "$pid"; fail "no thread named bobox-reclaim appeared in mem_idle (pid $pid)"; }
sleep 0.2   # the thread is named right after it starts: let the program's threads settle
for task in /proc/$pid/task/*; do
    blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$task/status")
    name=$(cat "$task/comm")
    echo "$name: SigBlk $blk"
    if [ "$task" = "$reclaimer" ]; then
        mask=$((16#$blk))
        for sig in $(seq 1 31) $(seq "$(kill -l RTMIN)" "$(kill -l RTMAX)"); do
            [ "$sig" = "$(kill -l KILL)" ] || [ "$sig" = "$(kill -l STOP)" ] && continue
            (( (mask >> (sig - 1)) & 1 )) || { kill "$pid"; fail "the reclaimer does not block signal $sig (SigBlk $blk)"; }
        done
    else
        [ $((16#$blk)) = 0 ] || { kill "$pid"; fail "program thread $name has signals blocked (SigBlk $blk): the mask was not restored"; }
    fi
done
wait "$pid" || fail "mem_idle (signal mask run) failed"
# A small program: no reclaimer thread is ever started (strace counts clone calls).
if command -v strace >/dev/null; then
    LD_PRELOAD=$SO strace -f -e trace=clone,clone3 -o "$TMP/trace" "$PROGS/alloc_gen_lines" 1000 >/dev/null 2>&1 ||
        fail "alloc_gen_lines failed under strace"
    ! grep -q "clone" "$TMP/trace" || { cat "$TMP/trace"; fail "a small program started a thread"; }
fi
echo PASS
