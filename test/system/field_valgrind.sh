#!/usr/bin/env bash
# Guards against: Valgrind (which replaces malloc itself) crashing or missing allocations beside us.
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd valgrind
VG=(valgrind --error-exitcode=9 --log-file="$TMP/vg.%q{VGRUN}.log")
VGRUN=plain run_plain "$TMP/plain.out" "$TMP/plain.err" "${VG[@]}" "$PROGS/field_work" 2
VGRUN=bobox run_preload "$TMP/bobox.out" "$TMP/bobox.err" "${VG[@]}" "$PROGS/field_work" 2
same_output "$TMP/plain.out" "$TMP/bobox.out" "field_work output under valgrind"
usage() { sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$1"; }
plain=$(usage "$TMP/vg.plain.log"); bobox=$(usage "$TMP/vg.bobox.log")
echo "allocations memcheck saw: plain $plain, with the preload $bobox"
[ -n "$bobox" ] && [ "$plain" = "$bobox" ] || fail "memcheck saw ${bobox:-no} allocations with the preload, $plain without"
grep -q "ERROR SUMMARY: 0 errors" "$TMP/vg.bobox.log" || { grep -A5 "Invalid\|uninitialised" "$TMP/vg.bobox.log" | head -20; fail "memcheck errors with the preload"; }
echo PASS
