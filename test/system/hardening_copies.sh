#!/usr/bin/env bash
# Bounds-checked copies: test/progs/probe_copies calls one of the ten interposed functions
# (memcpy, memmove, mempcpy, memset, strcpy, stpcpy, strncpy, stpncpy, strcat, strncat) on a
# heap object. With BOBOX_CHECK=copies (bounds: the object's slot, as malloc_usable_size
# reports it, named "U usable bytes") and BOBOX_CHECK=1 (the size asked for, named "size 24"),
# a copy one byte past the end (written or read), one starting a byte before a 1 MB object (its
# header page) or a checked 24 B object, one into a freed object and one from a freed object
# must abort with the message naming the function, the object's address and the overrun, in
# that mode's words; a copy of exactly the object's bytes and one between two stack buffers
# must return the function's result. Without BOBOX_CHECK the copies pass unchecked (the
# functions are glibc's behind one flag test): the same cases return, but for the two that
# write over a free object, which the default mode's check at exit reports
# (allocator/tools/exitcheck.c). memcpy onto overlapping bytes acts as memmove. A bad
# BOBOX_CHECK is reported once.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog probe_copies
P=$PROGS/probe_copies
FUNCS="memcpy memmove mempcpy memset strcpy stpcpy strncpy stpncpy strcat strncat"
failures=0 checked=0

# run MODE FN CASE [SIZE]: exit status; the object's address in $obj, its usable size in $usable.
run() {
    local mode=$1; shift
    { BOBOX_CHECK=$mode LD_PRELOAD=$SO timeout 20 "$P" "$@" >"$TMP/out" 2>"$TMP/err"; } 2>/dev/null
    local rc=$?
    read -r _ obj _ usable <"$TMP/out"
    return $rc
}
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect_abort MODE FN CASE SIZE REGEX: REGEX with @ for the object's address, U its usable size.
expect_abort() {
    local mode=$1 fn=$2 case=$3 size=$4 re=$5 rc
    run "$mode" "$fn" "$case" "$size"; rc=$?
    re=${re//@/$obj}; re=${re//U/$usable}
    checked=$((checked + 1))
    [ $rc = 134 ] || { bad "$fn $case $size (BOBOX_CHECK=$mode): exit $rc, not SIGABRT: $(head -c 300 "$TMP/err")"; return; }
    grep -qE "^bobox: $fn\(\): $re" "$TMP/err" || bad "$fn $case $size (BOBOX_CHECK=$mode): stderr lacks '$fn(): $re': $(head -c 300 "$TMP/err")"
}
# expect_abort_at_exit FN CASE SIZE: without BOBOX_CHECK, the call returns and the default
# mode's check at exit finds the freed object's link overwritten.
expect_abort_at_exit() {
    local fn=$1 case=$2 size=$3 rc
    run 0 "$fn" "$case" "$size"; rc=$?
    checked=$((checked + 1))
    [ $rc = 134 ] && grep -qE "^bobox: exit\(\): corrupted free list at $obj \(block 0x[0-9a-f]+\): the free object there was written after it was freed" "$TMP/err" ||
        bad "$fn $case $size (no BOBOX_CHECK): exit $rc, not the check at exit on $obj: $(head -c 300 "$TMP/err")"
}
expect_ok() {
    local mode=$1 fn=$2 case=$3 rc
    run "$mode" "$fn" "$case" ${4:+"$4"}; rc=$?
    checked=$((checked + 1))
    [ $rc = 0 ] && [ ! -s "$TMP/err" ] || bad "$fn $case (BOBOX_CHECK=$mode): exit $rc: $(head -c 300 "$TMP/err")"
}

# The bounds each mode names: the slot (copies) or the size asked for (checked).
bound() { if [ "$1" = copies ]; then echo 'U usable bytes'; else echo 'size 24'; fi; }
for fn in $FUNCS; do
    for mode in copies 1; do
        expect_ok $mode $fn ok
        expect_ok $mode $fn foreign
        # One byte past the end: the slot's in the default mode, the 24 bytes asked for in checked mode.
        expect_abort $mode $fn over 24 "heap overflow: writing [0-9]+ bytes at @ runs 1 byte past the end of @ \\($(bound $mode)\\)"
        [ $fn = memset ] ||
            expect_abort $mode $fn read_over 24 "heap overflow: reading [0-9]+ bytes at @ runs [0-9]+ bytes? past the end of @ \\($(bound $mode)\\)"
        expect_abort $mode $fn uaf 24 "write after free: writing 8 bytes at @, in object @, which is free"
        [[ $fn == mem* && $fn != memset ]] &&
            expect_abort $mode $fn read_uaf 24 "read after free: reading 8 bytes at @, in object @, which is free"
        # Two bytes from one before a 1 MB object: its header page.
        expect_abort $mode $fn under 1048576 "heap underflow: writing 2 bytes at 0x[0-9a-f]+ starts 1 byte before the start of @ \\(size 1048576\\)"
        # The byte before it alone: the end of its header page, in the 64 KB chunk before
        # the object's when the object starts one.
        expect_abort $mode $fn under1 1048576 "heap underflow: writing 1 byte at 0x[0-9a-f]+ starts 1 byte before the start of @ \\(size 1048576\\)"
    done
    # Checked mode: a byte before a small object is its front canary.
    expect_abort 1 $fn under 24 "heap underflow: writing 2 bytes at 0x[0-9a-f]+ starts 1 byte before the start of @ \\(size 24\\)"
    # Off: glibc's functions, unchecked: every copy returns, and nothing is said.
    expect_ok 0 $fn ok
    expect_ok 0 $fn foreign
    [ $fn = memset ] || expect_ok 0 $fn read_over 24
    [[ $fn == mem* && $fn != memset ]] && expect_ok 0 $fn read_uaf 24
    expect_ok 0 $fn under 1048576
    expect_ok 0 $fn under1 1048576
    # A write into a freed 24 B object overwrites its link: the check at exit reports it.
    expect_abort_at_exit $fn uaf 24
    # The byte past the end lands on the next slot: when that is a free object (in the front
    # cache), the check at exit reports it.
    run 0 $fn over 24; rc=$?
    checked=$((checked + 1))
    if [ $rc = 0 ]; then
        [ ! -s "$TMP/err" ] || bad "$fn over (no BOBOX_CHECK): a message: $(head -c 300 "$TMP/err")"
    elif [ $rc != 134 ] || ! grep -q "^bobox: exit(): corrupted free list at " "$TMP/err"; then
        bad "$fn over (no BOBOX_CHECK): exit $rc, not the check at exit: $(head -c 300 "$TMP/err")"
    fi
done

# memcpy onto overlapping bytes acts as memmove, checked or not (programs linked before glibc 2.14).
for mode in 0 copies 1; do expect_ok $mode memcpy overlap; done
# (without timeout, which the preload would also start in)
BOBOX_CHECK=bogus LD_PRELOAD=$SO "$P" memcpy ok >"$TMP/out" 2>"$TMP/err" || bad "BOBOX_CHECK=bogus: exit $?"
[ "$(grep -c 'ignoring BOBOX_CHECK=bogus (expected 0, 1 or copies)' "$TMP/err")" = 1 ] ||
    bad "BOBOX_CHECK=bogus: not reported once: $(cat "$TMP/err")"
echo "$checked calls checked"
[ $failures = 0 ] || fail "$failures of $checked calls"
echo PASS
