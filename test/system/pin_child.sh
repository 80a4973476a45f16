#!/usr/bin/env bash
# Child processes: a child started from a pinned thread plans from the parent's original set, not
# from the one CPU it inherited: its main thread takes the place of the thread that started it
# (which waits for it), its other threads the places with the fewest threads of the whole tree
# (pin_tree.sh); a mask narrowed on the way (taskset under the preload) stands; the verbose
# banner appears once per process tree.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
[ "$NCPU" -ge 2 ] || skip "needs 2 CPUs"
P=$PROGS/pin_threads
plan=($(plan_cpus 4))
places=($(plan_cpus "$NCPU"))
wide=($(plan_masks $((2 * NCPU)) | cut -d' ' -f$((NCPU + 1))-)) # a thread on a full place: bound wider

# thread 1 (pinned to plan[1]) starts the child and waits: the child's main thread takes that
# place, and each of its threads the first place with the fewest threads of the tree.
declare -a weight
for ((i = 0; i < NCPU; i++)); do weight[i]=0; done
weight[0]=1 weight[1]=1   # the parent's main thread, and the child's on the place thread 1 lent
want_child=${places[1]}
for k in 1 2 3; do
    best=0
    for ((i = 1; i < NCPU; i++)); do [ "${weight[i]}" -lt "${weight[best]}" ] && best=$i; done
    if [ "${weight[best]}" -ge 1 ]; then want_child="$want_child ${wide[best]}"; else want_child="$want_child ${places[best]}"; fi
    weight[best]=$((weight[best] + 1))
done
out=$(BOBOX_PIN_VERBOSE=1 LD_PRELOAD=$PIN "$P" 1 --spawn-from=1 -- "$P" 3 2>"$TMP/err") || fail "did not run"
echo "$out"; cat "$TMP/err"
parent=$(root_pid "$out")
child=$(grep " ppid=$parent " <<<"$out") || true
parent_lines=$(grep "^pid=$parent " <<<"$out")
[ -n "$child" ] || fail "no output from the child"
check_pinned "$parent_lines" "${plan[0]} ${plan[1]}"
check_pinned "$child" "$want_child"
[ "$(grep -c '^bobox-pin: pid=' "$TMP/err")" -eq 1 ] || fail "the banner should appear once per process tree"
[ "$(grep -c '^bobox-pin: thread=' "$TMP/err")" -eq 6 ] || fail "expected 2 + 4 thread lines"

# taskset under the preload narrows the child to one CPU: that stands, whichever CPU it is
for cpu in ${plan[0]} ${plan[1]}; do
    out=$(LD_PRELOAD=$PIN "$P" 1 --spawn-from=1 -- taskset -c "$cpu" "$P" 2) || fail "did not run"
    echo "$out"
    parent=$(root_pid "$out")
    child=$(grep " ppid=$parent " <<<"$out") || fail "no output from the child"
    check_pinned "$child" "$cpu $cpu $cpu"
done

# a child of a thread the program pinned itself keeps that mask
out=$(LD_PRELOAD=$PIN "$P" 1 --selfpin=1:${plan[0]} --spawn-from=1 -- "$P" 1) || fail "did not run"
parent=$(root_pid "$out")
child=$(grep " ppid=$parent " <<<"$out") || fail "no output from the child"
check_pinned "$child" "${plan[0]} ${plan[0]}"
echo "ok"
