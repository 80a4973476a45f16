#!/usr/bin/env bash
# The shim reading a saved tree (BOBOX_FSROOT): the dry-run report follows the fixture's plan
# with its core ids, packages and nodes; binding CPUs this machine lacks is reported once and
# the program runs on.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
P=$PROGS/pin_threads

out=$(BOBOX_FSROOT=$FIX/2s8c-ht BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 3 2>"$TMP/err") || fail "did not run"
cat "$TMP/err"
check_unpinned "$out"
for want in "thread=0 tid=[0-9]+ cpu=0 core=0 package=0 node=0" "thread=1 tid=[0-9]+ cpu=8 core=0 package=1 node=1" \
            "thread=2 tid=[0-9]+ cpu=1 core=1 package=0 node=0" "thread=3 tid=[0-9]+ cpu=9 core=1 package=1 node=1"; do
    grep -qE "^bobox-pin: $want\$" "$TMP/err" || fail "missing: $want"
done
out=$(BOBOX_FSROOT=$FIX/hybrid BOBOX_PIN=compact BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" 5 2>"$TMP/err") || fail "did not run"
grep -qE '^bobox-pin: thread=4 tid=[0-9]+ cpu=8 core=16 package=0 node=0$' "$TMP/err" || fail "hybrid: $(cat "$TMP/err")"

if [ ! -e /sys/devices/system/cpu/cpu8 ]; then
    out=$(BOBOX_FSROOT=$FIX/2s8c-ht LD_PRELOAD=$PIN "$P" 4 2>"$TMP/err") || fail "did not run"
    cat "$TMP/err"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^bobox-pin: cannot bind thread 1 to CPU 8' "$TMP/err" \
        || fail "expected one message about binding: $(cat "$TMP/err")"
    [ "$(grep -c thread= <<<"$out")" -eq 5 ] || fail "the program did not finish"
fi
echo "ok"
