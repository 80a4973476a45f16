#!/usr/bin/env bash
# A program that replaces only operator new(size_t) and operator delete(void *) (with an arena
# of its own) keeps every object's new and delete paired under LD_PRELOAD=libbobox.so: the
# other forms reach the program's two through the C++ runtime, as the standard says, and its
# counts come out the same as without the preload, also when a preloaded library calls
# new[] before the allocator has started.
source "$(dirname "$0")/../lib/common.sh" || exit 1
need_lib
need_prog alloc_cxx_replace
P=$PROGS/alloc_cxx_replace
note "without the preload"
run_plain "$TMP/plain.out" "$TMP/plain.err" "$P"
grep -q "bobox: absent" "$TMP/plain.err" || fail "plain run: unexpected allocator report: $(cat "$TMP/plain.err")"
note "with the preload"
run_preload "$TMP/bobox.out" "$TMP/bobox.err" "$P"
grep -q "bobox: active" "$TMP/bobox.err" || fail "under LD_PRELOAD malloc is not bobox's: $(cat "$TMP/bobox.err")"
same_output "$TMP/plain.out" "$TMP/bobox.out" "alloc_cxx_replace counts"
note "with the preload, BOBOX_VERBOSE=1"
BOBOX_VERBOSE=1 run_preload "$TMP/v.out" "$TMP/v.err" "$P"
grep -q "the program defines C++ operators" "$TMP/v.err" || fail "BOBOX_VERBOSE=1 does not report the program's operators"
note "with the preload, derived forms called before the allocator's start-up"
command -v cc >/dev/null || fail "no C compiler"
cc -std=gnu11 -Wall -Wextra -Werror -O1 -shared -fPIC -o "$TMP/libearly.so" \
    "$BOBOX_ROOT/test/progs/early/cxx_early_new.c" || fail "building libearly.so"
# Constructors run from the end of the preload list: libearly's first, before libstdc++'s
# (whose start-up would allocate, and so start the allocator) and before libbobox's.
STDCXX=$(ldd "$P" | awk '/libstdc\+\+/ {print $3}')
[ -f "$STDCXX" ] || fail "libstdc++ of $P not found"
BOBOX_VERBOSE=1 timeout 60 env LD_PRELOAD="$SO:$STDCXX:$TMP/libearly.so" "$P" >"$TMP/early.out" 2>"$TMP/early.err" ||
    { cat "$TMP/early.err"; fail "alloc_cxx_replace with an early caller of new[] failed"; }
grep -q "early: done" "$TMP/early.err" || fail "the early constructor did not run: $(cat "$TMP/early.err")"
# The calls came first: the allocator's start-up (its settings report) happened inside them.
first=$(grep -n -m1 "early: calling" "$TMP/early.err" | cut -d: -f1)
report=$(grep -n -m1 "^bobox: settings" "$TMP/early.err" | cut -d: -f1)
done_at=$(grep -n -m1 "early: done" "$TMP/early.err" | cut -d: -f1)
[ -n "$report" ] && [ "$first" -lt "$report" ] && [ "$report" -lt "$done_at" ] ||
    fail "the allocator did not start inside the early calls: $(head -5 "$TMP/early.err")"
same_output "$TMP/plain.out" "$TMP/early.out" "alloc_cxx_replace counts (early caller)"
cat "$TMP/plain.out"
echo "PASS"
