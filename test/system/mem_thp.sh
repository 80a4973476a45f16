#!/usr/bin/env bash
# BOBOX_THP: the advice each mapping gets, read back from /proc/self/smaps.
#   auto (default): superblocks MADV_NOHUGEPAGE, no huge page in them even when the system
#                   gives them to everyone; large objects left to the system
#   never:  every mapping MADV_NOHUGEPAGE     always: every mapping MADV_HUGEPAGE, and backed
#   system: no advice                          by huge pages when the kernel has them
# A bad value is reported once and auto is used. Skipped on kernels without THP.
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -eo pipefail
LIB=$SO PROG=$PROGS/mem_thp
THP=/sys/kernel/mm/transparent_hugepage/enabled
[ -r $THP ] || skip "kernel without transparent huge pages"
echo "system setting: $(cat $THP)"

run() { env "$@" LD_PRELOAD=$LIB "$PROG"; }
field() { sed -n "s/^$1 .*$2=\([^ ]*\).*/\1/p" <<<"$3"; }   # object, key, output
expect() { # mode-label output object advice
    local got; got=$(field "$3" advice "$2")
    [ "$got" = "$4" ] || fail "$1: the $3 object's mapping has advice '$got', expected '$4'"$'\n'"$2"
}

out=$(run); echo "auto: $out"
expect auto "$out" small nh; expect auto "$out" medium nh; expect auto "$out" large -
[ "$(field small huge_kb "$out")" = 0 ] || fail "auto: huge pages in a superblock: $out"

out=$(run BOBOX_THP=never); echo "never: $out"
expect never "$out" small nh; expect never "$out" medium nh; expect never "$out" large nh
[ "$(field large huge_kb "$out")" = 0 ] || fail "never: huge pages in a large object: $out"

out=$(run BOBOX_THP=system); echo "system: $out"
expect system "$out" small -; expect system "$out" medium -; expect system "$out" large -

out=$(run BOBOX_THP=always); echo "always: $out"
expect always "$out" small hg; expect always "$out" medium hg; expect always "$out" large hg
if grep -q '\[never\]' $THP; then
    echo "huge pages off system-wide: backing not checked"
elif [ "$(field large huge_kb "$out")" -gt 0 ] && [ "$(field small huge_kb "$out")" -gt 0 ]; then
    echo "always: huge pages back the large object and the small objects' superblock"
elif [ "$(sed -n 's/^fallbacks=//p' <<<"$out")" -gt 0 ]; then
    echo "always: the kernel had no free huge page (thp_fault_fallback grew): backing not checked"
else
    fail "always: no huge page and no fallback: $out"
fi

err=$(env BOBOX_THP=sometimes BOBOX_VERBOSE=1 LD_PRELOAD=$LIB "$PROG" 2>&1 >"$TMP/thp.out")
out=$(cat "$TMP/thp.out")
[ "$(grep -c 'ignoring BOBOX_THP=sometimes' <<<"$err")" = 1 ] || fail "bad BOBOX_THP not reported once: $err"
grep -q "BOBOX_THP=auto" <<<"$err" || fail "auto not in force after a bad BOBOX_THP: $err"
expect bad-value "$out" small nh
echo "thp ok"
