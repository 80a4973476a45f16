#!/usr/bin/env bash
# Guards against: silent corruption when free()/realloc() get a pointer from glibc's own malloc.
# We abort with a message naming the call and the pointer (docs/limits.md says why).
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_foreign_free
prog=$PROGS/field_foreign_free
for mode in free realloc glibc libc; do run_plain "$TMP/$mode.plain.out" "$TMP/$mode.plain.err" "$prog" "$mode"; done
# Returned to glibc's own free, and glibc's internal name (__libc_malloc, which we define too):
# fine, the same output.
for mode in glibc libc; do
    compare_preload "$mode" "$prog" "$mode"
done
# Given to ours: we cannot tell glibc's chunk from a wild pointer, so we abort with a message
# naming the call and the pointer, in the default and the checked mode.
for check in 0 1; do
    for mode in free realloc; do
        BOBOX_CHECK=$check LD_PRELOAD=$SO timeout 30 "$prog" "$mode" >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ $rc -eq 134 ] || { cat "$TMP/err"; fail "$mode (BOBOX_CHECK=$check): exit status $rc, expected SIGABRT (134)"; }
        grep -qE "^bobox: $mode\(\): invalid pointer 0x[0-9a-f]+$" "$TMP/err" ||
            fail "$mode (BOBOX_CHECK=$check): message: $(cat "$TMP/err")"
        grep -qx "allocated: from glibc" "$TMP/out" || fail "$mode: the program did not get that far"
        grep -q "^done" "$TMP/out" && fail "$mode: went on after the foreign pointer"
        echo "$mode (BOBOX_CHECK=$check): $(cat "$TMP/err")"
    done
done
echo PASS
