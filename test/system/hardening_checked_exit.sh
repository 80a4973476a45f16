#!/usr/bin/env bash
# Checked mode finishes its checks at exit: test/progs/probe_checked_exit does one bad heap
# operation, never frees the object, and returns from main (as the public allocator test
# suites write their probes). Under BOBOX_CHECK=1 each bad kind must stop the process, with
# bobox's message (SIGABRT) or at the bad access itself (SIGSEGV: memory with no access);
# the clean kinds must exit 0 with nothing on stderr, in checked mode and by default. The
# default mode's own check at exit must stop a write after free into a small object's link.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog probe_checked_exit
P=$PROGS/probe_checked_exit

# expect KIND abort|fault MESSAGE: the message is a fixed string bobox must print (abort).
failures=0
expect() {
    local kind=$1 how=$2 msg=${3:-} rc want
    # (the braces keep bash's "Aborted" notice out of the log)
    { BOBOX_CHECK=1 LD_PRELOAD=$SO timeout --kill-after=5 60 "$P" "$kind" >"$TMP/out" 2>"$TMP/err"; } 2>/dev/null
    rc=$?
    case $how in abort) want=134 ;; fault) want=139 ;; esac
    if [ $rc -ne $want ]; then
        echo "FAIL $kind: exit status $rc, expected $want ($how); stderr: $(head -c 300 "$TMP/err")"
        failures=$((failures + 1))
    elif [ -n "$msg" ] && ! grep -qF -- "$msg" "$TMP/err"; then
        echo "FAIL $kind: no '$msg' on stderr: $(head -c 300 "$TMP/err")"
        failures=$((failures + 1))
    else
        echo "ok   $kind: $how $(head -c 160 "$TMP/err" | tr '\n' ' ')"
    fi
}

note "left live with a byte past the end or before the start: caught at exit"
for size in small medium large; do
    expect over1.$size abort "bobox: exit(): heap overflow past the end of"
    expect over8.$size abort "bobox: exit(): heap overflow past the end of"
    expect under1.$size abort "bobox: exit(): heap underflow before the start of"
    expect under32.$size abort "bobox: exit(): heap underflow before the start of"
done
note "written after free, still in the quarantine at exit"
for size in small medium; do
    expect uaf.$size abort "bobox: write after free: object"
    expect uaf_zero.$size abort "bobox: write after free: object" # the fill is not zero
done
expect uaf_atexit.small abort "bobox: write after free: object"
note "a freed large object has no access while in the quarantine: a write faults at once"
expect uaf.large fault
note "a large object is followed by 1 MB with no access"
expect over1m.large fault
note "malloc(0) and calloc(0, n): memory with no access"
expect zero_read fault
expect zero_write fault
expect zero_calloc_write fault
note "bobox_check_heap() runs the same checks at once"
for size in small medium large; do
    expect check_heap_over1.$size abort "bobox: bobox_check_heap(): heap overflow past the end of"
done
for size in small medium; do
    expect check_heap_uaf.$size abort "bobox: write after free: object"
done

note "the default mode's check at exit (tools/exitcheck.c): the exiting thread's next free objects and their links"
# expect_default KIND: without BOBOX_CHECK, a write after free into the object freed last of
# a small size stops the process at exit with the link's report.
expect_default() {
    local kind=$1 rc
    { env -u BOBOX_CHECK LD_PRELOAD=$SO timeout --kill-after=5 60 "$P" "$kind" >"$TMP/out" 2>"$TMP/err"; } 2>/dev/null
    rc=$?
    if [ $rc -ne 134 ] || ! grep -qE '^bobox: exit\(\): corrupted free list at 0x[0-9a-f]+ \(block 0x[0-9a-f]+\): the free object there was written after it was freed' "$TMP/err"; then
        echo "FAIL $kind (default mode): exit status $rc, expected the check at exit (134); stderr: $(head -c 300 "$TMP/err")"
        failures=$((failures + 1))
    else
        echo "ok   $kind (default mode): abort at exit $(head -c 160 "$TMP/err" | tr '\n' ' ')"
    fi
}
expect_default uaf.small
expect_default uaf_zero.small   # a zero over the link is caught too
expect_default uaf_atexit.small # written in an atexit handler: the check runs after them

note "no bug: no report"
for check in 1 0; do
    for kind in clean zero_ok; do
        BOBOX_CHECK=$check LD_PRELOAD=$SO timeout --kill-after=5 120 "$P" $kind >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ $rc -ne 0 ] || [ -s "$TMP/err" ] || ! grep -qx "$kind" "$TMP/out"; then
            echo "FAIL $kind (BOBOX_CHECK=$check): exit status $rc; stderr: $(head -c 300 "$TMP/err")"
            failures=$((failures + 1))
        else
            echo "ok   $kind (BOBOX_CHECK=$check): exit 0, nothing reported"
        fi
    done
done
[ $failures -eq 0 ] || fail "$failures kind(s) not caught as expected"
echo "PASS"
