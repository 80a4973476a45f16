#!/usr/bin/env bash
# bobox-run --plan N on every fixture (BOBOX_FSROOT): scatter and compact for N and 2N threads;
# --help, bad options.
source "$(dirname "$0")/../lib/pin.sh" || exit 1

seq_list() { seq -s ' ' "$1" "$2"; }
zip() { local -a a=($1) b=($2); local i; for i in "${!a[@]}"; do printf '%s %s ' "${a[$i]}" "${b[$i]}"; done; }
check() { # fixture policy "expected order of one round"
    local fx=$1 policy=$2 want; want=$(echo $3)
    local n; n=$(wc -w <<<"$want")
    local got; got=$(BOBOX_FSROOT=$FIX/$fx plan_cpus "$n" --pin=$policy)
    [ "$got" = "$want" ] || fail "$fx $policy: got '$got', want '$want'"
    got=$(BOBOX_FSROOT=$FIX/$fx plan_cpus $((2 * n)) --pin=$policy)
    [ "$got" = "$want $want" ] || fail "$fx $policy, 2N threads: got '$got'"
    echo "$fx $policy: $want"
}

check ht4-apart scatter "$(seq_list 0 7)"
check ht4-apart compact "$(seq_list 0 7)"
check 2s8c-ht scatter "$(zip "$(seq_list 0 7)" "$(seq_list 8 15)") $(zip "$(seq_list 16 23)" "$(seq_list 24 31)")"
check 2s8c-ht compact "$(seq_list 0 31)"
check opteron8431 scatter "$(for i in 0 1 2 3 4 5; do echo $i $((i + 6)) $((i + 12)) $((i + 18)); done)"
check opteron8431 compact "$(seq_list 0 23)"
check hybrid scatter "0 2 4 6 8 12 9 13 10 14 11 15 1 3 5 7"
check hybrid compact "0 2 4 6 8 9 10 11 12 13 14 15 1 3 5 7"
check offline scatter "0 4 2 7 1 5"
check offline compact "0 2 4 7 1 5"
check hexmask-old scatter "$(zip "$(seq_list 0 9)" "$(seq_list 10 19)") $(zip "$(seq_list 20 29)" "$(seq_list 30 39)")"
check hexmask-old compact "$(seq_list 0 39)"
check 2s8c-ht "17,3,30-31" "17 3 30 31"

# The order computed from sysfs by test/lib/pin.sh (what check_order holds the real threads to)
# and plan.c's agree on every fixture, hybrid aside (expected_order does not model P-cores).
for fx in "$FIX"/*/; do
    fx=$(basename "$fx")
    [ "$fx" = hybrid ] && continue
    for policy in scatter compact; do
        want=$(expected_order $policy "$FIX/$fx")
        n=$(BOBOX_FSROOT=$FIX/$fx "$RUN" --plan 1 | sed -nE '1s/.*: ([0-9]+) CPUs allowed.*/\1/p')
        [ "$(wc -w <<<"$want")" = "$n" ] || fail "$fx: $n CPUs allowed, the order computed from sysfs has '$want'"
        got=$(BOBOX_FSROOT=$FIX/$fx plan_cpus "$n" --pin=$policy)
        [ "$got" = "$want" ] || fail "$fx $policy: bobox-run --plan '$got', computed from sysfs '$want'"
    done
done
echo "orders computed from sysfs agree with the plan on every fixture"

# the table: header, columns and the core/package/node of a row
out=$(BOBOX_FSROOT=$FIX/2s8c-ht "$RUN" --plan 3)
echo "$out"
grep -q '^plan for 3 threads, policy scatter: 32 CPUs allowed (0-31) of 32 online, 16 cores, 2 packages, 2 NUMA nodes' <<<"$out" \
    || fail "plan header"
[ "$(awk 'NR == 4 { print $2, $3, $4, $5, $6 }' <<<"$out")" = "8 0 1 1 0" ] || fail "thread 1 row: cpu 8 core 0 package 1 node 1"
out=$(BOBOX_FSROOT=$FIX/hybrid "$RUN" --plan 16)
[ "$(awk 'NR > 2 { printf "%s", $NF }' <<<"$out")" = "PPPPEEEEEEEEPPPP" ] || fail "hybrid kinds column: $out"
# the environment's BOBOX_PIN is the default for --plan
[ "$(BOBOX_PIN=compact BOBOX_FSROOT=$FIX/2s8c-ht plan_cpus 2)" = "0 1" ] || fail "BOBOX_PIN not used by --plan"

# help and errors
help=$("$RUN" --help) || fail "--help failed"
for word in --pin --skip --no-alloc --verbose --stats --plan --dry-run scatter compact none BOBOX_FSROOT OMP_PLACES; do
    grep -q -- "$word" <<<"$help" || fail "--help does not mention $word"
done
"$RUN" --pin=sideways --plan 2 2>"$TMP/err" >/dev/null; rc=$?
[ $rc -eq 2 ] && grep -q 'BOBOX_PIN=sideways' "$TMP/err" || fail "bad --pin: rc=$rc $(cat "$TMP/err")"
"$RUN" --skip=zz --plan 2 2>/dev/null >/dev/null; [ $? -eq 2 ] || fail "bad --skip should exit 2"
"$RUN" --plan 0 2>/dev/null >/dev/null; [ $? -eq 2 ] || fail "--plan 0 should exit 2"
"$RUN" --frobnicate -- true 2>/dev/null; [ $? -eq 2 ] || fail "unknown option should exit 2"
"$RUN" 2>/dev/null; [ $? -eq 2 ] || fail "no program should exit 2"
echo "ok"
