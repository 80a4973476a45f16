#!/usr/bin/env bash
# The shim together with libbobox.so, in either preload order and through bobox-run: threads
# are pinned before their first malloc (the node contract with the allocator).
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads" "$PROGS/pin_cxx"
need_lib   # built by make test with the rest: missing is a broken build, not a skip
ALLOC=$BUILD/libbobox.so
n=$((2 * NCPU + 1))
want=$(plan_masks $((n + 1)))
for preload in "$ALLOC:$PIN" "$PIN:$ALLOC"; do
    out=$(LD_PRELOAD=$preload "$PROGS/pin_threads" $n --malloc) || fail "pin_threads under $preload failed"
    check_pinned "$out" "$want"
    check_order "$out" scatter
    out=$(LD_PRELOAD=$preload "$PROGS/pin_cxx" $n) || fail "pin_cxx under $preload failed"
    check_pinned "$out" "$want"
done
out=$("$RUN" -- "$PROGS/pin_threads" $n --malloc) || fail "bobox-run pin_threads failed"
echo "$out"
check_pinned "$out" "$want"
check_order "$out" scatter
echo "ok"
