#!/usr/bin/env bash
# Oversubscription (docs/pinning-oversubscription.md): with more threads than CPUs, the threads
# beyond the CPU count are bound to the plan's CPUs of their node (here: the whole allowed set,
# one node), read back with sched_getaffinity from inside each thread, while the first NCPU keep
# one CPU each; --verbose says so once; --plan shows it on the fixtures (the node; the node
# inside a package; the package when the node has one listed CPU). Under a second.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_mask"
[ "$NCPU" -ge 2 ] || skip "one CPU: nothing to bind wider"
n=$((NCPU + 4))   # the main thread and n threads

out=$("$RUN" --no-alloc --verbose -- "$PROGS/pin_mask" "$n" 2>"$TMP/err") || fail "pin_mask failed"
echo "$out"; cat "$TMP/err"
masks=($(plan_masks $((n + 1))))
for ((k = 0; k <= n; k++)); do
    line=$(grep "^thread=$k " <<<"$out") || fail "no line for thread $k"
    count=$(value count "$line") mask=$(value mask "$line")
    if [ $k -lt "$NCPU" ]; then
        [ "$count" = 1 ] || fail "thread $k of the first $NCPU: $count CPUs ($mask), want one"
    else
        [ "$count" -gt 1 ] || fail "thread $k beyond the $NCPU CPUs has a one-CPU mask: $mask"
    fi
    [ "$mask" = "${masks[$k]}" ] || fail "thread $k: mask $mask, bobox-run --plan says ${masks[$k]}"
done
# one node here: the extra threads get every allowed CPU of it
[ "${masks[$n]}" = "$ALLOWED" ] || [ "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)" -gt 1 ] ||
    fail "on one node, an extra thread should have the allowed set $ALLOWED: ${masks[$n]}"
[ "$(grep -c 'oversubscribed$' "$TMP/err")" -eq $((n + 1 - NCPU)) ] || fail "verbose: expected $((n + 1 - NCPU)) oversubscribed lines"
[ "$(grep -c '^bobox-pin: more threads than CPUs' "$TMP/err")" -eq 1 ] || fail "verbose: no single note on oversubscription"

# dry run: the same report, nothing bound
out=$("$RUN" --no-alloc --dry-run -- "$PROGS/pin_mask" "$n" 2>"$TMP/err") || fail "pin_mask --dry-run failed"
[ "$(grep -c 'oversubscribed$' "$TMP/err")" -eq $((n + 1 - NCPU)) ] || fail "dry run: no oversubscribed lines"
grep -q "count=1 " <<<"$out" && [ "$NCPU" -gt 1 ] && fail "dry run bound a thread: $out"

# --plan on the fixtures: the header says so, the column has the node
plan=$(BOBOX_FSROOT=$FIX/2s8c-ht "$RUN" --plan 34)
grep -q '^plan for 34 threads.*; oversubscribed' <<<"$plan" || fail "--plan header does not say oversubscribed"
[ "$(awk 'NR == 2 { print $NF }' <<<"$plan")" = to ] || fail "--plan has no 'bound to' column"
[ "$(awk 'NR == 3 + 31 { print $NF } NR == 3 + 32 { print $NF } NR == 3 + 33 { print $NF }' <<<"$plan" | tr '\n' ' ')" = \
  "31 0-7,16-23 8-15,24-31 " ] || fail "2s8c-ht: threads 31-33 bound to $(tail -3 <<<"$plan")"
got=$(BOBOX_FSROOT=$FIX/2s2n-snc-ht plan_masks 34 | cut -d' ' -f33-)
[ "$got" = "0-3,16-19 8-11,24-27" ] || fail "2s2n-snc-ht: threads 32-33 bound to $got, want their nodes"
got=$(BOBOX_FSROOT=$FIX/2s2n-snc-ht plan_masks 4 --pin=0,4,8 | cut -d' ' -f4)
[ "$got" = "0,4" ] || fail "2s2n-snc-ht --pin=0,4,8: thread 3 bound to $got, want the listed CPUs of its package (0,4)"
# threads that fit: no column, no note
plan=$(BOBOX_FSROOT=$FIX/2s8c-ht "$RUN" --plan 32)
grep -q 'oversubscribed' <<<"$plan" && fail "--plan 32 on 32 CPUs says oversubscribed"
echo "ok"
