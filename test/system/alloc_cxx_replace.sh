#!/usr/bin/env bash
# A program that replaces only operator new(size_t) and operator delete(void *) (with an arena
# of its own) keeps every object's new and delete paired under LD_PRELOAD=libbobox.so: the
# other forms reach the program's two through the C++ runtime, as the standard says, and its
# counts come out the same as without the preload.
source "$(dirname "$0")/../progs/alloc_sys_common.sh"
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
cat "$TMP/plain.out"
echo "PASS"
