#!/usr/bin/env bash
# A thread that the program pins (itself, through its attribute, or from another thread right
# after pthread_create) keeps the program's choice. A thread created with an affinity
# attribute takes no place of the order: the next thread gets the CPU it would have had.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
[ "$NCPU" -ge 2 ] || skip "needs 2 CPUs"
P=$PROGS/pin_threads
plan=($(plan_cpus 8))
other() { local c; for c in ${plan[@]}; do [ "$c" != "$1" ] && { echo "$c"; return; }; done; }

mask=($(plan_masks 8)) # threads beyond the CPUs are bound wider (oversubscription)
planned=("${plan[0]}" "${plan[1]}" "${plan[2]}" none "${plan[3]}" "${plan[4]}")
want=("${mask[0]}" "${mask[1]}" "${mask[2]}" none "${mask[3]}" "${mask[4]}")
want[1]=$(other "${planned[1]}"); want[3]=$(other "${plan[3]}"); want[5]=$(other "${planned[5]}")
for i in 1 2 3; do   # the race with pthread_setaffinity_np from main is timing-dependent: repeat
    out=$(BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$P" 5 --selfpin=1:${want[1]} --attr=3:${want[3]} \
          --setafter=5:${want[5]} 2>"$TMP/err") || fail "did not run"
    echo "$out"
    while IFS= read -r line; do
        k=$(value thread "$line")
        [ "$(value allowed "$line")" = "${want[$k]}" ] || fail "thread $k: $(value allowed "$line"), want ${want[$k]}"
    done < <(grep thread= <<<"$out")
    grep -q 'thread=3 ' "$TMP/err" && fail "a thread created with an affinity attribute was pinned"
    grep -q "thread=4 .* cpu=${planned[4]} " "$TMP/err" || fail "thread 4 was not planned on ${planned[4]}: $(cat "$TMP/err")"
done
echo "ok"
