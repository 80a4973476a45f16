#!/usr/bin/env bash
# The settings: a bad value gives one message and no pinning but the program runs; DRYRUN binds
# nothing; the verbose line's exact format; BOBOX_PIN_SKIP; BOBOX_PIN=none.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
P=$PROGS/pin_threads

for bad in "BOBOX_PIN=sideways" "BOBOX_PIN=3-1" "BOBOX_PIN=9999" "BOBOX_PIN_SKIP=zz" "BOBOX_PIN_VERBOSE=yes" \
           "BOBOX_PIN_DRYRUN=2" "BOBOX_FSROOT=/nonexistent"; do
    out=$(env "$bad" LD_PRELOAD=$PIN "$P" 3 2>"$TMP/err") || fail "$bad: the program did not run"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$bad: expected one message, got: $(cat "$TMP/err")"
    grep -q '^bobox-pin: .*pinning off$' "$TMP/err" || fail "$bad: unclear message: $(cat "$TMP/err")"
    [ "$(grep -c thread= <<<"$out")" -eq 4 ] || fail "$bad: the program's output is incomplete"
    check_unpinned "$out"
done
# a list naming only CPUs that do not exist here
out=$(BOBOX_PIN=1000 LD_PRELOAD=$PIN "$P" 2 2>"$TMP/err") || fail "the program did not run"
grep -q 'no allowed CPU' "$TMP/err" || fail "no message for a list without usable CPUs: $(cat "$TMP/err")"
check_unpinned "$out"

# none: nothing pinned, nothing said
out=$(BOBOX_PIN=none BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$P" 3 2>"$TMP/err") || fail "none: did not run"
check_unpinned "$out"
[ -s "$TMP/err" ] && fail "none: unexpected output $(cat "$TMP/err")"

# verbose: one line per pinned thread, exactly this format, the tids and CPUs the program sees
n=$((NCPU + 2))
want=($(plan_cpus $((n + 1))))
masks=($(plan_masks $((n + 1))))
out=$(BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$P" $n 2>"$TMP/err") || fail "verbose: did not run"
cat "$TMP/err"
# threads beyond the CPUs: bound wider, and said so (docs/pinning-oversubscription.md)
re='^bobox-pin: thread=([0-9]+) tid=([0-9]+) cpu=([0-9]+) core=(-?[0-9]+) package=(-?[0-9]+) node=(-?[0-9]+)( cpus=([0-9,-]+) oversubscribed)?$'
[ "$(grep -c '^bobox-pin: thread=' "$TMP/err")" -eq $((n + 1)) ] || fail "verbose: expected $((n + 1)) thread lines"
[ "$(grep -c '^bobox-pin: pid=' "$TMP/err")" -eq 1 ] || fail "verbose: expected one banner"
[ "$(grep -c '^bobox-pin: more threads than CPUs' "$TMP/err")" -eq 1 ] || fail "verbose: oversubscription not said once"
while IFS= read -r line; do
    [[ $line =~ $re ]] || fail "verbose line format: '$line'"
    k=${BASH_REMATCH[1]} tid=${BASH_REMATCH[2]} cpu=${BASH_REMATCH[3]} core=${BASH_REMATCH[4]}
    [ "$cpu" = "${want[$k]}" ] || fail "verbose: thread $k cpu=$cpu, expected ${want[$k]}"
    if [ "$k" -ge "$NCPU" ]; then
        [ "${BASH_REMATCH[8]}" = "${masks[$k]}" ] || fail "verbose: thread $k should be oversubscribed on ${masks[$k]}: $line"
    else
        [ -z "${BASH_REMATCH[7]}" ] || fail "verbose: thread $k is not beyond the CPUs: $line"
    fi
    [ "$(value allowed "$(grep " thread=$k " <<<"$out")")" = "${masks[$k]}" ] || fail "verbose: thread $k not bound to ${masks[$k]}"
    grep -q "thread=$k tid=$tid " <<<"$out" || fail "verbose: thread $k tid $tid is not the program's"
    [ "$core" = "$(cat /sys/devices/system/cpu/cpu$cpu/topology/core_id)" ] || fail "verbose: core id of CPU $cpu"
done < <(grep '^bobox-pin: thread=' "$TMP/err")

# dry run: the same report, nothing bound
out=$(BOBOX_PIN_DRYRUN=1 LD_PRELOAD=$PIN "$P" $n 2>"$TMP/err") || fail "dryrun: did not run"
check_unpinned "$out"
[ "$(grep -cE "$re" "$TMP/err")" -eq $((n + 1)) ] || fail "dryrun: expected the plan reported: $(cat "$TMP/err")"

# skip mask: threads 1 and 3 left alone (the whole set), the others take the plan in turn
out=$(BOBOX_PIN_SKIP=0xa BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$P" 5 2>"$TMP/err") || fail "skip: did not run"
echo "$out"
want=($(plan_masks 6 --skip=0xa))
[ "${want[1]} ${want[3]}" = "skip skip" ] || fail "bobox-run --plan does not show the skipped threads"
plan=($(plan_masks 4))
for k in 0 2 4 5; do
    line=$(grep " thread=$k " <<<"$out")
    [ "$(value allowed "$line")" = "${want[$k]}" ] || fail "skip: thread $k on $(value allowed "$line"), want ${want[$k]}"
done
[ "${want[0]} ${want[2]} ${want[4]} ${want[5]}" = "${plan[*]}" ] || fail "skip: skipped threads took CPUs"
for k in 1 3; do
    [ "$(value allowed "$(grep " thread=$k " <<<"$out")")" = "$ALLOWED" ] || fail "skip: thread $k was pinned"
done
grep -qE 'thread=(1|3) ' "$TMP/err" && fail "skip: a skipped thread was reported as pinned"
# skipping the main thread
out=$(BOBOX_PIN_SKIP=1 LD_PRELOAD=$PIN "$P" 1) || fail "skip main: did not run"
[ "$(value allowed "$(grep " thread=0 " <<<"$out")")" = "$ALLOWED" ] || fail "skip: main thread was pinned"
[ "$(value allowed "$(grep " thread=1 " <<<"$out")")" = "${plan[0]}" ] || fail "skip: thread 1 should take CPU ${plan[0]}"
echo "ok"
