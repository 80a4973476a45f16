#!/usr/bin/env bash
# Allocator settings: BOBOX_STATS and BOBOX_VERBOSE report what they promise; a bad value is
# reported once on stderr and the default is used; the program's output is unchanged.
source "$(dirname "$0")/../lib/common.sh" || exit 1
set -eo pipefail
LIB=$SO
run() { env "$@" LD_PRELOAD=$LIB sh -c 'seq 1 20000 | sort -n | tail -1' ; }

out=$(run BOBOX_STATS=1 2>"$TMP/stats.err")
err=$(cat "$TMP/stats.err")
[ "$out" = 20000 ] || fail "output changed under BOBOX_STATS=1: $out"
for want in "allocations: small" "remote frees" "mapped" "peak" "given back to the OS" \
            "node 0: superblocks in use" "cached" "large cache" "heaps live"; do
    grep -q "$want" <<<"$err" || fail "BOBOX_STATS report lacks '$want': $err"
done

err=$(run BOBOX_VERBOSE=1 2>&1 >/dev/null)
grep -q "bobox: settings: BOBOX_CACHE_MB=[0-9]* BOBOX_DECAY_MS=1000" <<<"$err" || fail "BOBOX_VERBOSE: $err"

# Bad values: one message per process, default kept (the report shows the value in force).
err=$(env BOBOX_CACHE_MB=lots BOBOX_DECAY_MS=-5 BOBOX_VERBOSE=1 LD_PRELOAD=$LIB sh -c 'true' 2>&1)
[ "$(grep -c 'ignoring BOBOX_CACHE_MB=lots' <<<"$err")" = 1 ] || fail "bad BOBOX_CACHE_MB not reported once: $err"
[ "$(grep -c 'ignoring BOBOX_DECAY_MS=-5' <<<"$err")" = 1 ] || fail "bad BOBOX_DECAY_MS not reported once: $err"
grep -q "BOBOX_DECAY_MS=1000" <<<"$err" || fail "default decay not used: $err"
err=$(env BOBOX_STATS=maybe LD_PRELOAD=$LIB true 2>&1)
grep -q "ignoring BOBOX_STATS=maybe" <<<"$err" || fail "bad BOBOX_STATS not reported: $err"
err=$(env BOBOX_CHECK=on BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
[ "$(grep -c 'ignoring BOBOX_CHECK=on' <<<"$err")" = 1 ] || fail "bad BOBOX_CHECK not reported once: $err"
grep -q "BOBOX_CHECK=0" <<<"$err" || fail "checked mode not left off after a bad BOBOX_CHECK: $err"
err=$(env BOBOX_CHECK=1 BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
grep -q "BOBOX_CHECK=1" <<<"$err" || fail "BOBOX_CHECK=1 not in force: $err"
err=$(env BOBOX_MIXED=sometimes BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
[ "$(grep -c 'ignoring BOBOX_MIXED=sometimes (expected 0 or 1); using 1' <<<"$err")" = 1 ] ||
    fail "bad BOBOX_MIXED not reported once: $err"
grep -q "BOBOX_MIXED=1" <<<"$err" || fail "mixed blocks not left on after a bad BOBOX_MIXED: $err"
err=$(env BOBOX_MIXED=0 BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
grep -q "BOBOX_MIXED=0" <<<"$err" || fail "BOBOX_MIXED=0 not in force: $err"

err=$(env BOBOX_CACHE_MB=128 BOBOX_DECAY_MS=250 BOBOX_VERBOSE=1 LD_PRELOAD=$LIB true 2>&1)
grep -q "BOBOX_CACHE_MB=128 BOBOX_DECAY_MS=250" <<<"$err" || fail "settings not applied: $err"
echo "settings ok"
