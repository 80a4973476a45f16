#!/usr/bin/env bash
# C pthreads under LD_PRELOAD=libbobox-pin.so: each thread on CPU k of the plan, wrapping around,
# already there when its start routine begins; scatter, compact, a list, and a narrowed set.
# The order is bobox-run --plan's, and one round of it the order computed from /sys here.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_threads"
n=$((2 * NCPU + 1))   # more threads than CPUs: the order wraps

for policy in scatter compact; do
    want=$(plan_masks $((n + 1)) --pin=$policy)
    out=$(BOBOX_PIN=$policy LD_PRELOAD=$PIN "$PROGS/pin_threads" $n) || fail "pin_threads failed"
    echo "$out"
    check_pinned "$out" "$want"
    check_order "$out" $policy
done

# the threads of one round cover every allowed CPU once
want=($(plan_cpus "$NCPU"))
[ "$(printf '%s\n' "${want[@]}" | sort -n | uniq | wc -l)" -eq "$NCPU" ] || fail "plan repeats a CPU: ${want[*]}"

if [ "$NCPU" -ge 2 ]; then
    # an explicit list, in its order: the last allowed CPU first
    cpus=($(plan_cpus "$NCPU" --pin=compact | tr ' ' '\n' | sort -n))
    list="${cpus[-1]},${cpus[0]}"
    out=$(BOBOX_PIN=$list LD_PRELOAD=$PIN "$PROGS/pin_threads" 3) || fail "pin_threads failed"
    check_pinned "$out" "$(plan_masks 4 --pin=$list)"

    # a set narrowed by taskset: the plan stays inside it
    out=$(taskset -c "${cpus[-1]}" env LD_PRELOAD=$PIN "$PROGS/pin_threads" 3) || fail "pin_threads failed"
    check_pinned "$out" "${cpus[-1]} ${cpus[-1]} ${cpus[-1]} ${cpus[-1]}"
fi
echo "ok"
