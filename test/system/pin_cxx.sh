#!/usr/bin/env bash
# C++ std::thread under the preload: thread k on CPU k of the plan, and of the order computed
# from /sys here.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_cxx"
n=$((2 * NCPU + 1))
want=$(plan_masks $((n + 1)))
out=$(LD_PRELOAD=$PIN "$PROGS/pin_cxx" $n) || fail "pin_cxx failed"
echo "$out"
check_pinned "$out" "$want"
check_order "$out" scatter
want=$(plan_masks $((n + 1)) --pin=compact)
out=$(BOBOX_PIN=compact LD_PRELOAD=$PIN "$PROGS/pin_cxx" $n) || fail "pin_cxx failed"
check_pinned "$out" "$want"
check_order "$out" compact
echo "ok"
