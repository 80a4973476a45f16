#!/usr/bin/env bash
# Guards against: LD_AUDIT (sotruss) together with our LD_PRELOAD crashing or losing bindings.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd sotruss
run_plain "$TMP/plain.out" "$TMP/plain.err" sotruss -f -o "$TMP/plain.trace" -- "$PROGS/field_work" 4
run_preload "$TMP/bobox.out" "$TMP/bobox.err" sotruss -f -o "$TMP/bobox.trace" -- "$PROGS/field_work" 4
same_output "$TMP/plain.out" "$TMP/bobox.out" "field_work output under sotruss"
n=$(cat "$TMP"/bobox.trace* | grep -c -- "field_work -> .*libbobox.so:\*malloc(")
echo "malloc calls bound to libbobox.so in the trace: $n"
[ "$n" -ge 24000 ] || fail "sotruss saw $n calls to libbobox.so's malloc (the program makes 24000+)"
cat "$TMP"/plain.trace* | grep -q -- "field_work -> libc.so.6 *:\*malloc(" || fail "the plain trace does not show malloc from libc"
echo PASS
