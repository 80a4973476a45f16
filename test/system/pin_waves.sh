#!/usr/bin/env bash
# Threads started and joined in waves (GNU sort --parallel, thread pools that shrink and grow):
# a place of the order left by a thread that exited goes to the next new thread, so every
# wave runs where the plan puts the first one; by creation order alone, waves of three on two
# CPUs would alternate between two threads per CPU and three on one.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
[ "$NCPU" -ge 2 ] || skip "one CPU: every order is the same"
w=$((NCPU + 1))   # a wave wraps around the order, and does not divide it evenly
want=$(plan_masks $((w + 1)))

for how in return --exit; do
    opt=; [ "$how" = return ] || opt=$how
    out=$(LD_PRELOAD=$PIN "$PROGS/pin_threads" $w --waves=4 $opt) || fail "pin_threads ($how) failed"
    for wave in 0 1 2 3; do
        lines=$(grep " wave=$wave " <<<"$out")
        echo "$lines"
        check_pinned "$lines" "$want"
    done
done

# A list may name a CPU twice: the places are counted, not the CPUs.
cpus=($(plan_cpus "$NCPU" --pin=compact | tr ' ' '\n' | sort -n))
list="${cpus[0]},${cpus[0]},${cpus[1]}"
out=$(BOBOX_PIN=$list LD_PRELOAD=$PIN "$PROGS/pin_threads" 2 --waves=3) || fail "pin_threads (list) failed"
for wave in 0 1 2; do
    check_pinned "$(grep " wave=$wave " <<<"$out")" "${cpus[0]} ${cpus[0]} ${cpus[1]}"
done
echo "ok"
