#!/usr/bin/env bash
# test: serial
# (serial: it counts tree files in /dev/shm, which every pinned process makes)
# Process trees: the processes a pinned program starts (fork without exec, posix_spawn, a
# shell's background jobs) spread over the plan, each place taken by one of them before the rest
# are bound wider (oversubscription), instead of each process starting again at the first place (which put a forking
# server or `make -j` on one CPU). A child takes the place of the thread that started it while
# that thread holds it, and gives it back when it ends; the place of a process killed by a
# signal is reclaimed by the survivors; an exec'd process reuses the tree's order rather than
# reading the topology; a tree's file in /dev/shm goes with its last process, or, after a
# kill, with the next tree started.
source "$(dirname "$0")/../lib/pin.sh" || exit 1
need "$PROGS/pin_procs"
[ "$NCPU" -ge 2 ] || skip "one CPU: every process runs on it"
P=$PROGS/pin_procs
plan=($(plan_cpus "$NCPU"))
# The tree files now; other runs' stale ones may come and go (a new tree removes them).
trees() { ls /dev/shm 2>/dev/null | grep '^bobox-pin\.' | sort || true; }
before=$(trees)

wide=" $(plan_masks $((2 * NCPU)) | cut -d' ' -f$((NCPU + 1))-) " # beyond the CPUs: bound wider

# per_cpu LINES: "count" for each place of the plan, in plan order, then the number of processes
# that found every place taken and were bound wider (docs/pinning-oversubscription.md); fails on
# a line pinned to neither
per_cpu() {
    local line a i w=0; local -a n
    for ((i = 0; i < NCPU; i++)); do n[i]=0; done
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        a=$(value allowed "$line")
        for ((i = 0; i < NCPU; i++)); do [ "$a" = "${plan[i]}" ] && break; done
        if [ $i -lt $NCPU ]; then n[i]=$((n[i] + 1))
        elif [[ $wide == *" $a "* ]]; then w=$((w + 1))
        else fail "not pinned to one CPU of the plan (${plan[*]}) nor oversubscribed ($wide): $line"; fi
    done <<<"$1"
    echo "${n[*]} $w"
}
# check_spread WHAT LINES: every place holds one of them, the rest are bound wider
check_spread() {
    local counts; counts=$(per_cpu "$2")
    echo "$1: per place of the plan (${plan[*]}), then oversubscribed: $counts"
    local -a c=($counts)
    [ "$(printf '%s\n' "${c[@]:0:NCPU}" | sort -u)" = 1 ] || fail "$1: not one per place of the plan"
    [ "${c[NCPU]}" -eq $(($(grep -c . <<<"$2") - NCPU)) ] || fail "$1: the others are not bound wider"
}

n=$((2 * NCPU))
out=$(LD_PRELOAD=$PIN "$P" fork $n) || fail "pin_procs fork failed"
echo "$out"
check_spread "$n forked children" "$(grep '^role=child' <<<"$out")"

out=$(LD_PRELOAD=$PIN "$P" spawn $n) || fail "pin_procs spawn failed"
check_spread "$n spawned children" "$(grep '^role=child' <<<"$out")"

# A shell under the preload (bash defines its own getenv and putenv) and its background jobs,
# each exec'ing a program; they stay alive together for a second.
out=$(LD_PRELOAD=$PIN bash -c 'for i in $(seq '$n'); do
          sh -c "echo role=job allowed=\$(sed -n \"s/^Cpus_allowed_list:[[:space:]]*//p\" /proc/self/status); sleep 1" &
      done; wait') || fail "the shell failed"
check_spread "$n jobs of a shell" "$out"

# expect_on OUT ROLE CPU WHY: the line of ROLE in OUT is pinned to CPU
expect_on() {
    [ "$(value allowed "$(grep "^role=$2 " <<<"$1")")" = "$3" ] || fail "$2 should run on CPU $3: $4"
}

# The child borrows the parent's place and gives it back: the parent's next thread goes to the
# second place, not back onto the parent's CPU.
out=$(LD_PRELOAD=$PIN "$P" lend) || fail "pin_procs lend failed"
echo "$out"
expect_on "$out" parent "${plan[0]}" "the first place"
expect_on "$out" child "${plan[0]}" "the child takes its parent's place"
expect_on "$out" thread "${plan[1]}" "the place the child borrowed comes back when it ends"

# B is killed; once it is gone, its place is the free one and C takes it (otherwise C would
# share A's).
out=$(LD_PRELOAD=$PIN "$P" reap) || fail "pin_procs reap failed"
echo "$out"
expect_on "$out" A "${plan[0]}" "the parent's place"
expect_on "$out" B "${plan[1]}" "the free place"
expect_on "$out" C "${plan[1]}" "the place of B, which was killed"

# An exec'd process of the tree takes the tree's order instead of reading the topology again
# (on a large machine, thousands of /sys files per process): only the first reads /sys.
if command -v strace >/dev/null; then
    strace -f -qq -e trace=openat -o "$TMP/st" env LD_PRELOAD=$PIN bash -c '/bin/true; /bin/true' ||
        fail "strace run failed"
    readers=$(grep '/sys/devices/system/cpu' "$TMP"/st | awk '{print $1}' | sort -u | wc -l)
    echo "processes that read the topology: $readers"
    [ "$readers" -eq 1 ] || fail "$readers processes read the topology; only the tree's first should"
else
    echo "note: no strace, the topology reads are not counted (scripts/deps.sh installs it)"
fi

left=$(comm -13 <(echo "$before") <(trees))
[ -z "$left" ] || fail "a tree's file was left in /dev/shm: $left"
LD_PRELOAD=$PIN bash -c 'echo $$ >'"$TMP/killed"'; sleep 5 & echo $! >'"$TMP/sleeper"'; kill -9 $!; kill -9 $$' 2>/dev/null
killed="bobox-pin.$(cat "$TMP/killed")."
trees | grep -q "^$killed" || fail "the killed tree should have left its file (the check below would prove nothing)"
# The orphaned sleep stays a zombie until init reaps it, and a zombie still answers kill(pid, 0):
# the tree is dead only once init has reaped it, which can take a moment.
for _ in $(seq 100); do [ -e "/proc/$(cat "$TMP/sleeper")" ] || break; sleep 0.1; done
LD_PRELOAD=$PIN /bin/true || fail "true failed"
! trees | grep -q "^$killed" || fail "the next tree did not remove the file of the killed one"
echo "ok"
