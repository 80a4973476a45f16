#!/usr/bin/env bash
# Guards against: libfaketime's interposed clock_gettime recursing through our clock reads.
# (Its set-up allocates; our malloc reads the clock through it; the stack overflows.)
source "$(dirname "$0")/../lib/field.sh" || exit 1
need_lib; need_prog field_work; need_cmd faketime
# Both orders: faketime adds its library after ours, and ours after it.
FT=(faketime -f '2020-01-01 00:00:00')
compare_preload faketime "${FT[@]}" "$PROGS/field_work" 4 year
grep -qx "year=2020 clock_gettime_year=2020" "$TMP/faketime.bobox.out" || fail "the time is not faked: $(tail -1 "$TMP/faketime.bobox.out")"
lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
[ -n "$lib" ] || fail "libfaketime.so.1 not found"
run_preload "$TMP/after.out" "$TMP/after.err" env LD_PRELOAD="$lib:$SO" FAKETIME='@2020-01-01 00:00:00' "$PROGS/field_work" 4 year
same_output "$TMP/faketime.plain.out" "$TMP/after.out" "output with libfaketime before libbobox"
echo PASS
